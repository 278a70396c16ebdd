//! A streaming build (`build_streaming`) gives the whole build's tables, row
//! for row, also for two hosts whose raw clocks differ by a boot time: the
//! window is cut in the merged order's terms (time plus clock offset), not in
//! raw trace time.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, TempDir, TraceWriter, Value};
use roscope_ctf::TraceSet;
use roscope_model::table::{Data, Table};
use roscope_model::{build, build_streaming, Model, Options, Scope};

const TALKER: Ctx = Ctx { pid: 100, tid: 100, procname: "talker" };
const LISTENER: Ctx = Ctx { pid: 200, tid: 200, procname: "listener" };
/// Host b booted 5000 s after host a: its raw clock is 5000 s behind, and its
/// trace's clock offset says so.
const SKEW_S: i64 = 5000;
const A0: u64 = 6_000_000_000_000;
const B0: u64 = A0 - SKEW_S as u64 * 1_000_000_000;
const MSGS: u64 = 300;
const PERIOD: u64 = 10_000_000;

fn hosts(root: &TempDir) -> Vec<std::path::PathBuf> {
    let mut a = TraceWriter::new("host-a");
    ros2_classes(&mut a, "ros2", true);
    a.event(A0, TALKER, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    a.event(A0 + 1, TALKER, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("talker"), S("/")]);
    a.event(A0 + 2, TALKER, "ros2:rmw_publisher_init", &[U(0x2001), B(&gid(1))]);
    a.event(A0 + 3, TALKER, "ros2:rcl_publisher_init", &[U(0x2000), U(0x1000), U(0x2001), S("/chatter"), U(10)]);
    a.event(A0 + 4, TALKER, "ros2:rcl_timer_init", &[U(0x3000), I(PERIOD as i64)]);
    a.event(A0 + 5, TALKER, "ros2:rclcpp_timer_callback_added", &[U(0x3000), U(0x3100)]);
    let mut b = TraceWriter::new("host-b");
    b.clock_offset_s(SKEW_S);
    ros2_classes(&mut b, "ros2", true);
    b.event(B0 + 10, LISTENER, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    b.event(B0 + 11, LISTENER, "ros2:rcl_node_init", &[U(0x1000), U(0x1002), S("listener"), S("/")]);
    b.event(B0 + 12, LISTENER, "ros2:rmw_subscription_init", &[U(0x4001), B(&gid(100))]);
    b.event(B0 + 13, LISTENER, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4001), S("/chatter"), U(5)]);
    b.event(B0 + 14, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    b.event(B0 + 15, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x4200)]);
    for k in 0..MSGS {
        // Published at t; taken 2 ms later on host b (in wall time).
        let t = 1_000_000 + k * PERIOD;
        let msg = 0xA000 + k;
        let stamp = (A0 + t + 300) as i64;
        a.event(A0 + t, TALKER, "ros2:callback_start", &[U(0x3100), U(0)]);
        a.event(A0 + t + 100, TALKER, "ros2:rclcpp_publish", &[U(0x2000), U(msg)]);
        a.event(A0 + t + 200, TALKER, "ros2:rcl_publish", &[U(0x2000), U(msg)]);
        a.event(A0 + t + 300, TALKER, "ros2:rmw_publish", &[U(0x2001), U(msg), I(stamp)]);
        a.event(A0 + t + 1000, TALKER, "ros2:callback_end", &[U(0x3100)]);
        let r = B0 + t + 2_000_000;
        b.event(r, LISTENER, "ros2:rmw_take", &[U(0x4001), U(0xB000 + k), I(stamp), U(1)]);
        b.event(r + 100, LISTENER, "ros2:callback_start", &[U(0x4200), U(0)]);
        b.event(r + 5000, LISTENER, "ros2:callback_end", &[U(0x4200)]);
    }
    let dirs = vec![root.path().join("a"), root.path().join("b")];
    a.write(&dirs[0]);
    b.write(&dirs[1]);
    dirs
}

