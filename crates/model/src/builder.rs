//! The builder's core: one pass over the time-ordered events of a trace set.
//!
//! For each event, `Builder::run_event` finds its process instance and thread
//! (with pid reuse), then `dispatch` hands it to the handler of its event
//! family: `ros2.rs` (ROS 2 core), `caret.rs`, `executor.rs`, `groups.rs`,
//! `ros1_bosch.rs`, `ros1_roscope.rs`, `annotations.rs`. Handlers read the
//! event's fields by name through `Event`. At the end, `link.rs` matches
//! publications to takes and `emit.rs` emits the tables.
//!
//! This module also keeps what all families share: processes and threads,
//! and each thread's stack of open callback runs.

use rustc_hash::FxHashMap;

use roscope_ctf::stream::{StreamReader, Val};
use roscope_ctf::summary::{context_positions, static_index};
use roscope_ctf::types::Ty;
use roscope_ctf::TraceSet;

use crate::caret::CaretState;
use crate::events::{classify, Ev, Field, MAX_FIELDS};
use crate::groups::Groups;
use crate::link::Linker;
use crate::objects::{Annotation, ExecState, LeftOut, Objects, Proc, Publication, Run, Take, Thread};
use crate::ros1_bosch::BoschState;
use crate::ros1_roscope::RoscopeState;
use crate::ros2::Ros2State;
use crate::rows::Rows;
use crate::services::ServiceState;
use crate::table::Table;
use crate::{Model, Options, Scope};

/// Progress is shown on stderr every this many events (with `Options::progress`).
const PROGRESS_EVERY_EVENTS: u64 = 1 << 20;
/// The trace set's `Meter` (if any) is updated every this many events.
const METER_EVERY_EVENTS: u64 = 1 << 14;

/// A streaming build emits what left the window every this many events
/// (unless `Options::flush_every` says otherwise).
const FLUSH_EVERY_EVENTS: u64 = 1 << 16;

/// Per (trace, event class): what the event is and where its fields are.
#[derive(Clone, Copy)]
pub struct ClassInfo {
    ev: Ev,
    /// Emitted by CARET (`ros2_caret:*`), which re-emits init events.
    caret: bool,
    /// Static tape indexes (relative to the payload) of the fields named in
    /// `ev.fields()`, in that order.
    ix: [Option<usize>; MAX_FIELDS],
}

/// One event, as its handler sees it: where and when it happened, and its
/// fields by name.
pub struct Event<'a> {
    pub ev: Ev,
    pub ts: u64,
    /// The process instance.
    pub p: usize,
    /// The thread.
    pub th: usize,
    /// Emitted by CARET (`ros2_caret:*`): an init event may repeat an earlier one.
    pub caret: bool,
    /// Part of a state dump (`state_dump.rs`): an init event that may repeat an earlier one.
    pub dump: bool,
    s: &'a StreamReader,
    ix: [Option<usize>; MAX_FIELDS],
}

fn as_u64(v: Option<&Val>) -> Option<u64> {
    match v? {
        Val::U(x) => Some(*x),
        Val::I(x) => Some(*x as u64),
        _ => None,
    }
}

fn as_i64(v: Option<&Val>) -> Option<i64> {
    match v? {
        Val::U(x) => Some(*x as i64),
        Val::I(x) => Some(*x),
        _ => None,
    }
}

impl<'a> Event<'a> {
    #[inline]
    fn val(&self, f: Field) -> Option<&'a Val> {
        debug_assert_eq!(f.ev, self.ev, "field {:?} read from event {:?}", f, self.ev);
        let i = self.ix[f.ix as usize]?;
        self.s.tape.get(self.s.payload_start + i)
    }

    /// An integer field, as u64 (handles, addresses).
    #[inline]
    pub fn u(&self, f: Field) -> Option<u64> {
        as_u64(self.val(f))
    }

    /// An integer field, as i64 (timestamps, periods).
    #[inline]
    pub fn i(&self, f: Field) -> Option<i64> {
        as_i64(self.val(f))
    }

    /// A text field.
    pub fn text(&self, f: Field) -> Option<String> {
        match self.val(f)? {
            Val::Str(off, len) => Some(roscope_ctf::json::text_at(self.s.data(), *off, *len).into_owned()),
            _ => None,
        }
    }

    /// A byte-array field (a GID), as hex.
    pub fn hex(&self, f: Field) -> Option<String> {
        let start = self.s.payload_start + self.ix[f.ix as usize]?;
        let name = self.ev.fields()[f.ix as usize];
        let Some(Ty::Struct(st)) = self.s.md.events[self.s.cur_class].payload.as_ref() else { return None };
        let field = st.fields.iter().find(|x| x.name == name)?;
        let n = match &field.ty {
            Ty::Array { len, .. } => *len as usize,
            _ => return None,
        };
        let mut out = String::with_capacity(n * 2);
        for v in self.s.tape.get(start..start + n)? {
            out.push_str(&format!("{:02x}", as_u64(Some(v))?));
        }
        Some(out)
    }

    /// The values of a sequence or array field of the payload, found by
    /// walking it (fields after a sequence have no static index).
    pub fn seq(&self, name: &str) -> Vec<u64> {
        let Some(Ty::Struct(st)) = self.s.md.events[self.s.cur_class].payload.as_ref() else { return vec![] };
        let tape = &self.s.tape;
        let mut i = self.s.payload_start;
        for f in &st.fields {
            if f.name == name {
                let vals = match &f.ty {
                    Ty::Seq { .. } => match tape.get(i) {
                        Some(Val::Len(n)) => tape.get(i + 1..i + 1 + *n as usize),
                        _ => None,
                    },
                    Ty::Array { len, .. } => tape.get(i..i + *len as usize),
                    _ => None,
                };
                return vals.map(|v| v.iter().filter_map(|x| as_u64(Some(x))).collect()).unwrap_or_default();
            }
            roscope_ctf::stream::skip(&f.ty, tape, &mut i);
        }
        vec![]
    }
}

