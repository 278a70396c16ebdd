//! roscope-flow: message flows and end-to-end latency over the execution model.
//!
//! - `causal_links`: which published messages caused which (message-flow paper IV-B):
//!   direct (published during the subscription callback run that received the input),
//!   periodic asynchronous and partial synchronous (from user annotations), and
//!   inferred (no annotation: the data-flow paper's implicit intra-node edges, under the
//!   policy of `Policy`).
//! - `message_graph`: one message's flow, forward and backward (message-flow paper IV-C).
//! - `data_flows`: dependency trees built backward from output publications (data-flow
//!   paper, Algorithm 1: newest inputs, visited set, at most two consecutive callbacks,
//!   subtree caching), paths grouped by their callback/topic sequence, each flow's
//!   latency split into communication, idle and computation.
//!
//! Inputs are plain columns (ids are row indexes, -1 is "none"), so the same code
//! serves a model just built and one read back from a database.

use std::collections::{HashMap, HashSet};

pub const NONE: i64 = -1;

pub const CB_TIMER: i64 = 0;
pub const CB_SUBSCRIPTION: i64 = 1;

pub const K_DIRECT: u8 = 0;
pub const K_PERIODIC_ASYNC: u8 = 1;
pub const K_PARTIAL_SYNC: u8 = 2;
pub const K_INFERRED: u8 = 3;
pub const KIND_NAMES: [&str; 4] = ["direct", "periodic_async", "partial_sync", "inferred"];

pub const A_PERIODIC_ASYNC: i64 = 0;
pub const A_PARTIAL_SYNC: i64 = 1;

/// The model, as columns.
#[derive(Default, Clone)]
pub struct Model {
    // callbacks
    pub cb_node: Vec<i64>,
    pub cb_kind: Vec<i64>,
    /// Subscription id of a subscription callback.
    pub cb_sub: Vec<i64>,
    // subscriptions
    pub sub_topic: Vec<i64>,
    pub sub_node: Vec<i64>,
    // publishers
    pub pub_topic: Vec<i64>,
    pub pub_node: Vec<i64>,
    // callback runs (any order)
    pub run_cb: Vec<i64>,
    pub run_start: Vec<i64>,
    pub run_end: Vec<i64>,
    // publications
    pub pb_publisher: Vec<i64>,
    pub pb_run: Vec<i64>,
    pub pb_ts: Vec<i64>,
    // transport links: publication -> callback run
    pub tl_pub: Vec<i64>,
    pub tl_run: Vec<i64>,
    /// Annotations: (kind, subscriptions, publishers).
    pub annotations: Vec<(i64, Vec<i64>, Vec<i64>)>,
    /// Number of topics (ids 0..n).
    pub n_topics: usize,
}

/// What causes a publication made by a timer callback when no annotation tells.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Infer links from the latest completed run of each subscription callback of the
    /// same node, for publications of timer callbacks without an annotation.
    pub infer_timer_inputs: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { infer_timer_inputs: true }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CausalLink {
    pub in_pub: i64,
    /// The subscription callback run that received the input.
    pub in_run: i64,
    pub out_pub: i64,
    pub kind: u8,
}

/// Indexes derived once from the model.
pub struct Index<'a> {
    pub m: &'a Model,
    /// Runs of each callback, sorted by start time.
    pub runs_of_cb: Vec<Vec<i64>>,
    /// The input publication of a subscription callback run (its transport link).
    pub input_of_run: Vec<i64>,
    /// Transport links from each publication.
    pub runs_of_pub: Vec<Vec<i64>>,
    /// Publications made during each run.
    pub pubs_of_run: Vec<Vec<i64>>,
    /// Callbacks of each subscription.
    pub cbs_of_sub: HashMap<i64, Vec<i64>>,
    /// Callbacks of each node.
    pub cbs_of_node: HashMap<i64, Vec<i64>>,
    /// Annotation of a (publisher, kind): the annotation index.
    pub ann_of_pub: HashMap<(i64, i64), usize>,
    /// Publications of each publisher, by time.
    pub pubs_of_publisher: Vec<Vec<i64>>,
}

