//! roscope-model: one pass over the merged events of a trace set builds the
//! execution model of docs/model.md: objects (hosts, processes, threads,
//! nodes, publishers, subscriptions, timers, services, clients, callbacks)
//! and instances (callback runs, publications, takes, transport links,
//! executor states, lost-event gaps).
//!
//! Objects are keyed by (process instance, handle) with lifetimes: an init
//! event for a handle that is already known starts a new object (the address
//! was reused after the old object died); process instances are keyed by
//! (host, pid) and split when the pid is reused (see `procs`).

mod events;
pub mod table;

use rustc_hash::FxHashMap as HashMap;

use roscope_ctf::stream::{StreamReader, Val};
use roscope_ctf::summary::{context_positions, static_index};
use roscope_ctf::TraceSet;

use events::{classify, Ev, FIELDS};
use table::Table;

/// How transport links were obtained (column `links.method`).
pub const M_RMW_TS: &str = "rmw_timestamp";
pub const M_CARET: &str = "caret_source_stamp";
pub const M_INTRA_RB: &str = "intra_ring_buffer";
pub const M_INTRA_MSG: &str = "intra_message";
pub const M_ROS1_CONN: &str = "ros1_connection_order";
pub const M_ROS1_ROSCOPE: &str = "ros1_roscope";
pub const M_HEUR_WALL: &str = "heuristic_wall_clock";

#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Make heuristic links (flagged) where no exact method applies.
    pub heuristics: bool,
    /// Show progress on stderr (for terminals).
    pub progress: bool,
}

/// Which processes of a trace belong to the recording: `roscope record` names
/// its recording, and each process it traces says so in
/// `roscope_ros1:process_init(record_id)`. An LTTng session records every
/// instrumented process of the machine, so with record ids given, processes
/// that announce another recording (or an empty one) are left out; processes
/// that announce nothing (not run with roscope's tracer) stay.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub record_ids: Vec<String>,
}

pub struct Model {
    pub tables: Vec<Table>,
    pub stats: Vec<(String, i64)>,
}

#[derive(Default)]
struct Proc {
    /// Belongs to the recording (see `Scope`).
    included: bool,
    host: usize,
    pid: i64,
    procname: String,
    first: u64,
    last: u64,
    events: u64,
    runtime_seen: bool,
    trace: usize,
}

struct Thread {
    proc: usize,
    tid: i64,
    first: u64,
    last: u64,
    events: u64,
    stack: Vec<usize>,
    pending_pub: Option<usize>,
    pending_take: Option<usize>,
    exec: Option<(u8, u64, Option<u64>)>,
    /// ROS 1 (Bosch): queue-level spans open on this thread.
    queue_depth: u32,
}

#[derive(Default, Clone)]
struct Obj {
    proc: usize,
    node: Option<usize>,
    handle: u64,
    rmw_handle: Option<u64>,
    /// rclcpp-level object (subscriptions), or lifecycle state machine (nodes).
    extra: Option<u64>,
    name: Option<String>,
    ns: Option<String>,
    depth: Option<i64>,
    gid: Option<String>,
    period: Option<i64>,
    ts: Option<u64>,
    known: bool,
    #[allow(dead_code)]
    kind: &'static str,
}

#[derive(Default, Clone)]
struct Cb {
    proc: usize,
    handle: u64,
    symbol: Option<String>,
    kind: &'static str,
    owner: Option<usize>,
    ts: Option<u64>,
    known: bool,
}

struct Run {
    cb: usize,
    thread: usize,
    start: u64,
    end: Option<u64>,
    intra: bool,
    depth: u32,
    parent: Option<usize>,
}

#[derive(Default)]
struct Publication {
    publisher: Option<usize>,
    thread: usize,
    run: Option<usize>,
    ts: u64,
    rclcpp_ts: Option<u64>,
    rcl_ts: Option<u64>,
    rmw_ts: Option<u64>,
    message: u64,
    src_ts: Option<i64>,
    intra: bool,
    rb: Option<(u64, u64)>,
}

/// Where a ROS 1 message came from, before connections are resolved.
#[derive(Clone, Copy, Debug)]
enum R1Src {
    Publication(usize),
    /// Index into `r1_rx`.
    Rx(usize),
}

#[derive(Default)]
struct Take {
    sub: Option<usize>,
    thread: usize,
    ts: u64,
    rmw_ts: Option<u64>,
    rcl_ts: Option<u64>,
    rclcpp_ts: Option<u64>,
    message: u64,
    src_ts: Option<i64>,
    taken: bool,
    run: Option<usize>,
    intra: bool,
    /// Exact publication, when the take event itself identifies it.
    publication: Option<usize>,
    /// ROS 1 (roscope tracer): the received message, resolved at the end.
    r1_rx: Option<usize>,
    method: Option<&'static str>,
}

struct ExecState {
    thread: usize,
    state: u8,
    start: u64,
    end: u64,
    handle: Option<u64>,
}

const EXEC_STATES: [&str; 3] = ["waiting", "selecting", "executing"];

/// Per (trace, event class): what the event is and where its fields are.
#[derive(Clone, Copy)]
struct ClassInfo {
    ev: Ev,
    /// Static tape indexes (relative to the payload) of the fields named in
    /// `events::FIELDS[ev]`, in that order.
    ix: [Option<usize>; events::MAX_FIELDS],
}

