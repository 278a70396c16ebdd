//! Implicit (intra-node) dependencies between callbacks, for Algorithm 1's D_cc.

use std::collections::HashSet;

use crate::dataflow::{EdgeSource, ImplicitEdges};
use crate::index::Index;
use crate::model::{AnnotationKind, CallbackKind, Model};

/// Which intra-node dependencies the data-flow search follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implicit {
    /// Every ordered pair of distinct callbacks of a node (the data-flow paper's
    /// fallback when nothing is known).
    All,
    /// Only what causal-link annotations declare: periodic asynchronous, each input's
    /// subscription callback -> the timer callback that publishes; partial synchronous,
    /// between the group's subscription callbacks.
    Annotations,
    /// Annotations where a node has them, every pair of its timer and subscription
    /// callbacks elsewhere.
    Auto,
    /// No implicit dependencies.
    None,
}

impl Implicit {
    pub const NAMES: [&'static str; 4] = ["auto", "all", "annotations", "none"];

    pub fn parse(s: &str) -> Option<Implicit> {
        match s {
            "all" => Some(Implicit::All),
            "annotations" => Some(Implicit::Annotations),
            "auto" => Some(Implicit::Auto),
            "none" => Some(Implicit::None),
            _ => None,
        }
    }
}

/// Which callback pairs of a node without annotations or a dependency file get a
/// fallback edge (`Implicit::Auto`), measured against ground truth in
/// bench/flow_truth.py (docs/analyses.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallbackRule {
    /// Every ordered pair of the node's timer and subscription callbacks.
    Pairs,
    /// Every pair of timer and subscription callbacks but those where both publish
    /// in most of their runs (`passes_its_input_on`): two callbacks that each pass
    /// their input on themselves are two pipelines; a callback that mostly does not
    /// publish keeps its input in state for the others (a cache), and one fed by
    /// others may be their consumer.
    ApartPipelines,
    /// From any subscription callback to a timer callback only.
    IntoTimers,
}

impl FallbackRule {
    pub const NAMES: [&'static str; 3] = ["pairs", "pipelines", "timers"];

    pub fn parse(s: &str) -> Option<FallbackRule> {
        match s {
            "pairs" => Some(FallbackRule::Pairs),
            "pipelines" => Some(FallbackRule::ApartPipelines),
            "timers" => Some(FallbackRule::IntoTimers),
            _ => None,
        }
    }
}

/// Intra-node dependencies from a dependency file (`roscope deps`), matched to the
/// trace: edges between callback ids, and the nodes the file describes.
#[derive(Clone, Copy)]
pub struct Deps<'a> {
    pub edges: &'a [(i64, i64)],
    pub nodes: &'a HashSet<i64>,
}

/// The implicit edges (from callback, to callback) of `mode`, each with its source;
/// `None` stands for every pair of distinct callbacks of a node, all fallback
/// edges (`FlowOptions::implicit`).
pub fn implicit_edges(ix: &Index, mode: Implicit) -> Option<ImplicitEdges> {
    implicit_edges_with(ix, mode, None, FallbackRule::Pairs)
}

