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
database: the results are values (`RunSched`, `results.Result`: temporary tables of
the connection under private names), shown to SQL as `run_sched`, `run_culprits`
and `wait_sched`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from roscope import selector
from roscope.database import Database
from roscope.errors import InputError
from roscope.flow import FlowRequest, data_flows
from roscope.results import Result, show, temp_table
from roscope.selector import CALLBACK_LABEL

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
    FROM thread_states s SEMI JOIN (SELECT DISTINCT host_id, tid FROM {runs}) r USING (host_id, tid)
    WINDOW w AS (PARTITION BY s.host_id, s.tid ORDER BY s.start_ts ROWS UNBOUNDED PRECEDING)"""


def _upto(alias: str, state: str, t: str) -> str:
    """SQL: the time the thread spent in `state` up to instant `t`, from the ASOF-joined `alias`."""
    return (f"coalesce({alias}.{state}_before + CASE WHEN {alias}.state = '{state}' "
            f"THEN least({t}, {alias}.end_ts) - {alias}.start_ts ELSE 0 END, 0)")


def _per_run(runs: str, states: str) -> str:
    """SQL: per run of table `runs`, its time in each state (`_STATES`' table `states`)."""
    return f"""
    SELECT r.run_id, r.callback_id, r.thread_id, r.host_id, r.tid, r.depth, r.start_ts, r.end_ts,
           r.end_ts - r.start_ts AS duration_ns,
           {_upto('e', 'running', 'r.end_ts')} - {_upto('s', 'running', 'r.start_ts')} AS on_cpu_ns,
           {_upto('e', 'runnable', 'r.end_ts')} - {_upto('s', 'runnable', 'r.start_ts')} AS runnable_ns,
           {_upto('e', 'blocked', 'r.end_ts')} - {_upto('s', 'blocked', 'r.start_ts')} AS blocked_ns
    FROM {runs} r
    ASOF LEFT JOIN {states} s ON s.host_id = r.host_id AND s.tid = r.tid AND s.start_ts <= r.start_ts
    ASOF LEFT JOIN {states} e ON e.host_id = r.host_id AND e.tid = r.tid AND e.start_ts <= r.end_ts"""

#: Who ran on the CPU a thread waited for, piece by piece: each runnable interval
#: of a thread with runs against the running intervals of that CPU (numbered in
#: time order; an ASOF join finds the first and last that overlap it), with the
#: names in force then: the running interval's (`by_name`) and its process's main
#: thread's (`by_procname`: the name of the thread tid = pid at the piece's start).
_PIECES = """
    WITH onc AS (
        SELECT host_id, cpu, tid AS by_tid, pid AS by_pid, name AS by_name, start_ts, end_ts,
               row_number() OVER (PARTITION BY host_id, cpu ORDER BY start_ts) AS k
        FROM thread_states WHERE state = 'running'),
    rq AS (SELECT host_id, tid, cpu, start_ts, end_ts FROM {states}
           WHERE state = 'runnable' AND cpu IS NOT NULL AND end_ts > start_ts),
    b AS (
        SELECT q.*, coalesce(f.k, 1) AS k0, l.k AS k1 FROM rq q
        ASOF LEFT JOIN onc f ON f.host_id = q.host_id AND f.cpu = q.cpu AND f.start_ts <= q.start_ts
        ASOF LEFT JOIN onc l ON l.host_id = q.host_id AND l.cpu = q.cpu AND l.start_ts < q.end_ts),
    x AS (SELECT host_id, tid, cpu, start_ts, end_ts, unnest(range(k0, k1 + 1)) AS k FROM b WHERE k1 IS NOT NULL),
    pc AS (
        SELECT x.host_id, x.tid, o.by_tid, o.by_pid, o.by_name,
               greatest(x.start_ts, o.start_ts) AS a, least(x.end_ts, o.end_ts) AS z
        FROM x JOIN onc o ON o.host_id = x.host_id AND o.cpu = x.cpu AND o.k = x.k
        WHERE least(x.end_ts, o.end_ts) > greatest(x.start_ts, o.start_ts) AND o.by_tid <> x.tid)
    SELECT pc.*, CASE WHEN pc.by_tid = pc.by_pid THEN pc.by_name ELSE m.name END AS by_procname
    FROM pc ASOF LEFT JOIN thread_states m ON m.host_id = pc.host_id AND m.tid = pc.by_pid AND m.start_ts <= pc.a"""


def _assign(points: str, a: str, z: str, runs: str) -> str:
    """SQL: rows of `points` (with host_id, tid and the span [a, z)) joined to the runs
    (of table `runs`) of their thread that overlap them, one ASOF join per nesting depth
    (runs of one depth on a thread never overlap), with `ns` the overlap."""
    return f"""
        SELECT r.run_id, p.*, least(p.{z}, r.end_ts) - greatest(p.{a}, r.start_ts) AS ns
        FROM (SELECT p.*, d.depth FROM ({points}) p CROSS JOIN (SELECT DISTINCT depth FROM {runs}) d) p
        ASOF JOIN {runs} r ON r.host_id = p.host_id AND r.tid = p.tid AND r.depth = p.depth
                                AND r.start_ts <= p.{a}
        WHERE r.end_ts > p.{a}"""


def has_kernel_data(db: Database) -> bool:
    """Whether the database has kernel scheduling data (raises InputError for a
    database written before roscope had the kernel tables)."""
    have = {r[0] for r in db.con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_name IN ('thread_states', 'kernel_threads')"
    ).fetchall()}
    if len(have) < 2:
        raise InputError(f"{db.path}: this database has no kernel scheduling tables (written by an older roscope); "
                         "load the trace again")
    return db.con.execute("SELECT count(*) > 0 FROM thread_states").fetchall()[0][0]


