//! `FlowInput`: what the data-flow searches of `roscope watch` read
//! (`roscope.live_flows`, docs/watch.md "Alerts"): the callback runs,
//! publications and transport links a live session's model handed over, kept
//! chunk after chunk and forgotten once older than the searches reach, so that
//! each check builds the flow's model of the records held without a database
//! (no query, no copy per chunk): ids renumbered 0..n in their order, a
//! reference to a record no longer held null, as the flow's model wants them.

use std::collections::{BTreeMap, HashMap};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use roscope_model::table::{Data, Table};

use crate::arrow::{self, ArrowTable};
use crate::flow::FlowModel;

struct Run {
    callback: Option<i64>,
    thread: Option<i64>,
    start: i64,
    end: Option<i64>,
}

struct Publication {
    publisher: Option<i64>,
    run: Option<i64>,
    ts: i64,
    rclcpp: Option<i64>,
    rcl: Option<i64>,
    rmw: Option<i64>,
}

impl Publication {
    /// Its time as the flow reads it: its earliest layer's, else its first event's.
    fn time(&self) -> i64 {
        self.rclcpp.or(self.rcl).or(self.rmw).unwrap_or(self.ts)
    }
}

/// The columns of each instance table kept, as `LiveModel.feed` hands them over.
const RUNS: &[&str] = &["run_id", "callback_id", "thread_id", "start_ts", "end_ts"];
const PUBS: &[&str] = &["publication_id", "publisher_id", "run_id", "ts", "rclcpp_ts", "rcl_ts", "rmw_ts"];
const LINKS: &[&str] = &["publication_id", "run_id"];

/// An int64 column of `t` by name, nulls as None.
fn ints(t: &Table, name: &str) -> PyResult<Vec<Option<i64>>> {
    let c = t.cols.iter().find(|c| c.name == name).ok_or_else(|| PyValueError::new_err(format!("{} has no column {}", t.name, name)))?;
    let Data::I64(v) = &c.data else {
        return Err(PyValueError::new_err(format!("{}.{} is not int64", t.name, name)));
    };
    Ok(v.iter().enumerate().map(|(i, &x)| if c.any_null && c.valid[i] == 0 { None } else { Some(x) }).collect())
}

fn required(v: Option<i64>, what: &str) -> PyResult<i64> {
    v.ok_or_else(|| PyValueError::new_err(format!("{} is null", what)))
}

/// The records a live watch's data-flow searches read, held from chunk to chunk.
#[pyclass(module = "roscope._core")]
#[derive(Default)]
pub struct FlowInput {
    runs: BTreeMap<i64, Run>,
    pubs: BTreeMap<i64, Publication>,
    /// (publication, run it fed) of every link whose publication is held.
    links: Vec<(i64, Option<i64>)>,
}

#[pymethods]
impl FlowInput {
    #[new]
    fn new() -> Self {
        FlowInput::default()
    }

