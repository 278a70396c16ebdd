//! Transport links: each publication to every take (and callback run) it fed.
//!
//! In order of preference (docs/model.md, code table `link_method`):
//! 1. identity: the take itself names its publication (intra-process ring
//!    buffer or message address, ROS 1 connections);
//! 2. source stamp: the publication's DDS source stamp equals the take's,
//!    within a topic (`rmw_timestamp`, `caret_source_stamp` when CARET
//!    gave either stamp, `dds_write_stamp` when the DDS layer's `dds:write`
//!    gave the publication's);
//! 3. heuristic (with `Options::heuristics`): the publishing host's wall
//!    clock as the DDS source stamp, within `HEURISTIC_WINDOW_NS`.

use rustc_hash::FxHashMap;

use crate::builder::Builder;
use crate::objects::{Link, Publication, StampSource, Take};
use crate::schema::LinkMethod;

/// The heuristic link's window: the DDS source stamp is taken just after
/// `rmw_publish`, so the publication is the one whose wall time is nearest
/// the stamp, at most this far (ns).
pub const HEURISTIC_WINDOW_NS: u64 = 5_000_000;

impl Builder {
    fn topic_of_pub(&self, pb: &Publication) -> Option<String> {
        pb.publisher.and_then(|i| self.objs.pubs[i].name.clone())
    }

    fn topic_of_take(&self, t: &Take) -> Option<String> {
        t.sub.and_then(|i| self.objs.subs[i].name.clone())
    }

    /// Every transport link; exact ones first, then heuristic ones.
    pub(crate) fn link(&self) -> Vec<Link> {
        let mut links = Vec::new();
        let mut linked = vec![false; self.takes.len()];
        self.exact_links(&mut links, &mut linked);
        if self.opts.heuristics {
            self.heuristic_links(&mut links, &linked);
        }
        links
    }

    /// Links by identity and by equal source stamps within a topic.
    fn exact_links(&self, links: &mut Vec<Link>, linked: &mut [bool]) {
        let mut by_stamp: FxHashMap<(String, i64), Vec<usize>> = FxHashMap::default();
        for (i, pb) in self.publications.iter().enumerate() {
            if let (Some(st), Some(topic)) = (pb.src_ts, self.topic_of_pub(pb)) {
                by_stamp.entry((topic, st)).or_default().push(i);
            }
        }
        for (ti, t) in self.takes.iter().enumerate() {
            if let Some(pi) = t.publication.or_else(|| t.r1_rx.and_then(|i| self.r1.resolve(i))) {
                let method = t.method.unwrap_or(LinkMethod::IntraRingBuffer);
                links.push(Link { publication: pi, take: Some(ti), run: t.run, method });
                linked[ti] = true;
                continue;
            }
            if t.intra || !t.taken {
                continue;
            }
            let (Some(st), Some(topic)) = (t.src_ts, self.topic_of_take(t)) else { continue };
            let Some(cands) = by_stamp.get(&(topic, st)) else { continue };
            // Normally one; with duplicates, the latest not after the take.
            let best = cands
                .iter()
                .copied()
                .filter(|&c| self.publications[c].ts <= t.ts)
                .max_by_key(|&c| self.publications[c].ts)
                .or(cands.first().copied());
            if let Some(pi) = best {
                // CARET's stamp on either side (Humble + CARET: the publication's
                // stamp is CARET's `dds_bind_addr_to_stamp`, the take's `rmw_take`).
                let caret = t.method == Some(LinkMethod::CaretSourceStamp) || self.publications[pi].src_from == Some(StampSource::Caret);
                let method = match self.publications[pi].src_from {
                    _ if caret => LinkMethod::CaretSourceStamp,
                    Some(StampSource::DdsWrite) => LinkMethod::DdsWriteStamp,
                    _ => LinkMethod::RmwTimestamp,
                };
                links.push(Link { publication: pi, take: Some(ti), run: t.run, method });
                linked[ti] = true;
            }
        }
    }

    /// Heuristic links for takes with a source stamp that no exact link
    /// explains: the publication on the topic, on the same host, whose wall
    /// time (`rmw_ts`, else `ts`, plus the clock offset) is nearest the stamp.
    fn heuristic_links(&self, links: &mut Vec<Link>, linked: &[bool]) {
        let host_of = |thread: usize| self.procs[self.threads[thread].proc].host;
        let mut by_topic: FxHashMap<(usize, String), Vec<(i64, usize)>> = FxHashMap::default();
        for (i, pb) in self.publications.iter().enumerate() {
            if pb.src_ts.is_some() || pb.intra {
                continue;
            }
            if let Some(topic) = self.topic_of_pub(pb) {
                let trace = self.procs[self.threads[pb.thread].proc].trace;
                let wall = self.clock_offset(trace).wrapping_add(pb.rmw_ts.unwrap_or(pb.ts) as i64);
                by_topic.entry((host_of(pb.thread), topic)).or_default().push((wall, i));
            }
        }
        for v in by_topic.values_mut() {
            v.sort();
        }
        for (ti, t) in self.takes.iter().enumerate() {
            if linked[ti] || t.intra || !t.taken {
                continue;
            }
            let (Some(st), Some(topic)) = (t.src_ts, self.topic_of_take(t)) else { continue };
            let Some(v) = by_topic.get(&(host_of(t.thread), topic)) else { continue };
            let k = v.partition_point(|(w, _)| *w <= st);
            let best =
                [k.checked_sub(1), Some(k)].into_iter().flatten().filter_map(|j| v.get(j)).min_by_key(|(w, _)| (st - *w).unsigned_abs());
            if let Some(&(w, pi)) = best {
                if (st - w).unsigned_abs() <= HEURISTIC_WINDOW_NS {
                    links.push(Link { publication: pi, take: Some(ti), run: t.run, method: LinkMethod::HeuristicWallClock });
                }
            }
        }
    }
}
