"""Kernel scheduling in the execution model (docs/model.md: `thread_states`,
`preemptions`, `migrations`, `kernel_threads`).

Two sources:

- ``perf.data`` written by ``roscope record --kernel`` (``perf record -k mono -e
  sched:sched_switch -e sched:sched_wakeup -a``), read directly by the Rust core
  (its sched samples and COMM records, in ``perf script``'s order); a file it does not
  handle (pipe mode, compressed, ...) is read through perf's own reader, ``perf
  script`` with a fixed field list, its text parsed by pyarrow (CSV reader, regular
  expressions over whole columns), never line by line in Python: the one path here that
  needs pyarrow, which the core install does not have (`pip install 'roscope[arrow]'`);
- LTTng kernel traces with ``sched_switch`` / ``sched_wakeup`` (/``sched_wakeup_new``,
  ``sched_process_exec``, ``task_rename``), read by roscope's CTF reader.

Both feed the core's streamed builder (``_core.KernelBuilder``,
crates/model/src/kernel): per-thread state intervals (running on a CPU, runnable,
blocked), preemptions, migrations and thread names in one pass, holding only what is
still open; its rows come in chunks into temporary tables of the load's database, and
the tables are made from them by one join with the threads' processes. The model's
tables it needs (`NEEDS`) are read back from the load's database, and the builder's
chunks go into it as the core's Arrow streams: no pyarrow. Timestamps are
ns of CLOCK_MONOTONIC, the clock of the UST events (perf ``-k mono``; LTTng's monotonic
clock); a perf file recorded with another clock, or whose time range does not overlap
the trace's, is refused with an error naming the file.
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator, Sequence

from roscope import _core, extras
from roscope.database import columns_sql
from roscope.errors import InputError
from roscope.manifest import find_perf
from roscope.processes import group

#: The tables this module adds to every database (empty without kernel data).
TABLES = ("kernel_threads", "thread_states", "preemptions", "migrations")

#: The model's tables `store` reads from the load's database (small: one row per trace,
#: process, thread, host).
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
#: MiB it also grew with the file; at 2 MiB it does not, and is no slower (bench/README.md).
PERF_BLOCK = 2 << 20


def _arrow():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    return pa, pc, pcsv


# --------------------------------------------------------------------------
# perf.data -> events (Arrow)
# --------------------------------------------------------------------------

def _perf_script(path: str):
    try:
        return group.start("perf-script", ["perf", "script", "--header", "--show-task-events", "-i", path, "--ns", "-F",
                                           PERF_FIELDS], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise InputError(f"{path}: reading it needs the 'perf' command (Debian package linux-perf)") from None


def has_sched_events(path: str) -> bool:
    """Whether perf.data `path` recorded sched:sched_switch (its header, through
    `perf evlist`): a CPU profile beside a trace is not kernel scheduling data."""
    try:
        p = group.output("perf", ["perf", "evlist", "-i", path], timeout=60)
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
    started = _perf_script(path)
    proc = started.popen
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
        group.stop(started, 1.0)
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
        # the regular expression only on the lines of its event (faster than on all: bench/README.md)
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
# the streamed build (Rust) and the tables
# --------------------------------------------------------------------------

#: Rows of the builder's output handed over at a time, each chunk one insert: DuckDB
#: writes appends of half a million rows straight to the file, whereas the rows of smaller
#: ones wait for the final checkpoint, which then costs as much as the inserts did
#: (4M thread states: 4.2 s of inserts + 0.3 s of checkpoint at 512k rows, 4.2 + 4.7 s at
#: 128k rows).
CHUNK_ROWS = 1 << 19

#: Read perf.data with the core's own reader (False: always through `perf script`).
READ_PERF = True

#: The builder writes `thread_states`, `preemptions` and `migrations` with each thread's
#: process as known when a row is written, and gives every thread in `kernel_threads_raw`
#: (a temporary table) with its final process (the last one perf saw current with it,
#: else the UST threads' one) and whether some row was written with another: those
#: rows are corrected, and `kernel_threads` is made from it with each process's name
#: (that of the thread whose tid is the pid, else the thread's own).
THREADS_SQL = """
    SELECT a.host_id, a.tid, a.pid, a.name, coalesce(m.name, a.name) AS procname
    FROM kernel_threads_raw a LEFT JOIN kernel_threads_raw m ON m.host_id = a.host_id AND m.tid = a.pid"""
#: (table, its thread column, its process column) of the rows written with a process.
PID_COLUMNS = (("thread_states", "tid", "pid"), ("preemptions", "tid", "pid"), ("preemptions", "by_tid", "by_pid"),
               ("migrations", "tid", "pid"))


def create_empty(con) -> dict[str, int]:
    """The kernel tables with no rows (a load without kernel data), made from the schema's
    own names and types (no text from a trace, no pyarrow); returns their row counts."""
    for name in TABLES:
        con.execute(f'CREATE TABLE "{name}" ({columns_sql(name)})')
    return dict.fromkeys(TABLES, 0)


def _has_table(con, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND NOT temporary",
                            [name]).fetchall()[0][0])


def _rows(con, table: str, columns: Sequence[str]) -> list[dict]:
    """The rows of one of the model's small tables (`NEEDS`) in the load's database, as
    dicts ([] when the model has no such table)."""
    if not _has_table(con, table):
        return []
    rel = con.table(table).select(*columns)  # roscope's own names, relational API
    return [dict(zip(columns, r)) for r in rel.fetchall()]


def _ust_range(con, trace_ids: set[int]) -> tuple[int, int] | None:
    """(first, last) time of the UST events of the traces' processes, None without any."""
    if not _has_table(con, "processes"):
        return None
    n, lo, hi = con.execute("SELECT count(*), min(first_ts), max(last_ts) FROM processes WHERE list_contains(?, trace_id)",
                            [sorted(trace_ids)]).fetchall()[0]
    return (lo, hi) if n else None


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


