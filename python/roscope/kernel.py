"""Kernel scheduling in the execution model (docs/model.md: `thread_states`,
`preemptions`, `migrations`, `kernel_threads`).

Two sources, one event layout:

- ``perf.data`` written by ``roscope record --kernel`` (``perf record -k mono -e
  sched:sched_switch -e sched:sched_wakeup -a``), read through perf's own reader,
  ``perf script`` with a fixed field list; its text is parsed by pyarrow (CSV reader,
  regular expressions over whole columns), never line by line in Python;
- LTTng kernel traces with ``sched_switch`` / ``sched_wakeup`` (/``sched_waking``),
  decoded by roscope's CTF reader into Arrow batches.

Both are read chunk by chunk into a temporary DuckDB table of the load's database
(`store`), never whole in Python, and become per-thread state intervals (running on
a CPU, runnable, blocked) by DuckDB SQL in that database (window functions, no
Python per event), under DuckDB's memory limit (`KERNEL_MEMORY`). Timestamps are ns of
CLOCK_MONOTONIC, the clock of the UST events (perf ``-k mono``; LTTng's monotonic
clock); a perf file recorded with another clock, or whose time range does not
overlap the trace's, is refused with an error naming the file.
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator, Sequence

from roscope.errors import InputError

#: The tables this module adds to every database (empty without kernel data).
TABLES = ("kernel_threads", "thread_states", "preemptions", "migrations")

#: The model's tables `store` reads (small: one row per trace, process, thread, host).
NEEDS = ("traces", "processes", "threads", "clock_sync")

#: `perf script` fields: the current task (pid/tid), CPU, time, event, its payload.
PERF_FIELDS = "pid,tid,cpu,time,event,trace"
_HEAD = r"^\s*(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<nsec>\d{9}):\s+"
_SWITCH = (_HEAD + r"sched:sched_switch:\s+prev_comm=(?P<prev_comm>.*) prev_pid=(?P<prev_tid>\d+) "
           r"prev_prio=-?\d+ prev_state=(?P<prev_state>\S+) ==> next_comm=(?P<next_comm>.*) "
           r"next_pid=(?P<next_tid>\d+) next_prio=-?\d+\s*$")
_WAKEUP = (_HEAD + r"sched:sched_wakeup:\s+comm=(?P<comm>.*) pid=(?P<woken_tid>\d+) prio=-?\d+ "
           r"(?:success=\d+ )?target_cpu=(?P<target_cpu>\d+)\s*$")
#: perf's record of a task's new name (`--show-task-events`): after an exec ("exec:")
#: or a prctl(PR_SET_NAME); those perf synthesizes for the tasks alive when it
#: started have time 0 and are left out (the sched events name those tasks).
_COMM = _HEAD + r"PERF_RECORD_COMM(?: exec)?: (?P<comm>.*):(?P<cpid>-?\d+)/(?P<woken_tid>-?\d+)\s*$"
_CLOCKID = re.compile(r"^# clockid: (\S+)")
#: Bytes of `perf script` text parsed at a time. The process's peak RSS grows with it
#: (by far more than Arrow's own allocations, which stay under 6 blocks), and with 16
#: MiB it also grew with the file (511 MiB reading a 314 MiB perf.data, 319 MiB at
#: 69 MiB); at 2 MiB it is 223 and 198 MiB, and no slower.
PERF_BLOCK = 2 << 20


def _arrow():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    return pa, pc, pcsv


# --------------------------------------------------------------------------
# finding perf.data beside a trace
# --------------------------------------------------------------------------

def find_perf(inputs: Sequence[str], trace_paths: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(perf.data, [trace directories it belongs to]) for each ``perf/perf.data``
    (as `roscope record --kernel` writes it) or ``perf.data`` found in an input
    directory, beside it, or in a directory above one of the traces up to the input."""
    roots = [os.path.abspath(p) for p in inputs]
    found: dict[str, list[str]] = {}
    for tp in trace_paths:
        d = os.path.abspath(tp)
        root = next((r for r in roots if d == r or d.startswith(r.rstrip(os.sep) + os.sep)), None)
        stop = os.path.dirname(root) if root else d
        while True:
            for cand in (os.path.join(d, "perf", "perf.data"), os.path.join(d, "perf.data")):
                if os.path.isfile(cand):
                    found.setdefault(cand, []).append(tp)
                    break
            else:
                if d == stop or os.path.dirname(d) == d:
                    break
                d = os.path.dirname(d)
                continue
            break
    return sorted(found.items())


# --------------------------------------------------------------------------
# perf.data -> events (Arrow)
# --------------------------------------------------------------------------

