"""Kernel scheduling joined to callback runs and input waits (docs/analyses.md,
"Why late"), over the kernel tables of the model (python/roscope/kernel.py).

- `run_sched(db)`: per callback run, the time its thread was on a CPU, runnable
  (ready, waiting for a CPU: contention) and blocked (sleeping, I/O, a lock) during
  the run, what of the run no kernel data covers, its preemptions and CPU migrations,
  and who ran on the CPU while it waited (culprits: threads and processes);
- `wait_sched(db)`: per input wait (publication to callback start), its split into
  transport, queued behind other callbacks of the executor thread (named), the
  executor thread waiting for a CPU (wake-up latency) and the rest.

All of it is SQL in DuckDB (ASOF joins and running sums per thread: no range join
of every run with every interval, no Python per event). Nothing is written into the
database: the results are temporary tables of the connection (`run_sched`,
`run_culprits`, `wait_sched`).
"""
from __future__ import annotations

from roscope.errors import InputError

#: The model's thread of each finished run, as the kernel names it (host, tid).
_RUNS = """
    SELECT r.run_id, r.callback_id, r.thread_id, r.depth, r.start_ts, r.end_ts, p.host_id, t.tid
    FROM callback_runs r JOIN threads t USING (thread_id) JOIN processes p USING (proc_id)
    WHERE r.end_ts IS NOT NULL AND r.end_ts >= r.start_ts"""

#: Per thread with runs, its state intervals with the time spent in each state
#: before each interval (running sums): the time in a state up to instant t is
#: `<state>_before + (least(t, end_ts) - start_ts if the interval's state is it)`
#: of the last interval starting at or before t.
_STATES = """
    SELECT s.host_id, s.tid, s.state, s.cpu, s.start_ts, s.end_ts,
           sum(CASE WHEN s.state = 'running' THEN s.end_ts - s.start_ts ELSE 0 END) OVER w
             - CASE WHEN s.state = 'running' THEN s.end_ts - s.start_ts ELSE 0 END AS running_before,
           sum(CASE WHEN s.state = 'runnable' THEN s.end_ts - s.start_ts ELSE 0 END) OVER w
             - CASE WHEN s.state = 'runnable' THEN s.end_ts - s.start_ts ELSE 0 END AS runnable_before,
           sum(CASE WHEN s.state = 'blocked' THEN s.end_ts - s.start_ts ELSE 0 END) OVER w
             - CASE WHEN s.state = 'blocked' THEN s.end_ts - s.start_ts ELSE 0 END AS blocked_before
    FROM thread_states s SEMI JOIN (SELECT DISTINCT host_id, tid FROM _sched_runs) r USING (host_id, tid)
    WINDOW w AS (PARTITION BY s.host_id, s.tid ORDER BY s.start_ts ROWS UNBOUNDED PRECEDING)"""


def _upto(alias: str, state: str, t: str) -> str:
    """SQL: the time the thread spent in `state` up to instant `t`, from the ASOF-joined `alias`."""
    return (f"coalesce({alias}.{state}_before + CASE WHEN {alias}.state = '{state}' "
            f"THEN least({t}, {alias}.end_ts) - {alias}.start_ts ELSE 0 END, 0)")


_PER_RUN = f"""
    SELECT r.run_id, r.callback_id, r.thread_id, r.host_id, r.tid, r.depth, r.start_ts, r.end_ts,
           r.end_ts - r.start_ts AS duration_ns,
           {_upto('e', 'running', 'r.end_ts')} - {_upto('s', 'running', 'r.start_ts')} AS on_cpu_ns,
           {_upto('e', 'runnable', 'r.end_ts')} - {_upto('s', 'runnable', 'r.start_ts')} AS runnable_ns,
           {_upto('e', 'blocked', 'r.end_ts')} - {_upto('s', 'blocked', 'r.start_ts')} AS blocked_ns
    FROM _sched_runs r
    ASOF LEFT JOIN _sched_states s ON s.host_id = r.host_id AND s.tid = r.tid AND s.start_ts <= r.start_ts
    ASOF LEFT JOIN _sched_states e ON e.host_id = r.host_id AND e.tid = r.tid AND e.start_ts <= r.end_ts"""

