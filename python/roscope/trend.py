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
from roscope import regex
from roscope.dataset_queries import stat_columns
from roscope.errors import InputError
from roscope.flow import FlowRequest, data_flows, path_stats
from roscope.text import names

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.

#: The statistics `trend` can follow.
TREND_STATS = ("count", "min", "mean", "std", "p50", "p90", "p99", "max")
#: Runs before each run whose median is its baseline; relative change that flags it.
TREND_WINDOW = 5
TREND_THRESHOLD = 0.10

_CB = r"""
    WITH cb AS (
        SELECT c.run, c.callback_id, c.symbol, s.name AS topic,
               CASE WHEN n.name IS NULL THEN NULL
                    WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                    ELSE rtrim(n.namespace, '/') || '/' || n.name END AS node
        FROM callbacks c
        LEFT JOIN nodes n ON n.run = c.run AND n.node_id = c.node_id
        LEFT JOIN subscriptions s ON c.kind = 'subscription' AND s.run = c.run AND s.subscription_id = c.owner_id)"""
_CALLBACKS = _CB + r""",
    sel AS (
        SELECT run, callback_id FROM cb
        WHERE (node IS NOT NULL AND regexp_matches(node, $re)) OR (symbol IS NOT NULL AND regexp_matches(symbol, $re))
           OR (topic IS NOT NULL AND regexp_matches(topic, $re)))
    SELECT r.run AS run, r.duration_ns AS x
    FROM callback_runs r JOIN sel ON sel.run = r.run AND sel.callback_id = r.callback_id
    WHERE r.end_ts IS NOT NULL"""

_TOPICS = r"""
    WITH pubs AS (
        SELECT pb.run, pb.publication_id, coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts) AS publish_ts
        FROM publications pb JOIN publishers pu ON pu.run = pb.run AND pu.publisher_id = pb.publisher_id
        WHERE pu.name IS NOT NULL AND regexp_matches(pu.name, $re))
    SELECT p.run AS run, cr.start_ts - p.publish_ts AS x
    FROM links l
    JOIN pubs p ON p.run = l.run AND p.publication_id = l.publication_id
    JOIN callback_runs cr ON cr.run = l.run AND cr.run_id = l.run_id"""


#: Per kind of metric: the names its regular expression is matched against, each with
#: whether it matches (a metric that matches nothing in any run is an error).
_NAMES = {
    "callback": _CB + r"""
        SELECT DISTINCT x AS name, regexp_matches(x, $re) AS hit
        FROM (SELECT unnest([node, symbol, topic]) AS x FROM cb) WHERE x IS NOT NULL ORDER BY name""",
    "topic": r"""SELECT DISTINCT name, regexp_matches(name, $re) AS hit FROM publishers WHERE name IS NOT NULL
        ORDER BY name""",
}


def parse_metric(text: str) -> tuple[str, str, str | None]:
    """``callback:RE``, ``topic:RE`` or ``path:FROM->TO`` as (kind, RE or FROM, TO or None)."""
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("callback", "topic", "path") or not rest:
        raise InputError(f"metric {text!r}: give callback:REGEX, topic:REGEX or path:FROM->TO")
    to = None
    if kind == "path":
        rest, sep, to = rest.partition("->")
        if not sep or not rest or not to:
            raise InputError(f"metric {text!r}: a path is path:FROM_REGEX->TO_REGEX")
    if kind == "path":  # the data-flow search matches topics with roscope.regex (Rust's linear-time engine)
        for r in (rest, to):
            try:
                regex.compile(r, None)
            except InputError as exc:
                raise InputError(f"metric {text!r}: {exc}") from None
    else:
        _check_re2(text, rest)
    return kind, rest, to


def _check_re2(metric: str, regex: str) -> None:
    """Callback and topic metrics are matched by DuckDB's regexp_matches: RE2 syntax
    (docs/dataset.md), e.g. \\pL or \\Q...\\E, which Python's `re` refuses."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        con.execute("SELECT regexp_matches('', ?)", [regex]).fetchall()
    except duckdb.InvalidInputException as exc:
        raise InputError(f"metric {metric!r}: bad regular expression {regex!r} (RE2 syntax): "
                         f"{str(exc).removeprefix('Invalid Input Error: ')}") from None
    finally:
        con.close()


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
            data_flows(db, request)
        except InputError as exc:  # e.g. no topic of this run matches
            return {"run": run_id, "latency": {"count": 0}, "paths": [], "note": str(exc)}
        cur = db.con.execute(f"SELECT {stat_columns('latency_ns')} FROM data_flows")
        cols = [d[0] for d in cur.description]
        return {"run": run_id, "latency": dict(zip(cols, cur.fetchall()[0])), "paths": path_stats(db), "note": None}
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
        need = ("callbacks", "nodes", "subscriptions", "callback_runs") if kind == "callback" else (
            "publications", "publishers", "links", "callback_runs")
        ds.register(con, dataset, ids, need)
        try:
            cur = con.execute(_stats_sql(_CALLBACKS if kind == "callback" else _TOPICS), {"re": a})
        except duckdb.InvalidInputException as exc:
            raise InputError(f"metric {metric!r}: {exc}") from None
        except duckdb.Error as exc:
            raise ds.read_error(exc, [f for t in need for f in ds.table_files(dataset, t, ids)], dataset) from None
        cols = [d[0] for d in cur.description]
        values = {row[0]: dict(zip(cols[1:], row[1:])) for row in cur.fetchall()}
        if not values:
            seen = con.execute(_NAMES[kind], {"re": a}).fetchall()
            if not any(hit for _n, hit in seen):
                what = "callback (node, symbol or topic)" if kind == "callback" else "published topic"
                raise InputError(f"metric {metric!r}: no {what} of the {len(ids)} run(s) matches {a!r} "
                                 f"({kind}s: {names(n for n, _h in seen) or 'none'})")
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