def _perf_script(path: str):
    try:
        return subprocess.Popen(["perf", "script", "--header", "--show-task-events", "-i", path, "--ns", "-F", PERF_FIELDS],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise InputError(f"{path}: reading it needs the 'perf' command (Debian package linux-perf)") from None


def has_sched_events(path: str) -> bool:
    """Whether perf.data `path` recorded sched:sched_switch (its header, through
    `perf evlist`): a CPU profile beside a trace is not kernel scheduling data."""
    try:
        p = subprocess.run(["perf", "evlist", "-i", path], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise InputError(f"{path}: reading it needs the 'perf' command (Debian package linux-perf)") from None
    if p.returncode != 0:
        msg = " ".join(p.stderr.strip().splitlines()[-2:]) or f"exit status {p.returncode}"
        raise InputError(f"{path}: perf cannot read it: {msg}")
    return any(line.strip() == "sched:sched_switch" for line in p.stdout.splitlines())


def perf_chunks(path: str, facts: dict) -> Iterator:
    """The sched events of one perf.data as Arrow tables (columns of `_event_schema`),
    one per block of `perf script`'s output (`PERF_BLOCK` bytes of text), in perf's order, as
    perf writes them: never the whole file at once. Once the last is out, `facts` has
    the file's clock and perf's warnings. Raises InputError when perf cannot read it."""
    pa, pc, pcsv = _arrow()
    proc = _perf_script(path)
    read = pcsv.ReadOptions(column_names=["line"], block_size=PERF_BLOCK)
    parse = pcsv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False,
                              invalid_row_handler=lambda _row: "skip")
    conv = pcsv.ConvertOptions(column_types={"line": pa.large_string()}, strings_can_be_null=False,
                               quoted_strings_can_be_null=False)
    header: list[str] = []
    unreadable = None
    try:
        reader = pcsv.open_csv(proc.stdout, read_options=read, parse_options=parse, convert_options=conv)
        for batch in reader:
            lines = batch.column(0)
            is_head = pc.starts_with(lines, "#")
            if pc.any(is_head).as_py():
                header += pc.filter(lines, is_head).to_pylist()  # perf's header: a few dozen lines
            part = _parse_perf_lines(pc.filter(lines, pc.invert(is_head)))
            yield part.take(pc.sort_indices(part, [("line", "ascending")])).drop_columns(["line"])
    except pa.ArrowInvalid as exc:  # no output at all (perf failed), or text perf never writes
        unreadable = str(exc)
    finally:
        if proc.stdout:
            proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.wait()
    if proc.returncode != 0:
        msg = " ".join(err.strip().splitlines()[-2:]) or f"exit status {proc.returncode}"
        raise InputError(f"{path}: perf script cannot read it: {msg}")
    if unreadable is not None:
        raise InputError(f"{path}: perf script's output could not be read ({unreadable})")
    facts["clock"] = next((m.group(1) for h in header if (m := _CLOCKID.match(h))), None)
    # perf's own warnings, e.g. "Processed N events and lost M chunks!" after a "Warning:" line
    facts["warnings"] = [ln.strip() for ln in err.splitlines()
                         if ln.strip().lower().startswith("warning") and ln.strip()[8:].strip() or " lost " in ln]


#: The normalized event layout both sources produce.
def _event_schema():
    pa = _arrow()[0]
    return pa.schema([
        ("ts", pa.int64()), ("cpu", pa.int64()), ("kind", pa.string()),  # 'switch' | 'wakeup' | 'wakeup_new' | 'rename'
        ("cur_pid", pa.int64()), ("cur_tid", pa.int64()),                 # the task current on the CPU (perf only)
        ("prev_tid", pa.int64()), ("prev_runnable", pa.bool_()), ("prev_comm", pa.large_string()),
        ("next_tid", pa.int64()), ("next_comm", pa.large_string()),
        ("woken_tid", pa.int64()), ("target_cpu", pa.int64()), ("woken_comm", pa.large_string()),  # or renamed
    ])


def _empty_events():
    pa = _arrow()[0]
    return pa.Table.from_batches([], schema=_event_schema())


def _int(pc, arr):
    import pyarrow as pa

    return pc.cast(arr, pa.int64())


def _parse_perf_lines(lines):
    """One batch of perf script lines -> normalized events (vectorized regexes)."""
    pa, pc, _ = _arrow()
    import numpy as np

    line = pa.array(np.arange(len(lines), dtype=np.int64))
    out = []
    for pattern, kind, tag in ((_SWITCH, "switch", "sched:sched_switch:"), (_WAKEUP, "wakeup", "sched:sched_wakeup:"),
                               (_COMM, "rename", "PERF_RECORD_COMM")):
        # the regular expression only on the lines of its event (3 times faster than on all)
        mine = pc.match_substring(lines, tag)
        st = pc.extract_regex(pc.filter(lines, mine), pattern)
        ok = pc.is_valid(st)
        st = pc.filter(st, ok)
        at = pc.filter(pc.filter(line, mine), ok)
        n = len(st)
        if n == 0:
            continue
        f = {st.type.field(i).name: st.field(i) for i in range(st.type.num_fields)}
        ts = pc.add(pc.multiply(_int(pc, f["sec"]), 1_000_000_000), _int(pc, f["nsec"]))
        if kind == "rename":  # perf's synthesized names of the tasks alive at its start: time 0
            real = pc.greater(ts, 0)
            ts, at = pc.filter(ts, real), pc.filter(at, real)
            f = {k: pc.filter(v, real) for k, v in f.items()}
            n = len(ts)
        null_i = pa.nulls(n, pa.int64())
        null_s = pa.nulls(n, pa.large_string())
        if kind == "switch":
            cols = [ts, _int(pc, f["cpu"]), pa.repeat(pa.scalar(kind, pa.string()), n),
                    _int(pc, f["pid"]), _int(pc, f["tid"]), _int(pc, f["prev_tid"]),
                    pc.starts_with(f["prev_state"], "R"), f["prev_comm"],
                    _int(pc, f["next_tid"]), f["next_comm"], null_i, null_i, null_s]
        else:  # a wake-up, or a rename (woken_tid, woken_comm: the task renamed and its new name)
            cpu = _int(pc, f["target_cpu"]) if kind == "wakeup" else null_i
            cols = [ts, _int(pc, f["cpu"]), pa.repeat(pa.scalar(kind, pa.string()), n),
                    _int(pc, f["pid"]), _int(pc, f["tid"]), null_i, pa.nulls(n, pa.bool_()), null_s,
                    null_i, null_s, _int(pc, f["woken_tid"]), cpu, f["comm"]]
        cols = [c.cast(t.type) if c.type != t.type else c for c, t in zip(cols, _event_schema())]
        out.append(pa.Table.from_arrays(cols, schema=_event_schema()).append_column("line", at))
    return pa.concat_tables(out) if out else _empty_events().append_column("line", pa.array([], pa.int64()))


# --------------------------------------------------------------------------
# LTTng kernel traces -> events (Arrow)
# --------------------------------------------------------------------------

SCHED_EVENTS = ["sched_switch", "sched_wakeup", "sched_waking", "sched_wakeup_new", "sched_process_exec", "task_rename"]

#: Rows of the batches LTTng sched events are read in (per event name).
LTTNG_BATCH_ROWS = 1 << 18

#: The LTTng sched events read, with their kind and their rank among events of one
#: time (switches, then wake-ups, then new tasks' wake-ups, then renames).
_LTTNG_KINDS = {"sched_switch": ("switch", 0), "sched_wakeup": ("wakeup", 1), "sched_wakeup_new": ("wakeup_new", 2),
                "sched_process_exec": ("rename", 3), "task_rename": ("rename", 3)}


def _lttng_switches(sw):
    pa, pc, _ = _arrow()
    n = sw.num_rows
    state = _int(pc, sw.column("prev_state"))
    cur_pid = _int(pc, sw.column("pid")) if "pid" in sw.column_names else pa.nulls(n, pa.int64())
    return pa.Table.from_arrays([
        _int(pc, sw.column("ts")), _int(pc, sw.column("cpu_id")), pa.repeat(pa.scalar("switch", pa.string()), n),
        cur_pid, _int(pc, sw.column("prev_tid")),
        _int(pc, sw.column("prev_tid")), pc.equal(pc.bit_wise_and(state, 0xFF), 0),
        pc.cast(sw.column("prev_comm"), pa.large_string()),
        _int(pc, sw.column("next_tid")), pc.cast(sw.column("next_comm"), pa.large_string()),
        pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.large_string())], schema=_event_schema())


