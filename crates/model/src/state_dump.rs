//! State dumps (`roscope_ros1:state_dump_begin/end`, `roscope_ros2:...`):
//! when a session starts while a process runs, roscope's tracers re-emit the
//! init events of its live objects between the two, in one thread
//! (docs/ros1-tracer.md, "Attaching"). The model takes them as it takes init
//! events: an object already known from its own init event stays one object;
//! one named only by the dump is marked `dumped`.

use roscope_ctf::TraceSet;

use crate::builder::{Builder, Event, Handler};
use crate::events::Ev;
use crate::schema::CallbackKind;

/// The two ends of a tracer's state dump (ROS 1 and ROS 2).
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::R1StateDumpBegin, Builder::dump_begin),
    (Ev::R2StateDumpBegin, Builder::dump_begin),
    (Ev::R1StateDumpEnd, Builder::dump_end),
    (Ev::R2StateDumpEnd, Builder::dump_end),
];

impl Builder {
    fn dump_key(&self, e: &Event) -> (usize, i64, i64) {
        let pr = &self.procs[e.p];
        (pr.host, pr.pid, self.threads[e.th].tid)
    }

    pub(crate) fn dump_begin(&mut self, e: &Event) {
        let k = self.dump_key(e);
        if !self.dumping.contains(&k) {
            self.dumping.push(k);
        }
        self.counts.state_dumps += 1;
    }

    pub(crate) fn dump_end(&mut self, e: &Event) {
        let k = self.dump_key(e);
        self.dumping.retain(|x| *x != k);
    }

    /// Whether a thread of process `p` is in a state dump (for objects made
    /// without an event at hand, e.g. ROS 1 logical nodes).
    pub(crate) fn dumping(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        self.dumping.iter().any(|&(h, pid, _)| h == pr.host && pid == pr.pid)
    }

    /// A host whose runtime events were recorded only from a moment well after its first
    /// init events, e.g. ros2_tracing's dual-session `snapshot/` (init events from launch) and
    /// `runtime/` (from a later moment): one warning per host, with the gap (nothing but init
    /// events was recorded in it).
    pub(crate) fn gap_warnings(&self, set: &TraceSet) -> Vec<String> {
        let mut first: rustc_hash::FxHashMap<usize, (u64, usize, u64, usize)> = Default::default();
        for t in 0..set.traces.len() {
            let (any, rt) = self.spans.get(self.tmap[t]).copied().unwrap_or((u64::MAX, u64::MAX));
            let e = first.entry(self.trace_host(t)).or_insert((u64::MAX, t, u64::MAX, t));
            if any < e.0 {
                (e.0, e.1) = (any, t);
            }
            if rt < e.2 {
                (e.2, e.3) = (rt, t);
            }
        }
        let mut out = vec![];
        for (init, ti, rt, tr) in first.into_values() {
            if rt != u64::MAX && ti != tr && rt > init + 1_000_000_000 {
                out.push(format!(
                    "runtime events were recorded only from {:.3} s after the first init event (trace {} has the \
                     init events from then on, trace {} the runtime events: a dual session, e.g. ros2_tracing's \
                     snapshot/ and runtime/): the callback runs and messages before then are not in the recording",
                    (rt - init) as f64 / 1e9,
                    set.traces[ti].rel,
                    set.traces[tr].rel
                ));
            }
        }
        out
    }

    /// A `*_callback_added` event (see `Registry<Cb>::added`); a callback
    /// first registered by a dump is marked so.
    pub(crate) fn cb_added(&mut self, e: &Event, handle: u64, kind: CallbackKind, owner: usize, ts: u64) -> usize {
        let c = self.objs.cbs.added(e.p, handle, kind, owner, ts);
        let cb = &mut self.objs.cbs[c];
        cb.dumped |= e.dump && !cb.known;
        c
    }
}
