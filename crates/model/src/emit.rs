//! The model's tables (`crate::schema`), emitted from the builder's records
//! once every event is read. Each table's row values follow its spec's
//! column order.

use roscope_ctf::metadata::EnvValue;
use roscope_ctf::TraceSet;

use crate::builder::Builder;
use crate::objects::{ExecState, LeftOut, Link, Obj, Publication, Run, Take};
use crate::registry::{Layer, Registry};
use crate::schema::{self, AnnotationRole, CallbackKind, LinkMethod, TableSpec};
use crate::sync::HostSync;
use crate::table::Table;
use crate::Model;

fn id(i: usize) -> Option<i64> {
    Some(i as i64)
}

fn opt_id(i: Option<usize>) -> Option<i64> {
    i.map(|x| x as i64)
}

fn ts(t: Option<u64>) -> Option<i64> {
    t.map(|x| x as i64)
}

/// An object table; `known`: whether the trace has the object's init event (`Builder::unnamed`).
pub(crate) fn objects(spec: &'static TableSpec, list: &Registry<Obj>, known: impl Fn(&Obj) -> bool) -> Table {
    let mut t = Table::new(spec);
    for (i, o) in list.iter().enumerate() {
        t.row()
            .i(id(i))
            .i(Some(o.proc as i64))
            .i(opt_id(o.node))
            .u(Some(o.handle))
            .u(o.rmw_handle)
            .u(o.extra)
            .s(o.name.as_deref())
            .s(o.ns.as_deref())
            .i(o.depth)
            .s(o.gid.as_deref())
            .i(o.period)
            .i(ts(o.ts))
            .i(Some(known(o) as i64))
            .i(Some(o.dumped as i64))
            .done();
    }
    t
}

/// `clock_sync`: each host's clock map onto the reference host's.
fn clock_table(syncs: &[HostSync]) -> Table {
    let mut t = Table::new(&schema::CLOCK_SYNC);
    for s in syncs {
        let (x, m) = (&s.sync, &s.sync.map);
        t.row()
            .i(id(s.host))
            .i(id(s.reference))
            .s(Some(x.method.name()))
            .i(id(s.forward))
            .i(id(s.backward))
            .i(Some(m.x0.round() as i64))
            .i(Some(m.y0.round() as i64))
            .f(Some(m.slope))
            .f(Some((1.0 / m.slope - 1.0) * 1e6))
            .f(Some(m.x0 - m.y0))
            .f(x.bound_ns)
            .done();
    }
    t
}

impl Builder {
    /// Emits every table of the model, freeing the records as it goes.
    pub(crate) fn tables(mut self, set: &TraceSet, links: Vec<Link>, syncs: Vec<HostSync>) -> Model {
        let mut out = self.trace_tables(set);
        out.push(self.process_table());
        out.push(self.thread_table());
        out.extend(self.registry_tables());
        out.push(self.callback_table());
        // Each record set is freed once its table is made.
        out.push(run_table(std::mem::take(&mut self.runs).iter()));
        out.push(publication_table(std::mem::take(&mut self.publications).iter()));
        out.push(take_table(std::mem::take(&mut self.takes).iter()));
        out.push(link_table(&links));
        out.push(self.service_call_table());
        out.extend(self.annotation_tables());
        out.push(executor_table(&self.exec_states));
        out.extend(self.group_tables());
        out.push(clock_table(&syncs));
        let mut warnings = self.scope_warnings();
        warnings.extend(self.unnamed_warning());
        warnings.extend(self.service_call_warning());
        warnings.extend(self.gap_warnings(set));
        warnings.extend(self.sync_warnings(&syncs));
        if self.counts.late_updates > 0 {
            warnings.push(format!(
                "{} events came for publications or takes older than the streaming window, already written: \
                 their layer times or links may be missing; load again with a larger --window",
                self.counts.late_updates
            ));
        }
        Model { tables: out, stats: self.stats(), warnings }
    }

