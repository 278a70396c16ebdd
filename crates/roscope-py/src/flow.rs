//! The flow's Python classes: `FlowModel` (the flow's input, built from the model's
//! tables, with the analyses over one whole model), `FlowSearch` and `CausalSearch`
//! (over one whole model, or slice after slice by roscope-flow's driver,
//! docs/analyses.md "Slices").

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::{self, ArrowTable};
use crate::search::{Facts, SearchOptions};
use crate::slices::{slice_err, stats_dict, Reads};

/// The flow's input model (roscope-flow), built from the model's tables.
#[pyclass(module = "roscope._core")]
pub struct FlowModel {
    pub(crate) m: roscope_flow::Model,
    links: Option<Vec<roscope_flow::CausalLink>>,
}

pub(crate) fn input_err(e: roscope_flow::InputError) -> PyErr {
    PyValueError::new_err(format!("the model's tables cannot feed the flow: {}", e))
}

impl SearchOptions {
    /// The options over model `m` (any slice of it), with the implicit edges of the
    /// whole trace's `facts`; checked (`roscope_flow::search_options`).
    fn options(&self, m: &roscope_flow::Model, facts: Option<&roscope_flow::Facts>) -> PyResult<roscope_flow::FlowOptions> {
        let spec = roscope_flow::SearchSpec {
            is_input: &self.is_input,
            is_output: &self.is_output,
            implicit: &self.implicit,
            fallback: &self.fallback,
            exact_links: self.exact_links,
            max_flows_per_output: self.max_flows_per_output,
            max_flows: self.max_flows,
            all_paths: self.all_paths,
            excluded_topics: self.excluded_topics.as_deref(),
            excluded_callbacks: self.excluded_callbacks.as_deref(),
            deps: self.deps.as_deref(),
            deps_callbacks: self.deps_callbacks.as_deref(),
            deps_unseen: self.deps_unseen.as_deref(),
            overlaps: self.overlaps.as_deref(),
            drop_uncertain: self.drop_uncertain,
        };
        roscope_flow::search_options(m, facts, &spec).map_err(PyValueError::new_err)
    }
}

/// A sink for result chunks: `sink(name, table)`; its first exception is kept.
fn emitter<'a>(sink: &'a Py<PyAny>, failed: &'a mut Option<PyErr>) -> impl FnMut(roscope_model::table::Table) -> bool + 'a {
    move |t| {
        Python::with_gil(|py| {
            let name = t.name;
            let r = ArrowTable::from_table(t).and_then(|t| Py::new(py, t)).and_then(|t| sink.call1(py, (name, t)));
            r.map_err(|e| *failed = Some(e)).is_ok()
        })
    }
}

fn stats<'py>(py: Python<'py>, res: &roscope_flow::FlowResult, seconds: f64) -> PyResult<Bound<'py, PyDict>> {
    let stats = PyDict::new_bound(py);
    stats.set_item("outputs", res.outputs)?;
    stats.set_item("outputs_total", res.outputs_total)?;
    stats.set_item("outputs_capped", res.outputs_capped)?;
    stats.set_item("capped_examples", res.capped_examples.clone())?;
    stats.set_item("stopped_at", res.stopped_at)?;
    stats.set_item("flows", res.flows)?;
    stats.set_item("candidates", res.candidates)?;
    stats.set_item("duplicates_dropped", res.duplicates_dropped)?;
    stats.set_item("flows_on_fallback", res.flows_on_fallback)?;
    stats.set_item("flows_uncertain", res.flows_uncertain)?;
    stats.set_item("uncertain_dropped", res.uncertain_dropped)?;
    stats.set_item("flows_from_publications", res.flows_from_publications)?;
    stats.set_item("trees_cached", res.trees)?;
    stats.set_item("cache_evicted", res.evicted)?;
    stats.set_item("cache_hits", res.cache_hits)?;
    stats.set_item("seconds", seconds)?;
    Ok(stats)
}

impl FlowModel {
    /// A model built in Rust (`live_flows::FlowInput`).
    pub(crate) fn from_model(m: roscope_flow::Model) -> Self {
        FlowModel { m, links: None }
    }
}

