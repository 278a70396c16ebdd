//! The named types a data-flow search hands between Python and Rust (docs/analyses.md,
//! "Slices"), in place of tuples: the search's options (`SearchOptions`) and the
//! whole trace's facts (`Facts`), and per slice its ids (`Ids`), its window
//! (`Window`), the lookups answered from the database (`Answers`), and what the
//! slice lacked (`Uncertain`, with one class per kind of need).

use pyo3::prelude::*;
use roscope_flow::model::Kind;

/// The options of a data-flow search (`FlowSearch`), as `roscope.flow.FlowRequest`
/// makes them: topic masks (one entry per topic of the model, in its order), the
/// intra-node dependency mode and fallback rule, caps (None: no cap), exclusions
/// (masks over topics and callbacks) and dependency edges (callback ids);
/// `deps_callbacks`: the callbacks the dependency file matched (their nodes are the
/// ones it describes: no fallback edge there); `deps_unseen`: those it cannot vouch for
/// (they keep their fallback edges there); `overlaps`: (callback, run's callback,
/// run's start) of the runs another callback's run overlapped on another thread
/// (races, `roscope.overlaps`: a flow through such an implicit dependency is
/// `uncertain`), and `drop_uncertain` leaves those flows out.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct SearchOptions {
    pub is_input: Vec<bool>,
    pub is_output: Vec<bool>,
    pub implicit: String,
    pub fallback: String,
    pub exact_links: bool,
    pub max_flows_per_output: Option<usize>,
    pub max_flows: Option<usize>,
    pub all_paths: bool,
    pub all_steps: bool,
    pub excluded_topics: Option<Vec<bool>>,
    pub excluded_callbacks: Option<Vec<bool>>,
    pub deps: Option<Vec<(i64, i64)>>,
    pub deps_callbacks: Option<Vec<i64>>,
    pub deps_unseen: Option<Vec<i64>>,
    pub overlaps: Option<Vec<(i64, i64, i64)>>,
    pub drop_uncertain: bool,
    pub chunk_rows: usize,
}

#[pymethods]
impl SearchOptions {
    #[new]
    #[pyo3(signature = (
        *, is_input, is_output, implicit="auto".to_string(), fallback="pairs".to_string(), exact_links=true,
        max_flows_per_output=Some(10000), max_flows=None, all_paths=false, all_steps=false, excluded_topics=None,
        excluded_callbacks=None, deps=None, deps_callbacks=None, deps_unseen=None, overlaps=None, drop_uncertain=false,
        chunk_rows=roscope_flow::CHUNK_ROWS
    ))]
    #[expect(clippy::too_many_arguments, reason = "the keyword arguments of a Python class")]
    fn new(
        is_input: Vec<bool>,
        is_output: Vec<bool>,
        implicit: String,
        fallback: String,
        exact_links: bool,
        max_flows_per_output: Option<usize>,
        max_flows: Option<usize>,
        all_paths: bool,
        all_steps: bool,
        excluded_topics: Option<Vec<bool>>,
        excluded_callbacks: Option<Vec<bool>>,
        deps: Option<Vec<(i64, i64)>>,
        deps_callbacks: Option<Vec<i64>>,
        deps_unseen: Option<Vec<i64>>,
        overlaps: Option<Vec<(i64, i64, i64)>>,
        drop_uncertain: bool,
        chunk_rows: usize,
    ) -> Self {
        SearchOptions {
            is_input,
            is_output,
            implicit,
            fallback,
            exact_links,
            max_flows_per_output,
            max_flows,
            all_paths,
            all_steps,
            excluded_topics,
            excluded_callbacks,
            deps,
            deps_callbacks,
            deps_unseen,
            overlaps,
            drop_uncertain,
            chunk_rows,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "SearchOptions(implicit={:?}, fallback={:?}, exact_links={}, max_flows_per_output={}, max_flows={}, \
             all_paths={}, all_steps={}, {} topics, {} dependency edges, {} overlapped runs, drop_uncertain={})",
            self.implicit,
            self.fallback,
            py_bool(self.exact_links),
            py_opt(self.max_flows_per_output),
            py_opt(self.max_flows),
            py_bool(self.all_paths),
            py_bool(self.all_steps),
            self.is_input.len(),
            self.deps.as_ref().map_or(0, Vec::len),
            self.overlaps.as_ref().map_or(0, Vec::len),
            py_bool(self.drop_uncertain)
        )
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn py_opt(v: Option<usize>) -> String {
    v.map_or_else(|| "None".to_string(), |n| n.to_string())
}

/// The whole trace's counts behind `roscope_flow::Facts`, which the implicit-edge
/// rules read: per callback (callback_id, runs, publishing runs), and the
/// (publisher_id, callback_id) pairs of runs that published on a publisher.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct Facts {
    pub runs: Vec<(i64, i64, i64)>,
    pub pairs: Vec<(i64, i64)>,
}

