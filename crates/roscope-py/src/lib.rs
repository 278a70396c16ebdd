#![allow(unexpected_cfgs)]
// pyo3 0.22's macros convert the error of every PyResult they wrap into itself (fixed in
// pyo3 0.23); they expand next to each #[pymethods]/#[pyfunction], so only the crate level reaches them.
#![expect(clippy::useless_conversion, reason = "pyo3 0.22 macro expansion")]
//! roscope._core: the Rust core as a Python extension module.
//!
//! A `Trace` is one pass over a set of traces: summarize it, dump it, or read
//! it as columnar batches. Heavy work runs without the GIL, in chunks, so that
//! Ctrl-C is honoured.

use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

use pyo3::create_exception;
use pyo3::exceptions::{PyBrokenPipeError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

mod arrow;
use arrow::ArrowTable;
mod flow;
mod kernel;
mod live;
mod live_flows;
mod live_stats;
mod search;
mod slices;
mod stats;
mod user_regex;

use std::sync::Arc;

use roscope_ctf::columns::ColumnReader;
use roscope_ctf::{json, summary, CtfError, TraceSet};

create_exception!(_core, TraceError, PyValueError, "A trace cannot be read: the message names the file and what is wrong.");

const CHUNK: usize = 1 << 20;

pub(crate) fn err(e: CtfError) -> PyErr {
    TraceError::new_err(e.to_string())
}

#[pyclass(module = "roscope._core")]
struct Trace {
    set: TraceSet,
    used: bool,
    cols: Option<ColumnReader>,
    done: bool,
}

impl Trace {
    fn start(&mut self, what: &str) -> PyResult<()> {
        if self.used {
            return Err(PyRuntimeError::new_err(format!("this Trace was already read once; open it again to {}", what)));
        }
        self.used = true;
        Ok(())
    }
}

#[pymethods]
impl Trace {
    #[new]
    fn new(paths: Vec<String>) -> PyResult<Self> {
        let set = TraceSet::open(&paths).map_err(err)?;
        Ok(Trace { set, used: false, cols: None, done: false })
    }

    /// Metadata facts without reading events: list of (rel, path, metadata text).
    fn traces(&self) -> Vec<(String, String, String)> {
        self.set.traces.iter().map(|t| (t.rel.clone(), t.dir.display().to_string(), t.md.text.clone())).collect()
    }

    /// Reads every event once; returns the summary as a JSON document.
    fn summary_json(&mut self, py: Python<'_>) -> PyResult<String> {
        self.start("summarize it")?;
        let set = &mut self.set;
        let sum = py.allow_threads(|| summary::summarize(set));
        py.check_signals()?;
        Ok(summary::to_json(&self.set, &sum))
    }

    /// Writes every event as a JSON line to file descriptor `fd`; returns the count.
    #[pyo3(signature = (fd, limit=None))]
    fn dump(&mut self, py: Python<'_>, fd: i32, limit: Option<u64>) -> PyResult<u64> {
        self.start("dump it")?;
        // SAFETY: the descriptor belongs to the caller; ManuallyDrop keeps it open.
        let mut out = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        let limit = limit.unwrap_or(u64::MAX);
        let mut n = 0u64;
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
        loop {
            let set = &mut self.set;
            let res: std::io::Result<bool> = py.allow_threads(|| {
                let mut k = 0;
                while k < CHUNK && n < limit {
                    let Some(i) = set.next() else {
                        out.write_all(&buf)?;
                        buf.clear();
                        return Ok(true);
                    };
                    json::write_event(&mut buf, set, &set.streams[i]);
                    n += 1;
                    k += 1;
                    if buf.len() > (1 << 20) - 8192 {
                        out.write_all(&buf)?;
                        buf.clear();
                    }
                }
                out.write_all(&buf)?;
                buf.clear();
                Ok(n >= limit)
            });
            match res {
                Ok(true) => break,
                Ok(false) => py.check_signals()?,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Err(PyBrokenPipeError::new_err("output closed")),
                Err(e) => return Err(PyOSError::new_err(e.to_string())),
            }
        }
        Ok(n)
    }

    /// The next batches of columns, or None at the end: a list of (trace index,
    /// event name, ArrowTable of one record batch).
    #[pyo3(signature = (events=None, max_rows=1<<18))]
    fn read_batches(&mut self, py: Python<'_>, events: Option<Vec<String>>, max_rows: usize) -> PyResult<Option<Py<PyList>>> {
        if self.cols.is_none() {
            self.start("read it")?;
            self.cols = Some(ColumnReader::new(events, max_rows));
        }
        if self.done {
            return Ok(None);
        }
        let set = &mut self.set;
        let cols = self.cols.as_mut().unwrap();
        let finished = py.allow_threads(|| {
            let mut k = 0;
            loop {
                let Some(i) = set.next() else { return true };
                k += 1;
                if cols.add(set, i) || k >= CHUNK {
                    return false;
                }
            }
        });
        py.check_signals()?;
        if finished {
            self.done = true;
        }
        let batches = cols.take();
        if batches.is_empty() && finished {
            return Ok(None);
        }
        let list = PyList::empty_bound(py);
        for b in batches {
            let t = ArrowTable::from_columns(b.columns, b.rows)?;
            list.append((b.trace, b.event, Py::new(py, t)?))?;
        }
        Ok(Some(list.unbind()))
    }

    /// Problems met so far (file, byte offset, what): reading goes on past them.
    fn warnings(&self) -> Vec<String> {
        self.set.all_warnings().iter().map(|w| w.to_string()).collect()
    }

    /// Lost events so far, per stream: (file, events discarded, packets lost).
    fn losses(&self) -> Vec<(String, u64, u64)> {
        losses(&self.set)
    }
}

/// (stream's first file, events discarded, packets lost) for streams that lost any.
fn losses(set: &TraceSet) -> Vec<(String, u64, u64)> {
    set.losses()
        .into_iter()
        .filter(|l| l.events_discarded > 0 || l.packets_lost > 0)
        .map(|l| (l.files.first().cloned().unwrap_or_default(), l.events_discarded, l.packets_lost))
        .collect()
}

/// Counters a long job in the core updates while it runs (`roscope_ctf::meter`),
/// for a thread that shows progress: `read()` gives (done, total, found, work),
/// whose meaning is the job's (the model builder: bytes read, bytes in all,
/// events; a data-flow search: outputs searched, -, flows, candidate flows).
/// Reading it needs no lock and does not wait for the job.
#[pyclass(module = "roscope._core", frozen)]
pub struct Meter {
    pub(crate) m: Arc<roscope_model::Meter>,
}

#[pymethods]
impl Meter {
    #[new]
    fn new() -> Self {
        Meter { m: Arc::new(roscope_model::Meter::default()) }
    }

    fn read(&self) -> (u64, u64, u64, u64) {
        let [a, b, c, d] = self.m.read();
        (a, b, c, d)
    }
}

/// Builds the execution model of the traces under `paths`; with `sync`, the
/// clocks of several hosts are synchronized from the messages between them.
/// Returns (tables, stats, warnings, losses): tables is a list of (name, ArrowTable).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the Python signature: keywords with defaults
#[pyo3(signature = (paths, heuristics=true, progress=false, record_ids=None, sync=true, meter=None, attach=false))]
fn build_model(
    py: Python<'_>,
    paths: Vec<String>,
    heuristics: bool,
    progress: bool,
    record_ids: Option<Vec<String>>,
    sync: bool,
    meter: Option<PyRef<'_, Meter>>,
    attach: bool,
) -> PyResult<PyObject> {
    let mut set = TraceSet::open(&paths).map_err(err)?;
    set.meter = meter.map(|m| m.m.clone());
    let model = py.allow_threads(|| {
        roscope_model::build(
            &mut set,
            roscope_model::Options { heuristics, progress, sync, window_ns: None, flush_every: 0 },
            roscope_model::Scope { record_ids: record_ids.unwrap_or_default(), attach },
        )
    });
    py.check_signals()?;
    BuildEnd::new(&set, model).into_py_tuple(py)
}

/// A finished build: the model with the trace set's warnings and losses.
struct BuildEnd {
    model: roscope_model::Model,
    warnings: Vec<String>,
    losses: Vec<(String, u64, u64)>,
}

impl BuildEnd {
    fn new(set: &TraceSet, mut model: roscope_model::Model) -> Self {
        let mut warnings: Vec<String> = set.all_warnings().iter().map(|w| w.to_string()).collect();
        warnings.append(&mut model.warnings);
        BuildEnd { warnings, losses: losses(set), model }
    }

    /// (tables, stats, warnings, losses): tables is a list of (name, ArrowTable).
    fn into_py_tuple(self, py: Python<'_>) -> PyResult<PyObject> {
        let tables = PyList::empty_bound(py);
        for t in self.model.tables {
            let name = t.name;
            tables.append((name, Py::new(py, ArrowTable::from_table(t)?)?))?;
        }
        Ok((tables, self.model.stats, self.warnings, self.losses).into_py(py))
    }
}

/// What the builder thread of a `ModelStream` sends.
enum Msg {
    Chunk(roscope_model::table::Table),
    Done(Box<BuildEnd>),
    /// The traces could not be read again for the second pass.
    Failed(String),
}

/// A streaming build: the model builder runs in its own thread and hands
/// over the instance tables in chunks while it reads (`next_chunk`), at most
/// `queue` chunks ahead, so memory stays bounded by the window, not by the
/// trace; `finish` then gives what `build_model` gives, with the rest of
/// the tables. A set of several hosts whose clocks are synchronized is held
/// whole and comes at `finish`.
#[pyclass(module = "roscope._core")]
struct ModelStream {
    rx: std::sync::Mutex<std::sync::mpsc::Receiver<Msg>>,
    end: Option<Box<BuildEnd>>,
}

#[pymethods]
impl ModelStream {
    #[new]
    #[pyo3(signature = (paths, heuristics=true, progress=false, record_ids=None, sync=true, window_ns=1_000_000_000, queue=2, flush_every=0, meter=None, attach=false))]
    #[expect(clippy::too_many_arguments, reason = "the Python constructor's keyword arguments")]
    fn new(
        paths: Vec<String>,
        heuristics: bool,
        progress: bool,
        record_ids: Option<Vec<String>>,
        sync: bool,
        window_ns: u64,
        queue: usize,
        flush_every: u64,
        meter: Option<PyRef<'_, Meter>>,
        attach: bool,
    ) -> PyResult<Self> {
        let mut set = TraceSet::open(&paths).map_err(err)?;
        set.meter = meter.map(|m| m.m.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(queue.max(1));
        let opts = roscope_model::Options { heuristics, progress, sync, window_ns: Some(window_ns.max(1)), flush_every };
        let scope = roscope_model::Scope { record_ids: record_ids.unwrap_or_default(), attach };
        std::thread::Builder::new()
            .name("roscope-model".into())
            .spawn(move || {
                let mut sink = |t: roscope_model::table::Table| {
                    // A reader that went away (an error, Ctrl-C) drops the rest.
                    let _ = tx.send(Msg::Chunk(t));
                };
                // Several hosts whose clocks are synchronized: a first pass finds the clock
                // maps from the messages between them, the second streams the mapped tables.
                let model = if roscope_model::needs_clock_pass(&set, opts) {
                    let synced = roscope_model::clock_pass(&mut set, opts, scope.clone());
                    // The second pass reports its progress on the same meter (from 0 again).
                    let meter = set.meter.take();
                    set = match TraceSet::open(&paths) {
                        Ok(mut s) => {
                            s.meter = meter;
                            s
                        }
                        Err(e) => {
                            let _ = tx.send(Msg::Failed(e.to_string()));
                            return;
                        }
                    };
                    roscope_model::build_streaming_synced(&mut set, opts, scope, &mut sink, synced)
                } else {
                    roscope_model::build_streaming(&mut set, opts, scope, Some(&mut sink))
                };
                let _ = tx.send(Msg::Done(Box::new(BuildEnd::new(&set, model))));
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the model builder: {e}")))?;
        Ok(ModelStream { rx: std::sync::Mutex::new(rx), end: None })
    }

    /// The next chunk, (table name, ArrowTable), or None once the build is
    /// complete. Waits without the GIL, and honours Ctrl-C.
    fn next_chunk(&mut self, py: Python<'_>) -> PyResult<Option<(String, ArrowTable)>> {
        use std::sync::mpsc::RecvTimeoutError;
        if self.end.is_some() {
            return Ok(None);
        }
        loop {
            let rx = &self.rx;
            let got = py.allow_threads(|| match rx.lock() {
                Ok(rx) => rx.recv_timeout(std::time::Duration::from_millis(200)),
                Err(_) => Err(RecvTimeoutError::Disconnected),
            });
            match got {
                Ok(Msg::Chunk(t)) => return Ok(Some((t.name.to_string(), ArrowTable::from_table(t)?))),
                Ok(Msg::Done(end)) => {
                    self.end = Some(end);
                    return Ok(None);
                }
                Ok(Msg::Failed(m)) => return Err(TraceError::new_err(m)),
                Err(RecvTimeoutError::Timeout) => py.check_signals()?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PyRuntimeError::new_err("the model builder stopped without finishing (an internal error: see above)"))
                }
            }
        }
    }

    /// After the last chunk: (tables, stats, warnings, losses) as `build_model`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let Some(end) = self.end.take() else {
            return Err(PyRuntimeError::new_err("read every chunk (next_chunk() until None) once before finish()"));
        };
        end.into_py_tuple(py)
    }
}

