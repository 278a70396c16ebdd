//! Data flows (data-flow paper, Algorithm 1): dependency trees built backward from
//! output publications (newest inputs, visited set, at most two consecutive
//! callbacks, subtree caching), each flow's latency split into communication, idle
//! and computation, and the distinct segments of all flows.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::index::Index;
use crate::model::{CallbackKind, Model, NONE};

/// A data flow: from the callback run that published on an input topic to the
/// output publication. `steps` alternate publication / run going *forward* in time:
/// ('r', run), ('p', pub), ('r', run), ..., ('p', output pub). Two runs in a row
/// are an implicit (intra-node) dependency.
#[derive(Clone, Debug)]
pub struct DataFlow {
    pub steps: Vec<(char, i64)>,
    pub start: i64,
    pub end: i64,
    pub communication: i64,
    pub idle: i64,
    pub computation: i64,
}

/// Options of the data-flow search (data-flow paper, III-C).
#[derive(Clone)]
pub struct FlowOptions {
    pub is_input_topic: Vec<bool>,
    pub is_output_topic: Vec<bool>,
    /// Implicit intra-node edges: (from callback, to callback). When `None`, every
    /// pair of distinct callbacks of a node (the paper's fallback).
    pub implicit: Option<HashSet<(i64, i64)>>,
    /// Use the exact transport link of a run as its input when there is one
    /// (otherwise, and always when false, the newest publication on a topic it
    /// subscribes to, as the paper's D_cp).
    pub exact_links: bool,
    /// Upper bound on data flows per output publication (guards against
    /// combinatorial explosion in dense graphs).
    pub max_flows_per_output: usize,
}

struct Search<'a, 'b> {
    ix: &'b Index<'a>,
    o: &'b FlowOptions,
    /// publishers of each topic, subscriptions' callbacks per callback's topic
    pubs_of_topic: Vec<Vec<i64>>,
    topic_of_cb: Vec<i64>,
    implicit_in: HashMap<i64, Vec<i64>>,
    cache: HashMap<(char, i64, bool), Rc<Tree>>,
    pub cache_hits: u64,
    pub evicted: u64,
}

/// A dependency tree (Algorithm 1's result): head instance and subtrees.
struct Tree {
    head: (char, i64),
    children: Vec<Rc<Tree>>,
}

impl<'a, 'b> Search<'a, 'b> {
    fn new(ix: &'b Index<'a>, o: &'b FlowOptions) -> Self {
        let m = ix.m;
        let mut pubs_of_topic: Vec<Vec<i64>> = vec![Vec::new(); m.n_topics()];
        for (pu, &t) in m.pub_topic.iter().enumerate() {
            if t >= 0 && (t as usize) < m.n_topics() {
                pubs_of_topic[t as usize].push(pu as i64);
            }
        }
        let topic_of_cb: Vec<i64> = (0..m.cb_node.len())
            .map(|c| {
                let s = m.cb_sub[c];
                if s >= 0 {
                    m.sub_topic[s as usize]
                } else {
                    NONE
                }
            })
            .collect();
        let mut implicit_in: HashMap<i64, Vec<i64>> = HashMap::new();
        match &o.implicit {
            Some(set) => {
                for &(a, b) in set {
                    implicit_in.entry(b).or_default().push(a);
                }
            }
            None => {
                for cbs in ix.cbs_of_node.values() {
                    for &a in cbs {
                        for &b in cbs {
                            if a != b {
                                implicit_in.entry(b).or_default().push(a);
                            }
                        }
                    }
                }
            }
        }
        for v in implicit_in.values_mut() {
            v.sort();
            v.dedup();
        }
        Search { ix, o, pubs_of_topic, topic_of_cb, implicit_in, cache: HashMap::new(), cache_hits: 0, evicted: 0 }
    }

    fn topic_of_pub(&self, p: i64) -> i64 {
        self.ix.m.topic_of_pub(p)
    }

    /// D_pc: the run that published `p` (known exactly from the thread's stack).
    fn d_pc(&self, p: i64) -> Option<i64> {
        let r = self.ix.m.pb_run[p as usize];
        (r >= 0).then_some(r)
    }

    /// D_cp: the publication that triggered subscription run `r`: its transport
    /// link, or the newest publication on its topic before it.
    fn d_cp(&self, r: i64) -> Option<i64> {
        let m = self.ix.m;
        if self.o.exact_links {
            let p = self.ix.input_of_run[r as usize];
            if p >= 0 {
                return Some(p);
            }
        }
        let cb = m.run_cb[r as usize];
        let topic = self.topic_of_cb[cb as usize];
        if topic < 0 {
            return None;
        }
        let t = m.run_start[r as usize];
        let mut best: Option<i64> = None;
        for &pu in &self.pubs_of_topic[topic as usize] {
            let list = &self.ix.pubs_of_publisher[pu as usize];
            let k = list.partition_point(|&p| m.pb_ts[p as usize] < t);
            if k > 0 {
                let p = list[k - 1];
                if best.is_none_or(|b| m.pb_ts[p as usize] > m.pb_ts[b as usize]) {
                    best = Some(p);
                }
            }
        }
        best
    }

