"""Where analyses put their results: visible to SQL on the database's connection
without writing into the database (the default), or stored in it when asked.

- `publish(db, {name: arrow_table}, store)`: registered as connection-local views
  (works on read-only databases), or stored as tables in one transaction;
- `publish_query(db, name, sql, store)`: a query's result as a temporary view, or
  stored as a table.
- `Appender(db, names, store)`: tables of the schema filled chunk by chunk (Arrow
  data, e.g. streamed from the core), in a scratch database file of the Database's
  private directory (`Database.scratch_catalog`) shown through temporary views (or, without such a directory,
  as temporary tables), or stored in one transaction; for results whose size is
  not bounded by the trace (data flows).

A result published under a name hides a stored table of the same name on that
connection (the newest result wins); storing drops such a view first. Names are
roscope's result table names, never text from a user or a trace.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope.database import columns_sql
from roscope.errors import DatabaseError

if TYPE_CHECKING:
    from roscope.database import Database


def is_read_only(db: Database) -> bool:
    row = (db.con.execute("SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()").fetchall() or [None])[0]
    return bool(row and row[0])


def _check_writable(db: Database) -> None:
    if is_read_only(db):
        raise DatabaseError(f"{db.path}: the database is open read-only, so results cannot be stored in it; "
                            "open it with roscope.open(path, read_only=False) (CLI: --store opens it for writing)")


def _drop_view(con, name: str) -> None:
    """Drops a result published under `name` on this connection: a registered Arrow
    table, a temporary view or a temporary table (never a stored table)."""
    con.unregister(name)
    row = (con.execute("SELECT table_type FROM information_schema.tables WHERE table_catalog = 'temp' AND table_name = ?",
                       [name]).fetchall() or [None])[0]
    if row:
        kind = "VIEW" if row[0] == "VIEW" else "TABLE"
        con.execute(f'DROP {kind} temp."{name}"')


def _stored(db: Database, statements) -> None:
    """Runs `statements` (callables of the connection) in one transaction."""
    con = db.con
    con.execute("BEGIN TRANSACTION")
    try:
        for st in statements:
            st(con)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def publish(db: Database, tables: dict, store: bool = False) -> None:
    """Makes each Arrow table visible to SQL on `db` under its name (registered), or
    stores it as a table of the database with `store`."""
    if not store:
        for name, t in tables.items():
            _drop_view(db.con, name)
            db.con.register(name, t)
        return
    _check_writable(db)

    def put(name, t):
        def st(con):
            _drop_view(con, name)
            con.register("_roscope_result", t)
            con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM _roscope_result')
            con.unregister("_roscope_result")
        return st

    _stored(db, [put(name, t) for name, t in tables.items()])


def publish_query(db: Database, name: str, sql: str, store: bool = False) -> None:
    """Makes the result of `sql` visible as `name`: a temporary view (computed when
    queried), or a table of the database with `store`."""
    if not store:
        _drop_view(db.con, name)
        db.con.execute(f'CREATE TEMP VIEW "{name}" AS {sql}')
        return
    _check_writable(db)

    def st(con):
        _drop_view(con, name)
        con.execute(f'CREATE OR REPLACE TABLE "{name}" AS {sql}')

    _stored(db, [st])


class Appender:
    """Result tables of the schema, created empty and filled chunk by chunk.

    Without `store`, tables of the Database's scratch database file (`Database.scratch_catalog`),
    shown on the connection as temporary views of the same names (they work on
    read-only databases); DuckDB writes them compressed and keeps in memory what
    its budget allows, so memory stays flat however many rows come (temporary
    tables, used when there is no such file, also spill, but stay uncompressed and
    keep a few MiB of bookkeeping in memory per GiB spilled). With `store`, tables
    of the database, written in one transaction that `close()` commits and
    `abort()` rolls back. Use it as a context manager: an exception rolls back.
    """

    def __init__(self, db: Database, names, store: bool = False):
        if store:
            _check_writable(db)
        self.db, self.names, self.store = db, list(names), store
        con = db.con
        self.scratch = None if store else db.scratch_catalog()
        if store:
            con.execute("BEGIN TRANSACTION")
        try:
            for name in self.names:
                _drop_view(con, name)
                if self.scratch:
                    con.execute(f'CREATE OR REPLACE TABLE {self.scratch}."{name}" ({columns_sql(name)})')
                    con.execute(f'CREATE TEMP VIEW "{name}" AS SELECT * FROM {self.scratch}."{name}"')
                else:
                    kind = "TABLE" if store else "TEMP TABLE"
                    con.execute(f'CREATE OR REPLACE {kind} "{name}" ({columns_sql(name)})')
        except BaseException:
            self.abort()
            raise

    def target(self, name: str) -> str:
        """The SQL name of the table behind result `name` (to change its rows)."""
        if name not in self.names:
            raise KeyError(f"{name!r} is not one of this appender's tables")
        return f'{self.scratch}."{name}"' if self.scratch else f'"{name}"'

    def append(self, name: str, table) -> None:
        """Appends an Arrow table (or anything `from_arrow` takes) to table `name`."""
        self.db.con.from_arrow(table).insert_into(self.target(name))

    def close(self) -> None:
        if self.store:
            self.db.con.execute("COMMIT")

    def abort(self) -> None:
        if self.store:
            self.db.con.execute("ROLLBACK")
            return
        for name in self.names:
            _drop_view(self.db.con, name)
            if self.scratch:
                self.db.con.execute(f'DROP TABLE IF EXISTS {self.scratch}."{name}"')

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is None:
            self.close()
        else:
            self.abort()
