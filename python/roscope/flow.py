"""Message flows and end-to-end latency over the execution database.

- `causal_links(db)`: direct, annotated (periodic asynchronous, partial
  synchronous) and inferred causal links between messages;
- `message_graph(db, publication_id)`: one message's flow, forward and backward;
- `data_flows(db, from_regex, to_regex)`: data flows from input to output topics
  (data-flow paper, Algorithm 1), grouped into paths, with the latency of each
  split into communication, idle and computation;
- `executor(db)`: executor states, utilization, and how long inputs waited.

The algorithms run in Rust (`crates/flow`); results are stored as tables in the
database (`causal_links`, `data_flows`, `data_flow_steps`, `paths`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from roscope import _core

CB_KINDS = {"timer": 0, "subscription": 1}
LINK_KINDS = ["direct", "periodic_async", "partial_sync", "inferred"]
STAT_COLUMNS = ("min", "mean", "std", "q25", "q50", "q75", "p99", "max")


def _col(con, sql: str) -> bytes:
    import numpy as np

    arr = con.execute(sql).fetchnumpy()
    (values,) = arr.values()
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64)).tobytes()


@dataclass
class FlowContext:
    model: _core.FlowModel
    topics: list[str]


def context(db) -> FlowContext:
    con = db.con
    topics = [r[0] for r in con.execute(
        "SELECT DISTINCT name FROM (SELECT name FROM publishers UNION ALL SELECT name FROM subscriptions) "
        "WHERE name IS NOT NULL ORDER BY name").fetchall()]
    con.execute("CREATE OR REPLACE TEMP TABLE _topic_ids AS SELECT name, (row_number() OVER (ORDER BY name)) - 1 AS tid "
                "FROM (SELECT DISTINCT name FROM (SELECT name FROM publishers UNION ALL SELECT name FROM subscriptions) "
                "WHERE name IS NOT NULL)")
    cols = {
        "cb_node": _col(con, "SELECT coalesce(node_id, -1) FROM callbacks ORDER BY callback_id"),
        "cb_kind": _col(con, "SELECT CASE kind WHEN 'timer' THEN 0 WHEN 'subscription' THEN 1 ELSE 2 END FROM callbacks ORDER BY callback_id"),
        "cb_sub": _col(con, "SELECT CASE WHEN kind = 'subscription' THEN coalesce(owner_id, -1) ELSE -1 END FROM callbacks ORDER BY callback_id"),
        "sub_topic": _col(con, "SELECT coalesce(t.tid, -1) FROM subscriptions s LEFT JOIN _topic_ids t USING (name) ORDER BY s.subscription_id"),
        "sub_node": _col(con, "SELECT coalesce(node_id, -1) FROM subscriptions ORDER BY subscription_id"),
        "pub_topic": _col(con, "SELECT coalesce(t.tid, -1) FROM publishers p LEFT JOIN _topic_ids t USING (name) ORDER BY p.publisher_id"),
        "pub_node": _col(con, "SELECT coalesce(node_id, -1) FROM publishers ORDER BY publisher_id"),
        "run_cb": _col(con, "SELECT callback_id FROM callback_runs ORDER BY run_id"),
        "run_start": _col(con, "SELECT start_ts FROM callback_runs ORDER BY run_id"),
        "run_end": _col(con, "SELECT coalesce(end_ts, -1) FROM callback_runs ORDER BY run_id"),
        "pb_publisher": _col(con, "SELECT coalesce(publisher_id, -1) FROM publications ORDER BY publication_id"),
        "pb_run": _col(con, "SELECT coalesce(run_id, -1) FROM publications ORDER BY publication_id"),
        "pb_ts": _col(con, "SELECT coalesce(rclcpp_ts, rcl_ts, rmw_ts, ts) FROM publications ORDER BY publication_id"),
        "tl_pub": _col(con, "SELECT publication_id FROM links WHERE run_id IS NOT NULL ORDER BY publication_id, run_id"),
        "tl_run": _col(con, "SELECT run_id FROM links WHERE run_id IS NOT NULL ORDER BY publication_id, run_id"),
    }
    annotations = []
    for aid, kind in con.execute("SELECT annotation_id, kind FROM annotations ORDER BY annotation_id").fetchall():
        subs = [r[0] for r in con.execute(
            "SELECT subscription_id FROM annotation_members WHERE annotation_id = ? AND subscription_id IS NOT NULL", [aid]).fetchall()]
        pubs = [r[0] for r in con.execute(
            "SELECT publisher_id FROM annotation_members WHERE annotation_id = ? AND publisher_id IS NOT NULL", [aid]).fetchall()]
        annotations.append((0 if kind == "periodic_async" else 1, subs, pubs))
    return FlowContext(_core.FlowModel(cols, annotations, len(topics)), topics)


def _store(db, name: str, columns: dict[str, bytes], names: list[str] | None = None) -> None:
    import numpy as np
    import pyarrow as pa

    arrays = {k: pa.array(np.frombuffer(v, dtype=np.int64)) for k, v in columns.items()}
    table = pa.table(arrays)
    db.con.register("_flow_src", table)
    db.con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM _flow_src')
    db.con.unregister("_flow_src")


def causal_links(db, ctx: FlowContext | None = None, infer: bool = True) -> int:
    """Computes the causal links and stores them as table `causal_links`; returns their count."""
    ctx = ctx or context(db)
    a, b, c, d = ctx.model.causal_links(infer)
    _store(db, "causal_links", {"in_publication_id": a, "in_run_id": b, "out_publication_id": c, "kind_id": d})
    db.con.execute(
        "CREATE OR REPLACE TABLE causal_links AS SELECT in_publication_id, in_run_id, out_publication_id, "
        "CASE kind_id WHEN 0 THEN 'direct' WHEN 1 THEN 'periodic_async' WHEN 2 THEN 'partial_sync' ELSE 'inferred' END AS kind "
        "FROM causal_links")
    return db.con.execute("SELECT count(*) FROM causal_links").fetchone()[0]


def message_graph(db, publication_id: int, ctx: FlowContext | None = None, forward=True, backward=True) -> dict:
    ctx = ctx or context(db)
    pubs, runs, edges = ctx.model.message_graph(int(publication_id), forward, backward)
    info = {}
    if pubs:
        for r in db.records(
            f"SELECT publication_id, topic, publish_ts FROM publications_info WHERE publication_id IN ({','.join(map(str, pubs))})"):
            info[("p", r["publication_id"])] = r
    if runs:
        for r in db.records(
            "SELECT r.run_id, r.start_ts, r.end_ts, c.node, c.kind, c.topic FROM callback_runs r JOIN callbacks_info c USING (callback_id) "
            f"WHERE r.run_id IN ({','.join(map(str, runs))})"):
            info[("r", r["run_id"])] = r
    return {"publication_id": publication_id, "publications": pubs, "runs": runs,
            "edges": [{"from": f"{a}{x}", "to": f"{b}{y}", "kind": k} for a, x, b, y, k in edges],
            "nodes": {f"{k}{i}": v for (k, i), v in info.items()}}


def _topic_mask(topics: list[str], pattern: str) -> list[bool]:
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None
    return [bool(rx.search(t)) for t in topics]


def implicit_edges(db, mode: str) -> list[tuple[int, int]] | None:
    """Implicit (intra-node) dependency edges (from callback, to callback).

    - 'all': every ordered pair of distinct callbacks of a node (the data-flow
      paper's fallback when nothing is known); returns None (computed in Rust);
    - 'annotations': only what causal-link annotations declare (periodic
      asynchronous: each input's subscription callback -> the timer callback that
      publishes; partial synchronous: between the group's subscription callbacks);
    - 'auto': annotations where a node has them, every pair elsewhere;
    - 'none': no implicit edges.
    """
    if mode == "all":
        return None
    if mode == "none":
        return []
    if mode not in ("annotations", "auto"):
        raise ValueError(f"unknown implicit-dependency mode {mode!r}")
    con = db.con
    ann = [tuple(r) for r in con.execute("""
        WITH subs AS (SELECT m.annotation_id, c.callback_id, c.node_id FROM annotation_members m
                      JOIN callbacks c ON c.kind = 'subscription' AND c.owner_id = m.subscription_id
                      WHERE m.role = 'subscription'),
        timer_cbs AS (SELECT DISTINCT m.annotation_id, r.callback_id FROM annotation_members m
                      JOIN publications pb ON pb.publisher_id = m.publisher_id
                      JOIN callback_runs r ON r.run_id = pb.run_id JOIN callbacks c ON c.callback_id = r.callback_id
                      WHERE m.role = 'publisher' AND c.kind = 'timer')
        SELECT s.callback_id, t.callback_id FROM subs s JOIN annotations a USING (annotation_id)
        JOIN timer_cbs t USING (annotation_id) WHERE a.kind = 'periodic_async'
        UNION
        SELECT s1.callback_id, s2.callback_id FROM subs s1 JOIN subs s2 USING (annotation_id)
        JOIN annotations a USING (annotation_id) WHERE a.kind = 'partial_sync' AND s1.callback_id <> s2.callback_id
        """).fetchall()]
    if mode == "annotations":
        return ann
    annotated_nodes = [r[0] for r in con.execute("""
        SELECT DISTINCT c.node_id FROM annotation_members m JOIN subscriptions s ON s.subscription_id = m.subscription_id
        JOIN callbacks c ON c.kind = 'subscription' AND c.owner_id = s.subscription_id WHERE c.node_id IS NOT NULL""").fetchall()]
    others = [tuple(r) for r in con.execute(f"""
        SELECT a.callback_id, b.callback_id FROM callbacks a JOIN callbacks b ON a.node_id = b.node_id
        WHERE a.callback_id <> b.callback_id AND a.node_id IS NOT NULL
          AND a.kind IN ('timer', 'subscription') AND b.kind IN ('timer', 'subscription')
          {"AND a.node_id NOT IN (" + ",".join(map(str, annotated_nodes)) + ")" if annotated_nodes else ""}""").fetchall()]
    return ann + others


def data_flows(db, from_re: str, to_re: str, ctx: FlowContext | None = None, *, implicit: str = "auto",
               exact_links: bool = True, max_flows_per_output: int = 10000, all_steps: bool = False) -> dict:
    """Data flows from topics matching `from_re` to topics matching `to_re`.

    `implicit`: 'all' (every pair of callbacks of a node, the data-flow paper's
    fallback), 'annotations' (only the annotated indirect links), or 'none'.
    Stores `data_flows` (one row per flow), `data_flow_steps` (the steps of one
    flow per path, or of every flow with `all_steps`), `data_flow_segments` and
    `paths`; returns a summary.
    """
    ctx = ctx or context(db)
    is_in = _topic_mask(ctx.topics, from_re)
    is_out = _topic_mask(ctx.topics, to_re)
    if not any(is_in):
        raise ValueError(f"no topic matches --from {from_re!r} (topics: {', '.join(ctx.topics[:20])}...)")
    if not any(is_out):
        raise ValueError(f"no topic matches --to {to_re!r}")
    imp = implicit_edges(db, implicit)
    flows, steps, segs, stats = ctx.model.data_flows(is_in, is_out, imp, exact_links, max_flows_per_output, all_steps)
    _store(db, "data_flows", flows)
    _store(db, "data_flow_steps", steps)
    _store(db, "data_flow_segments", segs)
    db.con.execute("""CREATE OR REPLACE TABLE data_flow_segments AS
        SELECT CASE kind WHEN 0 THEN 'communication' WHEN 1 THEN 'computation' ELSE 'idle' END AS kind,
               a, b, duration_ns FROM data_flow_segments""")
    con = db.con
    # Paths: the callback/topic sequence of each path id, readable.
    con.execute("""
        CREATE OR REPLACE TABLE paths AS
        WITH first AS (SELECT path_id, min(flow_id) AS flow_id, count(*) AS flows FROM data_flows GROUP BY path_id),
        seq AS (
            SELECT f.path_id, s.step,
                   CASE WHEN s.is_run = 1 THEN coalesce(c.node, '?') || ' ' || c.kind ||
                             CASE WHEN c.topic IS NOT NULL THEN '(' || c.topic || ')' ELSE '' END
                        ELSE '[' || coalesce(pi.topic, '?') || ']' END AS label
            FROM first f JOIN data_flow_steps s ON s.flow_id = f.flow_id
            LEFT JOIN callback_runs r ON s.is_run = 1 AND r.run_id = s.id
            LEFT JOIN callbacks_info c ON c.callback_id = r.callback_id
            LEFT JOIN publications_info pi ON s.is_run = 0 AND pi.publication_id = s.id)
        SELECT f.path_id, f.flows, string_agg(label, ' -> ' ORDER BY step) AS path
        FROM first f JOIN seq USING (path_id) GROUP BY f.path_id, f.flows""")
    summary = {"outputs": stats["outputs"], "flows": stats["flows"], "paths": con.execute("SELECT count(*) FROM paths").fetchone()[0],
               "seconds": stats["seconds"], "trees_cached": stats["trees_cached"], "cache_hits": stats["cache_hits"],
               "topics_from": [t for t, m in zip(ctx.topics, is_in) if m], "topics_to": [t for t, m in zip(ctx.topics, is_out) if m]}
    summary["us_per_flow"] = 1e6 * stats["seconds"] / stats["flows"] if stats["flows"] else None
    return summary


def _stats_sql(col: str) -> str:
    return (f"min({col}) AS min, avg({col}) AS mean, stddev_samp({col}) AS std, quantile_cont({col}, 0.25) AS q25, "
            f"quantile_cont({col}, 0.5) AS q50, quantile_cont({col}, 0.75) AS q75, quantile_cont({col}, 0.99) AS p99, "
            f"max({col}) AS max")


def path_stats(db) -> list[dict]:
    """Per path: flow count and statistics of end-to-end latency and its parts (ns)."""
    comps = ("latency_ns", "communication_ns", "idle_ns", "computation_ns")
    sel = ", ".join(
        f"{fn}({c}) AS {c[:-3]}_{k}" for c in comps for k, fn in
        (("min", "min"), ("mean", "avg"), ("std", "stddev_samp"), ("max", "max")))
    q = ", ".join(f"quantile_cont({c}, [0.25, 0.5, 0.75, 0.99]) AS {c[:-3]}_q" for c in comps)
    rows = db.records(f"""
        SELECT p.path_id, p.flows, p.path, {sel}, {q}
        FROM data_flows f JOIN paths p USING (path_id) GROUP BY ALL ORDER BY p.flows DESC, p.path_id""")
    out = []
    for r in rows:
        row = {"path_id": r["path_id"], "flows": r["flows"], "path": r["path"]}
        for c in comps:
            n = c[:-3]
            qs = r[f"{n}_q"]
            row[n] = {"min": r[f"{n}_min"], "mean": r[f"{n}_mean"], "std": r[f"{n}_std"], "q25": qs[0], "q50": qs[1],
                      "q75": qs[2], "p99": qs[3], "max": r[f"{n}_max"]}
        out.append(row)
    return out


def component_stats(db) -> dict:
    """Statistics per component over the distinct segments of all data flows, like the
    data-flow paper's Tables II-IV: communication per topic, idle per node (implicit
    dependencies), computation per callback (with the callback's mean duration)."""
    com = db.records(f"""
        SELECT pi.topic, count(*) AS n, {_stats_sql('s.duration_ns')}
        FROM data_flow_segments s JOIN publications_info pi ON pi.publication_id = s.a
        WHERE s.kind = 'communication' GROUP BY pi.topic ORDER BY mean DESC""")
    idle = db.records(f"""
        SELECT c.node, count(*) AS n, {_stats_sql('s.duration_ns')}
        FROM data_flow_segments s JOIN callback_runs r ON r.run_id = s.b JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'idle' GROUP BY c.node ORDER BY mean DESC""")
    calc = db.records(f"""
        SELECT c.node, c.kind, c.topic, c.symbol, count(*) AS n, {_stats_sql('s.duration_ns')},
               avg(r.duration_ns) AS callback_mean_ns
        FROM data_flow_segments s JOIN callback_runs r ON r.run_id = s.a JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'computation' GROUP BY ALL ORDER BY mean DESC""")
    return {"communication_by_topic": com, "idle_by_node": idle, "computation_by_callback": calc}


def executor(db) -> dict:
    """Executor states per thread and their shares; input waits per callback."""
    threads = db.records("""
        SELECT e.thread_id, t.tid, p.pid, p.procname, h.hostname,
               sum(e.end_ts - e.start_ts) AS traced_ns,
               sum(e.end_ts - e.start_ts) FILTER (WHERE e.state = 'waiting') AS waiting_ns,
               sum(e.end_ts - e.start_ts) FILTER (WHERE e.state = 'selecting') AS selecting_ns,
               sum(e.end_ts - e.start_ts) FILTER (WHERE e.state = 'executing') AS executing_ns,
               count(*) FILTER (WHERE e.state = 'executing') AS executions
        FROM executor_states e JOIN threads t USING (thread_id) JOIN processes p USING (proc_id)
        JOIN hosts h ON h.host_id = p.host_id
        GROUP BY ALL ORDER BY h.hostname, p.pid, t.tid""")
    for t in threads:
        tr = t["traced_ns"] or 0
        t["utilization"] = (t["executing_ns"] or 0) / tr if tr else None
    waits = input_waits(db)
    return {"threads": threads, "input_waits": waits}


def input_waits(db) -> list[dict]:
    """For each subscription callback (aggregated): how long its input waited between
    publication and the start of the run, and how much of that the executor thread
    spent executing other callbacks."""
    db.con.execute("""
        CREATE OR REPLACE TABLE run_input_waits AS
        SELECT l.run_id, l.publication_id, r.callback_id, r.thread_id, pi.publish_ts, r.start_ts,
               r.start_ts - pi.publish_ts AS wait_ns,
               coalesce((SELECT sum(least(o.end_ts, r.start_ts) - greatest(o.start_ts, pi.publish_ts))
                         FROM callback_runs o
                         WHERE o.thread_id = r.thread_id AND o.run_id <> r.run_id AND o.depth = 0
                           AND o.end_ts > pi.publish_ts AND o.start_ts < r.start_ts), 0) AS executor_busy_ns
        FROM links l JOIN callback_runs r ON r.run_id = l.run_id
        JOIN publications_info pi ON pi.publication_id = l.publication_id""")
    return db.records(f"""
        SELECT c.node, c.topic, c.symbol, count(*) AS n, {_stats_sql('w.wait_ns')},
               avg(w.executor_busy_ns) AS executor_busy_mean_ns, max(w.executor_busy_ns) AS executor_busy_max_ns
        FROM run_input_waits w JOIN callbacks_info c USING (callback_id)
        GROUP BY ALL ORDER BY mean DESC""")
