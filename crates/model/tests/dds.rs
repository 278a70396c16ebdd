//! The DDS layer's instrumentation (the message-flow paper's `dds` provider):
//! `dds:write` gives a publication its DDS source timestamp when `rmw_publish`
//! has none (before Jazzy), in Cyclone DDS's layout (`write(writer, data,
//! timestamp)`) and Fast DDS's (`write_pre(writer, data)` then
//! `write(writer, timestamp)`). Expected values are worked out by hand.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, FieldType, TraceWriter};

const TALKER: Ctx = Ctx { pid: 100, tid: 100, procname: "talker" };
const LISTENER: Ctx = Ctx { pid: 200, tid: 200, procname: "listener" };

/// A Humble-like talker/listener on /chatter (no stamp on `rmw_publish`), with
/// `dds_events` written between `rmw_publish` of message 0xAAA and the end of
/// the timer's run; the listener takes a message with source timestamp 777.
fn trace(cyclone: bool, dds_events: impl Fn(&mut TraceWriter)) -> roscope_model::Model {
    let mut w = TraceWriter::new("host-a");
    ros2_classes(&mut w, "ros2", false);
    if cyclone {
        w.class("dds:write", &[("writer", FieldType::U64), ("data", FieldType::U64), ("timestamp", FieldType::I64)]);
    } else {
        w.class("dds:write_pre", &[("writer", FieldType::U64), ("data", FieldType::U64)]);
        w.class("dds:write", &[("writer", FieldType::U64), ("timestamp", FieldType::I64)]);
    }
    w.event(10, TALKER, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("talker"), S("/")]);
    w.event(11, TALKER, "ros2:rmw_publisher_init", &[U(0x2001), B(&gid(1))]);
    w.event(12, TALKER, "ros2:rcl_publisher_init", &[U(0x2000), U(0x1000), U(0x2001), S("/chatter"), U(10)]);
    w.event(20, LISTENER, "ros2:rcl_node_init", &[U(0x1000), U(0x1002), S("listener"), S("/")]);
    w.event(21, LISTENER, "ros2:rmw_subscription_init", &[U(0x4001), B(&gid(100))]);
    w.event(22, LISTENER, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4001), S("/chatter"), U(5)]);
    w.event(23, LISTENER, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    w.event(24, LISTENER, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x4200)]);
    w.event(1000, TALKER, "ros2:callback_start", &[U(0x3100), U(0)]);
    w.event(1100, TALKER, "ros2:rclcpp_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1110, TALKER, "ros2:rcl_publish", &[U(0x2000), U(0xAAA)]);
    w.event(1120, TALKER, "ros2:rmw_publish", &[U(0x2001), U(0xAAA)]);
    dds_events(&mut w);
    w.event(1400, TALKER, "ros2:callback_end", &[U(0x3100)]);
    w.event(1500, LISTENER, "ros2:rmw_take", &[U(0x4001), U(0xBBB), I(777), U(1)]);
    w.event(1600, LISTENER, "ros2:callback_start", &[U(0x4200), U(0)]);
    w.event(1700, LISTENER, "ros2:callback_end", &[U(0x4200)]);
    build(&w)
}

fn linked_by_dds(m: &roscope_model::Model) {
    assert_eq!(ints(m, "publications", "source_ts"), vec![Some(777)]);
    assert_eq!(ints(m, "links", "publication_id"), vec![Some(0)]);
    assert_eq!(ints(m, "links", "take_id"), vec![Some(0)]);
    assert_eq!(strs(m, "links", "method"), vec![s("dds_write_stamp")]);
    assert_eq!(ints(m, "links", "heuristic"), vec![Some(0)]);
}

#[test]
fn cyclone_dds_write_stamps_the_publication_of_its_data() {
    linked_by_dds(&trace(true, |w| {
        w.event(1130, TALKER, "dds:write", &[U(0x7000), U(0xAAA), I(777)]);
    }));
}

#[test]
fn fast_dds_write_pre_names_the_data_and_write_stamps_it() {
    linked_by_dds(&trace(false, |w| {
        w.event(1125, TALKER, "dds:write_pre", &[U(0x7000), U(0xAAA)]);
        w.event(1130, TALKER, "dds:write", &[U(0x7000), I(777)]);
    }));
}

#[test]
fn a_dds_write_of_other_data_stamps_nothing() {
    // Another writer's data on the same thread (not the ROS message 0xAAA): no
    // stamp; without heuristics in the picture the take stays unlinked by stamp.
    let m = trace(true, |w| {
        w.event(1130, TALKER, "dds:write", &[U(0x7000), U(0xCCC), I(777)]);
    });
    assert_eq!(ints(&m, "publications", "source_ts"), vec![None]);
    assert!(!strs(&m, "links", "method").contains(&s("dds_write_stamp")));
}
