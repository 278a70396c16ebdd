//! The flow's Python classes: `FlowModel` (the flow's input, built from the model's
//! tables, with the analyses over one whole model) and `FlowSearch` (a data-flow
//! search over a model handed over in slices, docs/analyses.md "Slices").

use std::time::Instant;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::{self, ArrowTable};
use crate::search::{window_of, Answers, Facts, Ids, SearchOptions, Uncertain, Window};

/// The flow's input model (roscope-flow), built from the model's tables.
#[pyclass(module = "roscope._core")]
pub struct FlowModel {
    m: roscope_flow::Model,
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

/// A data-flow search over a model handed over in slices (docs/analyses.md,
/// "Slices"): `run` searches the outputs of one slice (a `FlowModel` of part of the
/// runs and publications, ids rebased to start at 0) and `finish` ends the search.
/// Flow and path ids, the distinct segments, caps and counts carry on from slice to
/// slice, so that slices whose outputs follow each other in time give the tables of
/// one search over the whole model.
#[pyclass(module = "roscope._core")]
pub struct FlowSearch {
    search: Option<roscope_flow::FlowSearch>,
    o: roscope_flow::FlowOptions,
    max_flows: usize,
    statics: roscope_flow::Model,
    seconds: f64,
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
        Ok(FlowSearch {
            search: Some(roscope_flow::FlowSearch::new(options.all_steps, options.chunk_rows)),
            max_flows: o.max_flows,
            o,
            statics: m.statics(),
            seconds: 0.0,
        })
    }

    /// Searches the outputs of slice `model`, whose ids map to the model's by `ids`
    /// (`Ids`); `window` (`Window`; None: the whole model) says which outputs, the
    /// output id in the slice's ids. `answers` are lookups answered from the whole
    /// model (`Answers`). Chunks of results go to `sink(name, table)` with the model's
    /// ids. Returns None, or the output from which the flows reach beyond the slice
    /// and what the slice lacked there (`Uncertain`), ids the model's.
    #[pyo3(signature = (model, ids, window, sink, answers=None))]
    fn run(
        &mut self,
        py: Python<'_>,
        model: PyRef<'_, FlowModel>,
        ids: PyRef<'_, Ids>,
        window: Option<PyRef<'_, Window>>,
        sink: Bound<'_, PyAny>,
        answers: Option<PyRef<'_, Answers>>,
    ) -> PyResult<Option<Uncertain>> {
        let Some(search) = self.search.as_mut() else {
            return Err(PyRuntimeError::new_err("the search is finished"));
        };
        if model.m.cb_label.len() != self.statics.cb_label.len() || model.m.topics != self.statics.topics {
            return Err(PyValueError::new_err("the slice's callbacks or topics are not those of the search's model"));
        }
        self.o.window = window_of(window);
        if let Some(a) = answers {
            a.apply(&mut self.o.window);
        }
        self.o.max_flows = self.max_flows.saturating_sub(search.result.candidates);
        let (m, o) = (&model.m, &self.o);
        let sink = sink.unbind();
        let mut failed: Option<PyErr> = None;
        let t0 = Instant::now();
        let ids = ids.id_map();
        let uncertain = py.allow_threads(|| {
            let ix = roscope_flow::Index::new(m);
            search.run(&ix, o, ids, &mut emitter(&sink, &mut failed))
        });
        self.seconds += t0.elapsed().as_secs_f64();
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(uncertain.map(|((ts, publication_id), needs)| Uncertain { ts, publication_id, needs }))
    }

    /// Adds to the search's overlaps (`SearchOptions.overlaps`) those of `runs` (see
    /// `overlapping_runs`: one process's runs, or several in (proc_id, start_ts)
    /// order) on which an intra-node edge of the search depends: the only ones that
    /// can make a flow uncertain, and far fewer than all on a long trace (417,033
    /// on the 10M-event ros2sim trace, held in Python as 36 MiB). Returns how many
    /// the search now holds.
    fn add_overlaps(&mut self, runs: &Bound<'_, PyAny>) -> PyResult<usize> {
        let (o, m) = (&self.o, &self.statics);
        let mut sweep = roscope_flow::OverlapSweep::default();
        sweep_runs(runs, &mut sweep, |a, b| o.depends_on(m, a, b))?;
        self.o.overlaps.extend(sweep.found);
        Ok(self.o.overlaps.len())
    }

    /// Whether the search is over: `max_flows` reached, or a sink refused a chunk.
    #[getter]
    fn stopped(&self) -> bool {
        self.search.as_ref().is_none_or(|s| s.refused || s.result.stopped_at.is_some())
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
        let (paths, res) = search.finish(&self.statics, &mut emitter(&sink, &mut failed));
        if let Some(e) = failed {
            return Err(e);
        }
        Ok((ArrowTable::from_table(paths)?, stats(py, &res, self.seconds)?))
    }
}

/// Causal links over a model handed over in slices (docs/analyses.md, "Slices"):
/// `run` gives the links of one slice's publications, and what partial-synchronous
/// groups carry to the next slice stays here.
#[pyclass(module = "roscope._core")]
pub struct CausalSearch {
    policy: roscope_flow::Policy,
    state: roscope_flow::CausalState,
}

#[pymethods]
impl CausalSearch {
    #[new]
    #[pyo3(signature = (infer_timer_inputs=true))]
    fn new(infer_timer_inputs: bool) -> Self {
        CausalSearch { policy: roscope_flow::Policy { infer_timer_inputs }, state: roscope_flow::CausalState::default() }
    }

    /// The causal links whose output publications are in `window` (as in
    /// `FlowSearch.run`) of slice `model` (ids mapped by `ids`, as there), with the
    /// model's ids, and the publication from which the slice does not hold what the
    /// links need (`Uncertain`, without needs), or None.
    #[pyo3(signature = (model, ids, window))]
    fn run(
        &mut self,
        py: Python<'_>,
        model: PyRef<'_, FlowModel>,
        ids: PyRef<'_, Ids>,
        window: Option<PyRef<'_, Window>>,
    ) -> PyResult<(ArrowTable, Option<Uncertain>)> {
        let (m, policy, state) = (&model.m, self.policy, &mut self.state);
        let w = window_of(window);
        let (mut links, uncertain) = py.allow_threads(|| {
            let ix = roscope_flow::Index::new(m);
            roscope_flow::causal_links_in(&ix, policy, &w, state)
        });
        let ids = ids.id_map();
        for l in links.iter_mut() {
            l.in_pub = ids.publication(l.in_pub);
            l.in_run = ids.run(l.in_run);
            l.out_pub = ids.publication(l.out_pub);
        }
        let uncertain = uncertain.map(|(ts, p)| Uncertain { ts, publication_id: ids.publication(p), needs: Vec::new() });
        Ok((ArrowTable::from_table(roscope_flow::causal_links_table(&links))?, uncertain))
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
    arrow::each_i64_batch("overlapping_runs", &cols, runs, |c| {
        let [k, th, cb, s, e] = c else { unreachable!("five columns asked for") };
        for ((((&k, &th), &cb), &s), &e) in k.iter().zip(*th).zip(*cb).zip(*s).zip(*e) {
            sweep.push_kept(k, th, cb, s, e, &keep)?;
        }
        Ok(())
    })
}
