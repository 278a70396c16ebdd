"""Executor analyses over the execution database (docs/analyses.md).

- `threads(db)`: per executor thread, the time in each executor state (waiting for
  work, selecting the next ready handle, executing a callback) and its utilization;
- `input_waits(db)`: per subscription callback, how long its input messages waited
  from publication to the start of the callback run they fed, and how much of that
  wait the executor thread spent running other callbacks (executor busy);
- `executor(db)`: both.

Nothing is written into the database unless `store=True`: the per-message waits are
visible to SQL on the database's connection as `run_input_waits` (a view), or
stored as a table of that name with `store`.
"""
from __future__ import annotations

from roscope import statistics
from roscope.results import publish_query

#: Per delivered message (transport link to a callback run): the wait from
#: publication to callback start, and the part of it during which the run's thread
#: executed other (outermost) callback runs.
RUN_INPUT_WAITS_SQL = """
    SELECT l.run_id, l.publication_id, r.callback_id, r.thread_id, pi.publish_ts, r.start_ts,
           r.start_ts - pi.publish_ts AS wait_ns,
           coalesce((SELECT sum(least(o.end_ts, r.start_ts) - greatest(o.start_ts, pi.publish_ts))
                     FROM callback_runs o
                     WHERE o.thread_id = r.thread_id AND o.run_id <> r.run_id AND o.depth = 0
                       AND o.end_ts > pi.publish_ts AND o.start_ts < r.start_ts), 0) AS executor_busy_ns
    FROM links l JOIN callback_runs r ON r.run_id = l.run_id
    JOIN publications_info pi ON pi.publication_id = l.publication_id"""


def threads(db) -> list[dict]:
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


def run_input_waits(db, *, store: bool = False):
    """The per-message waits (see `RUN_INPUT_WAITS_SQL`), visible to SQL as
    `run_input_waits` (a temporary view; a table of the database with `store`);
    returns it as a DuckDB relation."""
    publish_query(db, "run_input_waits", RUN_INPUT_WAITS_SQL, store)
    return db.con.table("run_input_waits")


def input_waits(db, *, store: bool = False) -> list[dict]:
    """Per subscription callback: count and statistics of its input waits (ns, from
    publication to callback start), and the mean and max time the executor thread was
    busy with other callbacks during a wait."""
    run_input_waits(db, store=store)
    return db.records(f"""
        SELECT c.node, c.topic, c.symbol, {statistics.aggregates('w.wait_ns', quartiles=True)},
               avg(w.executor_busy_ns) AS executor_busy_mean_ns, max(w.executor_busy_ns) AS executor_busy_max_ns
        FROM run_input_waits w JOIN callbacks_info c USING (callback_id)
        GROUP BY ALL ORDER BY mean_ns DESC""")


def executor(db, *, store: bool = False) -> dict:
    """Executor states per thread and input waits per callback."""
    return {"threads": threads(db), "input_waits": input_waits(db, store=store)}