def _lttng_wakeups(wk, kind: str):
    pa, pc, _ = _arrow()
    n = wk.num_rows
    return pa.Table.from_arrays([
        _int(pc, wk.column("ts")), _int(pc, wk.column("cpu_id")), pa.repeat(pa.scalar(kind, pa.string()), n),
        pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()),
        pa.nulls(n, pa.int64()), pa.nulls(n, pa.bool_()), pa.nulls(n, pa.large_string()),
        pa.nulls(n, pa.int64()), pa.nulls(n, pa.large_string()),
        _int(pc, wk.column("tid")), _int(pc, wk.column("target_cpu")),
        pc.cast(wk.column("comm"), pa.large_string())], schema=_event_schema())


def _lttng_renames(t, event: str):
    """A task's new name: after an exec, the file's base name cut to the kernel's 15
    bytes (TASK_COMM_LEN - 1), as exec sets it; task_rename's `newcomm`."""
    pa, pc, _ = _arrow()
    n = t.num_rows
    if event == "sched_process_exec":
        base = pc.replace_substring_regex(pc.cast(t.column("filename"), pa.large_string()), "^.*/", "")
        tid, comm = t.column("tid"), pc.utf8_slice_codeunits(base, 0, 15)
    else:
        tid, comm = t.column("pid"), pc.cast(t.column("newcomm"), pa.large_string())
    null_i = pa.nulls(n, pa.int64())
    return pa.Table.from_arrays([
        _int(pc, t.column("ts")), _int(pc, t.column("cpu_id")), pa.repeat(pa.scalar("rename", pa.string()), n),
        null_i, null_i, null_i, pa.nulls(n, pa.bool_()), pa.nulls(n, pa.large_string()), null_i,
        pa.nulls(n, pa.large_string()), _int(pc, tid), null_i, comm], schema=_event_schema())


