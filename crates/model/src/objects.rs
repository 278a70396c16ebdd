//! The records the builder keeps while it reads events: the objects
//! (processes, threads, nodes and endpoints, callbacks) and the instances of
//! what they did (callback runs, publications, takes, executor states,
//! annotations, transport links). Each becomes a row of a table of
//! `crate::schema` (see `emit.rs`); row ids are positions in their vectors.

use crate::registry::{HandleMap, Layer, Registry, Unknown};
use crate::schema::{AnnotationKind, CallbackKind, ExecutorState, LinkMethod};

/// Why a process is left out of the recording the trace is scoped to (see `Scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftOut {
    /// Its `roscope_ros1:process_init` names another recording (or none).
    OtherRecording,
    /// Its first event in the trace is a `roscope_ros1` event other than
    /// `process_init`: it started before this recording's session, so it is
    /// not one of the processes this recording started.
    NoProcessInit,
}

#[derive(Default)]
pub struct Proc {
    /// Left out of the recording (see `Scope`), and why; `None`: it belongs to it.
    pub left_out: Option<LeftOut>,
    pub host: usize,
    pub pid: i64,
    pub procname: String,
    pub first: u64,
    pub last: u64,
    pub events: u64,
    /// Has run callbacks or published: a process-start event for its pid
    /// is then a new process (the pid was reused).
    pub runtime_seen: bool,
    pub trace: usize,
}

impl Proc {
    /// Belongs to the recording (see `Scope`).
    #[inline]
    pub fn included(&self) -> bool {
        self.left_out.is_none()
    }
}

pub struct Thread {
    pub proc: usize,
    pub tid: i64,
    pub first: u64,
    pub last: u64,
    pub events: u64,
    /// Open callback runs, innermost last.
    pub stack: Vec<usize>,
    /// The run that ended last (for `roscope_ros2:callback_frame`, which follows its end).
    pub last_closed: Option<usize>,
    /// The publication in progress (its next layer continues it).
    pub pending_pub: Option<usize>,
    /// The latest take, waiting for the callback run it feeds.
    pub pending_take: Option<usize>,
    /// The executor state in progress: (state, since, handle executed).
    pub exec: Option<(ExecutorState, u64, Option<u64>)>,
    /// The end of the last outermost callback run of the executing state in
    /// progress (executor.rs).
    pub exec_done: Option<u64>,
    /// ROS 1 (Bosch): queue-level spans open on this thread.
    pub queue_depth: u32,
    /// The data of the DDS write in progress (`dds:write_pre`, Fast DDS's layout).
    pub dds_data: Option<u64>,
}

impl Thread {
    pub fn new(proc: usize, tid: i64, ts: u64) -> Thread {
        Thread {
            proc,
            tid,
            first: ts,
            last: ts,
            events: 1,
            stack: vec![],
            last_closed: None,
            pending_pub: None,
            pending_take: None,
            exec: None,
            exec_done: None,
            queue_depth: 0,
            dds_data: None,
        }
    }
}

/// A node, publisher, subscription, timer, service or client (one layout:
/// the object tables share their columns).
#[derive(Default, Clone)]
pub struct Obj {
    pub proc: usize,
    pub node: Option<usize>,
    pub handle: u64,
    pub rmw_handle: Option<u64>,
    /// rclcpp-level object (subscriptions).
    pub extra: Option<u64>,
    pub name: Option<String>,
    pub ns: Option<String>,
    pub depth: Option<i64>,
    pub gid: Option<String>,
    pub period: Option<i64>,
    pub ts: Option<u64>,
    pub known: bool,
    /// Named by a state dump (the process was running when the session started).
    pub dumped: bool,
    /// A stand-in made for an rclcpp object seen before its init event, which then named it
    /// part of another object (rclcpp's intra-process subscription: its callback and buffer
    /// are added before `rclcpp_subscription_init` ties it to its subscription). Everything
    /// that referred to it now refers to that object; it is removed when it is the newest
    /// object (`Registry::remove_newest`), else it stays as a row without a name that is not
    /// counted as unnamed (row ids must stay dense).
    pub absorbed: bool,
}

impl Unknown for Obj {
    fn unknown(proc: usize, handle: u64) -> Self {
        Obj { proc, handle, ..Default::default() }
    }
}

impl Registry<Obj> {
    /// An init event: a new object, unless it completes one seen before its
    /// init event, or repeats the one already known for this handle (`repeat`:
    /// CARET re-emits init events; so does a state dump, `o.dumped`).
    pub fn init(&mut self, o: Obj, repeat: bool) -> usize {
        let repeat = repeat || o.dumped;
        if let Some(i) = self.find(Layer::Rcl, o.proc, o.handle) {
            let old = &mut self.items[i];
            if !old.known {
                let ts = old.ts.or(o.ts);
                *old = Obj { ts, known: true, ..o };
                return i;
            }
            if repeat && old.name == o.name {
                return i;
            }
        }
        let (proc, handle) = (o.proc, o.handle);
        self.start(Layer::Rcl, proc, handle, Obj { known: true, ..o })
    }

