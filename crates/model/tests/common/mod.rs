//! Helpers of the model's unit tests: small hand-made LTTng-like traces
//! (roscope_ctf::testing), the model built from them, and its columns.
#![allow(dead_code)]

use roscope_ctf::testing::{Ctx, FieldType::*, TempDir, TraceWriter};
use roscope_ctf::TraceSet;
use roscope_model::table::{Col, Data, Table};
use roscope_model::{Model, Options, Scope};

pub use roscope_ctf::testing::FieldType;
#[allow(unused_imports)]
pub use roscope_ctf::testing::Value::{Bytes as B, Seq as Q, I, S, U};

/// `rcl_subscription_init`'s fields.
pub const SUB_INIT_FIELDS: &[(&str, FieldType)] =
    &[("subscription_handle", U64), ("node_handle", U64), ("rmw_subscription_handle", U64), ("topic_name", Str), ("queue_depth", U64)];

/// The `ros2:*` events of the tests, with Jazzy's field layouts (field
/// order deliberately not the model's order where the distros differ).
/// `rmw_stamp`: `rmw_publish` has its `timestamp` field (Jazzy on), not Humble.
pub fn ros2_classes(w: &mut TraceWriter, provider: &str, rmw_stamp: bool) {
    let c = |w: &mut TraceWriter, name: &str, f: &[(&str, FieldType)]| {
        w.class(&format!("{}:{}", provider, name), f);
    };
    c(w, "rcl_init", &[("context_handle", U64), ("version", Str)]);
    c(w, "rcl_node_init", &[("node_handle", U64), ("rmw_handle", U64), ("node_name", Str), ("namespace", Str)]);
    c(w, "rmw_publisher_init", &[("rmw_publisher_handle", U64), ("gid", Bytes(24))]);
    c(w, "rmw_subscription_init", &[("rmw_subscription_handle", U64), ("gid", Bytes(24))]);
    let pubf = [("publisher_handle", U64), ("node_handle", U64), ("rmw_publisher_handle", U64), ("topic_name", Str), ("queue_depth", U64)];
    c(w, "rcl_publisher_init", &pubf);
    c(w, "rcl_subscription_init", SUB_INIT_FIELDS);
    c(w, "rclcpp_subscription_init", &[("subscription_handle", U64), ("subscription", U64)]);
    c(w, "rclcpp_subscription_callback_added", &[("subscription", U64), ("callback", U64)]);
    c(w, "rcl_timer_init", &[("timer_handle", U64), ("period", I64)]);
    c(w, "rclcpp_timer_callback_added", &[("timer_handle", U64), ("callback", U64)]);
    c(w, "rclcpp_timer_link_node", &[("timer_handle", U64), ("node_handle", U64)]);
    c(w, "rclcpp_callback_register", &[("callback", U64), ("symbol", Str)]);
    c(w, "callback_start", &[("callback", U64), ("is_intra_process", U8)]);
    c(w, "callback_end", &[("callback", U64)]);
    c(w, "rclcpp_publish", &[("publisher_handle", U64), ("message", U64)]);
    c(w, "rcl_publish", &[("publisher_handle", U64), ("message", U64)]);
    if rmw_stamp {
        c(w, "rmw_publish", &[("rmw_publisher_handle", U64), ("message", U64), ("timestamp", I64)]);
    } else {
        c(w, "rmw_publish", &[("rmw_publisher_handle", U64), ("message", U64)]);
    }
    c(w, "rmw_take", &[("rmw_subscription_handle", U64), ("message", U64), ("source_timestamp", I64), ("taken", U8)]);
    c(w, "rcl_take", &[("message", U64)]);
    c(w, "rclcpp_take", &[("message", U64)]);
    c(w, "rclcpp_executor_wait_for_work", &[("timeout", I64)]);
    c(w, "rclcpp_executor_get_next_ready", &[]);
    c(w, "rclcpp_executor_execute", &[("handle", U64)]);
}

pub fn ctx(pid: i32, tid: i32, procname: &'static str) -> Ctx<'static> {
    Ctx { pid, tid, procname }
}

/// A 24-byte GID whose bytes are `first`, `first + 1`, ...
pub fn gid(first: u8) -> Vec<u8> {
    (0..24).map(|i| first.wrapping_add(i)).collect()
}

/// The hex text of `gid(first)`.
pub fn gid_hex(first: u8) -> String {
    gid(first).iter().map(|b| format!("{:02x}", b)).collect()
}

/// Writes the trace and builds its model (heuristic links on).
pub fn build(w: &TraceWriter) -> Model {
    build_with(w, Options { heuristics: true, progress: false, sync: true, window_ns: None, flush_every: 0 }, Scope::default())
}

pub fn build_with(w: &TraceWriter, opts: Options, scope: Scope) -> Model {
    let dir = TempDir::new("model");
    w.write(&dir.path().join("ust"));
    let mut set = TraceSet::open(&[dir.path()]).unwrap_or_else(|e| panic!("{}", e));
    roscope_model::build(&mut set, opts, scope)
}

pub fn table<'a>(m: &'a Model, name: &str) -> &'a Table {
    m.table(name).unwrap_or_else(|| panic!("no table {}", name))
}

fn col<'a>(m: &'a Model, t: &str, c: &str) -> &'a Col {
    table(m, t).cols.iter().find(|x| x.name == c).unwrap_or_else(|| panic!("no column {}.{}", t, c))
}

fn valid(c: &Col, k: usize) -> bool {
    !c.any_null || c.valid[k] != 0
}

/// A BIGINT column, NULL as None.
pub fn ints(m: &Model, t: &str, c: &str) -> Vec<Option<i64>> {
    let col = col(m, t, c);
    match &col.data {
        Data::I64(v) => v.iter().enumerate().map(|(k, x)| valid(col, k).then_some(*x)).collect(),
        _ => panic!("{}.{} is not BIGINT", t, c),
    }
}

/// A UBIGINT column, NULL as None.
pub fn uints(m: &Model, t: &str, c: &str) -> Vec<Option<u64>> {
    let col = col(m, t, c);
    match &col.data {
        Data::U64(v) => v.iter().enumerate().map(|(k, x)| valid(col, k).then_some(*x)).collect(),
        _ => panic!("{}.{} is not UBIGINT", t, c),
    }
}

/// A VARCHAR column, NULL as None.
pub fn strs(m: &Model, t: &str, c: &str) -> Vec<Option<String>> {
    let col = col(m, t, c);
    match &col.data {
        Data::Str(b, o) => (0..o.len() - 1)
            .map(|k| valid(col, k).then(|| String::from_utf8(b[o[k] as usize..o[k + 1] as usize].to_vec()).unwrap()))
            .collect(),
        _ => panic!("{}.{} is not VARCHAR", t, c),
    }
}

pub fn stat(m: &Model, name: &str) -> i64 {
    m.stats.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no stat {}", name)).1
}

pub fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}
