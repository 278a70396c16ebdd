//! Data flows (data-flow paper, Algorithm 1): dependency trees built backward from
//! output publications (newest inputs, visited set, at most two consecutive
//! callbacks, subtree caching), each flow's latency split into communication, idle
//! and computation, and the distinct segments of all flows.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use roscope_model::Meter;

use crate::index::Index;
use crate::model::{takes_input, Kind, Model, Part, NONE};

/// A data flow: from the callback run that published on an input topic (or, for a
/// message published outside any callback run, such as by a driver or simulator
/// thread, from that publication) to the output publication. `steps` alternate
/// publication / run going *forward* in time: (Kind::Run, run), (Kind::Pub, pub), (Kind::Run, run),
/// ..., (Kind::Pub, output pub). Two runs in a row are an implicit (intra-node) dependency.
#[derive(Clone, Debug)]
pub struct DataFlow {
    pub steps: Vec<(Kind, i64)>,
    pub start: i64,
    pub end: i64,
    pub communication: i64,
    pub idle: i64,
    pub computation: i64,
    /// How many of its implicit dependencies are fallback edges (`EdgeSource::Fallback`).
    pub fallback_edges: u32,
    /// One of its implicit dependencies may not hold: a run of the callback it depends
    /// on overlapped, on another thread, the run that depends on it
    /// (`FlowOptions::overlaps`), so whether that run's write reached the read cannot
    /// be known from the trace.
    pub uncertain: bool,
    /// Per step, how it follows from the previous one (`edge_name`); "" for the first.
    /// Named only for the flows the search keeps (not for dropped candidates).
    pub edges: Vec<&'static str>,
}

impl DataFlow {
    /// The input message: the publication on the input topic the flow starts with.
    pub fn input(&self) -> i64 {
        match self.steps.first() {
            Some(&(Kind::Pub, p)) => p,
            _ => self.steps.get(1).filter(|s| s.0 == Kind::Pub).map_or(NONE, |s| s.1),
        }
    }

    /// The output message.
    pub fn output(&self) -> i64 {
        self.steps.last().map_or(NONE, |s| s.1)
    }
}

/// Where an implicit (intra-node) dependency between two callbacks comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeSource {
    /// A causal-link annotation in the trace.
    Annotation,
    /// Static analysis of the node's source code (`roscope deps`).
    SourceAnalysis,
    /// Nothing is known: every pair of the node's callbacks (the data-flow paper's
    /// fallback); a flow through such an edge may not exist.
    Fallback,
}

impl EdgeSource {
    pub fn name(self) -> &'static str {
        match self {
            EdgeSource::Annotation => "annotation",
            EdgeSource::SourceAnalysis => "source_analysis",
            EdgeSource::Fallback => "fallback",
        }
    }
}

/// Implicit edges (from callback, to callback) and where each comes from.
pub type ImplicitEdges = HashMap<(i64, i64), EdgeSource>;

/// The part of the trace a search sees when it runs over a slice of the model
/// (docs/analyses.md, "Slices"), and the outputs it handles: those from `out_from`
/// (time, id) up to time `out_to` (excluded).
///
/// The slice holds, for each callback, every run of it that starts at or after its
/// horizon (`lo_cb`, else `lo`) and before `hi`, and for each publisher every
/// publication at or after its horizon (`lo_pub`, else `lo`) and before `hi`, with
/// everything those reference. A horizon is usually `lo`, or the time of the
/// callback's (publisher's) latest run (publication) before `lo`, so that a callback
/// that ran once at the start is still found; `i64::MIN` when it has none before.
///
/// A tree node outside its horizon or at or after `hi`, or one whose newest input or
/// intra-node dependency would have to be looked up before the horizon of what it
/// looks up, is incomplete: the slice may not hold what the whole model would give
/// there. An output whose flows reach such a node is not answered
/// (`FlowResult::uncertain_at`): its search must be repeated on a slice that reaches
/// further. `Window::all()` (the whole model) never has incomplete nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub lo: i64,
    pub hi: i64,
    pub out_from: (i64, i64),
    pub out_to: i64,
    /// Per callback id, its horizon (empty: `lo` for every callback).
    pub lo_cb: Vec<i64>,
    /// Per publisher id, its horizon (empty: `lo` for every publisher).
    pub lo_pub: Vec<i64>,
    /// Lookups answered from the whole model (`Need`): the latest completed run of
    /// callback `cb` before time `t`, by (cb, t): a run of the slice, or `NONE`.
    pub runs_before: HashMap<(i64, i64), i64>,
    /// The newest publication on topic `topic` before time `t`, by (topic, t): a
    /// publication of the slice, or `NONE`.
    pub newest_before: HashMap<(i64, i64), i64>,
    /// Nodes outside their horizon whose references the slice holds all the same.
    pub complete: HashSet<(Kind, i64)>,
}