    /// `hosts`, `traces`, `lost`.
    fn trace_tables(&self, set: &TraceSet) -> Vec<Table> {
        let losses = set.losses();
        let mut hosts = Table::new(&schema::HOSTS);
        for (i, h) in self.hosts().iter().enumerate() {
            hosts.row().i(id(i)).s(Some(h)).done();
        }
        let mut traces = Table::new(&schema::TRACES);
        for (i, tr) in set.traces.iter().enumerate() {
            let dom = match tr.md.env.get("domain") {
                Some(EnvValue::Str(s)) => Some(s.as_str()),
                _ => None,
            };
            let (d, pl) =
                losses.iter().filter(|l| l.trace == i).fold((0u64, 0u64), |(a, b), l| (a + l.events_discarded, b + l.packets_lost));
            traces
                .row()
                .i(id(i))
                .i(id(self.trace_host(i)))
                .s(Some(&tr.dir.display().to_string()))
                .s(Some(&tr.rel))
                .s(dom)
                .i(Some(tr.offset_ns))
                .i(Some(d as i64))
                .i(Some(pl as i64))
                .done();
        }
        let mut lost = Table::new(&schema::LOST);
        for l in &losses {
            for (b, e, n) in &l.intervals {
                lost.row()
                    .i(id(l.trace))
                    .s(l.files.first().map(|x| x.as_str()))
                    .i(Some(*b as i64))
                    .i(Some(*e as i64))
                    .i(Some(*n as i64))
                    .done();
            }
        }
        vec![hosts, traces, lost]
    }

    pub(crate) fn process_table(&self) -> Table {
        let mut t = Table::new(&schema::PROCESSES);
        for (i, p) in self.procs.iter().enumerate().filter(|(_, p)| p.included()) {
            t.row()
                .i(id(i))
                .i(id(p.host))
                .i(id(p.trace))
                .i(Some(p.pid))
                .s(Some(&p.procname))
                .i(Some(p.first as i64))
                .i(Some(p.last as i64))
                .i(Some(p.events as i64))
                .done();
        }
        t
    }

    pub(crate) fn thread_table(&self) -> Table {
        let mut t = Table::new(&schema::THREADS);
        for (i, th) in self.threads.iter().enumerate() {
            t.row()
                .i(id(i))
                .i(id(th.proc))
                .i(Some(th.tid))
                .i(Some(th.first as i64))
                .i(Some(th.last as i64))
                .i(Some(th.events as i64))
                .done();
        }
        t
    }

    pub(crate) fn callback_table(&self) -> Table {
        let o = &self.objs;
        let mut t = Table::new(&schema::CALLBACKS);
        for (i, c) in o.cbs.iter().enumerate() {
            let node = match (c.kind, c.owner) {
                (CallbackKind::Subscription, Some(x)) => o.subs[x].node,
                (CallbackKind::Timer, Some(x)) => o.timers[x].node,
                (CallbackKind::Service, Some(x)) => o.services[x].node,
                (CallbackKind::Client, Some(x)) => o.clients[x].node,
                _ => None,
            };
            t.row()
                .i(id(i))
                .i(id(c.proc))
                .u(Some(c.handle))
                .s(c.symbol.as_deref())
                .s(Some(c.kind.name()))
                .i(opt_id(c.owner))
                .i(opt_id(node))
                .i(ts(c.ts))
                .i(Some(c.known as i64))
                .i(Some(c.dumped as i64))
                .done();
        }
        t
    }

    /// `service_calls` (services.rs).
    fn service_call_table(&self) -> Table {
        let mut t = Table::new(&schema::SERVICE_CALLS);
        for (i, c) in self.service_calls().enumerate() {
            t.row()
                .i(id(i))
                .i(opt_id(c.client))
                .i(opt_id(c.service))
                .i(Some(c.seq))
                .i(opt_id(c.request_pub))
                .i(opt_id(c.request_take))
                .i(opt_id(c.response_pub))
                .i(opt_id(c.response_take))
                .s(c.method.map(|m| m.name()))
                .done();
        }
        t
    }