#[pymethods]
impl FlowModel {
    /// `tables`: the model's tables of `FlowModel.inputs()`, each an object with
    /// `__arrow_c_stream__` holding at least the listed columns: a dict by table
    /// name, or a callable `tables(name, columns)` returning one (called for one
    /// table at a time, its stream read to the end before the next call).
    #[new]
    fn new(py: Python<'_>, tables: &Bound<'_, PyAny>) -> PyResult<Self> {
        let dict = tables.downcast::<PyDict>().ok();
        let mut read = Vec::with_capacity(roscope_flow::INPUTS.len());
        for &(name, cols) in roscope_flow::INPUTS {
            let obj = match dict {
                Some(d) => d.get_item(name)?.ok_or_else(|| PyValueError::new_err(format!("table {} is missing", name)))?,
                None => tables.call1((name, cols.to_vec()))?,
            };
            read.push(arrow::table_from_stream(name, cols, &obj)?);
        }
        let m = py.allow_threads(|| roscope_flow::Model::from_tables(&read)).map_err(input_err)?;
        Ok(FlowModel { m, links: None })
    }

    /// The tables and columns the flow reads: [(table, [column, ...])].
    #[staticmethod]
    fn inputs() -> Vec<(&'static str, Vec<&'static str>)> {
        roscope_flow::INPUTS.iter().map(|(t, c)| (*t, c.to_vec())).collect()
    }

    /// Topic names; masks over topics follow this order.
    #[getter]
    fn topics(&self) -> Vec<String> {
        self.m.topics.clone()
    }

    /// Causal links: in_publication_id, in_run_id, out_publication_id, kind.
    #[pyo3(signature = (infer_timer_inputs=true))]
    fn causal_links(&mut self, py: Python<'_>, infer_timer_inputs: bool) -> PyResult<ArrowTable> {
        let m = &self.m;
        let links = py.allow_threads(|| {
            let ix = roscope_flow::Index::new(m);
            roscope_flow::causal_links(&ix, roscope_flow::Policy { infer_timer_inputs })
        });
        let t = roscope_flow::causal_links_table(&links);
        self.links = Some(links);
        ArrowTable::from_table(t)
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
            g.edges.iter().map(|e| (e.0.letter().to_string(), e.1, e.2.letter().to_string(), e.3, e.4)).collect();
        Ok((g.pubs, g.runs, edges).into_py(py))
    }

    /// Callback labels (`node kind(topic)`); masks over callbacks follow this order.
    #[getter]
    fn callback_labels(&self) -> Vec<String> {
        self.m.cb_label.clone()
    }
}

/// A data-flow search (`roscope_flow::SlicedFlowSearch`): over one whole model
/// (`run`), or over a model handed over in slices (`run_slices`, docs/analyses.md
/// "Slices"), which the driver in roscope-flow plans and reads through a Python
/// object (`roscope.flow.slices.Reads`). Flow and path ids, the distinct segments,
/// caps and counts carry on from slice to slice: the tables of one search.
#[pyclass(module = "roscope._core")]
pub struct FlowSearch {
    search: Option<roscope_flow::SlicedFlowSearch>,
}

impl FlowSearch {
    fn search(&mut self) -> PyResult<&mut roscope_flow::SlicedFlowSearch> {
        self.search.as_mut().ok_or_else(|| PyRuntimeError::new_err("the search is finished"))
    }
}

/// `roscope_flow::SliceSearch` of a data-flow search: the search without the GIL,
/// its chunks to `sink`.
struct FlowSlices<'a, 'py> {
    py: Python<'py>,
    search: &'a mut roscope_flow::SlicedFlowSearch,
    sink: &'a Py<PyAny>,
}

impl roscope_flow::SliceSearch for FlowSlices<'_, '_> {
    type Error = PyErr;

    fn run(
        &mut self,
        m: &roscope_flow::Model,
        ids: roscope_flow::IdMap,
        w: roscope_flow::Window,
    ) -> PyResult<Option<roscope_flow::Beyond>> {
        let (search, sink) = (&mut *self.search, self.sink);
        let mut failed: Option<PyErr> = None;
        let r = self.py.allow_threads(|| search.run(m, ids, w, &mut emitter(sink, &mut failed)));
        match failed {
            Some(e) => Err(e),
            None => r.map_err(PyValueError::new_err),
        }
    }

    fn stopped(&self) -> bool {
        self.search.stopped()
    }
}

