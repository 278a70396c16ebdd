"""roscope.results on its own, over small hand-made tables: where an analysis puts
its results. Published results are visible to SQL without writing into the
database (and hide a stored table of the same name on that connection only);
stored ones are tables of the database, written in one transaction, refused on a
read-only database with a message naming it; an Appender fills schema tables
chunk by chunk, in the Database's scratch file when it has a private directory,
and leaves nothing behind when it fails. Each result is a value: a later result of the
same name does not change it, and its private table goes once nothing refers to it."""
from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pytest
from roscope import results
from roscope.database import Database
from roscope.errors import DatabaseError


def _db(path: str, read_only: bool = False) -> Database:
    return Database(duckdb.connect(path, read_only=read_only), path, meta={"warnings": []}, read_only=read_only)


@pytest.fixture
def dbfile(tmp_path) -> str:
    """A database file with one stored table `paths` of two hand-made rows."""
    path = str(tmp_path / "small.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE paths (path_id BIGINT, flows BIGINT, path VARCHAR, fallback_edges BIGINT)")
    con.execute("INSERT INTO paths VALUES (0, 3, 'a -> b', 0), (1, 1, 'a -> c', 2)")
    con.close()
    return path


def _stored(path: str, sql: str) -> list:
    con = duckdb.connect(path, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_published_table_hides_the_stored_one_on_its_connection_only(dbfile):
    db = _db(dbfile)
    results.publish(db, {"paths": pa.table({"path_id": [7], "flows": [9], "path": ["x"], "fallback_edges": [0]})})
    assert db.con.execute("SELECT path_id, flows FROM paths").fetchall() == [(7, 9)]
    # Published again: the newest wins.
    results.publish(db, {"paths": pa.table({"path_id": [8], "flows": [1], "path": ["y"], "fallback_edges": [0]})})
    assert db.con.execute("SELECT path_id FROM paths").fetchall() == [(8,)]
    db.close()
    assert _stored(dbfile, "SELECT path_id, flows FROM paths ORDER BY path_id") == [(0, 3), (1, 1)]


def test_publish_works_on_a_read_only_database_and_store_is_refused_there(dbfile):
    db = _db(dbfile, read_only=True)
    assert results.is_read_only(db)
    results.publish(db, {"extra": pa.table({"a": [1, 2, 3]})})
    assert db.con.execute("SELECT sum(a) FROM extra").fetchall() == [(6,)]
    with pytest.raises(DatabaseError, match=f"{dbfile}: the database is open read-only"):
        results.publish(db, {"extra": pa.table({"a": [1]})}, store=True)
    with pytest.raises(DatabaseError, match="open read-only"):
        results.Appender(db, ["paths"], store=True)
    db.close()


def test_store_writes_tables_in_one_transaction(dbfile):
    db = _db(dbfile)
    assert not results.is_read_only(db)
    bad = pa.table({"a": [1]})
    good = pa.table({"path_id": [5], "flows": [2], "path": ["z"], "fallback_edges": [1]})
    # The second table cannot be registered (not an Arrow table): nothing of the first stays.
    with pytest.raises(Exception):  # noqa: B017 - DuckDB's own error for an object it cannot read
        results.publish(db, {"paths": good, "broken": object()}, store=True)
    assert db.con.execute("SELECT count(*) FROM paths").fetchall() == [(2,)]
    results.publish(db, {"paths": good, "extra": bad}, store=True)
    db.close()
    assert _stored(dbfile, "SELECT path_id, flows, path FROM paths") == [(5, 2, "z")]
    assert _stored(dbfile, "SELECT a FROM extra") == [(1,)]


def test_a_published_query_is_computed_when_read_and_stored_once_with_store(dbfile):
    db = _db(dbfile)
    results.publish_query(db, "busy", "SELECT sum(flows) AS n FROM paths")
    assert db.con.execute("SELECT n FROM busy").fetchall() == [(4,)]  # 3 + 1
    db.con.execute("INSERT INTO paths VALUES (2, 10, 'b -> c', 0)")
    assert db.con.execute("SELECT n FROM busy").fetchall() == [(14,)]  # a view: read again
    results.publish_query(db, "busy", "SELECT sum(flows) AS n FROM paths", store=True)
    db.con.execute("INSERT INTO paths VALUES (3, 100, 'c -> d', 0)")
    assert db.con.execute("SELECT n FROM busy").fetchall() == [(14,)]  # a table: as it was stored
    db.close()
    assert _stored(dbfile, "SELECT n FROM busy") == [(14,)]


def _links(rows: list[tuple]) -> pa.Table:
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    return pa.table({"in_publication_id": pa.array(cols[0], pa.int64()), "in_run_id": pa.array(cols[1], pa.int64()),
                     "out_publication_id": pa.array(cols[2], pa.int64()), "kind": pa.array(cols[3], pa.string())})


def test_an_appender_fills_schema_tables_chunk_by_chunk_in_the_scratch_file(tmp_path):
    db = _db(":memory:")
    db.limit_memory(64 << 20)  # a private directory, and so a scratch file
    try:
        with results.Appender(db, ["causal_links"]) as out:
            out.append("causal_links", _links([(0, 1, 2, "direct"), (3, 4, 5, "inferred")]))
            out.append("causal_links", _links([]))
            out.append("causal_links", _links([(6, None, 7, "periodic_async")]))
            assert out.target("causal_links").startswith(f'{db.scratch_catalog()}."_roscope_causal_links_')
            private = out.target("causal_links").split(".", 1)[1].strip('"')
        rows = db.con.execute("SELECT * FROM causal_links ORDER BY in_publication_id").fetchall()
        assert out.results["causal_links"].relation().order("in_publication_id").fetchall() == rows
        assert rows == [(0, 1, 2, "direct"), (3, 4, 5, "inferred"), (6, None, 7, "periodic_async")]
        # The schema's columns and types (crates/model/src/schema.rs), whatever the chunks held.
        types = db.con.execute("SELECT column_name, data_type FROM information_schema.columns "
                               "WHERE table_name = ? AND table_catalog = ? ORDER BY ordinal_position",
                               [private, db.scratch_catalog()]).fetchall()
        assert types == [("in_publication_id", "BIGINT"), ("in_run_id", "BIGINT"), ("out_publication_id", "BIGINT"),
                         ("kind", "VARCHAR")]
        assert os.path.isfile(os.path.join(db.private_dir, "scratch.duckdb"))
    finally:
        db.close()


def test_an_appender_that_fails_leaves_nothing(dbfile):
    db = _db(dbfile)
    with pytest.raises(RuntimeError, match="the analysis failed"):
        with results.Appender(db, ["causal_links"]) as out:
            out.append("causal_links", _links([(0, 1, 2, "direct")]))
            raise RuntimeError("the analysis failed")
    assert db.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%causal_links%'"
                          ).fetchall() == [(0,)]
    # Stored: rolled back, the database as it was.
    with pytest.raises(RuntimeError):
        with results.Appender(db, ["causal_links"], store=True) as out:
            out.append("causal_links", _links([(0, 1, 2, "direct")]))
            raise RuntimeError("again")
    with pytest.raises(KeyError):
        results.Appender(db, ["paths"]).target("causal_links")
    db.close()
    assert _stored(dbfile, "SELECT table_name FROM information_schema.tables ORDER BY 1") == [("paths",)]


