"""The execution database: roscope's model of a traced ROS system in DuckDB.

`load()` runs the Rust model builder over the traces and stores its tables
(docs/model.md) in a DuckDB file; `open()` gives a `Database` over a trace or a
database file, with DataFrames and raw SQL.
"""
from __future__ import annotations

import builtins
import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roscope import __version__, _core
from roscope.errors import DatabaseError, InputError
from roscope.files import interrupts_deferred
from roscope.trace import _paths, table_from_core

if TYPE_CHECKING:
    import duckdb

SCHEMA_VERSION = 1

#: Views over the base tables, created in every database.
VIEWS = {
    # Every topic that a publisher or a subscription names.
    "topics": """
        SELECT name AS topic, count(*) FILTER (WHERE kind = 'pub') AS publishers,
               count(*) FILTER (WHERE kind = 'sub') AS subscriptions
        FROM (SELECT name, 'pub' AS kind FROM publishers WHERE name IS NOT NULL
              UNION ALL SELECT name, 'sub' FROM subscriptions WHERE name IS NOT NULL)
        GROUP BY name""",
    # Callbacks with what they belong to: node, topic or period, process.
    "callbacks_info": """
        SELECT c.callback_id, c.proc_id, p.pid, p.procname, h.hostname, c.handle, c.symbol, c.kind,
               c.owner_id, c.known,
               CASE c.kind WHEN 'subscription' THEN s.name WHEN 'service' THEN sv.name WHEN 'client' THEN cl.name
                    ELSE NULL END AS topic,
               t.period_ns,
               n.name AS node_name, n.namespace AS node_namespace,
               CASE WHEN n.name IS NULL THEN NULL
                    WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                    ELSE rtrim(n.namespace, '/') || '/' || n.name END AS node
        FROM callbacks c
        JOIN processes p USING (proc_id)
        JOIN hosts h ON h.host_id = p.host_id
        LEFT JOIN subscriptions s ON c.kind = 'subscription' AND s.subscription_id = c.owner_id
        LEFT JOIN services sv ON c.kind = 'service' AND sv.service_id = c.owner_id
        LEFT JOIN clients cl ON c.kind = 'client' AND cl.client_id = c.owner_id
        LEFT JOIN timers t ON c.kind = 'timer' AND t.timer_id = c.owner_id
        LEFT JOIN nodes n ON n.node_id = c.node_id""",
    # Publications with their topic and the earliest layer's time.
    "publications_info": """
        SELECT pb.*, pu.name AS topic, pu.node_id,
               coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts) AS publish_ts
        FROM publications pb LEFT JOIN publishers pu USING (publisher_id)""",
    # Per subscription: messages that a publisher it receives from published
    # between the first and the last message it received from that publisher (by
    # exact links) and that it never received: dropped (a full queue or history,
    # an outbox) or lost in transport.
    "subscription_drops": """
        WITH pairs AS (
            SELECT t.subscription_id, pi.publisher_id, min(pi.publish_ts) AS first_pub, max(pi.publish_ts) AS last_pub
            FROM links l JOIN takes t USING (take_id) JOIN publications_info pi USING (publication_id)
            WHERE l.heuristic = 0 AND t.subscription_id IS NOT NULL AND pi.publisher_id IS NOT NULL GROUP BY 1, 2),
        cand AS (
            SELECT p.subscription_id, pi.topic, pi.publication_id FROM pairs p
            JOIN publications_info pi ON pi.publisher_id = p.publisher_id AND pi.publish_ts BETWEEN p.first_pub AND p.last_pub),
        delivered AS (SELECT DISTINCT l.publication_id, t.subscription_id FROM links l JOIN takes t USING (take_id))
        SELECT c.subscription_id, c.topic, count(*) AS expected, count(*) FILTER (WHERE d.publication_id IS NULL) AS dropped
        FROM cand c LEFT JOIN delivered d USING (publication_id, subscription_id)
        GROUP BY c.subscription_id, c.topic""",
    # Transport links with the times that matter for latency.
    "links_info": """
        SELECT l.*, pi.topic, pi.publish_ts, tk.ts AS take_ts, r.start_ts AS callback_start_ts,
               r.callback_id, tk.subscription_id
        FROM links l
        JOIN publications_info pi USING (publication_id)
        LEFT JOIN takes tk USING (take_id)
        LEFT JOIN callback_runs r ON r.run_id = l.run_id""",
}