#[pymethods]
impl Facts {
    #[new]
    #[pyo3(signature = (*, runs, pairs))]
    fn new(runs: Vec<(i64, i64, i64)>, pairs: Vec<(i64, i64)>) -> Self {
        Facts { runs, pairs }
    }
}

/// A slice's ids to the model's (`roscope_flow::IdMap`): the slice's publications
/// are the model's `pub_base`.. (`pub_n` of them) then `pub_extra`; its runs
/// likewise.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct Ids {
    pub pub_base: i64,
    pub pub_n: i64,
    pub pub_extra: Vec<i64>,
    pub run_base: i64,
    pub run_n: i64,
    pub run_extra: Vec<i64>,
}

#[pymethods]
impl Ids {
    #[new]
    #[pyo3(signature = (*, pub_base, pub_n, pub_extra, run_base, run_n, run_extra))]
    fn new(pub_base: i64, pub_n: i64, pub_extra: Vec<i64>, run_base: i64, run_n: i64, run_extra: Vec<i64>) -> Self {
        Ids { pub_base, pub_n, pub_extra, run_base, run_n, run_extra }
    }

    /// The ids of the whole model (the identity).
    #[staticmethod]
    fn whole() -> Self {
        let m = roscope_flow::IdMap::identity();
        Ids { pub_base: m.pub_base, pub_n: m.pub_n, pub_extra: m.pub_extra, run_base: m.run_base, run_n: m.run_n, run_extra: m.run_extra }
    }

    fn __repr__(&self) -> String {
        format!(
            "Ids(pub_base={}, pub_n={}, {} extra publications, run_base={}, run_n={}, {} extra runs)",
            self.pub_base,
            self.pub_n,
            self.pub_extra.len(),
            self.run_base,
            self.run_n,
            self.run_extra.len()
        )
    }
}

impl Ids {
    pub fn id_map(&self) -> roscope_flow::IdMap {
        roscope_flow::IdMap {
            pub_base: self.pub_base,
            pub_n: self.pub_n,
            pub_extra: self.pub_extra.clone(),
            run_base: self.run_base,
            run_n: self.run_n,
            run_extra: self.run_extra.clone(),
        }
    }
}

/// The part of the model a slice holds and the outputs it searches
/// (`roscope_flow::Window`): instances in [lo, hi); outputs from (out_from_ts,
/// out_from_id), the id in the slice's ids, up to out_to; per callback and per
/// publisher its horizon (empty: `lo`).
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct Window {
    pub lo: i64,
    pub hi: i64,
    pub out_from_ts: i64,
    pub out_from_id: i64,
    pub out_to: i64,
    pub lo_cb: Vec<i64>,
    pub lo_pub: Vec<i64>,
}

#[pymethods]
impl Window {
    #[new]
    #[pyo3(signature = (*, lo, hi, out_from_ts, out_from_id, out_to, lo_cb, lo_pub))]
    fn new(lo: i64, hi: i64, out_from_ts: i64, out_from_id: i64, out_to: i64, lo_cb: Vec<i64>, lo_pub: Vec<i64>) -> Self {
        Window { lo, hi, out_from_ts, out_from_id, out_to, lo_cb, lo_pub }
    }

    fn __repr__(&self) -> String {
        format!(
            "Window(lo={}, hi={}, out_from=({}, {}), out_to={}, {} callback and {} publisher horizons)",
            self.lo,
            self.hi,
            self.out_from_ts,
            self.out_from_id,
            self.out_to,
            self.lo_cb.len(),
            self.lo_pub.len()
        )
    }
}

/// `roscope_flow::Window` of an optional `Window` (None: the whole model).
pub fn window_of(window: Option<PyRef<'_, Window>>) -> roscope_flow::Window {
    match window {
        None => roscope_flow::Window::all(),
        Some(w) => roscope_flow::Window {
            lo: w.lo,
            hi: w.hi,
            out_from: (w.out_from_ts, w.out_from_id),
            out_to: w.out_to,
            lo_cb: w.lo_cb.clone(),
            lo_pub: w.lo_pub.clone(),
            ..roscope_flow::Window::all()
        },
    }
}

