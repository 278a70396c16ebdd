//! A data-flow search's options as its caller states them (`SearchSpec`: what
//! `roscope.flow.FlowRequest` holds), checked against the model and made into
//! the search's `FlowOptions`: the implicit intra-node edges from the trace's
//! facts and a dependency file, and the overlaps that can make a flow uncertain.

use std::collections::HashSet;

use crate::dataflow::FlowOptions;
use crate::implicit::{implicit_edges_from, Deps, Facts, FallbackRule, Implicit};
use crate::index::Index;
use crate::model::Model;

/// The options of a search, by topic and callback position of the model.
pub struct SearchSpec<'a> {
    pub is_input: &'a [bool],
    pub is_output: &'a [bool],
    /// An implicit-dependency mode (`Implicit::NAMES`) and a fallback rule (`FallbackRule::NAMES`).
    pub implicit: &'a str,
    pub fallback: &'a str,
    pub exact_links: bool,
    pub max_flows_per_output: Option<usize>,
    pub max_flows: Option<usize>,
    pub all_paths: bool,
    pub excluded_topics: Option<&'a [bool]>,
    pub excluded_callbacks: Option<&'a [bool]>,
    /// A dependency file's edges (callback pairs), the callbacks it matched, and those it could not see publish.
    pub deps: Option<&'a [(i64, i64)]>,
    pub deps_callbacks: Option<&'a [i64]>,
    pub deps_unseen: Option<&'a [i64]>,
    /// Runs overlapped by another callback's on another thread: (callback, callback, start).
    pub overlaps: Option<&'a [(i64, i64, i64)]>,
    pub drop_uncertain: bool,
}

/// `spec` checked against model `m` (any slice of it: only its callbacks and topics
/// are read), with the implicit edges of the whole trace's `facts` (None: `m`'s own,
/// when it is the whole model). Err: what is wrong, for the caller to say.
pub fn search_options(m: &Model, facts: Option<&Facts>, spec: &SearchSpec) -> Result<FlowOptions, String> {
    let (nt, nc) = (m.n_topics(), m.cb_label.len());
    if spec.is_input.len() != nt || spec.is_output.len() != nt || spec.excluded_topics.is_some_and(|v| v.len() != nt) {
        return Err("topic masks must have one entry per topic".into());
    }
    if spec.excluded_callbacks.is_some_and(|v| v.len() != nc) {
        return Err("callback masks must have one entry per callback".into());
    }
    let bad_edge = |&&(a, b): &&(i64, i64)| a < 0 || b < 0 || a as usize >= nc || b as usize >= nc;
    if let Some(&(a, b)) = spec.deps.iter().copied().flatten().find(bad_edge) {
        return Err(format!("dependency edge ({}, {}) names a callback the model does not have", a, b));
    }
    if let Some(&c) = spec.deps_callbacks.iter().chain(spec.deps_unseen.iter()).copied().flatten().find(|&&c| c < 0 || c as usize >= nc) {
        return Err(format!("dependency file callback {} is not a callback of the model", c));
    }
    let mode = Implicit::parse(spec.implicit)
        .ok_or_else(|| format!("unknown implicit-dependency mode {:?} (one of {})", spec.implicit, Implicit::NAMES.join(", ")))?;
    let rule = FallbackRule::parse(spec.fallback)
        .ok_or_else(|| format!("unknown fallback rule {:?} (one of {})", spec.fallback, FallbackRule::NAMES.join(", ")))?;
    let ix = Index::new(m);
    let own;
    let facts = match facts {
        Some(f) => f,
        None => {
            own = Facts::of(&ix);
            &own
        }
    };
    // The nodes the dependency file describes: those of every callback it matched
    // (a node whose callbacks it matched but found independent gets no fallback edge).
    let described: HashSet<i64> = spec
        .deps
        .iter()
        .copied()
        .flatten()
        .flat_map(|&(a, b)| [a, b])
        .chain(spec.deps_callbacks.iter().copied().flatten().copied())
        .map(|c| m.cb_node[c as usize])
        .collect();
    let unseen: HashSet<i64> = spec.deps_unseen.iter().copied().flatten().copied().collect();
    let deps = spec.deps.map(|edges| Deps { edges, nodes: &described, unseen: &unseen });
    let implicit = implicit_edges_from(&ix, facts, mode, deps, rule);
    let mut o = FlowOptions {
        exact_links: spec.exact_links,
        max_flows_per_output: spec.max_flows_per_output.unwrap_or(usize::MAX),
        max_flows: spec.max_flows.unwrap_or(usize::MAX),
        all_paths: spec.all_paths,
        excluded_topic: spec.excluded_topics.map(<[bool]>::to_vec).unwrap_or_default(),
        excluded_cb: spec.excluded_callbacks.map(<[bool]>::to_vec).unwrap_or_default(),
        drop_uncertain: spec.drop_uncertain,
        ..FlowOptions::new(spec.is_input.to_vec(), spec.is_output.to_vec(), implicit)
    };
    // Only the overlaps of an intra-node edge can make a flow uncertain.
    o.overlaps = spec.overlaps.iter().copied().flatten().copied().filter(|&(a, b, _)| o.depends_on(m, a, b)).collect();
    Ok(o)
}
