"""Loading traces: the Rust model builder's tables into a DuckDB database.

- `build(paths)`: runs the model builder (`_core`); with `put`, it streams the
  instance tables in chunks while it reads;
- `load(paths, out)`: builds into a DuckDB file `out` (or in memory) and returns
  the writable `Database`; `write(paths, out)`: the same without opening it
  afterwards (what `roscope load` runs);
- the model's tables go in through large inserts (`_Inserts`), then the kernel
  scheduling tables (`roscope.kernel.store`), the views, `meta` and `codes`.

Every output (the database, Parquet files) is written under a temporary name
beside its final one and renamed once all are complete.
"""
from __future__ import annotations

import contextvars
import datetime as _dt
import json
import os
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roscope import _core, files, kernel, memory
from roscope import progress as progress_shown
from roscope.database import SCHEMA_VERSION, Database, connect, create_views
from roscope.errors import DatabaseError, database_error, interrupted
from roscope.manifest import attached, find_perf, record_ids
from roscope.trace import SMALL_TRACE_BYTES, check_paths, table_from_core, trace_bytes
from roscope.version import __version__

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.
if TYPE_CHECKING:
    import duckdb


@dataclass
class LoadResult:
    db_path: str
    tables: dict[str, int]
    stats: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    losses: list[tuple[str, int, int]] = field(default_factory=list)


def _import_arrow() -> None:
    import pyarrow  # noqa: F401


#: A streaming build keeps the records of this much trace time (ns) in memory:
#: older ones that nothing will change go to the database in chunks (docs/model.md).
WINDOW_NS = 1_000_000_000


#: A streaming build's builder runs at most this many chunks (one table's
#: records of one flush, about half a MiB each on a ROS 2 trace) ahead of
#: what is stored, so that it keeps reading while DuckDB stores an insert
#: (2 made it wait through every insert; each chunk more is memory).
STREAM_QUEUE = 16


def stream(paths: Sequence[str], heuristics: bool = True, progress: bool | None = None, sync: bool = True,
           window_ns: int = WINDOW_NS, flush_every: int = 0):
    """Starts a streaming build (`build` with `put`) and returns it running: the core's
    builder reads on a thread of its own (up to `STREAM_QUEUE` chunks ahead) while the
    caller goes on, e.g. imports DuckDB; `build(..., started=it)` takes its chunks."""
    return _core.ModelStream(list(paths), heuristics, bool(progress), record_ids(paths) or None, sync, window_ns,
                             flush_every=flush_every, queue=STREAM_QUEUE, meter=_meter(), attach=attached(paths))


def _meter():
    """The core's meter of a build, shown as its "reading the trace" phase: the current
    `roscope.progress` display reads it (the core's own line on stderr only when asked
    for with progress=True)."""
    meter = _core.Meter()
    progress_shown.current().phase("reading the trace", unit="MB", meter=meter, found="events", scale=1e6)
    return meter


def build(paths: Sequence[str], heuristics: bool = True, progress: bool | None = None, sync: bool = True,
          put=None, window_ns: int = WINDOW_NS, flush_every: int = 0, core: bool = False, started=None):
    """Runs the model builder; returns ({table: arrow table}, stats, warnings, losses).
    `sync`: synchronize several hosts' clocks from the messages between them.
    With `put(name, arrow_table)`, the build streams: the instance tables go to
    `put` in chunks while the builder reads (one table's chunks share its
    columns), so memory is bounded by `window_ns` of trace time, and the
    returned dict holds the rest of the tables. `flush_every`: events between
    chunks (0: the core's default). Several hosts whose clocks are
    synchronized are held to the end (every message pair is needed first).
    `core`: the tables (and chunks) as the core's Arrow streams, not pyarrow Tables
    (DuckDB reads either; pyarrow is then not imported). `started`: the build
    `stream` started (with these paths and options), its chunks to `put`."""
    convert = (lambda t: t) if core else table_from_core
    # The core leaves the GIL while it builds: import Arrow meanwhile.
    warm = threading.Thread(target=(lambda: None) if core else _import_arrow, daemon=True)
    warm.start()
    try:
        if put is None:
            tables, stats, warnings, losses = _core.build_model(list(paths), heuristics, bool(progress),
                                                                record_ids(paths) or None, sync, meter=_meter(),
                                                                attach=attached(paths))
        else:
            running = started or stream(paths, heuristics, progress, sync, window_ns, flush_every)
            warm.join()
            while (chunk := running.next_chunk()) is not None:
                put(chunk[0], convert(chunk[1]))
            tables, stats, warnings, losses = running.finish()
    finally:
        # Also on an error: an interpreter that exits while this thread still
        # imports DuckDB/pyarrow can abort (issue 15, item 3).
        warm.join()
    arrow = {name: convert(table) for name, table in tables}
    return arrow, dict(stats), list(warnings), [tuple(x) for x in losses]


