//! The model of small hand-made ROS 2 traces; every expected value is
//! worked out by hand from the events written here.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, TraceWriter};

const TALKER: Ctx = Ctx { pid: 100, tid: 100, procname: "talker" };
const LISTENER: Ctx = Ctx { pid: 200, tid: 200, procname: "listener" };
const LISTENER_EXEC: Ctx = Ctx { pid: 200, tid: 201, procname: "listener" };

/// A talker (node, publisher /chatter, 100 ms timer) and a listener (node,
/// subscription /chatter), both nodes at handle 0x1000 of their process.
fn talker_listener(w: &mut TraceWriter) {
    w.event(10, TALKER, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    w.event(11, TALKER, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("talker"), S("/")]);
    w.event(12, TALKER, "ros2:rmw_publisher_init", &[U(0x2001), B(&gid(1))]);
    w.event(13, TALKER, "ros2:rcl_publisher_init", &[U(0x2000), U(0x1000), U(0x2001), S("/chatter"), U(10)]);
    w.event(14, TALKER, "ros2:rcl_timer_init", &[U(0x3000), I(100_000_000)]);
    w.event(15, TALKER, "ros2:rclcpp_timer_callback_added", &[U(0x3000), U(0x3100)]);
    w.event(16, TALKER, "ros2:rclcpp_timer_link_node", &[U(0x3000), U(0x1000)]);
    w.event(17, TALKER, "ros2:rclcpp_callback_register", &[U(0x3100), S("talker_cb")]);
    w.event(20, LISTENER, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    w.event(21, LISTENER, "ros2:rcl_node_init", &[U(0x1000), U(0x1002), S("listener"), S("/ns")]);
    w.event(22, LISTENER, "ros2:rmw_subscription_init", &[U(0x4001), B(&gid(100))]);
    w.event(23, LISTENER, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4001), S("/chatter"), U(5)]);
    w.event(24, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    w.event(25, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x4200)]);
    w.event(26, LISTENER, "ros2:rclcpp_callback_register", &[U(0x4200), S("listener_cb")]);
}

