//! CARET's executor structure events: executors, callback groups and their
//! members, on hand-made traces in CARET's layouts (every event with its
//! `init_timestamp`). Expected rows are worked out by hand from the events.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, FieldType::*, TraceWriter};

const A: Ctx = Ctx { pid: 100, tid: 100, procname: "planner" };
const B: Ctx = Ctx { pid: 200, tid: 201, procname: "driver" };

fn caret_classes(w: &mut TraceWriter) {
    let ts = ("init_timestamp", I64);
    w.class("ros2_caret:construct_executor", &[("executor_addr", U64), ("executor_type_name", Str), ts]);
    w.class(
        "ros2_caret:construct_static_executor",
        &[("executor_addr", U64), ("entities_collector_addr", U64), ("executor_type_name", Str), ts],
    );
    w.class("ros2_caret:add_callback_group", &[("executor_addr", U64), ("callback_group_addr", U64), ("group_type_name", Str), ts]);
    w.class(
        "ros2_caret:add_callback_group_static_executor",
        &[("entities_collector_addr", U64), ("callback_group_addr", U64), ("group_type_name", Str), ts],
    );
    w.class(
        "ros2_caret:callback_group_to_executor_entity_collector",
        &[("entities_collector_addr", U64), ("callback_group_addr", U64), ("group_type_name", Str), ts],
    );
    w.class("ros2_caret:executor_entity_collector_to_executor", &[("executor_addr", U64), ("entities_collector_addr", U64), ts]);
    for (what, handle) in
        [("timer", "timer_handle"), ("subscription", "subscription_handle"), ("service", "service_handle"), ("client", "client_handle")]
    {
        w.class(&format!("ros2_caret:callback_group_add_{what}"), &[("callback_group_addr", U64), (handle, U64), ts]);
    }
    // Not CARET's provider: the model must not read it.
    w.class("ros2:construct_executor", &[("executor_addr", U64), ("executor_type_name", Str)]);
}

fn trace() -> roscope_model::Model {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    caret_classes(&mut w);
    w.class("ros2:rcl_service_init", &[("service_handle", U64), ("node_handle", U64), ("rmw_service_handle", U64), ("service_name", Str)]);
    w.class("ros2:rclcpp_service_callback_added", &[("service_handle", U64), ("callback", U64)]);
    // Process A: a multi-threaded executor with two groups.
    w.event(10, A, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("planner"), S("/")]);
    w.event(11, A, "ros2:rcl_timer_init", &[U(0x5000), I(100_000_000)]);
    w.event(12, A, "ros2:rclcpp_timer_callback_added", &[U(0x5000), U(0x5100)]);
    w.event(13, A, "ros2:rclcpp_timer_link_node", &[U(0x5000), U(0x1000)]);
    w.event(20, A, "ros2_caret:construct_executor", &[U(0xE1), S("multi_threaded_executor"), I(5)]);
    w.event(21, A, "ros2_caret:add_callback_group", &[U(0xE1), U(0x61), S("mutually_exclusive"), I(6)]);
    w.event(22, A, "ros2_caret:add_callback_group", &[U(0xE1), U(0x62), S("reentrant"), I(6)]);
    w.event(23, A, "ros2_caret:callback_group_add_timer", &[U(0x61), U(0x5000), I(7)]);
    // The subscription joins its group before its own init event is in the trace.
    w.event(24, A, "ros2_caret:callback_group_add_subscription", &[U(0x62), U(0x4000), I(7)]);
    w.event(25, A, "ros2_caret:callback_group_add_service", &[U(0x61), U(0x6000), I(7)]);
    w.event(30, A, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4001), S("/scan"), U(5)]);
    w.event(31, A, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    w.event(32, A, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x4200)]);
    w.event(33, A, "ros2:rcl_service_init", &[U(0x6000), U(0x1000), U(0x6001), S("/plan")]);
    w.event(34, A, "ros2:rclcpp_service_callback_added", &[U(0x6000), U(0x6100)]);
    // CARET re-emits the structure when its recording starts: the same rows.
    w.event(40, A, "ros2_caret:construct_executor", &[U(0xE1), S("multi_threaded_executor"), I(5)]);
    w.event(41, A, "ros2_caret:add_callback_group", &[U(0xE1), U(0x61), S("mutually_exclusive"), I(6)]);
    w.event(42, A, "ros2_caret:callback_group_add_timer", &[U(0x61), U(0x5000), I(7)]);
    w.event(43, A, "ros2:construct_executor", &[U(0xE9), S("single_threaded_executor")]);
    // Process B: a static executor (Humble), and Jazzy's collector events, the
    // group's collector named before the collector's executor.
    w.event(50, B, "ros2_caret:construct_static_executor", &[U(0xE2), U(0xC2), S("static_single_threaded_executor"), I(1)]);
    w.event(51, B, "ros2_caret:add_callback_group_static_executor", &[U(0xC2), U(0x64), S("mutually_exclusive"), I(1)]);
    w.event(52, B, "ros2_caret:callback_group_to_executor_entity_collector", &[U(0xC3), U(0x63), S("reentrant"), I(1)]);
    w.event(53, B, "ros2_caret:executor_entity_collector_to_executor", &[U(0xE3), U(0xC3), I(1)]);
    w.event(54, B, "ros2_caret:construct_executor", &[U(0xE3), S("single_threaded_executor"), I(1)]);
    // A client whose init event is not in the trace.
    w.event(55, B, "ros2_caret:callback_group_add_client", &[U(0x63), U(0x7000), I(1)]);
    build(&w)
}

