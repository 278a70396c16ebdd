//! One pass over every event to summarize a trace set: what `roscope info` shows.

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;

use crate::json::{bytes_at, write_str};
use crate::metadata::EnvValue;
use crate::reader::{Trace, TraceSet};
use crate::stream::{StreamReader, Val};
use crate::types::Ty;

#[derive(Debug, Default, Clone)]
pub struct ProcessSummary {
    pub trace: usize,
    pub vpid: i64,
    pub procname: String,
    pub events: u64,
    pub first_ts: u64,
    pub last_ts: u64,
}

#[derive(Debug, Default, Clone)]
pub struct StreamSummary {
    pub trace: usize,
    pub file: String,
    pub stream_class: u64,
    pub packets: u64,
    pub events: u64,
    pub events_discarded: u64,
    pub packets_lost: u64,
    pub first_ts: Option<u64>,
    pub last_ts: Option<u64>,
}

#[derive(Debug, Default)]
pub struct Summary {
    pub events: u64,
    /// Per trace: event counts by name.
    pub counts: Vec<BTreeMap<String, u64>>,
    pub trace_events: Vec<u64>,
    pub trace_first: Vec<Option<u64>>,
    pub trace_last: Vec<Option<u64>>,
    pub processes: Vec<ProcessSummary>,
    pub streams: Vec<StreamSummary>,
    /// Per trace, per event name: the first event of that name, as a JSON line.
    pub first: Vec<BTreeMap<String, String>>,
}

/// Tape index of a top-level field of a struct scope, if every field before it
/// has a fixed number of tape values.
pub fn static_index(ty: Option<&Ty>, names: &[&str]) -> Option<usize> {
    let Some(Ty::Struct(s)) = ty else { return None };
    let mut idx = 0usize;
    for f in &s.fields {
        if names.contains(&f.name.as_str()) {
            return Some(idx);
        }
        idx += tape_width(&f.ty)?;
    }
    None
}

/// Tape values of a stream event context, when fixed (0 without one).
fn context_width(ty: Option<&Ty>) -> Option<usize> {
    ty.map_or(Some(0), tape_width)
}

fn tape_width(ty: &Ty) -> Option<usize> {
    match ty {
        Ty::Int(_) | Ty::Enum(_) | Ty::Float(_) | Ty::Str => Some(1),
        Ty::Array { text: true, .. } => Some(1),
        Ty::Array { elem, len, .. } => tape_width(elem).map(|w| w * *len as usize),
        Ty::Struct(s) => s.fields.iter().map(|f| tape_width(&f.ty)).sum(),
        Ty::Seq { .. } | Ty::Variant(_) => None,
    }
}

/// Per trace, per stream class: the tape indexes of `vpid`, `vtid` and
/// `procname` in the stream event context (LTTng's per-channel contexts).
pub fn context_positions(set: &TraceSet) -> Vec<Vec<[Option<usize>; 3]>> {
    set.traces
        .iter()
        .map(|t| {
            t.md.streams
                .iter()
                .map(|sc| {
                    let c = sc.event_context.as_ref();
                    [static_index(c, &["vpid", "pid"]), static_index(c, &["vtid", "tid"]), static_index(c, &["procname"])]
                })
                .collect()
        })
        .collect()
}

/// What one worker counts over its streams; merged by `summarize`.
#[derive(Default)]
struct Partial {
    events: u64,
    /// Per (trace, class).
    class_counts: Vec<Vec<u64>>,
    /// Per (trace, vpid): the process, and (ts, stream) of the event its name came from.
    procs: HashMap<(usize, i64), (ProcessSummary, (u64, usize))>,
    /// Per (trace, class): (ts, stream, JSON line) of its first event.
    first: HashMap<(usize, usize), (u64, usize, String)>,
}

