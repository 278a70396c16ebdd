"""Analyses' results as values, and where they are shown.

Each analysis returns its result as a `Result`: a table or view of the database's
connection under a private name made for it alone (`Result.sql`), which no later
analysis replaces; roscope's code passes these values (a `Result`, or an analysis's
own result object holding them) and reads them through `Result.sql` or
`Result.relation()`, never by a shared name.

Showing a result to users under its table name (`data_flows`, `run_sched`, ...: the
SQL shell, `roscope sql`, the Python API's readers) is a presentation step (`show`):
a connection-local view of that name over the result (works on read-only
databases); the newest result shown under a name wins, and a result published under
a name hides a stored table of the same name on that connection. With `store`, the
result is a table of the database under its name, written in one transaction
(storing drops such a view first). Names are roscope's result table names, never
text from a user or a trace.

- `publish(db, {name: arrow_table}, store)`: Arrow tables as results (registered);
- `publish_query(db, name, sql, store, keep)`: a query's result as a view, or
  stored as a table;
- `temp_table(db, name, sql)`: a query's result computed once into a temporary
  table of the connection;
- `Appender(db, names, store)`: tables of the schema filled chunk by chunk (Arrow
  data, e.g. streamed from the core), in a scratch database file of the Database's
  private directory (`Database.scratch_catalog`) (or, without such a directory, as
  temporary tables), or stored in one transaction; for results whose size is not
  bounded by the trace (data flows).

A private table or view is dropped once no value refers to it (neither a caller's
`Result` nor the name it is shown under): on the next result made on that Database.
"""
from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING

from roscope.database import columns_sql
from roscope.errors import DatabaseError

if TYPE_CHECKING:
    from roscope.database import Database


class _State:
    """Per Database: the results shown under their names (kept alive by it) and the
    private tables and views no value refers to any more, to drop."""

    def __init__(self):
        self.shown: dict[str, Result] = {}
        self.garbage: list[tuple[str, str]] = []


_NUMBERS = itertools.count(1)


def _state(db: Database) -> _State:
    """The Database's `_State`, kept on it (collected with it)."""
    st = db.__dict__.get("_results")
    if st is None:
        st = db.__dict__["_results"] = _State()
    return st


def _sweep(db: Database) -> None:
    """Drops the private tables and views of the results no value refers to any more."""
    garbage = _state(db).garbage
    while garbage:
        kind, sql = garbage.pop()
        if kind == "registered":
            db.con.unregister(sql)
        else:
            db.con.execute(f"DROP {kind} IF EXISTS {sql}")


def _private(db: Database, name: str) -> str:
    """A name for one result of `name` that no other result has (roscope's own text)."""
    _sweep(db)
    return f"_roscope_{name}_{next(_NUMBERS)}"


class Result:
    """One analysis's result, a value: a table or view of the connection under a name
    made for it alone (`sql`, a quoted SQL name to put in a query), which no later
    analysis replaces. `name` is the result's table name (the one it is shown under,
    `show`); `stored` says it is the database's stored table of that name (which a
    later result stored under that name does replace). The relation is taken from the
    Database's current connection each time (`Database.renew` replaces it)."""

    __slots__ = ("db", "name", "sql", "stored", "keep", "_drop", "__weakref__")

    def __init__(self, db: Database, name: str, sql: str, *, stored: bool = False, drop: tuple[str, str] | None = None,
                 keep=()):
        self.db, self.name, self.sql, self.stored = db, name, sql, stored
        #: What this result's table or view reads (other results, an Arrow table): kept alive with it.
        self.keep = tuple(keep)
        self._drop = None if drop is None else weakref.finalize(self, _state(db).garbage.append, drop)

    def close(self) -> None:
        """Drops the private table or view now (an intermediate result, to give its
        memory back at once); the result must not be read afterwards, nor be shown."""
        if self._drop is not None and _state(self.db).shown.get(self.name) is not self:
            self._drop()
            _sweep(self.db)

    def relation(self):
        """The result as a DuckDB relation of the Database's current connection."""
        return self.db.con.sql(f"SELECT * FROM {self.sql}")

    def arrow(self):
        """The result read whole, as a pyarrow Table."""
        return self.relation().arrow().read_all()

    def df(self):
        """The result read whole, as a pandas DataFrame."""
        return self.db.con.execute(f"SELECT * FROM {self.sql}").df()

    def count(self) -> int:
        return self.db.con.execute(f"SELECT count(*) FROM {self.sql}").fetchall()[0][0]

    def __repr__(self) -> str:
        return f"Result({self.name!r} as {self.sql})"


def show(*results: Result) -> None:
    """Shows each result to users under its table name on its connection (a temporary
    view over it; an Arrow result registered under that name too); the newest shown
    under a name wins. A stored result already is the table of that name."""
    for r in results:
        st = _state(r.db)
        if not r.stored:
            con = r.db.con
            _drop_view(con, r.name)
            arrow = [k for k in r.keep if not isinstance(k, Result)]
            if arrow:  # a registered Arrow table: registered under its name too
                con.register(r.name, arrow[0])
            else:
                con.execute(f'CREATE TEMP VIEW "{r.name}" AS SELECT * FROM {r.sql}')
        st.shown[r.name] = r