    /// D_cc: the newest run of each implicit dependency callback before `r`.
    fn d_cc(&self, r: i64) -> Vec<i64> {
        let m = self.ix.m;
        let cb = m.run_cb[r as usize];
        let t = m.run_start[r as usize];
        self.implicit_in
            .get(&cb)
            .map(|deps| deps.iter().filter_map(|&d| self.ix.latest_run_before(d, t, true)).collect())
            .unwrap_or_default()
    }

    /// Algorithm 1, without the visited set (which is applied when paths are
    /// read out of the tree, so that subtrees can be cached per instance):
    /// dependencies are strictly earlier in time, so the recursion ends.
    fn tree(&mut self, head: (char, i64), is_dep_cb: bool, depth: u32) -> Rc<Tree> {
        let key = (head.0, head.1, is_dep_cb);
        if let Some(t) = self.cache.get(&key) {
            self.cache_hits += 1;
            return t.clone();
        }
        let mut children = Vec::new();
        if depth < 256 {
            if head.0 == 'p' {
                if let Some(r) = self.d_pc(head.1) {
                    children.push(self.tree(('r', r), false, depth + 1));
                }
            } else {
                let m = self.ix.m;
                let cb = m.run_cb[head.1 as usize];
                if m.cb_kind[cb as usize] == CallbackKind::Subscription {
                    if let Some(p) = self.d_cp(head.1) {
                        children.push(self.tree(('p', p), false, depth + 1));
                    }
                }
                if !is_dep_cb {
                    for d in self.d_cc(head.1) {
                        children.push(self.tree(('r', d), true, depth + 1));
                    }
                }
            }
        }
        let t = Rc::new(Tree { head, children });
        self.cache.insert(key, t.clone());
        t
    }

    /// Reads the data flows out of a tree: root-to-node paths (backward in time)
    /// that end at a run which published on an input topic, honouring the visited
    /// set (no callback or topic twice on a path).
    fn flows(
        &self,
        t: &Tree,
        path: &mut Vec<(char, i64)>,
        vis_cb: &mut Vec<i64>,
        vis_topic: &mut Vec<i64>,
        out: &mut Vec<Vec<(char, i64)>>,
    ) {
        if out.len() >= self.o.max_flows_per_output {
            return;
        }
        let m = self.ix.m;
        let (kind, id) = t.head;
        let (mut pushed_cb, mut pushed_topic) = (false, false);
        if kind == 'p' {
            let topic = self.topic_of_pub(id);
            if topic >= 0 {
                if vis_topic.contains(&topic) {
                    return;
                }
                vis_topic.push(topic);
                pushed_topic = true;
            }
        } else {
            let cb = m.run_cb[id as usize];
            if vis_cb.contains(&cb) {
                return;
            }
            vis_cb.push(cb);
            pushed_cb = true;
        }
        path.push(t.head);
        // A flow starts at a run that published on an input topic (the earliest such
        // match on the path continues deeper if it can: the tree is followed to its
        // leaves, and every input match along the way is a flow).
        if kind == 'r' && path.len() >= 2 {
            let prev = path[path.len() - 2];
            if prev.0 == 'p' {
                let topic = self.topic_of_pub(prev.1);
                if topic >= 0 && self.o.is_input_topic[topic as usize] {
                    out.push(path.iter().rev().copied().collect());
                }
            }
        }
        for c in &t.children {
            self.flows(c, path, vis_cb, vis_topic, out);
        }
        path.pop();
        if pushed_cb {
            vis_cb.pop();
        }
        if pushed_topic {
            vis_topic.pop();
        }
    }
}

fn breakdown(m: &Model, steps: &[(char, i64)]) -> DataFlow {
    let t_of = |s: (char, i64)| m.time_of(s);
    let (mut com, mut idle, mut calc) = (0i64, 0i64, 0i64);
    for w in steps.windows(2) {
        let (a, b) = (w[0], w[1]);
        match (a.0, b.0) {
            ('p', 'r') => com += t_of(b) - t_of(a),
            ('r', 'p') => calc += t_of(b) - t_of(a),
            ('r', 'r') => {
                let end = m.run_end[a.1 as usize];
                let d = if end >= 0 { end - t_of(a) } else { t_of(b) - t_of(a) };
                calc += d;
                idle += t_of(b) - (t_of(a) + d);
            }
            _ => {}
        }
    }
    DataFlow {
        steps: steps.to_vec(),
        start: t_of(steps[0]),
        end: t_of(*steps.last().unwrap()),
        communication: com,
        idle,
        computation: calc,
    }
}

/// A distinct segment of the data flows: communication (publication -> run),
/// computation (run -> publication made in it, or run -> run: its duration),
/// idle (run -> next run of the node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Segment {
    pub kind: SegmentKind,
    /// The publication (communication) or run (computation, idle) it starts at.
    pub a: i64,
    /// The run (communication, idle) or publication (computation) it ends at;
    /// `NONE` for a run's own duration before an implicit dependency.
    pub b: i64,
    pub duration: i64,
}