def lttng_chunks(trace_dirs: Sequence[str]) -> Iterator:
    """The sched events of LTTng kernel traces as normalized Arrow tables, one per
    batch the reader hands out (never all at once), each with `rank` (`_LTTNG_KINDS`)
    and `idx`, the event's position among the events of its name: ordered by (ts,
    rank, idx) they are in time order, events of one time switches first. A task is
    runnable after a switch when its ``prev_state`` has no task-state bit set
    (``prev_state & 0xff == 0``: TASK_RUNNING, possibly with the preemption mark)."""
    import numpy as np

    pa = _arrow()[0]
    from roscope.trace import Trace

    seen = dict.fromkeys(_LTTNG_KINDS, 0)
    for b in Trace(list(trace_dirs)).batches(SCHED_EVENTS, max_rows=LTTNG_BATCH_ROWS):
        if b.event not in _LTTNG_KINDS or not b.batch.num_rows:
            continue
        kind, rank = _LTTNG_KINDS[b.event]
        t = pa.Table.from_batches([b.batch])
        t = (_lttng_switches(t) if kind == "switch" else _lttng_renames(t, b.event) if kind == "rename"
             else _lttng_wakeups(t, kind))
        n = t.num_rows
        t = t.append_column("rank", pa.array(np.full(n, rank, dtype=np.int64)))
        yield t.append_column("idx", pa.array(np.arange(seen[b.event], seen[b.event] + n, dtype=np.int64)))
        seen[b.event] += n


# --------------------------------------------------------------------------
# events -> per-thread intervals (DuckDB SQL)
# --------------------------------------------------------------------------

