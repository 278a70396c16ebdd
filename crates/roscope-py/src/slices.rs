//! The slice driver's reads (`roscope_flow::SliceSource`) through one Python object
//! (`roscope.flow.slices.Reads`: the SQL over the database), each method returning
//! Arrow data (or a `FlowModel`, for a slice), and what the slicing did as a dict.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::i64_columns;
use crate::flow::FlowModel;

/// `roscope_flow::SliceSource` over `reads`, a Python object with the methods below.
pub struct Reads<'py>(pub Bound<'py, PyAny>);

impl Reads<'_> {
    /// The columns of `method(args)`'s Arrow stream: `n` of them.
    fn columns(&self, method: &str, args: impl IntoPy<Py<pyo3::types::PyTuple>>, n: usize) -> PyResult<Vec<Vec<Option<i64>>>> {
        let what = format!("Reads.{}", method);
        let cols = i64_columns(&what, &self.0.call_method1(method, args)?)?;
        if cols.len() != n {
            return Err(PyValueError::new_err(format!("{}: {} columns, not {}", what, cols.len(), n)));
        }
        Ok(cols)
    }

    /// The rows of `method(args)`, `N` integer columns without nulls.
    fn rows<const N: usize>(&self, method: &str, args: impl IntoPy<Py<pyo3::types::PyTuple>>) -> PyResult<Vec<[i64; N]>> {
        let cols = self.columns(method, args, N)?;
        let n = cols.first().map_or(0, Vec::len);
        (0..n)
            .map(|i| {
                let mut row = [0; N];
                for (v, c) in row.iter_mut().zip(&cols) {
                    *v = c[i].ok_or_else(|| PyValueError::new_err(format!("Reads.{}: a null", method)))?;
                }
                Ok(row)
            })
            .collect()
    }

    fn ids(&self, method: &str, args: impl IntoPy<Py<pyo3::types::PyTuple>>) -> PyResult<Vec<i64>> {
        Ok(self.rows::<1>(method, args)?.into_iter().map(|[x]| x).collect())
    }

    fn one(&self, method: &str, args: impl IntoPy<Py<pyo3::types::PyTuple>>) -> PyResult<i64> {
        Ok(self.ids(method, args)?.first().copied().unwrap_or(roscope_flow::NONE))
    }
}

impl roscope_flow::SliceSource for Reads<'_> {
    type Error = PyErr;

    fn counts(&mut self) -> PyResult<roscope_flow::Counts> {
        let (publications, runs, callbacks, publishers) = self.0.call_method0("counts")?.extract()?;
        Ok(roscope_flow::Counts { publications, runs, callbacks, publishers })
    }

    fn blocks(&mut self, block: i64) -> PyResult<roscope_flow::BlockRows> {
        let p = self.columns("publication_blocks", (block,), 4)?;
        let r = self.columns("run_blocks", (block,), 2)?;
        let links = self.rows::<3>("link_blocks", (block,))?;
        Ok(roscope_flow::BlockRows {
            pubs: (0..p[0].len()).map(|i| [p[0][i], p[1][i], p[2][i], p[3][i]]).collect(),
            runs: (0..r[0].len()).map(|i| [r[0][i], r[1][i]]).collect(),
            links: links.into_iter().map(|[k, a, b]| (k, a, b)).collect(),
        })
    }

    fn slice(&mut self, r: roscope_flow::Ranges, xp: &[i64], xr: &[i64]) -> PyResult<roscope_flow::Model> {
        let m = self.0.call_method1("slice", (r.a, r.b, r.c, r.d, xp.to_vec(), xr.to_vec()))?;
        let m = m.downcast_into::<FlowModel>()?;
        let mut m = m.borrow_mut();
        Ok(std::mem::take(&mut m.m))
    }

    fn latest_runs(&mut self, ids: (i64, i64), since: i64, upto: i64) -> PyResult<Vec<(i64, i64, i64)>> {
        Ok(self.rows::<3>("latest_runs", (ids.0, ids.1, since, upto))?.into_iter().map(|[a, b, c]| (a, b, c)).collect())
    }

    fn latest_publications(&mut self, ids: (i64, i64), since: i64, upto: i64) -> PyResult<Vec<(i64, i64, i64)>> {
        Ok(self.rows::<3>("latest_publications", (ids.0, ids.1, since, upto))?.into_iter().map(|[a, b, c]| (a, b, c)).collect())
    }

    fn linked_publications(&mut self, runs: &[i64]) -> PyResult<Vec<i64>> {
        self.ids("linked_publications", (runs.to_vec(),))
    }

    fn runs_of(&mut self, pubs: &[i64]) -> PyResult<Vec<i64>> {
        self.ids("runs_of", (pubs.to_vec(),))
    }

    fn run_before(&mut self, callback: i64, t: i64) -> PyResult<i64> {
        self.one("run_before", (callback, t))
    }

    fn newest_before(&mut self, topic: &str, t: i64) -> PyResult<i64> {
        self.one("newest_before", (topic, t))
    }
}

/// `over_slices`'s error as Python's.
pub fn slice_err(e: roscope_flow::SliceError<PyErr>) -> PyErr {
    match e {
        roscope_flow::SliceError::Failed(e) => e,
        roscope_flow::SliceError::BeyondWholeModel => {
            PyRuntimeError::new_err("the data-flow search over the whole model found flows beyond it")
        }
    }
}

/// What the slicing did (`roscope_flow::SliceStats`), as `roscope.flow`'s summary says it.
pub fn stats_dict<'py>(py: Python<'py>, s: &roscope_flow::SliceStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("count", s.count)?;
    d.set_item("restarts", s.restarts)?;
    d.set_item("answered_from_database", s.answered_from_database)?;
    d.set_item("reach_ns", s.reach_ns)?;
    d.set_item("peak_instances", s.peak_instances)?;
    d.set_item("publications_per_slice", s.publications_per_slice)?;
    d.set_item("rest_from", s.rest_from)?;
    Ok(d)
}
