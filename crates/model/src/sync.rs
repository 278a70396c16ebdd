//! Hosts' clocks synchronized from the trace (`crate::clock`): after the
//! transport links are made, each host's messages with a reference host give
//! its clock map, and every timestamp of the host's records is mapped onto the
//! reference clock before the tables are emitted (the `clock_sync` table keeps
//! each map, so raw times can be recovered). Links are made on raw times: they
//! match stamps, and the heuristic compares a host's times with its own wall
//! clock.

use crate::builder::Builder;
use crate::clock::{self, ClockMap, Sync};
use crate::objects::{Link, Obj};
use crate::registry::Registry;

/// The estimate for one host, as the `clock_sync` table shows it.
pub struct HostSync {
    pub host: usize,
    pub reference: usize,
    /// Messages reference -> host and host -> reference.
    pub forward: usize,
    pub backward: usize,
    pub sync: Option<Sync>,
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
        let n = self.hosts().len();
        if n < 2 || !self.opts.sync {
            return Vec::new();
        }
        // (sender host, receiver host) -> [(send ts, receive ts)], raw clocks.
        let mut pairs: Vec<Vec<Vec<(u64, u64)>>> = vec![vec![Vec::new(); n]; n];
        for l in links {
            let Some(ti) = l.take else { continue };
            let (pb, tk) = (&self.publications[l.publication], &self.takes[ti]);
            let (a, b) = (self.host_of_thread(pb.thread), self.host_of_thread(tk.thread));
            if a != b {
                pairs[a][b].push((pb.ts, tk.ts));
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
                sync: clock::estimate(&below, &above),
                span,
            });
        }
        out
    }

    /// Maps every timestamp of the records of the hosts that have a clock map.
    pub(crate) fn apply_clock_maps(&mut self, syncs: &[HostSync]) {
        let mut maps: Vec<Option<ClockMap>> = vec![None; self.hosts().len()];
        for s in syncs {
            maps[s.host] = s.sync.as_ref().map(|x| x.map);
        }
        if maps.iter().all(|m| m.is_none()) {
            return;
        }
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
            match &s.sync {
                None if s.forward + s.backward == 0 => w.push(format!(
                    "host {h} exchanged no message with the reference host {r}: its clock is not synchronized, \
                     and latencies across them use the raw clocks"
                )),
                None => w.push(format!(
                    "host {h}: no linear clock map fits its {} + {} messages with {r} (a message would arrive before \
                     it was sent): its clock is not synchronized",
                    s.forward, s.backward
                )),
                Some(x) if x.bound_ns.is_none() => w.push(format!(
                    "host {h}: messages with {r} go one way only ({} {r} -> {h}, {} {h} -> {r}): its clock offset \
                     ({:.0} ns) assumes the fastest message took no time, so latencies from {} are bounded on one side only",
                    s.forward,
                    s.backward,
                    x.map.offset_at(s.span.0),
                    if s.forward > 0 { r } else { h }
                )),
                Some(_) => {}
            }
        }
        w
    }
}