    /// `annotations`, and `annotation_members` resolved to subscriptions (by
    /// rcl handle, else rclcpp object) and publishers (by rcl handle).
    fn annotation_tables(&self) -> [Table; 2] {
        let mut anns = Table::new(&schema::ANNOTATIONS);
        for (i, a) in self.annotations.iter().enumerate() {
            anns.row().i(id(i)).i(id(a.proc)).s(Some(a.kind.name())).i(Some(a.ts as i64)).done();
        }
        let mut members = Table::new(&schema::ANNOTATION_MEMBERS);
        let (subs, pubs) = (&self.objs.subs, &self.objs.pubs);
        for (i, a) in self.annotations.iter().enumerate() {
            for &h in &a.subs {
                let sid = subs.find(Layer::Rcl, a.proc, h).or_else(|| subs.find(Layer::Rclcpp, a.proc, h));
                members.row().i(id(i)).s(Some(AnnotationRole::Subscription.name())).u(Some(h)).i(opt_id(sid)).i(None).done();
            }
            for &h in &a.pubs {
                let pid = pubs.find(Layer::Rcl, a.proc, h);
                members.row().i(id(i)).s(Some(AnnotationRole::Publisher.name())).u(Some(h)).i(None).i(opt_id(pid)).done();
            }
        }
        [anns, members]
    }

    fn stats(&self) -> Vec<(String, i64)> {
        let c = &self.counts;
        vec![
            ("events".to_string(), c.events as i64),
            ("unmatched_callback_ends".to_string(), c.unmatched_ends as i64),
            ("unmatched_callback_starts".to_string(), c.unmatched_starts as i64),
            ("events_of_other_recordings".to_string(), c.excluded_events as i64),
            ("processes_of_other_recordings".to_string(), self.left_out(LeftOut::OtherRecording)),
            ("events_without_process_init".to_string(), c.no_init_events as i64),
            ("processes_without_process_init".to_string(), self.left_out(LeftOut::NoProcessInit)),
            ("late_updates".to_string(), c.late_updates as i64),
            ("peak_records_in_memory".to_string(), c.peak_records as i64),
            ("state_dumps".to_string(), c.state_dumps as i64),
            ("callback_frames".to_string(), c.frames as i64),
            ("unmatched_callback_frames".to_string(), c.unmatched_frames as i64),
            ("objects_dumped".to_string(), self.object_count(true)),
            ("objects_unnamed".to_string(), self.object_count(false)),
            ("rmw_own_endpoints".to_string(), self.rmw_own_count()),
        ]
    }

    /// Objects (nodes, endpoints, timers, services, clients, callbacks) named
    /// by a state dump (`dumped`), or else known only by handles (their init
    /// event is not in the trace).
    pub(crate) fn object_count(&self, dumped: bool) -> i64 {
        let o = &self.objs;
        let objs = [&o.nodes, &o.pubs, &o.subs, &o.timers, &o.services, &o.clients];
        let n = objs.iter().flat_map(|r| r.iter()).filter(|x| if dumped { x.dumped } else { self.unnamed(x) }).count();
        let c = o.cbs.iter().filter(|x| if dumped { x.dumped } else { !x.known }).count();
        (n + c) as i64
    }

    /// An endpoint the rmw made for itself (Fast DDS's `ros_discovery_info` publisher and
    /// subscription in each process): its rmw init event is in the trace, and no rcl one, ever
    /// (rcl's init calls the rmw's, so a session that missed one missed both).
    fn rmw_own(&self, x: &Obj) -> bool {
        !x.known && x.rmw_handle.is_some_and(|h| self.objs.gids.contains(x.proc, h))
    }

    /// Known only by its handle: its init events are not in the trace (the object tables'
    /// `known = 0`, `objects_unnamed`, the warning).
    pub(crate) fn unnamed(&self, x: &Obj) -> bool {
        !x.known && !x.absorbed && !self.rmw_own(x)
    }

    /// The rmw's own endpoints (`rmw_own`) that published or took.
    pub(crate) fn rmw_own_count(&self) -> i64 {
        let o = &self.objs;
        [&o.pubs, &o.subs, &o.services, &o.clients].iter().flat_map(|r| r.iter()).filter(|x| self.rmw_own(x)).count() as i64
    }