/// Each row as text, sorted: tables compared as multisets of rows.
fn rows(tables: &[&Table]) -> Vec<String> {
    let mut out = vec![];
    for t in tables {
        for k in 0..t.rows {
            let cells: Vec<String> = t
                .cols
                .iter()
                .map(|c| {
                    if c.any_null && c.valid[k] == 0 {
                        return "NULL".to_string();
                    }
                    match &c.data {
                        Data::I64(v) => v[k].to_string(),
                        Data::U64(v) => v[k].to_string(),
                        Data::F64(v) => v[k].to_string(),
                        Data::Str(b, o) => String::from_utf8_lossy(&b[o[k] as usize..o[k + 1] as usize]).into_owned(),
                    }
                })
                .collect();
            out.push(cells.join("|"));
        }
    }
    out.sort();
    out
}

/// The two hosts' traces built whole and streamed (a 50 ms window, flushed after
/// every event), sync off: (whole model, streamed chunks, streamed model).
fn whole_and_streamed(tag: &str) -> (Model, Vec<Table>, Model) {
    let root = TempDir::new(tag);
    let dirs = hosts(&root);
    let opts = Options { heuristics: true, progress: false, sync: false, window_ns: None, flush_every: 0 };
    let whole = build(&mut TraceSet::open(&dirs).unwrap(), opts, Scope::default());
    let mut chunks: Vec<Table> = vec![];
    let streamed = build_streaming(
        &mut TraceSet::open(&dirs).unwrap(),
        Options { window_ns: Some(50_000_000), flush_every: 1, ..opts },
        Scope::default(),
        Some(&mut |t: Table| chunks.push(t)),
    );
    (whole, chunks, streamed)
}

#[test]
fn two_hosts_with_different_boot_times_stream_like_the_whole_build() {
    let (whole, chunks, streamed) = whole_and_streamed("streaming");
    assert!(chunks.len() > 50, "it streamed: {} chunks", chunks.len());
    let links = rows(&[table(&whole, "links")]);
    assert_eq!(links.len(), MSGS as usize, "every message linked in the whole build");
    for t in &whole.tables {
        let mut parts: Vec<&Table> = chunks.iter().filter(|c| c.name == t.name).collect();
        parts.extend(streamed.tables.iter().filter(|c| c.name == t.name));
        assert_eq!(rows(&parts), rows(&[t]), "table {}", t.name);
    }
    let late = streamed.stats.iter().find(|s| s.0 == "late_updates").map(|s| s.1);
    assert_eq!(late, Some(0));
}

