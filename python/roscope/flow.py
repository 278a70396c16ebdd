"""Message flows and end-to-end latency over the execution database (docs/analyses.md).

- `causal_links(db)`: direct, annotated (periodic asynchronous, partial
  synchronous) and inferred causal links between messages;
- `message_graph(db, publication_id)`: one message's flow, forward and backward;
- `data_flows(db, from_regex, to_regex)`: data flows from input to output topics
  (data-flow paper, Algorithm 1), grouped into paths, with the latency of each
  split into communication, idle and computation; `path_stats(db)` and
  `component_stats(db)` summarize them.

The algorithms run in Rust (`crates/flow`), fed with the model's tables as Arrow
data. Results are returned (pyarrow Tables) and made visible to SQL on the
database's connection under their table names (`causal_links`, `data_flows`,
`data_flow_steps`, `data_flow_segments`, `paths`) without writing into the
database; with `store=True` they are stored as tables in it (the database must be
open for writing: `roscope.open(path, read_only=False)`).

The executor analyses moved to `roscope.executor`.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from roscope import _core, statistics
from roscope.errors import InputError
from roscope.results import publish
from roscope.trace import table_from_core

#: Intra-node dependency modes of `data_flows(implicit=...)`.
IMPLICIT_MODES = ("auto", "all", "annotations", "none")
#: The latency parts of a data flow, columns of `data_flows` (ns).
COMPONENTS = ("latency", "communication", "idle", "computation")


@dataclass
class FlowContext:
    """The flow's model, read once from a database; pass it to several analyses."""

    model: _core.FlowModel

    @property
    def topics(self) -> list[str]:
        return self.model.topics


def context(db) -> FlowContext:
    """Reads the tables and columns the flow needs (`_core.FlowModel.inputs()`) out of
    the database as Arrow data, and builds the flow's model from them in Rust."""
    def read(name: str, cols: list[str]):
        # An Arrow stream of the columns; the core reads it to the end before the next.
        return db.con.table(name).select(*cols).arrow()

    return FlowContext(_core.FlowModel(read))


def causal_links(db, ctx: FlowContext | None = None, infer: bool = True, *, store: bool = False):
    """Every causal link: a pyarrow Table (in_publication_id, in_run_id,
    out_publication_id, kind), also visible to SQL as `causal_links`."""
    ctx = ctx or context(db)
    t = table_from_core(ctx.model.causal_links(infer))
    publish(db, {"causal_links": t}, store)
    return t


def message_graph(db, publication_id: int, ctx: FlowContext | None = None, forward=True, backward=True) -> dict:
    """One message's flow graph: publications and callback runs reached from
    `publication_id` forward and backward, the edges between them ("p<id>" /
    "r<id>"), and what each node is."""
    ctx = ctx or context(db)
    try:
        pubs, runs, edges = ctx.model.message_graph(int(publication_id), forward, backward)
    except ValueError as exc:
        raise InputError(f"--message {publication_id}: {exc}") from None
    info = {}
    for r in db.records("SELECT publication_id, topic, publish_ts FROM publications_info "
                        "WHERE publication_id IN (SELECT unnest(?::BIGINT[]))", [pubs]):
        info[f"p{r['publication_id']}"] = r
    for r in db.records("SELECT r.run_id, r.start_ts, r.end_ts, c.node, c.kind, c.topic FROM callback_runs r "
                        "JOIN callbacks_info c USING (callback_id) WHERE r.run_id IN (SELECT unnest(?::BIGINT[]))", [runs]):
        info[f"r{r['run_id']}"] = r
    return {"publication_id": publication_id, "publications": pubs, "runs": runs,
            "edges": [{"from": f"{a}{x}", "to": f"{b}{y}", "kind": k} for a, x, b, y, k in edges],
            "nodes": info}


def _topic_mask(topics: list[str], pattern: str, option: str) -> list[bool]:
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{option}: bad regular expression {pattern!r}: {exc}") from None
    return [bool(rx.search(t)) for t in topics]


@dataclass
class DataFlows(Mapping):
    """The result of `data_flows`: the summary (read it as a dict: `res["flows"]`)
    and the result tables (pyarrow Tables)."""

    summary: dict
    #: One row per flow: flow_id, path_id, output_publication_id, input_publication_id,
    #: first_run_id, start_ts, end_ts, latency_ns, communication_ns, idle_ns, computation_ns.
    data_flows: object = field(repr=False)
    #: flow_id, step, is_run, id: the steps of the first flow of each path (or of all).
    data_flow_steps: object = field(repr=False)
    #: kind, a, b, duration_ns: each distinct segment of all flows once.
    data_flow_segments: object = field(repr=False)
    #: path_id, flows, path: each path's callback/topic sequence, readable.
    paths: object = field(repr=False)

    def tables(self) -> dict:
        return {"data_flows": self.data_flows, "data_flow_steps": self.data_flow_steps,
                "data_flow_segments": self.data_flow_segments, "paths": self.paths}

    def __getitem__(self, key: str):
        return self.summary[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.summary)

    def __len__(self) -> int:
        return len(self.summary)


