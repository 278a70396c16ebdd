//! `LiveStats`: the records of a live session that `roscope watch`'s windows
//! count (python/roscope/live.py, docs/watch.md "Windows"), held in the
//! model's own tables (no database), and each window's statistics computed
//! from them by `roscope_model::stats::window_stats`: the same parts, by the
//! same code, as a short recording's `roscope stats` (`model_statistics`), over
//! the window. Records are added as `LiveModel.feed` hands them over, the
//! object tables replaced as `LiveModel.changed_objects` gives them, and the
//! records no later window counts forgotten (`prune`): memory follows the
//! window, not the run.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use roscope_model::stats::{window_stats, Describe};
use roscope_model::table::{Col, Data, Table};
use roscope_model::Model;

use crate::arrow::table_from_stream;

/// The instance tables kept, with the columns the statistics read, and the column
/// whose time says when a record leaves (`prune`; links: with their publication).
const RECORDS: &[(&str, &[&str], Option<&str>)] = &[
    ("callback_runs", &["run_id", "callback_id", "start_ts", "end_ts", "duration_ns"], Some("start_ts")),
    ("publications", &["publication_id", "publisher_id", "rclcpp_ts", "rcl_ts", "rmw_ts", "ts"], Some("ts")),
    ("takes", &["take_id", "subscription_id", "ts", "taken"], Some("ts")),
    ("links", &["publication_id", "take_id", "run_id", "heuristic"], None),
];

/// The object tables kept (each replaced whole when it changes), with the columns read.
const OBJECTS: &[(&str, &[&str])] = &[
    ("hosts", &["host_id", "hostname"]),
    ("processes", &["proc_id", "pid", "procname", "host_id"]),
    ("nodes", &["node_id", "name", "namespace", "proc_id"]),
    ("publishers", &["publisher_id", "name", "node_id"]),
    ("subscriptions", &["subscription_id", "name"]),
    ("timers", &["timer_id", "period_ns"]),
    ("services", &["service_id", "name", "node_id"]),
    ("clients", &["client_id", "name"]),
    ("callbacks", &["callback_id", "proc_id", "handle", "symbol", "kind", "owner_id", "node_id"]),
];

/// Appends `src`'s rows to `dst` (the same columns, as `table_from_stream` reads them).
fn append(dst: &mut Table, src: Table) -> PyResult<()> {
    if dst.rows == 0 {
        *dst = src;
        return Ok(());
    }
    let (before, n) = (dst.rows, src.rows);
    for (d, s) in dst.cols.iter_mut().zip(src.cols) {
        match (d.any_null, s.any_null) {
            (false, false) => {}
            (true, false) => d.valid.extend(std::iter::repeat_n(1u8, n)),
            (false, true) => {
                d.valid = vec![1; before];
                d.valid.extend_from_slice(&s.valid);
                d.any_null = true;
            }
            (true, true) => d.valid.extend_from_slice(&s.valid),
        }
        match (&mut d.data, s.data) {
            (Data::I64(a), Data::I64(b)) => a.extend(b),
            (Data::U64(a), Data::U64(b)) => a.extend(b),
            (Data::F64(a), Data::F64(b)) => a.extend(b),
            (Data::Str(ab, ao), Data::Str(bb, bo)) => {
                let base = ab.len() as i64;
                ab.extend_from_slice(&bb);
                ao.extend(bo[1..].iter().map(|o| o + base));
            }
            _ => return Err(PyValueError::new_err(format!("{}.{}: another type than the rows before", dst.name, d.name))),
        }
    }
    dst.rows += n;
    Ok(())
}

/// The elements of `v` whose `keep` is true, in order.
fn keep_rows<X>(v: &mut Vec<X>, keep: &[bool]) {
    let mut i = 0;
    v.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// Keeps the rows of `t` whose `keep` is true.
fn retain(t: &mut Table, keep: &[bool]) {
    for c in &mut t.cols {
        if c.any_null {
            keep_rows(&mut c.valid, keep);
        }
        match &mut c.data {
            Data::I64(v) => keep_rows(v, keep),
            Data::U64(v) => keep_rows(v, keep),
            Data::F64(v) => keep_rows(v, keep),
            Data::Str(b, o) => {
                let (mut nb, mut no) = (Vec::new(), vec![0i64]);
                for (i, _) in keep.iter().enumerate().filter(|x| *x.1) {
                    nb.extend_from_slice(&b[o[i] as usize..o[i + 1] as usize]);
                    no.push(nb.len() as i64);
                }
                *b = nb;
                *o = no;
            }
        }
    }
    t.rows = keep.iter().filter(|&&k| k).count();
}

/// Row i of an integer column (None: NULL).
fn int(c: &Col, i: usize) -> Option<i64> {
    if c.any_null && c.valid[i] == 0 {
        return None;
    }
    match &c.data {
        Data::I64(v) => Some(v[i]),
        _ => None,
    }
}

fn col<'a>(t: &'a Table, name: &str) -> &'a Col {
    t.cols.iter().find(|c| c.name == name).expect("a column of RECORDS")
}