@dataclass
class LoadResult:
    db_path: str
    tables: dict[str, int]
    stats: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    losses: list[tuple[str, int, int]] = field(default_factory=list)


def _import_arrow() -> None:
    import duckdb  # noqa: F401
    import pyarrow  # noqa: F401


def record_ids(paths: Sequence[str]) -> list[str]:
    """The recording names of `roscope record` manifests at, above or inside the
    given paths (a trace directory, or a folder of several)."""
    from roscope import manifest

    ids = []
    for _m, man in manifest.find(paths, below=True):
        rid = man.get("record_id") if isinstance(man, dict) else None
        if rid and rid not in ids:
            ids.append(rid)
    return ids


#: A streaming build keeps the records of this much trace time (ns) in memory:
#: older ones that nothing will change go to the database in chunks (docs/model.md).
WINDOW_NS = 1_000_000_000


#: A streaming build's builder runs at most this many chunks (one table's
#: records of one flush, about half a MiB each on a ROS 2 trace) ahead of
#: what is stored, so that it keeps reading while DuckDB stores an insert
#: (2 made it wait through every insert; each chunk more is memory).
STREAM_QUEUE = 16


def build(paths: Sequence[str], heuristics: bool = True, progress: bool | None = None, sync: bool = True,
          put=None, window_ns: int = WINDOW_NS, flush_every: int = 0):
    """Runs the model builder; returns ({table: arrow table}, stats, warnings, losses).
    `sync`: synchronize several hosts' clocks from the messages between them.
    With `put(name, arrow_table)`, the build streams: the instance tables go to
    `put` in chunks while the builder reads (one table's chunks share its
    columns), so memory is bounded by `window_ns` of trace time, and the
    returned dict holds the rest of the tables. `flush_every`: events between
    chunks (0: the core's default). Several hosts whose clocks are
    synchronized are held to the end (every message pair is needed first)."""
    if progress is None:
        progress = sys.stderr.isatty()
    # The core leaves the GIL while it builds: import Arrow meanwhile.
    warm = threading.Thread(target=_import_arrow, daemon=True)
    warm.start()
    try:
        if put is None:
            tables, stats, warnings, losses = _core.build_model(list(paths), heuristics, progress, record_ids(paths) or None,
                                                                sync)
        else:
            stream = _core.ModelStream(list(paths), heuristics, progress, record_ids(paths) or None, sync, window_ns,
                                       flush_every=flush_every, queue=STREAM_QUEUE)
            warm.join()
            while (chunk := stream.next_chunk()) is not None:
                put(chunk[0], table_from_core(chunk[1]))
            tables, stats, warnings, losses = stream.finish()
    finally:
        # Also on an error: an interpreter that exits while this thread still
        # imports DuckDB/pyarrow can abort (issue 15, item 3).
        warm.join()
    arrow = {name: table_from_core(table) for name, table in tables}
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
#: (all tables together): DuckDB inserts large batches twice as fast as the
#: builder's chunks one by one (within a transaction, 16 MiB cost no more
#: CPU than 32 MiB, and 16 MiB less memory).
INSERT_BYTES = 16 << 20

#: ... and committed every this many bytes: one commit per insert costs DuckDB
#: about as much again (bench/load_speed.py), while DuckDB's memory cap still
#: holds within a transaction (what does not fit is written out).
COMMIT_BYTES = 256 << 20


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
        import pyarrow as pa

        chunks = self.pending.pop(name)
        n = self.sizes.pop(name)
        self.size -= n
        if not self.single_thread:
            self.con.execute("SET threads = 1")
            self.single_thread = True
        if not self.in_transaction:
            self.con.begin()
            self.in_transaction = True
        # The chunks as one stream: DuckDB reads them where they are (no concatenated copy).
        stream = pa.RecordBatchReader.from_batches(chunks[0].schema, [b for t in chunks for b in t.to_batches()])
        del chunks
        _put(self.con, name, stream, name in self.created)
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
    for name, sql in VIEWS.items():
        con.execute(f'CREATE VIEW "{name}" AS {sql}')
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
    # The code tables of the schema (crates/model/src/schema.rs), as one lookup table.
    con.execute("CREATE TABLE codes (code_table VARCHAR, code BIGINT, name VARCHAR, doc VARCHAR)")
    con.executemany("INSERT INTO codes VALUES (?, ?, ?, ?)",
                    [(t["name"], v["code"], v["name"], v["doc"]) for t in json.loads(_core.schema())["codes"] for v in t["values"]])


