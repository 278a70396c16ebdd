//! CARET's executor structure events (`ros2_caret:*`, from its hook library;
//! ros2_tracing has none): the executors of a process, the callback groups
//! added to each, and the timers, subscriptions, services and clients each
//! group holds. Members are named by rcl handle and resolved to the model's
//! objects (and their callbacks) when the tables are made, so the order of
//! init events does not matter (CARET re-emits them when tracing starts after
//! the application).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::builder::{Builder, Event, Handler};
use crate::events::caret_exec::*;
use crate::events::Ev;
use crate::registry::{HandleMap, Layer};
use crate::schema::{self, CallbackKind};
use crate::table::Table;

/// CARET's executor structure: executors, callback groups and their members.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::ConstructExecutor, Builder::executor_structure),
    (Ev::ConstructStaticExecutor, Builder::executor_structure),
    (Ev::CollectorToExecutor, Builder::executor_structure),
    (Ev::AddCbGroup, Builder::executor_structure),
    (Ev::AddCbGroupStatic, Builder::executor_structure),
    (Ev::CbGroupToCollector, Builder::executor_structure),
    (Ev::CbGroupAddTimer, Builder::executor_structure),
    (Ev::CbGroupAddSub, Builder::executor_structure),
    (Ev::CbGroupAddService, Builder::executor_structure),
    (Ev::CbGroupAddClient, Builder::executor_structure),
];

pub struct Executor {
    pub proc: usize,
    pub handle: u64,
    pub collector: Option<u64>,
    pub kind: Option<String>,
    pub ts: u64,
}

pub struct Group {
    pub proc: usize,
    pub handle: u64,
    pub executor: Option<usize>,
    /// The entities collector it was added to, when the event names one
    /// (its executor is then found through the collector).
    pub collector: Option<u64>,
    pub kind: Option<String>,
    pub ts: u64,
}

pub struct Member {
    pub group: usize,
    pub kind: CallbackKind,
    pub handle: u64,
    pub ts: u64,
}

/// The executor structure read so far.
#[derive(Default)]
pub struct Groups {
    pub executors: Vec<Executor>,
    executor_of: HandleMap<usize>,
    executor_of_collector: HandleMap<usize>,
    pub groups: Vec<Group>,
    group_of: HandleMap<usize>,
    pub members: Vec<Member>,
    member_seen: FxHashSet<(usize, CallbackKind, u64)>,
}

impl Groups {
    /// A construct event: a new executor unless it repeats the one this
    /// address names (same type).
    fn construct(&mut self, proc: usize, handle: u64, collector: Option<u64>, kind: Option<String>, ts: u64) {
        let known = self.executor_of.get(proc, handle).copied().filter(|&x| {
            let old = &self.executors[x].kind;
            old.is_none() || *old == kind
        });
        if let Some(x) = known {
            let old = &mut self.executors[x];
            if old.kind.is_none() {
                (old.kind, old.ts) = (kind.clone(), ts);
            }
        }
        let x = known.unwrap_or_else(|| {
            self.executors.push(Executor { proc, handle, collector: None, kind, ts });
            let x = self.executors.len() - 1;
            self.executor_of.insert(proc, handle, x);
            x
        });
        if let Some(c) = collector {
            self.collect(proc, x, c);
        }
    }

    /// Executor `x` gathers its entities through collector `c`.
    fn collect(&mut self, proc: usize, x: usize, c: u64) {
        self.executors[x].collector = Some(c);
        self.executor_of_collector.insert(proc, c, x);
    }

    /// A group added to an executor (or to a collector): a new group unless
    /// it repeats the one this address names (same executor and type).
    fn add_group(&mut self, proc: usize, handle: u64, executor: Option<usize>, collector: Option<u64>, kind: Option<String>, ts: u64) {
        if let Some(&g) = self.group_of.get(proc, handle) {
            let old = &mut self.groups[g];
            let unannounced = old.executor.is_none() && old.collector.is_none() && old.kind.is_none();
            if unannounced {
                (old.executor, old.collector, old.kind) = (executor, collector, kind);
                return;
            }
            if old.executor == executor && old.collector == collector && old.kind == kind {
                return;
            }
        }
        self.groups.push(Group { proc, handle, executor, collector, kind, ts });
        self.group_of.insert(proc, handle, self.groups.len() - 1);
    }

    /// The group this address names, or a new one known only by address.
    fn group(&mut self, proc: usize, handle: u64, ts: u64) -> usize {
        if let Some(&g) = self.group_of.get(proc, handle) {
            return g;
        }
        self.groups.push(Group { proc, handle, executor: None, collector: None, kind: None, ts });
        let g = self.groups.len() - 1;
        self.group_of.insert(proc, handle, g);
        g
    }

    /// The executor of a group: the one it was added to, else its collector's.
    fn executor_of_group(&self, g: &Group) -> Option<usize> {
        g.executor.or_else(|| g.collector.and_then(|c| self.executor_of_collector.get(g.proc, c).copied()))
    }
}