/// The schema of the execution database (crates/model/src/schema.rs) as a
/// JSON document: {"tables": [{name, origin, doc, columns: [{name, type,
/// doc}]}], "codes": [{name, doc, used_in, values: [{code, name, doc}]}]}.
#[pyfunction]
fn schema() -> String {
    roscope_model::schema::to_json()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Trace>()?;
    m.add_class::<ModelStream>()?;
    m.add_class::<live::LiveModel>()?;
    m.add_class::<live::LiveClient>()?;
    m.add_class::<live_flows::FlowInput>()?;
    m.add_class::<live_stats::LiveStats>()?;
    m.add_class::<Meter>()?;
    m.add_class::<user_regex::Regex>()?;
    m.add_function(wrap_pyfunction!(build_model, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(live_flows::table_rows, m)?)?;
    m.add_function(wrap_pyfunction!(stats::model_statistics, m)?)?;
    m.add_class::<flow::FlowModel>()?;
    m.add_class::<flow::FlowSearch>()?;
    m.add_class::<flow::CausalSearch>()?;
    m.add_function(wrap_pyfunction!(flow::overlapping_runs, m)?)?;
    // The data-flow search's vocabularies, defined once in roscope-flow (roscope.choices reads them).
    m.add("IMPLICIT_MODES", roscope_flow::Implicit::NAMES.to_vec())?;
    m.add("FALLBACK_RULES", roscope_flow::FallbackRule::NAMES.to_vec())?;
    search::register(m)?;
    m.add_class::<ArrowTable>()?;
    kernel::register(m)?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    Ok(())
}