def _output_target(out: str, force: bool) -> str:
    """Checks where `load` may write `out`; returns its absolute path. Refuses to
    replace anything but a regular file (and that only with `force`)."""
    if not os.fspath(out):
        raise InputError("the output path is empty: give the DuckDB file to write")
    target = os.path.abspath(out)
    parent = os.path.dirname(target)
    if os.path.lexists(target):
        if os.path.islink(target):
            raise InputError(f"{out}: is a symbolic link; give the path of the database itself")
        if not os.path.isfile(target):
            raise InputError(f"{out}: exists and is not a regular file; roscope replaces only regular files")
        if not force:
            raise InputError(f"{out}: already exists (roscope never overwrites; pass --force to replace it)")
    if not os.path.isdir(parent):
        if os.path.lexists(parent):
            raise InputError(f"{out}: {parent} is not a directory")
        raise InputError(f"{out}: the directory {parent} does not exist")
    return target


def _temp_beside(target: str, suffix: str) -> str:
    """A fresh, unused name in the target's directory (created empty, then removed,
    with Ctrl-C held back meanwhile: an interrupt there would leave the file)."""
    with interrupts_deferred():
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=suffix,
                                       dir=os.path.dirname(target))
        except OSError as exc:  # the error would name the temporary file, which the user never gave
            raise InputError(f"{target}: cannot write in {os.path.dirname(target)}: {exc.strerror or exc}") from None
        os.close(fd)
        os.remove(tmp)
    return tmp


def _remove_quietly(*paths: str) -> None:
    for p in paths:
        try:
            os.remove(p)
        except FileNotFoundError:
            pass
        except OSError as exc:
            print(f"roscope: warning: {p}: cannot remove the partial file: {exc.strerror}", file=sys.stderr)


def _commit(tmp: str, target: str, force: bool) -> None:
    """Renames a complete temporary file to `target`. Without `force` it never
    replaces anything (a hard link fails if `target` appeared meanwhile); with
    `force` it replaces only a regular file, checked again just before."""
    if not force:
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise InputError(f"{target}: appeared while roscope was writing it; left as it is (pass --force to replace it)") from None
        except OSError:  # a file system without hard links
            if os.path.lexists(target):
                raise InputError(f"{target}: appeared while roscope was writing it; left as it is") from None
            os.replace(tmp, target)
            return
        os.remove(tmp)
        return
    if os.path.lexists(target) and (os.path.islink(target) or not os.path.isfile(target)):
        raise InputError(f"{target}: is no longer a regular file; roscope replaces only regular files")
    # The replaced database's log (a DuckDB closed without a checkpoint leaves one) belongs
    # to it: beside the new file DuckDB would refuse to open it ("WAL does not match").
    wal, old_wal = target + ".wal", None
    if os.path.isfile(wal) and not os.path.islink(wal):
        old_wal = _temp_beside(wal, ".old")
        os.replace(wal, old_wal)
    try:
        os.replace(tmp, target)
    except BaseException:
        if old_wal is not None:
            os.replace(old_wal, wal)
        raise
    if old_wal is not None:
        _remove_quietly(old_wal)


#: DuckDB's memory cap while `load` writes a database file (bytes): what does
#: not fit is written out, so a long trace does not need more.
LOAD_MEMORY = 64 << 20


