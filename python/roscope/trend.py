"""One metric across a dataset's runs, in recorded-time order, with the runs where
it changed (`roscope trend`, docs/dataset.md).

- `parse_metric(text)`: ``callback:RE``, ``topic:RE`` or ``path:FROM->TO``;
- `metric_values(dataset, metric)`: each run's statistics of the metric (one
  query over the runs' Parquet files; a path metric's data flows run by run,
  `run_flows`, with one `roscope.flow.FlowRequest`);
- `trend(dataset, metric, stat)`: one statistic per run, each compared with the
  median of the runs before it.

The runs' storage is `roscope.dataset`'s.
"""
from __future__ import annotations

import math
import statistics as pystats
from collections.abc import Sequence

from roscope import dataset as ds
from roscope import selector
from roscope.dataset_queries import stat_columns
from roscope.errors import InputError
from roscope.flow import FlowRequest, data_flows, path_stats
from roscope.selector import CALLBACK_LABEL

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.

#: The selections a metric can be (roscope.selector's kinds).
METRIC_KINDS = ("callback", "topic", "path")
#: The statistics `trend` can follow.
TREND_STATS = ("count", "min", "mean", "std", "p50", "p90", "p99", "max")
#: Runs before each run whose median is its baseline; relative change that flags it.
TREND_WINDOW = 5
TREND_THRESHOLD = 0.10

#: Every run's callbacks with their label (roscope.selector.CALLBACK_LABEL over the columns
#: of the `callbacks_info` view, per run).
_LABELS = r"""
    WITH c AS (
        SELECT c.run, c.callback_id, p.procname, c.symbol, c.kind,
               CASE c.kind WHEN 'subscription' THEN s.name WHEN 'service' THEN sv.name WHEN 'client' THEN cl.name
                    ELSE NULL END AS topic,
               t.period_ns,
               CASE WHEN n.name IS NULL THEN NULL
                    WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                    ELSE rtrim(n.namespace, '/') || '/' || n.name END AS node
        FROM callbacks c
        JOIN processes p ON p.run = c.run AND p.proc_id = c.proc_id
        LEFT JOIN subscriptions s ON c.kind = 'subscription' AND s.run = c.run AND s.subscription_id = c.owner_id
        LEFT JOIN services sv ON c.kind = 'service' AND sv.run = c.run AND sv.service_id = c.owner_id
        LEFT JOIN clients cl ON c.kind = 'client' AND cl.run = c.run AND cl.client_id = c.owner_id
        LEFT JOIN timers t ON c.kind = 'timer' AND t.run = c.run AND t.timer_id = c.owner_id
        LEFT JOIN nodes n ON n.run = c.run AND n.node_id = c.node_id)
    SELECT run, callback_id, """ + CALLBACK_LABEL + """ AS label FROM c ORDER BY run, callback_id"""
_CALLBACKS = r"""
    SELECT r.run AS run, r.duration_ns AS x
    FROM callback_runs r JOIN _chosen sel ON sel.run = r.run AND sel.id = r.callback_id
    WHERE r.end_ts IS NOT NULL"""

_TOPICS = r"""
    WITH pubs AS (
        SELECT pb.run, pb.publication_id, coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts) AS publish_ts
        FROM publications pb JOIN publishers pu ON pu.run = pb.run AND pu.publisher_id = pb.publisher_id
        JOIN _chosen sel ON sel.run = pu.run AND sel.id = pu.publisher_id)
    SELECT p.run AS run, cr.start_ts - p.publish_ts AS x
    FROM links l
    JOIN pubs p ON p.run = l.run AND p.publication_id = l.publication_id
    JOIN callback_runs cr ON cr.run = l.run AND cr.run_id = l.run_id"""


#: Per kind of metric: (run, id, label) of each subject its regular expression is matched against.
_SUBJECTS = {
    "callback": _LABELS,
    "topic": "SELECT run, publisher_id, name FROM publishers WHERE name IS NOT NULL ORDER BY run, publisher_id",
}


def parse_metric(text: str) -> tuple[str, str, str | None]:
    """``callback:RE``, ``topic:RE`` or ``path:FROM->TO`` as (kind, RE or FROM, TO or None):
    roscope.selector's selections (roscope.regex's syntax, the labels `check` and `why` match)."""
    kind, a, b = selector.parse(text, f"metric {text!r}")
    if kind not in METRIC_KINDS:
        raise InputError(f"metric {text!r}: give callback:REGEX, topic:REGEX or path:FROM->TO")
    return kind, a, b


def _stats_sql(source: str) -> str:
    return f"SELECT run, {stat_columns('x')} FROM ({source}) GROUP BY run"


def run_flows(dataset: str, run_id: str, request: FlowRequest) -> dict:
    """One run's data flows of `request` (roscope.flow, the Rust core, on that run
    alone): {run, latency: {count, min_ns, ...} over all its flows, paths:
    flow.path_stats rows, note: why there are none, or None}. What `roscope trend
    --metric path:` and `roscope spark flow` (one Spark task per run) compute per run."""
    db = ds.open(dataset, [run_id])
    try:
        try:
            flows = data_flows(db, request)
        except InputError as exc:  # e.g. no topic of this run matches
            return {"run": run_id, "latency": {"count": 0}, "paths": [], "note": str(exc)}
        cur = db.con.execute(f"SELECT {stat_columns('latency_ns')} FROM {flows.sql('data_flows')}")
        cols = [d[0] for d in cur.description]
        return {"run": run_id, "latency": dict(zip(cols, cur.fetchall()[0])), "paths": path_stats(flows), "note": None}
    finally:
        db.close()


