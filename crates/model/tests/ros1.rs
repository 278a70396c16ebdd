//! The model of a small hand-made trace of roscope's ROS 1 tracer
//! (docs/ros1-tracer.md); expected values are worked out by hand.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, FieldType::*, TraceWriter};

const TALKER: Ctx = Ctx { pid: 10, tid: 10, procname: "talker" };
const LISTENER: Ctx = Ctx { pid: 20, tid: 20, procname: "listener" };

fn classes(w: &mut TraceWriter) {
    w.class("roscope_ros1:node_init", &[("node_name", Str)]);
    w.class(
        "roscope_ros1:publisher_init",
        &[("publisher", U64), ("nh_namespace", Str), ("topic", Str), ("queue_size", U64), ("node_name", Str)],
    );
    w.class(
        "roscope_ros1:subscription_init",
        &[("subscription", U64), ("callback", U64), ("nh_namespace", Str), ("topic", Str), ("queue_size", U64), ("node_name", Str)],
    );
    for side in ["tx", "rx"] {
        w.class(&format!("roscope_ros1:link_{}_init", side), &[("link", U64), ("topic", Str), ("local_addr", Str), ("remote_addr", Str)]);
    }
    w.class("roscope_ros1:publish", &[("publisher", U64), ("message_id", U64), ("message", U64)]);
    w.class("roscope_ros1:publish_buffer", &[("message_id", U64), ("buffer", U64)]);
    w.class("roscope_ros1:link_tx_write", &[("link", U64), ("buffer", U64), ("size", U64)]);
    w.class("roscope_ros1:link_rx_message", &[("link", U64), ("buffer", U64), ("size", U64), ("index", U64)]);
    w.class("roscope_ros1:message_queue", &[("deserializer", U64), ("callback", U64), ("buffer", U64), ("message", U64)]);
    w.class("roscope_ros1:callback_start", &[("callback", U64), ("deserializer", U64)]);
    w.class("roscope_ros1:callback_end", &[("callback", U64)]);
}

/// Two messages written on one TCP connection; the subscriber's callback
/// takes the one read at position 1, so it is the second publication's.
#[test]
fn a_received_message_is_the_publication_written_at_its_position_on_the_connection() {
    let mut w = TraceWriter::new("host-a");
    classes(&mut w);
    w.event(1, TALKER, "roscope_ros1:node_init", &[S("/talker")]);
    w.event(2, TALKER, "roscope_ros1:publisher_init", &[U(0x100), S("/"), S("/chatter"), U(10), S("/talker")]);
    w.event(3, LISTENER, "roscope_ros1:node_init", &[S("/listener")]);
    w.event(4, LISTENER, "roscope_ros1:subscription_init", &[U(0x200), U(0x210), S("/"), S("/chatter"), U(5), S("/listener")]);
    w.event(5, TALKER, "roscope_ros1:link_tx_init", &[U(0x300), S("/chatter"), S("127.0.0.1:11311"), S("127.0.0.1:40000")]);
    w.event(6, LISTENER, "roscope_ros1:link_rx_init", &[U(0x400), S("/chatter"), S("127.0.0.1:40000"), S("127.0.0.1:11311")]);
    w.event(100, TALKER, "roscope_ros1:publish", &[U(0x100), U(1), U(0x500)]);
    w.event(110, TALKER, "roscope_ros1:publish_buffer", &[U(1), U(0x600)]);
    w.event(120, TALKER, "roscope_ros1:link_tx_write", &[U(0x300), U(0x600), U(64)]);
    w.event(200, TALKER, "roscope_ros1:publish", &[U(0x100), U(2), U(0x501)]);
    w.event(210, TALKER, "roscope_ros1:publish_buffer", &[U(2), U(0x601)]);
    w.event(220, TALKER, "roscope_ros1:link_tx_write", &[U(0x300), U(0x601), U(64)]);
    w.event(300, LISTENER, "roscope_ros1:link_rx_message", &[U(0x400), U(0x700), U(64), U(0)]);
    w.event(305, LISTENER, "roscope_ros1:link_rx_message", &[U(0x400), U(0x701), U(64), U(1)]);
    w.event(310, LISTENER, "roscope_ros1:message_queue", &[U(0x800), U(0x210), U(0x701), U(0)]);
    w.event(320, LISTENER, "roscope_ros1:callback_start", &[U(0x210), U(0x800)]);
    w.event(330, LISTENER, "roscope_ros1:callback_end", &[U(0x210)]);
    let m = build(&w);
    assert_eq!(strs(&m, "nodes", "name"), vec![s("/talker"), s("/listener")]);
    assert_eq!(ints(&m, "publishers", "node_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "subscriptions", "node_id"), vec![Some(1)]);
    assert_eq!(ints(&m, "subscriptions", "queue_depth"), vec![Some(5)]);
    assert_eq!(strs(&m, "callbacks", "kind"), vec![s("subscription")]);
    assert_eq!(ints(&m, "callbacks", "owner_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "publications", "rclcpp_ts"), vec![Some(100), Some(200)]);
    assert_eq!(ints(&m, "publications", "rmw_ts"), vec![Some(110), Some(210)]);
    assert_eq!(uints(&m, "publications", "message"), vec![Some(0x500), Some(0x501)]);
    // One take: queued at 310, fed run 0.
    assert_eq!(ints(&m, "takes", "subscription_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "takes", "ts"), vec![Some(310)]);
    assert_eq!(ints(&m, "takes", "run_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "takes", "is_intra"), vec![Some(0)]);
    assert_eq!(ints(&m, "links", "publication_id"), vec![Some(1)]);
    assert_eq!(ints(&m, "links", "take_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "links", "run_id"), vec![Some(0)]);
    assert_eq!(strs(&m, "links", "method"), vec![s("ros1_roscope")]);
    assert_eq!(ints(&m, "links", "heuristic"), vec![Some(0)]);
}
