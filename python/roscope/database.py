"""The execution database: roscope's model of a traced ROS system in DuckDB.

- `Database`: a DuckDB connection over the model's tables and views, with
  DataFrames, Arrow and raw SQL, its memory budget (`limit_memory`, `renew`) and
  its private directory (DuckDB's spill, the scratch file of results);
- `VIEWS` / `create_views(con)`: the views every database has; `columns_sql`:
  a schema table's columns (crates/model/src/schema.rs) as SQL;
- `connect(path)`, `open_file(path)`, `is_db(path)`: a database file, with
  DuckDB's errors as clear messages (`errors.database_error`).

Loading traces into a database is `roscope.loading`'s; choosing between a
trace, a database file and a dataset is `roscope.opening`'s.
"""
from __future__ import annotations

import builtins
import itertools
import json
import os
import weakref
from functools import cache
from typing import TYPE_CHECKING

from roscope import _core
from roscope.errors import DatabaseError, database_error
from roscope.memory import MEMORY_BUDGET, private_dir, remove_private_dir, within_memory

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.
if TYPE_CHECKING:
    import duckdb

#: 2: the executors, callback_groups and callback_group_members tables (CARET's executor events).
SCHEMA_VERSION = 2

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


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """The views of `VIEWS` on `con` (over the model's tables, or views of them)."""
    for name, sql in VIEWS.items():
        con.execute(f'CREATE VIEW "{name}" AS {sql}')


@cache
def columns_sql(name: str) -> str:
    """The column definitions of schema table `name` (crates/model/src/schema.rs), as
    SQL for CREATE TABLE: names and types of roscope's own schema, never input."""
    for t in json.loads(_core.schema())["tables"]:
        if t["name"] == name:
            return ", ".join(f'"{c["name"]}" {c["type"]}' for c in t["columns"])
    raise KeyError(f"no table {name!r} in the schema")


#: The catalogs of Databases' scratch database files (`Database.scratch_catalog`): this
#: prefix and a number of each Database's own. Two Databases of one file in one process share
#: DuckDB's instance (its cache of open databases), and with it what is attached: one name for
#: all would hand the second Database the first one's scratch file, whose tables go with the
#: first's private directory.
SCRATCH = "roscope_scratch"
_SCRATCH_NUMBERS = itertools.count(1)


def connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the file `path`; DatabaseError naming it when DuckDB cannot open it."""
    import duckdb

    try:
        return duckdb.connect(path, read_only=read_only)
    except duckdb.Error as exc:
        raise database_error(exc, path, "open", for_writing=not read_only) from None


class Database:
    """An execution database: `db.sql(...)` and `db.table(name)` give pandas
    DataFrames, `db.records(...)` lists of dicts, `db.con` the DuckDB connection.
    `read_only` says whether analyses may store tables into it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, meta: dict | None = None, read_only: bool = False,
                 runs: list[str] | None = None):
        self.con = con
        self.path = path
        self.read_only = read_only
        if meta is None:
            meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta").fetchall()}
        self.meta = meta
        #: The runs of a dataset it shows (`roscope.dataset.open`), else None.
        self.runs = runs
        self._spill: str | None = None
        self._scratch = f"{SCRATCH}_{next(_SCRATCH_NUMBERS)}"
        self._spill_cleanup = None

    @property
    def private_dir(self) -> str | None:
        """This Database's private temporary directory (`memory.private_dir`: DuckDB's
        spill and the scratch file of results), removed on `close()`; None without one."""
        return self._spill

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
        """Runs SQL; returns a pyarrow Table (the `arrow` extra: pip install 'roscope[arrow]')."""
        rel = self.con.sql(query, params=params or None)
        # DuckDB >= 1.4 names it to_arrow_table (arrow() gives a batch reader in 2.0)
        return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()

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
        if self._spill is None:
            self.adopt_dir(private_dir())
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
        (`scratch_catalog`) and the temporary views over tables carry over.
        Returns False, changing nothing, when that cannot be done without losing
        something: a database in memory, an open transaction, temporary tables, views
        over Python objects (`con.register`), or other attached databases. A connection or relation
        taken from the old `con` is closed with it."""
        import duckdb

        con = self.con
        dbs = con.execute("SELECT database_name, path, readonly FROM duckdb_databases() WHERE NOT internal").fetchall()
        main = con.execute("SELECT current_database()").fetchall()[0][0]
        own = [d for d in dbs if d[0] == main]
        others = [d for d in dbs if d[0] not in (main, self._scratch)]
        if not own or not own[0][1] or others:
            return False
        path, read_only = own[0][1], bool(own[0][2])
        scratch = any(d[0] == self._scratch for d in dbs)
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
        self.con = connect(path, read_only)
        try:
            for name, value in settings:
                if value not in (None, ""):
                    self.con.execute(f"SET {name} = ?", [value])
            if scratch:
                self.scratch_catalog()  # the same file, in this Database's private directory
            for (sql,) in views:
                self.con.execute(sql)
        except BaseException:
            self.con.close()
            raise
        return True

    def adopt_dir(self, path: str) -> None:
        """Makes the private directory `path` (`memory.private_dir`) this Database's,
        and DuckDB's temporary directory (set once: DuckDB refuses another once it has
        used one): removed with what is in it on close(), or when the Database is
        collected or Python exits."""
        self._spill = path
        self._spill_cleanup = weakref.finalize(self, remove_private_dir, path)
        self.con.execute("SET temp_directory = ?", [path])

    def scratch_catalog(self) -> str | None:
        """The catalog of this Database's scratch database, a file in its private
        directory (removed with it on close), attached on first use; None when it has
        no private directory (no memory budget). Results too large for memory go there
        (`results.Appender`)."""
        if not self._spill:
            return None
        if not self.con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?",
                                [self._scratch]).fetchall()[0][0]:
            self.con.execute(f"ATTACH ? AS {self._scratch} (READ_ONLY false)", [os.path.join(self._spill, "scratch.duckdb")])
        return self._scratch

    def close(self) -> None:
        if self._spill:  # another Database of the file may keep DuckDB's instance, and so what is attached
            import duckdb

            try:
                self.con.execute(f"DETACH DATABASE IF EXISTS {self._scratch}")
            except duckdb.Error:
                pass  # a connection already closed
        self.con.close()
        if self._spill:
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


def open_file(path: str, read_only: bool = True) -> Database:
    """The Database of a file written by `roscope load`; DatabaseError naming it when
    it cannot be opened, is not a roscope database or has another schema version."""
    import duckdb

    con = connect(path, read_only)
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
