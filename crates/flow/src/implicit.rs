//! Implicit (intra-node) dependencies between callbacks, for Algorithm 1's D_cc.

use std::collections::HashSet;

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

/// The implicit edges (from callback, to callback) of `mode`; `None` stands for
/// every pair of distinct callbacks of a node (`FlowOptions::implicit`).
pub fn implicit_edges(ix: &Index, mode: Implicit) -> Option<HashSet<(i64, i64)>> {
    let m = ix.m;
    match mode {
        Implicit::All => None,
        Implicit::None => Some(HashSet::new()),
        Implicit::Annotations => Some(annotated_edges(ix)),
        Implicit::Auto => {
            let mut edges = annotated_edges(ix);
            let annotated_nodes: HashSet<i64> = m
                .annotations
                .iter()
                .flat_map(|a| a.subs.iter())
                .flat_map(|s| ix.sub_callbacks(*s))
                .map(|&c| m.cb_node[c as usize])
                .filter(|&n| n >= 0)
                .collect();
            let runnable = |c: i64| matches!(m.cb_kind[c as usize], CallbackKind::Timer | CallbackKind::Subscription);
            for (node, cbs) in &ix.cbs_of_node {
                if annotated_nodes.contains(node) {
                    continue;
                }
                for &a in cbs.iter().filter(|&&c| runnable(c)) {
                    for &b in cbs.iter().filter(|&&c| runnable(c) && c != a) {
                        edges.insert((a, b));
                    }
                }
            }
            Some(edges)
        }
    }
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
