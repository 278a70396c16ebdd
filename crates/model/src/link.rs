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
//!
//! A `Linker` holds what matching needs of the publications: it is given
//! each publication once it is final, and then links each take once the take
//! is final. A whole-trace build gives it every publication, then every take.
//! A streaming build (`Options::window_ns`) does so chunk by chunk, and
//! `prune` drops the publications older than what a take may still match,
//! so the Linker's memory is bounded by `LINK_WINDOW_NS`, not by the trace.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, VecDeque};

use rustc_hash::FxHashMap;

use crate::builder::Builder;
use crate::objects::{Link, Publication, StampSource, Take};
use crate::schema::LinkMethod;

/// The heuristic link's window: the DDS source stamp is taken just after
/// `rmw_publish`, so the publication is the one whose wall time is nearest
/// the stamp, at most this far (ns).
pub const HEURISTIC_WINDOW_NS: u64 = 5_000_000;

/// A streaming build links a take to a publication at most this much older
/// (ns): the time a message may spend in transport and in its queue.
pub const LINK_WINDOW_NS: u64 = 10_000_000_000;

/// A publication as matching sees it: id, time, where its stamp came from.
type Cand = (usize, u64, Option<StampSource>);

/// A publication without a stamp, as `prune` finds it again: (time in the
/// merged order, (host, topic), (wall time, id)).
type WallEntry = (i64, (usize, u32), (i64, usize));

#[derive(Default)]
pub struct Linker {
    /// Topic names, numbered.
    topics: FxHashMap<String, u32>,
    /// (topic, source stamp) -> the first publication with it...
    by_stamp: FxHashMap<(u32, i64), Cand>,
    /// ... and the later ones, in id order (duplicate stamps are rare: no
    /// list per publication).
    dup_stamp: FxHashMap<(u32, i64), Vec<Cand>>,
    /// (host, topic) -> (wall time, id) of publications without a stamp.
    by_wall: FxHashMap<(usize, u32), BTreeSet<(i64, usize)>>,
    /// (time in the merged order, key) of the publications in `by_stamp`, in
    /// the order added, for `prune` (apart from the larger `by_wall` keys:
    /// this is most of the linker's memory).
    added_stamp: VecDeque<(i64, (u32, i64))>,
    /// (time in the merged order, key, entry) of those in `by_wall`, likewise.
    added_wall: VecDeque<WallEntry>,
}

impl Linker {
    /// The topic's number (a name is copied once, when first seen).
    fn topic(&mut self, name: &str) -> u32 {
        if let Some(&t) = self.topics.get(name) {
            return t;
        }
        let n = self.topics.len() as u32;
        self.topics.insert(name.to_owned(), n);
        n
    }

    /// How many publications it holds.
    pub fn held(&self) -> usize {
        self.added_stamp.len() + self.added_wall.len()
    }

    /// Forgets the publications older than `before` (ns, in the merged
    /// order's terms: a trace's time plus its clock offset).
    pub fn prune(&mut self, before: i64) {
        while self.added_stamp.front().is_some_and(|(ts, _)| *ts < before) {
            let Some((_, k)) = self.added_stamp.pop_front() else { break };
            match self.dup_stamp.get_mut(&k) {
                Some(v) => {
                    let next = v.remove(0);
                    if v.is_empty() {
                        self.dup_stamp.remove(&k);
                    }
                    self.by_stamp.insert(k, next);
                }
                None => {
                    self.by_stamp.remove(&k);
                }
            }
        }
        while self.added_wall.front().is_some_and(|(ts, ..)| *ts < before) {
            let Some((_, k, x)) = self.added_wall.pop_front() else { break };
            if let Some(s) = self.by_wall.get_mut(&k) {
                s.remove(&x);
                if s.is_empty() {
                    self.by_wall.remove(&k);
                }
            }
        }
    }
}

impl Builder {
    fn topic_of_pub(&self, pb: &Publication) -> Option<&str> {
        pb.publisher.and_then(|i| self.objs.pubs[i].name.as_deref())
    }

    fn topic_of_take(&self, t: &Take) -> Option<&str> {
        t.sub.and_then(|i| self.objs.subs[i].name.as_deref())
    }