#[pymethods]
impl FlowSearch {
    /// A data-flow search with `options` (`SearchOptions`). `model`: the model or any
    /// slice of it (its callbacks and topics name things); `facts`: the whole trace's
    /// (`Facts`), which the implicit-edge rules read (`roscope_flow::Facts`); None:
    /// `model`'s own, when it is the whole model. `meter` (`Meter`): where the search
    /// counts, once per output message, outputs searched, flows and candidate flows.
    #[new]
    #[pyo3(signature = (model, options, facts=None, meter=None))]
    fn new(
        model: PyRef<'_, FlowModel>,
        options: PyRef<'_, SearchOptions>,
        facts: Option<PyRef<'_, Facts>>,
        meter: Option<PyRef<'_, crate::Meter>>,
    ) -> PyResult<Self> {
        let m = &model.m;
        let facts = facts.map(|f| roscope_flow::Facts::from_counts(m, &f.runs, &f.pairs));
        let mut o = options.options(m, facts.as_ref())?;
        o.meter = meter.map(|x| x.m.clone());
        Ok(FlowSearch { search: Some(roscope_flow::SlicedFlowSearch::new(m, o, options.all_steps, options.chunk_rows)) })
    }

    /// Searches the outputs of the whole model `model` (`outputs`: those published in
    /// [since, until) only); chunks of results go to `sink(name, table)`.
    #[pyo3(signature = (model, sink, outputs=None))]
    fn run(&mut self, py: Python<'_>, model: PyRef<'_, FlowModel>, sink: Bound<'_, PyAny>, outputs: Option<(i64, i64)>) -> PyResult<()> {
        let sink = sink.unbind();
        let search = self.search()?;
        let mut w = roscope_flow::Window::all();
        if let Some((since, until)) = outputs {
            (w.out_from, w.out_to) = ((since, i64::MIN), until);
        }
        let mut s = FlowSlices { py, search, sink: &sink };
        roscope_flow::SliceSearch::run(&mut s, &model.m, roscope_flow::IdMap::identity(), w)?;
        Ok(())
    }

    /// Searches the model slice after slice (`roscope_flow::over_slices`): about
    /// `per_slice` publications each, reaching `reach_ns` before and after its outputs,
    /// read through `reads` (`roscope.flow.slices.Reads`); chunks of results go to
    /// `sink(name, table)` with the model's ids. Returns what the slicing did (a dict;
    /// "rest_from": the time from which no output was searched when a cap stopped the
    /// search, else None).
    fn run_slices<'py>(
        &mut self,
        py: Python<'py>,
        reads: Bound<'py, PyAny>,
        sink: Bound<'py, PyAny>,
        per_slice: i64,
        reach_ns: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        check_slicing(per_slice, reach_ns)?;
        let sink = sink.unbind();
        let search = self.search()?;
        let mut history = roscope_flow::History::new(search.statics.topics.clone());
        let mut s = FlowSlices { py, search, sink: &sink };
        let st = roscope_flow::over_slices(&mut Reads(reads), &mut s, per_slice, reach_ns, Some(&mut history)).map_err(slice_err)?;
        stats_dict(py, &st)
    }

    /// Adds to the search's overlaps (`SearchOptions.overlaps`) those of `runs` (see
    /// `overlapping_runs`: one process's runs, or several in (proc_id, start_ts)
    /// order) on which an intra-node edge of the search depends: the only ones that
    /// can make a flow uncertain, and far fewer than all on a long trace (417,033
    /// on the 10M-event ros2sim trace, held in Python as 36 MiB). Returns how many
    /// the search now holds.
    fn add_overlaps(&mut self, runs: &Bound<'_, PyAny>) -> PyResult<usize> {
        let search = self.search()?;
        let mut sweep = roscope_flow::OverlapSweep::default();
        sweep_runs(runs, &mut sweep, |a, b| search.keeps_overlap(a, b))?;
        Ok(search.add_overlaps(sweep))
    }

    /// Whether the search is over: `max_flows` reached, or a sink refused a chunk.
    #[getter]
    fn stopped(&self) -> bool {
        self.search.as_ref().is_none_or(|s| s.stopped())
    }

    /// Segments found again after the search forgot them (see `finish`).
    #[getter]
    fn segments_unsure(&self) -> u64 {
        self.search.as_ref().map_or(0, |s| s.segments_unsure())
    }

    /// Hands the last chunks to `sink` and returns (paths table, stats). When
    /// `segments_unsure` is not 0, `data_flow_segments` may hold a segment twice.
    fn finish<'py>(&mut self, py: Python<'py>, sink: Bound<'py, PyAny>) -> PyResult<(ArrowTable, Bound<'py, PyDict>)> {
        let Some(search) = self.search.take() else {
            return Err(PyRuntimeError::new_err("the search is finished"));
        };
        let sink = sink.unbind();
        let mut failed: Option<PyErr> = None;
        let seconds = search.seconds;
        let (paths, res) = search.finish(&mut emitter(&sink, &mut failed));
        if let Some(e) = failed {
            return Err(e);
        }
        Ok((ArrowTable::from_table(paths)?, stats(py, &res, seconds)?))
    }
}