    /// The object a non-rcl handle names, or a new unknown one (rcl handle 0)
    /// completed by `fill`.
    pub fn find_or_unknown(&mut self, layer: Layer, proc: usize, handle: u64, fill: impl FnOnce(&mut Obj)) -> usize {
        self.find_or_start(layer, proc, handle, || {
            let mut o = Obj::unknown(proc, 0);
            fill(&mut o);
            o
        })
    }
}

pub struct Cb {
    pub proc: usize,
    pub handle: u64,
    pub symbol: Option<String>,
    pub kind: CallbackKind,
    pub owner: Option<usize>,
    pub ts: Option<u64>,
    pub known: bool,
    /// Registered by a state dump (see `Obj::dumped`).
    pub dumped: bool,
}

impl Unknown for Cb {
    fn unknown(proc: usize, handle: u64) -> Self {
        Cb { proc, handle, symbol: None, kind: CallbackKind::Unknown, owner: None, ts: None, known: false, dumped: false }
    }
}

impl Registry<Cb> {
    /// A `*_callback_added` event: the callback of `owner`. A callback address
    /// already bound to another owner (an object that has since died, its
    /// address reused) starts a new callback; the same owner again (CARET's
    /// re-emitted events) or a callback seen only at run time is the same one.
    pub fn added(&mut self, proc: usize, handle: u64, kind: CallbackKind, owner: usize, ts: u64) -> usize {
        if let Some(c) = self.find(Layer::Rcl, proc, handle) {
            let old = &self.items[c];
            if old.owner.is_some() && !(old.kind == kind && old.owner == Some(owner)) {
                self.start(Layer::Rcl, proc, handle, Cb::unknown(proc, handle));
            }
        }
        let c = self.get(proc, handle);
        let cb = &mut self.items[c];
        cb.kind = kind;
        cb.owner = Some(owner);
        cb.ts.get_or_insert(ts);
        c
    }

    /// The subscription a callback belongs to, if it is a subscription's.
    #[inline]
    pub fn subscription_of(&self, c: usize) -> Option<usize> {
        let cb = &self.items[c];
        if cb.kind == CallbackKind::Subscription {
            cb.owner
        } else {
            None
        }
    }
}

/// Every object of a process's ROS graph, by kind.
#[derive(Default)]
pub struct Objects {
    pub nodes: Registry<Obj>,
    pub pubs: Registry<Obj>,
    pub subs: Registry<Obj>,
    pub timers: Registry<Obj>,
    pub services: Registry<Obj>,
    pub clients: Registry<Obj>,
    pub cbs: Registry<Cb>,
    /// The GID (hex) each rmw handle was given by its rmw init event.
    pub gids: HandleMap<String>,
}

pub struct Run {
    pub cb: usize,
    pub thread: usize,
    pub start: u64,
    pub end: Option<u64>,
    pub intra: bool,
    pub depth: u32,
    pub parent: Option<usize>,
}

/// Where a publication's source stamp came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StampSource {
    /// `rmw_publish.timestamp` (Jazzy on).
    RmwPublish,
    /// CARET's `dds_bind_addr_to_stamp.source_stamp`.
    Caret,
    /// The DDS layer's own `dds:write.timestamp` (the message-flow paper's DDS
    /// instrumentation).
    DdsWrite,
}

#[derive(Default)]
pub struct Publication {
    pub publisher: Option<usize>,
    pub thread: usize,
    pub run: Option<usize>,
    pub ts: u64,
    pub rclcpp_ts: Option<u64>,
    pub rcl_ts: Option<u64>,
    pub rmw_ts: Option<u64>,
    pub message: u64,
    pub src_ts: Option<i64>,
    pub src_from: Option<StampSource>,
    pub intra: bool,
    /// An intra-process publication that rclcpp also published to the other processes'
    /// subscriptions (`rclcpp_intra_publish`, then `rclcpp_publish` of the same message).
    pub inter: bool,
}

#[derive(Default, Clone)]
pub struct Take {
    pub sub: Option<usize>,
    pub thread: usize,
    pub ts: u64,
    pub rmw_ts: Option<u64>,
    pub rcl_ts: Option<u64>,
    pub rclcpp_ts: Option<u64>,
    pub message: u64,
    pub src_ts: Option<i64>,
    pub taken: bool,
    pub run: Option<usize>,
    pub intra: bool,
    /// Exact publication, when the take event itself identifies it.
    pub publication: Option<usize>,
    /// ROS 1 (roscope tracer): the received message, resolved at the end.
    pub r1_rx: Option<usize>,
    /// How the take is matched to its publication.
    pub method: Option<LinkMethod>,
}

pub struct ExecState {
    pub thread: usize,
    pub state: ExecutorState,
    pub start: u64,
    pub end: u64,
    pub handle: Option<u64>,
}

/// A causal-link annotation: the subscriptions and publishers it names, by handle.
pub struct Annotation {
    pub proc: usize,
    pub kind: AnnotationKind,
    pub ts: u64,
    pub subs: Vec<u64>,
    pub pubs: Vec<u64>,
}

/// A transport link: a publication to the take (and callback run) it fed.
pub struct Link {
    pub publication: usize,
    pub take: Option<usize>,
    pub run: Option<usize>,
    pub method: LinkMethod,
}