/// What the metadata tells, resolved once before the first event.
struct TraceInfo {
    /// Per trace: the clock origin's offset to the Unix epoch (ns).
    offsets: Vec<i64>,
    classes: Vec<Vec<Option<ClassInfo>>>,
    /// Per trace, per stream class: tape index of vpid, vtid, procname.
    ctx: Vec<Vec<[Option<usize>; 3]>>,
    /// Per trace, per event class: emitted by roscope's ROS 1 tracer (`roscope_ros1:*`).
    r1: Vec<Vec<bool>>,
    hosts: Vec<String>,
    trace_host: Vec<usize>,
    /// Per trace: `signature` (to match the traces of a live session's next chunk).
    sigs: Vec<u64>,
}

impl TraceInfo {
    fn new(set: &TraceSet) -> TraceInfo {
        let classes = set
            .traces
            .iter()
            .map(|t| {
                t.md.events
                    .iter()
                    .map(|ec| {
                        let ev = classify(&ec.name)?;
                        let mut ix = [None; MAX_FIELDS];
                        for (k, n) in ev.fields().iter().enumerate() {
                            ix[k] = static_index(ec.payload.as_ref(), &[n]);
                        }
                        Some(ClassInfo { ev, caret: ec.name.starts_with("ros2_caret:"), ix })
                    })
                    .collect()
            })
            .collect();
        let mut hosts: Vec<String> = Vec::new();
        let mut trace_host = Vec::new();
        for t in &set.traces {
            let h = t.md.hostname().unwrap_or("unknown").to_string();
            let idx = match hosts.iter().position(|x| *x == h) {
                Some(i) => i,
                None => {
                    hosts.push(h);
                    hosts.len() - 1
                }
            };
            trace_host.push(idx);
        }
        let r1 = set.traces.iter().map(|t| t.md.events.iter().map(|ec| ec.name.starts_with("roscope_ros1:")).collect()).collect();
        let ctx = context_positions(set);
        let sigs = set.traces.iter().zip(&ctx).map(|(t, c)| signature(t, c)).collect();
        TraceInfo { offsets: set.traces.iter().map(|t| t.offset_ns).collect(), classes, ctx, r1, hosts, trace_host, sigs }
    }

    /// Adds the traces of another set (the next chunk of a live session) and
    /// returns, per trace of the set, its index here: a trace whose metadata
    /// reads as one already here (same host, clock offset, event classes and
    /// context layout: the next chunk of the same buffers) keeps that index,
    /// so the info stays as large as the session's distinct traces.
    fn append(&mut self, set: &TraceSet) -> Vec<usize> {
        let more = TraceInfo::new(set);
        let mut map = Vec::with_capacity(set.traces.len());
        for (i, t) in set.traces.iter().enumerate() {
            let sig = signature(t, &more.ctx[i]);
            if let Some(j) = self.sigs.iter().position(|x| *x == sig) {
                map.push(j);
                continue;
            }
            let name = &more.hosts[more.trace_host[i]];
            let idx = match self.hosts.iter().position(|x| x == name) {
                Some(h) => h,
                None => {
                    self.hosts.push(name.clone());
                    self.hosts.len() - 1
                }
            };
            map.push(self.offsets.len());
            self.trace_host.push(idx);
            self.offsets.push(more.offsets[i]);
            self.classes.push(more.classes[i].clone());
            self.ctx.push(more.ctx[i].clone());
            self.r1.push(more.r1[i].clone());
            self.sigs.push(sig);
        }
        map
    }
}

/// What makes two chunks' traces one: host, clock offset, event classes, context layout.
fn signature(t: &roscope_ctf::reader::Trace, ctx: &[[Option<usize>; 3]]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.md.hostname().hash(&mut h);
    t.offset_ns.hash(&mut h);
    for ec in &t.md.events {
        ec.name.hash(&mut h);
    }
    ctx.hash(&mut h);
    h.finish()
}

/// Counters reported in `meta.stats`.
#[derive(Default)]
pub struct Counts {
    pub events: u64,
    pub unmatched_ends: u64,
    pub unmatched_starts: u64,
    /// Events of processes left out as `LeftOut::OtherRecording`.
    pub excluded_events: u64,
    /// Events of processes left out as `LeftOut::NoProcessInit`.
    pub no_init_events: u64,
    /// Streaming: events that would have changed a record already emitted
    /// (it was older than the window).
    pub late_updates: u64,
    /// Streaming: the most records (runs, publications, takes, and the
    /// publications the linker holds) in memory at once.
    pub peak_records: u64,
    /// State dumps read (`state_dump.rs`).
    pub state_dumps: u64,
    /// Runs whose times are their frame's (`roscope_ros2:callback_frame`), and frames that
    /// fit no run (not the thread's run that ended last, or outside its start and end).
    pub frames: u64,
    pub unmatched_frames: u64,
}