fn check_slicing(per_slice: i64, reach_ns: i64) -> PyResult<()> {
    if per_slice < 1 || reach_ns < 0 {
        return Err(PyValueError::new_err(format!("slices of {} publications reaching {} ns: both must be positive", per_slice, reach_ns)));
    }
    Ok(())
}

/// Causal links over the whole model (`run`) or over a model handed over in slices
/// (`run_slices`, as `FlowSearch.run_slices`); what partial-synchronous groups carry
/// to the next slice stays here.
#[pyclass(module = "roscope._core")]
pub struct CausalSearch {
    policy: roscope_flow::Policy,
    state: roscope_flow::CausalState,
}

/// `roscope_flow::SliceSearch` of the causal links: each slice's to `sink`.
struct CausalSlices<'a, 'py> {
    py: Python<'py>,
    policy: roscope_flow::Policy,
    state: &'a mut roscope_flow::CausalState,
    sink: &'a Bound<'py, PyAny>,
}

impl roscope_flow::SliceSearch for CausalSlices<'_, '_> {
    type Error = PyErr;

    fn run(
        &mut self,
        m: &roscope_flow::Model,
        ids: roscope_flow::IdMap,
        w: roscope_flow::Window,
    ) -> PyResult<Option<roscope_flow::Beyond>> {
        let (policy, state) = (self.policy, &mut *self.state);
        let (links, beyond) = self.py.allow_threads(|| roscope_flow::causal_links_of_slice(m, policy, &w, state, &ids));
        let t = Py::new(self.py, ArrowTable::from_table(roscope_flow::causal_links_table(&links))?)?;
        self.sink.call1(("causal_links", t))?;
        Ok(beyond)
    }
}

#[pymethods]
impl CausalSearch {
    #[new]
    #[pyo3(signature = (infer_timer_inputs=true))]
    fn new(infer_timer_inputs: bool) -> Self {
        CausalSearch { policy: roscope_flow::Policy { infer_timer_inputs }, state: roscope_flow::CausalState::default() }
    }

    /// The causal links of the whole model `model`, to `sink("causal_links", table)`.
    fn run(&mut self, py: Python<'_>, model: PyRef<'_, FlowModel>, sink: Bound<'_, PyAny>) -> PyResult<()> {
        let mut s = CausalSlices { py, policy: self.policy, state: &mut self.state, sink: &sink };
        roscope_flow::SliceSearch::run(&mut s, &model.m, roscope_flow::IdMap::identity(), roscope_flow::Window::all())?;
        Ok(())
    }

    /// The causal links slice after slice (as `FlowSearch.run_slices`), one table per
    /// slice to `sink("causal_links", table)`. Returns what the slicing did.
    fn run_slices<'py>(
        &mut self,
        py: Python<'py>,
        reads: Bound<'py, PyAny>,
        sink: Bound<'py, PyAny>,
        per_slice: i64,
        reach_ns: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        check_slicing(per_slice, reach_ns)?;
        let mut s = CausalSlices { py, policy: self.policy, state: &mut self.state, sink: &sink };
        let st = roscope_flow::over_slices(&mut Reads(reads), &mut s, per_slice, reach_ns, None).map_err(slice_err)?;
        stats_dict(py, &st)
    }
}

/// Runs that another callback's run overlapped on another thread of the process
/// (`roscope_flow::OverlapSweep`), from `runs`: an object with `__arrow_c_stream__`
/// whose columns are proc_id, thread_id, callback_id, start_ts, end_ts (int64), in
/// (proc_id, start_ts) order. Returns [(overlapping callback, callback, run start)].
#[pyfunction]
pub fn overlapping_runs(runs: &Bound<'_, PyAny>) -> PyResult<Vec<(i64, i64, i64)>> {
    let mut sweep = roscope_flow::OverlapSweep::default();
    sweep_runs(runs, &mut sweep, |_, _| true)?;
    Ok(sweep.finish())
}

/// Feeds `runs` (see `overlapping_runs`) to `sweep`, keeping the overlaps (a, b, _)
/// for which `keep(a, b)` holds.
fn sweep_runs(runs: &Bound<'_, PyAny>, sweep: &mut roscope_flow::OverlapSweep, keep: impl Fn(i64, i64) -> bool) -> PyResult<()> {
    let cols = ["proc_id", "thread_id", "callback_id", "start_ts", "end_ts"];
    arrow::each_i64_batch("overlapping_runs", &cols, runs, |c| sweep.push_columns(c, &keep))
}