#: Per thread, its state changes: switched out (runnable when preempted, else
#: blocked), switched in (running), woken (runnable, only from blocked: a wake-up
#: of a running or runnable task changes nothing; a new task, LTTng's
#: sched_wakeup_new, is runnable from then even with no state known before). Consecutive equal states are
#: one interval; an interval ends at the thread's next change (its last one at
#: the end of its source's data). Before its first switch a thread's state is
#: unknown (no interval). A runnable interval's CPU is the one it then ran on.
#: A CPU runs the thread last switched in on it. When a switch on that CPU names
#: another thread as switched out (the recorder missed a switch: perf does not
#: see every task of the machine, nor always a task moved by sched_setaffinity),
#: the thread switched out is taken to have run since the CPU's previous switch
#: (as `perf sched timehist` does), or since its own previous event if that is
#: later; the thread switched in before is in an unknown state from then until
#: its next event. Intervals of length 0 are left out.
#: Each interval has the thread's name (comm) in force from its start: the one the
#: event that started it reported (the switch-in's next_comm, the switch-out's
#: prev_comm, the wake-up's comm). A rename (perf's COMM records: exec or
#: prctl(PR_SET_NAME); LTTng's sched_process_exec, task_rename) starts a new
#: interval in the same state with the new name.
INTERVALS_SQL = """
    WITH cpu_seq AS (
        SELECT host_id, cpu, ts, seq, prev_tid, prev_runnable, prev_comm, next_tid,
               lag(next_tid) OVER w AS was_tid, lag(ts) OVER w AS t0
        FROM ev WHERE kind = 'switch' WINDOW w AS (PARTITION BY host_id, cpu ORDER BY ts, seq)),
    trans0 AS (
        SELECT host_id, prev_tid AS tid, ts, seq, 0 AS sub, cpu,
               CASE WHEN prev_runnable THEN 'runnable' ELSE 'blocked' END AS st, prev_comm AS comm,
               CASE WHEN was_tid <> prev_tid THEN t0 END AS missed_in_after, was_tid
        FROM cpu_seq WHERE prev_tid <> 0 AND prev_tid <> next_tid
        UNION ALL
        SELECT host_id, next_tid, ts, seq, 1, cpu, 'running', next_comm, NULL, NULL
        FROM ev WHERE kind = 'switch' AND next_tid <> 0 AND prev_tid <> next_tid
        UNION ALL
        SELECT host_id, woken_tid, ts, seq, 0, target_cpu, kind, woken_comm, NULL, NULL
        FROM ev WHERE kind IN ('wakeup', 'wakeup_new', 'rename') AND woken_tid <> 0),
    lagged AS (  -- a rename shows the thread running then, not switched in after it: not its previous event here
        SELECT *, greatest(missed_in_after, coalesce(last_value(CASE WHEN st <> 'rename' THEN ts END IGNORE NULLS) OVER (
                   PARTITION BY host_id, tid ORDER BY ts, seq, sub ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                   missed_in_after)) AS ran_from
        FROM trans0),
    trans AS (
        SELECT host_id, tid, ts, seq, sub, cpu, st, comm FROM lagged
        UNION ALL
        SELECT host_id, tid, ran_from, seq, -1, cpu, 'running', comm FROM lagged WHERE missed_in_after IS NOT NULL
        UNION ALL
        SELECT host_id, was_tid, ran_from, seq, -2, cpu, 'unknown', NULL FROM lagged
        WHERE missed_in_after IS NOT NULL AND was_tid <> 0),
    known AS (
        SELECT *, last_value(CASE WHEN st NOT IN ('wakeup', 'wakeup_new', 'rename') THEN st END IGNORE NULLS) OVER w AS before,
               last_value(CASE WHEN st NOT IN ('wakeup', 'wakeup_new', 'rename') THEN cpu END IGNORE NULLS) OVER w AS before_cpu
        FROM trans
        WINDOW w AS (PARTITION BY host_id, tid ORDER BY ts, seq, sub ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
    eff AS (
        SELECT host_id, tid, ts, seq, sub, CASE WHEN st = 'rename' THEN before_cpu ELSE cpu END AS cpu,
               CASE WHEN st IN ('wakeup', 'wakeup_new') THEN 'runnable' WHEN st = 'rename' THEN before ELSE st END AS st, comm
        FROM known WHERE st NOT IN ('wakeup', 'wakeup_new', 'rename') OR (st = 'rename' AND before IS NOT NULL)
                         OR (st <> 'rename' AND before IN ('blocked', 'unknown'))
                         OR (st = 'wakeup_new' AND before IS NULL)),
    chg AS (
        SELECT * FROM (
            SELECT *, lag(st) OVER w AS prev_st, lag(comm) OVER w AS prev_comm FROM eff
            WINDOW w AS (PARTITION BY host_id, tid ORDER BY ts, seq, sub))
        WHERE prev_st IS NULL OR prev_st <> st OR comm IS DISTINCT FROM prev_comm),
    iv AS (
        SELECT host_id, tid, st, comm, ts AS start_ts, cpu,
               lead(ts) OVER w AS end_ts, lead(st) OVER w AS next_st, lead(cpu) OVER w AS next_cpu
        FROM chg WINDOW w AS (PARTITION BY host_id, tid ORDER BY ts, seq, sub)),
    ends AS (SELECT host_id, max(ts) AS last_ts FROM ev GROUP BY host_id)
    SELECT iv.host_id, iv.tid, kt.pid, iv.st AS state, iv.comm AS name,
           CASE iv.st WHEN 'running' THEN iv.cpu
                      WHEN 'runnable' THEN CASE WHEN iv.next_st = 'running' THEN iv.next_cpu ELSE iv.cpu END END AS cpu,
           iv.start_ts, coalesce(iv.end_ts, ends.last_ts) AS end_ts
    FROM iv JOIN ends USING (host_id) LEFT JOIN kernel_threads kt USING (host_id, tid)
    WHERE iv.st <> 'unknown' AND coalesce(iv.end_ts, ends.last_ts) > iv.start_ts
    ORDER BY iv.host_id, iv.tid, iv.start_ts"""

#: Every thread the events name: its process (the perf sample's pid of the task
#: when it was current; LTTng without a pid context: the UST threads' process) and
#: its last name (the name in force at a time is in `thread_states.name`).
THREADS_SQL = """
    WITH names AS (
        SELECT host_id, prev_tid AS tid, ts, prev_comm AS comm, cur_pid AS pid FROM ev WHERE kind = 'switch'
        UNION ALL SELECT host_id, next_tid, ts, next_comm, NULL FROM ev WHERE kind = 'switch'
        UNION ALL SELECT host_id, woken_tid, ts, woken_comm, NULL FROM ev WHERE kind IN ('wakeup', 'wakeup_new', 'rename')),
    t AS (
        SELECT host_id, tid, arg_max(comm, ts) AS name, arg_max(pid, ts) FILTER (WHERE pid IS NOT NULL) AS pid
        FROM names WHERE tid IS NOT NULL AND tid <> 0 GROUP BY host_id, tid),
    t2 AS (
        SELECT t.host_id, t.tid, coalesce(t.pid, u.pid) AS pid, t.name
        FROM t LEFT JOIN ust_threads u ON u.host_id = t.host_id AND u.tid = t.tid)
    SELECT a.host_id, a.tid, a.pid, a.name, coalesce(m.name, a.name) AS procname
    FROM t2 a LEFT JOIN t2 m ON m.host_id = a.host_id AND m.tid = a.pid
    ORDER BY a.host_id, a.tid"""