#: Who ran on the CPU a thread waited for, piece by piece: each runnable interval
#: of a thread with runs against the running intervals of that CPU (numbered in
#: time order; an ASOF join finds the first and last that overlap it).
_PIECES = """
    WITH onc AS (
        SELECT host_id, cpu, tid AS by_tid, pid AS by_pid, start_ts, end_ts,
               row_number() OVER (PARTITION BY host_id, cpu ORDER BY start_ts) AS k
        FROM thread_states WHERE state = 'running'),
    rq AS (SELECT host_id, tid, cpu, start_ts, end_ts FROM _sched_states
           WHERE state = 'runnable' AND cpu IS NOT NULL AND end_ts > start_ts),
    b AS (
        SELECT q.*, coalesce(f.k, 1) AS k0, l.k AS k1 FROM rq q
        ASOF LEFT JOIN onc f ON f.host_id = q.host_id AND f.cpu = q.cpu AND f.start_ts <= q.start_ts
        ASOF LEFT JOIN onc l ON l.host_id = q.host_id AND l.cpu = q.cpu AND l.start_ts < q.end_ts),
    x AS (SELECT host_id, tid, cpu, start_ts, end_ts, unnest(range(k0, k1 + 1)) AS k FROM b WHERE k1 IS NOT NULL)
    SELECT x.host_id, x.tid, o.by_tid, o.by_pid,
           greatest(x.start_ts, o.start_ts) AS a, least(x.end_ts, o.end_ts) AS z
    FROM x JOIN onc o ON o.host_id = x.host_id AND o.cpu = x.cpu AND o.k = x.k
    WHERE least(x.end_ts, o.end_ts) > greatest(x.start_ts, o.start_ts) AND o.by_tid <> x.tid"""


def _assign(points: str, a: str, z: str) -> str:
    """SQL: rows of `points` (with host_id, tid and the span [a, z)) joined to the runs
    of their thread that overlap them, one ASOF join per nesting depth (runs of one
    depth on a thread never overlap), with `ns` the overlap."""
    return f"""
        SELECT r.run_id, p.*, least(p.{z}, r.end_ts) - greatest(p.{a}, r.start_ts) AS ns
        FROM (SELECT p.*, d.depth FROM ({points}) p CROSS JOIN (SELECT DISTINCT depth FROM _sched_runs) d) p
        ASOF JOIN _sched_runs r ON r.host_id = p.host_id AND r.tid = p.tid AND r.depth = p.depth
                                AND r.start_ts <= p.{a}
        WHERE r.end_ts > p.{a}"""


def has_kernel_data(db) -> bool:
    """Whether the database has kernel scheduling data (raises InputError for a
    database written before roscope had the kernel tables)."""
    have = {r[0] for r in db.con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_name IN ('thread_states', 'kernel_threads')"
    ).fetchall()}
    if len(have) < 2:
        raise InputError(f"{db.path}: this database has no kernel scheduling tables (written by an older roscope); "
                         "load the trace again")
    return db.con.execute("SELECT count(*) > 0 FROM thread_states").fetchall()[0][0]


def _temp(db, name: str, sql: str) -> None:
    db.con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS {sql}')


def run_sched(db):
    """Per finished callback run (temporary table `run_sched`, returned as a DuckDB
    relation): `on_cpu_ns`, `runnable_ns`, `blocked_ns`, `unknown_ns` (the part of
    the run no state interval of its thread covers), `preemptions`, `migrations`
    (counted within the run), and `culprits`: the threads that ran on the CPU while it
    was runnable, most time first (tid, pid, name, procname, ns). The per-culprit rows
    are the temporary table `run_culprits` (run_id, host_id, by_tid, by_pid, ns)."""
    has_kernel_data(db)
    _temp(db, "_sched_runs", _RUNS)
    _temp(db, "_sched_states", _STATES)
    _temp(db, "run_culprits", f"""
        SELECT run_id, host_id, by_tid, any_value(by_pid) AS by_pid, sum(ns) AS ns
        FROM ({_assign(_PIECES, 'a', 'z')}) WHERE ns > 0 GROUP BY run_id, host_id, by_tid""")
    _temp(db, "run_sched", f"""
        WITH base AS ({_PER_RUN}),
        pre AS (SELECT run_id, count(*) AS n FROM ({_assign(
            "SELECT host_id, tid, ts, ts AS ts2 FROM preemptions", 'ts', 'ts2')}) GROUP BY run_id),
        mig AS (SELECT run_id, count(*) AS n FROM ({_assign(
            "SELECT host_id, tid, ts, ts AS ts2 FROM migrations", 'ts', 'ts2')}) GROUP BY run_id),
        cul AS (
            SELECT c.run_id, list({{'tid': c.by_tid, 'pid': c.by_pid, 'name': k.name, 'procname': k.procname,
                                    'ns': c.ns}} ORDER BY c.ns DESC, c.by_tid) AS culprits
            FROM run_culprits c LEFT JOIN kernel_threads k ON k.host_id = c.host_id AND k.tid = c.by_tid
            GROUP BY c.run_id)
        SELECT b.*, b.duration_ns - b.on_cpu_ns - b.runnable_ns - b.blocked_ns AS unknown_ns,
               coalesce(pre.n, 0) AS preemptions, coalesce(mig.n, 0) AS migrations,
               coalesce(cul.culprits, []) AS culprits
        FROM base b LEFT JOIN pre USING (run_id) LEFT JOIN mig USING (run_id) LEFT JOIN cul USING (run_id)""")
    return db.con.table("run_sched")