/// What a slice lacked to complete a node (`Window`), which the whole model can
/// answer: the caller adds the answer to the next slice and searches again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// The node itself, with its references (a publication's run, a run's linked
    /// publications): (Kind::Run or Kind::Pub, its id).
    Node(Kind, i64),
    /// The latest completed run of callback `cb` before time `t` (D_cc): (cb, t).
    RunBefore(i64, i64),
    /// The newest publication on topic `topic` before time `t` (D_cp of a run
    /// without a transport link): (topic, t).
    NewestBefore(i64, i64),
}

impl Window {
    /// The whole model.
    pub fn all() -> Window {
        Window {
            lo: i64::MIN,
            hi: i64::MAX,
            out_from: (i64::MIN, i64::MIN),
            out_to: i64::MAX,
            lo_cb: Vec::new(),
            lo_pub: Vec::new(),
            runs_before: HashMap::new(),
            newest_before: HashMap::new(),
            complete: HashSet::new(),
        }
    }

    pub fn is_all(&self) -> bool {
        *self == Window::all()
    }

    /// The horizon of callback `cb`'s runs.
    pub(crate) fn lo_of_cb(&self, cb: i64) -> i64 {
        self.horizon(&self.lo_cb, cb)
    }

    /// The horizon of publisher `pu`'s publications.
    pub(crate) fn lo_of_publisher(&self, pu: i64) -> i64 {
        self.horizon(&self.lo_pub, pu)
    }

    /// `of[id]`, else `lo` (no such id, or no horizons given).
    fn horizon(&self, of: &[i64], id: i64) -> i64 {
        usize::try_from(id).ok().and_then(|i| of.get(i).copied()).unwrap_or(self.lo)
    }

    /// Whether a node (a run of callback or a publication of publisher with
    /// horizon `lo`) at time `t` is inside the slice's complete part.
    fn holds(&self, lo: i64, t: i64) -> bool {
        lo <= t && t < self.hi
    }

    /// Whether a lookup among instances whose horizon is `lo` (`found`: the time of
    /// what it gave, if anything) could give something else on the whole model.
    pub(crate) fn lookup_unsure(&self, lo: i64, found: Option<i64>) -> bool {
        lo != i64::MIN && found.is_none_or(|t| t < lo)
    }

    pub(crate) fn outputs(&self, t: i64, p: i64) -> bool {
        (t, p) >= self.out_from && t < self.out_to
    }
}

/// How the ids of a slice of the model map to the model's: a range of publications
/// (runs) starting at `pub_base` (`run_base`), `pub_n` (`run_n`) long, then the
/// extra ones listed (`pub_extra`, `run_extra`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdMap {
    pub pub_base: i64,
    pub pub_n: i64,
    pub pub_extra: Vec<i64>,
    pub run_base: i64,
    pub run_n: i64,
    pub run_extra: Vec<i64>,
}

impl IdMap {
    /// The identity (a whole model, or ids already the model's).
    pub fn identity() -> IdMap {
        IdMap { pub_n: i64::MAX, run_n: i64::MAX, ..IdMap::default() }
    }

    fn map(id: i64, base: i64, n: i64, extra: &[i64]) -> i64 {
        if id == NONE {
            NONE
        } else if id < n {
            id + base
        } else {
            extra.get((id - n) as usize).copied().unwrap_or(NONE)
        }
    }

    /// The model's id of the slice's publication `p`.
    pub fn publication(&self, p: i64) -> i64 {
        IdMap::map(p, self.pub_base, self.pub_n, &self.pub_extra)
    }

    /// The model's id of the slice's run `r`.
    pub fn run(&self, r: i64) -> i64 {
        IdMap::map(r, self.run_base, self.run_n, &self.run_extra)
    }
}

