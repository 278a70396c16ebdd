//! Services in the model (services.rs), on small hand-made traces: every
//! expected value is worked out by hand from the events written here.

mod common;

use common::*;
use roscope_ctf::testing::{Ctx, FieldType::*, TraceWriter};

const CLIENT: Ctx = Ctx { pid: 100, tid: 100, procname: "planner" };
const CLIENT_EXEC: Ctx = Ctx { pid: 100, tid: 101, procname: "planner" };
const SERVER: Ctx = Ctx { pid: 200, tid: 200, procname: "mapper" };

/// The service events under `provider` (Kilted's `ros2`, or the rclpy hook's
/// `roscope_ros2` with its extra `source_timestamp`), and roscope's rclpy events.
fn classes(w: &mut TraceWriter, provider: &str) {
    ros2_classes(w, "ros2", true);
    w.class("ros2:rmw_client_init", &[("rmw_client_handle", U64), ("gid", Bytes(16))]);
    let srv = [("service_handle", U64), ("node_handle", U64), ("rmw_service_handle", U64), ("service_name", Str)];
    w.class("ros2:rcl_service_init", &srv);
    let cli = [("client_handle", U64), ("node_handle", U64), ("rmw_client_handle", U64), ("service_name", Str)];
    w.class("ros2:rcl_client_init", &cli);
    w.class("ros2:rclcpp_service_callback_added", &[("service_handle", U64), ("callback", U64)]);
    let p = |n: &str| format!("{}:{}", provider, n);
    w.class(&p("rmw_send_request"), &[("rmw_client_handle", U64), ("request", U64), ("sequence_number", I64)]);
    let mut take = vec![("rmw_service_handle", U64), ("request", U64), ("client_gid", Bytes(16)), ("sequence_number", I64), ("taken", U8)];
    if provider == "roscope_ros2" {
        take.push(("source_timestamp", I64));
    }
    w.class(&p("rmw_take_request"), &take);
    let send = [("rmw_service_handle", U64), ("response", U64), ("client_gid", Bytes(16)), ("sequence_number", I64), ("timestamp", I64)];
    w.class(&p("rmw_send_response"), &send);
    let resp = [("rmw_client_handle", U64), ("response", U64), ("sequence_number", I64), ("source_timestamp", I64), ("taken", U8)];
    w.class(&p("rmw_take_response"), &resp);
    w.class("roscope_ros2:client_callback_added", &[("client_handle", U64), ("callback", U64)]);
    w.class("roscope_ros2:callback_input", &[("callback", U64), ("rmw_handle", U64), ("sequence_number", I64)]);
}

/// A planner with a subscription (its run sends the request), a client of
/// /plan_path with a response callback; a mapper serving /plan_path.
fn objects(w: &mut TraceWriter, client_gid: bool) {
    w.event(10, CLIENT, "ros2:rcl_node_init", &[U(0x1000), U(0x1001), S("planner"), S("/")]);
    w.event(11, CLIENT, "ros2:rmw_subscription_init", &[U(0x4001), B(&gid(1))]);
    w.event(12, CLIENT, "ros2:rcl_subscription_init", &[U(0x4000), U(0x1000), U(0x4001), S("/fused"), U(10)]);
    w.event(13, CLIENT, "ros2:rclcpp_subscription_init", &[U(0x4000), U(0x4100)]);
    w.event(14, CLIENT, "ros2:rclcpp_subscription_callback_added", &[U(0x4100), U(0x4200)]);
    if client_gid {
        w.event(15, CLIENT, "ros2:rmw_client_init", &[U(0x5001), B(&[7; 16])]);
    }
    w.event(16, CLIENT, "ros2:rcl_client_init", &[U(0x5000), U(0x1000), U(0x5001), S("/plan_path")]);
    w.event(17, CLIENT, "roscope_ros2:client_callback_added", &[U(0x5000), U(0x5200)]);
    w.event(18, CLIENT, "ros2:rclcpp_callback_register", &[U(0x5200), S("Planner.on_plan")]);
    w.event(20, SERVER, "ros2:rcl_node_init", &[U(0x1000), U(0x1002), S("mapper"), S("/")]);
    w.event(21, SERVER, "ros2:rcl_service_init", &[U(0x6000), U(0x1000), U(0x6001), S("/plan_path")]);
    w.event(22, SERVER, "ros2:rclcpp_service_callback_added", &[U(0x6000), U(0x6200)]);
}