def _sorted(fields: dict[str, str], tie: str, ns: str = "ns") -> str:
    """SQL: the list aggregate of structs of `fields` (name: SQL), most `ns` first,
    ties by `tie`. Not `list(... ORDER BY ...)`: DuckDB holds an ordered
    aggregate's rows in memory (a 10M-event trace's waits did not fit in 128 MiB),
    whereas it spills plain lists; each group's list is then sorted on its own."""
    packed = ", ".join(f"'{k}': {v}" for k, v in fields.items())
    unpacked = ", ".join(f"{k} := s.{k}" for k in fields)
    return f"list_transform(list_sort(list({{'_o': -({ns}), '_t': {tie}, {packed}}})), lambda s: struct_pack({unpacked}))"


def _temp(db, name: str, sql: str, params=(), keep=()) -> Result:
    """A temporary table of result `name` made by `sql` (`results.temp_table`); with
    more memory than the budget (and a warning) if it needs it: the ASOF joins and
    windows per thread hold the busiest thread's runs (`db.within_memory`)."""
    return temp_table(db, name, sql, params, keep, run=lambda step: db.within_memory(step, "scheduling analysis"))


@dataclasses.dataclass
class RunSched:
    """`run_sched`'s result: per finished run (`table`, shown as `run_sched`), its
    culprits (`culprits`, shown as `run_culprits`), and the tables the input-wait
    split reads too: the runs with their kernel thread (`runs`) and the thread state
    intervals with running sums (`states`). `sql`, `relation()`, `df()`: `table`'s."""

    table: Result
    culprits: Result
    runs: Result
    states: Result

    @property
    def sql(self) -> str:
        return self.table.sql

    def relation(self):
        return self.table.relation()

    def df(self):
        return self.table.df()


_CULPRIT = {"tid": "c.by_tid", "pid": "c.by_pid", "name": "coalesce(c.by_name, k.name)",
            "procname": "coalesce(c.by_procname, k.procname)", "ns": "c.ns"}