/// What the model does with one event: the handler of the family that owns it.
pub(crate) type Handler = fn(&mut Builder, &Event);

/// Every event family's list of its events and their handlers, each in the
/// family's own module: a new family is a module with its state and its list,
/// and a line here.
const FAMILIES: &[&[(Ev, Handler)]] = &[
    crate::ros2::HANDLERS,
    crate::services::HANDLERS,
    crate::state_dump::HANDLERS,
    crate::caret::HANDLERS,
    crate::executor::HANDLERS,
    crate::groups::HANDLERS,
    crate::annotations::HANDLERS,
    crate::ros1_bosch::HANDLERS,
    crate::ros1_roscope::HANDLERS,
];

/// Each event's handler, by `Ev as usize`, from `FAMILIES` (made at compile
/// time: an event listed by two families does not compile).
static HANDLERS: [Option<Handler>; Ev::COUNT] = handler_table();

const fn handler_table() -> [Option<Handler>; Ev::COUNT] {
    let mut t: [Option<Handler>; Ev::COUNT] = [None; Ev::COUNT];
    let mut f = 0;
    while f < FAMILIES.len() {
        let mut i = 0;
        while i < FAMILIES[f].len() {
            let (ev, h) = FAMILIES[f][i];
            assert!(t[ev as usize].is_none(), "an event is listed by two families");
            t[ev as usize] = Some(h);
            i += 1;
        }
        f += 1;
    }
    t
}

pub struct Builder {
    pub opts: Options,
    scope: Scope,
    info: TraceInfo,
    pub procs: Vec<Proc>,
    proc_of: FxHashMap<(usize, i64), usize>,
    pub threads: Vec<Thread>,
    thread_of: FxHashMap<(usize, i64), usize>,
    pub objs: Objects,
    pub ros2: Ros2State,
    pub svc: ServiceState,
    pub caret: CaretState,
    /// CARET's executors and callback groups (groups.rs).
    pub groups: Groups,
    pub bosch: BoschState,
    pub r1: RoscopeState,
    pub annotations: Vec<Annotation>,
    pub runs: Rows<Run>,
    pub publications: Rows<Publication>,
    pub takes: Rows<Take>,
    pub exec_states: Vec<ExecState>,
    /// Streaming: the publications that takes may still match.
    linker: Linker,
    /// Streaming a set of several hosts whose clocks are synchronized (`sync.rs`).
    pub(crate) two_pass: crate::sync::TwoPass,
    pub counts: Counts,
    /// The index, in `info`, of each trace of the set being read (the next
    /// chunk of a live session is a new set: `feed`).
    pub(crate) tmap: Vec<usize>,
    /// The threads in a state dump: (host, pid, tid) (`state_dump.rs`).
    pub dumping: Vec<(usize, i64, i64)>,
    /// Per trace: its first event's time, and its first runtime event's (`state_dump.rs`: runtime
    /// events recorded only from a later moment than init events, a dual session).
    pub spans: Vec<(u64, u64)>,
}

impl Builder {
    pub fn new(set: &TraceSet, opts: Options, scope: Scope) -> Self {
        Builder {
            opts,
            scope,
            info: TraceInfo::new(set),
            procs: vec![],
            proc_of: FxHashMap::default(),
            threads: vec![],
            thread_of: FxHashMap::default(),
            objs: Objects::default(),
            ros2: Ros2State::default(),
            svc: ServiceState::default(),
            caret: CaretState::default(),
            groups: Groups::default(),
            bosch: BoschState::default(),
            r1: RoscopeState::default(),
            annotations: vec![],
            runs: Rows::default(),
            publications: Rows::default(),
            takes: Rows::default(),
            exec_states: vec![],
            linker: Linker::default(),
            two_pass: crate::sync::TwoPass::default(),
            counts: Counts::default(),
            tmap: (0..set.traces.len()).collect(),
            dumping: vec![],
            spans: vec![(u64::MAX, u64::MAX); set.traces.len()],
        }
    }

    pub fn hosts(&self) -> &[String] {
        &self.info.hosts
    }

    pub fn trace_host(&self, trace: usize) -> usize {
        self.info.trace_host[trace]
    }

    /// The clock origin's offset to the Unix epoch (ns) of a trace.
    pub fn clock_offset(&self, trace: usize) -> i64 {
        self.info.offsets[trace]
    }

    /// The clock offset of a host's first trace (a host's traces share its clock).
    pub fn host_clock_offset(&self, host: usize) -> i64 {
        self.info.trace_host.iter().position(|&h| h == host).map_or(0, |t| self.info.offsets[t])
    }