/// `implicit_edges`, with the edges of a dependency file (`roscope deps`, matched to
/// this trace's callbacks): annotations win on the nodes that have them, the
/// dependency file's edges hold on the nodes it describes (`deps_nodes`: every node
/// with a callback it matched), and `mode`'s rule holds elsewhere ('auto': the
/// fallback edges of `rule`).
pub fn implicit_edges_with(ix: &Index, mode: Implicit, deps: Option<Deps>, rule: FallbackRule) -> Option<ImplicitEdges> {
    let m = ix.m;
    if mode == Implicit::All && deps.is_none() {
        return None;
    }
    let mut edges: ImplicitEdges = match mode {
        Implicit::None => ImplicitEdges::new(),
        _ => annotated_edges(ix).into_iter().map(|e| (e, EdgeSource::Annotation)).collect(),
    };
    let annotated_nodes: HashSet<i64> = m
        .annotations
        .iter()
        .flat_map(|a| a.subs.iter())
        .flat_map(|s| ix.sub_callbacks(*s))
        .map(|&c| m.cb_node[c as usize])
        .filter(|&n| n >= 0)
        .collect();
    let mut described: HashSet<i64> = HashSet::new();
    if let Some(Deps { edges: deps_edges, nodes: deps_nodes }) = deps {
        for &(a, b) in deps_edges {
            let node = m.cb_node.get(a as usize).copied().unwrap_or(-1);
            if !annotated_nodes.contains(&node) {
                edges.insert((a, b), EdgeSource::SourceAnalysis);
            }
        }
        described.extend(deps_nodes.iter().copied());
    }
    // Every pair of the node's callbacks ('all'), or of its timers and subscriptions
    // ('auto', on nodes that neither annotations nor the dependency file describe).
    let runnable = |c: i64| matches!(m.cb_kind[c as usize], CallbackKind::Timer | CallbackKind::Subscription);
    let passes_on = passes_its_input_on(ix);
    let allowed = |a: i64, b: i64| match rule {
        FallbackRule::Pairs => true,
        FallbackRule::ApartPipelines => !(passes_on[a as usize] && passes_on[b as usize]),
        FallbackRule::IntoTimers => m.cb_kind[a as usize] == CallbackKind::Subscription && m.cb_kind[b as usize] == CallbackKind::Timer,
    };
    for (node, cbs) in &ix.cbs_of_node {
        let (fallback, every) = match mode {
            Implicit::All => (!described.contains(node), true),
            Implicit::Auto => (!annotated_nodes.contains(node) && !described.contains(node), false),
            Implicit::Annotations | Implicit::None => (false, false),
        };
        if !fallback {
            continue;
        }
        for &a in cbs.iter().filter(|&&c| every || runnable(c)) {
            for &b in cbs.iter().filter(|&&c| (every || runnable(c)) && c != a && (every || allowed(a, c))) {
                edges.entry((a, b)).or_insert(EdgeSource::Fallback);
            }
        }
    }
    Some(edges)
}

/// Per callback: whether it published in at least half of its runs (it passes its
/// input on itself). A callback that publishes now and then (a partial-synchronous
/// input that sometimes completes the set) still caches for the others.
fn passes_its_input_on(ix: &Index) -> Vec<bool> {
    let m = ix.m;
    (0..m.cb_kind.len())
        .map(|c| {
            let runs = &ix.runs_of_cb[c];
            let publishing = runs.iter().filter(|&&r| !ix.pubs_of_run[r as usize].is_empty()).count();
            !runs.is_empty() && 2 * publishing >= runs.len()
        })
        .collect()
}

/// Edges that annotations declare.
fn annotated_edges(ix: &Index) -> HashSet<(i64, i64)> {
    let m = ix.m;
    let mut edges = HashSet::new();
    for a in &m.annotations {
        let sub_cbs: Vec<i64> = a.subs.iter().flat_map(|s| ix.sub_callbacks(*s)).copied().collect();
        match a.kind {
            AnnotationKind::PeriodicAsync => {
                for t in timer_callbacks_publishing(m, ix, &a.pubs) {
                    for &s in &sub_cbs {
                        edges.insert((s, t));
                    }
                }
            }
            AnnotationKind::PartialSync => {
                for &s1 in &sub_cbs {
                    for &s2 in sub_cbs.iter().filter(|&&c| c != s1) {
                        edges.insert((s1, s2));
                    }
                }
            }
        }
    }
    edges
}

/// The timer callbacks from whose runs the publishers published.
fn timer_callbacks_publishing(m: &Model, ix: &Index, publishers: &[i64]) -> Vec<i64> {
    let mut seen: HashSet<i64> = HashSet::new();
    for &pu in publishers {
        for &p in &ix.pubs_of_publisher[pu as usize] {
            let r = m.pb_run[p as usize];
            if r < 0 {
                continue;
            }
            let c = m.run_cb[r as usize];
            if c >= 0 && m.cb_kind[c as usize] == CallbackKind::Timer {
                seen.insert(c);
            }
        }
    }
    let mut out: Vec<i64> = seen.into_iter().collect();
    out.sort_unstable();
    out
}