def _kernel_trace_dirs(con) -> list[tuple[str, int]]:
    """(path, host_id) of the LTTng kernel traces whose metadata declares sched_switch."""
    out = []
    for row in _rows(con, "traces", ["path", "host_id", "domain"]):  # one row per trace directory
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


def _clock_maps(con) -> dict:
    """{host_id: (x0_ns, ref_at_x0_ns, slope)} of the hosts whose clock the model maps
    onto a reference host's (table `clock_sync`)."""
    out = {}
    for r in _rows(con, "clock_sync", ["host_id", "x0_ns", "ref_at_x0_ns", "slope"]):  # one row per host
        if r["slope"] is not None and r["x0_ns"] is not None and r["ref_at_x0_ns"] is not None:
            out[r["host_id"]] = (r["x0_ns"], r["ref_at_x0_ns"], r["slope"])
    return out


def _to_reference(events, m):
    """The events with their times mapped onto the reference host's clock, as the
    model maps the host's UST times (`t_ref = ref_at_x0_ns + slope * (t - x0_ns)`;
    the core does the same for the sources it reads itself)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    x0, ref, slope = m
    rel = pc.cast(pc.subtract(events.column("ts"), x0), pa.float64())
    ts = pc.add(pc.cast(pc.round(pc.multiply(rel, slope)), pa.int64()), ref)
    return events.set_column(events.schema.get_field_index("ts"), "ts", ts)


class RowStore:
    """Stores the builder's chunks: into the model's tables, created with the columns
    the schema declares, and `kernel_threads_raw`, a temporary table of the
    connection."""

    def __init__(self, con):
        self.con = con
        for name in ("thread_states", "preemptions", "migrations"):
            # the columns as the schema declares them (names and types of roscope's own schema, not input)
            con.execute(f'CREATE TABLE "{name}" ({columns_sql(name)})')
        con.execute("CREATE TEMP TABLE kernel_threads_raw (host_id BIGINT, tid BIGINT, pid BIGINT, name VARCHAR, rewrite BIGINT)")

    def put(self, name: str, table) -> None:
        # the core's chunks (Arrow C streams, read by DuckDB) have the tables' columns, in order
        self.con.from_arrow(table).insert_into(name)

    def drop(self) -> None:
        self.con.execute("DROP TABLE IF EXISTS temp.kernel_threads_raw")


def _perf_script_events(kb, perf: str, host: int, m, put) -> dict:
    """A perf.data the core does not read itself, through `perf script`'s text:
    (facts: clock, warnings, span)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    facts: dict = {"span": None}
    for chunk in perf_chunks(perf, facts):
        if not chunk.num_rows:
            continue
        if m is not None:
            chunk = _to_reference(chunk, m)
        chunk = chunk.set_column(chunk.schema.get_field_index("prev_runnable"), "prev_runnable",
                                 pc.cast(chunk.column("prev_runnable"), pa.int64()))
        mm = pc.min_max(chunk.column("ts"))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        facts["span"] = (lo, hi) if facts["span"] is None else (min(facts["span"][0], lo), max(facts["span"][1], hi))
        kb.add_batch(chunk, host, put)
    return facts


def _perf_warnings(f: dict) -> list[str]:
    """perf's own words for what it lost while recording, as `perf script` says them."""
    out = []
    if f.get("lost_chunks"):
        out.append(f"Processed {f['records']} events and lost {f['lost_chunks']} chunks!")
    if f.get("lost_samples") and f["lost_samples"] > 0.05 * max(f.get("events") or 0, 1):
        out.append(f"Processed {f['events']} samples and lost {100 * f['lost_samples'] / max(f['events'], 1):.2f}% samples!")
    return out


