//! `LiveModel`: the execution model of a live session, built chunk by chunk
//! (LTTng session rotation: each chunk is a complete CTF trace). The model
//! builder persists across chunks (objects from init events, open runs, the
//! publications takes may still match); each `feed` hands back the records
//! that became final, as Arrow tables, and the events the tracer discarded
//! in that chunk.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::collections::HashMap;

use roscope_ctf::TraceSet;
use roscope_model::table::Table;

use crate::arrow::ArrowTable;
use crate::err;

#[pyclass(module = "roscope._core")]
pub struct LiveModel {
    b: Option<roscope_model::Builder>,
    /// Per stream ((trace's relative directory, file name)): the tracer's
    /// discarded-events counter and packet sequence number last seen; both run
    /// on across chunks, so each chunk's losses are the increase.
    seen: HashMap<(String, String), (u64, Option<u64>)>,
    /// Events read so far (every event of every chunk, as babeltrace2 counts a trace's).
    events: u64,
    /// Per object table, its content when `changed_objects` last handed it over.
    objects_seen: HashMap<&'static str, Vec<u8>>,
}

type Chunks = Vec<(String, ArrowTable)>;

fn to_py(tables: Vec<Table>) -> PyResult<Chunks> {
    tables.into_iter().map(|t| Ok((t.name.to_string(), ArrowTable::from_table(t)?))).collect()
}

#[pymethods]
impl LiveModel {
    #[new]
    #[pyo3(signature = (heuristics=true, record_ids=None, window_ns=1_000_000_000, attach=false))]
    fn new(heuristics: bool, record_ids: Option<Vec<String>>, window_ns: u64, attach: bool) -> Self {
        let opts = roscope_model::Options { heuristics, progress: false, sync: false, window_ns: Some(window_ns.max(1)), flush_every: 0 };
        let scope = roscope_model::Scope { record_ids: record_ids.unwrap_or_default(), attach };
        LiveModel {
            b: Some(roscope_model::Builder::incremental(opts, scope)),
            seen: HashMap::new(),
            events: 0,
            objects_seen: HashMap::new(),
        }
    }

    /// Reads the chunk under `paths` (later than every chunk fed before).
    /// Returns (tables, last event time or None, events discarded, packets
    /// lost): tables are the records older than the window before the
    /// chunk's last event, a list of (name, ArrowTable).
    ///
    /// A live source's mini chunk (`LiveClient.poll`): only its events up to
    /// `upto` (clock cycles) are read, and of the stream files in `after`
    /// (paths relative to `paths[0]`, with a time) only the events after it.
    #[pyo3(signature = (paths, upto=None, after=None))]
    fn feed(
        &mut self,
        py: Python<'_>,
        paths: Vec<String>,
        upto: Option<u64>,
        after: Option<Vec<(String, u64)>>,
    ) -> PyResult<(Chunks, Option<i64>, u64, u64)> {
        let b = self.b.as_mut().ok_or_else(|| PyRuntimeError::new_err("feed() after close()"))?;
        let seen = &mut self.seen;
        let after = after.unwrap_or_default();
        let (tables, last, lost) = py
            .allow_threads(|| -> Result<_, roscope_ctf::CtfError> {
                let mut set = TraceSet::open(&paths)?;
                let mut out = Vec::new();
                let root = std::path::Path::new(paths.first().map_or("", |p| p.as_str()));
                // per stream: its events up to this time were read already
                let skip: Vec<Option<u64>> = set
                    .streams
                    .iter()
                    .map(|s| {
                        let rel = std::path::Path::new(&s.path).strip_prefix(root).ok()?;
                        after.iter().find(|(f, _)| std::path::Path::new(f) == rel).map(|&(_, t)| t)
                    })
                    .collect();
                let keep = |i: usize, ts: u64| upto.is_none_or(|u| ts <= u) && skip[i].is_none_or(|a| ts > a);
                let last = b.feed_where(&mut set, &mut |t| out.push(t), &keep);
                Ok((out, last, chunk_losses(&set, seen)))
            })
            .map_err(err)?;
        self.events = b.counts.events;
        Ok((to_py(tables)?, last, lost.0, lost.1))
    }

    /// Events read so far, over every chunk fed.
    #[getter]
    fn events(&self) -> u64 {
        self.events
    }

    /// Entries the matching of ROS 1 messages to their publications holds
    /// (publications, receptions, writes on connections): bounded by the
    /// messages of the last `LINK_WINDOW_NS` (10 s), not by the run.
    #[getter]
    fn held_messages(&self) -> usize {
        self.b.as_ref().map_or(0, |b| b.r1.held())
    }

    /// The earliest time of a take not handed over yet (None if none): a window is complete
    /// only before it (`Builder::pending_takes_since`).
    fn pending_takes_since(&self) -> Option<i64> {
        self.b.as_ref().and_then(|b| b.pending_takes_since())
    }