def _write_outputs(target: str | None, parquet_dir: str | None, fill, force: bool, memory: int | None = None):
    """Writes the database (`target`, or in memory if None; `fill(con)` stores
    the tables and returns their names) and the Parquet files, each under a
    temporary name beside its final one, and renames them only once all are
    complete: a failure or an interrupt leaves no partial file and every old
    output intact. Returns the in-memory connection, or None."""
    import duckdb

    temps: list[tuple[str, str]] = []
    con = None
    try:
        if target is None:
            con = duckdb.connect(":memory:")
        else:
            temps.append((_temp_beside(target, ".tmp"), target))
            con = _connect(temps[0][0], read_only=False)
            budget = LOAD_MEMORY if memory is None else int(memory)
            if budget > 0:
                con.execute("SET memory_limit = ?", [f"{max(budget >> 20, 16)}MiB"])
        names = fill(con)
        for name in names if parquet_dir else ():
            final = os.path.join(parquet_dir, f"{name}.parquet")
            temps.append((_temp_beside(final, ".tmp"), final))
            con.table(name).write_parquet(temps[-1][0])  # relational API: no SQL text built from the path
        if target is not None:
            con.execute("CHECKPOINT")  # everything into the file (a full disk fails here, not silently at close)
            con.close()
            con = None
            if os.path.exists(temps[0][0] + ".wal"):
                raise DatabaseError(f"{target}: DuckDB could not write the whole database (its log {temps[0][0]}.wal stayed)")
        with interrupts_deferred():  # all outputs renamed, or none: never a new database beside old Parquet files
            for tmp, final in temps:
                _commit(tmp, final, force)
        return con
    except BaseException as exc:
        if con is not None and target is not None:
            con.close()
        _remove_quietly(*(t for t, _ in temps), *(t + ".wal" for t, _ in temps[:1] if target is not None))
        if (isinstance(exc, RuntimeError) and str(exc) == "Query interrupted") or (
                isinstance(exc, duckdb.Error) and "KeyboardInterrupt" in str(exc)):
            # Ctrl-C while DuckDB scans an Arrow table comes back as a RuntimeError, or,
            # when it hit the Python code DuckDB called (e.g. counting the rows of a
            # registered table), as a DuckDB error quoting the KeyboardInterrupt.
            raise KeyboardInterrupt from None
        if isinstance(exc, duckdb.Error):
            raise database_error(exc, target or parquet_dir, "write") from None
        raise


def _parquet_targets(parquet_dir: str, force: bool) -> None:
    """Refuses, before any work, a Parquet directory that is not one, or
    existing table files that may not be replaced."""
    if os.path.lexists(parquet_dir) and (os.path.islink(parquet_dir) or not os.path.isdir(parquet_dir)):
        raise InputError(f"{parquet_dir}: exists and is not a directory")
    if not os.path.isdir(parquet_dir):
        return
    for n in sorted(os.listdir(parquet_dir)):
        t = os.path.join(parquet_dir, n)
        if not n.endswith(".parquet"):
            continue
        if not force:
            raise InputError(f"{t}: already exists (roscope never overwrites; pass --force to replace it)")
        if os.path.islink(t) or not os.path.isfile(t):
            raise InputError(f"{t}: exists and is not a regular file; roscope replaces only regular files")


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
        con = _connect(os.path.abspath(out), read_only=False)
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
    paths = _paths(paths)
    target = _output_target(out, force) if out is not None else None
    if parquet_dir:
        _parquet_targets(parquet_dir, force)
    done: dict = {}

    def fill(con) -> list[str]:
        ins = _Inserts(con)
        # window_ns=0: the whole trace in memory, then stored (no streaming).
        arrow, stats, warnings, losses = build(paths, heuristics, sync=sync, put=ins.put if window_ns != 0 else None,
                                               window_ns=WINDOW_NS if window_ns is None else window_ns)
        from roscope import kernel  # kernel scheduling (perf.data beside the trace, LTTng sched events)

        # The model's tables go in first (and the ones held to the end are freed); then
        # the kernel tables are made in the database itself, under its memory limit.
        names = list(arrow)
        needs = {k: arrow[k] for k in kernel.NEEDS if k in arrow}
        for name in names:
            ins.put(name, arrow.pop(name))
        ins.close()
        kernel_rows = kernel.store(con, paths, needs, warnings, enabled=with_kernel)
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
        done.update(meta=meta, rows={**{name: ins.rows[name] for name in names}, **kernel_rows})
        return names + list(kernel_rows)

    if parquet_dir:
        os.makedirs(parquet_dir, exist_ok=True)
    con = _write_outputs(target, parquet_dir, fill, force, memory)
    meta = done["meta"]
    where = out if out is not None else ":memory:"
    return con, meta, LoadResult(where, done["rows"], meta["stats"], meta["warnings"], meta["losses"])


