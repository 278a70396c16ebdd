"""The statistics queries over a dataset's runs, defined once for every engine.

Each query is SQL text that DuckDB and Spark SQL (3.3 or newer) both accept, over
the dataset's tables as views named after them, each with the partition column
``run`` (docs/dataset.md). `roscope.dataset` registers those views in DuckDB,
`roscope.spark` in Spark; both run the same text from here. (The report's bounded
queries over one trace are `roscope.report.queries`'.)

The statistics are the standard set (roscope.percentiles, docs/analyses.md), in
the same SQL in both engines: ``count``, ``min``, ``avg`` (mean), ``stddev_samp``
(std: n - 1 in the denominator, null for one value in both), ``max``, and each
percentile as ``percentile_cont(f) WITHIN GROUP (ORDER BY x)``: linear
interpolation between the two nearest ranks, as DuckDB's ``quantile_cont`` that
`roscope stats` uses. Counts, minima and maxima are integers in both engines;
means, deviations and percentiles are doubles (equal up to floating rounding:
the engines sum in different orders).

QUERIES = {name: Query}; `sql(name, runs=None)` gives the text, `run_duckdb(con,
name)` runs it on a DuckDB connection with the views registered.
"""
from __future__ import annotations

from dataclasses import dataclass

from roscope import dataset as ds
from roscope.stats import topic_rate

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.

#: The statistics of a set of durations, with their SQL (x: the duration's expression).
STATS = {
    "min": "min({x})",
    "mean": "avg({x})",
    "std": "stddev_samp({x})",
    "p50": "percentile_cont(0.5) WITHIN GROUP (ORDER BY {x})",
    "p90": "percentile_cont(0.9) WITHIN GROUP (ORDER BY {x})",
    "p99": "percentile_cont(0.99) WITHIN GROUP (ORDER BY {x})",
    "max": "max({x})",
}


def stat_columns(x: str, prefix: str = "") -> str:
    """``count(x) AS count, min(x) AS <prefix>min_ns, ...`` (x: SQL written in roscope's code)."""
    cols = [f"count({x}) AS {prefix}count" if prefix else f"count({x}) AS count"]
    cols += [f"{sql.format(x=x)} AS {prefix}{name}_ns" for name, sql in STATS.items()]
    return ",\n               ".join(cols)


@dataclass(frozen=True)
class Query:
    """One query: its SQL, the tables it reads, and the columns that identify a row."""
    doc: str
    tables: tuple[str, ...]
    keys: tuple[str, ...]
    sql: str


QUERIES = {
    "callbacks": Query(
        doc="per run and callback: the durations of its complete runs (as `roscope stats`' callbacks), "
            "with its subscription's topic",
        tables=("callback_runs", "callbacks", "nodes", "subscriptions"),
        keys=("run", "callback_id"),
        sql=f"""
        SELECT r.run AS run, r.callback_id AS callback_id, c.kind AS kind, c.symbol AS symbol,
               n.namespace AS node_namespace, n.name AS node_name, s.name AS topic,
               {stat_columns("r.duration_ns")}
        FROM callback_runs r
        JOIN callbacks c ON c.run = r.run AND c.callback_id = r.callback_id
        LEFT JOIN nodes n ON n.run = c.run AND n.node_id = c.node_id
        LEFT JOIN subscriptions s ON c.kind = 'subscription' AND s.run = c.run AND s.subscription_id = c.owner_id
        WHERE r.end_ts IS NOT NULL
        GROUP BY r.run, r.callback_id, c.kind, c.symbol, n.namespace, n.name, s.name""",
    ),
    "topics": Query(
        doc="per run and topic: publication-to-callback-start latency of every delivered message "
            "(as `roscope stats`' topics: deliveries and lat_*), and the topic's rate (`rate_hz`, "
            "roscope.stats.topic_rate: its own, (n - 1) over its first to last publication, from "
            "`timed_publications`, `first_publish_ts`, `last_publish_ts`)",
        tables=("links", "publications", "publishers", "callback_runs"),
        keys=("run", "topic"),
        sql=f"""
        WITH pubs AS (
            SELECT pb.run AS run, pb.publication_id AS publication_id, pu.name AS topic,
                   coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts) AS publish_ts
            FROM publications pb JOIN publishers pu ON pu.run = pb.run AND pu.publisher_id = pb.publisher_id
            WHERE pu.name IS NOT NULL),
        lat AS (
            SELECT p.run AS run, p.topic AS topic, cr.start_ts - p.publish_ts AS latency_ns
            FROM links l
            JOIN pubs p ON p.run = l.run AND p.publication_id = l.publication_id
            JOIN callback_runs cr ON cr.run = l.run AND cr.run_id = l.run_id),
        times AS (
            SELECT run, topic, count(publish_ts) AS timed_publications, min(publish_ts) AS first_publish_ts,
                   max(publish_ts) AS last_publish_ts
            FROM pubs GROUP BY run, topic),
        lat_stats AS (
            SELECT run, topic,
                   {stat_columns("latency_ns", "lat_")}
            FROM lat GROUP BY run, topic)
        SELECT s.*, t.timed_publications AS timed_publications, t.first_publish_ts AS first_publish_ts,
               t.last_publish_ts AS last_publish_ts
        FROM lat_stats s LEFT JOIN times t ON t.run = s.run AND t.topic = s.topic""",
    ),
    "runs": Query(
        doc="per run: its manifest's columns and its totals",
        tables=("runs",),
        keys=("run",),
        sql="""
        SELECT run, recorded_ns, recorded_at, commit, config, events, callback_runs, publications,
               events_discarded, packets_lost
        FROM runs""",
    ),
}


def sql(name: str) -> str:
    """The SQL text of query `name` (rows unordered; order them by its keys)."""
    return QUERIES[name].sql


def order(name: str, rows: list[dict]) -> list[dict]:
    """Rows of query `name` in key order (None first), the same for every engine; a topic
    row with its rate (`rate_hz`, roscope.stats.topic_rate: the one definition)."""
    keys = QUERIES[name].keys
    if name == "topics":
        rows = [{**r, "rate_hz": topic_rate(r.get("timed_publications") or 0, r.get("first_publish_ts"),
                                            r.get("last_publish_ts"))} for r in rows]
    return sorted(rows, key=lambda r: tuple((r[k] is not None, r[k]) for k in keys))


def run_duckdb(dataset: str, names=("callbacks", "topics"), runs=None) -> dict[str, list[dict]]:
    """The queries `names` on DuckDB over the dataset's runs (`runs`: ids or
    patterns, None: all); {name: rows in key order}."""
    import duckdb

    chosen = ds.select(dataset, runs)
    con = duckdb.connect(":memory:")
    try:
        need = sorted({t for n in names for t in QUERIES[n].tables})
        ds.register(con, dataset, chosen, need)
        out = {}
        for n in names:
            try:
                cur = con.execute(sql(n))
            except duckdb.Error as exc:
                files = [f for t in QUERIES[n].tables for f in ds.table_files(dataset, t, chosen)]
                raise ds.read_error(exc, files, dataset) from None
            cols = [d[0] for d in cur.description]
            out[n] = order(n, [dict(zip(cols, r)) for r in cur.fetchall()])
        return out
    finally:
        con.close()