def run_sched(db: Database) -> RunSched:
    """Per finished callback run (a `RunSched`; its table shown as `run_sched`):
    `on_cpu_ns`, `runnable_ns`, `blocked_ns`, `unknown_ns` (the part of
    the run no state interval of its thread covers), `preemptions`, `migrations`
    (counted within the run), and `culprits`: the threads that ran on the CPU while it
    was runnable, most time first (tid, pid, name, procname, ns), one per name the
    thread had while it held the CPU (the names in force then: a thread renamed in
    between is two culprits). The per-culprit rows are `culprits` (shown as
    `run_culprits`: run_id, host_id, by_tid, by_pid, by_name, by_procname, ns)."""
    has_kernel_data(db)
    runs = _temp(db, "sched_runs", _RUNS)
    states = _temp(db, "sched_states", _STATES.format(runs=runs.sql))
    culprits = _temp(db, "run_culprits", f"""
        SELECT run_id, host_id, by_tid, any_value(by_pid) AS by_pid, by_name, arg_max(by_procname, ns) AS by_procname,
               sum(ns) AS ns
        FROM ({_assign(_PIECES.format(states=states.sql), 'a', 'z', runs.sql)}) WHERE ns > 0
        GROUP BY run_id, host_id, by_tid, by_name""")
    table = _temp(db, "run_sched", f"""
        WITH base AS ({_per_run(runs.sql, states.sql)}),
        pre AS (SELECT run_id, count(*) AS n FROM ({_assign(
            "SELECT host_id, tid, ts, ts AS ts2 FROM preemptions", 'ts', 'ts2', runs.sql)}) GROUP BY run_id),
        mig AS (SELECT run_id, count(*) AS n FROM ({_assign(
            "SELECT host_id, tid, ts, ts AS ts2 FROM migrations", 'ts', 'ts2', runs.sql)}) GROUP BY run_id),
        cul AS (
            SELECT c.run_id, {_sorted(_CULPRIT, 'c.by_tid', 'c.ns')} AS culprits
            FROM {culprits.sql} c LEFT JOIN kernel_threads k ON k.host_id = c.host_id AND k.tid = c.by_tid
            GROUP BY c.run_id)
        SELECT b.*, b.duration_ns - b.on_cpu_ns - b.runnable_ns - b.blocked_ns AS unknown_ns,
               coalesce(pre.n, 0) AS preemptions, coalesce(mig.n, 0) AS migrations,
               coalesce(cul.culprits, []) AS culprits
        FROM base b LEFT JOIN pre USING (run_id) LEFT JOIN mig USING (run_id) LEFT JOIN cul USING (run_id)""")
    show(culprits, table)
    return RunSched(table, culprits, runs, states)


def _selected(db, pattern: str | None) -> list[int] | None:
    """The ids of the callbacks `--callback` selects (roscope.selector: their label, `node
    topic-or-timer symbol`), None without one; InputError when none matches."""
    return None if pattern is None else selector.callbacks(db, pattern, "--callback")