/// One host's events written as `n` consecutive chunks (the traces a rotating LTTng
/// session archives: same host, same clock, each a complete trace), and as one trace.
fn chunked(root: &TempDir, n: usize) -> (Vec<std::path::PathBuf>, std::path::PathBuf) {
    let (g1, g100) = (gid(1), gid(100));
    let mut events: Vec<(u64, Ctx, &str, Vec<Value>)> = vec![
        (A0, TALKER, "ros2:rcl_init", vec![U(1), S("4.1.0")]),
        (A0 + 1, TALKER, "ros2:rcl_node_init", vec![U(0x1000), U(0x1001), S("talker"), S("/")]),
        (A0 + 2, TALKER, "ros2:rmw_publisher_init", vec![U(0x2001), B(&g1)]),
        (A0 + 3, TALKER, "ros2:rcl_publisher_init", vec![U(0x2000), U(0x1000), U(0x2001), S("/chatter"), U(10)]),
        (A0 + 4, TALKER, "ros2:rcl_timer_init", vec![U(0x3000), I(PERIOD as i64)]),
        (A0 + 5, TALKER, "ros2:rclcpp_timer_callback_added", vec![U(0x3000), U(0x3100)]),
        (A0 + 10, LISTENER, "ros2:rcl_init", vec![U(1), S("4.1.0")]),
        (A0 + 11, LISTENER, "ros2:rcl_node_init", vec![U(0x1000), U(0x1002), S("listener"), S("/")]),
        (A0 + 12, LISTENER, "ros2:rmw_subscription_init", vec![U(0x4001), B(&g100)]),
        (A0 + 13, LISTENER, "ros2:rcl_subscription_init", vec![U(0x4000), U(0x1000), U(0x4001), S("/chatter"), U(5)]),
        (A0 + 14, LISTENER, "ros2:rclcpp_subscription_init", vec![U(0x4000), U(0x4100)]),
        (A0 + 15, LISTENER, "ros2:rclcpp_subscription_callback_added", vec![U(0x4100), U(0x4200)]),
    ];
    for k in 0..MSGS {
        // Taken 7 ms after it was published, in a run of 4 ms: some messages and
        // runs straddle a chunk's end.
        let t = A0 + 1_000_000 + k * PERIOD;
        let (msg, stamp) = (0xA000 + k, (t + 300) as i64);
        events.push((t, TALKER, "ros2:callback_start", vec![U(0x3100), U(0)]));
        events.push((t + 100, TALKER, "ros2:rclcpp_publish", vec![U(0x2000), U(msg)]));
        events.push((t + 200, TALKER, "ros2:rcl_publish", vec![U(0x2000), U(msg)]));
        events.push((t + 300, TALKER, "ros2:rmw_publish", vec![U(0x2001), U(msg), I(stamp)]));
        events.push((t + 1000, TALKER, "ros2:callback_end", vec![U(0x3100)]));
        events.push((t + 7_000_000, LISTENER, "ros2:rmw_take", vec![U(0x4001), U(0xB000 + k), I(stamp), U(1)]));
        events.push((t + 7_000_100, LISTENER, "ros2:callback_start", vec![U(0x4200), U(0)]));
        events.push((t + 11_000_000, LISTENER, "ros2:callback_end", vec![U(0x4200)]));
    }
    events.sort_by_key(|e| e.0);
    let end = events.last().unwrap().0 + 1;
    let write = |dir: std::path::PathBuf, lo: u64, hi: u64| {
        let mut w = TraceWriter::new("host-a");
        ros2_classes(&mut w, "ros2", true);
        for (ts, ctx, name, vals) in events.iter().filter(|e| lo <= e.0 && e.0 < hi) {
            w.event(*ts, *ctx, name, vals);
        }
        w.write(&dir);
        dir
    };
    // chunk boundaries 1 ms after a publication: its take and its listener's run are in the next chunk
    let cuts: Vec<u64> = (0..=n).map(|i| if i == n { end } else { A0 + (i as u64 * MSGS / n as u64) * PERIOD + 1_000_400 }).collect();
    let mut dirs = vec![];
    let mut lo = 0;
    for (i, &hi) in cuts.iter().enumerate().skip(1) {
        dirs.push(write(root.path().join(format!("chunk-{i}")), lo, hi));
        lo = hi;
    }
    (dirs, write(root.path().join("whole"), 0, end))
}

#[test]
fn chunks_fed_one_by_one_give_the_whole_build() {
    let root = TempDir::new("incremental");
    let (dirs, whole_dir) = chunked(&root, 5);
    let opts = Options { heuristics: true, progress: false, sync: false, window_ns: None, flush_every: 0 };
    let whole = build(&mut TraceSet::open(&[whole_dir]).unwrap(), opts, Scope::default());
    let mut chunks: Vec<Table> = vec![];
    let mut b = roscope_model::Builder::incremental(Options { window_ns: Some(20_000_000), ..opts }, Scope::default());
    let mut fed = vec![];
    for d in &dirs {
        let mut sink = |t: Table| chunks.push(t);
        fed.push(b.feed(&mut TraceSet::open(&[d]).unwrap(), &mut sink));
        // records already handed over while later chunks still come
    }
    let before_close = chunks.iter().filter(|c| c.name == "callback_runs").map(|c| c.rows).sum::<usize>();
    assert!(before_close > MSGS as usize, "runs were handed over chunk by chunk: {before_close}");
    let mut sink = |t: Table| chunks.push(t);
    b.close(&mut sink);
    assert!(fed.iter().all(|t| t.is_some()));
    assert_eq!(rows(&[table(&whole, "links")]).len(), MSGS as usize, "every message linked in the whole build");
    for name in ["callback_runs", "publications", "takes", "links"] {
        let parts: Vec<&Table> = chunks.iter().filter(|c| c.name == name).collect();
        assert_eq!(rows(&parts), rows(&[table(&whole, name)]), "table {name}");
    }
    for t in b.object_tables() {
        assert_eq!(rows(&[&t]), rows(&[table(&whole, t.name)]), "table {}", t.name);
    }
}