    /// The objects known so far (hosts, processes, threads, nodes, publishers,
    /// subscriptions, timers, services, clients, callbacks), as (name, ArrowTable).
    fn objects(&self) -> PyResult<Chunks> {
        let b = self.b.as_ref().ok_or_else(|| PyRuntimeError::new_err("objects() after close()"))?;
        to_py(b.object_tables())
    }

    /// The object tables (as `objects`) that changed since the last call (every one
    /// at the first): a watch writes again only those.
    fn changed_objects(&mut self) -> PyResult<Chunks> {
        let b = self.b.as_ref().ok_or_else(|| PyRuntimeError::new_err("changed_objects() after close()"))?;
        let mut out = Vec::new();
        for t in b.object_tables() {
            let now = table_bytes(&t);
            if self.objects_seen.get(t.name) != Some(&now) {
                self.objects_seen.insert(t.name, now);
                out.push(t);
            }
        }
        to_py(out)
    }

    /// After the last chunk: every record still held.
    fn close(&mut self, py: Python<'_>) -> PyResult<Chunks> {
        let Some(mut b) = self.b.take() else { return Ok(vec![]) };
        let tables = py.allow_threads(|| {
            let mut out = Vec::new();
            b.close(&mut |t| out.push(t));
            out
        });
        to_py(tables)
    }
}

/// A table's content as bytes (its columns' values and validity, in order): equal
/// bytes, equal tables.
fn table_bytes(t: &Table) -> Vec<u8> {
    use roscope_model::table::Data;
    let mut out = (t.rows as u64).to_le_bytes().to_vec();
    for c in &t.cols {
        out.extend_from_slice(c.name.as_bytes());
        out.push(c.any_null as u8);
        if c.any_null {
            out.extend_from_slice(&c.valid);
        }
        match &c.data {
            Data::I64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::U64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::F64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes())),
            Data::Str(b, o) => {
                o.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                out.extend_from_slice(b);
            }
        }
    }
    out
}

/// (events discarded, packets lost) in this chunk, from the counters of the
/// packets it holds against the last ones seen of the same stream.
fn chunk_losses(set: &TraceSet, seen: &mut HashMap<(String, String), (u64, Option<u64>)>) -> (u64, u64) {
    let (mut events, mut packets) = (0u64, 0u64);
    for s in &set.streams {
        let file = std::path::Path::new(&s.path).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let key = (set.traces[s.trace].rel.clone(), file);
        let st = seen.entry(key).or_insert((0, None));
        for pk in &s.packet_log {
            if let Some(d) = pk.events_discarded {
                events += d.saturating_sub(st.0);
                st.0 = st.0.max(d);
            }
            if let Some(q) = pk.seq_num {
                packets += match st.1 {
                    Some(p) if q > p + 1 => q - p - 1,
                    None if q > 0 => q,
                    _ => 0,
                };
                st.1 = Some(q);
            }
        }
    }
    (events, packets)
}

/// A client of an `lttng-relayd`'s viewer port (`roscope_ctf::live`): each
/// `poll` writes the packets every stream is complete up to into a new
/// directory, a CTF trace that `LiveModel.feed` reads as it reads a chunk.
#[pyclass(module = "roscope._core")]
pub struct LiveClient {
    c: roscope_ctf::live::LiveClient,
}

#[pymethods]
impl LiveClient {
    /// Connects to the viewer port at `addr` (host:port).
    #[new]
    fn new(py: Python<'_>, addr: String) -> PyResult<Self> {
        let c = py.allow_threads(|| roscope_ctf::live::LiveClient::connect(&addr)).map_err(err)?;
        Ok(LiveClient { c })
    }

    /// Attaches to the live session `name` (waiting up to `timeout_s` for the
    /// relay to know it); returns its live timer (us).
    fn attach(&mut self, py: Python<'_>, name: String, timeout_s: f64) -> PyResult<u32> {
        let c = &mut self.c;
        let s = py.allow_threads(|| c.attach(&name, std::time::Duration::from_secs_f64(timeout_s.max(0.0)))).map_err(err)?;
        Ok(s.live_timer_us)
    }

    /// Gets what the relay has and writes what is complete into the new
    /// directory `out` (none if nothing is).
    /// Returns (packets, bytes, ended, upto, after): ended when every stream
    /// of the session was closed (nothing more will come); `upto` and `after`
    /// go to `LiveModel.feed` with the directory.
    #[allow(clippy::type_complexity)]
    fn poll(&mut self, py: Python<'_>, out: String) -> PyResult<(u64, u64, bool, Option<u64>, Vec<(String, u64)>)> {
        let c = &mut self.c;
        let p = py.allow_threads(|| c.poll(std::path::Path::new(&out))).map_err(err)?;
        let after = p.after.iter().map(|(f, t)| (f.to_string_lossy().into_owned(), *t)).collect();
        Ok((p.packets, p.bytes, p.ended, p.upto, after))
    }

    /// Packets and bytes got from the relay so far.
    #[getter]
    fn received(&self) -> (u64, u64) {
        (self.c.packets, self.c.bytes)
    }

    /// Data streams known, and those ended.
    #[getter]
    fn streams(&self) -> (usize, usize) {
        self.c.stream_counts()
    }
}