#[test]
fn executors_groups_and_members_come_from_carets_events() {
    let m = trace();
    assert_eq!(uints(&m, "executors", "handle"), vec![Some(0xE1), Some(0xE2), Some(0xE3)]);
    assert_eq!(ints(&m, "executors", "proc_id"), vec![Some(0), Some(1), Some(1)]);
    assert_eq!(
        strs(&m, "executors", "type"),
        vec![s("multi_threaded_executor"), s("static_single_threaded_executor"), s("single_threaded_executor")]
    );
    assert_eq!(uints(&m, "executors", "collector_handle"), vec![None, Some(0xC2), Some(0xC3)]);
    assert_eq!(ints(&m, "executors", "init_ts"), vec![Some(20), Some(50), Some(54)]);

    assert_eq!(uints(&m, "callback_groups", "handle"), vec![Some(0x61), Some(0x62), Some(0x64), Some(0x63)]);
    assert_eq!(ints(&m, "callback_groups", "executor_id"), vec![Some(0), Some(0), Some(1), Some(2)]);
    assert_eq!(strs(&m, "callback_groups", "type"), vec![s("mutually_exclusive"), s("reentrant"), s("mutually_exclusive"), s("reentrant")]);

    // Members: each once; timer 0 / callback 0, subscription 0 / callback 1,
    // service 0 / callback 2 (callbacks in the order they were added); the
    // client has no init event, so no object and no callback.
    assert_eq!(ints(&m, "callback_group_members", "group_id"), vec![Some(0), Some(1), Some(0), Some(3)]);
    assert_eq!(strs(&m, "callback_group_members", "kind"), vec![s("timer"), s("subscription"), s("service"), s("client")]);
    assert_eq!(uints(&m, "callback_group_members", "handle"), vec![Some(0x5000), Some(0x4000), Some(0x6000), Some(0x7000)]);
    assert_eq!(ints(&m, "callback_group_members", "owner_id"), vec![Some(0), Some(0), Some(0), None]);
    assert_eq!(ints(&m, "callback_group_members", "callback_id"), vec![Some(0), Some(1), Some(2), None]);
    assert_eq!(uints(&m, "callbacks", "handle"), vec![Some(0x5100), Some(0x4200), Some(0x6100)]);
}

#[test]
fn a_trace_without_them_has_empty_tables() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    w.event(10, A, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("planner"), S("/")]);
    let m = build(&w);
    for t in ["executors", "callback_groups", "callback_group_members"] {
        assert_eq!(table(&m, t).rows, 0, "{t}");
    }
}
