//! Flow algorithms on small hand-built models; every expected value is worked out by
//! hand in the comments from the model's timestamps.

use std::collections::HashSet;

use roscope_model::table::{Data, Table};

use crate::model::Kind;
use crate::*;

mod slices;

/// A small model, written as the model builder's tables.
#[derive(Default, Clone)]
struct Spec {
    /// (name, namespace)
    nodes: Vec<(&'static str, Option<&'static str>)>,
    /// (node, topic)
    subs: Vec<(i64, &'static str)>,
    pubs: Vec<(i64, &'static str)>,
    /// (kind, owner, node)
    cbs: Vec<(&'static str, i64, i64)>,
    /// (callback, start, end)
    runs: Vec<(i64, i64, i64)>,
    /// (publisher, run, time of the earliest layer)
    pbs: Vec<(i64, i64, i64)>,
    /// (publication, run)
    links: Vec<(i64, i64)>,
    /// (kind, subscriptions, publishers)
    anns: Vec<(&'static str, Vec<i64>, Vec<i64>)>,
}

fn opt(x: i64) -> Option<i64> {
    (x >= 0).then_some(x)
}

impl Spec {
    fn tables(&self) -> Vec<Table> {
        let mut out = Vec::new();
        let mut t = Table::with_columns("nodes", &[("node_id", 'i'), ("name", 's'), ("namespace", 's')]);
        for (i, (n, ns)) in self.nodes.iter().enumerate() {
            t.row().i(Some(i as i64)).s(Some(n)).s(*ns).done();
        }
        out.push(t);
        for (name, id, list) in [("subscriptions", "subscription_id", &self.subs), ("publishers", "publisher_id", &self.pubs)] {
            let mut t = Table::with_columns(name, &[(id, 'i'), ("node_id", 'i'), ("name", 's')]);
            for (i, (node, topic)) in list.iter().enumerate() {
                t.row().i(Some(i as i64)).i(opt(*node)).s(Some(topic)).done();
            }
            out.push(t);
        }
        out.push(Table::with_columns("services", &[("service_id", 'i'), ("name", 's')]));
        let mut t = Table::with_columns("callbacks", &[("callback_id", 'i'), ("kind", 's'), ("owner_id", 'i'), ("node_id", 'i')]);
        for (i, (kind, owner, node)) in self.cbs.iter().enumerate() {
            t.row().i(Some(i as i64)).s(Some(kind)).i(opt(*owner)).i(opt(*node)).done();
        }
        out.push(t);
        let mut t = Table::with_columns("callback_runs", &[("run_id", 'i'), ("callback_id", 'i'), ("start_ts", 'i'), ("end_ts", 'i')]);
        for (i, (cb, s, e)) in self.runs.iter().enumerate() {
            t.row().i(Some(i as i64)).i(Some(*cb)).i(Some(*s)).i(opt(*e)).done();
        }
        out.push(t);
        let spec = [("publication_id", 'i'), ("publisher_id", 'i'), ("run_id", 'i'), ("ts", 'i')];
        let layers = [("rclcpp_ts", 'i'), ("rcl_ts", 'i'), ("rmw_ts", 'i')];
        let mut t = Table::with_columns("publications", &[&spec[..], &layers[..]].concat());
        for (i, (pu, run, ts)) in self.pbs.iter().enumerate() {
            // The earliest layer is rclcpp's on odd rows, rcl's (rclcpp missing) on even ones;
            // later layers and the first event come after it.
            let rclcpp = (i % 2 == 1).then_some(*ts);
            let rcl = if i % 2 == 1 { Some(ts + 2) } else { Some(*ts) };
            t.row().i(Some(i as i64)).i(opt(*pu)).i(opt(*run)).i(Some(ts + 7)).i(rclcpp).i(rcl).i(Some(ts + 3)).done();
        }
        out.push(t);
        let mut t = Table::with_columns("links", &[("publication_id", 'i'), ("run_id", 'i')]);
        for (p, r) in &self.links {
            t.row().i(Some(*p)).i(Some(*r)).done();
        }
        out.push(t);
        let mut a = Table::with_columns("annotations", &[("annotation_id", 'i'), ("kind", 's')]);
        let mut m = Table::with_columns("annotation_members", &[("annotation_id", 'i'), ("subscription_id", 'i'), ("publisher_id", 'i')]);
        for (i, (kind, subs, pubs)) in self.anns.iter().enumerate() {
            a.row().i(Some(i as i64)).s(Some(kind)).done();
            for s in subs {
                m.row().i(Some(i as i64)).i(Some(*s)).i(None).done();
            }
            for p in pubs {
                m.row().i(Some(i as i64)).i(None).i(Some(*p)).done();
            }
        }
        out.push(a);
        out.push(m);
        out
    }

    fn model(&self) -> Model {
        Model::from_tables(&self.tables()).expect("model")
    }
}

/// A chain /a timer -> [/x] -> /ns/b sub -> [/y] -> /c sub -> [/z], and node /d whose
/// timer publishes [/out] from what its /x subscription received.
fn chain() -> Spec {
    Spec {
        nodes: vec![("/a", Some("/")), ("b", Some("/ns/")), ("c", None), ("d", Some("/"))],
        subs: vec![(1, "/x"), (2, "/y"), (3, "/x")],
        pubs: vec![(0, "/x"), (1, "/y"), (2, "/z"), (3, "/out")],
        cbs: vec![("timer", -1, 0), ("subscription", 0, 1), ("subscription", 1, 2), ("subscription", 2, 3), ("timer", -1, 3)],
        runs: vec![(0, 100, 150), (1, 200, 260), (2, 300, 350), (3, 200, 210), (4, 250, 270)],
        pbs: vec![(0, 0, 120), (1, 1, 240), (2, 2, 330), (3, 4, 265)],
        links: vec![(0, 1), (1, 2), (0, 3)],
        anns: vec![],
    }
}

/// Annotated fusion: node /g's timer publishes /a and /b; node /e fuses them
/// (partial synchronous) into /c; node /ns/f's timer publishes /d from the last /c
/// (periodic asynchronous).
fn fusion() -> Spec {
    Spec {
        nodes: vec![("e", Some("/")), ("f", Some("/ns/")), ("g", None)],
        subs: vec![(0, "/a"), (0, "/b"), (1, "/c")],
        pubs: vec![(0, "/c"), (1, "/d"), (2, "/a"), (2, "/b")],
        cbs: vec![("subscription", 0, 0), ("subscription", 1, 0), ("subscription", 2, 1), ("timer", -1, 1), ("timer", -1, 2)],
        runs: vec![
            (4, 5, 12),  // 0 rG1: publishes pa1
            (0, 20, 25), // 1 rA1: receives pa1
            (4, 28, 32), // 2 rG2: publishes pb1
            (1, 40, 50), // 3 rB1: receives pb1, publishes pc1
            (2, 50, 55), // 4 rC1: receives pc1
            (4, 58, 62), // 5 rG3: publishes pb2
            (3, 60, 65), // 6 rT1: publishes pd1
            (1, 70, 80), // 7 rB2: receives pb2, publishes pc2
            (2, 78, 79), // 8 rC2: receives pc2
            (3, 90, 95), // 9 rT2: publishes pd2
        ],
        pbs: vec![(2, 0, 10), (3, 2, 30), (0, 3, 45), (1, 6, 62), (3, 5, 60), (0, 7, 75), (1, 9, 91)],
        links: vec![(0, 1), (1, 3), (2, 4), (4, 7), (5, 8)],
        anns: vec![("partial_sync", vec![0, 1], vec![0]), ("periodic_async", vec![2], vec![1])],
    }
}

fn links(m: &Model, infer: bool) -> Vec<(i64, i64, i64, &'static str)> {
    let ix = Index::new(m);
    causal_links(&ix, Policy { infer_timer_inputs: infer }).iter().map(|l| (l.in_pub, l.in_run, l.out_pub, l.kind.name())).collect()
}

fn opts(m: &Model, from: &[&str], to: &[&str], implicit: Implicit) -> FlowOptions {
    let ix = Index::new(m);
    FlowOptions {
        max_flows_per_output: 100,
        ..FlowOptions::new(
            m.topics.iter().map(|t| from.contains(&t.as_str())).collect(),
            m.topics.iter().map(|t| to.contains(&t.as_str())).collect(),
            implicit_edges(&ix, implicit),
        )
    }
}

/// (steps, latency, communication, idle, computation) of each flow.
type Flow = (Vec<(Kind, i64)>, i64, i64, i64, i64);

fn flows(m: &Model, from: &[&str], to: &[&str], implicit: Implicit) -> Vec<Flow> {
    let ix = Index::new(m);
    let (v, _) = data_flows(&ix, &opts(m, from, to, implicit));
    for f in &v {
        assert_eq!(f.communication + f.idle + f.computation, f.end - f.start, "parts sum to the latency");
    }
    v.into_iter().map(|f| (f.steps, f.end - f.start, f.communication, f.idle, f.computation)).collect()
}

fn ints(t: &Table, col: &str) -> Vec<i64> {
    let c = t.cols.iter().find(|c| c.name == col).unwrap();
    let Data::I64(v) = &c.data else { panic!("{} is not int64", col) };
    v.iter().enumerate().map(|(i, &x)| if c.any_null && c.valid[i] == 0 { NONE } else { x }).collect()
}

fn texts(t: &Table, col: &str) -> Vec<String> {
    let c = t.cols.iter().find(|c| c.name == col).unwrap();
    let Data::Str(b, o) = &c.data else { panic!("{} is not text", col) };
    o.windows(2).map(|w| String::from_utf8(b[w[0] as usize..w[1] as usize].to_vec()).unwrap()).collect()
}

#[test]
fn input_reads_topics_kinds_labels_and_earliest_layer() {
    let m = chain().model();
    assert_eq!(m.topics, ["/out", "/x", "/y", "/z"]);
    assert_eq!(m.sub_topic, [1, 2, 1]);
    assert_eq!(m.pub_topic, [1, 2, 3, 0]);
    assert_eq!(
        m.cb_kind,
        [CallbackKind::Timer, CallbackKind::Subscription, CallbackKind::Subscription, CallbackKind::Subscription, CallbackKind::Timer]
    );
    assert_eq!(m.cb_sub, [NONE, 0, 1, 2, NONE]);
    assert_eq!(m.cb_label, ["/a timer", "/ns/b subscription(/x)", "/c subscription(/y)", "/d subscription(/x)", "/d timer"]);
    assert_eq!(m.pb_ts, [120, 240, 330, 265]);
    assert_eq!((m.tl_pub.clone(), m.tl_run.clone()), (vec![0, 0, 1], vec![1, 3, 2]));
    let f = fusion().model();
    let ann: Vec<(AnnotationKind, Vec<i64>, Vec<i64>)> = f.annotations.iter().map(|a| (a.kind, a.subs.clone(), a.pubs.clone())).collect();
    assert_eq!(ann, [(AnnotationKind::PartialSync, vec![0, 1], vec![0]), (AnnotationKind::PeriodicAsync, vec![2], vec![1])]);
}

#[test]
fn input_puts_rows_in_id_order_and_checks_references() {
    let mut tables = chain().tables();
    let runs = tables.iter_mut().find(|t| t.name == "callback_runs").unwrap();
    for c in runs.cols.iter_mut() {
        if let Data::I64(v) = &mut c.data {
            v.reverse();
        }
    }
    let m = Model::from_tables(&tables).unwrap();
    assert_eq!(m.run_start, [100, 200, 300, 200, 250]);
    assert_eq!(m.run_cb, [0, 1, 2, 3, 4]);

    let mut tables = chain().tables();
    let pbs = tables.iter_mut().find(|t| t.name == "publications").unwrap();
    if let Data::I64(v) = &mut pbs.cols[2].data {
        v[1] = 99;
    }
    let e = Model::from_tables(&tables).unwrap_err();
    assert_eq!(e.0, "publications.run_id = 99 is not a row of callback_runs (5 rows)");

    let tables: Vec<Table> = chain().tables().into_iter().filter(|t| t.name != "links").collect();
    assert_eq!(Model::from_tables(&tables).unwrap_err().0, "the model has no table links");
}

#[test]
fn causal_links_direct_and_inferred() {
    let m = chain().model();
    // p1 published in r1, which received p0: direct. p3 from /d's timer run r4 (250):
    // the latest completed run of /d's subscription callback before it is r3 (200-210),
    // which received p0: inferred. p2 in r2, which received p1: direct. In time order.
    assert_eq!(links(&m, true), [(0, 1, 1, "direct"), (0, 3, 3, "inferred"), (1, 2, 2, "direct")]);
    assert_eq!(links(&m, false), [(0, 1, 1, "direct"), (1, 2, 2, "direct")]);
}

#[test]
fn causal_links_annotated() {
    let m = fusion().model();
    // pc1 (run rB1 at 40): partial sync over /a and /b: /a's latest run rA1 (20) fed
    // by pa1, /b's run is rB1 itself, fed by pb1. pd1 (timer rT1 at 60): periodic async
    // from /c's latest run before 60, rC1 fed by pc1. pc2 (rB2 at 70): since the last
    // output (40) only /b ran again (rB2, fed by pb2). pd2 (rT2 at 90): rC2, fed by pc2.
    assert_eq!(
        links(&m, true),
        [
            (0, 1, 2, "partial_sync"),
            (1, 3, 2, "partial_sync"),
            (2, 4, 3, "periodic_async"),
            (4, 7, 5, "partial_sync"),
            (5, 8, 6, "periodic_async"),
        ]
    );
}

#[test]
fn implicit_edges_by_mode() {
    let m = fusion().model();
    let ix = Index::new(&m);
    let set = |v: &[(i64, i64)], src: EdgeSource| v.iter().map(|&e| (e, src)).collect::<ImplicitEdges>();
    // /c's subscription callback feeds the timer that publishes /d; /a's and /b's
    // callbacks depend on each other.
    let ann = set(&[(2, 3), (0, 1), (1, 0)], EdgeSource::Annotation);
    assert_eq!(implicit_edges(&ix, Implicit::Annotations), Some(ann.clone()));
    // Every node with callbacks that may pair is annotated (/g has one callback).
    assert_eq!(implicit_edges(&ix, Implicit::Auto), Some(ann));
    assert_eq!(implicit_edges(&ix, Implicit::None), Some(ImplicitEdges::new()));
    assert_eq!(implicit_edges(&ix, Implicit::All), None);
    let c = chain().model();
    let ix = Index::new(&c);
    assert_eq!(implicit_edges(&ix, Implicit::Auto), Some(set(&[(3, 4), (4, 3)], EdgeSource::Fallback)));
    // A dependency file that describes the node replaces the fallback pairs with its
    // own edges: only 3 -> 4.
    let described: HashSet<i64> = [c.cb_node[3]].into_iter().collect();
    let none = HashSet::new();
    let deps =
        implicit_edges_with(&ix, Implicit::Auto, Some(Deps { edges: &[(3, 4)], nodes: &described, unseen: &none }), FallbackRule::Pairs);
    assert_eq!(deps, Some(set(&[(3, 4)], EdgeSource::SourceAnalysis)));
    // A callback the file cannot vouch for (unseen) keeps its fallback edges in that node (issue 39).
    let unseen: HashSet<i64> = [3].into_iter().collect();
    let deps = implicit_edges_with(&ix, Implicit::Auto, Some(Deps { edges: &[], nodes: &described, unseen: &unseen }), FallbackRule::Pairs);
    assert_eq!(deps, Some(set(&[(3, 4), (4, 3)], EdgeSource::Fallback)));
    let deps =
        implicit_edges_with(&ix, Implicit::Auto, Some(Deps { edges: &[(3, 4)], nodes: &described, unseen: &unseen }), FallbackRule::Pairs);
    let mut want = set(&[(4, 3)], EdgeSource::Fallback);
    want.insert((3, 4), EdgeSource::SourceAnalysis);
    assert_eq!(deps, Some(want));
}

#[test]
fn data_flows_along_a_chain() {
    let m = chain().model();
    // r0 100 -> p0 120 -> r1 200 -> p1 240 -> r2 300 -> p2 330: computation 20 + 40 + 30,
    // communication 80 + 60.
    let full = (vec![(Kind::Run, 0), (Kind::Pub, 0), (Kind::Run, 1), (Kind::Pub, 1), (Kind::Run, 2), (Kind::Pub, 2)], 230, 140, 0, 90);
    assert_eq!(flows(&m, &["/x"], &["/z"], Implicit::None), std::slice::from_ref(&full));
    // Both /y and /x as inputs: the shorter flow is found first, then the deeper one.
    let short = (vec![(Kind::Run, 1), (Kind::Pub, 1), (Kind::Run, 2), (Kind::Pub, 2)], 130, 60, 0, 70);
    assert_eq!(flows(&m, &["/x", "/y"], &["/z"], Implicit::None), [short, full]);
}

#[test]
fn data_flows_through_an_implicit_dependency() {
    let m = chain().model();
    // /out comes from /d's timer, which has no input of its own.
    assert_eq!(flows(&m, &["/x"], &["/out"], Implicit::None), []);
    // With /d's callbacks depending on each other: r0 100 -> p0 120 -> r3 200..210 ->
    // r4 250 -> p3 265: computation 20 + 10 + 15, communication 80, idle 250 - 210.
    let f = (vec![(Kind::Run, 0), (Kind::Pub, 0), (Kind::Run, 3), (Kind::Run, 4), (Kind::Pub, 3)], 165, 80, 40, 45);
    assert_eq!(flows(&m, &["/x"], &["/out"], Implicit::Auto), std::slice::from_ref(&f));
    assert_eq!(flows(&m, &["/x"], &["/out"], Implicit::All), [f]);
}

/// The four flows of the fusion model from /a or /b to /d (annotations only).
fn fusion_flows() -> Vec<Flow> {
    vec![
        // rG2 28 -> pb1 30 -> rB1 40 -> pc1 45 -> rC1 50..55 -> rT1 60 -> pd1 62
        (
            vec![(Kind::Run, 2), (Kind::Pub, 1), (Kind::Run, 3), (Kind::Pub, 2), (Kind::Run, 4), (Kind::Run, 6), (Kind::Pub, 3)],
            34,
            10 + 5,
            5,
            2 + 5 + 5 + 2,
        ),
        // rG1 5 -> pa1 10 -> rA1 20..25 -> rB1 40 -> pc1 45 -> rC1 50..55 -> rT1 60 -> pd1 62
        (
            vec![
                (Kind::Run, 0),
                (Kind::Pub, 0),
                (Kind::Run, 1),
                (Kind::Run, 3),
                (Kind::Pub, 2),
                (Kind::Run, 4),
                (Kind::Run, 6),
                (Kind::Pub, 3),
            ],
            57,
            10 + 5,
            15 + 5,
            5 + 5 + 5 + 5 + 2,
        ),
        // rG3 58 -> pb2 60 -> rB2 70 -> pc2 75 -> rC2 78..79 -> rT2 90 -> pd2 91
        (
            vec![(Kind::Run, 5), (Kind::Pub, 4), (Kind::Run, 7), (Kind::Pub, 5), (Kind::Run, 8), (Kind::Run, 9), (Kind::Pub, 6)],
            33,
            10 + 3,
            11,
            2 + 5 + 1 + 1,
        ),
        // rG1 5 -> pa1 10 -> rA1 20..25 -> rB2 70 -> pc2 75 -> rC2 78..79 -> rT2 90 -> pd2 91
        (
            vec![
                (Kind::Run, 0),
                (Kind::Pub, 0),
                (Kind::Run, 1),
                (Kind::Run, 7),
                (Kind::Pub, 5),
                (Kind::Run, 8),
                (Kind::Run, 9),
                (Kind::Pub, 6),
            ],
            86,
            10 + 3,
            45 + 11,
            5 + 5 + 5 + 1 + 1,
        ),
    ]
}

#[test]
fn data_flows_through_annotated_fusion() {
    let m = fusion().model();
    assert_eq!(flows(&m, &["/a", "/b"], &["/d"], Implicit::Annotations), fusion_flows());
}

#[test]
fn flow_tables_paths_and_segments() {
    let m = fusion().model();
    let ix = Index::new(&m);
    let (t, res) = data_flow_tables(&ix, &opts(&m, &["/a", "/b"], &["/d"], Implicit::Annotations), false);
    assert_eq!((res.flows, res.outputs), (4, 2));
    assert_eq!(ints(&t.flows, "flow_id"), [0, 1, 2, 3]);
    assert_eq!(ints(&t.flows, "path_id"), [0, 1, 0, 1]);
    assert_eq!(ints(&t.flows, "output_publication_id"), [3, 3, 6, 6]);
    assert_eq!(ints(&t.flows, "input_publication_id"), [1, 0, 4, 0]);
    assert_eq!(ints(&t.flows, "first_run_id"), [2, 0, 5, 0]);
    let expected = fusion_flows();
    assert_eq!(ints(&t.flows, "latency_ns"), expected.iter().map(|f| f.1).collect::<Vec<_>>());
    assert_eq!(ints(&t.flows, "idle_ns"), expected.iter().map(|f| f.3).collect::<Vec<_>>());
    // The steps of the first flow of each path.
    assert_eq!(ints(&t.steps, "flow_id"), [vec![0; 7], vec![1; 8]].concat());
    assert_eq!(ints(&t.steps, "is_run")[..7], [1, 0, 1, 0, 1, 1, 0]);
    assert_eq!(ints(&t.paths, "flows"), [2, 2]);
    assert_eq!(
        texts(&t.paths, "path"),
        [
            "/g timer -> [/b] -> /e subscription(/b) -> [/c] -> /ns/f subscription(/c) -> /ns/f timer -> [/d]",
            "/g timer -> [/a] -> /e subscription(/a) -> /e subscription(/b) -> [/c] -> /ns/f subscription(/c) -> /ns/f timer -> [/d]",
        ]
    );
    // Distinct segments: 7 of the first flow, 4 more of the second (rG1's publication,
    // pa1's transport, rA1's duration and its idle time until rB1), 7 of the third, and
    // the fourth adds only the idle time from rA1 to rB2.
    let kinds = texts(&t.segments, "kind");
    let (a, b, d) = (ints(&t.segments, "a"), ints(&t.segments, "b"), ints(&t.segments, "duration_ns"));
    let segs: Vec<(&str, i64, i64, i64)> = (0..kinds.len()).map(|i| (kinds[i].as_str(), a[i], b[i], d[i])).collect();
    assert_eq!(segs.len(), 19);
    assert_eq!(segs.iter().collect::<HashSet<_>>().len(), 19);
    for s in [("idle", 1, 7, 45), ("computation", 1, NONE, 5), ("idle", 4, 6, 5), ("communication", 2, 4, 5), ("computation", 6, 3, 2)] {
        assert!(segs.contains(&s), "{:?}", s);
    }
    // Each kind's total over distinct segments.
    let total = |k: &str| segs.iter().filter(|s| s.0 == k).map(|s| s.3).sum::<i64>();
    assert_eq!(total("communication"), 10 + 5 + 10 + 10 + 3);
    assert_eq!(total("idle"), 5 + 15 + 11 + 45);
    // all_steps keeps every flow's steps.
    let (t, _) = data_flow_tables(&ix, &opts(&m, &["/a", "/b"], &["/d"], Implicit::Annotations), true);
    assert_eq!(ints(&t.steps, "flow_id").len(), 7 + 8 + 7 + 8);
}

#[test]
fn causal_links_as_table() {
    let m = fusion().model();
    let ix = Index::new(&m);
    let t = causal_links_table(&causal_links(&ix, Policy::default()));
    assert_eq!(t.rows, 5);
    assert_eq!(ints(&t, "out_publication_id"), [2, 2, 3, 5, 6]);
    assert_eq!(texts(&t, "kind"), ["partial_sync", "partial_sync", "periodic_async", "partial_sync", "periodic_async"]);
}

#[test]
fn message_graph_forward_and_backward() {
    let m = fusion().model();
    let ix = Index::new(&m);
    let l = causal_links(&ix, Policy::default());
    // From pb1: forward to rB1 (transport), pc1 (partial sync), rC1, pd1 (periodic
    // async); backward to the run that published it, rG2.
    let g = message_graph(&ix, &l, 1, true, true);
    assert_eq!(g.pubs, [1, 2, 3]);
    assert_eq!(g.runs, [2, 3, 4]);
    assert_eq!(
        g.edges,
        [
            (Kind::Pub, 1, Kind::Run, 3, "transport"),
            (Kind::Pub, 2, Kind::Run, 4, "transport"),
            (Kind::Run, 2, Kind::Pub, 1, "published_in"),
            (Kind::Run, 3, Kind::Pub, 2, "partial_sync"),
            (Kind::Run, 4, Kind::Pub, 3, "periodic_async"),
        ]
    );
    // Backward from pd2: rT2 published it, from pc2 (received by rC2), which rB2
    // published from pb2, published by rG3; pc2's partial sync has only /b's input.
    let g = message_graph(&ix, &l, 6, false, true);
    assert_eq!(g.pubs, [4, 5, 6]);
    assert_eq!(g.runs, [5, 7, 8, 9]);
}

#[test]
fn inputs_are_columns_of_the_schema() {
    use roscope_model::schema::{self, ColType};
    for (table, cols) in INPUTS {
        let spec = schema::table(table).unwrap_or_else(|| panic!("no table {} in the schema", table));
        for col in *cols {
            let c = spec.column(col).unwrap_or_else(|| panic!("no column {}.{} in the schema", table, col));
            let text = matches!(*col, "kind" | "name" | "namespace");
            assert_eq!(c.ty, if text { ColType::Varchar } else { ColType::BigInt }, "{}.{}", table, col);
        }
    }
}

/// A planner node /p (unannotated) caches /lidar in a subscription, publishes /traj
/// from a timer, and has a control subscription on /traj that publishes /cmd. /lidar
/// comes from a driver node /drv that runs no callback. The true flow of /cmd is
/// L1 -> lidar sub -> timer -> /traj -> control sub -> /cmd; the fallback edge
/// lidar sub -> control sub adds a phantom flow that skips the timer.
fn planner(second_lidar: bool) -> Spec {
    let mut s = Spec {
        nodes: vec![("drv", Some("/")), ("p", Some("/"))],
        subs: vec![(1, "/lidar"), (1, "/traj")],
        pubs: vec![(0, "/lidar"), (1, "/traj"), (1, "/cmd")],
        cbs: vec![("subscription", 0, 1), ("timer", -1, 1), ("subscription", 1, 1)],
        runs: vec![
            (0, 110, 115), // 0 lidar sub receives L1
            (1, 200, 210), // 1 timer publishes traj
            (2, 250, 260), // 2 control sub receives traj, publishes cmd
        ],
        // 0 L1 (no run), 1 traj, 2 cmd
        pbs: vec![(0, -1, 100), (1, 1, 205), (2, 2, 255)],
        links: vec![(0, 0), (1, 2)],
        anns: vec![],
    };
    if second_lidar {
        // 3 L2 at 220 (no run), received by run 3 at 230..235, before the control sub runs.
        s.runs.push((0, 230, 235));
        s.pbs.push((0, -1, 220));
        s.links.push((3, 3));
    }
    s
}

fn run_search(m: &Model, o: &FlowOptions) -> (Vec<DataFlow>, FlowResult) {
    data_flows(&Index::new(m), o)
}

#[test]
fn flows_start_at_publications_outside_callbacks_and_count_fallback_edges() {
    let m = planner(true).model();
    let o = opts(&m, &["/lidar"], &["/cmd"], Implicit::Auto);
    let (v, res) = run_search(&m, &o);
    let got: Vec<_> = v.iter().map(|f| (f.steps.clone(), f.end - f.start, f.fallback_edges)).collect();
    // True: L1 100 -> r0 110..115 -> r1 200 -> traj 205 -> r2 250 -> cmd 255 (timer's
    // fallback edge from the lidar sub). Phantom: L2 220 -> r3 230 -> r2 250 -> cmd 255.
    assert_eq!(
        got,
        [
            (vec![(Kind::Pub, 0), (Kind::Run, 0), (Kind::Run, 1), (Kind::Pub, 1), (Kind::Run, 2), (Kind::Pub, 2)], 155, 1),
            (vec![(Kind::Pub, 3), (Kind::Run, 3), (Kind::Run, 2), (Kind::Pub, 2)], 35, 1),
        ]
    );
    assert_eq!((res.flows, res.flows_on_fallback, res.flows_from_publications), (2, 2, 2));
    // How each step follows from the one before, and where the intra-node edge comes from.
    assert_eq!(v[0].edges, ["", "transport", "fallback", "published", "transport", "published"]);
    // The first flow: communication 10 + 45, idle 200 - 115, computation 5 + 5 + 5.
    assert_eq!((v[0].communication, v[0].idle, v[0].computation), (55, 85, 15));
}

#[test]
fn one_flow_per_input_output_pair_prefers_the_longest_candidate() {
    // Without L2, the fallback edge lidar sub -> control sub reaches L1 again: the
    // same (L1, cmd) pair twice.
    let m = planner(false).model();
    let mut o = opts(&m, &["/lidar"], &["/cmd"], Implicit::Auto);
    let (v, res) = run_search(&m, &o);
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].input(), v[0].output(), v[1].input(), v[1].output()), (0, 2, 0, 2));
    assert_eq!(res.duplicates_dropped, 0);
    o.all_paths = false;
    let (v, res) = run_search(&m, &o);
    assert_eq!(
        v.iter().map(|f| f.steps.clone()).collect::<Vec<_>>(),
        [vec![(Kind::Pub, 0), (Kind::Run, 0), (Kind::Run, 1), (Kind::Pub, 1), (Kind::Run, 2), (Kind::Pub, 2)]]
    );
    assert_eq!((res.flows, res.duplicates_dropped), (1, 1));
}

#[test]
fn caps_and_exclusions_are_counted() {
    let m = planner(true).model();
    let base = opts(&m, &["/lidar"], &["/cmd"], Implicit::Auto);
    // One candidate per output: the output (2 candidates) is capped, and named; with
    // two allowed, it is not.
    let (v, res) = run_search(&m, &FlowOptions { max_flows_per_output: 1, ..base.clone() });
    assert_eq!((v.len(), res.outputs_capped, res.capped_examples.clone()), (1, 1, vec![2]));
    let (v, res) = run_search(&m, &FlowOptions { max_flows_per_output: 2, ..base.clone() });
    assert_eq!((v.len(), res.outputs_capped), (2, 0));
    // No flow allowed: the search stops at the first output and says which.
    let (v, res) = run_search(&m, &FlowOptions { max_flows: 0, ..base.clone() });
    assert_eq!((v.len(), res.outputs, res.outputs_total, res.stopped_at), (0, 0, 1, Some(2)));
    // Excluding the timer leaves the phantom; excluding /traj too; excluding the
    // lidar subscription leaves nothing.
    let mut cb = vec![false; 3];
    cb[1] = true;
    let (v, _) = run_search(&m, &FlowOptions { excluded_cb: cb.clone(), ..base.clone() });
    assert_eq!(v.iter().map(|f| f.input()).collect::<Vec<_>>(), [3]);
    let traj = m.topics.iter().position(|t| t == "/traj").unwrap();
    let mut tp = vec![false; m.topics.len()];
    tp[traj] = true;
    let (v, _) = run_search(&m, &FlowOptions { excluded_topic: tp, ..base.clone() });
    assert_eq!(v.iter().map(|f| f.input()).collect::<Vec<_>>(), [3]);
    let (v, res) = run_search(&m, &FlowOptions { excluded_cb: vec![true, false, false], ..base });
    assert_eq!((v.len(), res.outputs), (0, 1));
}

#[test]
fn streamed_tables_equal_collected_ones() {
    let m = fusion().model();
    let ix = Index::new(&m);
    let o = opts(&m, &["/a", "/b"], &["/d"], Implicit::Annotations);
    let (whole, _) = data_flow_tables(&ix, &o, true);
    let mut chunks: Vec<Table> = Vec::new();
    let (paths, res) = stream_data_flow_tables(&ix, &o, true, 1, &mut |t| {
        chunks.push(t);
        true
    });
    assert_eq!(res.flows, 4);
    let flows: Vec<i64> = chunks.iter().filter(|t| t.name == "data_flows").flat_map(|t| ints(t, "latency_ns")).collect();
    assert_eq!(flows, ints(&whole.flows, "latency_ns"));
    let steps: Vec<i64> = chunks.iter().filter(|t| t.name == "data_flow_steps").flat_map(|t| ints(t, "id")).collect();
    assert_eq!(steps, ints(&whole.steps, "id"));
    let segments: Vec<i64> = chunks.iter().filter(|t| t.name == "data_flow_segments").flat_map(|t| ints(t, "duration_ns")).collect();
    assert_eq!(segments, ints(&whole.segments, "duration_ns"));
    assert_eq!(texts(&paths, "path"), texts(&whole.paths, "path"));
    // A sink that refuses stops the search after the first chunk.
    let mut n = 0;
    let (_, res) = stream_data_flow_tables(&ix, &o, true, 1, &mut |_| {
        n += 1;
        false
    });
    assert_eq!((n, res.flows, res.stopped_at), (1, 1, Some(3)));
}

#[test]
fn the_pipelines_rule_keeps_two_pass_through_callbacks_apart() {
    // In /p, the timer and the control subscription publish in every run; the lidar
    // subscription never does (a cache). Every pair but timer <-> control remains.
    let m = planner(true).model();
    let ix = Index::new(&m);
    let edges = implicit_edges_with(&ix, Implicit::Auto, None, FallbackRule::ApartPipelines).unwrap();
    let mut got: Vec<(i64, i64)> = edges.keys().copied().collect();
    got.sort();
    assert_eq!(got, [(0, 1), (0, 2), (1, 0), (2, 0)]);
    let all = implicit_edges_with(&ix, Implicit::Auto, None, FallbackRule::Pairs).unwrap();
    assert_eq!(all.len(), 6);
}

#[test]
fn a_slice_says_what_it_lacks_until_the_answers_make_it_whole() {
    // The fusion model, searched for pd2 (91) only, with a slice that starts at 35:
    // rB2 (70) depends on the last /a run before it (partial synchronous), rA1 at
    // 20, before the slice. Each round answers what the search said it lacked, from
    // the whole model, until the flows are those of the whole search.
    let m = fusion().model();
    let ix = Index::new(&m);
    let whole: Vec<Vec<(Kind, i64)>> = data_flows(&ix, &opts(&m, &["/a", "/b"], &["/d"], Implicit::Annotations))
        .0
        .into_iter()
        .filter(|f| f.output() == 6)
        .map(|f| f.steps)
        .collect();
    assert_eq!(whole, fusion_flows()[2..].iter().map(|f| f.0.clone()).collect::<Vec<_>>());
    let mut o = opts(&m, &["/a", "/b"], &["/d"], Implicit::Annotations);
    o.window = Window { lo: 35, out_from: (80, i64::MIN), ..Window::all() };
    let mut rounds = Vec::new();
    let found = loop {
        let mut v = Vec::new();
        let res = each_data_flow(&ix, &o, |f| {
            v.push(f.steps);
            true
        });
        let Some(at) = res.uncertain_at else { break v };
        assert_eq!((at, v.len(), res.outputs_total), ((91, 6), 0, 0), "nothing of pd2 is answered");
        for &n in &res.needs {
            match n {
                Need::RunBefore(cb, t) => {
                    o.window.runs_before.insert((cb, t), ix.latest_run_before(cb, t, true).unwrap_or(NONE));
                }
                Need::NewestBefore(..) => panic!("every run of the fusion model has a transport link"),
                Need::Node(k, id) => {
                    o.window.complete.insert((k, id));
                }
            }
        }
        rounds.push(res.needs);
        assert!(rounds.len() < 10, "{:?}", rounds);
    };
    // rB2 needs the /a run before 70; then rA1 (20) itself, its input pa1 (10), and
    // the run that published it, rG1 (5): one level deeper each round.
    assert_eq!(
        rounds,
        [vec![Need::RunBefore(0, 70)], vec![Need::Node(Kind::Run, 1)], vec![Need::Node(Kind::Pub, 0)], vec![Need::Node(Kind::Run, 0)]]
    );
    assert_eq!(found, whole);
}

#[test]
fn a_race_makes_a_flow_uncertain_and_it_can_be_dropped() {
    // planner(false) (L1 100 -> lidar sub r0 110..115 -> timer r1 200..210 -> traj 205 ->
    // control sub r2 250 -> cmd 255), and a second lidar run r3 at 203..208 on another
    // thread (L2 at 202): it overlaps the timer's run, so whether the timer read L1 or L2
    // is not known. The search still takes r0 (the latest run of the lidar sub that ended
    // before the timer started) and flags the flow.
    let mut s = planner(false);
    s.runs.push((0, 203, 208));
    s.pbs.push((0, -1, 202));
    s.links.push((3, 3));
    let m = s.model();
    // threads: the lidar sub's second run on thread 2, every other run on thread 1
    let mut sweep = OverlapSweep::default();
    let mut runs: Vec<(i64, i64, i64, i64)> =
        s.runs.iter().enumerate().map(|(i, &(c, a, b))| (a, if i == 3 { 2 } else { 1 }, c, b)).collect();
    runs.sort();
    for (a, t, c, b) in runs {
        sweep.push(0, t, c, a, b).unwrap();
    }
    let overlaps = sweep.finish();
    assert_eq!(overlaps, [(1, 0, 203), (0, 1, 200)]);
    let o = FlowOptions { overlaps: overlaps.iter().copied().collect(), ..opts(&m, &["/lidar"], &["/cmd"], Implicit::Auto) };
    let (v, res) = run_search(&m, &o);
    let l1 = vec![(Kind::Pub, 0), (Kind::Run, 0), (Kind::Run, 1), (Kind::Pub, 1), (Kind::Run, 2), (Kind::Pub, 2)];
    let got: Vec<_> = v.iter().map(|f| (f.steps.clone(), f.uncertain)).collect();
    // L1's flow through the lidar sub -> timer edge is uncertain; L2's phantom flow (the
    // fallback edge lidar sub -> control sub) is certain: nothing overlapped r2.
    assert_eq!(got, [(l1.clone(), true), (vec![(Kind::Pub, 3), (Kind::Run, 3), (Kind::Run, 2), (Kind::Pub, 2)], false)]);
    assert_eq!((res.flows, res.flows_uncertain, res.uncertain_dropped), (2, 1, 0));
    // Without the overlap facts, no flow is uncertain.
    let (_, plain) = run_search(&m, &opts(&m, &["/lidar"], &["/cmd"], Implicit::Auto));
    assert_eq!((plain.flows, plain.flows_uncertain), (2, 0));
    // Dropped: counted, not handed on; the table's column says which were uncertain.
    let (v, res) = run_search(&m, &FlowOptions { drop_uncertain: true, ..o.clone() });
    assert_eq!((v.len(), res.flows, res.flows_uncertain, res.uncertain_dropped), (1, 1, 0, 1));
    let (t, _) = data_flow_tables(&Index::new(&m), &o, false);
    assert_eq!(ints(&t.flows, "uncertain"), [1, 0]);
}

#[test]
fn the_meter_counts_what_the_result_counts() {
    // Progress is read from the meter while the search runs: once per output, it
    // must add up to the result's outputs, flows and candidates.
    let m = planner(true).model();
    let meter = std::sync::Arc::new(roscope_model::Meter::default());
    for all_paths in [false, true] {
        let before = meter.read();
        let o = FlowOptions { meter: Some(meter.clone()), all_paths, ..opts(&m, &["/lidar"], &["/cmd"], Implicit::Auto) };
        let (_, res) = run_search(&m, &o);
        let after = meter.read();
        assert_eq!(
            [after[0] - before[0], after[2] - before[2], after[3] - before[3]],
            [res.outputs as u64, res.flows as u64, res.candidates as u64]
        );
        assert!(res.outputs > 0 && res.flows > 0);
    }
}

/// A service call on a flow: node /s's timer publishes [/in]; node /p's subscription
/// sends a request ([/svc:request], its client's pseudo-topic), node /m's service
/// callback handles it and responds ([/svc:response], published just after its run),
/// /p's client callback gets the response and publishes [/out].
fn service_call() -> Spec {
    Spec {
        nodes: vec![("s", Some("/")), ("p", Some("/")), ("m", Some("/"))],
        subs: vec![(1, "/in"), (2, "/svc:request"), (1, "/svc:response")],
        pubs: vec![(0, "/in"), (1, "/svc:request"), (2, "/svc:response"), (1, "/out")],
        cbs: vec![("timer", -1, 0), ("subscription", 0, 1), ("service", -1, 2), ("client", -1, 1)],
        runs: vec![(0, 100, 110), (1, 200, 220), (2, 300, 350), (3, 400, 420)],
        pbs: vec![(0, 0, 105), (1, 1, 210), (2, 2, 355), (3, 3, 410)],
        links: vec![(0, 1), (1, 2), (2, 3)],
        anns: vec![],
    }
}

#[test]
fn service_and_client_callbacks_take_their_request_and_response_as_input() {
    let m = service_call().model();
    assert_eq!(m.cb_label, ["/s timer", "/p subscription(/in)", "/m service", "/p client"]);
    // Each output of a run fed by a message (subscription, service, client) is caused by it.
    assert_eq!(links(&m, true), vec![(0, 1, 1, "direct"), (1, 2, 2, "direct"), (2, 3, 3, "direct")]);
    // The flow /in -> /out goes through the call: communication 95 + 90 + 45, computation
    // 5 + 10 + 55 (the response is sent right after the service's run) + 10.
    let steps = vec![
        (Kind::Run, 0),
        (Kind::Pub, 0),
        (Kind::Run, 1),
        (Kind::Pub, 1),
        (Kind::Run, 2),
        (Kind::Pub, 2),
        (Kind::Run, 3),
        (Kind::Pub, 3),
    ];
    assert_eq!(flows(&m, &["/in"], &["/out"], Implicit::Auto), vec![(steps, 310, 230, 0, 80)]);
}