/// Reads the streams `mine` (indexes into the set's streams) to their end.
fn count_streams(traces: &[Trace], ctx: &[Vec<[Option<usize>; 3]>], mine: Vec<(usize, &mut StreamReader)>) -> Partial {
    let mut part = Partial { class_counts: traces.iter().map(|t| vec![0u64; t.md.events.len()]).collect(), ..Default::default() };
    let mut rows: Vec<(ProcessSummary, (u64, usize))> = Vec::new();
    // Per row: the bytes its procname was made from.
    let mut raws: Vec<Vec<u8>> = Vec::new();
    // Looked up whenever the process changes between events (often, in a per-CPU stream):
    // FxHash, not SipHash (3.6 % of `info`), the keys being the trace's own numbers.
    let mut index: FxHashMap<(usize, i64), usize> = FxHashMap::default();
    let mut last: Option<((usize, i64), usize)> = None;
    for (si, s) in mine {
        // Classes seen in this stream: its first event of a class is its
        // earliest (a stream is in time order); the earliest over streams is kept.
        let classes = traces[s.trace].md.events.len();
        let mut seen = vec![false; classes];
        // Of later events only the stream event context is read onto the tape (when its
        // width is fixed): the first of each class is written whole.
        if let Some(w) = context_width(traces[s.trace].md.streams[s.sc].event_context.as_ref()) {
            s.whole = vec![true; classes];
            s.partial_values = w;
        }
        while s.advance() {
            let (t, c, ts) = (s.trace, s.cur_class, s.cur_ts);
            if !seen[c] {
                seen[c] = true;
                if let Some(w) = s.whole.get_mut(c) {
                    *w = false;
                }
                let earlier = part.first.get(&(t, c)).is_none_or(|f| (ts, si) < (f.0, f.1));
                if earlier {
                    let mut line = Vec::new();
                    crate::json::write_event_of(&mut line, traces, s);
                    part.first.insert((t, c), (ts, si, String::from_utf8_lossy(&line).trim_end().to_string()));
                }
            }
            part.class_counts[t][c] += 1;
            part.events += 1;
            let [pp, _, np] = ctx[t][s.sc];
            let Some(pp) = pp else { continue };
            let vpid = match s.tape.get(pp) {
                Some(Val::I(v)) => *v,
                Some(Val::U(v)) => *v as i64,
                _ => continue,
            };
            // Events of one process come in runs: the last one is looked up first.
            let k = match last {
                Some((key, k)) if key == (t, vpid) => k,
                _ => {
                    let n = rows.len();
                    let k = *index.entry((t, vpid)).or_insert(n);
                    if k == n {
                        rows.push((ProcessSummary { trace: t, vpid, first_ts: ts, last_ts: ts, ..Default::default() }, (0, 0)));
                        raws.push(Vec::new());
                    }
                    last = Some(((t, vpid), k));
                    k
                }
            };
            let (e, named) = &mut rows[k];
            e.events += 1;
            e.first_ts = e.first_ts.min(ts);
            e.last_ts = e.last_ts.max(ts);
            if let Some(Val::Str(off, len)) = np.and_then(|np| s.tape.get(np)) {
                // The name may change (exec, prctl): keep the latest. It is made
                // text only when its bytes differ from those it was made from.
                if (ts, si) >= *named {
                    *named = (ts, si);
                    // The field's whole bytes (17 for LTTng's procname), not cut at the NUL.
                    let (a, n) = (*off as usize, *len as usize);
                    let Some(raw) = s.data().get(a..a + n) else { continue };
                    if !same_bytes(raw, &raws[k]) {
                        raws[k] = raw.to_vec();
                        let name = String::from_utf8_lossy(bytes_at(s.data(), *off, *len));
                        if e.procname != name {
                            e.procname = name.into_owned();
                        }
                    }
                }
            }
        }
    }
    part.procs = index.into_iter().map(|(key, k)| (key, std::mem::take(&mut rows[k]))).collect();
    part
}

/// `a == b`, inline for names of 16 to 32 bytes (LTTng's procname field is 17: the comparison
/// is made for every event, and the library's `memcmp` call cost 8 % of `info`).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    if (16..=32).contains(&n) {
        let word = |x: &[u8], at: usize| u128::from_le_bytes(x[at..at + 16].try_into().unwrap());
        return word(a, 0) == word(b, 0) && word(a, n - 16) == word(b, n - 16);
    }
    a == b
}

/// Streams dealt to `n` workers, largest first, each to the least loaded.
fn deal(streams: &mut [StreamReader], n: usize) -> Vec<Vec<(usize, &mut StreamReader)>> {
    let mut order: Vec<(usize, &mut StreamReader)> = streams.iter_mut().enumerate().collect();
    order.sort_by_key(|(i, s)| (std::cmp::Reverse(s.data().len()), *i));
    let mut load = vec![0usize; n];
    let mut out: Vec<Vec<(usize, &mut StreamReader)>> = (0..n).map(|_| Vec::new()).collect();
    for (i, s) in order {
        let w = (0..n).min_by_key(|&w| load[w]).unwrap_or(0);
        load[w] += s.data().len();
        out[w].push((i, s));
    }
    out
}

