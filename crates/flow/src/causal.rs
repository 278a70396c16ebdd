//! Causal links: which published messages caused which (message-flow paper IV-B).
//!
//! - direct: published during the subscription callback run that received the input
//!   (or the service or client callback run: a request or response is its input);
//! - periodic asynchronous: a timer callback's output, from the latest message each
//!   annotated input's callback received before the timer fired;
//! - partial synchronous: a subscription callback's output, from the latest message of
//!   each annotated input since the group's previous output;
//! - inferred (no annotation; `Policy`): a timer callback's output, from the latest
//!   completed run of each subscription callback of the same node.

use std::collections::HashMap;

use crate::dataflow::Window;
use crate::index::Index;
use crate::model::{takes_input, AnnotationKind, CallbackKind};

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

/// How an input message caused an output message (the schema's code table `causal_link_kind`).
pub use roscope_model::schema::CausalLinkKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CausalLink {
    pub in_pub: i64,
    /// The subscription callback run that received the input.
    pub in_run: i64,
    pub out_pub: i64,
    pub kind: CausalLinkKind,
}

/// Every causal link of the model.
pub fn causal_links(ix: &Index, policy: Policy) -> Vec<CausalLink> {
    causal_links_in(ix, policy, &Window::all(), &mut CausalState::default()).0
}

/// What the causal links of one slice of a model hand to the next
/// (`causal_links_in`): per partial-synchronous annotation, the time of its last output.
#[derive(Default, Clone, Debug)]
pub struct CausalState {
    last_output: HashMap<usize, i64>,
}

/// The causal links whose output publications are those of window `w` (their time
/// from `w.out_from` to `w.out_to`), in a slice of the model (`Window`), in
/// publication time order. Stops at the first publication whose links may need
/// more than the slice holds, and returns it (time, publication): the next slice
/// starts there and reaches further back.
pub fn causal_links_in(ix: &Index, policy: Policy, w: &Window, st: &mut CausalState) -> (Vec<CausalLink>, Option<(i64, i64)>) {
    let m = ix.m;
    let mut out = Vec::new();
    // Publications in time order, so that partial-sync resets follow the outputs.
    let mut order: Vec<i64> = (0..m.pb_ts.len() as i64).filter(|&p| w.outputs(m.pb_ts[p as usize], p)).collect();
    order.sort_by_key(|&p| (m.pb_ts[p as usize], p));
    for p in order {
        let before = out.len();
        match links_of(ix, policy, w, st, p, &mut out) {
            Links::Done => {}
            Links::Reset(a, t) => {
                st.last_output.insert(a, t);
            }
            Links::Unsure => {
                out.truncate(before);
                return (out, Some((m.pb_ts[p as usize], p)));
            }
        }
    }
    (out, None)
}

/// What `links_of` did with one publication.
enum Links {
    /// Its links were added.
    Done,
    /// Its links were added, and it is the new last output of a partial-synchronous
    /// group (annotation, time).
    Reset(usize, i64),
    /// The slice may not hold what its links need (`Window`): nothing was added.
    Unsure,
}

