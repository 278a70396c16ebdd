//! `_core.model_statistics`: a small trace's model built and its statistics'
//! parts computed (`roscope_model::stats`) in one call, as the Python values
//! that python/roscope/stats.py reads with SQL; no table crosses to Python.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use roscope_ctf::TraceSet;
use roscope_model::stats::{Describe, Group, Stats};

/// A dict of the given keys and values, in that order (`?` on each insertion).
macro_rules! dict {
    ($py:expr, $($k:expr => $v:expr),* $(,)?) => {{
        let d = PyDict::new_bound($py);
        $( d.set_item($k, $v)?; )*
        d
    }};
}

/// The statistic set's values under `prefix`: count (when `count` names it),
/// then min, mean, std, p50, p90, p99, max (`percentiles.keys`).
pub(crate) fn describe(d: &Bound<'_, PyDict>, x: &Describe, prefix: &str, count: Option<&str>) -> PyResult<()> {
    if let Some(c) = count {
        d.set_item(c, x.count)?;
    }
    let k = |name: &str| format!("{prefix}{name}_ns");
    d.set_item(k("min"), x.min)?;
    d.set_item(k("mean"), x.mean)?;
    d.set_item(k("std"), x.std)?;
    d.set_item(k("p50"), x.p50)?;
    d.set_item(k("p90"), x.p90)?;
    d.set_item(k("p99"), x.p99)?;
    d.set_item(k("max"), x.max)?;
    Ok(())
}

/// A `percentiles.grouped` row: the key column, count, the statistics, then `extra`.
fn group<'py, K: ToPyObject>(py: Python<'py>, key: &str, g: &Group<K>, extra: &[(&str, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let d = dict!(py, key => g.key.to_object(py));
    describe(&d, &g.d, "", Some("count"))?;
    for (k, v) in extra {
        d.set_item(*k, *v)?;
    }
    Ok(d)
}

/// A list of the rows `row` makes of `items`.
fn rows<'py, T>(py: Python<'py>, items: &[T], row: impl Fn(&T) -> PyResult<Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty_bound(py);
    for x in items {
        out.append(row(x)?)?;
    }
    Ok(out)
}