/// One call: the planner's subscription run sends request 1, the mapper's
/// service run handles it and responds, the planner's executor takes the
/// response, and its done callback runs (on another thread) after
/// `callback_input`.
fn one_call(w: &mut TraceWriter, provider: &str, kilted: bool) {
    let p = |n: &str| format!("{}:{}", provider, n);
    let g: &[u8] = if kilted { &[7; 16] } else { &[0; 16] };
    w.event(1000, CLIENT, "ros2:callback_start", &[U(0x4200), U(0)]);
    w.event(1100, CLIENT, &p("rmw_send_request"), &[U(0x5001), U(0xA1), I(1)]);
    w.event(1200, CLIENT, "ros2:callback_end", &[U(0x4200)]);
    let mut take = vec![U(0x6001), U(0xB1), B(g), I(1), U(1)];
    if provider == "roscope_ros2" {
        take.push(I(0));
    }
    w.event(1300, SERVER, &p("rmw_take_request"), &take);
    w.event(1310, SERVER, "ros2:callback_start", &[U(0x6200), U(0)]);
    w.event(1500, SERVER, "ros2:callback_end", &[U(0x6200)]);
    w.event(1510, SERVER, &p("rmw_send_response"), &[U(0x6001), U(0xB2), B(g), I(1), I(0)]);
    w.event(1600, CLIENT_EXEC, &p("rmw_take_response"), &[U(0x5001), U(0xA2), I(1), I(0), U(1)]);
    w.event(1700, CLIENT, "roscope_ros2:callback_input", &[U(0x5200), U(0x5001), I(1)]);
    w.event(1710, CLIENT, "ros2:callback_start", &[U(0x5200), U(0)]);
    w.event(1800, CLIENT, "ros2:callback_end", &[U(0x5200)]);
}