impl<'a> Index<'a> {
    pub fn new(m: &'a Model) -> Self {
        let ncb = m.cb_node.len();
        let mut runs_of_cb: Vec<Vec<i64>> = vec![Vec::new(); ncb];
        for (r, &c) in m.run_cb.iter().enumerate() {
            if c >= 0 && (c as usize) < ncb {
                runs_of_cb[c as usize].push(r as i64);
            }
        }
        for v in runs_of_cb.iter_mut() {
            v.sort_by_key(|&r| (m.run_start[r as usize], r));
        }
        let nrun = m.run_cb.len();
        let npb = m.pb_ts.len();
        let mut input_of_run = vec![NONE; nrun];
        let mut runs_of_pub: Vec<Vec<i64>> = vec![Vec::new(); npb];
        for (&p, &r) in m.tl_pub.iter().zip(&m.tl_run) {
            if r >= 0 && (r as usize) < nrun && p >= 0 && (p as usize) < npb {
                // One input per subscription run: keep the latest publication if several.
                let cur = input_of_run[r as usize];
                if cur == NONE || m.pb_ts[p as usize] > m.pb_ts[cur as usize] {
                    input_of_run[r as usize] = p;
                }
                runs_of_pub[p as usize].push(r);
            }
        }
        let mut pubs_of_run: Vec<Vec<i64>> = vec![Vec::new(); nrun];
        for (p, &r) in m.pb_run.iter().enumerate() {
            if r >= 0 && (r as usize) < nrun {
                pubs_of_run[r as usize].push(p as i64);
            }
        }
        let mut cbs_of_sub: HashMap<i64, Vec<i64>> = HashMap::new();
        let mut cbs_of_node: HashMap<i64, Vec<i64>> = HashMap::new();
        for c in 0..ncb {
            if m.cb_sub[c] >= 0 {
                cbs_of_sub.entry(m.cb_sub[c]).or_default().push(c as i64);
            }
            if m.cb_node[c] >= 0 {
                cbs_of_node.entry(m.cb_node[c]).or_default().push(c as i64);
            }
        }
        let mut ann_of_pub = HashMap::new();
        for (a, (kind, _subs, pubs)) in m.annotations.iter().enumerate() {
            for &p in pubs {
                ann_of_pub.insert((p, *kind), a);
            }
        }
        let mut pubs_of_publisher: Vec<Vec<i64>> = vec![Vec::new(); m.pub_topic.len()];
        for (p, &pu) in m.pb_publisher.iter().enumerate() {
            if pu >= 0 && (pu as usize) < pubs_of_publisher.len() {
                pubs_of_publisher[pu as usize].push(p as i64);
            }
        }
        for v in pubs_of_publisher.iter_mut() {
            v.sort_by_key(|&p| (m.pb_ts[p as usize], p));
        }
        Index { m, runs_of_cb, input_of_run, runs_of_pub, pubs_of_run, cbs_of_sub, cbs_of_node, ann_of_pub, pubs_of_publisher }
    }

    /// The latest run of callback `cb` that started before `t` (strictly), with its
    /// end at or before `t` if `completed`.
    pub fn latest_run_before(&self, cb: i64, t: i64, completed: bool) -> Option<i64> {
        let runs = &self.runs_of_cb[cb as usize];
        let m = self.m;
        let k = runs.partition_point(|&r| m.run_start[r as usize] < t);
        runs[..k].iter().rev().copied().find(|&r| !completed || (m.run_end[r as usize] >= 0 && m.run_end[r as usize] <= t))
    }

    fn sub_callbacks(&self, sub: i64) -> &[i64] {
        self.cbs_of_sub.get(&sub).map(|v| v.as_slice()).unwrap_or(&[])
    }
}

