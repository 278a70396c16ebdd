"""Executor analyses over the execution database (docs/analyses.md).

- `threads(db)`: per executor thread, the time in each executor state (waiting for
  work, selecting the next ready handle, executing a callback) and its utilization;
- `input_waits(db)`: per subscription callback, how long its input messages waited
  from publication to the start of the callback run they fed, and how much of that
  wait the executor thread spent running other callbacks (executor busy);
- `executor_callbacks(db)`: per thread that ran callbacks (an executor's thread:
  with executor events from Humble on, or the thread a Galactic executor or a ROS 1
  spinner ran them on), the callbacks it ran, each with its runs and busy time;
- `executor_objects(db)`: per executor object (CARET's executor structure events:
  construct_executor, add_callback_group, callback_group_add_*; ros2_tracing has
  none), its callback groups and each group's members with their callbacks' runs and
  busy time;
- `executor(db)`: all of them.

Without CARET's executor structure events an executor is shown only as the threads
it ran on.

Nothing is written into the database unless `store=True`: the per-message waits are
a `results.Result` (`run_input_waits(db)`), shown to SQL on the database's
connection as `run_input_waits` (a view), or stored as a table of that name with
`store`.
"""
from __future__ import annotations

from roscope import percentiles
from roscope.database import Database
from roscope.results import Result, publish_query

#: Per delivered message (transport link to a callback run): the wait from
#: publication to callback start, and the part of it during which the run's thread
#: executed other (outermost) callback runs: the sum, over the thread's other runs of
#: depth 0 with an end, with end_ts > publish_ts and start_ts < the run's start, of
#: least(end_ts, start) - greatest(start_ts, publish_ts). For a negative wait (publish
#: after start) that is (start - publish_ts) per run enclosing [start, publish_ts].
#:
#: Computed in one pass per thread instead of per message: the outermost runs of a
#: thread (positive length, ordered by start) do not overlap, so with B(t) the busy
#: time of the thread up to instant t (the runs before the last run starting at or
#: before t, found by an ASOF join, plus that run clamped to t), the busy time of a
#: wait is B(start) - B(publish_ts); for a negative wait, only the last run starting
#: before start can enclose [start, publish_ts]. The run itself adds nothing (it starts
#: at start); runs of length 0 or without end add nothing. A thread whose outermost runs overlap or end before
#: they start (roscope's model never makes one) gets the direct per-message sum.
RUN_INPUT_WAITS_SQL = """
    WITH waits AS (
        SELECT l.run_id, l.publication_id, r.callback_id, r.thread_id, pi.publish_ts, r.start_ts,
               r.start_ts - pi.publish_ts AS wait_ns
        FROM links l JOIN callback_runs r ON r.run_id = l.run_id
        JOIN publications_info pi ON pi.publication_id = l.publication_id),
    outer_runs AS (
        SELECT thread_id, start_ts, end_ts,
               sum(end_ts - start_ts) OVER (PARTITION BY thread_id ORDER BY start_ts, end_ts ROWS UNBOUNDED PRECEDING)
                 - (end_ts - start_ts) AS busy_before_ns
        FROM callback_runs WHERE depth = 0 AND end_ts > start_ts),
    tangled AS (
        SELECT DISTINCT thread_id FROM (
            SELECT thread_id, end_ts < start_ts
                   OR start_ts < lag(end_ts) OVER (PARTITION BY thread_id ORDER BY start_ts, end_ts) AS bad
            FROM callback_runs WHERE depth = 0 AND end_ts <> start_ts)
        WHERE bad)
    SELECT w.*, CAST(CASE
               WHEN w.publish_ts <= w.start_ts THEN
                   coalesce(s.busy_before_ns + least(w.start_ts - s.start_ts, s.end_ts - s.start_ts), 0)
                   - coalesce(p.busy_before_ns + least(w.publish_ts - p.start_ts, p.end_ts - p.start_ts), 0)
               WHEN s.start_ts < w.start_ts AND s.end_ts > w.publish_ts THEN w.wait_ns
               ELSE 0 END AS HUGEINT) AS executor_busy_ns
    FROM waits w
    ASOF LEFT JOIN outer_runs s ON s.thread_id = w.thread_id AND s.start_ts <= w.start_ts
    ASOF LEFT JOIN outer_runs p ON p.thread_id = w.thread_id AND p.start_ts <= w.publish_ts
    WHERE NOT EXISTS (SELECT 1 FROM tangled t WHERE t.thread_id = w.thread_id)
    UNION ALL
    SELECT w.*, coalesce((SELECT sum(least(o.end_ts, w.start_ts) - greatest(o.start_ts, w.publish_ts))
                          FROM callback_runs o
                          WHERE o.thread_id = w.thread_id AND o.run_id <> w.run_id AND o.depth = 0
                            AND o.end_ts > w.publish_ts AND o.start_ts < w.start_ts), 0) AS executor_busy_ns
    FROM waits w WHERE EXISTS (SELECT 1 FROM tangled t WHERE t.thread_id = w.thread_id)"""


