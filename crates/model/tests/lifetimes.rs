//! Identity over time on hand-made traces: reused handles and pids start new
//! objects and processes; run stacks survive lost events. Expected values are
//! worked out by hand from the events written here.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, TraceWriter};

const APP: Ctx = Ctx { pid: 100, tid: 100, procname: "app" };

#[test]
fn an_init_event_for_a_known_handle_starts_a_new_object_but_a_caret_repeat_does_not() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    w.class("ros2_caret:rcl_subscription_init", SUB_INIT_FIELDS);
    w.event(10, APP, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    w.event(11, APP, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("n"), S("/")]);
    w.event(12, APP, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4001), S("/a"), U(1)]);
    w.event(13, APP, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    w.event(14, APP, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x5000)]);
    w.event(20, APP, "ros2:rmw_take", &[U(0x4001), U(1), I(0), U(1)]);
    w.event(21, APP, "ros2:callback_start", &[U(0x5000), U(0)]);
    w.event(22, APP, "ros2:callback_end", &[U(0x5000)]);
    // /a is gone; /b gets the same addresses (and CARET repeats its init).
    w.event(30, APP, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4002), S("/b"), U(1)]);
    w.event(31, APP, "ros2_caret:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4002), S("/b"), U(1)]);
    w.event(32, APP, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    w.event(33, APP, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x5000)]);
    w.event(40, APP, "ros2:rmw_take", &[U(0x4002), U(2), I(0), U(1)]);
    w.event(41, APP, "ros2:callback_start", &[U(0x5000), U(0)]);
    w.event(42, APP, "ros2:callback_end", &[U(0x5000)]);
    let m = build(&w);
    assert_eq!(strs(&m, "subscriptions", "name"), vec![s("/a"), s("/b")]);
    assert_eq!(uints(&m, "subscriptions", "handle"), vec![Some(0x4000), Some(0x4000)]);
    assert_eq!(uints(&m, "subscriptions", "rmw_handle"), vec![Some(0x4001), Some(0x4002)]);
    assert_eq!(uints(&m, "subscriptions", "rclcpp_handle"), vec![Some(0x4100), Some(0x4100)]);
    assert_eq!(ints(&m, "subscriptions", "init_ts"), vec![Some(12), Some(30)]);
    // The callback address, bound to another subscription: a new callback.
    assert_eq!(uints(&m, "callbacks", "handle"), vec![Some(0x5000), Some(0x5000)]);
    assert_eq!(ints(&m, "callbacks", "owner_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "callbacks", "init_ts"), vec![Some(14), Some(33)]);
    assert_eq!(ints(&m, "callback_runs", "callback_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "takes", "subscription_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "takes", "run_id"), vec![Some(0), Some(1)]);
}

#[test]
fn a_reused_pid_is_a_new_process_once_the_first_one_ran() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    let app = ctx(300, 300, "app");
    w.event(10, app, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    // A second rcl_init before anything ran (e.g. two contexts): same process.
    w.event(20, app, "ros2:rcl_init", &[U(2), S("4.1.0")]);
    w.event(30, app, "ros2:callback_start", &[U(0x9), U(0)]);
    w.event(40, app, "ros2:callback_end", &[U(0x9)]);
    w.event(50, app, "ros2:rcl_init", &[U(1), S("4.1.0")]);
    w.event(60, app, "ros2:callback_start", &[U(0x9), U(0)]);
    w.event(70, app, "ros2:callback_end", &[U(0x9)]);
    let m = build(&w);
    assert_eq!(ints(&m, "processes", "pid"), vec![Some(300), Some(300)]);
    assert_eq!(ints(&m, "processes", "first_ts"), vec![Some(10), Some(50)]);
    assert_eq!(ints(&m, "processes", "last_ts"), vec![Some(40), Some(70)]);
    assert_eq!(ints(&m, "processes", "events"), vec![Some(4), Some(3)]);
    assert_eq!(ints(&m, "threads", "proc_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "callbacks", "proc_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "callback_runs", "callback_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(&m, "callback_runs", "thread_id"), vec![Some(0), Some(1)]);
}

#[test]
fn unmatched_ends_are_counted_and_runs_left_open_by_lost_events_stay_open() {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", true);
    w.event(10, APP, "ros2:callback_end", &[U(0x1)]); // tracing began mid-callback
    w.event(20, APP, "ros2:callback_start", &[U(0xA), U(0)]);
    w.event(30, APP, "ros2:callback_start", &[U(0xB), U(1)]);
    w.event(40, APP, "ros2:callback_end", &[U(0xA)]); // 0xB's end was lost
    w.event(50, APP, "ros2:callback_start", &[U(0xC), U(0)]); // never ends
    let m = build(&w);
    assert_eq!(uints(&m, "callbacks", "handle"), vec![Some(0x1), Some(0xA), Some(0xB), Some(0xC)]);
    assert_eq!(ints(&m, "callback_runs", "callback_id"), vec![Some(1), Some(2), Some(3)]);
    assert_eq!(ints(&m, "callback_runs", "end_ts"), vec![Some(40), None, None]);
    assert_eq!(ints(&m, "callback_runs", "duration_ns"), vec![Some(20), None, None]);
    assert_eq!(ints(&m, "callback_runs", "is_intra"), vec![Some(0), Some(1), Some(0)]);
    assert_eq!(ints(&m, "callback_runs", "depth"), vec![Some(0), Some(1), Some(0)]);
    assert_eq!(ints(&m, "callback_runs", "parent_run_id"), vec![None, Some(0), None]);
    assert_eq!(stat(&m, "unmatched_callback_ends"), 1);
    assert_eq!(stat(&m, "unmatched_callback_starts"), 2);
}