/// Options of the data-flow search (data-flow paper, III-C).
#[derive(Clone)]
pub struct FlowOptions {
    pub is_input_topic: Vec<bool>,
    pub is_output_topic: Vec<bool>,
    /// Implicit intra-node edges: (from callback, to callback) and their source. When
    /// `None`, every pair of distinct callbacks of a node (the paper's fallback).
    pub implicit: Option<ImplicitEdges>,
    /// Use the exact transport link of a run as its input when there is one
    /// (otherwise, and always when false, the newest publication on a topic it
    /// subscribes to, as the paper's D_cp).
    pub exact_links: bool,
    /// Upper bound on candidate data flows per output publication (guards against
    /// combinatorial explosion in dense graphs); outputs that reach it are counted
    /// in `FlowResult::outputs_capped`.
    pub max_flows_per_output: usize,
    /// Upper bound on the candidate flows examined in all (each one a flow with
    /// `all_paths`; before one flow per pair is kept otherwise), which bounds the
    /// search's time: it stops at the first output publication (in time order)
    /// after this many, and says where (`FlowResult::stopped_at`).
    pub max_flows: usize,
    /// Keep every candidate flow of an (input message, output message) pair, one per
    /// path that reaches it (the data-flow paper); otherwise the pair is one flow, the
    /// candidate with the fewest fallback edges (then the most steps, then the first
    /// found).
    pub all_paths: bool,
    /// Topics (by topic id) and callbacks (by callback id) no flow may pass through,
    /// start or end at; empty: none.
    pub excluded_topic: Vec<bool>,
    pub excluded_cb: Vec<bool>,
    /// The slice of the model the search runs over (`Window::all()`: the whole model).
    pub window: Window,
    /// Callback runs that another callback's run overlapped on another thread of the
    /// process (a multi-threaded executor or spinner), as (the other callback, the
    /// run's callback, the run's start time): an implicit dependency of such a run on
    /// that callback makes a flow `uncertain`. Empty: none.
    pub overlaps: HashSet<(i64, i64, i64)>,
    /// Leave out the `uncertain` flows (counted in `FlowResult::uncertain_dropped`).
    pub drop_uncertain: bool,
    /// Where the search says how far it got, once per output message: `done`
    /// output messages searched, `found` flows, `work` candidate flows (`Meter`).
    pub meter: Option<Arc<Meter>>,
}

impl FlowOptions {
    /// Options with no caps, no exclusions and every candidate path kept.
    pub fn new(is_input_topic: Vec<bool>, is_output_topic: Vec<bool>, implicit: Option<ImplicitEdges>) -> Self {
        FlowOptions {
            is_input_topic,
            is_output_topic,
            implicit,
            exact_links: true,
            max_flows_per_output: usize::MAX,
            max_flows: usize::MAX,
            all_paths: true,
            excluded_topic: Vec::new(),
            excluded_cb: Vec::new(),
            window: Window::all(),
            overlaps: HashSet::new(),
            drop_uncertain: false,
            meter: None,
        }
    }

    /// Whether a run of callback `b` may depend on a run of callback `a` by an
    /// implicit intra-node edge (`implicit`; without it, any two distinct callbacks
    /// of a node), the only step an overlap (`overlaps`) can make uncertain.
    pub fn depends_on(&self, m: &Model, a: i64, b: i64) -> bool {
        match &self.implicit {
            Some(edges) => edges.contains_key(&(a, b)),
            None => {
                let node = |c: i64| if c < 0 { NONE } else { m.cb_node.get(c as usize).copied().unwrap_or(NONE) };
                a != b && node(a) >= 0 && node(a) == node(b)
            }
        }
    }

    fn topic_excluded(&self, t: i64) -> bool {
        t >= 0 && self.excluded_topic.get(t as usize).copied().unwrap_or(false)
    }

    fn cb_excluded(&self, c: i64) -> bool {
        c >= 0 && self.excluded_cb.get(c as usize).copied().unwrap_or(false)
    }
}

struct Search<'a, 'b> {
    ix: &'b Index<'a>,
    o: &'b FlowOptions,
    /// publishers of each topic, subscriptions' callbacks per callback's topic
    pubs_of_topic: Vec<Vec<i64>>,
    topic_of_cb: Vec<i64>,
    implicit_in: HashMap<i64, Vec<i64>>,
    cache: HashMap<(Kind, i64, bool), Rc<Tree>>,
    pub cache_hits: u64,
    pub evicted: u64,
}