/// The records and objects of a live session that its windows count.
#[pyclass(module = "roscope._core")]
pub struct LiveStats {
    /// The tables of `RECORDS` then `OBJECTS`, in that order (empty until added).
    model: Model,
}

#[pymethods]
impl LiveStats {
    #[new]
    fn new() -> Self {
        let names = RECORDS.iter().map(|r| (r.0, r.1)).chain(OBJECTS.iter().copied());
        let tables = names.map(|(n, cols)| Table::with_columns(static_name(n), &cols.iter().map(|&c| (c, 'i')).collect::<Vec<_>>()));
        LiveStats { model: Model { tables: tables.collect(), stats: Vec::new(), warnings: Vec::new() } }
    }

    /// Adds the records of `table` (one of `LiveModel.feed`'s, by `name`: callback_runs,
    /// publications, takes, links; the others are not counted and are left).
    fn add(&mut self, name: &str, table: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(&(n, cols, _)) = RECORDS.iter().find(|r| r.0 == name) else { return Ok(()) };
        let t = table_from_stream(static_name(n), cols, table)?;
        let at = self.model.tables.iter_mut().find(|t| t.name == n).expect("every table of RECORDS is held");
        append(at, t)
    }

    /// Replaces the object table `name` with `table` (`LiveModel.changed_objects`; a table
    /// the statistics do not read is left).
    fn objects(&mut self, name: &str, table: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(&(n, cols)) = OBJECTS.iter().find(|r| r.0 == name) else { return Ok(()) };
        let t = table_from_stream(static_name(n), cols, table)?;
        *self.model.tables.iter_mut().find(|t| t.name == n).expect("every table of OBJECTS is held") = t;
        Ok(())
    }

    /// Forgets the runs that start, the publications (their first event) and the takes
    /// made before `t` (a record without that time stays), and the links of the
    /// publications no longer held.
    fn prune(&mut self, t: i64) {
        let mut held = std::collections::HashSet::new();
        for table in &mut self.model.tables {
            let Some(&(_, _, by)) = RECORDS.iter().find(|r| r.0 == table.name) else { continue };
            let keep: Vec<bool> = match by {
                Some(c) => {
                    let c = col(table, c);
                    (0..table.rows).map(|i| int(c, i).is_none_or(|x| x >= t)).collect()
                }
                None => {
                    let c = col(table, "publication_id");
                    (0..table.rows).map(|i| int(c, i).is_none_or(|p| held.contains(&p))).collect()
                }
            };
            if keep.iter().any(|k| !k) {
                retain(table, &keep);
            }
            if table.name == "publications" {
                let c = col(table, "publication_id");
                held = (0..table.rows).filter_map(|i| int(c, i)).collect();
            }
        }
    }

    /// The statistics' parts of the window [start, end) (`roscope_model::stats::window_stats`),
    /// as `model_statistics` gives a whole trace's (python/roscope/stats_core.py).
    fn window(&self, py: Python<'_>, start: i64, end: i64) -> PyResult<PyObject> {
        let model = &self.model;
        let s = py.allow_threads(|| window_stats(model, start, end));
        crate::stats::to_py(py, &s)
    }

    /// Rows held, per table.
    #[getter]
    fn rows(&self) -> Vec<(&'static str, usize)> {
        self.model.tables.iter().map(|t| (t.name, t.rows)).collect()
    }

    /// The standard statistics of `xs` (integers, in their order) as `roscope stats`
    /// gives them (`count`, `min_ns`, `mean_ns`, `std_ns`, `p50_ns`, `p90_ns`, `p99_ns`,
    /// `max_ns`: DuckDB's arithmetic, `roscope_model::stats::Describe`).
    #[staticmethod]
    fn describe(py: Python<'_>, xs: Vec<i64>) -> PyResult<PyObject> {
        let d = PyDict::new_bound(py);
        crate::stats::describe(&d, &Describe::of(xs), "", Some("count"))?;
        Ok(d.into_any().unbind())
    }
}

/// The schema's own name of a table of `RECORDS` or `OBJECTS` (a `'static` str).
fn static_name(name: &str) -> &'static str {
    roscope_model::schema::table(name).map_or("?", |t| t.name)
}