    /// Keeps the records of `table` (one of `LiveModel.feed`'s: callback_runs,
    /// publications, links; the others are not read by the flow and are left).
    #[allow(clippy::needless_range_loop)] // c[k][i]: row i of column k
    fn add(&mut self, name: &str, table: &Bound<'_, PyAny>) -> PyResult<()> {
        match name {
            "callback_runs" => {
                let t = arrow::table_from_stream("callback_runs", RUNS, table)?;
                let c: Vec<_> = RUNS.iter().map(|n| ints(&t, n)).collect::<PyResult<_>>()?;
                for i in 0..t.rows {
                    let run = Run { callback: c[1][i], thread: c[2][i], start: required(c[3][i], "callback_runs.start_ts")?, end: c[4][i] };
                    self.runs.insert(required(c[0][i], "callback_runs.run_id")?, run);
                }
            }
            "publications" => {
                let t = arrow::table_from_stream("publications", PUBS, table)?;
                let c: Vec<_> = PUBS.iter().map(|n| ints(&t, n)).collect::<PyResult<_>>()?;
                for i in 0..t.rows {
                    let p = Publication {
                        publisher: c[1][i],
                        run: c[2][i],
                        ts: required(c[3][i], "publications.ts")?,
                        rclcpp: c[4][i],
                        rcl: c[5][i],
                        rmw: c[6][i],
                    };
                    self.pubs.insert(required(c[0][i], "publications.publication_id")?, p);
                }
            }
            "links" => {
                let t = arrow::table_from_stream("links", LINKS, table)?;
                let (p, r) = (ints(&t, "publication_id")?, ints(&t, "run_id")?);
                for (p, r) in p.into_iter().zip(r) {
                    self.links.push((required(p, "links.publication_id")?, r));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Forgets the runs that start and the publications made (their first event)
    /// before `t`, and the links of publications no longer held.
    fn forget_before(&mut self, t: i64) {
        self.runs.retain(|_, r| r.start >= t);
        self.pubs.retain(|_, p| p.ts >= t);
        let pubs = &self.pubs;
        self.links.retain(|(p, _)| pubs.contains_key(p));
    }

    /// Runs, publications and links held.
    #[getter]
    fn held(&self) -> (usize, usize, usize) {
        (self.runs.len(), self.pubs.len(), self.links.len())
    }

    /// Whether a publisher of `publishers` published at a time (as the flow reads it)
    /// in [since, until).
    fn published(&self, since: i64, until: i64, publishers: Vec<i64>) -> bool {
        self.pubs.values().any(|p| {
            let t = p.time();
            since <= t && t < until && p.publisher.is_some_and(|x| publishers.contains(&x))
        })
    }

    /// The flow's model of the records held and `objects` (the object tables of
    /// `FlowModel.inputs()` by name, as `LiveModel` hands them over; one missing is
    /// empty).
    fn model(&self, py: Python<'_>, objects: &Bound<'_, PyDict>) -> PyResult<FlowModel> {
        let run_id: HashMap<i64, i64> = self.runs.keys().enumerate().map(|(i, &r)| (r, i as i64)).collect();
        let pub_id: HashMap<i64, i64> = self.pubs.keys().enumerate().map(|(i, &p)| (p, i as i64)).collect();
        let dense = |m: &HashMap<i64, i64>, id: Option<i64>| id.and_then(|x| m.get(&x).copied());
        let mut tables = Vec::with_capacity(roscope_flow::INPUTS.len());
        for &(name, cols) in roscope_flow::INPUTS {
            let t = match name {
                "callback_runs" => {
                    let mut t =
                        Table::with_columns("callback_runs", &[("run_id", 'i'), ("callback_id", 'i'), ("start_ts", 'i'), ("end_ts", 'i')]);
                    for (i, r) in self.runs.values().enumerate() {
                        t.row().i(Some(i as i64)).i(r.callback).i(Some(r.start)).i(r.end).done();
                    }
                    t
                }
                "publications" => {
                    let mut t = Table::with_columns(
                        "publications",
                        &[
                            ("publication_id", 'i'),
                            ("publisher_id", 'i'),
                            ("run_id", 'i'),
                            ("ts", 'i'),
                            ("rclcpp_ts", 'i'),
                            ("rcl_ts", 'i'),
                            ("rmw_ts", 'i'),
                        ],
                    );
                    for (i, p) in self.pubs.values().enumerate() {
                        t.row()
                            .i(Some(i as i64))
                            .i(p.publisher)
                            .i(dense(&run_id, p.run))
                            .i(Some(p.ts))
                            .i(p.rclcpp)
                            .i(p.rcl)
                            .i(p.rmw)
                            .done();
                    }
                    t
                }
                "links" => {
                    let mut t = Table::with_columns("links", &[("publication_id", 'i'), ("run_id", 'i')]);
                    for &(p, r) in &self.links {
                        if let Some(p) = pub_id.get(&p) {
                            t.row().i(Some(*p)).i(dense(&run_id, r)).done();
                        }
                    }
                    t
                }
                _ => match objects.get_item(name)? {
                    Some(obj) => arrow::table_from_stream(name, cols, &obj)?,
                    None => {
                        let spec = roscope_model::schema::table(name)
                            .ok_or_else(|| PyValueError::new_err(format!("no table {} in the model's schema", name)))?;
                        Table::new(spec)
                    }
                },
            };
            tables.push(t);
        }
        let m = py.allow_threads(|| roscope_flow::Model::from_tables(&tables)).map_err(crate::flow::input_err)?;
        Ok(FlowModel::from_model(m))
    }

    /// The runs held of each process whose callbacks ran on more than one thread (as
    /// `roscope.overlaps` gives them to `FlowSearch.add_overlaps`: proc_id, thread_id,
    /// callback_id, start_ts, end_ts, by start; runs without a thread or an end left
    /// out). `callbacks`: the callbacks table (callback_id, proc_id).
    fn races(&self, callbacks: &Bound<'_, PyAny>) -> PyResult<Vec<ArrowTable>> {
        let t = arrow::table_from_stream("callbacks", &["callback_id", "proc_id"], callbacks)?;
        let proc_of: HashMap<i64, i64> =
            ints(&t, "callback_id")?.into_iter().zip(ints(&t, "proc_id")?).filter_map(|(c, p)| Some((c?, p?))).collect();
        let mut threads: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for r in self.runs.values() {
            if let (Some(&p), Some(th)) = (r.callback.and_then(|c| proc_of.get(&c)), r.thread) {
                let v = threads.entry(p).or_default();
                if !v.contains(&th) {
                    v.push(th);
                }
            }
        }
        let mut out = Vec::new();
        for (&proc_id, th) in &threads {
            if th.len() < 2 {
                continue;
            }
            let mut rows: Vec<(i64, i64, i64, i64, i64)> = self
                .runs
                .iter()
                .filter(|(_, r)| r.callback.and_then(|c| proc_of.get(&c)) == Some(&proc_id))
                .filter_map(|(&id, r)| Some((r.start, id, r.thread?, r.callback?, r.end?)))
                .collect();
            rows.sort_unstable();
            let mut t = Table::with_columns(
                "runs",
                &[("proc_id", 'i'), ("thread_id", 'i'), ("callback_id", 'i'), ("start_ts", 'i'), ("end_ts", 'i')],
            );
            for (start, _id, thread, callback, end) in rows {
                t.row().i(Some(proc_id)).i(Some(thread)).i(Some(callback)).i(Some(start)).i(Some(end)).done();
            }
            out.push(ArrowTable::from_table(t)?);
        }
        Ok(out)
    }
}

/// The columns `table_rows` reads.
const ROW_COLUMNS: &[&str] =
    &["path_id", "start_ts", "end_ts", "latency_ns", "path", "fallback_edges", "publisher_id", "name", "first_ts", "last_ts"];

/// The rows of a small table (a data-flow search's flows of one check, an object
/// table), `columns` only (of `ROW_COLUMNS`), as tuples (null: None): what a watch
/// reads of them without a database. Not for a table of events.
#[pyfunction]
pub fn table_rows(py: Python<'_>, table: &Bound<'_, PyAny>, columns: Vec<String>) -> PyResult<Vec<PyObject>> {
    let names = columns
        .iter()
        .map(|c| {
            ROW_COLUMNS.iter().copied().find(|k| k == c).ok_or_else(|| PyValueError::new_err(format!("table_rows: column {c} is not read")))
        })
        .collect::<PyResult<Vec<&'static str>>>()?;
    let t = arrow::table_from_stream("table", &names, table)?;
    let mut rows = Vec::with_capacity(t.rows);
    for i in 0..t.rows {
        let mut row: Vec<PyObject> = Vec::with_capacity(t.cols.len());
        for c in &t.cols {
            if c.any_null && c.valid[i] == 0 {
                row.push(py.None());
                continue;
            }
            row.push(match &c.data {
                Data::I64(v) => v[i].into_py(py),
                Data::U64(v) => v[i].into_py(py),
                Data::F64(v) => v[i].into_py(py),
                Data::Str(b, o) => String::from_utf8_lossy(&b[o[i] as usize..o[i + 1] as usize]).into_py(py),
            });
        }
        rows.push(pyo3::types::PyTuple::new_bound(py, row).into_py(py));
    }
    Ok(rows)
}