impl Builder {
    /// One of CARET's executor structure events.
    pub(crate) fn executor_structure(&mut self, e: &Event) {
        let (p, ts) = (e.p, e.ts);
        let g = &mut self.groups;
        match e.ev {
            Ev::ConstructExecutor => {
                let addr = e.u(construct_executor::EXECUTOR).unwrap_or(0);
                g.construct(p, addr, None, e.text(construct_executor::TYPE), ts);
            }
            Ev::ConstructStaticExecutor => {
                use construct_static_executor::*;
                g.construct(p, e.u(EXECUTOR).unwrap_or(0), e.u(COLLECTOR), e.text(TYPE), ts);
            }
            Ev::CollectorToExecutor => {
                use executor_entity_collector_to_executor::*;
                let addr = e.u(EXECUTOR).unwrap_or(0);
                let x = match g.executor_of.get(p, addr) {
                    Some(&x) => x,
                    None => {
                        g.construct(p, addr, None, None, ts);
                        g.executors.len() - 1
                    }
                };
                if let Some(c) = e.u(COLLECTOR) {
                    g.collect(p, x, c);
                }
            }
            Ev::AddCbGroup => {
                use add_callback_group::*;
                let x = e.u(EXECUTOR).and_then(|a| g.executor_of.get(p, a).copied());
                g.add_group(p, e.u(GROUP).unwrap_or(0), x, None, e.text(TYPE), ts);
            }
            Ev::AddCbGroupStatic => {
                use add_callback_group_static_executor::*;
                g.add_group(p, e.u(GROUP).unwrap_or(0), None, e.u(COLLECTOR), e.text(TYPE), ts);
            }
            Ev::CbGroupToCollector => {
                use callback_group_to_executor_entity_collector::*;
                g.add_group(p, e.u(GROUP).unwrap_or(0), None, e.u(COLLECTOR), e.text(TYPE), ts);
            }
            _ => {
                let (kind, group, handle) = match e.ev {
                    Ev::CbGroupAddTimer => {
                        (CallbackKind::Timer, e.u(callback_group_add_timer::GROUP), e.u(callback_group_add_timer::HANDLE))
                    }
                    Ev::CbGroupAddSub => (
                        CallbackKind::Subscription,
                        e.u(callback_group_add_subscription::GROUP),
                        e.u(callback_group_add_subscription::HANDLE),
                    ),
                    Ev::CbGroupAddService => {
                        (CallbackKind::Service, e.u(callback_group_add_service::GROUP), e.u(callback_group_add_service::HANDLE))
                    }
                    _ => (CallbackKind::Client, e.u(callback_group_add_client::GROUP), e.u(callback_group_add_client::HANDLE)),
                };
                let gi = g.group(p, group.unwrap_or(0), ts);
                let handle = handle.unwrap_or(0);
                if g.member_seen.insert((gi, kind, handle)) {
                    g.members.push(Member { group: gi, kind, handle, ts });
                }
            }
        }
    }

    /// `executors`, `callback_groups` and `callback_group_members` (members
    /// resolved to the objects their handles name at the end, and to those
    /// objects' callbacks).
    pub(crate) fn group_tables(&self) -> [Table; 3] {
        let g = &self.groups;
        let mut ex = Table::new(&schema::EXECUTORS);
        for (i, x) in g.executors.iter().enumerate() {
            ex.row()
                .i(Some(i as i64))
                .i(Some(x.proc as i64))
                .u(Some(x.handle))
                .u(x.collector)
                .s(x.kind.as_deref())
                .i(Some(x.ts as i64))
                .done();
        }
        let mut gr = Table::new(&schema::CALLBACK_GROUPS);
        for (i, grp) in g.groups.iter().enumerate() {
            gr.row()
                .i(Some(i as i64))
                .i(Some(grp.proc as i64))
                .i(g.executor_of_group(grp).map(|x| x as i64))
                .u(Some(grp.handle))
                .s(grp.kind.as_deref())
                .i(Some(grp.ts as i64))
                .done();
        }
        let o = &self.objs;
        let mut cb_of: FxHashMap<(CallbackKind, usize), usize> = FxHashMap::default();
        for (c, cb) in o.cbs.iter().enumerate() {
            if let Some(owner) = cb.owner {
                cb_of.entry((cb.kind, owner)).or_insert(c);
            }
        }
        let mut me = Table::new(&schema::CALLBACK_GROUP_MEMBERS);
        for m in &g.members {
            let proc = g.groups[m.group].proc;
            let reg = match m.kind {
                CallbackKind::Timer => &o.timers,
                CallbackKind::Subscription => &o.subs,
                CallbackKind::Service => &o.services,
                _ => &o.clients,
            };
            let owner = reg.find(Layer::Rcl, proc, m.handle);
            let cb = owner.and_then(|x| cb_of.get(&(m.kind, x)).copied());
            me.row()
                .i(Some(m.group as i64))
                .s(Some(m.kind.name()))
                .u(Some(m.handle))
                .i(owner.map(|x| x as i64))
                .i(cb.map(|x| x as i64))
                .i(Some(m.ts as i64))
                .done();
        }
        [ex, gr, me]
    }
}