/// Reads every event once (streams in parallel, one worker per core) and
/// summarizes the trace set.
pub fn summarize(set: &mut TraceSet) -> Summary {
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(set.streams.len()).max(1);
    summarize_with(set, workers)
}

/// `summarize` with `workers` threads.
pub fn summarize_with(set: &mut TraceSet, workers: usize) -> Summary {
    let nt = set.traces.len();
    let mut sum = Summary {
        counts: vec![BTreeMap::new(); nt],
        trace_events: vec![0; nt],
        trace_first: vec![None; nt],
        trace_last: vec![None; nt],
        first: vec![BTreeMap::new(); nt],
        ..Default::default()
    };
    // Where vpid and procname sit in each stream class's event context.
    let ctx = context_positions(set);
    let traces = &set.traces;
    let parts: Vec<Partial> = std::thread::scope(|sc| {
        let jobs: Vec<_> = deal(&mut set.streams, workers.max(1))
            .into_iter()
            .map(|mine| {
                let ctx = &ctx;
                sc.spawn(move || count_streams(traces, ctx, mine))
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let mut class_counts: Vec<Vec<u64>> = set.traces.iter().map(|t| vec![0u64; t.md.events.len()]).collect();
    let mut procs: HashMap<(usize, i64), (ProcessSummary, (u64, usize))> = HashMap::new();
    let mut first: HashMap<(usize, usize), (u64, usize, String)> = HashMap::new();
    for part in parts {
        sum.events += part.events;
        for (t, v) in part.class_counts.into_iter().enumerate() {
            for (c, n) in v.into_iter().enumerate() {
                class_counts[t][c] += n;
            }
        }
        for (k, (p, named)) in part.procs {
            match procs.get_mut(&k) {
                None => {
                    procs.insert(k, (p, named));
                }
                Some((q, qn)) => {
                    q.events += p.events;
                    q.first_ts = q.first_ts.min(p.first_ts);
                    q.last_ts = q.last_ts.max(p.last_ts);
                    if named > *qn && !p.procname.is_empty() {
                        q.procname = p.procname;
                        *qn = named;
                    }
                }
            }
        }
        for (k, f) in part.first {
            if first.get(&k).is_none_or(|g| (f.0, f.1) < (g.0, g.1)) {
                first.insert(k, f);
            }
        }
    }
    for ((t, c), (_, _, line)) in first {
        sum.first[t].insert(set.traces[t].md.events[c].name.clone(), line);
    }
    let procs: HashMap<(usize, i64), ProcessSummary> = procs.into_iter().map(|(k, (p, _))| (k, p)).collect();
    for (ti, t) in set.traces.iter().enumerate() {
        for (ci, &n) in class_counts[ti].iter().enumerate() {
            if n > 0 {
                *sum.counts[ti].entry(t.md.events[ci].name.clone()).or_insert(0) += n;
                sum.trace_events[ti] += n;
            }
        }
    }
    for s in &set.streams {
        sum.streams.push(StreamSummary {
            trace: s.trace,
            file: s.path.clone(),
            stream_class: s.stream_class_id,
            packets: s.packets,
            events: s.events_read,
            events_discarded: 0,
            packets_lost: 0,
            first_ts: s.first_ts,
            last_ts: s.last_ts,
        });
        let t = s.trace;
        if let Some(f) = s.first_ts {
            sum.trace_first[t] = Some(sum.trace_first[t].map_or(f, |x: u64| x.min(f)));
        }
        if let Some(l) = s.last_ts {
            sum.trace_last[t] = Some(sum.trace_last[t].map_or(l, |x: u64| x.max(l)));
        }
    }
    // Losses are per stream, which may span several files: reported on the
    // stream's first file.
    for l in set.losses() {
        if let Some(first) = l.files.first() {
            if let Some(ss) = sum.streams.iter_mut().find(|x| x.file == *first) {
                ss.events_discarded += l.events_discarded;
                ss.packets_lost += l.packets_lost;
            }
        }
    }
    let mut p: Vec<ProcessSummary> = procs.into_values().collect();
    p.sort_by_key(|x| (x.trace, x.first_ts, x.vpid));
    sum.processes = p;
    sum
}

/// The summary as a JSON document (used by the CLI binary and the Python side).
pub fn to_json(set: &TraceSet, sum: &Summary) -> String {
    let mut o: Vec<u8> = Vec::new();
    let num = |o: &mut Vec<u8>, v: u64| o.extend_from_slice(v.to_string().as_bytes());
    o.extend_from_slice(b"{\"events\":");
    num(&mut o, sum.events);
    o.extend_from_slice(b",\"traces\":[");
    for (ti, t) in set.traces.iter().enumerate() {
        if ti > 0 {
            o.push(b',');
        }
        o.extend_from_slice(b"{\"path\":");
        write_str(&mut o, &t.dir.display().to_string());
        o.extend_from_slice(b",\"rel\":");
        write_str(&mut o, &t.rel);
        o.extend_from_slice(b",\"env\":{");
        for (k, (key, v)) in t.md.env.iter().enumerate() {
            if k > 0 {
                o.push(b',');
            }
            write_str(&mut o, key);
            o.push(b':');
            match v {
                EnvValue::Int(i) => o.extend_from_slice(i.to_string().as_bytes()),
                EnvValue::Str(s) => write_str(&mut o, s),
            }
        }
        o.extend_from_slice(b"},\"clocks\":[");
        for (k, c) in t.md.clocks.iter().enumerate() {
            if k > 0 {
                o.push(b',');
            }
            o.extend_from_slice(b"{\"name\":");
            write_str(&mut o, &c.name);
            o.extend_from_slice(
                format!(",\"freq\":{},\"offset_s\":{},\"offset\":{},\"offset_ns\":{}}}", c.freq, c.offset_s, c.offset, c.offset_ns())
                    .as_bytes(),
            );
        }
        o.extend_from_slice(b"],\"event_classes\":");
        num(&mut o, t.md.events.len() as u64);
        o.extend_from_slice(b",\"events\":");
        num(&mut o, sum.trace_events[ti]);
        o.extend_from_slice(b",\"first_ts\":");
        match sum.trace_first[ti] {
            Some(v) => num(&mut o, v),
            None => o.extend_from_slice(b"null"),
        }
        o.extend_from_slice(b",\"last_ts\":");
        match sum.trace_last[ti] {
            Some(v) => num(&mut o, v),
            None => o.extend_from_slice(b"null"),
        }
        o.extend_from_slice(b",\"counts\":{");
        for (k, (name, n)) in sum.counts[ti].iter().enumerate() {
            if k > 0 {
                o.push(b',');
            }
            write_str(&mut o, name);
            o.push(b':');
            num(&mut o, *n);
        }
        o.extend_from_slice(b"},\"first\":{");
        for (k, (name, line)) in sum.first[ti].iter().enumerate() {
            if k > 0 {
                o.push(b',');
            }
            write_str(&mut o, name);
            o.push(b':');
            o.extend_from_slice(line.as_bytes());
        }
        o.extend_from_slice(b"}}");
    }
    o.extend_from_slice(b"],\"processes\":[");
    for (k, p) in sum.processes.iter().enumerate() {
        if k > 0 {
            o.push(b',');
        }
        o.extend_from_slice(format!("{{\"trace\":{},\"vpid\":{},\"procname\":", p.trace, p.vpid).as_bytes());
        write_str(&mut o, &p.procname);
        o.extend_from_slice(format!(",\"events\":{},\"first_ts\":{},\"last_ts\":{}}}", p.events, p.first_ts, p.last_ts).as_bytes());
    }
    o.extend_from_slice(b"],\"streams\":[");
    for (k, s) in sum.streams.iter().enumerate() {
        if k > 0 {
            o.push(b',');
        }
        o.extend_from_slice(format!("{{\"trace\":{},\"file\":", s.trace).as_bytes());
        write_str(&mut o, &s.file);
        o.extend_from_slice(
            format!(
                ",\"stream_class\":{},\"packets\":{},\"events\":{},\"events_discarded\":{},\"packets_lost\":{}}}",
                s.stream_class, s.packets, s.events, s.events_discarded, s.packets_lost
            )
            .as_bytes(),
        );
    }
    o.extend_from_slice(b"],\"warnings\":[");
    for (k, w) in set.all_warnings().iter().enumerate() {
        if k > 0 {
            o.push(b',');
        }
        write_str(&mut o, &w.to_string());
    }
    o.extend_from_slice(b"]}");
    String::from_utf8(o).unwrap_or_default()
}
