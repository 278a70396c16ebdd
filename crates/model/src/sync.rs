//! Hosts' clocks synchronized from the trace (`crate::clock`): after the
//! transport links are made, each host's messages with a reference host give
//! its clock map, and every timestamp of the host's records is mapped onto the
//! reference clock before the tables are emitted (the `clock_sync` table keeps
//! each map, so raw times can be recovered). Links are made on raw times: they
//! match stamps, and the heuristic compares a host's times with its own wall
//! clock.
//!
//! A whole build finds the maps at the end from its links. A streaming build
//! of several hosts reads the set twice (`clock_pass`, then
//! `build_streaming_synced`): the first pass streams without tables and keeps
//! only each message between hosts as a pair of times (and, for as long as a
//! take may still link to it, each publication's time and host); the maps are
//! estimated from those pairs, in the whole build's order; the second pass
//! streams the tables with every record's times mapped as it leaves memory.

use std::collections::VecDeque;

use roscope_ctf::TraceSet;
use rustc_hash::FxHashMap;

use crate::builder::Builder;
use crate::clock::{self, ClockMap, Sync, SyncMethod};
use crate::objects::{ExecState, Link, Obj, Publication, Run, Take};
use crate::registry::Registry;
use crate::table::Table;
use crate::{Model, Options, Scope};

/// The estimate for one host, as the `clock_sync` table shows it.
pub struct HostSync {
    pub host: usize,
    pub reference: usize,
    /// Messages reference -> host and host -> reference.
    pub forward: usize,
    pub backward: usize,
    pub sync: Sync,
    /// The span of the host's messages (its raw clock), for the offset's report.
    pub span: (u64, u64),
}

fn map_ts(m: &ClockMap, t: &mut u64) {
    *t = m.apply(*t);
}

fn map_opt(m: &ClockMap, t: &mut Option<u64>) {
    if let Some(x) = t {
        *x = m.apply(*x);
    }
}

/// Each host's map (none for the reference host).
fn maps_of(syncs: &[HostSync], hosts: usize) -> Vec<Option<ClockMap>> {
    let mut maps = vec![None; hosts];
    for s in syncs {
        maps[s.host] = Some(s.sync.map);
    }
    maps
}

fn map_objects(reg: &mut Registry<Obj>, maps: &[Option<ClockMap>], host_of_proc: &[usize]) {
    for o in reg.items.iter_mut() {
        if let Some(m) = &maps[host_of_proc[o.proc]] {
            map_opt(m, &mut o.ts);
        }
    }
}

impl Builder {
    fn host_of_thread(&self, th: usize) -> usize {
        self.procs[self.threads[th].proc].host
    }

    /// Estimates every host's clock map against the reference host (the one
    /// that exchanged messages with the most others, then the first) from the
    /// links between hosts. Empty with one host, or with `Options::sync` off.
    pub(crate) fn synchronize(&mut self, links: &[Link]) -> Vec<HostSync> {
        let mut sent = Vec::new();
        for l in links {
            let Some(ti) = l.take else { continue };
            let (pb, tk) = (&self.publications[l.publication], &self.takes[ti]);
            sent.push((self.host_of_thread(pb.thread), self.host_of_thread(tk.thread), pb.ts, tk.ts));
        }
        self.synchronize_pairs(sent)
    }