/// `--no-sync`: host b's clock is mapped onto host a's by the traces' metadata
/// clock offsets (b's origin is SKEW_S later), whole and streamed alike: every
/// message's latency is the 2 ms the trace was written with, less the 100 ns
/// from rclcpp_publish (a publication's time) to the sending; the map is in
/// `clock_sync` and a warning says which was used.
#[test]
fn without_sync_hosts_are_mapped_by_their_metadata_clock_offsets() {
    let (whole, chunks, streamed) = whole_and_streamed("streaming-nosync");
    let part = |name: &str| -> Vec<&Table> {
        let mut v: Vec<&Table> = chunks.iter().filter(|c| c.name == name).collect();
        v.extend(streamed.tables.iter().filter(|c| c.name == name));
        v
    };
    let m = &whole;
    let pubs: std::collections::HashMap<i64, i64> = ints(m, "publications", "publication_id")
        .into_iter()
        .zip(ints(m, "publications", "ts"))
        .map(|(a, b)| (a.unwrap(), b.unwrap()))
        .collect();
    let takes: std::collections::HashMap<i64, i64> =
        ints(m, "takes", "take_id").into_iter().zip(ints(m, "takes", "ts")).map(|(a, b)| (a.unwrap(), b.unwrap())).collect();
    let lat: Vec<i64> = ints(m, "links", "publication_id")
        .into_iter()
        .zip(ints(m, "links", "take_id"))
        .map(|(p, k)| takes[&k.unwrap()] - pubs[&p.unwrap()])
        .collect();
    assert_eq!(lat.len(), MSGS as usize);
    assert!(lat.iter().all(|&x| x == 2_000_000 - 100), "latencies {:?}", &lat[..3]);
    assert_eq!(strs(m, "clock_sync", "method"), vec![s("metadata_offset")]);
    assert_eq!(ints(m, "clock_sync", "ref_at_x0_ns"), vec![Some(SKEW_S * 1_000_000_000)]);
    assert!(
        m.warnings
            .iter()
            .any(|w| w.starts_with("--no-sync: host host-b's clock is mapped onto host host-a's") && w.contains("+5000000.000 ms apart")),
        "{:?}",
        m.warnings
    );
    for name in ["publications", "takes", "clock_sync", "callback_runs"] {
        assert_eq!(rows(&part(name)), rows(&[table(&whole, name)]), "table {name}");
    }
    assert_eq!(streamed.warnings, whole.warnings);
}

/// With sync on, a host that exchanged no message with the reference host is
/// mapped by the metadata clock offsets too (not left on its raw clock), and a
/// warning says so: host c booted 100 s before host a.
#[test]
fn a_host_without_messages_is_mapped_by_its_metadata_clock_offset() {
    let root = TempDir::new("streaming-lonely");
    let mut dirs = hosts(&root);
    let mut c = TraceWriter::new("host-c");
    c.clock_offset_s(-100);
    ros2_classes(&mut c, "ros2", true);
    let c0 = A0 + 100 * 1_000_000_000;
    c.event(c0 + 20, LISTENER, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    c.event(c0 + 21, LISTENER, "ros2:rcl_node_init", &[U(0x1000), U(0x1003), S("lonely"), S("/")]);
    dirs.push(root.path().join("c"));
    c.write(&dirs[2]);
    let opts = Options { heuristics: true, progress: false, sync: true, window_ns: None, flush_every: 0 };
    let m = build(&mut TraceSet::open(&dirs).unwrap(), opts, Scope::default());
    let hosts = strs(&m, "hosts", "hostname");
    let method: Vec<(String, Option<String>, Option<i64>)> = ints(&m, "clock_sync", "host_id")
        .into_iter()
        .zip(strs(&m, "clock_sync", "method"))
        .zip(ints(&m, "clock_sync", "ref_at_x0_ns"))
        .map(|((h, k), y)| (hosts[h.unwrap() as usize].clone().unwrap(), k, y))
        .collect();
    assert!(method.contains(&("host-c".into(), s("metadata_offset"), Some(-100_000_000_000))), "{method:?}");
    assert!(method.iter().any(|(h, k, _)| h == "host-b" && k.as_deref() == Some("offset_lower_bound")), "{method:?}");
    assert!(
        m.warnings
            .iter()
            .any(|w| w.starts_with("host host-c exchanged no message with the reference host host-a")
                && w.contains("metadata clock offsets")),
        "{:?}",
        m.warnings
    );
    let node_ts = ints(&m, "nodes", "init_ts");
    assert!(node_ts.contains(&Some(c0 as i64 + 21 - 100_000_000_000)), "{node_ts:?}");
}