#: DuckDB's memory cap on the connections of `open` (bytes; see
#: `Database.limit_memory`): results larger than this (data flows) spill to disk.
#: With the data-flow search over slices of the model, this is most of what an
#: analysis of a long trace holds (bench/scale.py).
MEMORY_BUDGET = 256 << 20


class Database:
    """An execution database: `db.sql(...)` and `db.table(name)` give pandas
    DataFrames, `db.records(...)` lists of dicts, `db.con` the DuckDB connection.
    `read_only` says whether analyses may store tables into it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, meta: dict | None = None, read_only: bool = False):
        self.con = con
        self.path = path
        self.read_only = read_only
        if meta is None:
            meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta").fetchall()}
        self.meta = meta

    @property
    def warnings(self) -> list[str]:
        return list(self.meta.get("warnings", []))

    @property
    def losses(self) -> list:
        return list(self.meta.get("losses", []))

    def sql(self, query: str, params=None):
        """Runs SQL; returns a pandas DataFrame."""
        return self.con.execute(query, params or []).df()

    def records(self, query: str, params=None) -> list[dict]:
        """Runs SQL; returns a list of dicts (no pandas needed)."""
        cur = self.con.execute(query, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def table(self, name: str):
        """A table or view as a pandas DataFrame."""
        return self.con.table(name).df()

    def arrow(self, query: str, params=None):
        """Runs SQL; returns an Arrow table."""
        return self.con.execute(query, params or []).arrow()

    def tables(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()]

    def limit_memory(self, budget: int | None = None) -> None:
        """Caps DuckDB's memory on this connection at `budget` bytes (default
        `MEMORY_BUDGET`): beyond it DuckDB moves temporary data (result tables,
        sorts, joins) to a private temporary directory, removed on `close()`.
        `budget=0` leaves DuckDB's own limit (80% of RAM)."""
        budget = MEMORY_BUDGET if budget is None else int(budget)
        if budget <= 0:
            return
        if getattr(self, "_spill", None) is None:
            self._own_dir(_private_dir())
        self.con.execute("SET memory_limit = ?", [f"{budget // 2**20}MiB"])
        # Order only where a query asks for one: lets DuckDB stream and spill more.
        self.con.execute("SET preserve_insertion_order = false")

    def within_memory(self, step, what: str):
        """`step()`, given more than DuckDB's budget if it needs it, with a warning
        among this Database's (`within_memory`); the raised budget stays."""
        return within_memory(self.con, step, self.meta.setdefault("warnings", []), what, restore=False)

    #: The settings `renew` carries over to the new connection.
    _RENEWED_SETTINGS = ("memory_limit", "temp_directory", "preserve_insertion_order", "threads")

    def renew(self) -> bool:
        """Replaces `self.con` with a new connection to the same database file, and
        closes the old one: gives back the memory DuckDB keeps outside its buffers
        after large inserts until its instance closes (on 144M events, 130 MiB more
        than its buffers held after the data-flow search; docs/analyses.md). The settings, the scratch file
        (`results.scratch_catalog`) and the temporary views over tables carry over.
        Returns False, changing nothing, when that cannot be done without losing
        something: a database in memory, an open transaction, temporary tables, views
        over Python objects (`con.register`), or other attached databases. A connection or relation
        taken from the old `con` is closed with it."""
        import duckdb

        from roscope.results import SCRATCH, scratch_catalog

        con = self.con
        dbs = con.execute("SELECT database_name, path, readonly FROM duckdb_databases() WHERE NOT internal").fetchall()
        main = con.execute("SELECT current_database()").fetchall()[0][0]
        own = [d for d in dbs if d[0] == main]
        others = [d for d in dbs if d[0] not in (main, SCRATCH)]
        if not own or not own[0][1] or others:
            return False
        path, read_only = own[0][1], bool(own[0][2])
        scratch = any(d[0] == SCRATCH for d in dbs)
        if con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()[0][0]:
            return False
        views = con.execute("SELECT sql FROM duckdb_views() WHERE temporary AND NOT internal ORDER BY view_oid").fetchall()
        if any("python_" in (v[0] or "") for v in views) or any(v[0] is None for v in views):
            return False  # a registered Python object: the new connection could not show it
        settings = con.execute("SELECT name, value FROM duckdb_settings() WHERE list_contains(?, name)",
                               [list(self._RENEWED_SETTINGS)]).fetchall()
        try:  # an open transaction (an Appender with `store`) would be rolled back by close()
            con.execute("BEGIN TRANSACTION")
        except duckdb.TransactionException:
            return False
        con.execute("ROLLBACK")
        con.close()
        self.con = _connect(path, read_only)
        try:
            for name, value in settings:
                if value not in (None, ""):
                    self.con.execute(f"SET {name} = ?", [value])
            if scratch:
                scratch_catalog(self)  # the same file, in this Database's private directory
            for (sql,) in views:
                self.con.execute(sql)
        except BaseException:
            self.con.close()
            raise
        return True

    def _own_dir(self, path: str) -> None:
        """Makes the private directory `path` this Database's, and DuckDB's temporary
        directory (set once: DuckDB refuses another once it has used one): removed
        with what is in it on close(), or when the Database is collected or Python exits."""
        import weakref

        self._spill = path
        self._spill_cleanup = weakref.finalize(self, _remove_private_dir, path)
        self.con.execute("SET temp_directory = ?", [path])

    def close(self) -> None:
        self.con.close()
        if getattr(self, "_spill", None):
            self._spill_cleanup()
            self._spill = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def is_db(path: str) -> bool:
    """Whether `path` is a file that starts like a DuckDB database."""
    if not os.path.isfile(path):
        return False
    with builtins.open(path, "rb") as f:
        head = f.read(16)
    return b"DUCK" in head