def path_request(metric: str) -> FlowRequest:
    """The data-flow request of a `path:FROM->TO` metric."""
    kind, a, b = parse_metric(metric)
    if kind != "path":
        raise InputError(f"metric {metric!r}: not a path (path:FROM_REGEX->TO_REGEX)")
    return FlowRequest(a, b)


def _path_values(dataset: str, run_ids_: Sequence[str], request: FlowRequest) -> tuple[dict, dict]:
    """Per run: the statistics of its data flows' end-to-end latency; per run a note where it has none."""
    values, notes = {}, {}
    for r in run_ids_:
        res = run_flows(dataset, r, request)
        values[r] = res["latency"]
        if res["note"]:
            notes[r] = res["note"]
    unmatched = [n for n in notes.values() if n.startswith("no topic matches")]
    if run_ids_ and len(unmatched) == len(run_ids_):  # a selection that matches nothing in any run
        raise InputError(f"in none of the {len(run_ids_)} run(s): {unmatched[-1]}")
    return values, notes


def metric_values(dataset: str, metric: str, runs_: Sequence[str] | str | None = None) -> tuple[list[dict], dict, dict]:
    """(the chosen runs in time order, {run: {count, min_ns, ...}}, {run: note}) for `metric`."""
    import duckdb

    kind, a, _b = parse_metric(metric)
    chosen = ds.runs(dataset, runs_)
    ids = [r["run_id"] for r in chosen]
    if kind == "path":
        values, notes = _path_values(dataset, ids, path_request(metric))
        return chosen, values, notes
    con = duckdb.connect(":memory:")
    try:
        need = ("callbacks", "processes", "nodes", "subscriptions", "services", "clients", "timers",
                "callback_runs") if kind == "callback" else ("publications", "publishers", "links", "callback_runs")
        files = [f for t in need for f in ds.table_files(dataset, t, ids)]
        try:
            ds.register(con, dataset, ids, need)
            subjects = con.execute(_SUBJECTS[kind]).fetchall()
        except duckdb.Error as exc:
            raise ds.read_error(exc, files, dataset) from None
        sel = selector.Selector(kind, a, f"metric {metric!r}")
        hit = sel.pick({(r, i): label for r, i, label in subjects})
        if not hit:
            raise sel.nothing((label for _r, _i, label in subjects), f" of the {len(ids)} run(s)")
        con.execute("CREATE TEMP TABLE _chosen AS SELECT unnest(?::VARCHAR[]) AS run, unnest(?::BIGINT[]) AS id",
                    [[r for r, _i in hit], [i for _r, i in hit]])
        try:
            cur = con.execute(_stats_sql(_CALLBACKS if kind == "callback" else _TOPICS))
        except duckdb.Error as exc:
            raise ds.read_error(exc, files, dataset) from None
        cols = [d[0] for d in cur.description]
        values = {row[0]: dict(zip(cols[1:], row[1:])) for row in cur.fetchall()}
    finally:
        con.close()
    return chosen, values, {}


def trend(dataset: str, metric: str, stat: str = "p50", runs_: Sequence[str] | str | None = None,
          threshold: float = TREND_THRESHOLD, window: int = TREND_WINDOW) -> dict:
    """`metric`'s statistic `stat` per run, in recorded-time order, with change detection.

    Each run's value is compared with its baseline, the median of the values of
    the up to `window` runs before it (runs without a value skipped); a run is
    flagged when ``|value - baseline| > threshold * |baseline|``. Values in ns
    (``count``: a number of samples). Returns {metric, stat, threshold, window,
    runs: [{run_id, recorded_at, commit, config, count, value, baseline, change, flagged, note}]}."""
    if stat not in TREND_STATS:
        raise InputError(f"statistic {stat!r}: one of {', '.join(TREND_STATS)}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < math.inf:
        raise InputError(f"--threshold {threshold}: give a finite share of 0 or more (0.1 flags a run that changed "
                         "by more than 10%)")
    chosen, values, notes = metric_values(dataset, metric, runs_)
    key = "count" if stat == "count" else f"{stat}_ns"
    out, seen = [], []
    for r in chosen:
        v = values.get(r["run_id"], {})
        value = v.get(key)
        if stat == "count" and value is None:
            value = 0
        base = pystats.median(seen[-window:]) if seen else None
        change = (value - base) / abs(base) if value is not None and base not in (None, 0) else None
        out.append({"run_id": r["run_id"], "recorded_at": r["recorded_at"], "commit": r["commit"], "config": r["config"],
                    "count": v.get("count") or 0, "value": value, "baseline": base, "change": change,
                    "flagged": change is not None and abs(change) > threshold, "note": notes.get(r["run_id"])})
        if value is not None:
            seen.append(value)
    return {"metric": metric, "stat": stat, "threshold": threshold, "window": window, "runs": out}
