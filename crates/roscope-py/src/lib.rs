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
    /// a validity bitmap, or empty when all rows are valid).
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

/// One validity byte per row to an Arrow validity bitmap (least significant bit first).
fn bitmap(validity: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; validity.len().div_ceil(8)];
    for (i, &v) in validity.iter().enumerate() {
        if v != 0 {
            out[i >> 3] |= 1 << (i & 7);
        }
    }
    out
}

fn columns_to_py(py: Python<'_>, cols: Vec<roscope_ctf::columns::Column>) -> PyResult<Py<PyList>> {
    let cl = PyList::empty_bound(py);
    for c in cols {
        let offsets: Vec<u8> = c.offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        let validity = bitmap(&c.validity);
        let t = PyTuple::new_bound(
            py,
            [
                c.name.into_py(py),
                c.kind.name().into_py(py),
                PyBytes::new_bound(py, &c.values).into_py(py),
                PyBytes::new_bound(py, &offsets).into_py(py),
                PyBytes::new_bound(py, &validity).into_py(py),
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
#[pyo3(signature = (paths, heuristics=true, progress=false, record_ids=None))]
fn build_model(
    py: Python<'_>,
    paths: Vec<String>,
    heuristics: bool,
    progress: bool,
    record_ids: Option<Vec<String>>,
) -> PyResult<PyObject> {
    let mut set = TraceSet::open(&paths).map_err(err)?;
    let model = py.allow_threads(|| {
        roscope_model::build(
            &mut set,
            roscope_model::Options { heuristics, progress },
            roscope_model::Scope { record_ids: record_ids.unwrap_or_default() },
        )
    });
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

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn bytes_of(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The execution model as columns, for the flow algorithms (roscope-flow).
/// Columns are little-endian int64 buffers; ids are row positions, -1 is none.
#[pyclass(module = "roscope._core")]
struct FlowModel {
    m: roscope_flow::Model,
    links: Option<Vec<roscope_flow::CausalLink>>,
}

#[pymethods]
impl FlowModel {
    #[new]
    fn new(
        cols: std::collections::HashMap<String, Vec<u8>>,
        annotations: Vec<(i64, Vec<i64>, Vec<i64>)>,
        n_topics: usize,
    ) -> PyResult<Self> {
        let get = |k: &str| -> PyResult<Vec<i64>> {
            cols.get(k).map(|b| i64s(b)).ok_or_else(|| PyValueError::new_err(format!("missing column {}", k)))
        };
        let m = roscope_flow::Model {
            cb_node: get("cb_node")?,
            cb_kind: get("cb_kind")?,
            cb_sub: get("cb_sub")?,
            sub_topic: get("sub_topic")?,
            sub_node: get("sub_node")?,
            pub_topic: get("pub_topic")?,
            pub_node: get("pub_node")?,
            run_cb: get("run_cb")?,
            run_start: get("run_start")?,
            run_end: get("run_end")?,
            pb_publisher: get("pb_publisher")?,
            pb_run: get("pb_run")?,
            pb_ts: get("pb_ts")?,
            tl_pub: get("tl_pub")?,
            tl_run: get("tl_run")?,
            annotations,
            n_topics,
        };
        let n = |v: &Vec<i64>| v.len();
        if n(&m.cb_node) != n(&m.cb_kind)
            || n(&m.cb_node) != n(&m.cb_sub)
            || n(&m.run_cb) != n(&m.run_start)
            || n(&m.run_cb) != n(&m.run_end)
            || n(&m.pb_ts) != n(&m.pb_run)
            || n(&m.pb_ts) != n(&m.pb_publisher)
            || n(&m.tl_pub) != n(&m.tl_run)
            || n(&m.sub_topic) != n(&m.sub_node)
            || n(&m.pub_topic) != n(&m.pub_node)
        {
            return Err(PyValueError::new_err("flow model columns have inconsistent lengths"));
        }
        Ok(FlowModel { m, links: None })
    }

    /// Causal links: (in_publication, in_run, out_publication, kind) int64 columns as bytes.
    #[pyo3(signature = (infer_timer_inputs=true))]
    fn causal_links(&mut self, py: Python<'_>, infer_timer_inputs: bool) -> PyResult<PyObject> {
        let m = &self.m;
        let links = py.allow_threads(|| {
            let ix = roscope_flow::Index::new(m);
            roscope_flow::causal_links(&ix, roscope_flow::Policy { infer_timer_inputs })
        });
        let a: Vec<i64> = links.iter().map(|l| l.in_pub).collect();
        let b: Vec<i64> = links.iter().map(|l| l.in_run).collect();
        let c: Vec<i64> = links.iter().map(|l| l.out_pub).collect();
        let d: Vec<i64> = links.iter().map(|l| l.kind as i64).collect();
        self.links = Some(links);
        let out = (
            PyBytes::new_bound(py, &bytes_of(&a)),
            PyBytes::new_bound(py, &bytes_of(&b)),
            PyBytes::new_bound(py, &bytes_of(&c)),
            PyBytes::new_bound(py, &bytes_of(&d)),
        );
        Ok(out.into_py(py))
    }

    /// One message's flow graph: (publications, runs, edges as (from_kind, from, to_kind, to, kind)).
    #[pyo3(signature = (publication, forward=true, backward=true))]
    fn message_graph(&mut self, py: Python<'_>, publication: i64, forward: bool, backward: bool) -> PyResult<PyObject> {
        if publication < 0 || publication as usize >= self.m.pb_ts.len() {
            return Err(PyValueError::new_err(format!("no publication {}", publication)));
        }
        let ix = roscope_flow::Index::new(&self.m);
        if self.links.is_none() {
            self.links = Some(roscope_flow::causal_links(&ix, roscope_flow::Policy::default()));
        }
        let g = roscope_flow::message_graph(&ix, self.links.as_ref().unwrap(), publication, forward, backward);
        let edges: Vec<(String, i64, String, i64, &str)> =
            g.edges.iter().map(|e| (e.0.to_string(), e.1, e.2.to_string(), e.3, e.4)).collect();
        Ok((g.pubs, g.runs, edges).into_py(py))
    }

    /// Data flows between input and output topics (bool masks over topic ids).
    /// Returns (flows, steps, stats): flows and steps as dicts of int64 column bytes.
    #[pyo3(signature = (is_input, is_output, implicit=None, exact_links=true, max_flows_per_output=10000, all_steps=false))]
    #[allow(clippy::too_many_arguments)]
    fn data_flows(
        &self,
        py: Python<'_>,
        is_input: Vec<bool>,
        is_output: Vec<bool>,
        implicit: Option<Vec<(i64, i64)>>,
        exact_links: bool,
        max_flows_per_output: usize,
        all_steps: bool,
    ) -> PyResult<PyObject> {
        if is_input.len() != self.m.n_topics || is_output.len() != self.m.n_topics {
            return Err(PyValueError::new_err("topic masks must have one entry per topic"));
        }
        let o = roscope_flow::FlowOptions {
            is_input_topic: is_input,
            is_output_topic: is_output,
            implicit: implicit.map(|v| v.into_iter().collect()),
            exact_links,
            max_flows_per_output,
        };
        let m = &self.m;
        let t0 = std::time::Instant::now();
        // Columns are written straight into little-endian byte buffers.
        struct Out {
            flows: Vec<Vec<u8>>,
            steps: Vec<Vec<u8>>,
            segs: Vec<Vec<u8>>,
            n: usize,
            outputs: usize,
            trees: usize,
            hits: u64,
            evicted: u64,
        }
        let out = py.allow_threads(|| {
            let ix = roscope_flow::Index::new(m);
            let mut ids: std::collections::HashMap<Vec<(char, i64)>, i64> = std::collections::HashMap::new();
            let mut fl: Vec<Vec<u8>> = (0..11).map(|_| Vec::new()).collect();
            let mut st: Vec<Vec<u8>> = (0..4).map(|_| Vec::new()).collect();
            let mut segset = roscope_flow::SegmentSet::default();
            let mut k = 0usize;
            let res = roscope_flow::each_data_flow(&ix, &o, |f| {
                segset.add(m, &f);
                let key = roscope_flow::path_key(m, &f);
                let n = ids.len() as i64;
                let mut first_of_path = false;
                let pid = *ids.entry(key).or_insert_with(|| {
                    first_of_path = true;
                    n
                });
                let first_run = if f.steps[0].0 == 'r' { f.steps[0].1 } else { -1 };
                let input_pub = f.steps.get(1).filter(|s| s.0 == 'p').map(|s| s.1).unwrap_or(-1);
                let vals = [
                    k as i64,
                    pid,
                    f.steps.last().unwrap().1,
                    input_pub,
                    first_run,
                    f.start,
                    f.end,
                    f.end - f.start,
                    f.communication,
                    f.idle,
                    f.computation,
                ];
                for (c, v) in fl.iter_mut().zip(vals) {
                    c.extend_from_slice(&v.to_le_bytes());
                }
                if all_steps || first_of_path {
                    for (j, &(kind, id)) in f.steps.iter().enumerate() {
                        for (c, v) in st.iter_mut().zip([k as i64, j as i64, (kind == 'r') as i64, id]) {
                            c.extend_from_slice(&v.to_le_bytes());
                        }
                    }
                }
                k += 1;
            });
            let segs = segset.segments;
            let mut sg: Vec<Vec<u8>> = (0..4).map(|_| Vec::with_capacity(segs.len() * 8)).collect();
            for x in &segs {
                for (c, v) in sg.iter_mut().zip([x.kind as i64, x.a, x.b, x.duration]) {
                    c.extend_from_slice(&v.to_le_bytes());
                }
            }
            Out {
                flows: fl,
                steps: st,
                segs: sg,
                n: res.flows,
                outputs: res.outputs,
                trees: res.trees,
                hits: res.cache_hits,
                evicted: res.evicted,
            }
        });
        let secs = t0.elapsed().as_secs_f64();
        let mk = |names: &[&str], cols: Vec<Vec<u8>>| -> PyResult<Bound<'_, pyo3::types::PyDict>> {
            let d = pyo3::types::PyDict::new_bound(py);
            for (n, c) in names.iter().zip(cols) {
                d.set_item(*n, PyBytes::new_bound(py, &c))?;
            }
            Ok(d)
        };
        let flows = mk(
            &[
                "flow_id",
                "path_id",
                "output_publication_id",
                "input_publication_id",
                "first_run_id",
                "start_ts",
                "end_ts",
                "latency_ns",
                "communication_ns",
                "idle_ns",
                "computation_ns",
            ],
            out.flows,
        )?;
        let steps = mk(&["flow_id", "step", "is_run", "id"], out.steps)?;
        let sg = mk(&["kind", "a", "b", "duration_ns"], out.segs)?;
        let stats = pyo3::types::PyDict::new_bound(py);
        stats.set_item("outputs", out.outputs)?;
        stats.set_item("flows", out.n)?;
        stats.set_item("trees_cached", out.trees)?;
        stats.set_item("cache_evicted", out.evicted)?;
        stats.set_item("cache_hits", out.hits)?;
        stats.set_item("seconds", secs)?;
        Ok((flows, steps, sg, stats).into_py(py))
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
    m.add_class::<Trace>()?;
    m.add_function(wrap_pyfunction!(build_model, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_class::<FlowModel>()?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    Ok(())
}