# DuckDB error texts (duckdb 1.x) -> what the user should hear.
_LOCK = re.compile(r"Conflicting lock is held in (?P<prog>.*?) \(PID (?P<pid>\d+)\)")
_CORRUPT = ("corrupt database file", "not a valid duckdb database", "could not read enough bytes",
            "checksum", "invalid database header", "missing magic bytes")


def database_error(exc: BaseException, path: str | None, doing: str = "open", for_writing: bool = False) -> DatabaseError:
    """The one mapping of a DuckDB error to a clear message naming `path` (None:
    the database at hand): locked (by which process), corrupt, full disk,
    permission, read-only, missing directory; otherwise DuckDB's own message.
    `for_writing`: roscope was opening it to write (then any reader locks it too)."""
    path = "the database" if path is None else path
    msg = str(exc)
    low = msg.lower()
    m = _LOCK.search(msg)
    if m or "could not set lock" in low:
        who = f"process {m['pid']} ({m['prog']})" if m else "another process"
        if for_writing:  # a reader holds it as well as a writer would: say nothing about which
            return DatabaseError(f"{path}: the database is locked by {who}, which has it open; roscope needs it "
                                 "alone to write into it; wait until it finishes, or stop it")
        return DatabaseError(f"{path}: the database is locked by {who}, which has it open for writing; "
                             "wait until it finishes, or stop it")
    if "no space left" in low or "disk is full" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: the disk is full")
    if "permission denied" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: permission denied")
    if "read-only file system" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: the file system is read-only")
    if "read-only mode" in low or "read only mode" in low:
        return DatabaseError(f"{path}: the database is open read-only; open it with "
                             "roscope.open(path, read_only=False) to store results in it")
    if "no such file or directory" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: no such file or directory")
    if any(k in low for k in _CORRUPT):
        return DatabaseError(f"{path}: corrupt or truncated database, or not a DuckDB file ({msg}); "
                             "load the trace again")
    if "version" in low and ("storage" in low or "serialization" in low):
        return DatabaseError(f"{path}: written by another DuckDB version ({msg}); load the trace again")
    return DatabaseError(f"{path}: cannot {doing} the database: {msg}")


