//! `_core.model_statistics`: a small trace's model built and its statistics'
//! parts computed (`roscope_model::stats`) in one call, as the Python values
//! that python/roscope/stats.py reads with SQL; no table crosses to Python.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use roscope_ctf::TraceSet;
use roscope_model::stats::{Describe, Group, Stats};

/// The statistic set's values under `prefix`: count (when `count` names it),
/// then min, mean, std, p50, p90, p99, max (`percentiles.keys`).
fn describe(d: &Bound<'_, PyDict>, x: &Describe, prefix: &str, count: Option<&str>) -> PyResult<()> {
    if let Some(c) = count {
        d.set_item(c, x.count)?;
    }
    d.set_item(format!("{prefix}min_ns"), x.min)?;
    d.set_item(format!("{prefix}mean_ns"), x.mean)?;
    d.set_item(format!("{prefix}std_ns"), x.std)?;
    d.set_item(format!("{prefix}p50_ns"), x.p50)?;
    d.set_item(format!("{prefix}p90_ns"), x.p90)?;
    d.set_item(format!("{prefix}p99_ns"), x.p99)?;
    d.set_item(format!("{prefix}max_ns"), x.max)?;
    Ok(())
}

/// A `percentiles.grouped` row: the key column, count and the statistics; the
/// extra columns are added by the caller.
fn group<'py, K: ToPyObject>(py: Python<'py>, key: &str, g: &Group<K>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item(key, g.key.to_object(py))?;
    describe(&d, &g.d, "", Some("count"))?;
    Ok(d)
}

fn rows<'py>(py: Python<'py>, items: impl IntoIterator<Item = PyResult<Bound<'py, PyDict>>>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty_bound(py);
    for d in items {
        out.append(d?)?;
    }
    Ok(out)
}

fn to_py(py: Python<'_>, s: &Stats) -> PyResult<PyObject> {
    let out = PyDict::new_bound(py);
    out.set_item("traces", s.traces.clone())?;
    out.set_item("span", (s.span.0.unwrap_or(0), s.span.1.unwrap_or(0)))?;
    let counts = PyDict::new_bound(py);
    for (k, v) in &s.counts {
        counts.set_item(*k, *v)?;
    }
    out.set_item("counts", counts)?;
    let methods = PyDict::new_bound(py);
    for (k, v) in &s.links_by_method {
        methods.set_item(k, v)?;
    }
    out.set_item("links_by_method", methods)?;
    callback_parts(py, s, &out)?;
    topic_parts(py, s, &out)?;
    service_and_node_parts(py, s, &out)?;
    Ok(out.into_any().unbind())
}

/// callback_info, durations, periods.
fn callback_parts(py: Python<'_>, s: &Stats, out: &Bound<'_, PyDict>) -> PyResult<()> {
    out.set_item(
        "callback_info",
        rows(
            py,
            s.callback_info.iter().map(|c| {
                let d = PyDict::new_bound(py);
                d.set_item("hostname", &c.hostname)?;
                d.set_item("pid", c.pid)?;
                d.set_item("procname", &c.procname)?;
                d.set_item("node", &c.node)?;
                d.set_item("callback_id", c.callback_id)?;
                d.set_item("handle", c.handle)?;
                d.set_item("symbol", &c.symbol)?;
                d.set_item("kind", &c.kind)?;
                d.set_item("topic", &c.topic)?;
                d.set_item("timer_period_ns", c.timer_period_ns)?;
                Ok(d)
            }),
        )?,
    )?;
    out.set_item(
        "durations",
        rows(
            py,
            s.durations.iter().map(|g| {
                let d = group(py, "callback_id", g)?;
                d.set_item("runs", g.rows)?;
                d.set_item("busy_ns", g.sum)?;
                Ok(d)
            }),
        )?,
    )?;
    out.set_item(
        "periods",
        rows(
            py,
            s.periods.iter().map(|p| {
                let d = PyDict::new_bound(py);
                d.set_item("callback_id", p.callback_id)?;
                d.set_item("period_mean_ns", p.mean)?;
                d.set_item("period_jitter_ns", p.jitter)?;
                Ok(d)
            }),
        )?,
    )?;
    Ok(())
}