/// The causal links of publication `p`, added to `out`.
fn links_of(ix: &Index, policy: Policy, w: &Window, st: &CausalState, p: i64, out: &mut Vec<CausalLink>) -> Links {
    let m = ix.m;
    let last_output = &st.last_output;
    // A lookup among callback `c`'s runs gave `found`: could the whole model give another?
    let unsure = |c: i64, found: Option<i64>| w.lookup_unsure(w.lo_of_cb(c), found.map(|x| m.run_start[x as usize]));
    let pu = p as usize;
    let r = m.pb_run[pu];
    if r < 0 {
        return Links::Done;
    }
    let ru = r as usize;
    let cb = m.run_cb[ru];
    if cb < 0 {
        return Links::Done;
    }
    // The run's own input and lookups start from its start: before the slice,
    // they may not be there.
    if w.lookup_unsure(w.lo_of_cb(cb), Some(m.run_start[ru])) {
        return Links::Unsure;
    }
    let publisher = m.pb_publisher[pu];
    let kind = m.cb_kind[cb as usize];
    let t_run = m.run_start[ru];
    if kind == CallbackKind::Subscription {
        let ann = if publisher >= 0 { ix.ann_of_pub.get(&(publisher, AnnotationKind::PartialSync)).copied() } else { None };
        let sub = m.cb_sub[cb as usize];
        match ann.filter(|&a| m.annotations[a].subs.contains(&sub)) {
            Some(a) => {
                // Partial synchronous: the latest message of each input since the
                // group's previous output (the caches were reset then).
                let since = last_output.get(&a).copied().unwrap_or(i64::MIN);
                for &s in &m.annotations[a].subs {
                    let mut best: Option<i64> = None;
                    for &c in ix.sub_callbacks(s) {
                        let cand = if c == cb { Some(r) } else { ix.latest_run_before(c, t_run + 1, false) };
                        // What the slice lacks is older than its start: it matters
                        // only if the group's last output is older still.
                        if c != cb && since < w.lo_of_cb(c) && unsure(c, cand) {
                            return Links::Unsure;
                        }
                        if let Some(x) = cand {
                            if m.run_start[x as usize] > since && best.is_none_or(|b| m.run_start[x as usize] > m.run_start[b as usize]) {
                                best = Some(x);
                            }
                        }
                    }
                    if let Some(x) = best {
                        let inp = ix.input_of_run[x as usize];
                        if inp >= 0 {
                            out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: CausalLinkKind::PartialSync });
                        }
                    }
                }
                return Links::Reset(a, t_run);
            }
            None => {
                let inp = ix.input_of_run[ru];
                if inp >= 0 {
                    out.push(CausalLink { in_pub: inp, in_run: r, out_pub: p, kind: CausalLinkKind::Direct });
                }
            }
        }
    } else if takes_input(kind) {
        // A service or client callback: its request or response caused what it published.
        let inp = ix.input_of_run[ru];
        if inp >= 0 {
            out.push(CausalLink { in_pub: inp, in_run: r, out_pub: p, kind: CausalLinkKind::Direct });
        }
    } else if kind == CallbackKind::Timer {
        let ann = if publisher >= 0 { ix.ann_of_pub.get(&(publisher, AnnotationKind::PeriodicAsync)).copied() } else { None };
        match ann {
            Some(a) => {
                // Periodic asynchronous: the latest message cached by each input.
                for &s in &m.annotations[a].subs {
                    let mut best: Option<i64> = None;
                    for &c in ix.sub_callbacks(s) {
                        let found = ix.latest_run_before(c, t_run, false);
                        if unsure(c, found) {
                            return Links::Unsure;
                        }
                        if found.is_some_and(|x| best.is_none_or(|b| m.run_start[x as usize] >= m.run_start[b as usize])) {
                            best = found;
                        }
                    }
                    if let Some(x) = best {
                        let inp = ix.input_of_run[x as usize];
                        if inp >= 0 {
                            out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: CausalLinkKind::PeriodicAsync });
                        }
                    }
                }
            }
            None if policy.infer_timer_inputs => {
                // Inferred: the latest completed run of each subscription callback
                // of the same node.
                let node = m.cb_node[cb as usize];
                if node < 0 {
                    return Links::Done;
                }
                if let Some(cbs) = ix.cbs_of_node.get(&node) {
                    for &c in cbs {
                        if m.cb_kind[c as usize] != CallbackKind::Subscription {
                            continue;
                        }
                        let found = ix.latest_run_before(c, t_run, true);
                        if unsure(c, found) {
                            return Links::Unsure;
                        }
                        if let Some(x) = found {
                            let inp = ix.input_of_run[x as usize];
                            // A node's own messages that it also receives (/tf-style)
                            // are not inputs of its outputs.
                            let from_self = inp >= 0 && {
                                let pu = m.pb_publisher[inp as usize];
                                pu >= 0 && m.pub_node[pu as usize] == node
                            };
                            if inp >= 0 && !from_self {
                                out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: CausalLinkKind::Inferred });
                            }
                        }
                    }
                }
            }
            None => {}
        }
    }
    Links::Done
}