    /// The process instance of an event. A pid is reused when a process-start
    /// event (rcl_init, ROS 1 node init) arrives for a pid that has already
    /// run callbacks or published. (The `procname` context is the *thread's*
    /// name, which threads may change: it is no evidence of a new process.)
    /// The process's name is the one its main thread (tid = pid) carries.
    #[allow(clippy::too_many_arguments)]
    /// `procname`: the context's bytes, up to a NUL (read as UTF-8, lossily,
    /// only when the name is new: this runs for every event).
    fn process(&mut self, host: usize, trace: usize, pid: i64, tid: i64, procname: &[u8], ts: u64, starts: bool) -> usize {
        if let Some(&p) = self.proc_of.get(&(host, pid)) {
            if !(starts && self.procs[p].runtime_seen) {
                let pr = &mut self.procs[p];
                pr.last = ts;
                pr.events += 1;
                if (tid == pid || pr.procname.is_empty()) && !procname.is_empty() && pr.procname.as_bytes() != procname {
                    let name = String::from_utf8_lossy(procname);
                    if pr.procname != name {
                        pr.procname = name.into_owned();
                    }
                }
                return p;
            }
        }
        self.procs.push(Proc {
            left_out: None,
            host,
            pid,
            procname: String::from_utf8_lossy(procname).into_owned(),
            first: ts,
            last: ts,
            events: 1,
            runtime_seen: false,
            trace,
        });
        let p = self.procs.len() - 1;
        self.proc_of.insert((host, pid), p);
        p
    }

    fn thread(&mut self, proc: usize, tid: i64, ts: u64) -> usize {
        if let Some(&t) = self.thread_of.get(&(proc, tid)) {
            let th = &mut self.threads[t];
            th.last = ts;
            th.events += 1;
            return t;
        }
        self.threads.push(Thread::new(proc, tid, ts));
        let t = self.threads.len() - 1;
        self.thread_of.insert((proc, tid), t);
        t
    }

    /// A process that runs callbacks or publishes: a later process-start
    /// event for its pid is a new process.
    #[inline]
    pub fn runtime_seen(&mut self, p: usize) {
        self.procs[p].runtime_seen = true;
    }

    /// The callback run open innermost on a thread.
    #[inline]
    pub fn current_run(&self, th: usize) -> Option<usize> {
        self.threads[th].stack.last().copied()
    }

    /// A ROS 1 publication (one layer, its time is the publish call's) made on
    /// the event's thread, inside the run open there; returns its index.
    pub(crate) fn push_ros1_publication(&mut self, e: &Event, publisher: Option<usize>, message: u64) -> usize {
        let run = self.current_run(e.th);
        self.publications.push(Publication { publisher, thread: e.th, run, ts: e.ts, rclcpp_ts: Some(e.ts), message, ..Default::default() })
    }

    /// Opens a run of callback `c` on thread `th`, nested in the runs open there.
    pub fn open_run(&mut self, th: usize, c: usize, ts: u64, intra: bool) -> usize {
        let parent = self.current_run(th);
        let depth = self.threads[th].stack.len() as u32;
        if depth == 0 {
            self.exec_run_start(th, ts);
        }
        let r = self.runs.push(Run { cb: c, thread: th, start: ts, end: None, intra, depth, parent });
        self.threads[th].stack.push(r);
        r
    }

    /// Closes the innermost open run of callback `c` on thread `th`. Runs
    /// above it never ended (lost events): they stay open. An end without an
    /// open run (tracing began mid-callback) is counted.
    pub fn close_run(&mut self, th: usize, c: usize, ts: u64) {
        let stack = &mut self.threads[th].stack;
        match stack.iter().rposition(|&r| self.runs[r].cb == c) {
            Some(pos) => {
                let r = stack[pos];
                self.counts.unmatched_starts += (stack.len() - pos - 1) as u64;
                stack.truncate(pos);
                // Open runs stay in memory (held past the window).
                if let Some(run) = self.runs.get_mut(r) {
                    run.end = Some(ts);
                }
                self.threads[th].last_closed = Some(r);
            }
            None => self.counts.unmatched_ends += 1,
        }
    }

    /// A new take on thread `th`, waiting there for the callback run it feeds.
    pub fn push_pending_take(&mut self, th: usize, t: Take) {
        let k = self.takes.push(t);
        self.threads[th].pending_take = Some(k);
    }

    /// The publication in progress on thread `th`, if still in memory (see `pending`).
    pub(crate) fn pending_publication(&mut self, th: usize) -> Option<&mut Publication> {
        pending(&mut self.threads[th].pending_pub, &mut self.publications, &mut self.counts.late_updates)
    }

    /// The take in progress on thread `th`, if still in memory (see `pending`).
    pub(crate) fn pending_take(&mut self, th: usize) -> Option<&mut Take> {
        pending(&mut self.threads[th].pending_take, &mut self.takes, &mut self.counts.late_updates)
    }