def test_an_appender_stores_in_the_database_with_store(dbfile):
    db = _db(dbfile)
    with results.Appender(db, ["causal_links"], store=True) as out:
        out.append("causal_links", _links([(1, 2, 3, "partial_sync")]))
    db.close()
    assert _stored(dbfile, "SELECT * FROM causal_links") == [(1, 2, 3, "partial_sync")]


def test_a_result_is_a_value_that_a_later_result_of_its_name_leaves_alone(tmp_path):
    """Two results of one name on one connection: each reads its own rows through its
    value (`Result.sql`, `relation()`), the name shows the newest; a private table no
    value refers to any more is dropped when the next result is made, the one shown
    under the name stays."""
    db = _db(":memory:")
    db.limit_memory(64 << 20)
    try:
        firsts = []
        for rows in ([(0, 1, 2, "direct")], [(3, 4, 5, "inferred"), (6, 7, 8, "direct")]):
            with results.Appender(db, ["causal_links"]) as out:
                out.append("causal_links", _links(rows))
            firsts.append(out.results["causal_links"])
        a, b = firsts
        assert a.sql != b.sql
        assert a.relation().fetchall() == [(0, 1, 2, "direct")]
        assert sorted(b.relation().fetchall()) == [(3, 4, 5, "inferred"), (6, 7, 8, "direct")]
        assert db.con.execute("SELECT count(*) FROM causal_links").fetchall() == [(2,)]  # the newest shown
        assert results.shown(db, "causal_links") is b
        q = results.publish_query(db, "busy", f"SELECT count(*) AS n FROM {a.sql}", keep=[a])
        assert q.relation().fetchall() == [(1,)]

        def private_tables() -> set:
            return {r[0] for r in db.con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ?",
                                                 [db.scratch_catalog()]).fetchall()}

        names = {r.sql.split(".", 1)[1].strip('"') for r in (a, b)}
        assert names <= private_tables()
        del firsts, a, q  # the view `busy` (shown) keeps q, hence a, alive
        results.publish_query(db, "other", "SELECT 1")
        assert names <= private_tables()
        results.publish_query(db, "busy", "SELECT 2 AS n")  # q no longer shown: it and a go
        results.publish_query(db, "other", "SELECT 3")
        assert private_tables() == {b.sql.split(".", 1)[1].strip('"')}
        assert db.con.execute("SELECT n FROM busy").fetchall() == [(2,)]
    finally:
        db.close()


def test_two_databases_of_one_file_keep_their_own_scratch_files(dbfile):
    """Two Databases of one file in one process share DuckDB's instance (and what is attached to
    it): each keeps its results in its own scratch file, so the first one closing (its private
    directory removed) or a new connection of the second (`renew`, as `roscope flow` takes one
    after its causal links) leaves the second's results whole. With one catalog name for both,
    the second wrote into the first's scratch file, and its renewed connection failed
    ("Table ... does not exist": `roscope flow` after `roscope check` in one process)."""
    first, second = _db(dbfile), _db(dbfile)
    first.limit_memory(64 << 20)
    second.limit_memory(64 << 20)
    with results.Appender(first, ["causal_links"]) as out:
        out.append("causal_links", _links([(0, 1, 2, "direct")]))
    with results.Appender(second, ["causal_links"]) as out:
        out.append("causal_links", _links([(3, 4, 5, "inferred"), (6, 7, 8, "direct")]))
    mine = out.results["causal_links"]
    assert first.scratch_catalog() != second.scratch_catalog()
    assert mine.sql.startswith(f'{second.scratch_catalog()}."')
    first.close()
    assert sorted(mine.relation().fetchall()) == [(3, 4, 5, "inferred"), (6, 7, 8, "direct")]
    assert second.renew()
    assert sorted(second.con.execute("SELECT * FROM causal_links").fetchall()) == [(3, 4, 5, "inferred"), (6, 7, 8, "direct")]
    second.close()