def _put(con: duckdb.DuckDBPyConnection, name: str, tbl, exists: bool) -> None:
    """Stores an Arrow table (or a chunk of one) as the model table `name`,
    created with the Arrow table's column types (relational API, no SQL text)."""
    rel = con.from_arrow(tbl)
    if exists:
        rel.insert_into(name)
    else:
        rel.create(name)


#: Chunks of a streaming build are stored in inserts of about this many bytes
#: (all tables together): DuckDB inserts large batches faster than the
#: builder's chunks one by one; 8 MiB rather than 16 lets more of the storing
#: run while the builder reads, on the other core (`roscope load` of the Autoware
#: trace 0.78x the wall time, same CPU; bench/README.md, issue 42 round 5).
INSERT_BYTES = 8 << 20

#: ... and committed every this many bytes: one commit per insert costs DuckDB
#: about as much again (bench/load_speed.py), while DuckDB's memory cap still
#: holds within a transaction (what does not fit is written out).
COMMIT_BYTES = 256 << 20


class _EarlyBuild:
    """A small trace's model built (`build`, streaming, as the core's Arrow streams) in a
    thread started before DuckDB is imported and connected: the core leaves the GIL
    while it builds, so on two cores its build and that start-up (about 0.1 s) overlap.
    `result()` waits for it and gives the streamed chunks, [(table, chunk)], then what
    `build` returns, or raises what it raised;
    `join()` only waits (the thread must not outlive an error on the way)."""

    def __init__(self, paths: Sequence[str], heuristics: bool, sync: bool):
        self._out: tuple | None = None
        self._error: BaseException | None = None
        ctx = contextvars.copy_context()  # the progress shown (`progress.current`) goes on in the thread
        self._thread = threading.Thread(target=ctx.run, args=(self._run, list(paths), heuristics, sync), daemon=True)
        self._thread.start()

    def _run(self, paths: list[str], heuristics: bool, sync: bool) -> None:
        try:
            chunks: list[tuple[str, object]] = []
            self._out = (chunks, *build(paths, heuristics, sync=sync, put=lambda n, t: chunks.append((n, t)), core=True))
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def join(self) -> None:
        self._thread.join()

    def result(self) -> tuple:
        self.join()
        if self._error is not None:
            raise self._error
        return self._out


def _fill_small(con, paths: Sequence[str], early: _EarlyBuild, with_kernel: bool):
    """A small trace's model (`_EarlyBuild`, without pyarrow) stored table by table
    from the core's Arrow streams; the kernel tables as `kernel.store` makes them, or,
    when there is no kernel source, empty and made from the schema (no pyarrow
    either). DuckDB then runs on one thread: on so few rows a second one only holds
    more memory (about 10 MB of `roscope stats`'s peak). And DuckDB's allocator hands
    back what the statistics queries that follow free (`memory.hand_back_freed`): it
    kept about 13 MB of it resident until the connection closed.
    Returns (names, rows, stats, warnings, losses, kernel rows)."""
    con.execute("SET threads = 1")
    memory.hand_back_freed(con)
    chunks, arrow, stats, warnings, losses = early.result()
    rows: dict[str, int] = {}

    def put(name: str, tbl) -> None:
        _put(con, name, tbl, name in rows)
        rows[name] = rows.get(name, 0) + tbl.num_rows

    con.begin()
    for name, chunk in chunks:
        put(name, chunk)
    del chunks[:]
    names = list(arrow)
    for name in names:
        put(name, arrow.pop(name))
    con.commit()
    return names, rows, stats, warnings, losses, _kernel_tables(con, paths, warnings, with_kernel)