    /// The event's (host, pid, tid, procname) from its stream's context; the
    /// name as its bytes up to a NUL (see `process`).
    fn context<'s>(&self, s: &'s StreamReader) -> (usize, i64, i64, &'s [u8]) {
        let [pp, tp, np] = self.info.ctx[self.tmap[s.trace]][s.sc];
        let pid = pp.and_then(|i| as_i64(s.tape.get(i))).unwrap_or(-1);
        let tid = tp.and_then(|i| as_i64(s.tape.get(i))).unwrap_or(pid);
        let procname = match np.and_then(|i| s.tape.get(i)) {
            Some(Val::Str(off, len)) => roscope_ctf::json::bytes_at(s.data(), *off, *len),
            _ => &[][..],
        };
        (self.info.trace_host[self.tmap[s.trace]], pid, tid, procname)
    }

    /// Reads one event (stream `si` of `set`, at its current event).
    pub fn run_event(&mut self, set: &TraceSet, si: usize) {
        let s = &set.streams[si];
        self.counts.events += 1;
        let runtime = self.info.classes[self.tmap[s.trace]][s.cur_class].is_none_or(|ci| !ci.ev.is_init());
        let span = &mut self.spans[self.tmap[s.trace]];
        span.0 = span.0.min(s.cur_ts);
        if runtime {
            span.1 = span.1.min(s.cur_ts);
        }
        let r1 = self.info.r1[self.tmap[s.trace]][s.cur_class];
        let Some(ci) = self.info.classes[self.tmap[s.trace]][s.cur_class] else {
            if !self.scope.record_ids.is_empty() {
                self.unread_event_scope(s, r1);
            }
            return;
        };
        let (host, pid, tid, procname) = self.context(s);
        let ts = s.cur_ts;
        let dump = !self.dumping.is_empty() && self.dumping.contains(&(host, pid, tid));
        // A process's state dump names the process instance that runs, never a new one.
        let p = self.process(host, self.tmap[s.trace], pid, tid, procname, ts, ci.ev.starts_process() && !dump);
        let mut e = Event { ev: ci.ev, ts, p, th: 0, caret: ci.caret, dump, s, ix: ci.ix };
        let rid = match ci.ev {
            _ if self.scope.record_ids.is_empty() => None,
            _ if dump && self.scope.attach => None,
            Ev::R1ProcessInit => Some(e.text(crate::events::roscope_ros1::process_init::RECORD_ID).unwrap_or_default()),
            Ev::R2ProcessInit => Some(e.text(crate::events::roscope_ros2::process_init::RECORD_ID).unwrap_or_default()),
            _ => None,
        };
        let first = self.procs[p].events == 1;
        if dump && self.scope.attach && matches!(ci.ev, Ev::R1ProcessInit | Ev::R2ProcessInit) {
            self.procs[p].left_out = None; // attached: it ran when the session started
        }
        if !self.in_scope(p, rid, r1 && first && !self.scope.attach) {
            return;
        }
        e.th = self.thread(p, tid, ts);
        self.dispatch(&e);
        if !matches!(e.ev, Ev::ExecWait | Ev::ExecGetNext | Ev::ExecExecute) {
            self.exec_note(e.th, ts);
        }
    }

    /// An event the model does not read (e.g. `roscope_ros1:queue_call_start`),
    /// in a trace scoped to record ids: counted with its process when that is
    /// left out. A process first seen by such a `roscope_ros1` event has no
    /// `process_init` in the trace; other unread events create no process.
    fn unread_event_scope(&mut self, s: &StreamReader, r1: bool) {
        let (host, pid, tid, procname) = self.context(s);
        match self.proc_of.get(&(host, pid)) {
            Some(&p) => self.in_scope(p, None, false),
            None if r1 => {
                let p = self.process(host, self.tmap[s.trace], pid, tid, procname, s.cur_ts, false);
                self.in_scope(p, None, !self.scope.attach)
            }
            None => true,
        };
    }

    /// Whether an event's process `p` belongs to the recording (`Scope`;
    /// always without record ids). Its `roscope_ros1:process_init` decides
    /// (`rid`: the record id of one). A process whose first event in the trace
    /// is another `roscope_ros1` event (`r1_first`) started before this
    /// recording's session, so this recording did not start it. Events of
    /// processes left out are counted by reason.
    fn in_scope(&mut self, p: usize, rid: Option<String>, r1_first: bool) -> bool {
        if self.scope.record_ids.is_empty() {
            return true;
        }
        let pr = &mut self.procs[p];
        if let Some(rid) = rid {
            let ours = self.scope.record_ids.contains(&rid) || (self.scope.attach && rid.is_empty());
            pr.left_out = (!ours).then_some(LeftOut::OtherRecording);
        } else if r1_first {
            pr.left_out = Some(LeftOut::NoProcessInit);
        }
        match pr.left_out {
            None => return true,
            Some(LeftOut::OtherRecording) => self.counts.excluded_events += 1,
            Some(LeftOut::NoProcessInit) => self.counts.no_init_events += 1,
        }
        false
    }

    /// How many processes are left out of the recording for reason `why`.
    pub fn left_out(&self, why: LeftOut) -> i64 {
        self.procs.iter().filter(|p| p.left_out == Some(why)).count() as i64
    }

    /// The warnings about processes left out of the recording (`Scope`), one per reason.
    pub fn scope_warnings(&self) -> Vec<String> {
        let ids = self.scope.record_ids.join(", ");
        let mut out = vec![];
        for (why, events, text) in [
            (
                LeftOut::OtherRecording,
                self.counts.excluded_events,
                format!("of other recordings: their roscope_ros1:process_init does not name this trace's record id ({ids})"),
            ),
            (
                LeftOut::NoProcessInit,
                self.counts.no_init_events,
                format!(
                    "that emit roscope_ros1 events without a roscope_ros1:process_init in this trace: they started before \
                     this recording ({ids}), so it did not start them (another recording's, or traced without roscope record)"
                ),
            ),
        ] {
            let procs: Vec<&Proc> = self.procs.iter().filter(|p| p.left_out == Some(why)).collect();
            if procs.is_empty() {
                continue;
            }
            let mut names: Vec<String> = procs.iter().take(5).map(|p| format!("{} {}", p.pid, p.procname)).collect();
            if procs.len() > 5 {
                names.push("...".to_string());
            }
            let n = procs.len();
            let s = if n == 1 { "" } else { "es" };
            out.push(format!("left out {n} process{s} ({events} events) {text}; pids: {}", names.join(", ")));
        }
        out
    }

    /// Hands an event to the handler of its family (`HANDLERS`).
    fn dispatch(&mut self, e: &Event) {
        if let Some(h) = HANDLERS[e.ev as usize] {
            h(self, e)
        }
    }

    /// Streaming (`Options::window_ns`): hands `sink` the records that are
    /// older than the window at time `now` (ns) as table chunks: executor
    /// states, ended callback runs, publications, and takes with their
    /// links. Takes wait twice the window, so that a take is linked only once
    /// every publication before it is matchable; the linker forgets
    /// publications older than `LINK_WINDOW_NS` before the takes it links.
    ///
    /// Times are compared in the merged order's terms (`now` and each
    /// record's time plus its trace's clock offset), so that hosts whose raw
    /// clocks differ (boot times) are each cut at the same moment.
    pub fn flush(&mut self, now: i64, sink: &mut dyn FnMut(Table)) {
        let Some(w) = self.opts.window_ns else { return };
        self.note_peak();
        let (offsets, procs, threads) = (&self.info.offsets, &self.procs, &self.threads);
        let w = i64::try_from(w).unwrap_or(i64::MAX);
        let old = |ts: u64, th: usize, k: i64| merged(offsets, procs, threads, ts, th).saturating_add(w.saturating_mul(k)) < now;
        let runs = self.runs.drain(|r| old(r.start, r.thread, 1), |r| r.end.is_some());
        let pubs = self.publications.drain(|p| old(p.ts, p.thread, 1), |_| true);
        let takes = self.takes.drain(|t| old(t.ts, t.thread, 2), |_| true);
        self.emit(runs, pubs, takes, sink);
        let forget = now.saturating_sub(w.saturating_mul(2)).saturating_sub(crate::link::LINK_WINDOW_NS as i64);
        self.linker.prune(forget);
        self.two_pass.prune(forget);
        self.r1.prune(forget);
    }

    /// Streaming: the earliest time (its trace's clock, as `feed_where` returns) of a take
    /// not handed over yet, or None. Takes are drained in the order they were made, but a
    /// ROS 1 take is made when its callback starts and has its message's queueing time, so
    /// an old take can wait behind a younger one made before it: what is complete up to a
    /// time (a live window) must also end before this one.
    pub fn pending_takes_since(&self) -> Option<i64> {
        self.takes.least_recent(|t| t.ts as i64)
    }

    /// A record's time in the merged order's terms: plus its trace's clock offset.
    pub(crate) fn merged_ts(&self, ts: u64, thread: usize) -> i64 {
        merged(&self.info.offsets, &self.procs, &self.threads, ts, thread)
    }

    /// Emits drained records as chunks, and the links of the takes (their times
    /// mapped onto the reference clock when the clock maps are known; while they
    /// are being found, no tables: only the message pairs, `sync.rs`).
    pub(crate) fn emit(
        &mut self,
        mut runs: Vec<(usize, Run)>,
        mut pubs: Vec<(usize, Publication)>,
        mut takes: Vec<(usize, Take)>,
        sink: &mut dyn FnMut(Table),
    ) {
        let mut exec = std::mem::take(&mut self.exec_states);
        let collecting = self.two_pass.collecting();
        if !collecting {
            self.map_leaving(&mut exec, &mut runs, &mut pubs, &mut takes);
            if !exec.is_empty() {
                sink(crate::emit::executor_table(&exec));
            }
            if !runs.is_empty() {
                sink(crate::emit::run_table(runs.iter().map(|(i, r)| (*i, r))));
            }
        }
        let mut lk = std::mem::take(&mut self.linker);
        for (i, p) in &pubs {
            self.add_publication(&mut lk, *i, p);
        }
        if collecting {
            self.note_publications(&pubs);
        } else if !pubs.is_empty() {
            sink(crate::emit::publication_table(pubs.iter().map(|(i, p)| (*i, p))));
        }
        if !takes.is_empty() {
            // Links are made on raw times (the publications the linker holds are raw).
            let links: Vec<_> = takes.iter().filter_map(|(i, t)| self.link_take(&lk, *i, t)).collect();
            if collecting {
                self.note_pairs(&links, &takes);
            } else {
                sink(crate::emit::take_table(takes.iter().map(|(i, t)| (*i, t))));
                sink(crate::emit::link_table(&links));
            }
        }
        self.linker = lk;
    }

    fn note_peak(&mut self) {
        let n = self.runs.in_memory() + self.publications.in_memory() + self.takes.in_memory() + self.linker.held();
        self.counts.peak_records = self.counts.peak_records.max(n as u64);
    }

    /// After the last event: closes what is still open, links, and emits the
    /// tables. A streaming build hands its last chunks to `sink`; the model
    /// then holds the object tables and empty instance tables.
    pub fn finish(mut self, set: &TraceSet, sink: Option<&mut dyn FnMut(Table)>) -> Model {
        for ti in 0..self.threads.len() {
            self.end_exec_state(ti, self.threads[ti].last);
            self.counts.unmatched_starts += self.threads[ti].stack.len() as u64;
        }
        let (links, syncs) = match sink {
            Some(sink) if self.opts.window_ns.is_some() => {
                self.note_peak();
                let (runs, pubs, takes) = (self.runs.drain_all(), self.publications.drain_all(), self.takes.drain_all());
                self.emit(runs, pubs, takes, sink);
                // The clock maps found by a first pass: the records still here are mapped now.
                let syncs = self.two_pass.take_syncs();
                self.apply_clock_maps(&syncs);
                (vec![], syncs)
            }
            _ => {
                // A whole build holds every record to the end.
                self.note_peak();
                let links = self.link();
                let syncs = self.synchronize(&links);
                self.apply_clock_maps(&syncs);
                (links, syncs)
            }
        };
        // What only matching needed can go before the tables are built.
        self.ros2 = Ros2State::default();
        self.caret = CaretState::default();
        self.bosch = BoschState::default();
        self.r1 = RoscopeState::default();
        self.linker = Linker::default();
        self.tables(set, links, syncs)
    }
}