#: A callback's readable name, the text `--callback RE` is matched against.
_LABEL = ("concat_ws(' ', coalesce(c.node, c.procname), coalesce(c.topic, CASE WHEN c.period_ns IS NOT NULL "
          "THEN 'timer ' || CAST(c.period_ns / 1e6 AS VARCHAR) || ' ms' END, c.kind), c.symbol)")


def _check_regex(pattern: str | None) -> None:
    import re

    if pattern is None:
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InputError(f"--callback {pattern!r}: not a regular expression ({exc})") from None


def worst_runs(db, callback: str | None = None, top: int = 10) -> dict:
    """The `top` longest finished callback runs (of the callbacks whose name, `node
    topic-or-timer symbol`, matches the regular expression `callback`), each with its
    scheduling breakdown (`run_sched`) when the database has kernel data. Returns
    {"kernel": bool, "runs": [...]}; durations in ns."""
    _check_regex(callback)
    kernel = has_kernel_data(db)
    where = "WHERE regexp_matches(label, ?)" if callback is not None else ""
    params = [callback] if callback is not None else []
    src = "run_sched" if kernel else "callback_runs"
    if kernel:
        run_sched(db)
    rows = db.records(f"""
        WITH r AS (
            SELECT x.*, {_LABEL} AS label, c.node, c.topic, c.symbol, c.pid, c.procname, c.hostname
            FROM {src} x JOIN callbacks_info c USING (callback_id)
            WHERE x.end_ts IS NOT NULL)
        SELECT * FROM r {where} ORDER BY duration_ns DESC, run_id LIMIT {int(top)}""", params)
    for r in rows:
        r.pop("host_id", None)
        if kernel:
            r["culprits"] = [dict(c) for c in (r["culprits"] if r["culprits"] is not None else [])]
            procs: dict = {}
            for c in r["culprits"]:
                p = procs.setdefault(c["pid"], {"pid": c["pid"], "procname": c["procname"], "ns": 0})
                p["ns"] += c["ns"]
            r["culprit_processes"] = sorted(procs.values(), key=lambda p: -p["ns"])
            r["explanation"] = explain(r)
    return {"kernel": kernel, "runs": rows}


def _who(c: dict) -> str:
    name = c.get("name") or "?"
    proc = c.get("procname")
    if c.get("pid") is not None and c.get("pid") != c.get("tid"):
        return f"{name} (thread {c['tid']} of {proc or '?'} [{c['pid']}])"
    return f"{name} [{c['tid']}]"


def _ms(ns) -> str:
    return f"{(ns or 0) / 1e6:.3f} ms"


def explain(r: dict) -> str:
    """One run's breakdown in plain words."""
    dur = r["duration_ns"] or 0
    parts = [f"ran {_ms(dur)}: on a CPU {_ms(r['on_cpu_ns'])}"]
    rq = r.get("runnable_ns") or 0
    if rq > 0:
        cul = r.get("culprits") or []
        who = ", ".join(f"{_who(c)} {_ms(c['ns'])}" for c in cul[:3])
        parts.append(f"waiting for a CPU {_ms(rq)}" + (f", which ran {who}" if who else ""))
    else:
        parts.append("never waiting for a CPU")
    if (r.get("blocked_ns") or 0) > 0:
        parts.append(f"blocked {_ms(r['blocked_ns'])} (sleeping, I/O or a lock)")
    if (r.get("unknown_ns") or 0) > 0:
        parts.append(f"{_ms(r['unknown_ns'])} not covered by the kernel data")
    n, m = r.get("preemptions") or 0, r.get("migrations") or 0
    parts.append(f"preempted {n} time{'s' if n != 1 else ''}, migrated {m} time{'s' if m != 1 else ''}")
    return "; ".join(parts)
