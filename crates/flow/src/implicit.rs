//! Implicit (intra-node) dependencies between callbacks, for Algorithm 1's D_cc.

use std::collections::{HashMap, HashSet};

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
/// trace: edges between callback ids, and the nodes the file describes; `unseen`: the
/// callbacks it cannot vouch for (it saw no publication of theirs but could not see
/// all their code, or the trace shows them publishing where it saw none): in a node
/// it describes, they keep the fallback edges they would have without the file.
#[derive(Clone, Copy)]
pub struct Deps<'a> {
    pub edges: &'a [(i64, i64)],
    pub nodes: &'a HashSet<i64>,
    pub unseen: &'a HashSet<i64>,
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
    implicit_edges_from(ix, &Facts::of(ix), mode, deps, rule)
}

/// What the rules of `implicit_edges_from` read from the runs and publications of
/// the whole trace. A slice of the model (docs/analyses.md, "Slices") holds only
/// part of them: its search takes the facts of the whole trace, counted apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// Per callback: it published in at least half of its runs (it passes its input
    /// on itself). A callback that publishes now and then (a partial-synchronous
    /// input that sometimes completes the set) still caches for the others.
    pub passes_on: Vec<bool>,
    /// Per publisher: the timer callbacks from whose runs it published, in order.
    pub timers_of_publisher: HashMap<i64, Vec<i64>>,
}

impl Facts {
    /// The facts of the model `ix` indexes.
    pub fn of(ix: &Index) -> Facts {
        let m = ix.m;
        let passes_on = (0..m.cb_kind.len())
            .map(|c| {
                let runs = &ix.runs_of_cb[c];
                let publishing = runs.iter().filter(|&&r| !ix.pubs_of_run[r as usize].is_empty()).count();
                (runs.len(), publishing)
            })
            .map(|(runs, publishing)| runs > 0 && 2 * publishing >= runs)
            .collect();
        let pairs = m.pb_publisher.iter().zip(&m.pb_run).filter(|&(&pu, &r)| pu >= 0 && r >= 0).map(|(&pu, &r)| (pu, m.run_cb[r as usize]));
        Facts { passes_on, timers_of_publisher: timers(m, pairs) }
    }

    /// The facts from counts made elsewhere (e.g. by SQL over the database): per
    /// callback id, its runs and the runs in which it published; and every
    /// (publisher, callback) pair such that a run of the callback published on it.
    pub fn from_counts(m: &Model, runs: &[(i64, i64, i64)], published: &[(i64, i64)]) -> Facts {
        let mut passes_on = vec![false; m.cb_kind.len()];
        for &(c, n, publishing) in runs {
            if c >= 0 && (c as usize) < passes_on.len() {
                passes_on[c as usize] = n > 0 && 2 * publishing >= n;
            }
        }
        Facts { passes_on, timers_of_publisher: timers(m, published.iter().copied()) }
    }
}

/// Per publisher, the timer callbacks among `pairs` (publisher, callback), sorted.
fn timers(m: &Model, pairs: impl Iterator<Item = (i64, i64)>) -> HashMap<i64, Vec<i64>> {
    let mut out: HashMap<i64, Vec<i64>> = HashMap::new();
    for (pu, c) in pairs {
        if c >= 0 && (c as usize) < m.cb_kind.len() && m.cb_kind[c as usize] == CallbackKind::Timer {
            out.entry(pu).or_default().push(c);
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    out
}

/// `implicit_edges_with`, from the facts of the whole trace (`Facts`).
pub fn implicit_edges_from(ix: &Index, facts: &Facts, mode: Implicit, deps: Option<Deps>, rule: FallbackRule) -> Option<ImplicitEdges> {
    let m = ix.m;
    if mode == Implicit::All && deps.is_none() {
        return None;
    }
    let mut edges: ImplicitEdges = match mode {
        Implicit::None => ImplicitEdges::new(),
        _ => annotated_edges(ix, facts).into_iter().map(|e| (e, EdgeSource::Annotation)).collect(),
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
    let no_unseen = HashSet::new();
    let unseen = deps.map_or(&no_unseen, |d| d.unseen);
    if let Some(Deps { edges: deps_edges, nodes: deps_nodes, .. }) = deps {
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
    let passes_on = &facts.passes_on;
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
        // In a node the file describes, the callbacks it cannot vouch for keep their fallback edges.
        let only_unseen = !fallback
            && described.contains(node)
            && !annotated_nodes.contains(node)
            && matches!(mode, Implicit::All | Implicit::Auto)
            && cbs.iter().any(|c| unseen.contains(c));
        if !fallback && !only_unseen {
            continue;
        }
        for &a in cbs.iter().filter(|&&c| every || runnable(c)) {
            for &b in cbs.iter().filter(|&&c| (every || runnable(c)) && c != a && (every || allowed(a, c))) {
                if only_unseen && !unseen.contains(&a) && !unseen.contains(&b) {
                    continue;
                }
                edges.entry((a, b)).or_insert(EdgeSource::Fallback);
            }
        }
    }
    Some(edges)
}

/// Edges that annotations declare.
fn annotated_edges(ix: &Index, facts: &Facts) -> HashSet<(i64, i64)> {
    let m = ix.m;
    let mut edges = HashSet::new();
    for a in &m.annotations {
        let sub_cbs: Vec<i64> = a.subs.iter().flat_map(|s| ix.sub_callbacks(*s)).copied().collect();
        match a.kind {
            AnnotationKind::PeriodicAsync => {
                for t in timer_callbacks_publishing(facts, &a.pubs) {
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
fn timer_callbacks_publishing(facts: &Facts, publishers: &[i64]) -> Vec<i64> {
    let mut out: Vec<i64> = publishers.iter().flat_map(|pu| facts.timers_of_publisher.get(pu)).flatten().copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}
