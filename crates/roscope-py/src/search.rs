//! The named types a data-flow search takes from Python, in place of tuples: the
//! search's options (`SearchOptions`) and the whole trace's facts (`Facts`).

use pyo3::prelude::*;

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

/// Registers the classes of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SearchOptions>()?;
    m.add_class::<Facts>()?;
    Ok(())
}