def _read_sources(kb, inputs: Sequence[str], con, warnings: list[str], put) -> bool:
    """Feeds the builder every kernel source of a load (the perf.data beside the traces,
    the LTTng kernel traces); False when there is none."""
    rows = _rows(con, "traces", ["trace_id", "host_id", "path", "domain"])  # one row per trace directory
    if not rows:
        return False
    maps = _clock_maps(con)
    found = False
    for perf, dirs in find_perf(inputs, [r["path"] for r in rows]):
        mine = [r for r in rows if r["path"] in dirs]
        host = mine[0]["host_id"]
        m = maps.get(host)  # a host whose clock the model maps onto the reference host's
        missed = kb.missed_switches
        try:
            if not READ_PERF:
                raise _core.PerfUnsupported("the core's reader is off")
            f = kb.add_perf(perf, host, m, put)
            facts = {"clock": f["clock"], "span": (f["first_ts"], f["last_ts"]) if f["events"] else None,
                     "warnings": _perf_warnings(f)}
        except _core.PerfNoSched:
            warnings.append(f"{perf}: left out: it has no sched:sched_switch events (not written by "
                            "`roscope record --kernel`; e.g. a CPU profile)")
            continue
        except _core.PerfUnsupported:
            if not has_sched_events(perf):
                warnings.append(f"{perf}: left out: it has no sched:sched_switch events (not written by "
                                "`roscope record --kernel`; e.g. a CPU profile)")
                continue
            facts = _perf_script_events(kb, perf, host, m, put)
        except ImportError as exc:  # perf script's text is parsed by pyarrow, not in the core install
            if (msg := extras.missing_message(exc)) is None:
                raise
            raise InputError(f"{perf}: the core's reader does not handle this perf.data (read through `perf script`): "
                             f"{msg}") from None
        except ValueError as exc:
            raise InputError(f"{perf}: {exc}") from None
        found = True
        _check_aligned(perf, facts["span"], _ust_range(con, {r["trace_id"] for r in mine}), facts["clock"])
        warnings += [f"{perf}: perf lost events while recording ({w}): thread states near the gaps may be "
                     "wrong" if " lost " in w else f"{perf}: perf: {w}" for w in facts["warnings"]]
        _warn_missed(warnings, perf, kb.missed_switches - missed)
    for path, host in _kernel_trace_dirs(con):
        missed = kb.missed_switches
        kb.add_lttng(path, host, maps.get(host), put)
        _warn_missed(warnings, path, kb.missed_switches - missed)
        found = True
    return found


def _warn_missed(warnings: list[str], path: str, n: int) -> None:
    """The warning for `n` switch-outs in `path` of a thread its CPU had not switched in
    (the data misses those switches, without a loss record): those runs' starts are estimated."""
    if n:
        warnings.append(f"{path}: {n} context switch{'es' if n > 1 else ''} missing (a thread switched out "
                        "that the data never switched in, and no loss was recorded): the start of "
                        "each of those runs is estimated")


#: (host_id, tid, pid) of the threads of the UST events (one row per thread).
UST_THREADS_SQL = """
    SELECT p.host_id::BIGINT AS host_id, t.tid::BIGINT AS tid, p.pid::BIGINT AS pid
    FROM threads t JOIN processes p USING (proc_id)"""


def _ust_threads(con, kb) -> None:
    """Hands the builder the UST threads' processes, as a DuckDB result's Arrow stream."""
    if _has_table(con, "threads") and _has_table(con, "processes"):
        kb.ust_pids(con.sql(UST_THREADS_SQL))


def store(con, inputs: Sequence[str], warnings: list[str]) -> dict[str, int]:
    """Creates the kernel tables (`TABLES`) of a load in the DuckDB connection `con`
    (the database being written, the model's tables `NEEDS` already in it) and returns
    their row counts. Built from the perf.data beside the traces and the LTTng kernel
    traces with sched events by the core's streamed builder, whose rows go chunk by
    chunk into the tables, so memory stays bounded whatever the length of the
    recording; then the few rows written before their thread's process was known are
    corrected. Empty when there are none."""
    if not _has_sources(inputs, con):
        return create_empty(con)
    rows = RowStore(con)
    try:
        kb = _core.KernelBuilder(CHUNK_ROWS)
        _ust_threads(con, kb)
        _read_sources(kb, inputs, con, warnings, rows.put)
        kb.finish(rows.put)
        return _build(con)
    finally:
        with contextlib.suppress(Exception):  # never hiding the error that got here
            rows.drop()


def _has_sources(inputs: Sequence[str], con) -> bool:
    """Whether the load has a kernel source: a perf.data beside a trace, or an LTTng
    kernel trace with sched events."""
    paths = [r["path"] for r in _rows(con, "traces", ["path"])]
    return bool(paths) and bool(find_perf(inputs, paths) or _kernel_trace_dirs(con))


def _build(con) -> dict[str, int]:
    """`kernel_threads` from the builder's threads, and the rows written with a process
    other than their thread's final one corrected (SQL only); returns the row counts."""
    con.execute(f'CREATE TABLE kernel_threads ({columns_sql("kernel_threads")})')
    con.execute(f"INSERT INTO kernel_threads BY NAME {THREADS_SQL}")
    for table, tid, pid in PID_COLUMNS:  # roscope's own names
        con.execute(f"""UPDATE "{table}" SET "{pid}" = k.pid FROM kernel_threads_raw k
                        WHERE k.rewrite = 1 AND k.host_id = "{table}".host_id AND k.tid = "{table}"."{tid}"
                          AND "{table}"."{pid}" IS DISTINCT FROM k.pid""")
    return {name: con.table(name).count("*").fetchall()[0][0] for name in TABLES}