def threads(db: Database) -> list[dict]:
    """Per thread with executor states: traced time in each state (ns), executions
    (callbacks executed) and utilization (executing share of the traced time)."""
    rows = db.records("""
        SELECT e.thread_id, t.tid, p.pid, p.procname, h.hostname,
               sum(e.end_ts - e.start_ts) AS traced_ns,
               sum(e.end_ts - e.start_ts) FILTER (WHERE e.state = 'waiting') AS waiting_ns,
               sum(e.end_ts - e.start_ts) FILTER (WHERE e.state = 'selecting') AS selecting_ns,
               sum(e.end_ts - e.start_ts) FILTER (WHERE e.state = 'executing') AS executing_ns,
               count(*) FILTER (WHERE e.state = 'executing') AS executions
        FROM executor_states e JOIN threads t USING (thread_id) JOIN processes p USING (proc_id)
        JOIN hosts h ON h.host_id = p.host_id
        GROUP BY ALL ORDER BY h.hostname, p.pid, t.tid""")
    for t in rows:
        tr = t["traced_ns"] or 0
        t["utilization"] = (t["executing_ns"] or 0) / tr if tr else None
    return rows


def run_input_waits(db: Database, *, store: bool = False) -> Result:
    """The per-message waits (see `RUN_INPUT_WAITS_SQL`), a `results.Result` (a
    temporary view; a table of the database with `store`), shown to SQL as
    `run_input_waits`."""
    return publish_query(db, "run_input_waits", RUN_INPUT_WAITS_SQL, store)


def input_waits(db: Database, *, store: bool = False) -> list[dict]:
    """Per subscription callback: count and statistics of its input waits (ns, from
    publication to callback start), and the mean and max time the executor thread was
    busy with other callbacks during a wait."""
    waits = run_input_waits(db, store=store)
    return db.records(f"""
        SELECT c.node, c.topic, c.symbol, {percentiles.aggregates('w.wait_ns', quartiles=True)},
               avg(w.executor_busy_ns) AS executor_busy_mean_ns, max(w.executor_busy_ns) AS executor_busy_max_ns
        FROM {waits.sql} w JOIN callbacks_info c USING (callback_id)
        GROUP BY ALL ORDER BY mean_ns DESC""")


def executor_callbacks(db: Database) -> list[dict]:
    """Per thread that ran callbacks: {thread_id, tid, pid, procname, hostname,
    executor_events (it has executor states), runs, busy_ns (outermost runs' time),
    callbacks: [{callback_id, node, kind, topic, period_ns, symbol, runs, busy_ns,
    share (of the thread's busy time)}]}, threads by host, pid, tid; a thread's
    callbacks by busy time. Nested runs (a callback run inside another on the same
    thread) count as runs of their callback; busy time is the outermost runs'."""
    rows = db.records("""
        WITH per AS (
            SELECT r.thread_id, r.callback_id, count(*) AS runs,
                   coalesce(sum(r.end_ts - r.start_ts) FILTER (WHERE r.depth = 0), 0) AS busy_ns
            FROM callback_runs r WHERE r.end_ts IS NOT NULL GROUP BY ALL)
        SELECT per.*, t.tid, p.pid, p.procname, h.hostname, c.node, c.kind, c.topic, c.period_ns, c.symbol,
               EXISTS (SELECT 1 FROM executor_states e WHERE e.thread_id = per.thread_id) AS executor_events
        FROM per JOIN threads t USING (thread_id) JOIN processes p USING (proc_id) JOIN hosts h ON h.host_id = p.host_id
        JOIN callbacks_info c USING (callback_id)
        ORDER BY h.hostname, p.pid, t.tid, per.busy_ns DESC, per.callback_id""")
    out: dict[int, dict] = {}
    for r in rows:
        t = out.setdefault(r["thread_id"], {k: r[k] for k in ("thread_id", "tid", "pid", "procname", "hostname",
                                                             "executor_events")} | {"runs": 0, "busy_ns": 0,
                                                                                    "callbacks": []})
        t["runs"] += r["runs"]
        t["busy_ns"] += int(r["busy_ns"])
        t["callbacks"].append({k: r[k] for k in ("callback_id", "node", "kind", "topic", "period_ns", "symbol", "runs",
                                                 "busy_ns")})
    for t in out.values():
        for c in t["callbacks"]:
            c["busy_ns"] = int(c["busy_ns"])
            c["share"] = c["busy_ns"] / t["busy_ns"] if t["busy_ns"] else None
    return list(out.values())


