"""Statistics of the data flows of one search (`data_flows`' result, a `DataFlows`)
(docs/analyses.md): per path (`path_stats`: end-to-end latency and each of its parts) and per component
(`component_stats`: communication per topic, idle per node, computation per
callback, like the data-flow paper's Tables II-IV). Exact percentiles by selection,
in little memory whatever a path's size (`roscope.percentiles.grouped`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope import percentiles
from roscope.flow.search import FLOW_TABLES, DataFlows

if TYPE_CHECKING:
    from roscope.database import Database

#: The latency parts of a data flow, columns of `data_flows` (ns).
COMPONENTS = ("latency", "communication", "idle", "computation")

#: The values of `path_stats` (one latency part `c` of every flow) and of
#: `component_stats` (each table's source, group columns and extra aggregates),
#: as `percentiles.grouped` reads them; `{data_flows}` and `{data_flow_segments}`
#: are the SQL names of one search's tables (`sources`).
PATH_SOURCE = "SELECT path_id, {c}_ns AS x FROM {data_flows}"
COMPONENT_SOURCES = {
    "communication_by_topic": ("""
        SELECT pi.topic, s.duration_ns AS x
        FROM {data_flow_segments} s JOIN publications_info pi ON pi.publication_id = s.a
        WHERE s.kind = 'communication'""", ["topic"], ""),
    "idle_by_node": ("""
        SELECT c.node, s.duration_ns AS x
        FROM {data_flow_segments} s JOIN callback_runs r ON r.run_id = s.b JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'idle'""", ["node"], ""),
    "computation_by_callback": ("""
        SELECT c.node, c.kind, c.topic, c.symbol, s.duration_ns AS x, r.duration_ns AS run_ns
        FROM {data_flow_segments} s JOIN callback_runs r ON r.run_id = s.a JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'computation'""", ["node", "kind", "topic", "symbol"], "avg(run_ns) AS callback_mean_ns"),
}


def _tables(flows: DataFlows | Database) -> tuple[Database, dict[str, str]]:
    """The Database and the SQL names of the tables of `flows`: a search's result
    (`DataFlows`), or a Database, for the flows shown last on it under their names
    (what a user's `roscope sql` reads; roscope's own code passes the `DataFlows`)."""
    if isinstance(flows, DataFlows):
        return flows.db, {n: flows.sql(n) for n in FLOW_TABLES}
    return flows, {n: f'"{n}"' for n in FLOW_TABLES}


def sources(flows: DataFlows | Database) -> tuple[list[str], dict[str, tuple]]:
    """`PATH_SOURCE` per latency part (in `COMPONENTS`' order) and `COMPONENT_SOURCES`,
    over the tables of `flows` (a `DataFlows`)."""
    _db, names = _tables(flows)
    return ([PATH_SOURCE.format(c=c, **names) for c in COMPONENTS],
            {k: (src.format(**names), by, extra) for k, (src, by, extra) in COMPONENT_SOURCES.items()})


def path_stats(flows: DataFlows | Database, window: tuple[int, int] | None = None) -> list[dict]:
    """Per path of `flows` (a search's result, `DataFlows`): flow count, and for the
    end-to-end latency and each of its parts the standard statistics (count, min_ns ...
    max_ns, with quartiles). One `percentiles.grouped` per part (exact percentiles by
    selection). `window` (start, end) ns: only the flows that end (their output's
    publication) in [start, end), and the paths with such flows; `flows` counts those."""
    db, names = _tables(flows)
    path_sources, _ = sources(flows)
    where = "" if window is None else f" WHERE end_ts >= {int(window[0])} AND end_ts < {int(window[1])}"
    out = {r["path_id"]: {"path_id": r["path_id"], "flows": r["flows"], "path": r["path"],
                          "fallback_edges": r["fallback_edges"]}
           for r in db.records(f"SELECT path_id, flows, path, fallback_edges FROM {names['paths']} "
                               "WHERE flows > 0 ORDER BY flows DESC, path_id")}
    seen = set()
    for c, source in zip(COMPONENTS, path_sources):
        rows = percentiles.grouped(db, source + where, ["path_id"], quartiles=True,
                                   what="per-path latency statistics")
        for r in rows:
            if r["path_id"] in out:
                out[r["path_id"]][c] = {"count": r["count"], **{k: r[k] for k in percentiles.keys(quartiles=True)}}
                seen.add(r["path_id"])
    if window is None:
        return list(out.values())
    rows = [{**p, "flows": p["latency"]["count"]} for k, p in out.items() if k in seen]
    return sorted(rows, key=lambda p: (-p["flows"], p["path_id"]))


def component_stats(flows: DataFlows | Database) -> dict:
    """Statistics per component over the distinct segments of all data flows of
    `flows` (a search's result, `DataFlows`), like the data-flow paper's Tables II-IV: communication per
    topic, idle per node (implicit dependencies), computation per callback (with the
    callback's mean duration). Each table by decreasing mean."""
    def by_mean(source: str, by: list[str], extra: str) -> list[dict]:
        rows = percentiles.grouped(db, source, by, quartiles=True, extra=extra, what="per-component statistics")
        return sorted(rows, key=lambda r: (r["mean_ns"] is None, -(r["mean_ns"] or 0)))

    db, _names = _tables(flows)
    return {name: by_mean(*src) for name, src in sources(flows)[1].items()}