PREEMPTIONS_SQL = """
    SELECT e.host_id, e.ts, e.cpu, e.prev_tid AS tid, a.pid, e.next_tid AS by_tid, b.pid AS by_pid
    FROM ev e LEFT JOIN kernel_threads a ON a.host_id = e.host_id AND a.tid = e.prev_tid
    LEFT JOIN kernel_threads b ON b.host_id = e.host_id AND b.tid = e.next_tid
    WHERE e.kind = 'switch' AND e.prev_runnable AND e.prev_tid <> 0 AND e.next_tid <> 0 AND e.prev_tid <> e.next_tid
    ORDER BY e.host_id, e.ts, e.seq"""

MIGRATIONS_SQL = """
    SELECT host_id, start_ts AS ts, tid, pid, from_cpu, cpu AS to_cpu FROM (
        SELECT *, lag(cpu) OVER (PARTITION BY host_id, tid ORDER BY start_ts) AS from_cpu
        FROM thread_states WHERE state = 'running')
    WHERE from_cpu <> cpu ORDER BY host_id, ts, tid"""

_PA_TYPES = {"BIGINT": "int64", "VARCHAR": "large_string", "DOUBLE": "float64", "UBIGINT": "uint64"}


def _columns(name: str) -> list[tuple[str, str]]:
    """(column, SQL type) of a kernel table as the model's schema declares it."""
    import json

    from roscope import _core

    spec = next(t for t in json.loads(_core.schema())["tables"] if t["name"] == name)
    return [(c["name"], c["type"]) for c in spec["columns"]]


def _declared(name: str):
    import pyarrow as pa

    return pa.schema([(c, getattr(pa, _PA_TYPES[t])()) for c, t in _columns(name)])


def empty_tables() -> dict:
    """The kernel tables with no rows (a trace without kernel data)."""
    import pyarrow as pa

    # Not Schema.empty_table(): it imports pandas (~0.35 s on every load without kernel data).
    return {name: pa.Table.from_batches([], schema=_declared(name)) for name in TABLES}


def _ust_range(arrow: dict, trace_ids: set[int]) -> tuple[int, int] | None:
    import pyarrow.compute as pc

    p = arrow.get("processes")
    if p is None or not p.num_rows:
        return None
    keep = pc.is_in(p.column("trace_id"), value_set=__import__("pyarrow").array(sorted(trace_ids), "int64"))
    p = p.filter(keep)
    if not p.num_rows:
        return None
    return pc.min(p.column("first_ts")).as_py(), pc.max(p.column("last_ts")).as_py()


def _check_aligned(path: str, span: tuple[int, int] | None, ust: tuple[int, int] | None, clock: str | None) -> None:
    """Refuses a perf.data not on CLOCK_MONOTONIC, or whose events (`span`: first
    and last time, None without events) do not overlap the trace's (`ust`)."""
    if clock is None or clock.lower() not in ("monotonic", "clock_monotonic"):
        which = "perf's own clock" if clock is None else f"clock {clock}"
        raise InputError(f"{path}: recorded with {which}, not "
                         "CLOCK_MONOTONIC: its times cannot be aligned with the trace's (record with "
                         "`roscope record --kernel`, or `perf record -k mono`)")
    if ust is None or span is None:
        return
    lo, hi = span
    if hi < ust[0] or lo > ust[1]:
        raise InputError(f"{path}: its sched events ({lo / 1e9:.6f} s to {hi / 1e9:.6f} s of CLOCK_MONOTONIC) do not "
                         f"overlap the trace's events ({ust[0] / 1e9:.6f} s to {ust[1] / 1e9:.6f} s): "
                         "not recorded with this trace, or on another machine or boot")


def _kernel_trace_dirs(arrow: dict) -> list[tuple[str, int]]:
    """(path, host_id) of the LTTng kernel traces whose metadata declares sched_switch."""
    tr = arrow.get("traces")
    if tr is None:
        return []
    out = []
    for row in tr.select(["path", "host_id", "domain"]).to_pylist():  # one row per trace directory
        if row["domain"] != "kernel":
            continue
        meta = os.path.join(row["path"], "metadata")
        try:
            with open(meta, "rb") as f:
                has = b"sched_switch" in f.read()
        except OSError:
            has = False
        if has:
            out.append((row["path"], row["host_id"]))
    return out