struct Builder {
    opts: Options,
    scope: Scope,
    excluded_events: u64,
    /// Per trace: the clock origin's offset to the Unix epoch (ns).
    offsets: Vec<i64>,
    classes: Vec<Vec<Option<ClassInfo>>>,
    /// Per trace, per stream class: tape index of vpid, vtid, procname.
    ctx: Vec<Vec<[Option<usize>; 3]>>,
    hosts: Vec<String>,
    trace_host: Vec<usize>,
    procs: Vec<Proc>,
    proc_of: HashMap<(usize, i64), usize>,
    threads: Vec<Thread>,
    thread_of: HashMap<(usize, i64), usize>,
    nodes: Vec<Obj>,
    pubs: Vec<Obj>,
    subs: Vec<Obj>,
    timers: Vec<Obj>,
    services: Vec<Obj>,
    clients: Vec<Obj>,
    cbs: Vec<Cb>,
    node_of: HashMap<(usize, u64), usize>,
    pub_of: HashMap<(usize, u64), usize>,
    pub_of_rmw: HashMap<(usize, u64), usize>,
    sub_of: HashMap<(usize, u64), usize>,
    sub_of_rmw: HashMap<(usize, u64), usize>,
    sub_of_rclcpp: HashMap<(usize, u64), usize>,
    timer_of: HashMap<(usize, u64), usize>,
    service_of: HashMap<(usize, u64), usize>,
    client_of: HashMap<(usize, u64), usize>,
    cb_of: HashMap<(usize, u64), usize>,
    gid_of: HashMap<(usize, u64), String>,
    ipb_sub: HashMap<(usize, u64), usize>,
    buffer_ipb: HashMap<(usize, u64), u64>,
    /// Intra-process: last enqueue into (proc, buffer, index) -> publication.
    rb_slot: HashMap<(usize, u64, u64), usize>,
    /// Intra-process (CARET): last intra publication of a message address.
    intra_msg: HashMap<(usize, u64), usize>,
    /// ROS 1 (Bosch): subscription queues (their callOneCB spans are not runs).
    ros1_queues: HashMap<(usize, u64), ()>,
    ros1_sub_by_topic: HashMap<(usize, String), usize>,
    ros1_pub_by_topic: HashMap<(usize, String), usize>,
    /// ROS 1 (roscope tracer): logical nodes by (proc, name).
    r1_node_of: HashMap<(usize, String), usize>,
    /// Connections: link -> (local, remote) addresses, per side.
    r1_tx_link: HashMap<(usize, u64), (String, String)>,
    r1_rx_link: HashMap<(usize, u64), (String, String)>,
    /// Publisher-side link by (local, remote) addresses: (proc, link), latest.
    r1_tx_by_addr: HashMap<(String, String), (usize, u64)>,
    /// Publications written on each publisher-side link, in order.
    r1_tx_writes: HashMap<(usize, u64), Vec<usize>>,
    r1_pub_by_id: HashMap<(usize, u64), usize>,
    /// Latest source of a buffer / no-copy object in a process.
    r1_buf: HashMap<(usize, u64), R1Src>,
    r1_obj: HashMap<(usize, u64), usize>,
    /// Latest queued message of a deserializer: (source, queue time).
    r1_queued: HashMap<(usize, u64), (R1Src, u64)>,
    /// Received messages: (rx proc, rx link, index).
    r1_rx: Vec<(usize, u64, u64)>,
    /// Causal-link annotations: (proc, kind, ts, subscription handles, publisher handles).
    annotations: Vec<(usize, &'static str, u64, Vec<u64>, Vec<u64>)>,
    runs: Vec<Run>,
    publications: Vec<Publication>,
    takes: Vec<Take>,
    exec_states: Vec<ExecState>,
    unmatched_ends: u64,
    unmatched_starts: u64,
    events: u64,
}

fn vu(v: Option<&Val>) -> Option<u64> {
    match v? {
        Val::U(x) => Some(*x),
        Val::I(x) => Some(*x as u64),
        _ => None,
    }
}
fn vi(v: Option<&Val>) -> Option<i64> {
    match v? {
        Val::U(x) => Some(*x as i64),
        Val::I(x) => Some(*x),
        _ => None,
    }
}

impl Builder {
    fn new(set: &TraceSet, opts: Options, scope: Scope) -> Self {
        let classes = set
            .traces
            .iter()
            .map(|t| {
                t.md.events
                    .iter()
                    .map(|ec| {
                        let ev = classify(&ec.name)?;
                        let names = FIELDS[ev as usize];
                        let mut ix = [None; events::MAX_FIELDS];
                        for (k, n) in names.iter().enumerate() {
                            ix[k] = static_index(ec.payload.as_ref(), &[n]);
                        }
                        Some(ClassInfo { ev, ix })
                    })
                    .collect()
            })
            .collect();
        let ctx = context_positions(set);
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
        Builder {
            opts,
            excluded_events: 0,
            offsets: set.traces.iter().map(|t| t.offset_ns).collect(),
            scope,
            classes,
            ctx,
            hosts,
            trace_host,
            procs: vec![],
            proc_of: HashMap::default(),
            threads: vec![],
            thread_of: HashMap::default(),
            nodes: vec![],
            pubs: vec![],
            subs: vec![],
            timers: vec![],
            services: vec![],
            clients: vec![],
            cbs: vec![],
            node_of: HashMap::default(),
            pub_of: HashMap::default(),
            pub_of_rmw: HashMap::default(),
            sub_of: HashMap::default(),
            sub_of_rmw: HashMap::default(),
            sub_of_rclcpp: HashMap::default(),
            timer_of: HashMap::default(),
            service_of: HashMap::default(),
            client_of: HashMap::default(),
            cb_of: HashMap::default(),
            gid_of: HashMap::default(),
            ipb_sub: HashMap::default(),
            buffer_ipb: HashMap::default(),
            rb_slot: HashMap::default(),
            intra_msg: HashMap::default(),
            ros1_queues: HashMap::default(),
            ros1_sub_by_topic: HashMap::default(),
            ros1_pub_by_topic: HashMap::default(),
            r1_node_of: HashMap::default(),
            r1_tx_link: HashMap::default(),
            r1_rx_link: HashMap::default(),
            r1_tx_by_addr: HashMap::default(),
            r1_tx_writes: HashMap::default(),
            r1_pub_by_id: HashMap::default(),
            r1_buf: HashMap::default(),
            r1_obj: HashMap::default(),
            r1_queued: HashMap::default(),
            r1_rx: vec![],
            annotations: vec![],
            runs: vec![],
            publications: vec![],
            takes: vec![],
            exec_states: vec![],
            unmatched_ends: 0,
            unmatched_starts: 0,
            events: 0,
        }
    }

    fn text(s: &StreamReader, v: Option<&Val>) -> Option<String> {
        match v? {
            Val::Str(off, len) => Some(roscope_ctf::json::text_at(s.data(), *off, *len).into_owned()),
            _ => None,
        }
    }