def is_environment_error(exc: BaseException) -> bool:
    """Whether a DuckDB exception says the database or the machine is at fault
    (locked, corrupt, disk full, permission, read-only, interrupted I/O), not roscope."""
    import duckdb

    if isinstance(exc, (duckdb.IOException, duckdb.PermissionException)):
        return True
    low = str(exc).lower()
    return any(k in low for k in _CORRUPT) or "read-only mode" in low or "no space left" in low


_UNITS = {"b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def memory_limit(con) -> tuple[str, int]:
    """DuckDB's memory limit of `con`: as DuckDB shows it, and in bytes."""
    shown = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    m = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]*)\s*", shown)
    return shown, int(float(m.group(1)) * _UNITS.get(m.group(2).lower() or "b", 1)) if m else 0


def within_memory(con, step, warnings: list[str], what: str, *, at_least: int = 0, undo=None, restore: bool = True):
    """`step()` with DuckDB's memory limit on `con` raised to `at_least` if lower,
    and doubled while `step` runs out of it (`undo()` then removes what it left),
    up to DuckDB's own default (80% of the RAM), each time with a warning
    ("`what`: N MiB of memory were not enough; made with 2N MiB"). Some queries
    hold one group or one partition whole (an ordered window over the busiest
    thread's sched events or input waits): better slower and told than
    failed. `restore`: put the limit back afterwards (else the raised limit stays
    for the connection's next queries, which are likely to need it too)."""
    import duckdb

    shown, limit = memory_limit(con)
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 8 // 10
    budget = max(limit, at_least)
    try:
        while True:
            if budget != limit:
                con.execute("SET memory_limit = ?", [f"{budget >> 20}MiB"])
            try:
                return step()
            except duckdb.OutOfMemoryException:
                if undo is not None:
                    undo()
                if budget >= ram:
                    raise
                grown = min(2 * budget, ram)
                warnings.append(f"{what}: {budget >> 20} MiB of memory were not enough; made with {grown >> 20} MiB "
                                "(--memory sets the budget)")
                budget = grown
    finally:
        if restore and budget != limit:
            with contextlib.suppress(Exception):
                con.execute("SET memory_limit = ?", [shown])


#: Traces opened for analysis (`open`) are loaded in memory up to this share of
#: DuckDB's budget (their size on disk; a model takes about 0.8 times its trace's
#: size in DuckDB), into a temporary database file beyond: a file costs about
#: 0.2 s of writing, memory would leave the queries too little of the budget.
IN_MEMORY_SHARE = 4


def _size(paths: Sequence[str]) -> int:
    """The bytes of the files under `paths`."""
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for root, _dirs, files in os.walk(p):
            for f in files:
                with contextlib.suppress(OSError):
                    total += os.path.getsize(os.path.join(root, f))
    return total


#: The prefix of a Database's private temporary directories (in `$TMPDIR`).
_PRIVATE_PREFIX = "roscope-duckdb-"
#: A private directory is removed by another roscope only if no process holds its
#: lock and it is older than this (seconds): its creator locks it right after
#: making it.
_PRIVATE_MIN_AGE = 60


def _private_dir() -> str:
    """A new private temporary directory (mode 0700) for a Database's files, held
    under a shared lock (`flock`) while this process lives. The directories of
    roscope processes that are gone without cleaning up (killed with SIGKILL, e.g.
    by the OOM killer, when the model file in it may be gigabytes) are removed
    first: no process holds their lock."""
    import fcntl
    import tempfile

    _sweep_private_dirs(tempfile.gettempdir())
    path = tempfile.mkdtemp(prefix=_PRIVATE_PREFIX)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    _PRIVATE_LOCKS[path] = fd
    # Where flock is not supported, nothing takes the lock, so nothing is removed.
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_SH)
    return path


#: The lock of each private directory of this process (path -> fd), released on removal.
_PRIVATE_LOCKS: dict[str, int] = {}


def _remove_private_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    fd = _PRIVATE_LOCKS.pop(path, None)
    if fd is not None:
        os.close(fd)