    /// The object tables (nodes, publishers, subscriptions, timers, services, clients).
    pub(crate) fn registry_tables(&self) -> Vec<Table> {
        let o = &self.objs;
        let known = |x: &Obj| !self.unnamed(x);
        vec![
            objects(&schema::NODES, &o.nodes, known),
            objects(&schema::PUBLISHERS, &o.pubs, known),
            objects(&schema::SUBSCRIPTIONS, &o.subs, known),
            objects(&schema::TIMERS, &o.timers, known),
            objects(&schema::SERVICES, &o.services, known),
            objects(&schema::CLIENTS, &o.clients, known),
        ]
    }

    /// The warning about objects known only by handles, if any.
    pub(crate) fn unnamed_warning(&self) -> Option<String> {
        let n = self.object_count(false);
        (n > 0).then(|| {
            let o = &self.objs;
            let by = |r: &crate::registry::Registry<Obj>| r.iter().filter(|x| self.unnamed(x)).count();
            let cbs = o.cbs.iter().filter(|x| !x.known).count();
            format!(
                "{n} objects are known only by their handles, without names (their init events are not in the trace: \
                 the session started after them and their tracer has no state dump): {} nodes, {} publishers, {} \
                 subscriptions, {} timers, {} services, {} clients, {cbs} callbacks",
                by(&o.nodes),
                by(&o.pubs),
                by(&o.subs),
                by(&o.timers),
                by(&o.services),
                by(&o.clients)
            )
        })
    }
}

pub(crate) fn run_table<'a>(rows: impl Iterator<Item = (usize, &'a Run)>) -> Table {
    let mut t = Table::with_rows(&schema::CALLBACK_RUNS, rows.size_hint().0);
    for (i, r) in rows {
        t.row()
            .i(id(i))
            .i(id(r.cb))
            .i(id(r.thread))
            .i(Some(r.start as i64))
            .i(ts(r.end))
            .i(r.end.map(|e| e as i64 - r.start as i64))
            .i(Some(r.intra as i64))
            .i(Some(r.depth as i64))
            .i(opt_id(r.parent))
            .done();
    }
    t
}

pub(crate) fn publication_table<'a>(rows: impl Iterator<Item = (usize, &'a Publication)>) -> Table {
    let mut t = Table::with_rows(&schema::PUBLICATIONS, rows.size_hint().0);
    for (i, p) in rows {
        t.row()
            .i(id(i))
            .i(opt_id(p.publisher))
            .i(id(p.thread))
            .i(opt_id(p.run))
            .i(Some(p.ts as i64))
            .i(ts(p.rclcpp_ts))
            .i(ts(p.rcl_ts))
            .i(ts(p.rmw_ts))
            .u(Some(p.message))
            .i(p.src_ts)
            .i(Some(p.intra as i64))
            .done();
    }
    t
}

pub(crate) fn take_table<'a>(rows: impl Iterator<Item = (usize, &'a Take)>) -> Table {
    let mut t = Table::with_rows(&schema::TAKES, rows.size_hint().0);
    for (i, k) in rows {
        t.row()
            .i(id(i))
            .i(opt_id(k.sub))
            .i(id(k.thread))
            .i(opt_id(k.run))
            .i(Some(k.ts as i64))
            .i(ts(k.rmw_ts))
            .i(ts(k.rcl_ts))
            .i(ts(k.rclcpp_ts))
            .u(Some(k.message))
            .i(k.src_ts)
            .i(Some(k.taken as i64))
            .i(Some(k.intra as i64))
            .done();
    }
    t
}

pub(crate) fn executor_table(states: &[ExecState]) -> Table {
    let mut t = Table::with_rows(&schema::EXECUTOR_STATES, states.len());
    for e in states {
        t.row().i(id(e.thread)).s(Some(e.state.name())).i(Some(e.start as i64)).i(Some(e.end as i64)).u(e.handle).done();
    }
    t
}

pub(crate) fn link_table(links: &[Link]) -> Table {
    let mut t = Table::with_rows(&schema::LINKS, links.len());
    for l in links {
        let heuristic = matches!(l.method, LinkMethod::HeuristicWallClock | LinkMethod::ServiceNearest);
        t.row().i(id(l.publication)).i(opt_id(l.take)).i(opt_id(l.run)).s(Some(l.method.name())).i(Some(heuristic as i64)).done();
    }
    t
}