def shown(db: Database, name: str) -> Result | None:
    """The result shown under `name` on `db` (`show`), None if none is."""
    return _state(db).shown.get(name)


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


def _stored_result(db: Database, name: str) -> Result:
    r = Result(db, name, f'"{name}"', stored=True)
    _state(db).shown[name] = r
    return r


def publish(db: Database, tables: dict, store: bool = False) -> dict[str, Result]:
    """Each Arrow table as a result ({name: Result}), shown under its name (registered),
    or stored as a table of the database with `store`."""
    if not store:
        out = {}
        for name, t in tables.items():
            private = _private(db, name)
            db.con.register(private, t)
            out[name] = Result(db, name, f'"{private}"', drop=("registered", private), keep=(t,))
            show(out[name])
        return out
    _check_writable(db)

    def put(name, t):
        def st(con):
            _drop_view(con, name)
            con.register("_roscope_result", t)
            con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM _roscope_result')
            con.unregister("_roscope_result")
        return st

    _stored(db, [put(name, t) for name, t in tables.items()])
    return {name: _stored_result(db, name) for name in tables}


def publish_query(db: Database, name: str, sql: str, store: bool = False, keep=()) -> Result:
    """The result of `sql` (roscope's own SQL, reading the results in `keep` through
    their `Result.sql`), a temporary view (computed when queried) shown as `name`; or a
    table of the database with `store`."""
    if not store:
        private = _private(db, name)
        db.con.execute(f'CREATE TEMP VIEW "{private}" AS {sql}')
        r = Result(db, name, f'temp."{private}"', drop=("VIEW", f'temp."{private}"'), keep=keep)
        show(r)
        return r
    _check_writable(db)

    def st(con):
        _drop_view(con, name)
        con.execute(f'CREATE OR REPLACE TABLE "{name}" AS {sql}')

    _stored(db, [st])
    return _stored_result(db, name)


def temp_table(db: Database, name: str, sql: str, params=(), keep=(), run=None) -> Result:
    """The result of `sql` (with `params`) computed once into a temporary table of the
    connection, not shown (`show` shows it). `run(step)`, if given, runs the statement
    (e.g. `Database.within_memory`)."""
    private = _private(db, name)
    step = lambda: db.con.execute(f'CREATE TEMP TABLE "{private}" AS {sql}', list(params))  # noqa: E731
    step() if run is None else run(step)
    return Result(db, name, f'temp."{private}"', drop=("TABLE", f'temp."{private}"'), keep=keep)


class Appender:
    """Result tables of the schema, created empty and filled chunk by chunk; `results`
    {name: Result}, shown under their names on `close()`.

    Without `store`, tables of the Database's scratch database file (`Database.scratch_catalog`)
    under private names (they work on read-only databases); DuckDB writes them
    compressed and keeps in memory what its budget allows, so memory stays flat
    however many rows come (temporary tables, used when there is no such file, also
    spill, but stay uncompressed and keep a few MiB of bookkeeping in memory per GiB
    spilled). With `store`, tables of the database, written in one transaction that
    `close()` commits and `abort()` rolls back. Use it as a context manager: an
    exception rolls back.
    """

    def __init__(self, db: Database, names, store: bool = False):
        if store:
            _check_writable(db)
        self.db, self.names, self.store = db, list(names), store
        con = db.con
        self.scratch = None if store else db.scratch_catalog()
        self.results: dict[str, Result] = {}
        if store:
            con.execute("BEGIN TRANSACTION")
        try:
            for name in self.names:
                if store:
                    _drop_view(con, name)
                    con.execute(f'CREATE OR REPLACE TABLE "{name}" ({columns_sql(name)})')
                    self.results[name] = Result(db, name, f'"{name}"', stored=True)
                    continue
                private = _private(db, name)
                sql = f'{self.scratch}."{private}"' if self.scratch else f'temp."{private}"'
                con.execute(f"CREATE {'' if self.scratch else 'TEMP '}TABLE {sql} ({columns_sql(name)})")
                self.results[name] = Result(db, name, sql, drop=("TABLE", sql))
        except BaseException:
            self.abort()
            raise

    def target(self, name: str) -> str:
        """The SQL name of the table behind result `name` (to change its rows)."""
        if name not in self.names:
            raise KeyError(f"{name!r} is not one of this appender's tables")
        return self.results[name].sql

    def append(self, name: str, table) -> None:
        """Appends an Arrow table (or anything `from_arrow` takes) to table `name`."""
        self.db.con.from_arrow(table).insert_into(self.target(name))

    def close(self) -> None:
        if self.store:
            self.db.con.execute("COMMIT")
            for r in self.results.values():
                _state(self.db).shown[r.name] = r
            return
        show(*self.results.values())

    def abort(self) -> None:
        if self.store:
            self.db.con.execute("ROLLBACK")
            return
        for r in self.results.values():
            self.db.con.execute(f"DROP TABLE IF EXISTS {r.sql}")
        self.results.clear()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is None:
            self.close()
        else:
            self.abort()