/// The slot of a record in progress on a thread (`Thread::pending_pub`,
/// `pending_take`): the record, if still in memory. One that already left
/// (streaming window) is counted in `late` and the slot is cleared.
fn pending<'a, T>(slot: &mut Option<usize>, rows: &'a mut Rows<T>, late: &mut u64) -> Option<&'a mut T> {
    let i = (*slot)?;
    if rows.get(i).is_none() {
        *late += 1;
        *slot = None;
    }
    rows.get_mut(i)
}

/// Time `ts` of thread `th` in the merged order's terms: plus its trace's clock offset.
fn merged(offsets: &[i64], procs: &[Proc], threads: &[Thread], ts: u64, th: usize) -> i64 {
    offsets[procs[threads[th].proc].trace].wrapping_add(ts as i64)
}

impl Builder {
    /// An incremental build (a live session read chunk by chunk): no traces
    /// yet; each `feed` adds one set. Objects, open runs and the publications
    /// takes may still match persist from one set to the next.
    pub fn incremental(opts: Options, scope: Scope) -> Self {
        let mut b = Builder::new(&TraceSet::empty(), opts, scope);
        b.opts.window_ns = Some(opts.window_ns.unwrap_or(1_000_000_000).max(1));
        b
    }

    /// Reads every event of `set` (the next chunk, later than the ones fed
    /// before) and hands to `sink` the records older than the window before
    /// its last event (`flush`). Returns the last event's time (its clock's, as the tables' times).
    pub fn feed(&mut self, set: &mut TraceSet, sink: &mut dyn FnMut(Table)) -> Option<i64> {
        self.feed_where(set, sink, &|_, _| true)
    }