/// topics, publications, linked, takes, drops, latencies, transports.
fn topic_parts(py: Python<'_>, s: &Stats, out: &Bound<'_, PyDict>) -> PyResult<()> {
    out.set_item(
        "topics",
        rows(
            py,
            s.topics.iter().map(|(t, c)| {
                let d = PyDict::new_bound(py);
                d.set_item("topic", t)?;
                d.set_item("publishers", c.publishers)?;
                d.set_item("subscriptions", c.subscriptions)?;
                Ok(d)
            }),
        )?,
    )?;
    let pairs = |items: &[(String, u64, u64)], a: &str, b: Option<&str>| -> PyResult<Bound<'_, PyList>> {
        rows(
            py,
            items.iter().map(|(t, x, y)| {
                let d = PyDict::new_bound(py);
                d.set_item("topic", t)?;
                d.set_item(a, x)?;
                if let Some(b) = b {
                    d.set_item(b, y)?;
                }
                Ok(d)
            }),
        )
    };
    out.set_item("publications", pairs(&s.publications, "publications", None)?)?;
    let linked: Vec<(String, u64, u64)> = s.publications.iter().map(|(t, _n, u)| (t.clone(), *u, 0)).collect();
    out.set_item("linked", pairs(&linked, "unmatched_publications", None)?)?;
    out.set_item("takes", pairs(&s.takes, "takes", Some("unmatched_takes"))?)?;
    out.set_item(
        "drops",
        rows(
            py,
            s.drops.iter().map(|(t, n)| {
                let d = PyDict::new_bound(py);
                d.set_item("topic", t)?;
                d.set_item("drops", n)?;
                Ok(d)
            }),
        )?,
    )?;
    out.set_item(
        "latencies",
        rows(
            py,
            s.latencies.iter().map(|g| {
                let d = group(py, "topic", g)?;
                d.set_item("deliveries", g.rows)?;
                d.set_item("heuristic_links", g.heuristic)?;
                Ok(d)
            }),
        )?,
    )?;
    out.set_item(
        "transports",
        rows(
            py,
            s.transports.iter().map(|g| {
                let d = group(py, "topic", g)?;
                d.set_item("n", g.rows)?;
                Ok(d)
            }),
        )?,
    )?;
    Ok(())
}

/// services, nodes.
fn service_and_node_parts(py: Python<'_>, s: &Stats, out: &Bound<'_, PyDict>) -> PyResult<()> {
    out.set_item(
        "services",
        rows(
            py,
            s.services.iter().map(|r| {
                let d = PyDict::new_bound(py);
                d.set_item("service", &r.service)?;
                d.set_item("server_node", &r.server_node)?;
                d.set_item("calls", r.calls)?;
                d.set_item("clients", r.clients)?;
                d.set_item("answered", r.answered)?;
                describe(&d, &r.server, "server_", Some("server_count"))?;
                describe(&d, &r.rtt, "rtt_", Some("rtt_count"))?;
                d.set_item("heuristic_links", r.heuristic_links)?;
                Ok(d)
            }),
        )?,
    )?;
    out.set_item(
        "nodes",
        rows(
            py,
            s.nodes.iter().map(|n| {
                let d = PyDict::new_bound(py);
                d.set_item("node", &n.node)?;
                d.set_item("hostname", &n.hostname)?;
                d.set_item("pid", n.pid)?;
                d.set_item("callbacks", n.callbacks)?;
                d.set_item("runs", n.runs)?;
                d.set_item("busy_ns", n.busy_ns)?;
                d.set_item("publications", n.publications)?;
                Ok(d)
            }),
        )?,
    )?;
    Ok(())
}

/// Builds the model of the traces under `paths` (as `build_model`) and returns
/// (parts, stats, warnings, losses): `parts`, the statistics' parts by name
/// (python/roscope/stats_core.py), in place of the tables.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the Python signature: keywords with defaults
#[pyo3(signature = (paths, heuristics=true, record_ids=None, sync=true, meter=None, attach=false))]
pub fn model_statistics(
    py: Python<'_>,
    paths: Vec<String>,
    heuristics: bool,
    record_ids: Option<Vec<String>>,
    sync: bool,
    meter: Option<PyRef<'_, crate::Meter>>,
    attach: bool,
) -> PyResult<PyObject> {
    let mut set = TraceSet::open(&paths).map_err(crate::err)?;
    set.meter = meter.map(|m| m.m.clone());
    let (model, parts) = py.allow_threads(|| {
        let model = roscope_model::build(
            &mut set,
            roscope_model::Options { heuristics, progress: false, sync, window_ns: None, flush_every: 0 },
            roscope_model::Scope { record_ids: record_ids.unwrap_or_default(), attach },
        );
        let parts = roscope_model::stats::stats(&model);
        (model, parts)
    });
    py.check_signals()?;
    let mut warnings: Vec<String> = set.all_warnings().iter().map(|w| w.to_string()).collect();
    warnings.extend(model.warnings);
    Ok((to_py(py, &parts)?, model.stats, warnings, crate::losses(&set)).into_py(py))
}