#[test]
fn timer_publishes_through_three_layers_and_the_take_feeds_the_listener() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    talker_listener(&mut w);
    w.event(1000, TALKER, "ros2:callback_start", &[U(0x3100), U(0)]);
    w.event(1100, TALKER, "ros2:rclcpp_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1110, TALKER, "ros2:rcl_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1120, TALKER, "ros2:rmw_publish", &[U(0x2001), U(0xAAA), I(5555)]);
    w.event(1200, TALKER, "ros2:callback_start", &[U(0x3300), U(0)]); // nested, never registered
    w.event(1300, TALKER, "ros2:callback_end", &[U(0x3300)]);
    w.event(1400, TALKER, "ros2:callback_end", &[U(0x3100)]);
    w.event(1500, LISTENER_EXEC, "ros2:rmw_take", &[U(0x4001), U(0xBBB), I(5555), U(1)]);
    w.event(1510, LISTENER_EXEC, "ros2:rcl_take", &[U(0xBBB)]);
    w.event(1520, LISTENER_EXEC, "ros2:rclcpp_take", &[U(0xBBB)]);
    w.event(1600, LISTENER_EXEC, "ros2:callback_start", &[U(0x4200), U(0)]);
    w.event(1700, LISTENER_EXEC, "ros2:callback_end", &[U(0x4200)]);
    let m = build(&w);

    assert_eq!(strs(&m, "hosts", "hostname"), vec![s("host-a")]);
    assert_eq!(ints(&m, "processes", "pid"), vec![Some(100), Some(200)]);
    assert_eq!(strs(&m, "processes", "procname"), vec![s("talker"), s("listener")]);
    assert_eq!(ints(&m, "processes", "first_ts"), vec![Some(10), Some(20)]);
    assert_eq!(ints(&m, "processes", "last_ts"), vec![Some(1400), Some(1700)]);
    assert_eq!(ints(&m, "processes", "events"), vec![Some(15), Some(12)]);
    assert_eq!(ints(&m, "threads", "tid"), vec![Some(100), Some(200), Some(201)]);
    assert_eq!(ints(&m, "threads", "proc_id"), vec![Some(0), Some(1), Some(1)]);

    // The same node handle in two processes: two nodes.
    assert_eq!(strs(&m, "nodes", "name"), vec![s("talker"), s("listener")]);
    assert_eq!(strs(&m, "nodes", "namespace"), vec![s("/"), s("/ns")]);
    assert_eq!(uints(&m, "nodes", "handle"), vec![Some(0x1000), Some(0x1000)]);
    assert_eq!(uints(&m, "nodes", "rmw_handle"), vec![Some(0x1001), Some(0x1002)]);
    assert_eq!(ints(&m, "nodes", "proc_id"), vec![Some(0), Some(1)]);

    assert_eq!(uints(&m, "publishers", "handle"), vec![Some(0x2000)]);
    assert_eq!(uints(&m, "publishers", "rmw_handle"), vec![Some(0x2001)]);
    assert_eq!(ints(&m, "publishers", "node_id"), vec![Some(0)]);
    assert_eq!(strs(&m, "publishers", "name"), vec![s("/chatter")]);
    assert_eq!(ints(&m, "publishers", "queue_depth"), vec![Some(10)]);
    assert_eq!(strs(&m, "publishers", "gid"), vec![Some(gid_hex(1))]);
    assert_eq!(uints(&m, "subscriptions", "rclcpp_handle"), vec![Some(0x4100)]);
    assert_eq!(ints(&m, "subscriptions", "node_id"), vec![Some(1)]);
    assert_eq!(strs(&m, "subscriptions", "gid"), vec![Some(gid_hex(100))]);
    assert_eq!(ints(&m, "subscriptions", "known"), vec![Some(1)]);
    assert_eq!(ints(&m, "timers", "period_ns"), vec![Some(100_000_000)]);
    assert_eq!(ints(&m, "timers", "node_id"), vec![Some(0)]);

    assert_eq!(uints(&m, "callbacks", "handle"), vec![Some(0x3100), Some(0x4200), Some(0x3300)]);
    assert_eq!(strs(&m, "callbacks", "kind"), vec![s("timer"), s("subscription"), s("unknown")]);
    assert_eq!(ints(&m, "callbacks", "owner_id"), vec![Some(0), Some(0), None]);
    assert_eq!(ints(&m, "callbacks", "node_id"), vec![Some(0), Some(1), None]);
    assert_eq!(strs(&m, "callbacks", "symbol"), vec![s("talker_cb"), s("listener_cb"), None]);
    assert_eq!(ints(&m, "callbacks", "init_ts"), vec![Some(15), Some(25), None]);
    assert_eq!(ints(&m, "callbacks", "known"), vec![Some(1), Some(1), Some(0)]);

    // Runs: the timer's, the nested one inside it, the listener's.
    assert_eq!(ints(&m, "callback_runs", "callback_id"), vec![Some(0), Some(2), Some(1)]);
    assert_eq!(ints(&m, "callback_runs", "thread_id"), vec![Some(0), Some(0), Some(2)]);
    assert_eq!(ints(&m, "callback_runs", "start_ts"), vec![Some(1000), Some(1200), Some(1600)]);
    assert_eq!(ints(&m, "callback_runs", "end_ts"), vec![Some(1400), Some(1300), Some(1700)]);
    assert_eq!(ints(&m, "callback_runs", "duration_ns"), vec![Some(400), Some(100), Some(100)]);
    assert_eq!(ints(&m, "callback_runs", "depth"), vec![Some(0), Some(1), Some(0)]);
    assert_eq!(ints(&m, "callback_runs", "parent_run_id"), vec![None, Some(0), None]);

    // One publication: rclcpp, rcl and rmw on one thread, same message.
    assert_eq!(ints(&m, "publications", "publisher_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "publications", "run_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "publications", "ts"), vec![Some(1100)]);
    assert_eq!(ints(&m, "publications", "rclcpp_ts"), vec![Some(1100)]);
    assert_eq!(ints(&m, "publications", "rcl_ts"), vec![Some(1110)]);
    assert_eq!(ints(&m, "publications", "rmw_ts"), vec![Some(1120)]);
    assert_eq!(uints(&m, "publications", "message"), vec![Some(0xAAA)]);
    assert_eq!(ints(&m, "publications", "source_ts"), vec![Some(5555)]);

    // The take, its layers, and the run it fed.
    assert_eq!(ints(&m, "takes", "subscription_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "takes", "thread_id"), vec![Some(2)]);
    assert_eq!(ints(&m, "takes", "run_id"), vec![Some(2)]);
    assert_eq!(ints(&m, "takes", "rmw_ts"), vec![Some(1500)]);
    assert_eq!(ints(&m, "takes", "rcl_ts"), vec![Some(1510)]);
    assert_eq!(ints(&m, "takes", "rclcpp_ts"), vec![Some(1520)]);
    assert_eq!(ints(&m, "takes", "source_ts"), vec![Some(5555)]);

    // Inter-process link by the rmw source timestamp.
    assert_eq!(ints(&m, "links", "publication_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "links", "take_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "links", "run_id"), vec![Some(2)]);
    assert_eq!(strs(&m, "links", "method"), vec![s("rmw_timestamp")]);
    assert_eq!(ints(&m, "links", "heuristic"), vec![Some(0)]);

    assert_eq!(stat(&m, "events"), 27);
    assert_eq!(stat(&m, "unmatched_callback_ends"), 0);
    assert_eq!(stat(&m, "unmatched_callback_starts"), 0);
}

/// Humble + CARET: `rmw_publish` has no timestamp; CARET's
/// `dds_bind_addr_to_stamp` gives the publication's source stamp, so the
/// link is CARET's, not `rmw_timestamp` (issue 9).
#[test]
fn a_source_stamp_from_caret_labels_the_link_caret_source_stamp() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", false);
    w.class("ros2_caret:dds_bind_addr_to_stamp", &[("addr", FieldType::U64), ("source_stamp", FieldType::I64)]);
    talker_listener(&mut w);
    w.event(1000, TALKER, "ros2:callback_start", &[U(0x3100), U(0)]);
    w.event(1100, TALKER, "ros2:rclcpp_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1110, TALKER, "ros2:rcl_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1120, TALKER, "ros2:rmw_publish", &[U(0x2001), U(0xAAA)]);
    w.event(1125, TALKER, "ros2_caret:dds_bind_addr_to_stamp", &[U(0xAAA), I(777)]);
    w.event(1400, TALKER, "ros2:callback_end", &[U(0x3100)]);
    w.event(1500, LISTENER_EXEC, "ros2:rmw_take", &[U(0x4001), U(0xBBB), I(777), U(1)]);
    w.event(1600, LISTENER_EXEC, "ros2:callback_start", &[U(0x4200), U(0)]);
    w.event(1700, LISTENER_EXEC, "ros2:callback_end", &[U(0x4200)]);
    let m = build(&w);
    assert_eq!(ints(&m, "publications", "source_ts"), vec![Some(777)]);
    assert_eq!(ints(&m, "publications", "rmw_ts"), vec![Some(1120)]);
    assert_eq!(ints(&m, "links", "take_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "links", "run_id"), vec![Some(1)]);
    assert_eq!(strs(&m, "links", "method"), vec![s("caret_source_stamp")]);
    assert_eq!(ints(&m, "links", "heuristic"), vec![Some(0)]);
}

#[test]
fn executor_states_run_from_one_event_to_the_next_and_the_last_to_the_threads_end() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    let exec = ctx(100, 101, "exec");
    w.event(100, exec, "ros2:rclcpp_executor_wait_for_work", &[I(-1)]);
    w.event(150, exec, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(160, exec, "ros2:rclcpp_executor_execute", &[U(0x77)]);
    w.event(300, exec, "ros2:rclcpp_executor_wait_for_work", &[I(-1)]);
    w.event(400, exec, "ros2:rclcpp_executor_get_next_ready", &[]);
    let m = build(&w);
    assert_eq!(strs(&m, "executor_states", "state"), vec![s("waiting"), s("selecting"), s("executing"), s("waiting"), s("selecting")]);
    assert_eq!(ints(&m, "executor_states", "start_ts"), vec![Some(100), Some(150), Some(160), Some(300), Some(400)]);
    assert_eq!(ints(&m, "executor_states", "end_ts"), vec![Some(150), Some(160), Some(300), Some(400), Some(400)]);
    assert_eq!(uints(&m, "executor_states", "handle"), vec![None, None, Some(0x77), None, None]);
    assert_eq!(ints(&m, "executor_states", "thread_id"), vec![Some(0); 5]);
}

/// Two threads of one multi-threaded executor: executing ends at the thread's
/// last event inside the execution (a callback's end, or a take that found
/// nothing), and the gap up to its next executor event (its turn at the shared
/// wait) is waiting. A callback run while selecting (an intra-process waitable,
/// which has no execute event) is executing.
#[test]
fn executing_ends_at_the_last_event_of_the_execution_and_the_rest_is_waiting() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    talker_listener(&mut w);
    let a = LISTENER_EXEC;
    let b = ctx(200, 202, "listener");
    w.event(100, a, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(110, a, "ros2:rclcpp_executor_execute", &[U(0x4000)]);
    w.event(120, a, "ros2:rmw_take", &[U(0x4001), U(0xBBB), I(1), U(1)]);
    w.event(130, a, "ros2:callback_start", &[U(0x4200), U(0)]);
    w.event(135, a, "ros2:callback_start", &[U(0x4300), U(0)]); // nested: inside the outer run
    w.event(140, a, "ros2:callback_end", &[U(0x4300)]);
    w.event(150, b, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(160, b, "ros2:rclcpp_executor_wait_for_work", &[I(-1)]);
    w.event(200, a, "ros2:callback_end", &[U(0x4200)]);
    w.event(400, b, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(410, b, "ros2:rclcpp_executor_execute", &[U(0x4000)]);
    w.event(420, b, "ros2:rmw_take", &[U(0x4001), U(0xCCC), I(0), U(0)]); // nothing to take
    w.event(430, a, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(440, a, "ros2:callback_start", &[U(0x4500), U(1)]); // a waitable: no execute event
    w.event(480, a, "ros2:callback_end", &[U(0x4500)]);
    w.event(490, a, "ros2:callback_start", &[U(0x4500), U(1)]); // and another run in the same execution
    w.event(500, a, "ros2:callback_end", &[U(0x4500)]);
    w.event(700, b, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(720, a, "ros2:rclcpp_executor_get_next_ready", &[]);
    w.event(730, a, "ros2:rclcpp_executor_execute", &[U(0x3000)]);
    w.event(760, a, "ros2:rclcpp_executor_get_next_ready", &[]); // an execution with no event inside
    let m = build(&w);
    let (tid, th) = (ints(&m, "threads", "tid"), ints(&m, "executor_states", "thread_id"));
    let (start, end, state) =
        (ints(&m, "executor_states", "start_ts"), ints(&m, "executor_states", "end_ts"), strs(&m, "executor_states", "state"));
    let mut got: Vec<(i64, i64, i64, &str)> = (0..state.len())
        .map(|i| (tid[th[i].unwrap() as usize].unwrap(), start[i].unwrap(), end[i].unwrap(), state[i].as_deref().unwrap()))
        .collect();
    got.sort();
    let want: Vec<(i64, i64, i64, &str)> = vec![
        (201, 100, 110, "selecting"),
        (201, 110, 200, "executing"),
        (201, 200, 430, "waiting"),
        (201, 430, 440, "selecting"),
        (201, 440, 500, "executing"),
        (201, 500, 720, "waiting"),
        (201, 720, 730, "selecting"),
        (201, 730, 760, "executing"),
        (201, 760, 760, "selecting"),
        (202, 150, 160, "selecting"),
        (202, 160, 400, "waiting"),
        (202, 400, 410, "selecting"),
        (202, 410, 420, "executing"),
        (202, 420, 700, "waiting"),
        (202, 700, 700, "selecting"),
    ];
    assert_eq!(got, want);
}

#[test]
fn annotation_members_resolve_to_subscriptions_by_rcl_or_rclcpp_handle_in_their_process() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    w.class("ros2:message_link_periodic_async", &[("subs", FieldType::U64Seq), ("pubs", FieldType::U64Seq)]);
    talker_listener(&mut w);
    // The publisher 0x2000 is the talker's: not a member the listener can name.
    w.event(30, LISTENER, "ros2:message_link_periodic_async", &[Q(&[0x4000, 0x4100, 0x9999]), Q(&[0x2000])]);
    let m = build(&w);
    assert_eq!(ints(&m, "annotations", "proc_id"), vec![Some(1)]);
    assert_eq!(strs(&m, "annotations", "kind"), vec![s("periodic_async")]);
    assert_eq!(ints(&m, "annotations", "ts"), vec![Some(30)]);
    assert_eq!(strs(&m, "annotation_members", "role"), vec![s("subscription"), s("subscription"), s("subscription"), s("publisher")]);
    assert_eq!(uints(&m, "annotation_members", "handle"), vec![Some(0x4000), Some(0x4100), Some(0x9999), Some(0x2000)]);
    assert_eq!(ints(&m, "annotation_members", "subscription_id"), vec![Some(0), Some(0), None, None]);
    assert_eq!(ints(&m, "annotation_members", "publisher_id"), vec![None, None, None, None]);
}

/// rclcpp 28 (Jazzy) with intra-process communication on, in the order its constructors emit:
/// the intra-process subscription adds its callback and buffer before `rclcpp_subscription_init`
/// names it. A publisher whose only subscriber is in another process publishes each message
/// intra-process (`rclcpp_intra_publish`) and then to the others (`rclcpp_publish`, the same
/// message): one publication. Event order and fields from rclcpp 28.1.6's subscription.hpp,
/// subscription_intra_process.hpp and publisher.hpp.
#[test]
fn rclcpp_intra_process_subscription_and_a_publication_to_both_sides() {
    use common::FieldType::{U64, U8};
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    w.class("ros2:rclcpp_intra_publish", &[("publisher_handle", U64), ("message", U64)]);
    w.class("ros2:rclcpp_ipb_to_subscription", &[("ipb", U64), ("subscription", U64)]);
    w.class("ros2:rclcpp_buffer_to_ipb", &[("buffer", U64), ("ipb", U64)]);
    w.class("ros2:rclcpp_ring_buffer_enqueue", &[("buffer", U64), ("index", U64), ("size", U64), ("overwritten", U8)]);
    w.class("ros2:rclcpp_ring_buffer_dequeue", &[("buffer", U64), ("index", U64), ("size", U64)]);
    talker_listener(&mut w);
    // the listener's second subscription, /fast, intra-process (a UniquePtr callback)
    w.event(30, LISTENER, "ros2:rmw_subscription_init", &[U(0x5001), B(&gid(101))]);
    w.event(31, LISTENER, "ros2:rcl_subscription_init", &[U(0x5000), U(0x1000), U(0x5001), S("/fast"), U(5)]);
    w.event(32, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x5500), U(0x5600)]); // the ipc subscription's
    w.event(33, LISTENER, "ros2:rclcpp_buffer_to_ipb", &[U(0x5800), U(0x5700)]);
    w.event(34, LISTENER, "ros2:rclcpp_ipb_to_subscription", &[U(0x5700), U(0x5500)]);
    w.event(35, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x5000), U(0x5500)]);
    w.event(36, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x5000), U(0x5100)]);
    w.event(37, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x5100), U(0x5200)]);
    w.event(38, LISTENER, "ros2:rclcpp_callback_register", &[U(0x5600), S("on_fast")]);
    w.event(38, LISTENER, "ros2:rclcpp_callback_register", &[U(0x5200), S("on_fast")]);
    // ... and a publisher of /fast in the same process
    w.event(39, LISTENER, "ros2:rmw_publisher_init", &[U(0x6001), B(&gid(102))]);
    w.event(40, LISTENER, "ros2:rcl_publisher_init", &[U(0x6000), U(0x1000), U(0x6001), S("/fast"), U(5)]);
    w.event(41, LISTENER, "ros2:rcl_timer_init", &[U(0x3000), I(100_000_000)]);
    w.event(42, LISTENER, "ros2:rclcpp_timer_callback_added", &[U(0x3000), U(0x3100)]);
    w.event(43, LISTENER, "ros2:rclcpp_callback_register", &[U(0x3100), S("health")]);
    // The talker, intra-process on, publishes /chatter (its subscriber is in the listener's process).
    w.event(1000, TALKER, "ros2:callback_start", &[U(0x3100), U(0)]);
    w.event(1100, TALKER, "ros2:rclcpp_intra_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1105, TALKER, "ros2:rclcpp_publish", &[U(0), U(0xAAA)]);
    w.event(1110, TALKER, "ros2:rcl_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1120, TALKER, "ros2:rmw_publish", &[U(0x2001), U(0xAAA), I(5555)]);
    w.event(1400, TALKER, "ros2:callback_end", &[U(0x3100)]);
    w.event(1500, LISTENER_EXEC, "ros2:rmw_take", &[U(0x4001), U(0xBBB), I(5555), U(1)]);
    w.event(1600, LISTENER_EXEC, "ros2:callback_start", &[U(0x4200), U(0)]);
    // ... which publishes /fast intra-process only
    w.event(1650, LISTENER_EXEC, "ros2:rclcpp_intra_publish", &[U(0x6000), U(0xCCC)]);
    w.event(1651, LISTENER_EXEC, "ros2:rclcpp_ring_buffer_enqueue", &[U(0x5800), U(3), U(1), U(0)]);
    w.event(1700, LISTENER_EXEC, "ros2:callback_end", &[U(0x4200)]);
    // rclcpp 28 also takes /fast's message through DDS, and drops it (it came intra-process): no run
    w.event(1750, LISTENER_EXEC, "ros2:rmw_take", &[U(0x5001), U(0xDDD), I(7777), U(1)]);
    w.event(1760, LISTENER_EXEC, "ros2:callback_start", &[U(0x3100), U(0)]); // a timer's run takes nothing
    w.event(1770, LISTENER_EXEC, "ros2:callback_end", &[U(0x3100)]);
    w.event(1800, LISTENER_EXEC, "ros2:rclcpp_ring_buffer_dequeue", &[U(0x5800), U(3), U(0)]);
    w.event(1810, LISTENER_EXEC, "ros2:callback_start", &[U(0x5600), U(1)]);
    w.event(1900, LISTENER_EXEC, "ros2:callback_end", &[U(0x5600)]);
    let m = build(&w);

    // One subscription per rcl handle, known; no stand-in for the intra-process one; no
    // publisher for the null handle of rclcpp 28's `rclcpp_publish`.
    assert_eq!(uints(&m, "publishers", "handle"), vec![Some(0x2000), Some(0x6000)]);
    assert_eq!(uints(&m, "subscriptions", "handle"), vec![Some(0x4000), Some(0x5000)]);
    assert_eq!(ints(&m, "subscriptions", "subscription_id"), vec![Some(0), Some(1)]); // dense: the flow needs 0..n
    assert_eq!(strs(&m, "subscriptions", "name"), vec![s("/chatter"), s("/fast")]);
    assert_eq!(ints(&m, "subscriptions", "known"), vec![Some(1), Some(1)]);
    assert_eq!(stat(&m, "objects_unnamed"), 0);
    // The intra-process callback belongs to /fast's subscription, as does the inter-process one.
    let handles = uints(&m, "callbacks", "handle");
    let owners = ints(&m, "callbacks", "owner_id");
    let owner = |h: u64| owners[handles.iter().position(|&x| x == Some(h)).unwrap()];
    assert_eq!(owner(0x5600), Some(1));
    assert_eq!(owner(0x5200), Some(1));
    assert_eq!(owner(0x4200), Some(0));
    // Two publications: /chatter's (both sides, one row) and /fast's (intra-process only).
    assert_eq!(ints(&m, "publications", "publisher_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "publications", "is_intra"), vec![Some(1), Some(1)]);
    assert_eq!(ints(&m, "publications", "rclcpp_ts"), vec![Some(1100), Some(1650)]);
    assert_eq!(ints(&m, "publications", "rmw_ts"), vec![Some(1120), None]);
    // Each delivered: /chatter through DDS (its source stamp), /fast through the ring buffer.
    assert_eq!(ints(&m, "takes", "subscription_id"), vec![Some(0), Some(1), Some(1)]);
    assert_eq!(ints(&m, "takes", "is_intra"), vec![Some(0), Some(0), Some(1)]);
    let runs_cb = ints(&m, "callback_runs", "callback_id");
    let run_of_take = ints(&m, "takes", "run_id");
    assert_eq!(run_of_take[1], None, "the dropped DDS take fed no run");
    let fast_cb = uints(&m, "callbacks", "handle").iter().position(|&h| h == Some(0x5600)).map(|i| i as i64);
    assert_eq!(run_of_take[2].map(|r| runs_cb[r as usize]), Some(fast_cb));
    assert_eq!(ints(&m, "links", "publication_id"), vec![Some(0), Some(1)]);
    assert_eq!(strs(&m, "links", "method"), vec![s("rmw_timestamp"), s("intra_ring_buffer")]);
}

/// The same stand-in when another subscription was made between the intra-process callback's
/// `rclcpp_subscription_callback_added` and `rclcpp_subscription_init`: it cannot go (row ids
/// stay dense), so it stays as a row without name, not counted as unnamed, and the callback is
/// the real subscription's.
#[test]
fn an_intra_process_stand_in_that_is_not_the_newest_object_stays_an_empty_row() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    talker_listener(&mut w);
    w.event(30, LISTENER, "ros2:rmw_subscription_init", &[U(0x5001), B(&gid(101))]);
    w.event(31, LISTENER, "ros2:rcl_subscription_init", &[U(0x5000), U(0x1000), U(0x5001), S("/fast"), U(5)]);
    w.event(32, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x5500), U(0x5600)]);
    w.event(33, LISTENER, "ros2:rmw_subscription_init", &[U(0x7001), B(&gid(103))]);
    w.event(34, LISTENER, "ros2:rcl_subscription_init", &[U(0x7000), U(0x1000), U(0x7001), S("/other"), U(5)]);
    w.event(35, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x5000), U(0x5500)]);
    w.event(36, LISTENER, "ros2:rclcpp_callback_register", &[U(0x5600), S("on_fast")]);
    w.event(37, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x7000), U(0x7100)]);
    w.event(38, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x7100), U(0x7200)]);
    w.event(39, LISTENER, "ros2:rclcpp_callback_register", &[U(0x7200), S("on_other")]);
    let m = build(&w);
    assert_eq!(ints(&m, "subscriptions", "subscription_id"), vec![Some(0), Some(1), Some(2), Some(3)]);
    assert_eq!(strs(&m, "subscriptions", "name"), vec![s("/chatter"), s("/fast"), None, s("/other")]);
    assert_eq!(stat(&m, "objects_unnamed"), 0);
    let handles = uints(&m, "callbacks", "handle");
    let owners = ints(&m, "callbacks", "owner_id");
    assert_eq!(owners[handles.iter().position(|&x| x == Some(0x5600)).unwrap()], Some(1));
    assert_eq!(owners[handles.iter().position(|&x| x == Some(0x7200)).unwrap()], Some(3));
}
