"""Where analyses put their results: visible to SQL on the database's connection
without writing into the database (the default), or stored in it when asked.

- `publish(db, {name: arrow_table}, store)`: registered as connection-local views
  (works on read-only databases), or stored as tables in one transaction;
- `publish_query(db, name, sql, store)`: a query's result as a temporary view, or
  stored as a table.

A result published under a name hides a stored table of the same name on that
connection (the newest result wins); storing drops such a view first. Names are
roscope's result table names, never text from a user or a trace.
"""
from __future__ import annotations

from roscope.errors import DatabaseError


def is_read_only(db) -> bool:
    row = db.con.execute("SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return bool(row and row[0])


def _check_writable(db) -> None:
    if is_read_only(db):
        raise DatabaseError(f"{db.path}: the database is open read-only, so results cannot be stored in it; "
                            "open it with roscope.open(path, read_only=False) (CLI: --store opens it for writing)")


def _drop_view(con, name: str) -> None:
    con.unregister(name)
    con.execute(f'DROP VIEW IF EXISTS temp."{name}"')


def _stored(db, statements) -> None:
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


def publish(db, tables: dict, store: bool = False) -> None:
    """Makes each Arrow table visible to SQL on `db` under its name (registered), or
    stores it as a table of the database with `store`."""
    if not store:
        for name, t in tables.items():
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


def publish_query(db, name: str, sql: str, store: bool = False) -> None:
    """Makes the result of `sql` visible as `name`: a temporary view (computed when
    queried), or a table of the database with `store`."""
    if not store:
        db.con.execute(f'CREATE OR REPLACE TEMP VIEW "{name}" AS {sql}')
        return
    _check_writable(db)

    def st(con):
        _drop_view(con, name)
        con.execute(f'CREATE OR REPLACE TABLE "{name}" AS {sql}')

    _stored(db, [st])