    /// The estimates from (sender host, receiver host, send ts, receive ts) of
    /// every transport link, raw clocks, in the order of the takes.
    fn synchronize_pairs(&self, sent: Vec<(usize, usize, u64, u64)>) -> Vec<HostSync> {
        let n = self.hosts().len();
        if n < 2 {
            return Vec::new();
        }
        if !self.opts.sync {
            return self.metadata_syncs();
        }
        // (sender host, receiver host) -> [(send ts, receive ts)], raw clocks.
        let mut pairs: Vec<Vec<Vec<(u64, u64)>>> = vec![vec![Vec::new(); n]; n];
        for (a, b, s, r) in sent {
            if a != b {
                pairs[a][b].push((s, r));
            }
        }
        let peers = |h: usize| (0..n).filter(|&o| o != h && (!pairs[h][o].is_empty() || !pairs[o][h].is_empty())).count();
        let reference = (0..n).max_by_key(|&h| (peers(h), std::cmp::Reverse(h))).unwrap_or(0);
        let mut out = Vec::new();
        for h in (0..n).filter(|&h| h != reference) {
            // below: (receive on h, send on the reference); above: (send on h, receive on the reference)
            let below: Vec<(u64, u64)> = pairs[reference][h].iter().map(|&(s, r)| (r, s)).collect();
            let above: Vec<(u64, u64)> = pairs[h][reference].clone();
            let xs = below.iter().chain(above.iter()).map(|p| p.0);
            let span = xs.fold((u64::MAX, 0), |(a, b), x| (a.min(x), b.max(x)));
            out.push(HostSync {
                host: h,
                reference,
                forward: below.len(),
                backward: above.len(),
                sync: clock::estimate(&below, &above).unwrap_or_else(|| self.by_metadata(h, reference)),
                span,
            });
        }
        out
    }

    /// The map of host `h`'s clock onto `reference`'s by their traces'
    /// metadata clock offsets.
    fn by_metadata(&self, h: usize, reference: usize) -> Sync {
        clock::by_metadata(self.host_clock_offset(h), self.host_clock_offset(reference))
    }

    /// `--no-sync`: every host's clock mapped onto the first host's by the
    /// traces' metadata clock offsets alone.
    pub(crate) fn metadata_syncs(&self) -> Vec<HostSync> {
        (1..self.hosts().len())
            .map(|h| HostSync { host: h, reference: 0, forward: 0, backward: 0, sync: self.by_metadata(h, 0), span: (0, 0) })
            .collect()
    }

    /// Maps every timestamp of the records of the hosts that have a clock map.
    pub(crate) fn apply_clock_maps(&mut self, syncs: &[HostSync]) {
        if syncs.is_empty() {
            return;
        }
        let maps = maps_of(syncs, self.hosts().len());
        let host_of_proc: Vec<usize> = self.procs.iter().map(|p| p.host).collect();
        let host_of_thread: Vec<usize> = self.threads.iter().map(|t| host_of_proc[t.proc]).collect();
        for p in self.procs.iter_mut() {
            if let Some(m) = &maps[p.host] {
                map_ts(m, &mut p.first);
                map_ts(m, &mut p.last);
            }
        }
        for (i, t) in self.threads.iter_mut().enumerate() {
            if let Some(m) = &maps[host_of_thread[i]] {
                map_ts(m, &mut t.first);
                map_ts(m, &mut t.last);
            }
        }
        let o = &mut self.objs;
        for reg in [&mut o.nodes, &mut o.pubs, &mut o.subs, &mut o.timers, &mut o.services, &mut o.clients] {
            map_objects(reg, &maps, &host_of_proc);
        }
        for c in o.cbs.items.iter_mut() {
            if let Some(m) = &maps[host_of_proc[c.proc]] {
                map_opt(m, &mut c.ts);
            }
        }
        for r in self.runs.iter_mut() {
            if let Some(m) = &maps[host_of_thread[r.thread]] {
                map_ts(m, &mut r.start);
                map_opt(m, &mut r.end);
            }
        }
        for p in self.publications.iter_mut() {
            if let Some(m) = &maps[host_of_thread[p.thread]] {
                map_ts(m, &mut p.ts);
                for t in [&mut p.rclcpp_ts, &mut p.rcl_ts, &mut p.rmw_ts] {
                    map_opt(m, t);
                }
            }
        }
        for k in self.takes.iter_mut() {
            if let Some(m) = &maps[host_of_thread[k.thread]] {
                map_ts(m, &mut k.ts);
                for t in [&mut k.rmw_ts, &mut k.rcl_ts, &mut k.rclcpp_ts] {
                    map_opt(m, t);
                }
            }
        }
        for a in self.annotations.iter_mut() {
            if let Some(m) = &maps[host_of_proc[a.proc]] {
                map_ts(m, &mut a.ts);
            }
        }
        for e in self.exec_states.iter_mut() {
            if let Some(m) = &maps[host_of_thread[e.thread]] {
                map_ts(m, &mut e.start);
                map_ts(m, &mut e.end);
            }
        }
    }