    /// `feed`, reading only the events `keep(stream index, raw time)` accepts:
    /// a live source hands a packet over in two chunks when it straddles the
    /// time every stream was complete to (`roscope_ctf::live`), each event
    /// read once, in time order across chunks.
    pub fn feed_where(&mut self, set: &mut TraceSet, sink: &mut dyn FnMut(Table), keep: &dyn Fn(usize, u64) -> bool) -> Option<i64> {
        self.tmap = self.info.append(set);
        let n = self.tmap.iter().max().map_or(0, |m| m + 1);
        if self.spans.len() < n {
            self.spans.resize(n, (u64::MAX, u64::MAX));
        }
        let every = if self.opts.flush_every > 0 { self.opts.flush_every } else { FLUSH_EVERY_EVENTS };
        let (mut n, mut last) = (0u64, None);
        while let Some(i) = set.next() {
            if !keep(i, set.streams[i].cur_ts) {
                continue;
            }
            self.run_event(set, i);
            n += 1;
            let s = &set.streams[i];
            let now = set.traces[s.trace].offset_ns.wrapping_add(s.cur_ts as i64);
            last = Some((now, s.cur_ts as i64));
            if n.is_multiple_of(every) {
                self.flush(now, sink);
            }
        }
        let (now, raw) = last?;
        self.flush(now, sink);
        Some(raw)
    }

    /// The objects known so far, as tables (`hosts`, `processes`, `threads`,
    /// the object tables, `callbacks`): what names the records `feed` emits.
    pub fn object_tables(&self) -> Vec<Table> {
        let mut hosts = Table::new(&crate::schema::HOSTS);
        for (i, h) in self.hosts().iter().enumerate() {
            hosts.row().i(Some(i as i64)).s(Some(h)).done();
        }
        let mut out = vec![hosts, self.process_table(), self.thread_table()];
        out.extend(self.registry_tables());
        out.push(self.callback_table());
        out
    }

    /// After the last `feed`: closes the runs still open at each thread's
    /// last event, and hands every record still held to `sink`.
    pub fn close(&mut self, sink: &mut dyn FnMut(Table)) {
        for (ti, t) in self.threads.iter_mut().enumerate() {
            if let Some((state, start, handle)) = t.exec.take() {
                self.exec_states.push(ExecState { thread: ti, state, start, end: t.last, handle });
            }
        }
        let (runs, pubs, takes) = (self.runs.drain_all(), self.publications.drain_all(), self.takes.drain_all());
        self.emit(runs, pubs, takes, sink);
    }
}