pub(crate) fn to_py(py: Python<'_>, s: &Stats) -> PyResult<PyObject> {
    let counts = PyDict::new_bound(py);
    for (k, v) in &s.counts {
        counts.set_item(*k, *v)?;
    }
    let methods = PyDict::new_bound(py);
    for (k, v) in &s.links_by_method {
        methods.set_item(k, v)?;
    }
    let out = dict!(py,
        "traces" => s.traces.clone(),
        "span" => (s.span.0.unwrap_or(0), s.span.1.unwrap_or(0)),
        "counts" => counts,
        "links_by_method" => methods,
        "callback_info" => rows(py, &s.callback_info, |c| Ok(dict!(py,
            "hostname" => &c.hostname, "pid" => c.pid, "procname" => &c.procname, "node" => &c.node,
            "callback_id" => c.callback_id, "handle" => c.handle, "symbol" => &c.symbol, "kind" => &c.kind,
            "topic" => &c.topic, "timer_period_ns" => c.timer_period_ns)))?,
        "durations" => rows(py, &s.durations, |g| {
            let d = group(py, "callback_id", g, &[("runs", g.rows)])?;
            d.set_item("busy_ns", g.sum)?;
            Ok(d)
        })?,
        "periods" => rows(py, &s.periods, |p| Ok(dict!(py,
            "callback_id" => p.callback_id, "period_mean_ns" => p.mean, "period_jitter_ns" => p.jitter)))?,
        "topics" => rows(py, &s.topics, |(t, c)| Ok(dict!(py,
            "topic" => t, "publishers" => c.publishers, "subscriptions" => c.subscriptions)))?,
        "publications" => rows(py, &s.publications, |(t, n, _)| Ok(dict!(py, "topic" => t, "publications" => n)))?,
        "publication_times" => rows(py, &s.publication_times, |t| Ok(dict!(py,
            "topic" => &t.topic, "timed_publications" => t.timed, "first_publish_ts" => t.first,
            "last_publish_ts" => t.last, "period_mean_ns" => t.period_mean, "period_jitter_ns" => t.period_jitter)))?,
        "linked" => rows(py, &s.publications, |(t, _, u)| Ok(dict!(py, "topic" => t, "unmatched_publications" => u)))?,
        "takes" => rows(py, &s.takes, |(t, n, u)| Ok(dict!(py, "topic" => t, "takes" => n, "unmatched_takes" => u)))?,
        "drops" => rows(py, &s.drops, |(t, n)| Ok(dict!(py, "topic" => t, "drops" => n)))?,
        "latencies" => rows(py, &s.latencies, |g| group(py, "topic", g, &[("deliveries", g.rows), ("heuristic_links", g.heuristic), ("negative_latencies", g.negative)]))?,
        "transports" => rows(py, &s.transports, |g| group(py, "topic", g, &[("n", g.rows), ("negative", g.negative)]))?,
        "services" => rows(py, &s.services, |r| {
            let d = dict!(py, "service" => &r.service, "server_node" => &r.server_node, "calls" => r.calls,
                          "clients" => r.clients, "answered" => r.answered);
            describe(&d, &r.server, "server_", Some("server_count"))?;
            describe(&d, &r.rtt, "rtt_", Some("rtt_count"))?;
            d.set_item("server_negative", r.server_negative)?;
            d.set_item("rtt_negative", r.rtt_negative)?;
            d.set_item("heuristic_links", r.heuristic_links)?;
            Ok(d)
        })?,
        "nodes" => rows(py, &s.nodes, |n| Ok(dict!(py,
            "node" => &n.node, "hostname" => &n.hostname, "pid" => n.pid, "callbacks" => n.callbacks,
            "runs" => n.runs, "busy_ns" => n.busy_ns, "publications" => n.publications)))?,
    );
    Ok(out.into_any().unbind())
}

/// Builds the model of the traces under `paths` (as `build_model`) and returns
/// (parts, stats, warnings, losses, window): `parts`, the statistics' parts by name
/// (python/roscope/stats_core.py), in place of the tables. With `place`, a callable
/// given the trace's span (first, last) ns and giving a window (start, end) ns
/// (`roscope stats --window`, placed by python/roscope/numbers.py's `window_in`): the
/// callbacks' and topics' parts are that window's (`roscope_model::stats::stats_within`),
/// the rest the whole trace's, and `window` is (start, end); else None.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the Python signature: keywords with defaults
#[pyo3(signature = (paths, heuristics=true, record_ids=None, sync=true, meter=None, attach=false, place=None))]
pub fn model_statistics(
    py: Python<'_>,
    paths: Vec<String>,
    heuristics: bool,
    record_ids: Option<Vec<String>>,
    sync: bool,
    meter: Option<PyRef<'_, crate::Meter>>,
    attach: bool,
    place: Option<PyObject>,
) -> PyResult<PyObject> {
    let mut set = TraceSet::open(&paths).map_err(crate::err)?;
    set.meter = meter.map(|m| m.m.clone());
    let model = py.allow_threads(|| {
        roscope_model::build(
            &mut set,
            roscope_model::Options { heuristics, progress: false, sync, window_ns: None, flush_every: 0 },
            roscope_model::Scope { record_ids: record_ids.unwrap_or_default(), attach },
        )
    });
    py.check_signals()?;
    let window: Option<(i64, i64)> = match place {
        Some(place) => {
            let (first, last) = roscope_model::stats::span(&model);
            Some(place.call1(py, (first.unwrap_or(0), last.unwrap_or(0)))?.extract(py)?)
        }
        None => None,
    };
    let parts = py.allow_threads(|| roscope_model::stats::stats_within(&model, window));
    let mut warnings: Vec<String> = set.all_warnings().iter().map(|w| w.to_string()).collect();
    warnings.extend(model.warnings);
    Ok((to_py(py, &parts)?, model.stats, warnings, crate::losses(&set), window).into_py(py))
}
