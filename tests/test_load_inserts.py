"""How a streaming load stores its chunks (python/roscope/loading.py `_Inserts`):
buffered chunks go to DuckDB as one Arrow stream per insert, in transactions
of `COMMIT_BYTES`, with DuckDB on one thread while the builder runs. The
shared traces are small enough to fit in one insert and one transaction with
the defaults, so here the sizes are shrunk until every chunk is its own insert
and the inserts span many transactions; the stored tables must still be the
whole-trace build's row for row (that build is the one checked against
CARET and babeltrace2 in test_model.py and test_caret_humble.py).
"""
from __future__ import annotations

import os

import duckdb
import pytest
from roscope import loading

from tests.support.shared import TRACES

AUTOWARE = os.path.join(TRACES, "ros2", "autoware-carla-galactic")


def _missing_rows(con, name: str, tbl) -> tuple[int, int]:
    """Rows of the stored table `name` not in `tbl`, and of `tbl` not stored (multisets)."""
    con.register("whole", tbl)
    try:
        return con.execute(f'SELECT (SELECT count(*) FROM (SELECT * FROM "{name}" EXCEPT ALL SELECT * FROM whole)), '
                           f'(SELECT count(*) FROM (SELECT * FROM whole EXCEPT ALL SELECT * FROM "{name}"))').fetchall()[0]
    finally:
        con.unregister("whole")


@pytest.mark.skipif(not os.path.isdir(AUTOWARE), reason="shared Autoware trace missing")
def test_many_small_inserts_in_many_transactions_store_every_row(tmp_path, monkeypatch):
    inserts: list[str] = []
    commits: list[int] = []
    put, commit = loading._put, loading._Inserts._commit

    def counting_put(con, name, tbl, exists):
        inserts.append(name)
        put(con, name, tbl, exists)

    def counting_commit(self):
        commits.append(self.uncommitted)
        commit(self)

    monkeypatch.setattr(loading, "INSERT_BYTES", 64 << 10)
    monkeypatch.setattr(loading, "COMMIT_BYTES", 1 << 20)
    monkeypatch.setattr(loading, "STREAM_QUEUE", 1)
    monkeypatch.setattr(loading, "_put", counting_put)
    monkeypatch.setattr(loading._Inserts, "_commit", counting_commit)
    out = str(tmp_path / "a.duckdb")
    res = loading.write([AUTOWARE], out)
    whole, _stats, _w, _l = loading.build([AUTOWARE], progress=False)
    # It did take the paths under test: many inserts of the instance tables,
    # committed in more than a few transactions.
    assert inserts.count("callback_runs") > 5 and inserts.count("publications") > 5, inserts
    assert sum(1 for c in commits if c > 0) > 5, commits
    con = duckdb.connect(out, read_only=True)
    try:
        for name, tbl in whole.items():
            assert res.tables[name] == tbl.num_rows, name
            assert con.table(name).shape[0] == tbl.num_rows, name
            assert _missing_rows(con, name, tbl) == (0, 0), name
    finally:
        con.close()


def test_a_load_gives_duckdb_its_threads_back(monkeypatch):
    """The in-memory database of `roscope.open(trace)` is queried afterwards:
    the single thread DuckDB had while storing is not left set (a trace above
    `loading.SMALL_TRACE_BYTES`; a smaller one keeps one thread on purpose)."""
    trace = os.path.join(TRACES, "ros2", "pingpong-rolling-2021")
    if not os.path.isdir(trace):
        pytest.skip("shared trace missing")
    monkeypatch.setattr(loading, "SMALL_TRACE_BYTES", -1)
    default = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    database, _res = loading.load([trace], None)
    try:
        assert database.con.execute("SELECT current_setting('threads')").fetchone()[0] == default
        # And nothing is left uncommitted: a rollback would fail outside a transaction.
        with pytest.raises(duckdb.TransactionException):
            database.con.rollback()
    finally:
        database.close()