def _kernel_tables(con, paths: Sequence[str], warnings: list[str], with_kernel: bool) -> dict[str, int]:
    """The kernel tables, once the model's are stored: as `kernel.store` makes them
    (reading the model's tables it needs from `con`), or, when there is no kernel
    source, empty and made from the schema; pyarrow is not imported either way.
    Returns their row counts."""
    traces = con.execute("SELECT path, domain FROM traces").fetchall()
    if with_kernel and (any(d == "kernel" for _p, d in traces) or find_perf(paths, [p for p, _d in traces])):
        return kernel.store(con, paths, warnings)
    return kernel.create_empty(con)


class _Inserts:
    """Gathers a streaming build's chunks and stores them in large inserts,
    in transactions of `COMMIT_BYTES`, with DuckDB on one thread (the builder
    has the other core; two threads of DuckDB cost more CPU for no gain);
    `rows` counts each table's rows. `close()` stores the rest, commits and
    gives DuckDB its threads back."""

    def __init__(self, con):
        self.con = con
        self.rows: dict[str, int] = {}
        self.created: set[str] = set()
        self.pending: dict[str, list] = {}
        self.sizes: dict[str, int] = {}  # bytes pending per table (Table.nbytes is not free)
        self.size = 0
        self.uncommitted = 0
        self.in_transaction = False
        self.single_thread = False

    def put(self, name: str, tbl) -> None:
        n = tbl.nbytes
        self.rows[name] = self.rows.get(name, 0) + tbl.num_rows
        self.pending.setdefault(name, []).append(tbl)
        self.sizes[name] = self.sizes.get(name, 0) + n
        self.size += n
        while self.size >= INSERT_BYTES:
            self._store(max(self.sizes, key=self.sizes.__getitem__))

    def _store(self, name: str) -> None:
        chunks = self.pending.pop(name)
        n = self.sizes.pop(name)
        self.size -= n
        if not self.single_thread:
            self.con.execute("SET threads = 1")
            self.single_thread = True
        if not self.in_transaction:
            self.con.begin()
            self.in_transaction = True
        # The chunks (the core's Arrow tables) as one: DuckDB reads them where they are
        # (no concatenated copy), and pyarrow is not imported (its libraries: 37 MiB of
        # `load`'s peak).
        table = _core.ArrowTable.concat(chunks)
        del chunks
        _put(self.con, name, table, name in self.created)
        self.created.add(name)
        self.uncommitted += n
        if self.uncommitted >= COMMIT_BYTES:
            self._commit()

    def _commit(self) -> None:
        if self.in_transaction:
            self.con.commit()
            self.in_transaction = False
        self.uncommitted = 0

    def close(self) -> None:
        for name in list(self.pending):
            self._store(name)
        self._commit()
        if self.single_thread:
            self.con.execute("RESET threads")
            self.single_thread = False