    /// What the reader must know: hosts left unsynchronized, offsets bounded on
    /// one side only.
    pub(crate) fn sync_warnings(&self, syncs: &[HostSync]) -> Vec<String> {
        let hosts = self.hosts();
        let mut w = Vec::new();
        for s in syncs {
            let (h, r) = (&hosts[s.host], &hosts[s.reference]);
            let x = &s.sync;
            match x.method {
                SyncMethod::MetadataOffset => w.push(match (self.opts.sync, s.forward + s.backward) {
                    (false, _) => format!(
                        "--no-sync: host {h}'s clock is mapped onto host {r}'s by the traces' metadata clock offsets (the \
                         wall-clock anchor each trace took when recording, {:+.3} ms apart): latencies across them are as \
                         good as the hosts' own clocks (NTP, PTP)",
                        x.map.offset_at(0) / 1e6
                    ),
                    (true, 0) => format!(
                        "host {h} exchanged no message with the reference host {r}: its clock is not synchronized from the \
                         trace but mapped by the traces' metadata clock offsets (their wall-clock anchors), so latencies \
                         across them are as good as the hosts' own clocks (NTP, PTP)"
                    ),
                    (true, _) => format!(
                        "host {h}: no linear clock map fits its {} + {} messages with {r} (a message would arrive before \
                         it was sent): its clock is mapped by the traces' metadata clock offsets instead",
                        s.forward, s.backward
                    ),
                }),
                _ if x.bound_ns.is_none() => w.push(format!(
                    "host {h}: messages with {r} go one way only ({} {r} -> {h}, {} {h} -> {r}): its clock offset \
                     ({:.0} ns) assumes the fastest message took no time, so latencies from {} are bounded on one side only",
                    s.forward,
                    s.backward,
                    x.map.offset_at(s.span.0),
                    if s.forward > 0 { r } else { h }
                )),
                _ => {}
            }
        }
        w
    }
}

/// A streaming build's part in synchronizing several hosts' clocks.
#[derive(Default)]
pub(crate) struct TwoPass {
    /// First pass: the message pairs are being found (no tables).
    pairs: Option<Pairs>,
    /// Second pass: the maps found (per host), applied to the records as they
    /// leave, and the estimates, for the `clock_sync` table.
    maps: Option<Vec<Option<ClockMap>>>,
    syncs: Vec<HostSync>,
}

/// The first pass's findings: the publications a take may still link to, and
/// every message between hosts.
#[derive(Default)]
struct Pairs {
    /// Publication -> (time, host), and (merged time, publication) to forget them.
    pubs: FxHashMap<usize, (u64, usize)>,
    added: VecDeque<(i64, usize)>,
    /// (take, sender host, receiver host, send ts, receive ts), raw clocks.
    sent: Vec<(usize, usize, usize, u64, u64)>,
}

/// The clock maps of a set of several hosts, found by `clock_pass`.
pub struct Synced(Vec<HostSync>);

impl TwoPass {
    pub(crate) fn collecting(&self) -> bool {
        self.pairs.is_some()
    }

    /// Forgets the publications older than `before` (merged order), as the linker does.
    pub(crate) fn prune(&mut self, before: i64) {
        if let Some(p) = &mut self.pairs {
            while p.added.front().is_some_and(|(t, _)| *t < before) {
                if let Some((_, i)) = p.added.pop_front() {
                    p.pubs.remove(&i);
                }
            }
        }
    }

    /// Maps the records by `syncs` as they leave (a second pass, or `--no-sync`'s
    /// maps, known before the first event).
    pub(crate) fn map_with(&mut self, syncs: Vec<HostSync>, hosts: usize) {
        self.maps = Some(maps_of(&syncs, hosts));
        self.syncs = syncs;
    }

    /// The estimates of the second pass (once).
    pub(crate) fn take_syncs(&mut self) -> Vec<HostSync> {
        std::mem::take(&mut self.syncs)
    }
}

impl Builder {
    /// First pass: what the pairs of the takes linked later need of these publications.
    pub(crate) fn note_publications(&mut self, pubs: &[(usize, Publication)]) {
        let hosts: Vec<(usize, u64, usize, i64)> =
            pubs.iter().map(|(i, p)| (*i, p.ts, self.host_of_thread(p.thread), self.merged_ts(p.ts, p.thread))).collect();
        if let Some(pp) = &mut self.two_pass.pairs {
            for (i, ts, host, merged) in hosts {
                pp.pubs.insert(i, (ts, host));
                pp.added.push_back((merged, i));
            }
        }
    }