def data_flows(db, from_re: str, to_re: str, ctx: FlowContext | None = None, *, implicit: str = "auto",
               exact_links: bool = True, max_flows_per_output: int = 10000, all_steps: bool = False,
               store: bool = False) -> DataFlows:
    """Data flows from topics matching `from_re` to topics matching `to_re` (regexes,
    searched anywhere in the topic name).

    `implicit`: intra-node dependencies: 'auto' (annotations where a node has them,
    every pair of its timer and subscription callbacks elsewhere), 'all' (every pair
    of callbacks of a node, the data-flow paper's fallback), 'annotations' (only the
    annotated links), or 'none'. `exact_links=False` ignores transport links and
    takes the newest publication on the topic (the paper's D_cp). Returns a
    `DataFlows`; its tables are visible to SQL on `db` (`data_flows`,
    `data_flow_steps`, `data_flow_segments`, `paths`), stored in it with `store`.
    """
    if implicit not in IMPLICIT_MODES:
        raise InputError(f"unknown implicit-dependency mode {implicit!r} (one of {', '.join(IMPLICIT_MODES)})")
    ctx = ctx or context(db)
    topics = ctx.topics
    is_in = _topic_mask(topics, from_re, "--from")
    is_out = _topic_mask(topics, to_re, "--to")
    shown = ", ".join(topics[:20]) + (", ..." if len(topics) > 20 else "")
    # A regex that matches none of the topics is a mistake; a trace without topics
    # (nothing ROS-related) simply has no data flows.
    if topics and not any(is_in):
        raise InputError(f"no topic matches --from {from_re!r} (topics: {shown})")
    if topics and not any(is_out):
        raise InputError(f"no topic matches --to {to_re!r} (topics: {shown})")
    raw, stats = ctx.model.data_flows(is_in, is_out, implicit, exact_links, max_flows_per_output, all_steps)
    tables = {name: table_from_core(t) for name, t in raw.items()}
    publish(db, tables, store)
    compute_ns = int(stats["seconds"] * 1e9)
    summary = {
        "outputs": stats["outputs"], "flows": stats["flows"], "paths": tables["paths"].num_rows,
        "compute_ns": compute_ns, "ns_per_flow": compute_ns / stats["flows"] if stats["flows"] else None,
        "trees_cached": stats["trees_cached"], "cache_hits": stats["cache_hits"], "cache_evicted": stats["cache_evicted"],
        "topics_from": [t for t, m in zip(topics, is_in) if m], "topics_to": [t for t, m in zip(topics, is_out) if m],
    }
    return DataFlows(summary, **tables)


def path_stats(db) -> list[dict]:
    """Per path (of the last `data_flows`): flow count, and for the end-to-end latency
    and each of its parts the standard statistics (count, min_ns ... max_ns, with
    quartiles)."""
    sel = ", ".join(statistics.aggregates(f"f.{c}_ns", prefix=f"{c}_", count=f"{c}_count", quartiles=True)
                    for c in COMPONENTS)
    rows = db.records(f"""
        SELECT p.path_id, p.flows, p.path, {sel}
        FROM data_flows f JOIN paths p USING (path_id) GROUP BY ALL ORDER BY p.flows DESC, p.path_id""")
    out = []
    for r in rows:
        row = {"path_id": r["path_id"], "flows": r["flows"], "path": r["path"]}
        for c in COMPONENTS:
            row[c] = {"count": r[f"{c}_count"], **{k: r[f"{c}_{k}"] for k in statistics.keys(quartiles=True)}}
        out.append(row)
    return out


def component_stats(db) -> dict:
    """Statistics per component over the distinct segments of all data flows (of the
    last `data_flows`), like the data-flow paper's Tables II-IV: communication per
    topic, idle per node (implicit dependencies), computation per callback (with the
    callback's mean duration)."""
    agg = statistics.aggregates("s.duration_ns", quartiles=True)
    com = db.records(f"""
        SELECT pi.topic, {agg}
        FROM data_flow_segments s JOIN publications_info pi ON pi.publication_id = s.a
        WHERE s.kind = 'communication' GROUP BY pi.topic ORDER BY mean_ns DESC""")
    idle = db.records(f"""
        SELECT c.node, {agg}
        FROM data_flow_segments s JOIN callback_runs r ON r.run_id = s.b JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'idle' GROUP BY c.node ORDER BY mean_ns DESC""")
    calc = db.records(f"""
        SELECT c.node, c.kind, c.topic, c.symbol, {agg}, avg(r.duration_ns) AS callback_mean_ns
        FROM data_flow_segments s JOIN callback_runs r ON r.run_id = s.a JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'computation' GROUP BY ALL ORDER BY mean_ns DESC""")
    return {"communication_by_topic": com, "idle_by_node": idle, "computation_by_callback": calc}


def executor(db, *, store: bool = False) -> dict:
    """Executor states and input waits: see `roscope.executor.executor`."""
    from roscope import executor as _executor

    return _executor.executor(db, store=store)


def input_waits(db, *, store: bool = False) -> list[dict]:
    """Input waits per callback: see `roscope.executor.input_waits`."""
    from roscope import executor as _executor

    return _executor.input_waits(db, store=store)