def _fill(con: duckdb.DuckDBPyConnection, meta: dict) -> None:
    """The views, `meta` and `codes`, once the model's tables are in."""
    create_views(con)
    # Each table in one statement, its columns as lists (executemany runs one statement
    # per row: 25 ms of a small trace's `roscope stats`).
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO meta SELECT unnest($1), unnest($2)", [list(meta), [json.dumps(v) for v in meta.values()]])
    # The code tables of the schema (crates/model/src/schema.rs), as one lookup table.
    con.execute("CREATE TABLE codes (code_table VARCHAR, code BIGINT, name VARCHAR, doc VARCHAR)")
    codes = [(t["name"], v["code"], v["name"], v["doc"]) for t in json.loads(_core.schema())["codes"] for v in t["values"]]
    con.execute("INSERT INTO codes SELECT unnest($1), unnest($2), unnest($3), unnest($4)", [list(c) for c in zip(*codes)])


#: DuckDB's memory cap while `load` writes a database file (bytes): what does
#: not fit is written out, so a long trace does not need more.
LOAD_MEMORY = 64 << 20


def _write_outputs(target: str | None, parquet_dir: str | None, fill, force: bool, memory: int | None = None,
                   inputs: Sequence[str] = ()):
    """Writes the database (`target`, or in memory if None; `fill(con)` stores
    the tables and returns their names) and the Parquet files, each staged in a
    private directory beside its final place (roscope.files.Staged), and puts them
    in place only once all are complete: a failure or an interrupt leaves no
    partial file and every old output intact. Returns the in-memory connection, or None."""
    import duckdb

    con = None
    with files.Staged() as staged:
        try:
            if target is None:
                con = duckdb.connect(":memory:")
            else:
                tmp_db = staged.path(target, force=force, inputs=inputs, companions=files.DUCKDB_COMPANIONS, checked=True)
                con = connect(tmp_db, read_only=False)
                budget = LOAD_MEMORY if memory is None else int(memory)
                if budget > 0:
                    con.execute("SET memory_limit = ?", [f"{max(budget >> 20, 16)}MiB"])
            names = fill(con)
            for name in names if parquet_dir else ():
                final = os.path.join(parquet_dir, f"{name}.parquet")
                # relational API: no SQL text built from the path
                con.table(name).write_parquet(staged.path(final, force=force, inputs=inputs))
            if target is not None:
                con.execute("CHECKPOINT")  # everything into the file (a full disk fails here, not silently at close)
                con.close()
                con = None
                if os.path.exists(tmp_db + ".wal"):
                    raise DatabaseError(f"{target}: DuckDB could not write the whole database (its log stayed)")
            staged.commit()
            return con
        except BaseException as exc:
            if con is not None and target is not None:
                con.close()
            if interrupted(exc):
                raise KeyboardInterrupt from None
            if isinstance(exc, duckdb.Error):
                raise database_error(exc, target or parquet_dir, "write") from None
            raise


def _parquet_targets(parquet_dir: str, force: bool, inputs: Sequence[str]) -> None:
    """Refuses, before any work, a Parquet directory that is not one (or is in an
    input), or existing table files that may not be replaced."""
    files.check(parquet_dir, directory=True, inputs=inputs, what="Parquet directory")
    if not os.path.isdir(parquet_dir):
        return
    for n in sorted(os.listdir(parquet_dir)):
        if n.endswith(".parquet"):
            files.check(os.path.join(parquet_dir, n), force=force, inputs=inputs)


def load(
    paths: Sequence[str],
    out: str | None = None,
    *,
    heuristics: bool = True,
    parquet_dir: str | None = None,
    force: bool = False,
    sync: bool = True,
    memory: int | None = None,
    window_ns: int | None = None,
    kernel: bool = True,
) -> tuple[Database, LoadResult]:
    """Builds the model of `paths` into a DuckDB file `out` (in memory if None).

    The file, and the Parquet files (`parquet_dir`/<table>.parquet), are written
    under temporary names beside them and renamed when all are complete: a
    failure or an interrupt leaves no partial file, and existing outputs
    (replaced only with `force`, and only if they are regular files) stay intact. Returns the
    database (writable) and a LoadResult. Raises InputError for a bad output
    path, DatabaseError when DuckDB cannot write (disk full, permission).
    The build streams (`build`, `window_ns` of trace time in memory) into the
    database; writing a file, DuckDB keeps at most `memory` bytes (default
    `LOAD_MEMORY`; 0: DuckDB's own limit). `kernel=False` leaves out kernel
    scheduling data (perf.data, LTTng sched events): its tables stay empty.
    """
    con, meta, res = _build_and_write(paths, out, heuristics, parquet_dir, force, sync, memory, window_ns, kernel)
    if con is None:
        con = connect(os.path.abspath(out), read_only=False)
    return Database(con, res.db_path, meta, read_only=False), res