/// Lookups answered from the whole model, in the slice's ids (-1: none):
/// (callback, time, run) of the latest completed run before a time, (topic, time,
/// publication) of the newest publication before a time, and the runs and
/// publications whose references the slice now holds whole.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct Answers {
    pub runs_before: Vec<(i64, i64, i64)>,
    pub newest_before: Vec<(i64, i64, i64)>,
    pub complete_runs: Vec<i64>,
    pub complete_pubs: Vec<i64>,
}

#[pymethods]
impl Answers {
    #[new]
    #[pyo3(signature = (*, runs_before, newest_before, complete_runs, complete_pubs))]
    fn new(
        runs_before: Vec<(i64, i64, i64)>,
        newest_before: Vec<(i64, i64, i64)>,
        complete_runs: Vec<i64>,
        complete_pubs: Vec<i64>,
    ) -> Self {
        Answers { runs_before, newest_before, complete_runs, complete_pubs }
    }
}

impl Answers {
    /// Puts the answers into `w`.
    pub fn apply(&self, w: &mut roscope_flow::Window) {
        w.runs_before = self.runs_before.iter().map(|&(c, t, r)| ((c, t), r)).collect();
        w.newest_before = self.newest_before.iter().map(|&(c, t, p)| ((c, t), p)).collect();
        w.complete = self.complete_runs.iter().map(|&r| (Kind::Run, r)).chain(self.complete_pubs.iter().map(|&p| (Kind::Pub, p))).collect();
    }
}

/// What a slice lacked: a node itself, with its references (a run's linked
/// publications, a publication's run); ids the model's.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct NeedNode {
    /// True: a publication; false: a callback run.
    pub publication: bool,
    pub id: i64,
}

/// What a slice lacked: the latest completed run of callback `callback_id` before `ts`.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct NeedRunBefore {
    pub callback_id: i64,
    pub ts: i64,
}

/// What a slice lacked: the newest publication on topic `topic` (its index among
/// the model's topics) before `ts`.
#[pyclass(module = "roscope._core", frozen, get_all)]
pub struct NeedNewestBefore {
    pub topic: i64,
    pub ts: i64,
}

#[pymethods]
impl NeedNode {
    fn __repr__(&self) -> String {
        format!("NeedNode(publication={}, id={})", py_bool(self.publication), self.id)
    }
}

#[pymethods]
impl NeedRunBefore {
    fn __repr__(&self) -> String {
        format!("NeedRunBefore(callback_id={}, ts={})", self.callback_id, self.ts)
    }
}

#[pymethods]
impl NeedNewestBefore {
    fn __repr__(&self) -> String {
        format!("NeedNewestBefore(topic={}, ts={})", self.topic, self.ts)
    }
}

/// An output (its time and publication id, the model's) whose flows or links
/// reach beyond the slice, and what the slice lacked there (`needs`: `NeedNode`,
/// `NeedRunBefore`, `NeedNewestBefore`; none from the causal links).
#[pyclass(module = "roscope._core", frozen)]
pub struct Uncertain {
    #[pyo3(get)]
    pub ts: i64,
    #[pyo3(get)]
    pub publication_id: i64,
    pub needs: Vec<roscope_flow::Need>,
}

#[pymethods]
impl Uncertain {
    #[getter]
    fn needs(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        self.needs
            .iter()
            .map(|n| {
                Ok(match *n {
                    roscope_flow::Need::Node(k, id) => Py::new(py, NeedNode { publication: k == Kind::Pub, id })?.into_py(py),
                    roscope_flow::Need::RunBefore(callback_id, ts) => Py::new(py, NeedRunBefore { callback_id, ts })?.into_py(py),
                    roscope_flow::Need::NewestBefore(topic, ts) => Py::new(py, NeedNewestBefore { topic, ts })?.into_py(py),
                })
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!("Uncertain(ts={}, publication_id={}, {} needs)", self.ts, self.publication_id, self.needs.len())
    }
}

/// Registers the classes of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SearchOptions>()?;
    m.add_class::<Facts>()?;
    m.add_class::<Ids>()?;
    m.add_class::<Window>()?;
    m.add_class::<Answers>()?;
    m.add_class::<NeedNode>()?;
    m.add_class::<NeedRunBefore>()?;
    m.add_class::<NeedNewestBefore>()?;
    m.add_class::<Uncertain>()?;
    Ok(())
}
