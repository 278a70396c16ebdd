//! Which processes belong to the recording a trace is scoped to (`Scope`):
//! a hand-made trace where another recording's processes appear, one of them
//! started before this recording's session (its `process_init` is not in the
//! trace). Expected values are worked out by hand.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, FieldType::*, TraceWriter};
use roscope_model::{Options, Scope};

/// This recording's (announces "rec-b").
const OWN: Ctx = Ctx { pid: 10, tid: 10, procname: "talker" };
/// Another recording's, started during this one (announces "rec-a").
const OTHER: Ctx = Ctx { pid: 20, tid: 20, procname: "sensors" };
/// Another recording's, started before this session: its roscope_ros1
/// events are here, its process_init is not.
const EARLY: Ctx = Ctx { pid: 30, tid: 31, procname: "planner" };
/// A ROS 2 process without roscope's tracer: not roscope's to judge, it stays.
const ROS2: Ctx = Ctx { pid: 40, tid: 40, procname: "ros2node" };
/// Emits only events the model does not read, none of roscope's tracer: no process.
const DDS: Ctx = Ctx { pid: 50, tid: 50, procname: "dds" };

fn trace() -> TraceWriter {
    let mut w = TraceWriter::new("host-a");
    w.class("roscope_ros1:process_init", &[("record_id", Str), ("exe", Str)]);
    w.class("roscope_ros1:node_init", &[("node_name", Str)]);
    w.class("roscope_ros1:callback_start", &[("callback", U64), ("deserializer", U64)]);
    w.class("roscope_ros1:callback_end", &[("callback", U64)]);
    w.class("ros2:rcl_node_init", &[("node_handle", U64), ("rmw_handle", U64), ("node_name", Str), ("namespace", Str)]);
    // Events the model does not read: still counted with a process left out.
    w.class("roscope_ros1:queue_call_start", &[("queue", U64)]);
    w.class("dds:create_writer", &[("writer", U64)]);
    w.event(0, EARLY, "roscope_ros1:queue_call_start", &[U(0x3)]);
    w.event(0, DDS, "dds:create_writer", &[U(0x5)]);
    w.event(1, EARLY, "roscope_ros1:callback_start", &[U(0x30), U(0)]);
    w.event(2, EARLY, "roscope_ros1:callback_end", &[U(0x30)]);
    w.event(3, OWN, "roscope_ros1:process_init", &[S("rec-b"), S("/bin/talker")]);
    w.event(4, OWN, "roscope_ros1:node_init", &[S("/talker")]);
    w.event(5, OTHER, "roscope_ros1:process_init", &[S("rec-a"), S("/bin/sensors")]);
    w.event(6, OTHER, "roscope_ros1:node_init", &[S("/sensors")]);
    w.event(6, OTHER, "roscope_ros1:queue_call_start", &[U(0x2)]);
    w.event(6, OWN, "roscope_ros1:queue_call_start", &[U(0x1)]);
    w.event(7, ROS2, "ros2:rcl_node_init", &[U(0x40), U(0x41), S("ros2node"), S("/")]);
    w.event(8, EARLY, "roscope_ros1:callback_start", &[U(0x30), U(0)]);
    w.event(9, OWN, "roscope_ros1:callback_start", &[U(0x10), U(0)]);
    w.event(10, OWN, "roscope_ros1:callback_end", &[U(0x10)]);
    w.event(11, EARLY, "roscope_ros1:callback_end", &[U(0x30)]);
    w
}

fn scoped(ids: &[&str]) -> roscope_model::Model {
    let scope = Scope { record_ids: ids.iter().map(|x| x.to_string()).collect(), attach: false };
    build_with(&trace(), Options { heuristics: true, progress: false, sync: true, window_ns: None, flush_every: 0 }, scope)
}

#[test]
fn a_process_without_process_init_is_left_out_when_the_trace_is_scoped() {
    let m = scoped(&["rec-b"]);
    assert_eq!(ints(&m, "processes", "pid"), vec![Some(10), Some(40)]);
    assert_eq!(strs(&m, "nodes", "name"), vec![s("/talker"), s("ros2node")]);
    // Only the own process's callback run: the early process's runs are not in the model.
    assert_eq!(ints(&m, "callback_runs", "start_ts").len(), 1);
    assert_eq!(stat(&m, "processes_of_other_recordings"), 1);
    assert_eq!(stat(&m, "events_of_other_recordings"), 3);
    assert_eq!(stat(&m, "processes_without_process_init"), 1);
    assert_eq!(stat(&m, "events_without_process_init"), 5);
    // The scope's two warnings, then the one about the early process's callback, which only its
    // runs name (they are left out; its registration is not in the trace either).
    assert_eq!(m.warnings.len(), 3, "{:?}", m.warnings);
    assert_eq!(stat(&m, "objects_unnamed"), 1);
    assert!(m.warnings[2].starts_with("1 objects are known only by their handles"), "{}", m.warnings[2]);
    let other = &m.warnings[0];
    assert!(other.starts_with("left out 1 process (3 events) of other recordings"), "{other}");
    assert!(other.contains("(rec-b)") && other.ends_with("pids: 20 sensors"), "{other}");
    let early = &m.warnings[1];
    assert!(
        early.starts_with("left out 1 process (5 events) that emit roscope_ros1 events without a roscope_ros1:process_init"),
        "{early}"
    );
    assert!(early.contains("started before this recording (rec-b)") && early.ends_with("pids: 30 planner"), "{early}");
}

#[test]
fn another_recording_sees_this_one_as_other() {
    let m = scoped(&["rec-a"]);
    assert_eq!(ints(&m, "processes", "pid"), vec![Some(20), Some(40)]);
    assert_eq!(stat(&m, "processes_of_other_recordings"), 1);
    assert_eq!(stat(&m, "events_of_other_recordings"), 5);
    assert_eq!(stat(&m, "events_without_process_init"), 5);
    assert_eq!(stat(&m, "processes_without_process_init"), 1);
}

#[test]
fn without_record_ids_every_process_stays_and_nothing_about_scopes_is_warned() {
    let m = scoped(&[]);
    assert_eq!(ints(&m, "processes", "pid"), vec![Some(30), Some(10), Some(20), Some(40)]);
    assert_eq!(ints(&m, "callback_runs", "start_ts").len(), 3);
    for k in
        ["processes_of_other_recordings", "events_of_other_recordings", "processes_without_process_init", "events_without_process_init"]
    {
        assert_eq!(stat(&m, k), 0, "{k}");
    }
    // Nothing about scopes; only that two callbacks have no registration in the trace.
    assert_eq!(stat(&m, "objects_unnamed"), 2);
    assert!(m.warnings.iter().all(|w| w.starts_with("2 objects are known only by their handles")), "{:?}", m.warnings);
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
}