    fn host_of(&self, thread: usize) -> usize {
        self.procs[self.threads[thread].proc].host
    }

    /// Makes a final publication matchable.
    pub(crate) fn add_publication(&self, lk: &mut Linker, i: usize, pb: &Publication) {
        let Some(topic) = self.topic_of_pub(pb) else { return };
        let topic = lk.topic(topic);
        if let Some(st) = pb.src_ts {
            let key = (topic, st);
            let c = (i, pb.ts, pb.src_from);
            match lk.by_stamp.entry(key) {
                Entry::Vacant(e) => {
                    e.insert(c);
                }
                Entry::Occupied(_) => lk.dup_stamp.entry(key).or_default().push(c),
            }
            lk.added_stamp.push_back((self.merged_ts(pb.ts, pb.thread), key));
        } else if (!pb.intra || pb.inter) && self.opts.heuristics {
            let trace = self.procs[self.threads[pb.thread].proc].trace;
            let wall = self.clock_offset(trace).wrapping_add(pb.rmw_ts.unwrap_or(pb.ts) as i64);
            let key = (self.host_of(pb.thread), topic);
            lk.by_wall.entry(key).or_default().insert((wall, i));
            lk.added_wall.push_back((self.merged_ts(pb.ts, pb.thread), key, (wall, i)));
        }
    }

    /// The link of a final take, if any: exact first, then heuristic.
    pub(crate) fn link_take(&self, lk: &Linker, ti: usize, t: &Take) -> Option<Link> {
        if let Some(pi) = t.publication.or_else(|| t.r1_rx.and_then(|i| self.r1.resolve(i))) {
            let method = t.method.unwrap_or(LinkMethod::IntraRingBuffer);
            return Some(Link { publication: pi, take: Some(ti), run: t.run, method });
        }
        if t.intra || !t.taken {
            return None;
        }
        let (Some(st), Some(topic)) = (t.src_ts, self.topic_of_take(t)) else { return None };
        let key = (*lk.topics.get(topic)?, st);
        if let Some(first) = lk.by_stamp.get(&key) {
            // Normally one; with duplicates, the latest not after the take.
            let dups = lk.dup_stamp.get(&key).map_or(&[][..], |v| v.as_slice());
            let best = std::iter::once(first).chain(dups).filter(|c| c.1 <= t.ts).max_by_key(|c| c.1).or(Some(first));
            if let Some(&(pi, _, from)) = best {
                // CARET's stamp on either side (Humble + CARET: the publication's
                // stamp is CARET's `dds_bind_addr_to_stamp`, the take's `rmw_take`).
                let caret = t.method == Some(LinkMethod::CaretSourceStamp) || from == Some(StampSource::Caret);
                let method = match from {
                    _ if caret => LinkMethod::CaretSourceStamp,
                    Some(StampSource::DdsWrite) => LinkMethod::DdsWriteStamp,
                    _ => LinkMethod::RmwTimestamp,
                };
                return Some(Link { publication: pi, take: Some(ti), run: t.run, method });
            }
        }
        if !self.opts.heuristics {
            return None;
        }
        // The publication on the topic, on the same host, whose wall time
        // (`rmw_ts`, else `ts`, plus the clock offset) is nearest the stamp.
        let (topic, st) = key;
        let v = lk.by_wall.get(&(self.host_of(t.thread), topic))?;
        let before = v.range(..=(st, usize::MAX)).next_back();
        let after = v.range((st.saturating_add(1), 0)..).next();
        let &(w, pi) = [before, after].into_iter().flatten().min_by_key(|(w, _)| (st - *w).unsigned_abs())?;
        ((st - w).unsigned_abs() <= HEURISTIC_WINDOW_NS).then_some(Link {
            publication: pi,
            take: Some(ti),
            run: t.run,
            method: LinkMethod::HeuristicWallClock,
        })
    }

    /// Every transport link of a whole-trace build, in take order.
    pub(crate) fn link(&self) -> Vec<Link> {
        let mut lk = Linker::default();
        for (i, pb) in self.publications.iter() {
            self.add_publication(&mut lk, i, pb);
        }
        self.takes.iter().filter_map(|(ti, t)| self.link_take(&lk, ti, t)).collect()
    }
}
