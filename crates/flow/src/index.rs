//! Indexes derived once from the model, shared by every flow algorithm.

use std::collections::HashMap;

use crate::model::{AnnotationKind, Model, NONE};

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
    pub ann_of_pub: HashMap<(i64, AnnotationKind), usize>,
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
        for (a, ann) in m.annotations.iter().enumerate() {
            for &p in &ann.pubs {
                ann_of_pub.insert((p, ann.kind), a);
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

    pub fn sub_callbacks(&self, sub: i64) -> &[i64] {
        self.cbs_of_sub.get(&sub).map(|v| v.as_slice()).unwrap_or(&[])
    }
}