fn check_one_call(m: &roscope_model::Model, method: &str) {
    // Pseudo-endpoints: the client's request writer and response reader, the
    // service's request reader and response writer, after the real ones.
    assert_eq!(strs(m, "publishers", "name"), vec![s("/plan_path:request"), s("/plan_path:response")]);
    assert_eq!(strs(m, "subscriptions", "name"), vec![s("/fused"), s("/plan_path:response"), s("/plan_path:request")]);
    assert_eq!(ints(m, "publishers", "node_id"), vec![Some(0), Some(1)]);
    // Runs: the subscription's, the service's, the client callback's.
    assert_eq!(ints(m, "callback_runs", "start_ts"), vec![Some(1000), Some(1310), Some(1710)]);
    assert_eq!(strs(m, "callbacks", "kind"), vec![s("subscription"), s("client"), s("service")]);
    // The request (published in the subscription's run) and the response (for the service's run).
    assert_eq!(ints(m, "publications", "publisher_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(m, "publications", "ts"), vec![Some(1100), Some(1510)]);
    assert_eq!(ints(m, "publications", "run_id"), vec![Some(0), Some(1)]);
    // Takes: the service's of the request (feeds its run), the client's of the response (feeds
    // the done callback's run, named by callback_input).
    assert_eq!(ints(m, "takes", "subscription_id"), vec![Some(2), Some(1)]);
    assert_eq!(ints(m, "takes", "run_id"), vec![Some(1), Some(2)]);
    assert_eq!(ints(m, "links", "publication_id"), vec![Some(0), Some(1)]);
    assert_eq!(ints(m, "links", "run_id"), vec![Some(1), Some(2)]);
    assert_eq!(strs(m, "links", "method"), vec![s(method), s(method)]);
    assert_eq!(ints(m, "links", "heuristic"), vec![Some(0), Some(0)]);
    // One call, request and response paired.
    assert_eq!(ints(m, "service_calls", "client_id"), vec![Some(0)]);
    assert_eq!(ints(m, "service_calls", "service_id"), vec![Some(0)]);
    assert_eq!(ints(m, "service_calls", "sequence_number"), vec![Some(1)]);
    assert_eq!(ints(m, "service_calls", "request_publication_id"), vec![Some(0)]);
    assert_eq!(ints(m, "service_calls", "request_take_id"), vec![Some(0)]);
    assert_eq!(ints(m, "service_calls", "response_publication_id"), vec![Some(1)]);
    assert_eq!(ints(m, "service_calls", "response_take_id"), vec![Some(1)]);
    assert_eq!(strs(m, "service_calls", "method"), vec![s(method)]);
}

#[test]
fn kilted_matches_a_request_by_client_gid_and_sequence_number() {
    let mut w = TraceWriter::new("h");
    classes(&mut w, "ros2");
    objects(&mut w, true);
    one_call(&mut w, "ros2", true);
    check_one_call(&build(&w), "service_gid_sequence");
}

#[test]
fn jazzy_matches_a_request_by_service_name_and_sequence_number() {
    let mut w = TraceWriter::new("h");
    classes(&mut w, "roscope_ros2");
    objects(&mut w, false);
    one_call(&mut w, "roscope_ros2", false);
    check_one_call(&build(&w), "service_sequence");
}

/// The hook emits `rmw_send_request` after the send returns: the server may
/// take the request, and even respond, before it. The take waits for it.
#[test]
fn a_request_taken_and_answered_before_its_sending_was_read_is_one_call() {
    let mut w = TraceWriter::new("h");
    classes(&mut w, "roscope_ros2");
    objects(&mut w, false);
    w.event(1000, CLIENT, "ros2:callback_start", &[U(0x4200), U(0)]);
    w.event(1300, SERVER, "roscope_ros2:rmw_take_request", &[U(0x6001), U(0xB1), B(&[0; 16]), I(1), U(1), I(0)]);
    w.event(1310, SERVER, "ros2:callback_start", &[U(0x6200), U(0)]);
    w.event(1400, SERVER, "ros2:callback_end", &[U(0x6200)]);
    w.event(1410, SERVER, "roscope_ros2:rmw_send_response", &[U(0x6001), U(0xB2), B(&[0; 16]), I(1), I(0)]);
    // A second run of the server handles the same request (an action's execute callback).
    w.event(1420, SERVER, "roscope_ros2:callback_input", &[U(0x6200), U(0x6001), I(1)]);
    w.event(1430, SERVER, "ros2:callback_start", &[U(0x6200), U(0)]);
    w.event(1440, SERVER, "ros2:callback_end", &[U(0x6200)]);
    w.event(1500, CLIENT, "roscope_ros2:rmw_send_request", &[U(0x5001), U(0xA1), I(1)]);
    w.event(1510, CLIENT, "ros2:callback_end", &[U(0x4200)]);
    w.event(1600, CLIENT_EXEC, "roscope_ros2:rmw_take_response", &[U(0x5001), U(0xA2), I(1), I(0), U(1)]);
    let m = build(&w);
    assert_eq!(ints(&m, "service_calls", "request_publication_id"), vec![Some(1)]);
    assert_eq!(ints(&m, "service_calls", "request_take_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "response_publication_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "response_take_id"), vec![Some(2)]);
    // The request links into both runs of the server (the second through the take's copy),
    // the response into no run (no callback_input).
    assert_eq!(ints(&m, "takes", "run_id"), vec![Some(1), Some(2), None]);
    assert_eq!(ints(&m, "links", "publication_id"), vec![Some(1), Some(1), Some(0)]);
    assert_eq!(ints(&m, "links", "run_id"), vec![Some(1), Some(2), None]);
}

/// Two clients sent sequence number 1 to the same service: without a GID the
/// take goes with the latest sent before it, flagged heuristic.
#[test]
fn several_clients_with_one_sequence_number_make_a_heuristic_link() {
    const OTHER: Ctx = Ctx { pid: 300, tid: 300, procname: "other" };
    let mut w = TraceWriter::new("h");
    classes(&mut w, "roscope_ros2");
    objects(&mut w, false);
    w.event(30, OTHER, "ros2:rcl_node_init", &[U(0x1000), U(0x1003), S("other"), S("/")]);
    w.event(31, OTHER, "ros2:rcl_client_init", &[U(0x5000), U(0x1000), U(0x7001), S("/plan_path")]);
    w.event(1000, OTHER, "roscope_ros2:rmw_send_request", &[U(0x7001), U(0xC1), I(1)]);
    w.event(1100, CLIENT, "roscope_ros2:rmw_send_request", &[U(0x5001), U(0xA1), I(1)]);
    w.event(1300, SERVER, "roscope_ros2:rmw_take_request", &[U(0x6001), U(0xB1), B(&[0; 16]), I(1), U(1), I(0)]);
    let m = build(&w);
    // Publication 1 is the planner's (the latest before the take).
    assert_eq!(ints(&m, "links", "publication_id"), vec![Some(1)]);
    assert_eq!(strs(&m, "links", "method"), vec![s("service_sequence_nearest")]);
    assert_eq!(ints(&m, "links", "heuristic"), vec![Some(1)]);
}

/// On a busy host the client takes the response before its thread emits the send
/// event of the request (Jazzy's rclpy hook emits it after the DDS write returns,
/// Kilted's rmw after its write too): the call is still one call, paired by
/// (client, sequence number), its response take linked to the response and into
/// the client callback's run. Its round trip (1450 - 1500) and the request's
/// latency (1310 - 1500) come out negative: `roscope stats` counts them apart,
/// never as a measurement.
fn response_taken_before_the_send_event(provider: &str, kilted: bool) {
    let p = |n: &str| format!("{}:{}", provider, n);
    let g: &[u8] = if kilted { &[7; 16] } else { &[0; 16] };
    let mut w = TraceWriter::new("h");
    classes(&mut w, provider);
    objects(&mut w, kilted);
    w.event(1000, CLIENT, "ros2:callback_start", &[U(0x4200), U(0)]);
    let mut take = vec![U(0x6001), U(0xB1), B(g), I(1), U(1)];
    if provider == "roscope_ros2" {
        take.push(I(0));
    }
    w.event(1300, SERVER, &p("rmw_take_request"), &take);
    w.event(1310, SERVER, "ros2:callback_start", &[U(0x6200), U(0)]);
    w.event(1400, SERVER, "ros2:callback_end", &[U(0x6200)]);
    w.event(1410, SERVER, &p("rmw_send_response"), &[U(0x6001), U(0xB2), B(g), I(1), I(0)]);
    w.event(1450, CLIENT_EXEC, &p("rmw_take_response"), &[U(0x5001), U(0xA2), I(1), I(0), U(1)]);
    w.event(1460, CLIENT_EXEC, "roscope_ros2:callback_input", &[U(0x5200), U(0x5001), I(1)]);
    w.event(1470, CLIENT_EXEC, "ros2:callback_start", &[U(0x5200), U(0)]);
    w.event(1480, CLIENT_EXEC, "ros2:callback_end", &[U(0x5200)]);
    w.event(1500, CLIENT, &p("rmw_send_request"), &[U(0x5001), U(0xA1), I(1)]);
    w.event(1510, CLIENT, "ros2:callback_end", &[U(0x4200)]);
    let m = build(&w);
    // Publications: the response (1410) first, then the request (1500).
    assert_eq!(ints(&m, "publications", "ts"), vec![Some(1410), Some(1500)]);
    // Runs: the subscription's (0), the service's (1), the client callback's (2).
    assert_eq!(ints(&m, "callback_runs", "start_ts"), vec![Some(1000), Some(1310), Some(1470)]);
    // One call: request 1 taken as take 0, response 0 taken as take 1.
    assert_eq!(ints(&m, "service_calls", "sequence_number"), vec![Some(1)]);
    assert_eq!(ints(&m, "service_calls", "client_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "service_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "request_publication_id"), vec![Some(1)]);
    assert_eq!(ints(&m, "service_calls", "request_take_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "response_publication_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "response_take_id"), vec![Some(1)]);
    // The request feeds the service's run, the response the client callback's run.
    assert_eq!(ints(&m, "takes", "run_id"), vec![Some(1), Some(2)]);
    let mut links: Vec<_> = ints(&m, "links", "publication_id").into_iter().zip(ints(&m, "links", "run_id")).collect();
    links.sort();
    assert_eq!(links, vec![(Some(0), Some(2)), (Some(1), Some(1))]);
    // Statistics: the server time 1410 - 1300 = 110; the round trip 1450 - 1500 < 0 and the
    // request's delivery 1310 - 1500 < 0 are counted apart, not measured.
    let st = roscope_model::stats::stats(&m);
    let svc = &st.services[0];
    assert_eq!((svc.service.as_str(), svc.calls, svc.answered), ("/plan_path", 1, 1));
    assert_eq!((svc.server.count, svc.server.min, svc.server_negative), (1, Some(110), 0));
    assert_eq!((svc.rtt.count, svc.rtt.min, svc.rtt_negative), (0, None, 1));
    let req = st.latencies.iter().find(|g| g.key.as_deref() == Some("/plan_path:request")).unwrap();
    assert_eq!((req.rows, req.d.count, req.negative), (1, 0, 1));
    let resp = st.latencies.iter().find(|g| g.key.as_deref() == Some("/plan_path:response")).unwrap();
    assert_eq!((resp.rows, resp.d.count, resp.d.min, resp.negative), (1, 1, Some(1470 - 1410), 0));
}

#[test]
fn jazzy_a_response_taken_before_its_requests_send_event_is_paired() {
    response_taken_before_the_send_event("roscope_ros2", false);
}

#[test]
fn kilted_a_response_taken_before_its_requests_send_event_is_paired() {
    response_taken_before_the_send_event("ros2", true);
}

/// Clients without a request or response event (Jazzy's rclcpp has no such tracepoints): the
/// model says the trace cannot show service calls, rather than showing none as a fact; with the
/// events, no such warning.
#[test]
fn clients_without_request_events_are_warned_about() {
    let mut w = TraceWriter::new("h");
    classes(&mut w, "ros2");
    objects(&mut w, true);
    let m = build(&w);
    assert_eq!(ints(&m, "service_calls", "call_id"), Vec::<Option<i64>>::new());
    let said: Vec<&String> = m.warnings.iter().filter(|x| x.contains("no request or response event")).collect();
    assert_eq!(said.len(), 1, "{:?}", m.warnings);
    assert!(said[0].starts_with("1 service clients (e.g. /plan_path)"), "{}", said[0]);

    let mut w = TraceWriter::new("h");
    classes(&mut w, "ros2");
    objects(&mut w, true);
    one_call(&mut w, "ros2", true);
    let m = build(&w);
    assert!(!m.warnings.iter().any(|x| x.contains("no request or response event")), "{:?}", m.warnings);
}

/// rclcpp_lifecycle's services: rclcpp::Service copies rcl_lifecycle's rcl_service_t, so
/// `rclcpp_service_callback_added` names a handle (0x7000) no `rcl_service_init` names; roscope's
/// tracer says which service it copies (`roscope_ros2:service_copy`). The callback is then the
/// named service's, and a request it handles is a call of that service; without the event, the
/// service the callback has is one known only by its handle.
fn lifecycle_service(copy_event: bool) -> roscope_model::Model {
    let mut w = TraceWriter::new("h");
    classes(&mut w, "roscope_ros2");
    w.class("roscope_ros2:service_copy", &[("service_handle", U64), ("original", U64)]);
    w.event(20, SERVER, "ros2:rcl_node_init", &[U(0x1000), U(0x1002), S("mapper"), S("/")]);
    w.event(21, SERVER, "ros2:rcl_service_init", &[U(0x6000), U(0x1000), U(0x6001), S("/mapper/get_state")]);
    if copy_event {
        w.event(22, SERVER, "roscope_ros2:service_copy", &[U(0x7000), U(0x6000)]);
    }
    w.event(23, SERVER, "ros2:rclcpp_service_callback_added", &[U(0x7000), U(0x6200)]);
    w.event(1300, SERVER, "roscope_ros2:rmw_take_request", &[U(0x6001), U(0xB1), B(&[0; 16]), I(1), U(1), I(0)]);
    w.event(1310, SERVER, "ros2:callback_start", &[U(0x6200), U(0)]);
    w.event(1500, SERVER, "ros2:callback_end", &[U(0x6200)]);
    w.event(1510, SERVER, "roscope_ros2:rmw_send_response", &[U(0x6001), U(0xB2), B(&[0; 16]), I(1), I(0)]);
    build(&w)
}

#[test]
fn a_service_known_by_a_copy_of_its_rcl_struct_is_the_named_one() {
    let m = lifecycle_service(true);
    assert_eq!(strs(&m, "services", "name"), vec![s("/mapper/get_state")]);
    assert_eq!(ints(&m, "services", "known"), vec![Some(1)]);
    assert_eq!(ints(&m, "callbacks", "owner_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "callback_runs", "start_ts"), vec![Some(1310)]);
    // The request taken fed the run; the call is the named service's.
    assert_eq!(ints(&m, "takes", "run_id"), vec![Some(0)]);
    assert_eq!(ints(&m, "service_calls", "service_id"), vec![Some(0)]);
    let unnamed =
        |m: &roscope_model::Model, what: &str| m.warnings.iter().any(|x| x.contains("known only by their handles") && x.contains(what));
    assert!(unnamed(&m, " 0 services,"), "{:?}", m.warnings);

    let m = lifecycle_service(false);
    assert_eq!(strs(&m, "services", "name").len(), 2);
    assert_eq!(ints(&m, "callbacks", "owner_id"), vec![Some(1)]);
    assert!(unnamed(&m, " 1 services,"), "{:?}", m.warnings);
}