def _sweep_private_dirs(tmp: str) -> None:
    """Removes this user's private directories in `tmp` that no process holds."""
    import fcntl
    import stat
    import time

    try:
        names = [n for n in os.listdir(tmp) if n.startswith(_PRIVATE_PREFIX)]
    except OSError:
        return
    for name in names:
        path = os.path.join(tmp, name)
        try:
            st = os.lstat(path)
            if (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid()
                    or time.time() - st.st_ctime < _PRIVATE_MIN_AGE):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process is alive
            os.close(fd)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)


def _connect(path: str, read_only: bool):
    import duckdb

    try:
        return duckdb.connect(path, read_only=read_only)
    except duckdb.Error as exc:
        raise database_error(exc, path, "open", for_writing=not read_only) from None


def _open_db(path: str, read_only: bool) -> Database:
    import duckdb

    con = _connect(path, read_only)
    try:
        has_meta = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta' AND table_schema = 'main'"
        ).fetchall()[0][0]
        if not has_meta:
            raise DatabaseError(f"{path}: a DuckDB file but not a roscope database (no 'meta' table; "
                                "`roscope load TRACE -o FILE` writes one)")
        ver = (con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() or [None])[0]
        if ver is None or json.loads(ver[0]) != SCHEMA_VERSION:
            raise DatabaseError(f"{path}: roscope database schema {ver[0] if ver else 'unknown'} is not "
                                f"{SCHEMA_VERSION} (written by another roscope version); load the trace again")
        return Database(con, path, read_only=read_only)
    except duckdb.Error as exc:
        con.close()
        raise database_error(exc, path, "read") from None
    except BaseException:
        con.close()
        raise


def open(trace_or_db, *, heuristics: bool = True, read_only: bool = True,  # noqa: A001 - the API's name
         memory: int | None = None, sync: bool = True, runs=None) -> Database:
    """A Database over a DuckDB file written by `roscope load`, or over traces.

    A database file is opened **read-only** by default: queries, and analyses
    that return their results (the default), work on it, and other processes
    may read it at the same time; give `read_only=False` to store results in it
    (analyses called with ``store=True``). Traces (a path or a list of paths) are
    loaded into a writable database, in memory or, for traces larger than a
    quarter of the budget, in a temporary file removed on `close()`; `heuristics=False` keeps only
    exact transport links. `memory`: DuckDB's memory cap in bytes (default
    `MEMORY_BUDGET`, 0: DuckDB's own), beyond which it spills to a temporary
    directory. Raises InputError / DatabaseError (both UserError) with a message
    naming the file when the input is wrong. A dataset directory (`roscope load
    --dataset`) is opened read-only over the runs chosen by `runs` (ids or shell
    patterns; see `roscope.dataset.open`).
    """
    if isinstance(trace_or_db, (str, os.PathLike)):
        paths = [os.fspath(trace_or_db)]
    else:
        paths = [os.fspath(p) for p in trace_or_db]
    from roscope import dataset

    if len(paths) == 1 and dataset.is_dataset(paths[0]):
        return dataset.open(paths[0], runs, memory=memory)
    if runs is not None:
        raise InputError(f"{paths[0]}: not a dataset (`roscope load TRACE --dataset DIR` makes one); a run selection "
                         "applies to datasets only")
    if len(paths) == 1 and is_db(paths[0]):
        db = _open_db(paths[0], read_only)
    else:
        for p in paths:
            if os.path.isfile(p) and p.endswith((".duckdb", ".db")) and not is_db(p):
                raise DatabaseError(f"{p}: not a DuckDB database (the file does not start with DuckDB's header)")
        budget = MEMORY_BUDGET if memory is None or int(memory) <= 0 else int(memory)
        if _size(paths) <= budget // IN_MEMORY_SHARE:
            db, _ = load(paths, None, heuristics=heuristics, sync=sync)
        else:
            # Into a database file of a private directory: DuckDB then evicts table
            # data it does not need without writing it out, and its budget is the
            # queries' (in memory, the tables of a 10M-event trace alone exceed it).
            private = _private_dir()
            try:
                db, _ = load(paths, os.path.join(private, "model.duckdb"), heuristics=heuristics, sync=sync)
            except BaseException:
                _remove_private_dir(private)
                raise
            db._own_dir(private)
    db.limit_memory(memory)
    return db