def worst_runs(db: Database, callback: str | None = None, top: int = 10) -> dict:
    """The `top` longest finished callback runs (of the callbacks whose name, `node
    topic-or-timer symbol`, matches the regular expression `callback`), each with its
    scheduling breakdown (`run_sched`) when the database has kernel data. Returns
    {"kernel": bool, "runs": [...], "coverage": the share of all finished runs' time
    the kernel data covers (None without)}; durations in ns."""
    ids = _selected(db, callback)
    kernel = has_kernel_data(db)
    where = "WHERE list_contains(?, callback_id)" if ids is not None else ""
    params = [ids] if ids is not None else []
    sched = run_sched(db) if kernel else None
    src = sched.sql if sched else "callback_runs"
    rows = db.records(f"""
        WITH r AS (
            SELECT x.*, {CALLBACK_LABEL} AS label, c.node, c.topic, c.symbol, c.pid, c.procname, c.hostname
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
    coverage = None
    if kernel:  # the share of all finished runs' time the kernel data covers
        coverage = db.con.execute(f"SELECT 1 - sum(unknown_ns) / nullif(sum(duration_ns), 0) FROM {sched.sql}"
                                  ).fetchall()[0][0]
    return {"kernel": kernel, "runs": rows, "coverage": coverage}


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


#: The outermost callback runs of each thread, numbered in start order (`k`), with
#: the running sums before each of their durations (`busy_before`) and of their
#: runnable time (`rq_before`): the input-wait split's view of what the thread ran.
_OUTER = """
    SELECT o.run_id, o.callback_id, o.host_id, o.tid, o.start_ts, o.end_ts,
           row_number() OVER t AS k,
           sum(o.end_ts - o.start_ts) OVER t - (o.end_ts - o.start_ts) AS busy_before,
           coalesce(sum(s.runnable_ns) OVER t - s.runnable_ns, 0) AS rq_before,
           coalesce(s.runnable_ns, 0) AS rq
    FROM {runs} o LEFT JOIN {run_sched} s USING (run_id)
    WHERE o.depth = 0 AND o.end_ts > o.start_ts
    WINDOW t AS (PARTITION BY o.host_id, o.tid ORDER BY o.start_ts ROWS UNBOUNDED PRECEDING)"""


#: Per delivered message into a callback run (transport link): its wait, publication
#: to callback start, split in order:
#:   transport   publication -> arrival, where the trace has it: ROS 1 with roscope's
#:               tracer, the take (the message received and queued for its
#:               callback), between the two; else NULL (ROS 2's take is made by the
#:               executor right before the callback: transport is then in `rest_ns`);
#:   queued      the run's thread ran other outermost callback runs (named in `behind`);
#:   wakeup      the run's thread was runnable, outside those runs: waiting for a CPU
#:               once it had work (kernel data; NULL without);
#:   rest        what remains (executor overhead, the thread blocked before the
#:               message arrived, transport where it is not separable).
#: The window after transport is [arrival or publication, callback start]. Each part
#: is a difference of running sums per thread (ASOF joins), as in `executor.py`.
_WAITS = """
    WITH w AS (
        SELECT l.run_id, l.publication_id, r.callback_id, r.thread_id, r.host_id, r.tid, li.publish_ts,
               r.start_ts, r.start_ts - li.publish_ts AS wait_ns,
               CASE WHEN l.method = 'ros1_roscope' AND tk.ts BETWEEN li.publish_ts AND r.start_ts THEN tk.ts END AS arrival_ts
        FROM links l {pick} JOIN {runs} r ON r.run_id = l.run_id
        JOIN links_info li ON li.publication_id = l.publication_id AND li.take_id IS NOT DISTINCT FROM l.take_id
                          AND li.run_id = l.run_id
        LEFT JOIN takes tk ON tk.take_id = l.take_id),
    w2 AS (SELECT *, coalesce(arrival_ts, publish_ts) AS w0 FROM w WHERE publish_ts <= start_ts),
    pts AS (
        SELECT w2.*,
               a.k AS k_a, a.start_ts AS a_start, a.end_ts AS a_end, a.busy_before AS a_busy, a.rq_before AS a_rqb,
               a.rq AS a_rq, b.k AS k_b, b.start_ts AS b_start, b.end_ts AS b_end, b.busy_before AS b_busy,
               b.rq_before AS b_rqb, b.rq AS b_rq,
               {c_w0} AS crq_w0, {c_start} AS crq_start, {c_a_start} AS crq_a_start, {c_b_start} AS crq_b_start
        FROM w2
        ASOF LEFT JOIN {outer} a ON a.host_id = w2.host_id AND a.tid = w2.tid AND a.start_ts <= w2.w0
        ASOF LEFT JOIN {outer} b ON b.host_id = w2.host_id AND b.tid = w2.tid AND b.start_ts < w2.start_ts
        ASOF LEFT JOIN {states} s0 ON s0.host_id = w2.host_id AND s0.tid = w2.tid AND s0.start_ts <= w2.w0
        ASOF LEFT JOIN {states} s1 ON s1.host_id = w2.host_id AND s1.tid = w2.tid AND s1.start_ts <= w2.start_ts
        ASOF LEFT JOIN {states} sa ON sa.host_id = w2.host_id AND sa.tid = w2.tid AND sa.start_ts <= a.start_ts
        ASOF LEFT JOIN {states} sb ON sb.host_id = w2.host_id AND sb.tid = w2.tid AND sb.start_ts <= b.start_ts)
    SELECT run_id, publication_id, callback_id, thread_id, host_id, tid, publish_ts, arrival_ts, start_ts, wait_ns,
           arrival_ts - publish_ts AS transport_ns,
           coalesce(b_busy + least(start_ts - b_start, b_end - b_start), 0)
             - coalesce(a_busy + least(w0 - a_start, a_end - a_start), 0) AS queued_ns,
           CASE WHEN {kernel} THEN (crq_start - crq_w0)
             - (coalesce(b_rqb + CASE WHEN start_ts >= b_end THEN b_rq ELSE crq_start - crq_b_start END, 0)
                - coalesce(a_rqb + CASE WHEN w0 >= a_end THEN a_rq ELSE crq_w0 - crq_a_start END, 0)) END AS wakeup_ns,
           k_a, k_b, w0
    FROM pts"""


def _c_rq(alias: str, t: str) -> str:
    return _upto(alias, "runnable", t)


_BEHIND = {"callback_id": "callback_id", "ns": "ns"}


def wait_sched(db: Database, pick: str | None = None, params: Sequence = (), sched: RunSched | None = None) -> Result:
    """Per input wait (a `results.Result`, shown as `wait_sched`): `wait_ns` split into
    `transport_ns`, `queued_ns` (other callbacks of the executor thread, named in
    `behind`: callback ids with the ns each took), `wakeup_ns` (the thread waiting for
    a CPU) and `rest_ns`; see `_WAITS`. Over `sched` (`run_sched`'s result; made here
    without one).

    With `pick` (a query over the tables of `sched`, e.g. its `runs`, with its
    `params`, giving (run_id, publication_id)), only those waits are split: each the
    same row as in the whole table, at a cost that does not grow with the trace's
    waits (the ones `worst_waits` and `flow_sched` show are a handful)."""
    kernel = has_kernel_data(db)
    sched = sched or run_sched(db)
    picked = None if pick is None else _temp(db, "sched_pick", pick, params)
    # One statement per step: each has DuckDB's whole budget (as one statement, the
    # waits of a 10M-event trace did not always fit in 256 MiB).
    outer = _temp(db, "sched_outer", _OUTER.format(runs=sched.runs.sql, run_sched=sched.table.sql))
    sql = _WAITS.format(c_w0=_c_rq("s0", "w2.w0"), c_start=_c_rq("s1", "w2.start_ts"),
                        c_a_start=_c_rq("sa", "a.start_ts"), c_b_start=_c_rq("sb", "b.start_ts"),
                        kernel="TRUE" if kernel else "FALSE", runs=sched.runs.sql, states=sched.states.sql,
                        outer=outer.sql,
                        pick="" if picked is None else
                        f"SEMI JOIN {picked.sql} pk ON pk.run_id = l.run_id AND pk.publication_id = l.publication_id")
    waits = _temp(db, "sched_waits", sql)
    behind = _temp(db, "sched_behind", f"""
        WITH x AS (
            SELECT run_id, publication_id, host_id, tid, w0, start_ts, unnest(range(coalesce(k_a, 1), k_b + 1)) AS k
            FROM {waits.sql} WHERE k_b IS NOT NULL),
        beh AS (
            SELECT x.run_id, x.publication_id, o.callback_id,
                   sum(least(o.end_ts, x.start_ts) - greatest(o.start_ts, x.w0)) AS ns
            FROM x JOIN {outer.sql} o ON o.host_id = x.host_id AND o.tid = x.tid AND o.k = x.k
            WHERE o.run_id <> x.run_id AND least(o.end_ts, x.start_ts) > greatest(o.start_ts, x.w0)
            GROUP BY ALL)
        SELECT run_id, publication_id, {_sorted(_BEHIND, 'callback_id')} AS behind FROM beh GROUP BY ALL""")
    out = _temp(db, "wait_sched", f"""
        SELECT w.* EXCLUDE (k_a, k_b, w0),
               w.wait_ns - coalesce(w.transport_ns, 0) - w.queued_ns - coalesce(w.wakeup_ns, 0) AS rest_ns,
               coalesce(bl.behind, []) AS behind
        FROM {waits.sql} w LEFT JOIN {behind.sql} bl USING (run_id, publication_id)""")
    for r in (outer, waits, behind, picked):  # the steps' tables: their memory back at once
        if r is not None:
            r.close()
    show(out)
    return out


#: The input waits `worst_waits` shows, before their split: the `top` longest of the callbacks
#: matching its regex (`where`), in its order (a wait's length depends on its run and
#: publication only, so the rows of these pairs are the whole table's first ones).
_WORST_PICK = """
    WITH w AS (
        SELECT DISTINCT l.run_id, l.publication_id, r.start_ts - li.publish_ts AS wait_ns
        FROM links l JOIN {runs} r ON r.run_id = l.run_id
        JOIN links_info li ON li.publication_id = l.publication_id AND li.take_id IS NOT DISTINCT FROM l.take_id
                          AND li.run_id = l.run_id
        JOIN callbacks_info c ON c.callback_id = r.callback_id
        WHERE li.publish_ts <= r.start_ts {where})
    SELECT run_id, publication_id FROM w ORDER BY wait_ns DESC, run_id, publication_id LIMIT {top}"""


def worst_waits(db: Database, callback: str | None = None, top: int = 10) -> list[dict]:
    """The `top` longest input waits (publication to callback start) of the callbacks
    matching `callback`, each split (`wait_sched`) with the callbacks it queued behind
    named, and in plain words. Durations in ns."""
    chosen = _selected(db, callback)
    sched = run_sched(db)
    pick = _WORST_PICK.format(where="AND list_contains(?, c.callback_id)" if chosen is not None else "", top=int(top),
                              runs=sched.runs.sql)
    waits = wait_sched(db, pick, [chosen] if chosen is not None else [], sched)
    where = "WHERE list_contains(?, callback_id)" if chosen is not None else ""
    rows = db.records(f"""
        WITH x AS (
            SELECT w.*, {CALLBACK_LABEL} AS label, c.node, c.topic, c.pid, c.procname
            FROM {waits.sql} w JOIN callbacks_info c USING (callback_id))
        SELECT * FROM x {where} ORDER BY wait_ns DESC, run_id, publication_id LIMIT {int(top)}""",
                      [chosen] if chosen is not None else [])
    ids = sorted({b["callback_id"] for r in rows for b in (r["behind"] if r["behind"] is not None else [])})
    names = {}
    if ids:
        names = {r["callback_id"]: r["label"] for r in db.records(
            f"SELECT c.callback_id, {CALLBACK_LABEL} AS label FROM callbacks_info c WHERE list_contains(?, c.callback_id)",
            [ids])}
    for r in rows:
        r.pop("host_id", None)
        r["behind"] = [{"callback_id": b["callback_id"], "label": names.get(b["callback_id"]), "ns": b["ns"]}
                       for b in (r["behind"] if r["behind"] is not None else [])]
        r["explanation"] = explain_wait(r)
    return rows


def explain_wait(r: dict) -> str:
    """One input wait's split in plain words."""
    parts = [f"waited {_ms(r['wait_ns'])} from publication to callback start"]
    if r.get("transport_ns") is not None:
        parts.append(f"transport {_ms(r['transport_ns'])}")
    if (r.get("queued_ns") or 0) > 0:
        who = ", ".join(f"{b['label'] or b['callback_id']} {_ms(b['ns'])}" for b in r["behind"][:3])
        parts.append(f"queued {_ms(r['queued_ns'])} behind {who}")
    if r.get("wakeup_ns") is not None:
        parts.append(f"its thread waited {_ms(r['wakeup_ns'])} for a CPU (wake-up latency)")
    parts.append(f"rest {_ms(r['rest_ns'])}" + ("" if r.get("transport_ns") is not None else " (transport included)"))
    return "; ".join(parts)


#: Per selected flow, its steps paired into segments: a publication then the run it fed
#: (communication: the input wait's split), a run then a publication made in it
#: (computation: the run's thread from the run's start to the publication), a run then
#: the next run of its node (idle: the second run's thread between the two).
_FLOW_SEGMENTS = """
    WITH st AS (
        SELECT s.flow_id, s.step, s.is_run, s.id,
               lead(s.is_run) OVER w AS n_is_run, lead(s.id) OVER w AS n_id
        FROM {steps} s SEMI JOIN {flows} f USING (flow_id)
        WINDOW w AS (PARTITION BY s.flow_id ORDER BY s.step)),
    thread_seg AS (
        SELECT st.flow_id, st.step, 'computation' AS kind, r.host_id, r.tid, r.start_ts AS a, p.publish_ts AS b
        FROM st JOIN {runs} r ON r.run_id = st.id JOIN publications_info p ON p.publication_id = st.n_id
        WHERE st.is_run = 1 AND st.n_is_run = 0
        UNION ALL
        SELECT st.flow_id, st.step, 'idle', r2.host_id, r2.tid, r1.end_ts, r2.start_ts
        FROM st JOIN {runs} r1 ON r1.run_id = st.id JOIN {runs} r2 ON r2.run_id = st.n_id
        WHERE st.is_run = 1 AND st.n_is_run = 1)
    SELECT g.*,
           {on_b} - {on_a} AS on_cpu_ns, {rq_b} - {rq_a} AS runnable_ns, {bl_b} - {bl_a} AS blocked_ns
    FROM thread_seg g
    ASOF LEFT JOIN {states} sa ON sa.host_id = g.host_id AND sa.tid = g.tid AND sa.start_ts <= g.a
    ASOF LEFT JOIN {states} sb ON sb.host_id = g.host_id AND sb.tid = g.tid AND sb.start_ts <= g.b"""

_FLOW_WAITS = """
    WITH st AS (
        SELECT s.flow_id, s.step, s.is_run, s.id, lead(s.is_run) OVER w AS n_is_run, lead(s.id) OVER w AS n_id
        FROM {steps} s SEMI JOIN {flows} f USING (flow_id)
        WINDOW w AS (PARTITION BY s.flow_id ORDER BY s.step))
    SELECT st.flow_id, st.step, r.start_ts - p.publish_ts AS wait_ns, ws.transport_ns, ws.queued_ns, ws.wakeup_ns,
           coalesce(ws.rest_ns, r.start_ts - p.publish_ts) AS rest_ns
    FROM st JOIN {runs} r ON r.run_id = st.n_id JOIN publications_info p ON p.publication_id = st.id
    LEFT JOIN {waits} ws ON ws.run_id = st.n_id AND ws.publication_id = st.id
    WHERE st.is_run = 0 AND st.n_is_run = 1"""


#: The input waits of the flows `flow_sched` shows (`_FLOW_WAITS` joins them).
_FLOW_PICK = """
    WITH st AS (
        SELECT s.id, s.is_run, lead(s.is_run) OVER w AS n_is_run, lead(s.id) OVER w AS n_id
        FROM {steps} s SEMI JOIN {flows} f USING (flow_id)
        WINDOW w AS (PARTITION BY s.flow_id ORDER BY s.step))
    SELECT DISTINCT n_id AS run_id, id AS publication_id FROM st WHERE is_run = 0 AND n_is_run = 1"""


def flow_sched(db: Database, request: FlowRequest, path: int | None = None, top: int = 10) -> dict:
    """The `top` slowest data flows of `request` (of path `path` if given), each with
    the scheduling split of its segments summed: over its computation and idle
    segments, the time its threads were on a CPU, runnable and blocked; over its
    communication segments (input waits), transport, queued, wake-up and rest. The
    flows are `flow.data_flows`' (with every flow's steps: `request.all_steps` is
    set if it is not); durations in ns. Returns {kernel, flows, summary, search: the
    search's `DataFlows` (its tables, as values), thread_segments and wait_segments:
    the segments' tables (`results.Result`, shown as `flow_thread_segments` and
    `flow_wait_segments`)}."""
    kernel = has_kernel_data(db)
    if not request.all_steps:
        request = dataclasses.replace(request, all_steps=True)
    res = data_flows(db, request)
    summary = res.summary
    if path is not None:
        have = [r[0] for r in db.con.execute(f"SELECT DISTINCT path_id FROM {res.sql('data_flows')} ORDER BY path_id"
                                             ).fetchall()]
        if int(path) not in have:
            shown = ", ".join(map(str, have[:20])) + (", ..." if len(have) > 20 else "")
            raise InputError(f"--path {path}: no such path among the data flows from {request.from_re!r} to "
                             f"{request.to_re!r}; their paths are {shown or 'none'} (`roscope flow` lists them)")
    where, params = ("WHERE f.path_id = ?", [int(path)]) if path is not None else ("", [])
    flows = _temp(db, "sched_flows", f"SELECT f.*, p.path FROM {res.sql('data_flows')} f "
                  f"LEFT JOIN {res.sql('paths')} p USING (path_id) {where} ORDER BY f.latency_ns DESC, f.flow_id "
                  f"LIMIT {int(top)}", params)
    names = {"steps": res.sql("data_flow_steps"), "flows": flows.sql}
    sched = run_sched(db)
    waits = wait_sched(db, _FLOW_PICK.format(**names), sched=sched)  # the waits of these flows only
    seg_sql = _FLOW_SEGMENTS.format(
        on_a=_upto("sa", "running", "g.a"), on_b=_upto("sb", "running", "g.b"),
        rq_a=_upto("sa", "runnable", "g.a"), rq_b=_upto("sb", "runnable", "g.b"),
        bl_a=_upto("sa", "blocked", "g.a"), bl_b=_upto("sb", "blocked", "g.b"),
        runs=sched.runs.sql, states=sched.states.sql, **names)
    thread_segs = _temp(db, "flow_thread_segments", seg_sql)
    wait_segs = _temp(db, "flow_wait_segments", _FLOW_WAITS.format(runs=sched.runs.sql, waits=waits.sql, **names))
    show(thread_segs, wait_segs)
    rows = db.records(f"""
        WITH t AS (SELECT flow_id, sum(on_cpu_ns) AS on_cpu_ns, sum(runnable_ns) AS runnable_ns,
                          sum(blocked_ns) AS blocked_ns, sum(b - a) AS thread_ns
                   FROM {thread_segs.sql} GROUP BY flow_id),
             w AS (SELECT flow_id, sum(wait_ns) AS wait_ns, sum(transport_ns) AS transport_ns,
                          sum(queued_ns) AS queued_ns, sum(wakeup_ns) AS wakeup_ns, sum(rest_ns) AS rest_ns
                   FROM {wait_segs.sql} GROUP BY flow_id)
        SELECT f.flow_id, f.path_id, f.path, f.start_ts, f.end_ts, f.latency_ns, f.communication_ns, f.idle_ns,
               f.computation_ns, t.on_cpu_ns, t.runnable_ns, t.blocked_ns,
               t.thread_ns - t.on_cpu_ns - t.runnable_ns - t.blocked_ns AS unknown_ns,
               w.transport_ns, w.queued_ns, w.wakeup_ns, w.rest_ns
        FROM {flows.sql} f LEFT JOIN t USING (flow_id) LEFT JOIN w USING (flow_id)
        ORDER BY f.latency_ns DESC, f.flow_id""")
    for r in rows:
        if not kernel:  # not measured: unknown (all of it is in unknown_ns), never zeros
            r.update(on_cpu_ns=None, runnable_ns=None, blocked_ns=None)
        r["explanation"] = explain_flow(r, kernel)
    return {"kernel": kernel, "flows": rows, "summary": summary, "search": res, "thread_segments": thread_segs,
            "wait_segments": wait_segs}


def why_no_waits(db: Database, callback: str | None = None) -> str:
    """Why `worst_waits` found no input wait, in words, from the cheapest facts."""
    q = lambda sql: db.con.execute(sql).fetchall()[0][0]  # noqa: E731
    if not q("SELECT count(*) FROM links"):
        if not q("SELECT count(*) FROM takes"):
            return ("the trace has no take events, so no publication is linked to the callback run it fed "
                    "(ros2_tracing records takes from Humble on; `roscope stats` warns about it too)")
        return "no take of the trace is linked to its publication (nothing in the trace identifies the messages)"
    if not q("SELECT count(*) FROM links WHERE run_id IS NOT NULL"):
        return ("no transport link reaches a callback run (the trace has takes but no callback events): "
                "`roscope stats` shows their transport latency, publication to take")
    if callback is not None:
        return f"no callback matching --callback {callback!r} received a linked message"
    return "no linked message reached a finished callback run"


def explain_flow(r: dict, kernel: bool) -> str:
    """One flow's split in plain words."""
    parts = [f"took {_ms(r['latency_ns'])}: communication {_ms(r['communication_ns'])}, computation "
             f"{_ms(r['computation_ns'])}, idle {_ms(r['idle_ns'])}"]
    if kernel:
        parts.append(f"in its callbacks and between them its threads were on a CPU {_ms(r['on_cpu_ns'])}, waiting "
                     f"for a CPU {_ms(r['runnable_ns'])}, blocked {_ms(r['blocked_ns'])}")
    if r.get("queued_ns"):
        parts.append(f"its messages queued {_ms(r['queued_ns'])} behind other callbacks")
    if kernel and r.get("wakeup_ns"):
        parts.append(f"their executor threads waited {_ms(r['wakeup_ns'])} for a CPU after a message arrived")
    if r.get("transport_ns") is not None:
        parts.append(f"transport {_ms(r['transport_ns'])}")
    return "; ".join(parts)