/// What a segment of a data flow is (the schema's code table `segment_kind`).
pub use roscope_model::schema::SegmentKind;

/// Collects the distinct segments of flows, one flow at a time.
#[derive(Default)]
pub struct SegmentSet {
    seen: HashSet<(SegmentKind, i64, i64)>,
    pub segments: Vec<Segment>,
}

impl SegmentSet {
    pub fn add(&mut self, m: &Model, f: &DataFlow) {
        let t_of = |s: (char, i64)| m.time_of(s);
        for w in f.steps.windows(2) {
            let (x, y) = (w[0], w[1]);
            let mut push = |k: SegmentKind, a: i64, b: i64, d: i64| {
                if self.seen.insert((k, a, b)) {
                    self.segments.push(Segment { kind: k, a, b, duration: d });
                }
            };
            match (x.0, y.0) {
                ('p', 'r') => push(SegmentKind::Communication, x.1, y.1, t_of(y) - t_of(x)),
                ('r', 'p') => push(SegmentKind::Computation, x.1, y.1, t_of(y) - t_of(x)),
                ('r', 'r') => {
                    let end = m.run_end[x.1 as usize];
                    let d = if end >= 0 { end - t_of(x) } else { t_of(y) - t_of(x) };
                    push(SegmentKind::Computation, x.1, NONE, d);
                    push(SegmentKind::Idle, x.1, y.1, t_of(y) - (t_of(x) + d));
                }
                _ => {}
            }
        }
    }
}

/// The distinct segments of a set of flows.
pub fn segments(m: &Model, flows: &[DataFlow]) -> Vec<Segment> {
    let mut s = SegmentSet::default();
    for f in flows {
        s.add(m, f);
    }
    s.segments
}

pub struct FlowResult {
    pub flows: usize,
    pub outputs: usize,
    pub cache_hits: u64,
    pub trees: usize,
    /// Cached subtrees dropped because they were older than any flow reaches back.
    pub evicted: u64,
}

/// Cached subtrees are dropped once the cache holds this many and they are
/// older than the longest flow seen so far reaches back (twice over): the cache
/// only saves work, so what is dropped is recomputed if ever needed again.
pub const CACHE_SOFT_CAP: usize = 1 << 18;

/// All data flows ending in a publication on an output topic and starting with a run
/// that published on an input topic, collected in a vector (see `each_data_flow`).
pub fn data_flows(ix: &Index, o: &FlowOptions) -> (Vec<DataFlow>, FlowResult) {
    let mut v = Vec::new();
    let r = each_data_flow(ix, o, |f| v.push(f));
    (v, r)
}

/// Every data flow, handed to `sink` as it is found, outputs in time order; memory
/// holds only the subtree cache (bounded, see `CACHE_SOFT_CAP`), not the flows.
pub fn each_data_flow(ix: &Index, o: &FlowOptions, mut sink: impl FnMut(DataFlow)) -> FlowResult {
    let m = ix.m;
    let mut s = Search::new(ix, o);
    let mut flows = 0usize;
    let mut outputs = 0;
    let mut order: Vec<i64> = (0..m.pb_ts.len() as i64)
        .filter(|&p| {
            let t = s.topic_of_pub(p);
            t >= 0 && o.is_output_topic[t as usize]
        })
        .collect();
    order.sort_by_key(|&p| (m.pb_ts[p as usize], p));
    let mut max_span: i64 = 0;
    let mut peak_cache = 0usize;
    let mut cap = CACHE_SOFT_CAP;
    for p in order {
        outputs += 1;
        let t_out = m.pb_ts[p as usize];
        if s.cache.len() > cap {
            let horizon = t_out.saturating_sub(max_span.saturating_mul(2).saturating_add(1_000_000_000));
            let before = s.cache.len();
            s.cache.retain(|_, t| m.time_of(t.head) >= horizon);
            s.evicted += (before - s.cache.len()) as u64;
            cap = CACHE_SOFT_CAP.max(2 * s.cache.len());
        }
        let tree = s.tree(('p', p), false, 0);
        peak_cache = peak_cache.max(s.cache.len());
        let mut out = Vec::new();
        s.flows(&tree, &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut out);
        for steps in out {
            let f = breakdown(m, &steps);
            max_span = max_span.max(f.end - f.start);
            flows += 1;
            sink(f);
        }
    }
    FlowResult { flows, outputs, cache_hits: s.cache_hits, trees: peak_cache, evicted: s.evicted }
}

/// The path of a data flow: its callback/topic sequence (callback ids and topic ids),
/// as a key for grouping.
pub fn path_key(m: &Model, f: &DataFlow) -> Vec<(char, i64)> {
    f.steps
        .iter()
        .map(|&(k, id)| {
            if k == 'r' {
                ('c', m.run_cb[id as usize])
            } else {
                let pu = m.pb_publisher[id as usize];
                ('t', if pu >= 0 { m.pub_topic[pu as usize] } else { NONE })
            }
        })
        .collect()
}