/// Every causal link of the model.
pub fn causal_links(ix: &Index, policy: Policy) -> Vec<CausalLink> {
    let m = ix.m;
    let mut out = Vec::new();
    // Partial synchronous groups keep, per annotation, the time of their last output.
    let mut last_output: HashMap<usize, i64> = HashMap::new();
    // Publications in time order, so that partial-sync resets follow the outputs.
    let mut order: Vec<i64> = (0..m.pb_ts.len() as i64).collect();
    order.sort_by_key(|&p| (m.pb_ts[p as usize], p));
    for p in order {
        let pu = p as usize;
        let r = m.pb_run[pu];
        if r < 0 {
            continue;
        }
        let ru = r as usize;
        let cb = m.run_cb[ru];
        if cb < 0 {
            continue;
        }
        let publisher = m.pb_publisher[pu];
        let kind = m.cb_kind[cb as usize];
        let t_run = m.run_start[ru];
        if kind == CB_SUBSCRIPTION {
            let ann = if publisher >= 0 { ix.ann_of_pub.get(&(publisher, A_PARTIAL_SYNC)).copied() } else { None };
            let sub = m.cb_sub[cb as usize];
            match ann.filter(|&a| m.annotations[a].1.contains(&sub)) {
                Some(a) => {
                    // Partial synchronous: the latest message of each input since the
                    // group's previous output (the caches were reset then).
                    let since = last_output.get(&a).copied().unwrap_or(i64::MIN);
                    for &s in &m.annotations[a].1 {
                        let mut best: Option<i64> = None;
                        for &c in ix.sub_callbacks(s) {
                            let cand = if c == cb { Some(r) } else { ix.latest_run_before(c, t_run + 1, false) };
                            if let Some(x) = cand {
                                if m.run_start[x as usize] > since
                                    && best.map_or(true, |b| m.run_start[x as usize] > m.run_start[b as usize])
                                {
                                    best = Some(x);
                                }
                            }
                        }
                        if let Some(x) = best {
                            let inp = ix.input_of_run[x as usize];
                            if inp >= 0 {
                                out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: K_PARTIAL_SYNC });
                            }
                        }
                    }
                    last_output.insert(a, t_run);
                }
                None => {
                    let inp = ix.input_of_run[ru];
                    if inp >= 0 {
                        out.push(CausalLink { in_pub: inp, in_run: r, out_pub: p, kind: K_DIRECT });
                    }
                }
            }
        } else if kind == CB_TIMER {
            let ann = if publisher >= 0 { ix.ann_of_pub.get(&(publisher, A_PERIODIC_ASYNC)).copied() } else { None };
            match ann {
                Some(a) => {
                    // Periodic asynchronous: the latest message cached by each input.
                    for &s in &m.annotations[a].1 {
                        let best = ix
                            .sub_callbacks(s)
                            .iter()
                            .filter_map(|&c| ix.latest_run_before(c, t_run, false))
                            .max_by_key(|&x| m.run_start[x as usize]);
                        if let Some(x) = best {
                            let inp = ix.input_of_run[x as usize];
                            if inp >= 0 {
                                out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: K_PERIODIC_ASYNC });
                            }
                        }
                    }
                }
                None if policy.infer_timer_inputs => {
                    // Inferred: the latest completed run of each subscription callback
                    // of the same node.
                    let node = m.cb_node[cb as usize];
                    if node < 0 {
                        continue;
                    }
                    if let Some(cbs) = ix.cbs_of_node.get(&node) {
                        for &c in cbs {
                            if m.cb_kind[c as usize] != CB_SUBSCRIPTION {
                                continue;
                            }
                            if let Some(x) = ix.latest_run_before(c, t_run, true) {
                                let inp = ix.input_of_run[x as usize];
                                // A node's own messages that it also receives (/tf-style)
                                // are not inputs of its outputs.
                                let from_self = inp >= 0 && {
                                    let pu = m.pb_publisher[inp as usize];
                                    pu >= 0 && m.pub_node[pu as usize] == node
                                };
                                if inp >= 0 && !from_self {
                                    out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: K_INFERRED });
                                }
                            }
                        }
                    }
                }
                None => {}
            }
        }
    }
    out
}