#: One row per callback group member (a group without members: one row of NULLs),
#: with its object's name and its callback's finished runs, busy time (outermost
#: runs) and the threads they ran on.
GROUP_MEMBERS_SQL = """
    WITH per AS (
        SELECT r.callback_id, count(*) AS runs,
               coalesce(sum(r.end_ts - r.start_ts) FILTER (WHERE r.depth = 0), 0) AS busy_ns,
               list(DISTINCT t.tid ORDER BY t.tid) AS tids
        FROM callback_runs r JOIN threads t USING (thread_id) WHERE r.end_ts IS NOT NULL GROUP BY ALL)
    SELECT g.group_id, g.executor_id, g.proc_id, g.handle AS group_handle, g.type AS group_type,
           m.kind, m.handle, m.owner_id, m.callback_id,
           coalesce(c.node, CASE m.kind WHEN 'subscription' THEN sn.name WHEN 'service' THEN vn.name
                                        WHEN 'client' THEN cn.name WHEN 'timer' THEN tn.name END) AS node,
           CASE m.kind WHEN 'subscription' THEN s.name WHEN 'service' THEN v.name WHEN 'client' THEN cl.name END AS topic,
           CASE m.kind WHEN 'timer' THEN tm.period_ns END AS period_ns, c.symbol,
           coalesce(per.runs, 0) AS runs, coalesce(per.busy_ns, 0) AS busy_ns, coalesce(per.tids, []) AS tids
    FROM callback_groups g LEFT JOIN callback_group_members m USING (group_id)
    LEFT JOIN callbacks_info c ON c.callback_id = m.callback_id
    LEFT JOIN per ON per.callback_id = m.callback_id
    LEFT JOIN subscriptions s ON m.kind = 'subscription' AND s.subscription_id = m.owner_id
    LEFT JOIN services v ON m.kind = 'service' AND v.service_id = m.owner_id
    LEFT JOIN clients cl ON m.kind = 'client' AND cl.client_id = m.owner_id
    LEFT JOIN timers tm ON m.kind = 'timer' AND tm.timer_id = m.owner_id
    LEFT JOIN nodes sn ON sn.node_id = s.node_id LEFT JOIN nodes vn ON vn.node_id = v.node_id
    LEFT JOIN nodes cn ON cn.node_id = cl.node_id LEFT JOIN nodes tn ON tn.node_id = tm.node_id
    ORDER BY g.group_id, per.busy_ns DESC NULLS LAST, m.kind, m.handle"""

_MEMBER_KEYS = ("kind", "handle", "owner_id", "callback_id", "node", "topic", "period_ns", "symbol", "runs", "busy_ns")


def executor_objects(db: Database) -> list[dict]:
    """Per executor object (CARET's executor structure events; `[]` without them):
    {executor_id, pid, procname, hostname, handle, collector_handle, type, init_ts,
    tids (threads its callbacks ran on), runs, busy_ns, groups: [{group_id, handle,
    type, runs, busy_ns, members: [{kind, handle, owner_id, callback_id, node, topic,
    period_ns, symbol, runs, busy_ns, tids}]}]}, by host, pid and executor; groups
    whose executor is not in the trace come last, as an executor with `executor_id`
    None. A member's runs and busy time are its callback's (finished runs; busy:
    outermost runs). A dataset whose runs predate these tables has none."""
    if not {"executors", "callback_groups", "callback_group_members"} <= set(db.tables()):
        return []
    execs = db.records("""
        SELECT e.executor_id, e.proc_id, p.pid, p.procname, h.hostname, e.handle, e.collector_handle, e.type, e.init_ts
        FROM executors e JOIN processes p USING (proc_id) JOIN hosts h ON h.host_id = p.host_id
        ORDER BY h.hostname, p.pid, e.executor_id""")
    out = {e["executor_id"]: {**e, "tids": set(), "runs": 0, "busy_ns": 0, "groups": []} for e in execs}
    groups: dict[int, dict] = {}
    for r in db.records(GROUP_MEMBERS_SQL):
        x = out.get(r["executor_id"])
        if x is None:
            x = out.setdefault(None, {"executor_id": None, "proc_id": None, "pid": None, "procname": None,
                                      "hostname": None, "handle": None, "collector_handle": None, "type": None,
                                      "init_ts": None, "tids": set(), "runs": 0, "busy_ns": 0, "groups": []})
        g = groups.get(r["group_id"])
        if g is None:
            g = groups[r["group_id"]] = {"group_id": r["group_id"], "handle": r["group_handle"],
                                         "type": r["group_type"], "runs": 0, "busy_ns": 0, "members": []}
            x["groups"].append(g)
        if r["kind"] is None:
            continue
        m = {k: r[k] for k in _MEMBER_KEYS} | {"busy_ns": int(r["busy_ns"]), "tids": list(r["tids"])}
        g["members"].append(m)
        for o in (g, x):
            o["runs"] += m["runs"]
            o["busy_ns"] += m["busy_ns"]
        x["tids"].update(m["tids"])
    for x in out.values():
        x["tids"] = sorted(x["tids"])
    return list(out.values())


def executor(db: Database, *, store: bool = False) -> dict:
    """Executor states per thread, the callbacks each executor thread ran, the executor objects with their
    callback groups (where the trace has them), and input waits per callback."""
    return {"threads": threads(db), "executors": executor_callbacks(db), "executor_objects": executor_objects(db),
            "input_waits": input_waits(db, store=store)}
