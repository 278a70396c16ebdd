//! One message's flow graph, forward and backward (message-flow paper IV-C).

use std::collections::{HashMap, HashSet};

use crate::causal::CausalLink;
use crate::index::Index;
use crate::model::Kind;

/// One message's flow graph: publications and runs reached from `start`
/// forward (`forward`) or backward, with the edges that reach them.
/// Edges: (from, to, kind) over nodes "p<id>" (publication) / "r<id>" (run):
/// kinds "transport", "published_in", and the causal kinds.
#[derive(Default, Debug)]
pub struct Graph {
    pub pubs: Vec<i64>,
    pub runs: Vec<i64>,
    pub edges: Vec<(Kind, i64, Kind, i64, &'static str)>,
}

pub fn message_graph(ix: &Index, links: &[CausalLink], start_pub: i64, forward: bool, backward: bool) -> Graph {
    let m = ix.m;
    let mut by_in: HashMap<i64, Vec<usize>> = HashMap::new();
    let mut by_out: HashMap<i64, Vec<usize>> = HashMap::new();
    for (k, l) in links.iter().enumerate() {
        by_in.entry(l.in_pub).or_default().push(k);
        by_out.entry(l.out_pub).or_default().push(k);
    }
    let node_of_pub = |p: i64| m.node_of_pub(p);
    let node_of_run = |r: i64| m.node_of_run(r);
    let mut g = Graph::default();
    let mut seen_p: HashSet<i64> = HashSet::new();
    let mut seen_r: HashSet<i64> = HashSet::new();
    let mut edges: HashSet<(Kind, i64, Kind, i64, &'static str)> = HashSet::new();
    seen_p.insert(start_pub);
    if forward {
        let mut stack = vec![start_pub];
        while let Some(p) = stack.pop() {
            for &r in &ix.runs_of_pub[p as usize] {
                // A node receiving its own message (e.g. /tf): not a flow segment.
                if node_of_run(r) == node_of_pub(p) && node_of_run(r) >= 0 {
                    continue;
                }
                edges.insert((Kind::Pub, p, Kind::Run, r, "transport"));
                seen_r.insert(r);
            }
            for &k in by_in.get(&p).map(|v| v.as_slice()).unwrap_or(&[]) {
                let l = links[k];
                if node_of_run(l.in_run) == node_of_pub(p) && node_of_run(l.in_run) >= 0 {
                    continue;
                }
                edges.insert((Kind::Run, l.in_run, Kind::Pub, l.out_pub, l.kind.name()));
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
                edges.insert((Kind::Run, r, Kind::Pub, p, "published_in"));
                seen_r.insert(r);
            }
            for &k in by_out.get(&p).map(|v| v.as_slice()).unwrap_or(&[]) {
                let l = links[k];
                if node_of_run(l.in_run) == node_of_pub(l.in_pub) && node_of_run(l.in_run) >= 0 {
                    continue;
                }
                edges.insert((Kind::Run, l.in_run, Kind::Pub, p, l.kind.name()));
                edges.insert((Kind::Pub, l.in_pub, Kind::Run, l.in_run, "transport"));
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
