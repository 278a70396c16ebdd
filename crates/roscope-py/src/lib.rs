#![allow(unexpected_cfgs)]
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
use pyo3::types::{PyBytes, PyList, PyTuple};

use roscope_ctf::columns::ColumnReader;
use roscope_ctf::{json, summary, CtfError, TraceSet};

create_exception!(_core, TraceError, PyValueError, "A trace cannot be read: the message names the file and what is wrong.");

const CHUNK: usize = 1 << 20;

fn err(e: CtfError) -> PyErr {
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

    /// The next batches of columns, or None at the end. Each batch is a tuple
    /// (trace index, event name, rows, [(column, kind, values, offsets, validity)]),
    /// the buffers in Arrow layout (little-endian 8-byte values, i64 offsets,
    /// one validity byte per row or empty when all rows are valid).
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
            let cl = columns_to_py(py, b.columns)?;
            list.append(PyTuple::new_bound(py, [b.trace.into_py(py), b.event.into_py(py), b.rows.into_py(py), cl.into_py(py)]))?;
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

fn columns_to_py(py: Python<'_>, cols: Vec<roscope_ctf::columns::Column>) -> PyResult<Py<PyList>> {
    let cl = PyList::empty_bound(py);
    for c in cols {
        let offsets: Vec<u8> = c.offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        let t = PyTuple::new_bound(
            py,
            [
                c.name.into_py(py),
                c.kind.name().into_py(py),
                PyBytes::new_bound(py, &c.values).into_py(py),
                PyBytes::new_bound(py, &offsets).into_py(py),
                PyBytes::new_bound(py, &c.validity).into_py(py),
            ],
        );
        cl.append(t)?;
    }
    Ok(cl.unbind())
}

/// Builds the execution model of the traces under `paths`. Returns
/// (tables, stats, warnings, losses): tables is a list of (name, rows, columns)
/// with columns as in `Trace.read_batches`.
#[pyfunction]
#[pyo3(signature = (paths, heuristics=true, progress=false))]
fn build_model(py: Python<'_>, paths: Vec<String>, heuristics: bool, progress: bool) -> PyResult<PyObject> {
    let mut set = TraceSet::open(&paths).map_err(err)?;
    let model = py.allow_threads(|| roscope_model::build(&mut set, roscope_model::Options { heuristics, progress }));
    py.check_signals()?;
    let tables = PyList::empty_bound(py);
    for t in model.tables {
        let rows = t.rows;
        let (name, cols) = t.finish();
        tables.append((name, rows, columns_to_py(py, cols)?))?;
    }
    let warnings: Vec<String> = set.all_warnings().iter().map(|w| w.to_string()).collect();
    let losses = losses(&set);
    Ok((tables, model.stats, warnings, losses).into_py(py))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trace>()?;
    m.add_function(wrap_pyfunction!(build_model, m)?)?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    Ok(())
}