/// Builds the model from every event of `set`, in time order.
pub fn build(set: &mut TraceSet, opts: Options, scope: Scope) -> Model {
    build_streaming(set, Options { window_ns: None, ..opts }, scope, None)
}

/// Builds the model from every event of `set`, in time order. With a
/// `sink` and `opts.window_ns`, the instance records leave memory in chunks
/// through `sink` as the build goes (see `Builder::flush`), unless the set
/// has several hosts whose clocks are to be synchronized: that needs every
/// message pair first, so such a build holds its records to the end. The
/// returned model holds the tables not yet handed to `sink`.
pub fn build_streaming(set: &mut TraceSet, opts: Options, scope: Scope, sink: Option<&mut dyn FnMut(Table)>) -> Model {
    let mut b = Builder::new(set, opts, scope);
    let hosts = b.hosts().len();
    if sink.is_none() || (opts.sync && hosts > 1) {
        b.opts.window_ns = None;
    } else if hosts > 1 && b.opts.window_ns.is_some() {
        // `--no-sync`: the metadata's maps are known before the first event.
        let syncs = b.metadata_syncs();
        b.two_pass.map_with(syncs, hosts);
    }
    run(b, set, sink)
}

/// The first pass of a synchronized streaming build (`sync::clock_pass`):
/// every event into `b`, streamed without tables; returns the builder with
/// what it found.
pub(crate) fn run_pass(mut b: Builder, set: &mut TraceSet, sink: &mut dyn FnMut(Table)) -> Builder {
    let every = if b.opts.flush_every > 0 { b.opts.flush_every } else { FLUSH_EVERY_EVENTS };
    let mut n: u64 = 0;
    while let Some(i) = set.next() {
        b.run_event(set, i);
        n += 1;
        if n.is_multiple_of(every) {
            let s = &set.streams[i];
            b.flush(set.traces[s.trace].offset_ns.wrapping_add(s.cur_ts as i64), sink);
        }
    }
    for ti in 0..b.threads.len() {
        b.end_exec_state(ti, b.threads[ti].last);
    }
    let (runs, pubs, takes) = (b.runs.drain_all(), b.publications.drain_all(), b.takes.drain_all());
    b.emit(runs, pubs, takes, sink);
    b
}

/// Reads every event of `set` into `b` (streaming through `sink` if `b` has a
/// window), then finishes the model.
pub(crate) fn run(mut b: Builder, set: &mut TraceSet, mut sink: Option<&mut dyn FnMut(Table)>) -> Model {
    let opts = b.opts;
    let every = if opts.flush_every > 0 { opts.flush_every } else { FLUSH_EVERY_EVENTS };
    let streaming = b.opts.window_ns.is_some() && sink.is_some();
    let t0 = std::time::Instant::now();
    let mut n: u64 = 0;
    while let Some(i) = set.next() {
        b.run_event(set, i);
        n += 1;
        if streaming && n.is_multiple_of(every) {
            if let Some(sink) = sink.as_mut() {
                let s = &set.streams[i];
                b.flush(set.traces[s.trace].offset_ns.wrapping_add(s.cur_ts as i64), *sink);
            }
        }
        if n.is_multiple_of(METER_EVERY_EVENTS) {
            if let Some(m) = set.meter.as_ref() {
                let (done, total) = set.progress();
                m.set(done, total, n);
            }
            if opts.progress && n.is_multiple_of(PROGRESS_EVERY_EVENTS) {
                let (done, total) = set.progress();
                eprint!(
                    "\rroscope: {:>6.1}%  {} events  {:.1} s",
                    100.0 * done as f64 / total.max(1) as f64,
                    n,
                    t0.elapsed().as_secs_f64()
                );
            }
        }
    }
    if let Some(m) = set.meter.as_ref() {
        let (_, total) = set.progress();
        m.set(total, total, n);
    }
    if opts.progress && n >= PROGRESS_EVERY_EVENTS {
        eprintln!("\rroscope: 100.0%  {} events  {:.1} s", n, t0.elapsed().as_secs_f64());
    }
    b.finish(set, sink)
}

#[cfg(test)]
mod handler_tests {
    use super::HANDLERS;
    use crate::events::Ev;

    /// The events no family handles: they only start a process instance, which
    /// `Builder::process` does before any handler runs (`Ev::starts_process`).
    const PROCESS_START_ONLY: &[Ev] = &[Ev::RclInit, Ev::R2ProcessInit, Ev::R1ProcessInit];

    /// Every event the model declares has its family's handler, but those that only
    /// start a process instance.
    #[test]
    fn every_event_has_a_handler_or_only_starts_a_process() {
        let missing: Vec<Ev> = Ev::ALL.iter().copied().filter(|&e| HANDLERS[e as usize].is_none()).collect();
        assert_eq!(missing, PROCESS_START_ONLY);
        assert!(PROCESS_START_ONLY.iter().all(|e| e.starts_process()));
        assert_eq!(Ev::ALL.iter().enumerate().filter(|(i, e)| **e as usize != *i).count(), 0);
    }
}