    /// First pass: the pairs of the links of these takes.
    pub(crate) fn note_pairs(&mut self, links: &[Link], takes: &[(usize, Take)]) {
        let take_of: FxHashMap<usize, (u64, usize)> = takes.iter().map(|(i, t)| (*i, (t.ts, self.host_of_thread(t.thread)))).collect();
        let Some(pp) = &mut self.two_pass.pairs else { return };
        for l in links {
            let Some(ti) = l.take else { continue };
            let (Some(&(pts, a)), Some(&(tts, b))) = (pp.pubs.get(&l.publication), take_of.get(&ti)) else { continue };
            pp.sent.push((ti, a, b, pts, tts));
        }
    }

    /// Second pass: maps the times of the records leaving memory onto the reference clock.
    pub(crate) fn map_leaving(
        &self,
        exec: &mut [ExecState],
        runs: &mut [(usize, Run)],
        pubs: &mut [(usize, Publication)],
        takes: &mut [(usize, Take)],
    ) {
        let Some(maps) = &self.two_pass.maps else { return };
        let m = |th: usize| maps[self.host_of_thread(th)].as_ref();
        for e in exec.iter_mut() {
            if let Some(m) = m(e.thread) {
                map_ts(m, &mut e.start);
                map_ts(m, &mut e.end);
            }
        }
        for (_, r) in runs.iter_mut() {
            if let Some(m) = m(r.thread) {
                map_ts(m, &mut r.start);
                map_opt(m, &mut r.end);
            }
        }
        for (_, p) in pubs.iter_mut() {
            if let Some(m) = m(p.thread) {
                map_ts(m, &mut p.ts);
                for t in [&mut p.rclcpp_ts, &mut p.rcl_ts, &mut p.rmw_ts] {
                    map_opt(m, t);
                }
            }
        }
        for (_, k) in takes.iter_mut() {
            if let Some(m) = m(k.thread) {
                map_ts(m, &mut k.ts);
                for t in [&mut k.rmw_ts, &mut k.rcl_ts, &mut k.rclcpp_ts] {
                    map_opt(m, t);
                }
            }
        }
    }
}

/// Whether a streaming build of `set` needs the clock pass first: several
/// hosts, and `opts.sync`.
pub fn needs_clock_pass(set: &TraceSet, opts: Options) -> bool {
    if !opts.sync || opts.window_ns.is_none() {
        return false;
    }
    let mut hosts: Vec<&str> = set.traces.iter().map(|t| t.md.hostname().unwrap_or("unknown")).collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts.len() > 1
}

/// The first pass over a set of several hosts: streams the model without
/// tables, keeping only the message pairs between hosts, and estimates each
/// host's clock map from them as a whole build does.
pub fn clock_pass(set: &mut TraceSet, opts: Options, scope: Scope) -> Synced {
    let mut b = Builder::new(set, Options { progress: false, ..opts }, scope);
    b.two_pass.pairs = Some(Pairs::default());
    let mut ignore = |_: Table| {};
    let mut b = crate::builder::run_pass(b, set, &mut ignore);
    let mut sent = b.two_pass.pairs.take().map(|p| p.sent).unwrap_or_default();
    sent.sort_by_key(|x| x.0);
    Synced(b.synchronize_pairs(sent.into_iter().map(|(_, a, h, s, r)| (a, h, s, r)).collect()))
}

/// The second pass: streams the model through `sink` with every record's
/// times mapped by the clock maps of `synced` (from `clock_pass` over the same
/// traces), as a whole build maps them.
pub fn build_streaming_synced(set: &mut TraceSet, opts: Options, scope: Scope, sink: &mut dyn FnMut(Table), synced: Synced) -> Model {
    let mut b = Builder::new(set, opts, scope);
    let hosts = b.hosts().len();
    b.two_pass.map_with(synced.0, hosts);
    crate::builder::run(b, set, Some(sink))
}