def write(paths: Sequence[str], out: str, *, heuristics: bool = True, parquet_dir: str | None = None,
          force: bool = False, sync: bool = True, memory: int | None = None, window_ns: int | None = None,
          kernel: bool = True) -> LoadResult:
    """`load` into the file `out` without opening it afterwards: once the file is
    in place, nothing of roscope holds it (opened for writing, it would lock out a
    reader started meanwhile, e.g. `roscope stats`). What `roscope load` runs."""
    con, _meta, res = _build_and_write(paths, out, heuristics, parquet_dir, force, sync, memory, window_ns, kernel)
    if con is not None:
        con.close()
    return res


def _build_and_write(paths, out, heuristics, parquet_dir, force, sync=True, memory=None, window_ns=None,
                     with_kernel=True):
    """`load`'s work: (the in-memory connection or None, meta, LoadResult)."""
    paths = check_paths(paths)
    target = files.check(out, force=force, inputs=paths, what="DuckDB file") if out is not None else None
    if parquet_dir:
        _parquet_targets(parquet_dir, force, paths)
    done: dict = {}
    small = window_ns is None and trace_bytes(paths, SMALL_TRACE_BYTES) <= SMALL_TRACE_BYTES
    early = _EarlyBuild(paths, heuristics, sync) if small else None
    # A larger trace's streaming build starts too before DuckDB is imported and connected
    # (window_ns=0: the whole trace in memory, then stored: no streaming).
    window = WINDOW_NS if window_ns is None else window_ns
    started = stream(paths, heuristics, sync=sync, window_ns=window) if not small and window != 0 else None

    def fill(con) -> list[str]:
        if early is not None:
            names, rows, stats, warnings, losses, kernel_rows = _fill_small(con, paths, early, with_kernel)
        else:
            ins = _Inserts(con)
            arrow, stats, warnings, losses = build(paths, heuristics, sync=sync, put=ins.put if started is not None else None,
                                                   window_ns=window, core=True, started=started)
            # The model's tables go in first (and the ones held to the end are freed); then
            # the kernel tables are made in the database itself, under its memory limit.
            names = list(arrow)
            progress_shown.current().phase("storing the model")
            for name in names:
                ins.put(name, arrow.pop(name))
            ins.close()
            rows = ins.rows
            progress_shown.current().phase("kernel scheduling data")
            kernel_rows = _kernel_tables(con, paths, warnings, with_kernel)
        meta = {
            "schema_version": SCHEMA_VERSION,
            "roscope_version": __version__,
            "sources": [os.path.abspath(p) for p in paths],
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "host": socket.gethostname(),
            "heuristic_links": heuristics,
            "clock_sync": sync,
            "kernel": with_kernel,
            "stats": stats,
            "warnings": warnings,
            "losses": losses,
        }
        _fill(con, meta)
        # The schema's order (every table comes once more at the end, maybe empty).
        done.update(meta=meta, rows={**{name: rows[name] for name in names}, **kernel_rows})
        return names + list(kernel_rows)

    try:
        if parquet_dir:
            os.makedirs(parquet_dir, exist_ok=True)
        con = _write_outputs(target, parquet_dir, fill, force, memory, paths)
    finally:
        if early is not None:
            early.join()
    meta = done["meta"]
    where = out if out is not None else ":memory:"
    return con, meta, LoadResult(where, done["rows"], meta["stats"], meta["warnings"], meta["losses"])