    /// The process instance of an event. A pid is reused when a process-start
    /// event (rcl_init, ROS 1 node init) arrives for a pid that has already
    /// run callbacks or published. (The `procname` context is the *thread's*
    /// name, which threads may change: it is no evidence of a new process.)
    /// The process's name is the one its main thread (tid = pid) carries.
    fn process(&mut self, host: usize, trace: usize, pid: i64, tid: i64, procname: &str, ts: u64, starts: bool) -> usize {
        if let Some(&p) = self.proc_of.get(&(host, pid)) {
            if !(starts && self.procs[p].runtime_seen) {
                let pr = &mut self.procs[p];
                pr.last = ts;
                pr.events += 1;
                if (tid == pid || pr.procname.is_empty()) && pr.procname != procname && !procname.is_empty() {
                    pr.procname = procname.to_string();
                }
                return p;
            }
        }
        self.procs.push(Proc {
            included: true,
            host,
            pid,
            procname: procname.to_string(),
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
        self.threads.push(Thread {
            proc,
            tid,
            first: ts,
            last: ts,
            events: 1,
            stack: vec![],
            pending_pub: None,
            pending_take: None,
            exec: None,
            queue_depth: 0,
        });
        let t = self.threads.len() - 1;
        self.thread_of.insert((proc, tid), t);
        t
    }

    fn cb(&mut self, proc: usize, handle: u64) -> usize {
        if let Some(&c) = self.cb_of.get(&(proc, handle)) {
            return c;
        }
        self.cbs.push(Cb { proc, handle, kind: "unknown", ..Default::default() });
        let c = self.cbs.len() - 1;
        self.cb_of.insert((proc, handle), c);
        c
    }

    /// A `*_callback_added` event: the callback of `owner`. A callback address
    /// already bound to another owner (an object that has since died, its
    /// address reused) starts a new callback; the same owner again (CARET's
    /// re-emitted events) or a callback seen only at run time is the same one.
    fn cb_added(&mut self, proc: usize, handle: u64, kind: &'static str, owner: usize, ts: u64) -> usize {
        if let Some(&c) = self.cb_of.get(&(proc, handle)) {
            let old = &self.cbs[c];
            if old.owner.is_some() && !(old.kind == kind && old.owner == Some(owner)) {
                self.cbs.push(Cb { proc, handle, kind: "unknown", ..Default::default() });
                self.cb_of.insert((proc, handle), self.cbs.len() - 1);
            }
        }
        let c = self.cb(proc, handle);
        self.cbs[c].kind = kind;
        self.cbs[c].owner = Some(owner);
        self.cbs[c].ts.get_or_insert(ts);
        c
    }

    /// Looks an object up by handle, creating an "unknown" one (its init event
    /// was not recorded) when needed.
    fn obj(list: &mut Vec<Obj>, map: &mut HashMap<(usize, u64), usize>, proc: usize, handle: u64, kind: &'static str) -> usize {
        if let Some(&i) = map.get(&(proc, handle)) {
            return i;
        }
        list.push(Obj { proc, handle, kind, known: false, ..Default::default() });
        let i = list.len() - 1;
        map.insert((proc, handle), i);
        i
    }

    /// An init event: a new object, unless it repeats the one already known
    /// for this handle (CARET re-emits init events).
    fn init_obj(list: &mut Vec<Obj>, map: &mut HashMap<(usize, u64), usize>, o: Obj, repeat: bool) -> usize {
        if let Some(&i) = map.get(&(o.proc, o.handle)) {
            let old = &mut list[i];
            if !old.known {
                // Seen before its init event (or CARET's re-emitted init): complete it.
                let ts = old.ts.or(o.ts);
                *old = Obj { ts, known: true, ..o };
                return i;
            }
            if repeat && old.name == o.name {
                return i;
            }
        }
        list.push(Obj { known: true, ..o });
        let i = list.len() - 1;
        map.insert((list[i].proc, list[i].handle), i);
        i
    }

    fn run_event(&mut self, set: &TraceSet, si: usize) {
        let s = &set.streams[si];
        self.events += 1;
        let Some(ci) = self.classes[s.trace][s.cur_class] else { return };
        let [pp, tp, np] = self.ctx[s.trace][s.sc];
        let tape = &s.tape;
        let pid = pp.and_then(|i| vi(tape.get(i))).unwrap_or(-1);
        let tid = tp.and_then(|i| vi(tape.get(i))).unwrap_or(pid);
        let procname = match np.and_then(|i| tape.get(i)) {
            Some(Val::Str(off, len)) => roscope_ctf::json::text_at(s.data(), *off, *len),
            _ => std::borrow::Cow::Borrowed(""),
        };
        let ts = s.cur_ts;
        let host = self.trace_host[s.trace];
        let starts = matches!(ci.ev, Ev::RclInit | Ev::Ros1InitNode | Ev::R1ProcessInit);
        let p = self.process(host, s.trace, pid, tid, &procname, ts, starts);
        if ci.ev == Ev::R1ProcessInit && !self.scope.record_ids.is_empty() {
            let base = s.payload_start;
            let rid = ci.ix[0].and_then(|i| Self::text(s, tape.get(base + i))).unwrap_or_default();
            self.procs[p].included = self.scope.record_ids.iter().any(|r| *r == rid);
        }
        if !self.procs[p].included {
            self.excluded_events += 1;
            return;
        }
        let th = self.thread(p, tid, ts);
        let base = s.payload_start;
        let f = |k: usize| -> Option<&Val> { ci.ix.get(k).copied().flatten().and_then(|i| tape.get(base + i)) };
        let fu = |k: usize| vu(f(k));
        let fi = |k: usize| vi(f(k));
        let ft = |k: usize| Self::text(s, f(k));
        let caret_repeat = set.traces[s.trace].md.events[s.cur_class].name.starts_with("ros2_caret:");
        use Ev::*;
        match ci.ev {
            RclInit | Ros1InitNode => {
                if ci.ev == Ros1InitNode {
                    let name = ft(0);
                    let o = Obj { proc: p, handle: 0, name, ts: Some(ts), kind: "node", ..Default::default() };
                    let n = Self::init_obj(&mut self.nodes, &mut self.node_of, o, true);
                    let _ = n;
                }
            }
            NodeInit => {
                let o = Obj {
                    proc: p,
                    handle: fu(0).unwrap_or(0),
                    rmw_handle: fu(1),
                    name: ft(2),
                    ns: ft(3),
                    ts: Some(ts),
                    kind: "node",
                    ..Default::default()
                };
                Self::init_obj(&mut self.nodes, &mut self.node_of, o, caret_repeat);
            }
            RmwPubInit | RmwSubInit | RmwClientInit => {
                let h = fu(0).unwrap_or(0);
                let gid = gid_hex(s, &ci, 1);
                if let Some(g) = gid {
                    let (list, map) = match ci.ev {
                        RmwPubInit => (&mut self.pubs, &self.pub_of_rmw),
                        RmwSubInit => (&mut self.subs, &self.sub_of_rmw),
                        _ => (&mut self.clients, &self.pub_of_rmw),
                    };
                    if ci.ev != RmwClientInit {
                        if let Some(&i) = map.get(&(p, h)) {
                            list[i].gid = Some(g.clone());
                        }
                    }
                    self.gid_of.insert((p, h), g);
                }
            }
            PubInit | SubInit => {
                let kind = if ci.ev == PubInit { "publisher" } else { "subscription" };
                self.endpoint_init(kind, p, fu(1), fu(0).unwrap_or(0), fu(2), ft(3), fi(4), ts, caret_repeat);
            }
            RclcppSubInit => {
                let i = Self::obj(&mut self.subs, &mut self.sub_of, p, fu(0).unwrap_or(0), "subscription");
                if let Some(x) = fu(1) {
                    self.subs[i].extra = Some(x);
                    self.sub_of_rclcpp.insert((p, x), i);
                }
            }
            SubCbAdded => {
                let x = fu(0).unwrap_or(0);
                let sub = match self.sub_of_rclcpp.get(&(p, x)) {
                    Some(&i) => i,
                    None => {
                        let i = Self::obj(&mut self.subs, &mut HashMap::default(), p, 0, "subscription");
                        self.subs[i].extra = Some(x);
                        self.sub_of_rclcpp.insert((p, x), i);
                        i
                    }
                };
                self.cb_added(p, fu(1).unwrap_or(0), "subscription", sub, ts);
            }
            SrvInit | ClientInit => {
                let node = fu(1).map(|n| Self::obj(&mut self.nodes, &mut self.node_of, p, n, "node"));
                let kind = if ci.ev == SrvInit { "service" } else { "client" };
                let rmw = fu(2);
                let gid = rmw.and_then(|r| self.gid_of.get(&(p, r)).cloned());
                let o = Obj {
                    proc: p,
                    node,
                    handle: fu(0).unwrap_or(0),
                    rmw_handle: rmw,
                    name: ft(3),
                    gid,
                    ts: Some(ts),
                    kind,
                    ..Default::default()
                };
                if ci.ev == SrvInit {
                    Self::init_obj(&mut self.services, &mut self.service_of, o, caret_repeat);
                } else {
                    Self::init_obj(&mut self.clients, &mut self.client_of, o, caret_repeat);
                }
            }
            SrvCbAdded => {
                let sv = Self::obj(&mut self.services, &mut self.service_of, p, fu(0).unwrap_or(0), "service");
                self.cb_added(p, fu(1).unwrap_or(0), "service", sv, ts);
            }
            TimerInit => {
                let o = Obj { proc: p, handle: fu(0).unwrap_or(0), period: fi(1), ts: Some(ts), kind: "timer", ..Default::default() };
                let repeat = caret_repeat;
                let i = Self::init_obj(&mut self.timers, &mut self.timer_of, o, repeat);
                let _ = i;
            }
            TimerCbAdded => {
                let t = Self::obj(&mut self.timers, &mut self.timer_of, p, fu(0).unwrap_or(0), "timer");
                self.cb_added(p, fu(1).unwrap_or(0), "timer", t, ts);
            }
            TimerLinkNode => {
                let t = Self::obj(&mut self.timers, &mut self.timer_of, p, fu(0).unwrap_or(0), "timer");
                let n = fu(1).map(|n| Self::obj(&mut self.nodes, &mut self.node_of, p, n, "node"));
                self.timers[t].node = n;
            }
            CbRegister => {
                let c = self.cb(p, fu(0).unwrap_or(0));
                self.cbs[c].symbol = ft(1);
                self.cbs[c].known = true;
                self.cbs[c].ts.get_or_insert(ts);
            }
            IpbToSub => {
                // ipb -> rclcpp subscription object
                if let (Some(ipb), Some(x)) = (fu(0), fu(1)) {
                    let sub = match self.sub_of_rclcpp.get(&(p, x)) {
                        Some(&i) => i,
                        None => {
                            let i = Self::obj(&mut self.subs, &mut HashMap::default(), p, 0, "subscription");
                            self.subs[i].extra = Some(x);
                            self.sub_of_rclcpp.insert((p, x), i);
                            i
                        }
                    };
                    self.ipb_sub.insert((p, ipb), sub);
                }
            }
            BufferToIpb => {
                if let (Some(b), Some(ipb)) = (fu(0), fu(1)) {
                    self.buffer_ipb.insert((p, b), ipb);
                }
            }
            CallbackStart => {
                self.procs[p].runtime_seen = true;
                let c = self.cb(p, fu(0).unwrap_or(0));
                let intra = fu(1).unwrap_or(0) != 0;
                let parent = self.threads[th].stack.last().copied();
                let depth = self.threads[th].stack.len() as u32;
                self.runs.push(Run { cb: c, thread: th, start: ts, end: None, intra, depth, parent });
                let r = self.runs.len() - 1;
                self.threads[th].stack.push(r);
                // The take that fed this run: the last one on this thread, for
                // this callback's subscription.
                if let Some(tk) = self.threads[th].pending_take.take() {
                    let owner_sub = if self.cbs[c].kind == "subscription" { self.cbs[c].owner } else { None };
                    let take = &mut self.takes[tk];
                    if take.run.is_none() && (owner_sub.is_none() || take.sub.is_none() || take.sub == owner_sub) {
                        take.run = Some(r);
                        if take.sub.is_none() {
                            take.sub = owner_sub;
                        }
                    }
                }
            }
            CallbackEnd => {
                let c = self.cb(p, fu(0).unwrap_or(0));
                self.close_run(th, c, ts);
            }
            RclcppPublish | RclPublish | RmwPublish | RclcppIntraPublish => {
                self.procs[p].runtime_seen = true;
                let (pubh, msg, stamp) = match ci.ev {
                    RclcppPublish => (fu(0), fu(1), None),
                    RclPublish => (fu(0), fu(1), None),
                    RmwPublish => (fu(0), fu(1), fi(2)),
                    _ => (fu(0), fu(1), None),
                };
                let msg = msg.unwrap_or(0);
                let publisher = pubh.map(|h| {
                    if ci.ev == RmwPublish {
                        match self.pub_of_rmw.get(&(p, h)) {
                            Some(&i) => i,
                            None => {
                                let i = Self::obj(&mut self.pubs, &mut HashMap::default(), p, 0, "publisher");
                                self.pubs[i].rmw_handle = Some(h);
                                self.pub_of_rmw.insert((p, h), i);
                                i
                            }
                        }
                    } else {
                        Self::obj(&mut self.pubs, &mut self.pub_of, p, h, "publisher")
                    }
                });
                // Continue the publication in progress on this thread (same
                // message, layer below), or start a new one.
                let cont = self.threads[th].pending_pub.filter(|&pi| {
                    let pb = &self.publications[pi];
                    pb.message == msg
                        && !pb.intra
                        && match ci.ev {
                            RclcppPublish | RclcppIntraPublish => false,
                            RclPublish => pb.rcl_ts.is_none() && pb.rmw_ts.is_none(),
                            _ => pb.rmw_ts.is_none(),
                        }
                });
                let pi = match cont {
                    Some(pi) => pi,
                    None => {
                        let run = self.threads[th].stack.last().copied();
                        self.publications.push(Publication {
                            thread: th,
                            run,
                            ts,
                            message: msg,
                            intra: ci.ev == RclcppIntraPublish,
                            ..Default::default()
                        });
                        self.publications.len() - 1
                    }
                };
                let pb = &mut self.publications[pi];
                match ci.ev {
                    RclcppPublish | RclcppIntraPublish => pb.rclcpp_ts = Some(ts),
                    RclPublish => pb.rcl_ts = Some(ts),
                    _ => pb.rmw_ts = Some(ts),
                }
                if publisher.is_some() && (pb.publisher.is_none() || ci.ev == RclPublish) {
                    pb.publisher = publisher;
                }
                if stamp.is_some() {
                    pb.src_ts = stamp;
                }
                self.threads[th].pending_pub = Some(pi);
                if ci.ev == RclcppIntraPublish {
                    self.intra_msg.insert((p, msg), pi);
                }
            }
            CaretBindStamp => {
                if let Some(pi) = self.threads[th].pending_pub {
                    if self.publications[pi].src_ts.is_none() {
                        self.publications[pi].src_ts = fi(1);
                    }
                }
            }
            RingEnqueue => {
                if let (Some(b), Some(idx)) = (fu(0), fu(1)) {
                    if let Some(pi) = self.threads[th].pending_pub {
                        if self.publications[pi].intra {
                            self.publications[pi].rb = Some((b, idx));
                            self.rb_slot.insert((p, b, idx), pi);
                        }
                    }
                }
            }
            RingDequeue => {
                if let (Some(b), Some(idx)) = (fu(0), fu(1)) {
                    let pubi = self.rb_slot.get(&(p, b, idx)).copied();
                    let sub = self.buffer_ipb.get(&(p, b)).and_then(|ipb| self.ipb_sub.get(&(p, *ipb))).copied();
                    self.takes.push(Take {
                        sub,
                        thread: th,
                        ts,
                        message: 0,
                        taken: true,
                        intra: true,
                        publication: pubi,
                        method: pubi.map(|_| M_INTRA_RB),
                        ..Default::default()
                    });
                    self.threads[th].pending_take = Some(self.takes.len() - 1);
                }
            }
            CaretDispatchIntra => {
                let msg = fu(0).unwrap_or(0);
                let c = self.cb(p, fu(1).unwrap_or(0));
                let sub = if self.cbs[c].kind == "subscription" { self.cbs[c].owner } else { None };
                let pubi = self.intra_msg.get(&(p, msg)).copied();
                self.takes.push(Take {
                    sub,
                    thread: th,
                    ts,
                    message: msg,
                    taken: true,
                    intra: true,
                    publication: pubi,
                    method: pubi.map(|_| M_INTRA_MSG),
                    ..Default::default()
                });
                self.threads[th].pending_take = Some(self.takes.len() - 1);
            }
            CaretDispatch => {
                let msg = fu(0).unwrap_or(0);
                let c = self.cb(p, fu(1).unwrap_or(0));
                let sub = if self.cbs[c].kind == "subscription" { self.cbs[c].owner } else { None };
                self.takes.push(Take {
                    sub,
                    thread: th,
                    ts,
                    message: msg,
                    src_ts: fi(2),
                    taken: true,
                    method: Some(M_CARET),
                    ..Default::default()
                });
                self.threads[th].pending_take = Some(self.takes.len() - 1);
            }
            RmwTake => {
                self.procs[p].runtime_seen = true;
                let taken = fu(3).map(|x| x != 0).unwrap_or(true);
                let sub = fu(0).map(|h| match self.sub_of_rmw.get(&(p, h)) {
                    Some(&i) => i,
                    None => {
                        let i = Self::obj(&mut self.subs, &mut HashMap::default(), p, 0, "subscription");
                        self.subs[i].rmw_handle = Some(h);
                        self.sub_of_rmw.insert((p, h), i);
                        i
                    }
                });
                self.takes.push(Take {
                    sub,
                    thread: th,
                    ts,
                    rmw_ts: Some(ts),
                    message: fu(1).unwrap_or(0),
                    src_ts: fi(2),
                    taken,
                    method: Some(M_RMW_TS),
                    ..Default::default()
                });
                if taken {
                    self.threads[th].pending_take = Some(self.takes.len() - 1);
                }
            }
            RclTake | RclcppTake => {
                let msg = fu(0).unwrap_or(0);
                if let Some(tk) = self.threads[th].pending_take {
                    let t = &mut self.takes[tk];
                    if t.message == msg || t.message == 0 {
                        if ci.ev == RclTake {
                            t.rcl_ts = Some(ts);
                        } else {
                            t.rclcpp_ts = Some(ts);
                        }
                    }
                }
            }
            ExecWait | ExecGetNext | ExecExecute => {
                let st = match ci.ev {
                    ExecWait => 0u8,
                    ExecGetNext => 1,
                    _ => 2,
                };
                let h = if ci.ev == ExecExecute { fu(0) } else { None };
                if let Some((prev, start, ph)) = self.threads[th].exec.take() {
                    self.exec_states.push(ExecState { thread: th, state: prev, start, end: ts, handle: ph });
                }
                self.threads[th].exec = Some((st, ts, h));
            }
            // ROS 1, Bosch ros1_tracetools.
            Ros1SubCbAdded => {
                if let Some(q) = fu(0) {
                    self.ros1_queues.insert((p, q), ());
                }
                let topic = ft(3);
                let sub = match topic.clone().and_then(|t| self.ros1_sub_by_topic.get(&(p, t)).copied()) {
                    Some(i) => i,
                    None => {
                        self.subs.push(Obj {
                            proc: p,
                            name: topic.clone(),
                            depth: fi(4),
                            ts: Some(ts),
                            known: true,
                            kind: "subscription",
                            handle: fu(0).unwrap_or(0),
                            ..Default::default()
                        });
                        let i = self.subs.len() - 1;
                        if let Some(t) = topic {
                            self.ros1_sub_by_topic.insert((p, t), i);
                        }
                        i
                    }
                };
                self.subs[sub].node = self.node_of.get(&(p, 0)).copied();
                let _ = sub;
            }
            Ros1TimerAdded => {
                let c = self.cb(p, fu(0).unwrap_or(0));
                let period = fi(3).unwrap_or(0) * 1_000_000_000 + fi(4).unwrap_or(0);
                self.timers.push(Obj {
                    proc: p,
                    handle: fu(0).unwrap_or(0),
                    period: Some(period),
                    ts: Some(ts),
                    known: true,
                    kind: "timer",
                    node: self.node_of.get(&(p, 0)).copied(),
                    ..Default::default()
                });
                let t = self.timers.len() - 1;
                self.cbs[c].kind = "timer";
                self.cbs[c].owner = Some(t);
                self.cbs[c].known = true;
                self.cbs[c].symbol = ft(2).or_else(|| ft(1));
                self.cbs[c].ts.get_or_insert(ts);
            }
            Ros1PtrNameInfo => {
                let c = self.cb(p, fu(1).unwrap_or(0));
                if self.cbs[c].symbol.is_none() {
                    self.cbs[c].symbol = ft(0);
                }
            }
            Ros1CallbackStart => {
                let r = fu(0).unwrap_or(0);
                if self.ros1_queues.contains_key(&(p, r)) {
                    // The queue-level span (CallbackQueue::callOneCB around a
                    // subscription): not a callback run of its own.
                    self.threads[th].queue_depth += 1;
                } else {
                    self.procs[p].runtime_seen = true;
                    let c = self.cb(p, r);
                    self.open_run(th, c, ts, false);
                }
            }
            Ros1CallbackEnd => {
                let r = fu(0).unwrap_or(0);
                if self.ros1_queues.contains_key(&(p, r)) {
                    self.threads[th].queue_depth = self.threads[th].queue_depth.saturating_sub(1);
                } else {
                    let c = self.cb(p, r);
                    self.close_run(th, c, ts);
                }
            }
            Ros1SubCbStart => {
                self.procs[p].runtime_seen = true;
                let topic = ft(0);
                let c = self.cb(p, fu(3).unwrap_or(0));
                if self.cbs[c].kind == "unknown" {
                    self.cbs[c].kind = "subscription";
                    self.cbs[c].known = true;
                    self.cbs[c].owner = topic.and_then(|t| self.ros1_sub_by_topic.get(&(p, t)).copied());
                }
                self.open_run(th, c, ts, false);
            }
            Ros1SubCbEnd => {
                let c = self.cb(p, fu(3).unwrap_or(0));
                self.close_run(th, c, ts);
            }
            Ros1PubQueued => {
                self.procs[p].runtime_seen = true;
                let topic = ft(0);
                let publisher = match topic.clone() {
                    Some(t) => match self.ros1_pub_by_topic.get(&(p, t.clone())) {
                        Some(&i) => Some(i),
                        None => {
                            self.pubs.push(Obj {
                                proc: p,
                                name: Some(t.clone()),
                                known: false,
                                kind: "publisher",
                                node: self.node_of.get(&(p, 0)).copied(),
                                ts: Some(ts),
                                ..Default::default()
                            });
                            let i = self.pubs.len() - 1;
                            self.ros1_pub_by_topic.insert((p, t), i);
                            Some(i)
                        }
                    },
                    None => None,
                };
                let run = self.threads[th].stack.last().copied();
                self.publications.push(Publication {
                    publisher,
                    thread: th,
                    run,
                    ts,
                    rclcpp_ts: Some(ts),
                    message: fu(1).unwrap_or(0),
                    ..Default::default()
                });
            }
            MsgLinkPeriodic | MsgLinkPartial => {
                let md = &set.traces[s.trace].md;
                let ec = &md.events[s.cur_class];
                let subs = seq_values(ec.payload.as_ref(), tape, base, "subs");
                let pubs = seq_values(ec.payload.as_ref(), tape, base, "pubs");
                let kind = if ci.ev == MsgLinkPeriodic { "periodic_async" } else { "partial_sync" };
                self.annotations.push((p, kind, ts, subs, pubs));
            }
            // ROS 1, roscope's own tracer (docs/ros1-tracer.md).
            R1NodeInit => {
                self.r1_node(p, ft(0).unwrap_or_default(), ts);
            }
            R1PubInit | R1SubInit | R1TimerInit | R1SrvInit => {
                let (ns, name_ix) = match ci.ev {
                    R1PubInit => (ft(1), 4),
                    R1SubInit => (ft(2), 5),
                    _ => (ft(2), 4),
                };
                let node_name = if ns.as_deref().map_or(true, |x| x.is_empty() || x == "/") { ft(name_ix) } else { ns };
                let node = node_name.map(|n| self.r1_node(p, n, ts));
                match ci.ev {
                    R1PubInit => {
                        let o = Obj {
                            proc: p,
                            node,
                            handle: fu(0).unwrap_or(0),
                            name: ft(2),
                            depth: fi(3),
                            ts: Some(ts),
                            kind: "publisher",
                            ..Default::default()
                        };
                        Self::init_obj(&mut self.pubs, &mut self.pub_of, o, false);
                    }
                    R1SubInit => {
                        let o = Obj {
                            proc: p,
                            node,
                            handle: fu(0).unwrap_or(0),
                            name: ft(3),
                            depth: fi(4),
                            ts: Some(ts),
                            kind: "subscription",
                            ..Default::default()
                        };
                        let sub = Self::init_obj(&mut self.subs, &mut self.sub_of, o, false);
                        self.cb_added(p, fu(1).unwrap_or(0), "subscription", sub, ts);
                    }
                    R1TimerInit => {
                        let o = Obj {
                            proc: p,
                            node,
                            handle: fu(0).unwrap_or(0),
                            period: fi(3),
                            ts: Some(ts),
                            kind: "timer",
                            ..Default::default()
                        };
                        let t = Self::init_obj(&mut self.timers, &mut self.timer_of, o, false);
                        self.cb_added(p, fu(1).unwrap_or(0), "timer", t, ts);
                    }
                    _ => {
                        let o = Obj {
                            proc: p,
                            node,
                            handle: fu(0).unwrap_or(0),
                            name: ft(3),
                            ts: Some(ts),
                            kind: "service",
                            ..Default::default()
                        };
                        let sv = Self::init_obj(&mut self.services, &mut self.service_of, o, false);
                        self.cb_added(p, fu(1).unwrap_or(0), "service", sv, ts);
                    }
                }
            }
            R1CbRegister => {
                let c = self.cb(p, fu(0).unwrap_or(0));
                self.cbs[c].symbol = ft(2);
                self.cbs[c].known = true;
            }
            R1LinkTxInit | R1LinkRxInit => {
                let (Some(l), Some(local), Some(remote)) = (fu(0), ft(2), ft(3)) else { return };
                if ci.ev == R1LinkTxInit {
                    self.r1_tx_link.insert((p, l), (local.clone(), remote.clone()));
                    self.r1_tx_by_addr.insert((local, remote), (p, l));
                    self.r1_tx_writes.insert((p, l), Vec::new());
                } else {
                    self.r1_rx_link.insert((p, l), (local, remote));
                }
            }
            R1Publish => {
                self.procs[p].runtime_seen = true;
                let publisher = fu(0).map(|h| Self::obj(&mut self.pubs, &mut self.pub_of, p, h, "publisher"));
                let run = self.threads[th].stack.last().copied();
                let msg = fu(2).unwrap_or(0);
                self.publications.push(Publication {
                    publisher,
                    thread: th,
                    run,
                    ts,
                    rclcpp_ts: Some(ts),
                    message: msg,
                    ..Default::default()
                });
                let pi = self.publications.len() - 1;
                if let Some(id) = fu(1) {
                    self.r1_pub_by_id.insert((p, id), pi);
                }
                if msg != 0 {
                    self.r1_obj.insert((p, msg), pi);
                }
                self.threads[th].pending_pub = Some(pi);
            }
            R1PublishBuffer => {
                if let (Some(id), Some(b)) = (fu(0), fu(1)) {
                    if let Some(&pi) = self.r1_pub_by_id.get(&(p, id)) {
                        self.publications[pi].rmw_ts = Some(ts);
                        self.r1_buf.insert((p, b), R1Src::Publication(pi));
                    }
                }
            }
            R1LinkTxWrite => {
                if let (Some(l), Some(b)) = (fu(0), fu(1)) {
                    let src = self.r1_buf.get(&(p, b)).copied();
                    if let (Some(R1Src::Publication(pi)), Some(w)) = (src, self.r1_tx_writes.get_mut(&(p, l))) {
                        w.push(pi);
                    } else if let Some(w) = self.r1_tx_writes.get_mut(&(p, l)) {
                        // A write whose message is unknown still takes its place in the order.
                        w.push(usize::MAX);
                    }
                }
            }
            R1LinkRxMessage => {
                if let (Some(l), Some(b), Some(k)) = (fu(0), fu(1), fu(3)) {
                    self.r1_rx.push((p, l, k));
                    let i = self.r1_rx.len() - 1;
                    self.r1_buf.insert((p, b), R1Src::Rx(i));
                }
            }
            R1MessageQueue => {
                let d = fu(0).unwrap_or(0);
                let b = fu(2).unwrap_or(0);
                let o = fu(3).unwrap_or(0);
                let src = if b != 0 {
                    self.r1_buf.get(&(p, b)).copied()
                } else if o != 0 {
                    self.r1_obj.get(&(p, o)).map(|&pi| R1Src::Publication(pi))
                } else {
                    None
                };
                if let Some(src) = src {
                    self.r1_queued.insert((p, d), (src, ts));
                } else {
                    self.r1_queued.remove(&(p, d));
                }
            }
            R1CallbackStart => {
                self.procs[p].runtime_seen = true;
                let c = self.cb(p, fu(0).unwrap_or(0));
                self.open_run(th, c, ts, false);
                let r = self.runs.len() - 1;
                let d = fu(1).unwrap_or(0);
                if d != 0 {
                    let sub = if self.cbs[c].kind == "subscription" { self.cbs[c].owner } else { None };
                    let (src, qts) = match self.r1_queued.get(&(p, d)) {
                        Some(&(s, q)) => (Some(s), q),
                        None => (None, ts),
                    };
                    let (publication, rx) = match src {
                        Some(R1Src::Publication(pi)) => (Some(pi), None),
                        Some(R1Src::Rx(i)) => (None, Some(i)),
                        None => (None, None),
                    };
                    let intra = publication.is_some();
                    self.takes.push(Take {
                        sub,
                        thread: th,
                        ts: qts,
                        message: 0,
                        taken: true,
                        run: Some(r),
                        intra,
                        publication,
                        r1_rx: rx,
                        method: Some(M_ROS1_ROSCOPE),
                        ..Default::default()
                    });
                }
            }
            R1CallbackEnd => {
                let c = self.cb(p, fu(0).unwrap_or(0));
                self.close_run(th, c, ts);
            }
            R1ProcessInit => {}
            Ros1SubMsgQueued => {
                let topic = ft(0);
                let sub = topic.and_then(|t| self.ros1_sub_by_topic.get(&(p, t)).copied());
                self.takes.push(Take { sub, thread: th, ts, message: fu(4).unwrap_or(0), taken: true, ..Default::default() });
            }
        }
    }

    /// An rcl publisher or subscription init event: a new object, registered by
    /// its rcl and rmw handles, with the GID its rmw init event gave.
    #[allow(clippy::too_many_arguments)]
    fn endpoint_init(
        &mut self,
        kind: &'static str,
        p: usize,
        node: Option<u64>,
        handle: u64,
        rmw: Option<u64>,
        topic: Option<String>,
        depth: Option<i64>,
        ts: u64,
        repeat: bool,
    ) {
        let node = node.map(|n| Self::obj(&mut self.nodes, &mut self.node_of, p, n, "node"));
        let gid = rmw.and_then(|r| self.gid_of.get(&(p, r)).cloned());
        let o = Obj { proc: p, node, handle, rmw_handle: rmw, name: topic, depth, gid, ts: Some(ts), kind, ..Default::default() };
        let (list, map, rmw_map) = if kind == "publisher" {
            (&mut self.pubs, &mut self.pub_of, &mut self.pub_of_rmw)
        } else {
            (&mut self.subs, &mut self.sub_of, &mut self.sub_of_rmw)
        };
        let i = Self::init_obj(list, map, o, repeat);
        if let Some(r) = rmw {
            rmw_map.insert((p, r), i);
        }
    }

    /// A ROS 1 logical node (NodeHandle namespace, or the process's node name).
    fn r1_node(&mut self, p: usize, name: String, ts: u64) -> usize {
        if let Some(&n) = self.r1_node_of.get(&(p, name.clone())) {
            return n;
        }
        self.nodes.push(Obj { proc: p, name: Some(name.clone()), ts: Some(ts), known: true, kind: "node", ..Default::default() });
        let n = self.nodes.len() - 1;
        self.r1_node_of.insert((p, name), n);
        n
    }

    /// The publication a received ROS 1 message came from: its connection's
    /// publisher side, by addresses, and the write with the same index.
    fn r1_resolve(&self, rx: usize) -> Option<usize> {
        let (p, l, k) = self.r1_rx[rx];
        let (local, remote) = self.r1_rx_link.get(&(p, l))?;
        let tx = self.r1_tx_by_addr.get(&(remote.clone(), local.clone()))?;
        let pi = *self.r1_tx_writes.get(tx)?.get(k as usize)?;
        (pi != usize::MAX).then_some(pi)
    }

    fn open_run(&mut self, th: usize, c: usize, ts: u64, intra: bool) {
        let parent = self.threads[th].stack.last().copied();
        let depth = self.threads[th].stack.len() as u32;
        self.runs.push(Run { cb: c, thread: th, start: ts, end: None, intra, depth, parent });
        let r = self.runs.len() - 1;
        self.threads[th].stack.push(r);
    }

    fn close_run(&mut self, th: usize, c: usize, ts: u64) {
        let stack = &mut self.threads[th].stack;
        match stack.iter().rposition(|&r| self.runs[r].cb == c) {
            Some(pos) => {
                // Runs above it never ended (lost events): they stay open.
                let r = stack[pos];
                self.unmatched_starts += (stack.len() - pos - 1) as u64;
                stack.truncate(pos);
                self.runs[r].end = Some(ts);
            }
            None => self.unmatched_ends += 1,
        }
    }

    fn finish(mut self, set: &TraceSet) -> Model {
        // Close executor states still open at the end of the trace.
        for (ti, t) in self.threads.iter_mut().enumerate() {
            if let Some((st, start, h)) = t.exec.take() {
                self.exec_states.push(ExecState { thread: ti, state: st, start, end: t.last, handle: h });
            }
            self.unmatched_starts += t.stack.len() as u64;
        }
        let links = self.link();
        // What only matching needed can go before the tables are built.
        self.r1_tx_writes = HashMap::default();
        self.r1_buf = HashMap::default();
        self.r1_obj = HashMap::default();
        self.r1_queued = HashMap::default();
        self.r1_pub_by_id = HashMap::default();
        self.rb_slot = HashMap::default();
        self.intra_msg = HashMap::default();
        self.tables(set, links)
    }

    /// Transport links: each publication to every take / callback run it fed.
    fn link(&self) -> Vec<(usize, Option<usize>, Option<usize>, &'static str)> {
        let mut links = Vec::new();
        let topic_of_pub = |pb: &Publication| pb.publisher.and_then(|i| self.pubs[i].name.clone());
        let topic_of_take = |t: &Take| t.sub.and_then(|i| self.subs[i].name.clone());
        // 1 and 2: exact source-stamp identity within a topic.
        let mut by_stamp: HashMap<(String, i64), Vec<usize>> = HashMap::default();
        for (i, pb) in self.publications.iter().enumerate() {
            if let (Some(st), Some(topic)) = (pb.src_ts, topic_of_pub(pb)) {
                by_stamp.entry((topic, st)).or_default().push(i);
            }
        }
        let mut linked_takes = vec![false; self.takes.len()];
        for (ti, t) in self.takes.iter().enumerate() {
            if let Some(pi) = t.publication.or_else(|| t.r1_rx.and_then(|i| self.r1_resolve(i))) {
                links.push((pi, Some(ti), t.run, t.method.unwrap_or(M_INTRA_RB)));
                linked_takes[ti] = true;
                continue;
            }
            if t.intra || !t.taken {
                continue;
            }
            if let (Some(st), Some(topic)) = (t.src_ts, topic_of_take(t)) {
                if let Some(cands) = by_stamp.get(&(topic, st)) {
                    // Normally one; with duplicates, the latest not after the take.
                    let best = cands
                        .iter()
                        .copied()
                        .filter(|&c| self.publications[c].ts <= t.ts)
                        .max_by_key(|&c| self.publications[c].ts)
                        .or(cands.first().copied());
                    if let Some(pi) = best {
                        let m = if t.method == Some(M_CARET) { M_CARET } else { M_RMW_TS };
                        links.push((pi, Some(ti), t.run, m));
                        linked_takes[ti] = true;
                    }
                }
            }
        }
        // Heuristic: the publishing host's wall clock, as the DDS source stamp.
        if self.opts.heuristics {
            let mut by_topic: HashMap<(usize, String), Vec<(i64, usize)>> = HashMap::default();
            for (i, pb) in self.publications.iter().enumerate() {
                if pb.src_ts.is_some() || pb.intra {
                    continue;
                }
                if let Some(topic) = topic_of_pub(pb) {
                    let host = self.procs[self.threads[pb.thread].proc].host;
                    let trace = self.procs[self.threads[pb.thread].proc].trace;
                    let wall = self.offsets[trace].wrapping_add(pb.rmw_ts.unwrap_or(pb.ts) as i64);
                    by_topic.entry((host, topic)).or_default().push((wall, i));
                }
            }
            for v in by_topic.values_mut() {
                v.sort();
            }
            for (ti, t) in self.takes.iter().enumerate() {
                if linked_takes[ti] || t.intra || !t.taken {
                    continue;
                }
                let (Some(st), Some(topic)) = (t.src_ts, topic_of_take(t)) else { continue };
                let host = self.procs[self.threads[t.thread].proc].host;
                if let Some(v) = by_topic.get(&(host, topic)) {
                    // The publication whose wall time is nearest the stamp,
                    // within 5 ms (the DDS stamp is taken just after rmw_publish).
                    let k = v.partition_point(|(w, _)| *w <= st);
                    let best = [k.checked_sub(1), Some(k)]
                        .into_iter()
                        .flatten()
                        .filter_map(|j| v.get(j))
                        .min_by_key(|(w, _)| (st - *w).unsigned_abs());
                    if let Some(&(w, pi)) = best {
                        if (st - w).unsigned_abs() <= 5_000_000 {
                            links.push((pi, Some(ti), t.run, M_HEUR_WALL));
                        }
                    }
                }
            }
        }
        links
    }

    fn tables(mut self, set: &TraceSet, links: Vec<(usize, Option<usize>, Option<usize>, &'static str)>) -> Model {
        let mut out = Vec::new();
        let losses = set.losses();
        let mut t = Table::new("hosts", &[("host_id", 'i'), ("hostname", 's')]);
        for (i, h) in self.hosts.iter().enumerate() {
            t.row().i(Some(i as i64)).s(Some(h)).done();
        }
        out.push(t);
        let mut t = Table::new(
            "traces",
            &[
                ("trace_id", 'i'),
                ("host_id", 'i'),
                ("path", 's'),
                ("rel", 's'),
                ("domain", 's'),
                ("clock_offset_ns", 'i'),
                ("events_discarded", 'i'),
                ("packets_lost", 'i'),
            ],
        );
        for (i, tr) in set.traces.iter().enumerate() {
            let dom = match tr.md.env.get("domain") {
                Some(roscope_ctf::metadata::EnvValue::Str(s)) => Some(s.clone()),
                _ => None,
            };
            let (d, pl) =
                losses.iter().filter(|l| l.trace == i).fold((0u64, 0u64), |(a, b), l| (a + l.events_discarded, b + l.packets_lost));
            t.row()
                .i(Some(i as i64))
                .i(Some(self.trace_host[i] as i64))
                .s(Some(&tr.dir.display().to_string()))
                .s(Some(&tr.rel))
                .s(dom.as_deref())
                .i(Some(tr.offset_ns))
                .i(Some(d as i64))
                .i(Some(pl as i64))
                .done();
        }
        out.push(t);
        let mut t = Table::new("lost", &[("trace_id", 'i'), ("stream", 's'), ("begin_ts", 'i'), ("end_ts", 'i'), ("events", 'i')]);
        for l in &losses {
            for (b, e, n) in &l.intervals {
                t.row()
                    .i(Some(l.trace as i64))
                    .s(l.files.first().map(|x| x.as_str()))
                    .i(Some(*b as i64))
                    .i(Some(*e as i64))
                    .i(Some(*n as i64))
                    .done();
            }
        }
        out.push(t);
        let mut t = Table::new(
            "processes",
            &[
                ("proc_id", 'i'),
                ("host_id", 'i'),
                ("trace_id", 'i'),
                ("pid", 'i'),
                ("procname", 's'),
                ("first_ts", 'i'),
                ("last_ts", 'i'),
                ("events", 'i'),
            ],
        );
        for (i, p) in self.procs.iter().enumerate() {
            if !p.included {
                continue;
            }
            t.row()
                .i(Some(i as i64))
                .i(Some(p.host as i64))
                .i(Some(p.trace as i64))
                .i(Some(p.pid))
                .s(Some(&p.procname))
                .i(Some(p.first as i64))
                .i(Some(p.last as i64))
                .i(Some(p.events as i64))
                .done();
        }
        out.push(t);
        let mut t = Table::new(
            "threads",
            &[("thread_id", 'i'), ("proc_id", 'i'), ("tid", 'i'), ("first_ts", 'i'), ("last_ts", 'i'), ("events", 'i')],
        );
        for (i, th) in self.threads.iter().enumerate() {
            t.row()
                .i(Some(i as i64))
                .i(Some(th.proc as i64))
                .i(Some(th.tid))
                .i(Some(th.first as i64))
                .i(Some(th.last as i64))
                .i(Some(th.events as i64))
                .done();
        }
        out.push(t);
        let obj_table = |name: &'static str, idcol: &'static str, list: &Vec<Obj>| {
            let mut t = Table::new(
                name,
                &[
                    (idcol, 'i'),
                    ("proc_id", 'i'),
                    ("node_id", 'i'),
                    ("handle", 'u'),
                    ("rmw_handle", 'u'),
                    ("rclcpp_handle", 'u'),
                    ("name", 's'),
                    ("namespace", 's'),
                    ("queue_depth", 'i'),
                    ("gid", 's'),
                    ("period_ns", 'i'),
                    ("init_ts", 'i'),
                    ("known", 'i'),
                ],
            );
            for (i, o) in list.iter().enumerate() {
                t.row()
                    .i(Some(i as i64))
                    .i(Some(o.proc as i64))
                    .i(o.node.map(|x| x as i64))
                    .u(Some(o.handle))
                    .u(o.rmw_handle)
                    .u(o.extra)
                    .s(o.name.as_deref())
                    .s(o.ns.as_deref())
                    .i(o.depth)
                    .s(o.gid.as_deref())
                    .i(o.period)
                    .i(o.ts.map(|x| x as i64))
                    .i(Some(o.known as i64))
                    .done();
            }
            t
        };
        out.push(obj_table("nodes", "node_id", &self.nodes));
        out.push(obj_table("publishers", "publisher_id", &self.pubs));
        out.push(obj_table("subscriptions", "subscription_id", &self.subs));
        out.push(obj_table("timers", "timer_id", &self.timers));
        out.push(obj_table("services", "service_id", &self.services));
        out.push(obj_table("clients", "client_id", &self.clients));
        let mut t = Table::new(
            "callbacks",
            &[
                ("callback_id", 'i'),
                ("proc_id", 'i'),
                ("handle", 'u'),
                ("symbol", 's'),
                ("kind", 's'),
                ("owner_id", 'i'),
                ("node_id", 'i'),
                ("init_ts", 'i'),
                ("known", 'i'),
            ],
        );
        for (i, c) in self.cbs.iter().enumerate() {
            let node = match (c.kind, c.owner) {
                ("subscription", Some(o)) => self.subs[o].node,
                ("timer", Some(o)) => self.timers[o].node,
                ("service", Some(o)) => self.services[o].node,
                ("client", Some(o)) => self.clients[o].node,
                _ => None,
            };
            t.row()
                .i(Some(i as i64))
                .i(Some(c.proc as i64))
                .u(Some(c.handle))
                .s(c.symbol.as_deref())
                .s(Some(c.kind))
                .i(c.owner.map(|x| x as i64))
                .i(node.map(|x| x as i64))
                .i(c.ts.map(|x| x as i64))
                .i(Some(c.known as i64))
                .done();
        }
        out.push(t);
        let mut t = Table::new(
            "callback_runs",
            &[
                ("run_id", 'i'),
                ("callback_id", 'i'),
                ("thread_id", 'i'),
                ("start_ts", 'i'),
                ("end_ts", 'i'),
                ("duration_ns", 'i'),
                ("is_intra", 'i'),
                ("depth", 'i'),
                ("parent_run_id", 'i'),
            ],
        );
        for (i, r) in self.runs.iter().enumerate() {
            t.row()
                .i(Some(i as i64))
                .i(Some(r.cb as i64))
                .i(Some(r.thread as i64))
                .i(Some(r.start as i64))
                .i(r.end.map(|x| x as i64))
                .i(r.end.map(|e| e as i64 - r.start as i64))
                .i(Some(r.intra as i64))
                .i(Some(r.depth as i64))
                .i(r.parent.map(|x| x as i64))
                .done();
        }
        out.push(t);
        self.runs = Vec::new();
        let mut t = Table::new(
            "publications",
            &[
                ("publication_id", 'i'),
                ("publisher_id", 'i'),
                ("thread_id", 'i'),
                ("run_id", 'i'),
                ("ts", 'i'),
                ("rclcpp_ts", 'i'),
                ("rcl_ts", 'i'),
                ("rmw_ts", 'i'),
                ("message", 'u'),
                ("source_ts", 'i'),
                ("is_intra", 'i'),
            ],
        );
        for (i, p) in self.publications.iter().enumerate() {
            t.row()
                .i(Some(i as i64))
                .i(p.publisher.map(|x| x as i64))
                .i(Some(p.thread as i64))
                .i(p.run.map(|x| x as i64))
                .i(Some(p.ts as i64))
                .i(p.rclcpp_ts.map(|x| x as i64))
                .i(p.rcl_ts.map(|x| x as i64))
                .i(p.rmw_ts.map(|x| x as i64))
                .u(Some(p.message))
                .i(p.src_ts)
                .i(Some(p.intra as i64))
                .done();
        }
        out.push(t);
        self.publications = Vec::new();
        let mut t = Table::new(
            "takes",
            &[
                ("take_id", 'i'),
                ("subscription_id", 'i'),
                ("thread_id", 'i'),
                ("run_id", 'i'),
                ("ts", 'i'),
                ("rmw_ts", 'i'),
                ("rcl_ts", 'i'),
                ("rclcpp_ts", 'i'),
                ("message", 'u'),
                ("source_ts", 'i'),
                ("taken", 'i'),
                ("is_intra", 'i'),
            ],
        );
        for (i, k) in self.takes.iter().enumerate() {
            t.row()
                .i(Some(i as i64))
                .i(k.sub.map(|x| x as i64))
                .i(Some(k.thread as i64))
                .i(k.run.map(|x| x as i64))
                .i(Some(k.ts as i64))
                .i(k.rmw_ts.map(|x| x as i64))
                .i(k.rcl_ts.map(|x| x as i64))
                .i(k.rclcpp_ts.map(|x| x as i64))
                .u(Some(k.message))
                .i(k.src_ts)
                .i(Some(k.taken as i64))
                .i(Some(k.intra as i64))
                .done();
        }
        out.push(t);
        self.takes = Vec::new();
        let mut t = Table::new("links", &[("publication_id", 'i'), ("take_id", 'i'), ("run_id", 'i'), ("method", 's'), ("heuristic", 'i')]);
        for (p, k, r, m) in &links {
            t.row().i(Some(*p as i64)).i(k.map(|x| x as i64)).i(r.map(|x| x as i64)).s(Some(m)).i(Some((*m == M_HEUR_WALL) as i64)).done();
        }
        out.push(t);
        let mut t = Table::new("annotations", &[("annotation_id", 'i'), ("proc_id", 'i'), ("kind", 's'), ("ts", 'i')]);
        for (i, (p, k, ts, _, _)) in self.annotations.iter().enumerate() {
            t.row().i(Some(i as i64)).i(Some(*p as i64)).s(Some(k)).i(Some(*ts as i64)).done();
        }
        out.push(t);
        let mut t = Table::new(
            "annotation_members",
            &[("annotation_id", 'i'), ("role", 's'), ("handle", 'u'), ("subscription_id", 'i'), ("publisher_id", 'i')],
        );
        for (i, (p, _, _, subs, pubs)) in self.annotations.iter().enumerate() {
            for h in subs {
                let sid = self.sub_of.get(&(*p, *h)).or_else(|| self.sub_of_rclcpp.get(&(*p, *h))).map(|x| *x as i64);
                t.row().i(Some(i as i64)).s(Some("subscription")).u(Some(*h)).i(sid).i(None).done();
            }
            for h in pubs {
                let pid = self.pub_of.get(&(*p, *h)).map(|x| *x as i64);
                t.row().i(Some(i as i64)).s(Some("publisher")).u(Some(*h)).i(None).i(pid).done();
            }
        }
        out.push(t);
        let mut t =
            Table::new("executor_states", &[("thread_id", 'i'), ("state", 's'), ("start_ts", 'i'), ("end_ts", 'i'), ("handle", 'u')]);
        for e in &self.exec_states {
            t.row()
                .i(Some(e.thread as i64))
                .s(Some(EXEC_STATES[e.state as usize]))
                .i(Some(e.start as i64))
                .i(Some(e.end as i64))
                .u(e.handle)
                .done();
        }
        out.push(t);
        let stats = vec![
            ("events".to_string(), self.events as i64),
            ("unmatched_callback_ends".to_string(), self.unmatched_ends as i64),
            ("unmatched_callback_starts".to_string(), self.unmatched_starts as i64),
            ("events_of_other_recordings".to_string(), self.excluded_events as i64),
            ("processes_of_other_recordings".to_string(), self.procs.iter().filter(|p| !p.included).count() as i64),
        ];
        Model { tables: out, stats }
    }
}

/// The values of a sequence or array field of a struct scope, found by walking it.
fn seq_values(ty: Option<&roscope_ctf::types::Ty>, tape: &[Val], start: usize, name: &str) -> Vec<u64> {
    use roscope_ctf::types::Ty;
    let Some(Ty::Struct(st)) = ty else { return vec![] };
    let mut i = start;
    for f in &st.fields {
        if f.name == name {
            return match &f.ty {
                Ty::Seq { .. } => match tape.get(i) {
                    Some(Val::Len(n)) => {
                        tape.get(i + 1..i + 1 + *n as usize).map(|v| v.iter().filter_map(|x| vu(Some(x))).collect()).unwrap_or_default()
                    }
                    _ => vec![],
                },
                Ty::Array { len, .. } => {
                    tape.get(i..i + *len as usize).map(|v| v.iter().filter_map(|x| vu(Some(x))).collect()).unwrap_or_default()
                }
                _ => vec![],
            };
        }
        roscope_ctf::stream::skip(&f.ty, tape, &mut i);
    }
    vec![]
}

fn gid_hex(s: &StreamReader, ci: &ClassInfo, k: usize) -> Option<String> {
    let start = s.payload_start + ci.ix.get(k).copied().flatten()?;
    let md = &s.md;
    let ec = &md.events[s.cur_class];
    let Some(roscope_ctf::types::Ty::Struct(st)) = ec.payload.as_ref() else { return None };
    let f = st.fields.iter().find(|f| f.name == "gid")?;
    let n = match &f.ty {
        roscope_ctf::types::Ty::Array { len, .. } => *len as usize,
        _ => return None,
    };
    let mut out = String::with_capacity(n * 2);
    for v in s.tape.get(start..start + n)? {
        out.push_str(&format!("{:02x}", vu(Some(v))?));
    }
    Some(out)
}

/// Builds the model from every event of `set`, in time order.
pub fn build(set: &mut TraceSet, opts: Options, scope: Scope) -> Model {
    let mut b = Builder::new(set, opts, scope);
    let t0 = std::time::Instant::now();
    let mut n: u64 = 0;
    while let Some(i) = set.next() {
        b.run_event(set, i);
        n += 1;
        if opts.progress && n % (1 << 20) == 0 {
            let (done, total) = set.progress();
            eprint!("\rroscope: {:>6.1}%  {} events  {:.1} s", 100.0 * done as f64 / total.max(1) as f64, n, t0.elapsed().as_secs_f64());
        }
    }
    if opts.progress && n >= (1 << 20) {
        eprintln!("\rroscope: 100.0%  {} events  {:.1} s", n, t0.elapsed().as_secs_f64());
    }
    b.finish(set)
}
