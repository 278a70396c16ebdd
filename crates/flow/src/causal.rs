//! Causal links: which published messages caused which (message-flow paper IV-B).
//!
//! - direct: published during the subscription callback run that received the input;
//! - periodic asynchronous: a timer callback's output, from the latest message each
//!   annotated input's callback received before the timer fired;
//! - partial synchronous: a subscription callback's output, from the latest message of
//!   each annotated input since the group's previous output;
//! - inferred (no annotation; `Policy`): a timer callback's output, from the latest
//!   completed run of each subscription callback of the same node.

use std::collections::HashMap;

use crate::index::Index;
use crate::model::{AnnotationKind, CallbackKind};

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
                            if let Some(x) = cand {
                                if m.run_start[x as usize] > since && best.is_none_or(|b| m.run_start[x as usize] > m.run_start[b as usize])
                                {
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
                    last_output.insert(a, t_run);
                }
                None => {
                    let inp = ix.input_of_run[ru];
                    if inp >= 0 {
                        out.push(CausalLink { in_pub: inp, in_run: r, out_pub: p, kind: CausalLinkKind::Direct });
                    }
                }
            }
        } else if kind == CallbackKind::Timer {
            let ann = if publisher >= 0 { ix.ann_of_pub.get(&(publisher, AnnotationKind::PeriodicAsync)).copied() } else { None };
            match ann {
                Some(a) => {
                    // Periodic asynchronous: the latest message cached by each input.
                    for &s in &m.annotations[a].subs {
                        let best = ix
                            .sub_callbacks(s)
                            .iter()
                            .filter_map(|&c| ix.latest_run_before(c, t_run, false))
                            .max_by_key(|&x| m.run_start[x as usize]);
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
                        continue;
                    }
                    if let Some(cbs) = ix.cbs_of_node.get(&node) {
                        for &c in cbs {
                            if m.cb_kind[c as usize] != CallbackKind::Subscription {
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
                                    out.push(CausalLink { in_pub: inp, in_run: x, out_pub: p, kind: CausalLinkKind::Inferred });
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