/// A dependency tree (Algorithm 1's result): head instance and subtrees.
struct Tree {
    head: (Kind, i64),
    children: Vec<Rc<Tree>>,
    /// What the slice lacks for the head's dependencies (`Window`); empty: nothing.
    needs: Vec<Need>,
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
            Some(edges) => {
                for &(a, b) in edges.keys() {
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
    /// link, or the newest publication on its topic before it, and what the slice
    /// lacks to be sure of the latter.
    fn d_cp(&self, r: i64) -> (Option<i64>, Option<Need>) {
        let m = self.ix.m;
        if self.o.exact_links {
            let p = self.ix.input_of_run[r as usize];
            if p >= 0 {
                return (Some(p), None);
            }
        }
        let cb = m.run_cb[r as usize];
        let topic = self.topic_of_cb[cb as usize];
        if topic < 0 {
            return (None, None);
        }
        let (w, t) = (&self.o.window, m.run_start[r as usize]);
        if let Some(&p) = w.newest_before.get(&(topic, t)) {
            return ((p >= 0).then_some(p), None);
        }
        let best = self.newest_on_topic(topic, t);
        // Any publisher's publication before its horizon could be the newest.
        let lo = self.pubs_of_topic[topic as usize].iter().map(|&pu| w.lo_of_publisher(pu)).max().unwrap_or(i64::MIN);
        let need = w.lookup_unsure(lo, best.map(|p| m.pb_ts[p as usize])).then_some(Need::NewestBefore(topic, t));
        (best, need)
    }

    /// The newest publication on `topic` before `t`.
    fn newest_on_topic(&self, topic: i64, t: i64) -> Option<i64> {
        let m = self.ix.m;
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

    /// D_cc: the newest run of each implicit dependency callback before `r`, and what
    /// the slice lacks to be sure of them.
    fn d_cc(&self, r: i64, needs: &mut Vec<Need>) -> Vec<i64> {
        let (m, w) = (self.ix.m, &self.o.window);
        let cb = m.run_cb[r as usize];
        let t = m.run_start[r as usize];
        let mut runs = Vec::new();
        for &d in self.implicit_in.get(&cb).map(|v| v.as_slice()).unwrap_or(&[]) {
            if let Some(&x) = w.runs_before.get(&(d, t)) {
                runs.extend((x >= 0).then_some(x));
                continue;
            }
            let found = self.ix.latest_run_before(d, t, true);
            if w.lookup_unsure(w.lo_of_cb(d), found.map(|x| m.run_start[x as usize])) {
                needs.push(Need::RunBefore(d, t));
            }
            runs.extend(found);
        }
        runs
    }

    /// Whether the slice holds all of node `head`'s references (`Window`).
    fn node_held(&self, head: (Kind, i64)) -> bool {
        let (m, w) = (self.ix.m, &self.o.window);
        let lo =
            if head.0 == Kind::Pub { w.lo_of_publisher(m.pb_publisher[head.1 as usize]) } else { w.lo_of_cb(m.run_cb[head.1 as usize]) };
        w.holds(lo, m.time_of(head))
    }

    /// Algorithm 1, without the visited set (which is applied when paths are
    /// read out of the tree, so that subtrees can be cached per instance):
    /// dependencies are strictly earlier in time, so the recursion ends.
    fn tree(&mut self, head: (Kind, i64), is_dep_cb: bool, depth: u32) -> Rc<Tree> {
        let key = (head.0, head.1, is_dep_cb);
        if let Some(t) = self.cache.get(&key) {
            self.cache_hits += 1;
            return t.clone();
        }
        let mut children = Vec::new();
        let mut needs = Vec::new();
        let held = self.node_held(head) || self.o.window.complete.contains(&head);
        if !held {
            needs.push(Need::Node(head.0, head.1));
        }
        if depth < 256 && held {
            if head.0 == Kind::Pub {
                if let Some(r) = self.d_pc(head.1) {
                    children.push(self.tree((Kind::Run, r), false, depth + 1));
                }
            } else {
                let m = self.ix.m;
                let cb = m.run_cb[head.1 as usize];
                if takes_input(m.cb_kind[cb as usize]) {
                    let (p, need) = self.d_cp(head.1);
                    needs.extend(need);
                    if let Some(p) = p {
                        children.push(self.tree((Kind::Pub, p), false, depth + 1));
                    }
                }
                if !is_dep_cb {
                    for d in self.d_cc(head.1, &mut needs) {
                        children.push(self.tree((Kind::Run, d), true, depth + 1));
                    }
                }
            }
        }
        let t = Rc::new(Tree { head, children, needs });
        self.cache.insert(key, t.clone());
        t
    }

    /// Reads the data flows out of a tree: root-to-node paths (backward in time)
    /// that end at a run which published on an input topic, or at a publication on
    /// an input topic made outside any callback run, honouring the visited set (no
    /// callback or topic twice on a path) and the exclusions. Returns false when a
    /// flow was found with `out` already at the per-output cap (more candidates
    /// exist than the cap lets through). A walk that reaches an incomplete node
    /// (`Window`) gathers what it needs in `walk.needs` and goes on elsewhere: its
    /// flows are then not an answer.
    fn flows(&self, t: &Tree, walk: &mut Walk, out: &mut Vec<Vec<(Kind, i64)>>) -> bool {
        let Walk { vis_cb, vis_topic, .. } = walk;
        let m = self.ix.m;
        let (kind, id) = t.head;
        let (mut pushed_cb, mut pushed_topic) = (false, false);
        if kind == Kind::Pub {
            let topic = self.topic_of_pub(id);
            if self.o.topic_excluded(topic) {
                return true;
            }
            if topic >= 0 {
                if vis_topic.contains(&topic) {
                    return true;
                }
                vis_topic.push(topic);
                pushed_topic = true;
            }
        } else {
            let cb = m.run_cb[id as usize];
            if vis_cb.contains(&cb) || self.o.cb_excluded(cb) {
                return true;
            }
            vis_cb.push(cb);
            pushed_cb = true;
        }
        if !t.needs.is_empty() {
            walk.needs.extend(t.needs.iter().copied());
            if pushed_cb {
                walk.vis_cb.pop();
            }
            if pushed_topic {
                walk.vis_topic.pop();
            }
            return true;
        }
        let Walk { path, .. } = walk;
        path.push(t.head);
        // A flow starts at a run that published on an input topic (the earliest such
        // match on the path continues deeper if it can: the tree is followed to its
        // leaves, and every input match along the way is a flow), or at an input
        // publication that no callback run made.
        let on_input = |p: i64| {
            let topic = self.topic_of_pub(p);
            topic >= 0 && self.o.is_input_topic[topic as usize]
        };
        let is_flow = if kind == Kind::Run {
            path.len() >= 2 && path[path.len() - 2].0 == Kind::Pub && on_input(path[path.len() - 2].1)
        } else {
            path.len() >= 2 && m.pb_run[id as usize] < 0 && on_input(id)
        };
        let mut room = true;
        if is_flow {
            if out.len() >= self.o.max_flows_per_output {
                room = false;
            } else {
                out.push(path.iter().rev().copied().collect());
            }
        }
        for c in &t.children {
            if !room {
                break;
            }
            room = self.flows(c, walk, out);
        }
        walk.path.pop();
        if pushed_cb {
            walk.vis_cb.pop();
        }
        if pushed_topic {
            walk.vis_topic.pop();
        }
        room
    }

    /// Whether a run of run `a`'s callback overlapped run `b` on another thread
    /// (`FlowOptions::overlaps`): then `a` may not be what `b` read.
    fn overlapped(&self, a: i64, b: i64) -> bool {
        let m = self.ix.m;
        !self.o.overlaps.is_empty() && self.o.overlaps.contains(&(m.run_cb[a as usize], m.run_cb[b as usize], m.run_start[b as usize]))
    }

    /// Where the implicit edge a -> b (runs) comes from.
    fn edge_source(&self, a: i64, b: i64) -> EdgeSource {
        let m = self.ix.m;
        let key = (m.run_cb[a as usize], m.run_cb[b as usize]);
        match &self.o.implicit {
            Some(edges) => edges.get(&key).copied().unwrap_or(EdgeSource::Fallback),
            None => EdgeSource::Fallback,
        }
    }
}

/// The state of one walk of `Search::flows` through an output's tree: the path from
/// the root, the callbacks and topics on it, and what it lacked at the incomplete nodes it reached.
#[derive(Default)]
struct Walk {
    path: Vec<(Kind, i64)>,
    vis_cb: Vec<i64>,
    vis_topic: Vec<i64>,
    /// What the slice lacked for the nodes the walk reached.
    needs: Vec<Need>,
}

fn breakdown(s: &Search, steps: Vec<(Kind, i64)>) -> DataFlow {
    let m = s.ix.m;
    let t_of = |s: (Kind, i64)| m.time_of(s);
    let (mut com, mut idle, mut calc) = (0i64, 0i64, 0i64);
    let mut fallback_edges = 0;
    let mut uncertain = false;
    for w in steps.windows(2) {
        let (a, b) = (w[0], w[1]);
        match (a.0, b.0) {
            (Kind::Pub, Kind::Run) => com += t_of(b) - t_of(a),
            (Kind::Run, Kind::Pub) => calc += t_of(b) - t_of(a),
            (Kind::Run, Kind::Run) => {
                let end = m.run_end[a.1 as usize];
                let d = if end >= 0 { end - t_of(a) } else { t_of(b) - t_of(a) };
                calc += d;
                idle += t_of(b) - (t_of(a) + d);
                fallback_edges += (s.edge_source(a.1, b.1) == EdgeSource::Fallback) as u32;
                uncertain |= s.overlapped(a.1, b.1);
            }
            _ => {}
        }
    }
    DataFlow {
        start: t_of(steps[0]),
        end: t_of(*steps.last().unwrap()),
        steps,
        communication: com,
        idle,
        computation: calc,
        fallback_edges,
        uncertain,
        edges: Vec::new(),
    }
}

/// How each step of `steps` follows from the one before (`edge_name`); "" for the first.
fn edge_names(s: &Search, steps: &[(Kind, i64)]) -> Vec<&'static str> {
    std::iter::once("").chain(steps.windows(2).map(|w| edge_name(s, w[0], w[1]))).collect()
}

/// How step `b` of a flow follows from step `a`: `published` (run -> the publication
/// it made), `transport` (publication -> the run its transport link fed),
/// `newest_publication` (publication -> a run without a link: the newest publication
/// on its topic, the paper's D_cp), or the source of an intra-node dependency (run ->
/// run: `annotation`, `source_analysis`, `fallback`).
fn edge_name(s: &Search, a: (Kind, i64), b: (Kind, i64)) -> &'static str {
    match (a.0, b.0) {
        (Kind::Run, Kind::Pub) => "published",
        (Kind::Pub, Kind::Run) if s.ix.input_of_run[b.1 as usize] == a.1 => "transport",
        (Kind::Pub, Kind::Run) => "newest_publication",
        (Kind::Run, Kind::Run) => s.edge_source(a.1, b.1).name(),
        _ => "",
    }
}

/// One flow per (input message, output message) pair: of the candidates of one
/// output publication that share an input, the one with the fewest fallback edges,
/// then a certain one (not `uncertain`), then the most steps, then the first found.
/// Returns how many were dropped.
fn one_flow_per_pair(flows: &mut Vec<DataFlow>) -> usize {
    let mut best: HashMap<i64, usize> = HashMap::new();
    for (i, f) in flows.iter().enumerate() {
        let better = |j: usize| {
            let g = &flows[j];
            (f.fallback_edges, f.uncertain, std::cmp::Reverse(f.steps.len()))
                < (g.fallback_edges, g.uncertain, std::cmp::Reverse(g.steps.len()))
        };
        match best.get(&f.input()) {
            Some(&j) if !better(j) => {}
            _ => {
                best.insert(f.input(), i);
            }
        }
    }
    let before = flows.len();
    let mut keep: Vec<bool> = vec![false; before];
    for &i in best.values() {
        keep[i] = true;
    }
    let mut k = keep.iter();
    flows.retain(|_| *k.next().unwrap());
    before - flows.len()
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
pub struct SegmentSet {
    /// Each segment kept, by (kind, a, b) in the model's ids, with its time (its
    /// start's: a publication's or a run's).
    seen: HashMap<(SegmentKind, i64, i64), i64>,
    /// The segments found since the last `take`.
    pub segments: Vec<Segment>,
    /// Segments before this time were forgotten (`forget_before`).
    forgotten_before: i64,
    /// Segments added before `forgotten_before`: each may repeat one that was forgotten.
    pub unsure: u64,
}

impl Default for SegmentSet {
    fn default() -> Self {
        SegmentSet { seen: HashMap::new(), segments: Vec::new(), forgotten_before: i64::MIN, unsure: 0 }
    }
}

impl SegmentSet {
    pub fn add(&mut self, m: &Model, f: &DataFlow) {
        self.add_mapped(m, f, &IdMap::identity());
    }

    /// Adds the segments of `f`, found in a slice of the model whose ids map to the
    /// model's by `ids`.
    pub fn add_mapped(&mut self, m: &Model, f: &DataFlow, ids: &IdMap) {
        let t_of = |s: (Kind, i64)| m.time_of(s);
        for w in f.steps.windows(2) {
            let (x, y) = (w[0], w[1]);
            let mut push = |k: SegmentKind, a: i64, b: i64, d: i64, t: i64| {
                if self.seen.contains_key(&(k, a, b)) {
                    return;
                }
                self.unsure += (t < self.forgotten_before) as u64;
                self.seen.insert((k, a, b), t);
                self.segments.push(Segment { kind: k, a, b, duration: d });
            };
            let t = t_of(x);
            match (x.0, y.0) {
                (Kind::Pub, Kind::Run) => push(SegmentKind::Communication, ids.publication(x.1), ids.run(y.1), t_of(y) - t, t),
                (Kind::Run, Kind::Pub) => push(SegmentKind::Computation, ids.run(x.1), ids.publication(y.1), t_of(y) - t, t),
                (Kind::Run, Kind::Run) => {
                    let end = m.run_end[x.1 as usize];
                    let d = if end >= 0 { end - t } else { t_of(y) - t };
                    push(SegmentKind::Computation, ids.run(x.1), NONE, d, t);
                    push(SegmentKind::Idle, ids.run(x.1), ids.run(y.1), t_of(y) - (t + d), t);
                }
                _ => {}
            }
        }
    }

    /// Forgets the segments before time `t` (memory holds those of a slice of the
    /// trace); one found again later counts in `unsure`.
    pub fn forget_before(&mut self, t: i64) {
        if t > self.forgotten_before {
            self.seen.retain(|_, &mut ts| ts >= t);
            self.forgotten_before = t;
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
    /// Candidate flows examined (`flows` plus `duplicates_dropped`).
    pub candidates: usize,
    /// Output publications searched.
    pub outputs: usize,
    /// Output publications on the output topics (searched or not).
    pub outputs_total: usize,
    /// Outputs whose candidate flows reached `max_flows_per_output` (their flows
    /// are incomplete), and the first few of them (publication ids).
    pub outputs_capped: usize,
    pub capped_examples: Vec<i64>,
    /// The output publication at which `max_flows` stopped the search (it and the
    /// later outputs were not searched).
    pub stopped_at: Option<i64>,
    /// Candidate flows dropped because another candidate of the same (input,
    /// output) pair was kept (`FlowOptions::all_paths` false).
    pub duplicates_dropped: usize,
    /// Flows that rest on at least one fallback edge.
    pub flows_on_fallback: usize,
    /// Flows that are `uncertain` (a race: `FlowOptions::overlaps`), kept.
    pub flows_uncertain: usize,
    /// `uncertain` flows left out (`FlowOptions::drop_uncertain`).
    pub uncertain_dropped: usize,
    /// Flows that start at a publication made outside any callback run.
    pub flows_from_publications: usize,
    pub cache_hits: u64,
    pub trees: usize,
    /// Cached subtrees dropped because they were older than any flow reaches back.
    pub evicted: u64,
    /// The output (time, publication) at which the search over a slice stopped because
    /// its flows reach beyond the slice (`Window`): it and the later outputs were not
    /// answered, and are not counted in `outputs_total`.
    pub uncertain_at: Option<(i64, i64)>,
    /// What the slice lacked for the output at `uncertain_at` (`Need`).
    pub needs: Vec<Need>,
}

impl Default for FlowResult {
    fn default() -> Self {
        FlowResult::new(0)
    }
}

impl FlowResult {
    fn new(outputs_total: usize) -> Self {
        FlowResult {
            flows: 0,
            candidates: 0,
            outputs: 0,
            outputs_total,
            outputs_capped: 0,
            capped_examples: Vec::new(),
            stopped_at: None,
            duplicates_dropped: 0,
            flows_on_fallback: 0,
            flows_uncertain: 0,
            uncertain_dropped: 0,
            flows_from_publications: 0,
            cache_hits: 0,
            trees: 0,
            evicted: 0,
            uncertain_at: None,
            needs: Vec::new(),
        }
    }

    /// Adds the result of the search over the next slice, whose ids map to the
    /// model's by `ids`.
    pub fn add(&mut self, r: FlowResult, ids: &IdMap) {
        self.flows += r.flows;
        self.candidates += r.candidates;
        self.outputs += r.outputs;
        self.outputs_total += r.outputs_total;
        self.outputs_capped += r.outputs_capped;
        for p in r.capped_examples {
            if self.capped_examples.len() < CAPPED_EXAMPLES {
                self.capped_examples.push(ids.publication(p));
            }
        }
        self.stopped_at = self.stopped_at.or(r.stopped_at.map(|p| ids.publication(p)));
        self.duplicates_dropped += r.duplicates_dropped;
        self.flows_on_fallback += r.flows_on_fallback;
        self.flows_uncertain += r.flows_uncertain;
        self.uncertain_dropped += r.uncertain_dropped;
        self.flows_from_publications += r.flows_from_publications;
        self.cache_hits += r.cache_hits;
        self.trees = self.trees.max(r.trees);
        self.evicted += r.evicted;
    }
}

/// Cached subtrees are dropped once the cache holds this many and they are
/// older than the longest flow seen so far reaches back (twice over): the cache
/// only saves work, so what is dropped is recomputed if ever needed again.
pub const CACHE_SOFT_CAP: usize = 1 << 18;
/// How many capped outputs `FlowResult::capped_examples` names.
const CAPPED_EXAMPLES: usize = 5;

/// All data flows ending in a publication on an output topic and starting with a run
/// that published on an input topic, collected in a vector (see `each_data_flow`).
pub fn data_flows(ix: &Index, o: &FlowOptions) -> (Vec<DataFlow>, FlowResult) {
    let mut v = Vec::new();
    let r = each_data_flow(ix, o, |f| {
        v.push(f);
        true
    });
    (v, r)
}

/// Every data flow, handed to `sink` as it is found, outputs in time order; memory
/// holds only the subtree cache (bounded, see `CACHE_SOFT_CAP`) and one output's
/// candidates, not the flows. The search stops when `sink` returns false (then
/// `stopped_at` is the output it was handling) or at `max_flows`.
pub fn each_data_flow(ix: &Index, o: &FlowOptions, mut sink: impl FnMut(DataFlow) -> bool) -> FlowResult {
    let m = ix.m;
    let mut s = Search::new(ix, o);
    let mut order: Vec<i64> = (0..m.pb_ts.len() as i64)
        .filter(|&p| {
            let t = s.topic_of_pub(p);
            t >= 0
                && o.is_output_topic[t as usize]
                && o.window.outputs(m.pb_ts[p as usize], p)
                && !o.topic_excluded(t)
                && !o.cb_excluded(run_cb_of(m, p))
        })
        .collect();
    order.sort_by_key(|&p| (m.pb_ts[p as usize], p));
    let mut r = FlowResult::new(order.len());
    let mut max_span: i64 = 0;
    let mut cap = CACHE_SOFT_CAP;
    'outputs: for (i, p) in order.into_iter().enumerate() {
        if r.candidates >= o.max_flows {
            r.stopped_at = Some(p);
            break;
        }
        let t_out = m.pb_ts[p as usize];
        if s.cache.len() > cap {
            let horizon = t_out.saturating_sub(max_span.saturating_mul(2).saturating_add(1_000_000_000));
            let before = s.cache.len();
            s.cache.retain(|_, t| m.time_of(t.head) >= horizon);
            s.evicted += (before - s.cache.len()) as u64;
            cap = CACHE_SOFT_CAP.max(2 * s.cache.len());
        }
        let tree = s.tree((Kind::Pub, p), false, 0);
        r.trees = r.trees.max(s.cache.len());
        let mut out = Vec::new();
        let mut walk = Walk::default();
        let room = s.flows(&tree, &mut walk, &mut out);
        if !walk.needs.is_empty() {
            let mut seen = HashSet::new();
            r.needs = walk.needs.into_iter().filter(|n| seen.insert(*n)).collect();
            r.uncertain_at = Some((t_out, p));
            r.outputs_total = i;
            break;
        }
        r.outputs += 1;
        if !room {
            r.outputs_capped += 1;
            if r.capped_examples.len() < CAPPED_EXAMPLES {
                r.capped_examples.push(p);
            }
        }
        r.candidates += out.len();
        let flows_before = r.flows;
        let candidates = out.len() as u64;
        let mut found: Vec<DataFlow> = out.into_iter().map(|steps| breakdown(&s, steps)).collect();
        if !o.all_paths {
            r.duplicates_dropped += one_flow_per_pair(&mut found);
        }
        for mut f in found {
            if f.uncertain && o.drop_uncertain {
                r.uncertain_dropped += 1;
                continue;
            }
            r.flows_uncertain += f.uncertain as usize;
            f.edges = edge_names(&s, &f.steps);
            max_span = max_span.max(f.end - f.start);
            r.flows += 1;
            r.flows_on_fallback += (f.fallback_edges > 0) as usize;
            r.flows_from_publications += (f.steps[0].0 == Kind::Pub) as usize;
            if !sink(f) {
                r.stopped_at = Some(p);
                break 'outputs;
            }
        }
        if let Some(m) = o.meter.as_ref() {
            m.add(1, (r.flows - flows_before) as u64, candidates);
        }
    }
    r.cache_hits = s.cache_hits;
    r.evicted = s.evicted;
    r
}

/// The callback of the run that made publication `p` (`NONE` outside any run).
fn run_cb_of(m: &Model, p: i64) -> i64 {
    let run = m.pb_run[p as usize];
    if run >= 0 {
        m.run_cb[run as usize]
    } else {
        NONE
    }
}

/// The path of a data flow: its callback/topic sequence (callback ids and topic ids),
/// as a key for grouping.
pub fn path_key(m: &Model, f: &DataFlow) -> Vec<(Part, i64)> {
    f.steps
        .iter()
        .map(|&(k, id)| {
            if k == Kind::Run {
                (Part::Callback, m.run_cb[id as usize])
            } else {
                let pu = m.pb_publisher[id as usize];
                (Part::Topic, if pu >= 0 { m.pub_topic[pu as usize] } else { NONE })
            }
        })
        .collect()
}
