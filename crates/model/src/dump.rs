//! State dumps (`roscope_ros1:state_dump_begin/end`, `roscope_ros2:...`):
//! when a session starts while a process runs, roscope's tracers re-emit the
//! init events of its live objects between the two, in one thread
//! (docs/ros1-tracer.md, "Attaching"). The model takes them as it takes init
//! events: an object already known from its own init event stays one object;
//! one named only by the dump is marked `dumped`.

use crate::builder::{Builder, Event};
use crate::schema::CallbackKind;

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

    /// A `*_callback_added` event (see `Registry<Cb>::added`); a callback
    /// first registered by a dump is marked so.
    pub(crate) fn cb_added(&mut self, e: &Event, handle: u64, kind: CallbackKind, owner: usize, ts: u64) -> usize {
        let c = self.objs.cbs.added(e.p, handle, kind, owner, ts);
        let cb = &mut self.objs.cbs[c];
        cb.dumped |= e.dump && !cb.known;
        c
    }
}