def _clock_maps(arrow: dict) -> dict:
    """{host_id: (x0_ns, ref_at_x0_ns, slope)} of the hosts whose clock the model maps
    onto a reference host's (table `clock_sync`)."""
    cs = arrow.get("clock_sync")
    if cs is None or not cs.num_rows:
        return {}
    out = {}
    for r in cs.select(["host_id", "x0_ns", "ref_at_x0_ns", "slope"]).to_pylist():  # one row per host
        if r["slope"] is not None and r["x0_ns"] is not None and r["ref_at_x0_ns"] is not None:
            out[r["host_id"]] = (r["x0_ns"], r["ref_at_x0_ns"], r["slope"])
    return out


def _to_reference(events, m):
    """The events with their times mapped onto the reference host's clock, as the
    model maps the host's UST times (`t_ref = ref_at_x0_ns + slope * (t - x0_ns)`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    x0, ref, slope = m
    rel = pc.cast(pc.subtract(events.column("ts"), x0), pa.float64())
    ts = pc.add(pc.cast(pc.round(pc.multiply(rel, slope)), pa.int64()), ref)
    return events.set_column(events.schema.get_field_index("ts"), "ts", ts)


#: The events table of a kernel build (`_event_schema`, its host and its place in
#: the sources' order), and the one an LTTng kernel trace is gathered in before its
#: events are put in time order (`lttng_chunks`; `ots`: the time before the clock
#: mapping), are made with these columns. Temporary tables of the load's connection:
#: under its memory limit DuckDB moves them to its temporary directory; never in the
#: database written.
def _ev_columns(*extra: str) -> str:
    """SQL column definitions of `_event_schema()`'s columns, then `extra`."""
    pa = _arrow()[0]
    sql = {pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN", pa.string(): "VARCHAR", pa.large_string(): "VARCHAR"}
    return ", ".join([f"{f.name} {sql[f.type]}" for f in _event_schema()] + list(extra))


class _Events:
    """Stores the normalized sched events chunk by chunk into the temporary table
    `ev` of a DuckDB connection, numbering them in the sources' order (`seq`)."""

    def __init__(self, con):
        self.con = con
        self.seq = 0
        con.execute(f"CREATE TEMP TABLE ev ({_ev_columns('host_id BIGINT', 'seq BIGINT')})")

    def add(self, ev, host: int, m) -> tuple[int, int] | None:
        """Stores one chunk (its times mapped with clock map `m` if not None) as the
        next events; returns its first and last time, None if it is empty."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        n = ev.num_rows
        if not n:
            return None
        if m is not None:
            ev = _to_reference(ev, m)
        ev = ev.append_column("host_id", pa.array(np.full(n, host, dtype=np.int64)))
        ev = ev.append_column("seq", pa.array(np.arange(self.seq, self.seq + n, dtype=np.int64)))
        self.con.from_arrow(ev).insert_into("ev")
        self.seq += n
        mm = pc.min_max(ev.column("ts"))
        return mm["min"].as_py(), mm["max"].as_py()

    def add_lttng(self, trace_dir: str, host: int, m) -> None:
        """Stores an LTTng kernel trace's events: gathered as they are read, then
        added in time order (ts before the clock mapping, `lttng_chunks`' rank and idx)."""
        self.con.execute(f"CREATE TEMP TABLE ev_lttng ({_ev_columns('rank BIGINT', 'idx BIGINT', 'ots BIGINT')})")
        try:
            for t in lttng_chunks([trace_dir]):
                t = t.append_column("ots", t.column("ts"))
                self.con.from_arrow(_to_reference(t, m) if m is not None else t).insert_into("ev_lttng")
            n = self.con.execute("SELECT count(*) FROM ev_lttng").fetchall()[0][0]
            self.con.execute(f"INSERT INTO ev SELECT {', '.join(_event_schema().names)}, ? AS host_id, "
                             "? + row_number() OVER (ORDER BY ots, rank, idx) - 1 AS seq FROM ev_lttng",
                             [host, self.seq])
            self.seq += n
        finally:
            self.con.execute("DROP TABLE ev_lttng")


def _store_events(con, inputs: Sequence[str], arrow: dict, warnings: list[str]) -> bool:
    """Stores the normalized sched events of every kernel source of a load into the
    temporary table `ev` of `con` (`_Events`); False when there is no source."""
    tr = arrow.get("traces")
    if tr is None or not tr.num_rows:
        return False
    rows = tr.select(["trace_id", "host_id", "path", "domain"]).to_pylist()  # one row per trace directory
    maps = _clock_maps(arrow)
    ev = None
    for perf, dirs in find_perf(inputs, [r["path"] for r in rows]):
        mine = [r for r in rows if r["path"] in dirs]
        if not has_sched_events(perf):
            warnings.append(f"{perf}: left out: it has no sched:sched_switch events (not written by "
                            "`roscope record --kernel`; e.g. a CPU profile)")
            continue
        ev = ev or _Events(con)
        host = mine[0]["host_id"]
        facts: dict = {}
        span = None
        for chunk in perf_chunks(perf, facts):
            got = ev.add(chunk, host, maps.get(host))  # a host whose clock the model maps onto the reference host's
            if got is not None:
                span = got if span is None else (min(span[0], got[0]), max(span[1], got[1]))
        _check_aligned(perf, span, _ust_range(arrow, {r["trace_id"] for r in mine}), facts["clock"])
        warnings += [f"{perf}: perf lost events while recording ({w}): thread states near the gaps may be "
                     "wrong" if " lost " in w else f"{perf}: perf: {w}" for w in facts["warnings"]]
    for path, host in _kernel_trace_dirs(arrow):
        ev = ev or _Events(con)
        ev.add_lttng(path, host, maps.get(host))
    return ev is not None


def _ust_threads(arrow: dict):
    import pyarrow as pa

    th, pr = arrow.get("threads"), arrow.get("processes")
    if th is None or pr is None:
        return pa.table({"host_id": pa.array([], "int64"), "tid": pa.array([], "int64"), "pid": pa.array([], "int64")})
    return th.select(["proc_id", "tid"]).join(pr.select(["proc_id", "host_id", "pid"]), "proc_id").select(
        ["host_id", "tid", "pid"])


def store(con, inputs: Sequence[str], arrow: dict, warnings: list[str], enabled: bool = True) -> dict[str, int]:
    """Creates the kernel tables (`TABLES`) of a load in the DuckDB connection `con`
    (the database being written) and returns their row counts. Built from the
    perf.data beside the traces and the LTTng kernel traces with sched events (`arrow`:
    the model's tables `traces`, `processes`, `threads`, `clock_sync`): their events
    go chunk by chunk into a temporary table, and the tables are made from it by SQL
    in `con`, so memory stays under the connection's limit (DuckDB spills to its
    temporary directory) whatever the length of the recording. Empty when there are
    none or `enabled` is False (no work then beyond looking for the files)."""
    if not enabled or not _store_events(con, inputs, arrow, warnings):
        for name, tbl in empty_tables().items():
            con.from_arrow(tbl).create(name)
        return dict.fromkeys(TABLES, 0)
    con.register("ust_threads", _ust_threads(arrow))
    try:
        return _build_within_memory(con, warnings)
    finally:
        with contextlib.suppress(Exception):  # never hiding the error that got here
            con.unregister("ust_threads")
            con.execute("DROP TABLE IF EXISTS ev")


#: DuckDB's memory limit while the kernel tables are made, at least (bytes): its
#: window functions spill what does not fit, but hold one partition at a time in
#: memory, here all the changes of one thread (or the switches of one CPU). 256 MiB
#: hold bench/why_cost.py's 31.5 s recording (busiest thread: 0.8M changes); four
#: times its events needed 1 GiB (not bounded: sorts and self-joins by rowid
#: instead of windows failed at even less).
KERNEL_MEMORY = 256 << 20


def _build_within_memory(con, warnings: list[str]) -> dict[str, int]:
    """`_build` with DuckDB's memory limit raised to `KERNEL_MEMORY` if lower, and
    doubled while one thread's events do not fit (`db.within_memory`); the limit
    is put back afterwards."""
    from roscope.db import within_memory

    def undo() -> None:
        for name in TABLES:
            con.execute(f'DROP TABLE IF EXISTS "{name}"')

    return within_memory(con, lambda: _build(con), warnings, "kernel scheduling data (one thread's sched events)",
                         at_least=KERNEL_MEMORY, undo=undo)


def _build(con) -> dict[str, int]:
    """The kernel tables from the events `ev` and the UST threads `ust_threads` of
    `con` (SQL only); returns their row counts."""
    from roscope.results import _columns_sql

    rows = {}
    for name, sql in (("kernel_threads", THREADS_SQL), ("thread_states", INTERVALS_SQL),
                      ("preemptions", PREEMPTIONS_SQL), ("migrations", MIGRATIONS_SQL)):
        # the columns as the schema declares them (names and types of roscope's own schema, not input)
        con.execute(f'CREATE TABLE "{name}" ({_columns_sql(name)})')
        con.execute(f'INSERT INTO "{name}" BY NAME {sql}')
        rows[name] = con.table(name).count("*").fetchall()[0][0]
    return rows