/// One message's flow graph: publications and runs reached from `start`
/// forward (`forward`) or backward, with the edges that reach them.
/// Edges: (from, to, kind) over nodes "p<id>" (publication) / "r<id>" (run):
/// kinds "transport", "published_in", and the causal kinds.
#[derive(Default, Debug)]
pub struct Graph {
    pub pubs: Vec<i64>,
    pub runs: Vec<i64>,
    pub edges: Vec<(char, i64, char, i64, &'static str)>,
}

pub fn message_graph(ix: &Index, links: &[CausalLink], start_pub: i64, forward: bool, backward: bool) -> Graph {
    let m = ix.m;
    let mut by_in: HashMap<i64, Vec<usize>> = HashMap::new();
    let mut by_out: HashMap<i64, Vec<usize>> = HashMap::new();
    for (k, l) in links.iter().enumerate() {
        by_in.entry(l.in_pub).or_default().push(k);
        by_out.entry(l.out_pub).or_default().push(k);
    }
    let node_of_pub = |p: i64| -> i64 {
        let pu = m.pb_publisher[p as usize];
        if pu >= 0 {
            m.pub_node[pu as usize]
        } else {
            NONE
        }
    };
    let node_of_run = |r: i64| -> i64 {
        let c = m.run_cb[r as usize];
        if c >= 0 {
            m.cb_node[c as usize]
        } else {
            NONE
        }
    };
    let mut g = Graph::default();
    let mut seen_p: HashSet<i64> = HashSet::new();
    let mut seen_r: HashSet<i64> = HashSet::new();
    let mut edges: HashSet<(char, i64, char, i64, &'static str)> = HashSet::new();
    seen_p.insert(start_pub);
    if forward {
        let mut stack = vec![start_pub];
        while let Some(p) = stack.pop() {
            for &r in &ix.runs_of_pub[p as usize] {
                // A node receiving its own message (e.g. /tf): not a flow segment.
                if node_of_run(r) == node_of_pub(p) && node_of_run(r) >= 0 {
                    continue;
                }
                edges.insert(('p', p, 'r', r, "transport"));
                seen_r.insert(r);
            }
            for &k in by_in.get(&p).map(|v| v.as_slice()).unwrap_or(&[]) {
                let l = links[k];
                if node_of_run(l.in_run) == node_of_pub(p) && node_of_run(l.in_run) >= 0 {
                    continue;
                }
                edges.insert(('r', l.in_run, 'p', l.out_pub, KIND_NAMES[l.kind as usize]));
                seen_r.insert(l.in_run);
                if seen_p.insert(l.out_pub) {
                    stack.push(l.out_pub);
                }
            }
        }
    }
    if backward {
        let mut stack = vec![start_pub];
        let mut seen_b: HashSet<i64> = HashSet::new();
        seen_b.insert(start_pub);
        while let Some(p) = stack.pop() {
            let r = m.pb_run[p as usize];
            if r >= 0 {
                edges.insert(('r', r, 'p', p, "published_in"));
                seen_r.insert(r);
            }
            for &k in by_out.get(&p).map(|v| v.as_slice()).unwrap_or(&[]) {
                let l = links[k];
                if node_of_run(l.in_run) == node_of_pub(l.in_pub) && node_of_run(l.in_run) >= 0 {
                    continue;
                }
                edges.insert(('r', l.in_run, 'p', p, KIND_NAMES[l.kind as usize]));
                edges.insert(('p', l.in_pub, 'r', l.in_run, "transport"));
                seen_r.insert(l.in_run);
                seen_p.insert(l.in_pub);
                if seen_b.insert(l.in_pub) {
                    stack.push(l.in_pub);
                }
            }
        }
    }
    g.pubs = seen_p.into_iter().collect();
    g.pubs.sort();
    g.runs = seen_r.into_iter().collect();
    g.runs.sort();
    g.edges = edges.into_iter().collect();
    g.edges.sort();
    g
}

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
    cache: HashMap<(char, i64, bool), std::rc::Rc<Tree>>,
    pub cache_hits: u64,
    pub evicted: u64,
}

/// A dependency tree (Algorithm 1's result): head instance and subtrees.
struct Tree {
    head: (char, i64),
    children: Vec<std::rc::Rc<Tree>>,
}

impl<'a, 'b> Search<'a, 'b> {
    fn new(ix: &'b Index<'a>, o: &'b FlowOptions) -> Self {
        let m = ix.m;
        let mut pubs_of_topic: Vec<Vec<i64>> = vec![Vec::new(); m.n_topics];
        for (pu, &t) in m.pub_topic.iter().enumerate() {
            if t >= 0 && (t as usize) < m.n_topics {
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
        let m = self.ix.m;
        let pu = m.pb_publisher[p as usize];
        if pu >= 0 {
            m.pub_topic[pu as usize]
        } else {
            NONE
        }
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
                if best.map_or(true, |b| m.pb_ts[p as usize] > m.pb_ts[b as usize]) {
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
    fn tree(&mut self, head: (char, i64), is_dep_cb: bool, depth: u32) -> std::rc::Rc<Tree> {
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
                if m.cb_kind[cb as usize] == CB_SUBSCRIPTION {
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
        let t = std::rc::Rc::new(Tree { head, children });
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
    let t_of = |s: (char, i64)| if s.0 == 'p' { m.pb_ts[s.1 as usize] } else { m.run_start[s.1 as usize] };
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
    pub kind: u8,
    pub a: i64,
    pub b: i64,
    pub duration: i64,
}

pub const SEG_COMMUNICATION: u8 = 0;
pub const SEG_COMPUTATION: u8 = 1;
pub const SEG_IDLE: u8 = 2;

/// Collects the distinct segments of flows, one flow at a time.
#[derive(Default)]
pub struct SegmentSet {
    seen: HashSet<(u8, i64, i64)>,
    pub segments: Vec<Segment>,
}

impl SegmentSet {
    pub fn add(&mut self, m: &Model, f: &DataFlow) {
        let t_of = |s: (char, i64)| if s.0 == 'p' { m.pb_ts[s.1 as usize] } else { m.run_start[s.1 as usize] };
        for w in f.steps.windows(2) {
            let (x, y) = (w[0], w[1]);
            let mut push = |k: u8, a: i64, b: i64, d: i64| {
                if self.seen.insert((k, a, b)) {
                    self.segments.push(Segment { kind: k, a, b, duration: d });
                }
            };
            match (x.0, y.0) {
                ('p', 'r') => push(SEG_COMMUNICATION, x.1, y.1, t_of(y) - t_of(x)),
                ('r', 'p') => push(SEG_COMPUTATION, x.1, y.1, t_of(y) - t_of(x)),
                ('r', 'r') => {
                    let end = m.run_end[x.1 as usize];
                    let d = if end >= 0 { end - t_of(x) } else { t_of(y) - t_of(x) };
                    push(SEG_COMPUTATION, x.1, NONE, d);
                    push(SEG_IDLE, x.1, y.1, t_of(y) - (t_of(x) + d));
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
            let t_of = |h: (char, i64)| if h.0 == 'p' { m.pb_ts[h.1 as usize] } else { m.run_start[h.1 as usize] };
            s.cache.retain(|_, t| t_of(t.head) >= horizon);
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
