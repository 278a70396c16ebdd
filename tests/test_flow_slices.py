"""The data-flow search and causal links over slices of the model (issue 14,
docs/analyses.md "Slices"): memory holds one slice, and the results are those of
the search over the whole model, which is the reference here (its flows are
checked against the systems' own ground truth in test_flow_truth.py, which also
runs the sliced search against that truth).

Slices are forced tiny (a few dozen publications, reaching 1 ms around their
outputs at first), so that even the small shared traces are cut into many
slices, flows cross slice bounds, and outputs whose flows reach further than
their slice are searched again with a longer reach.
"""
from __future__ import annotations

import os

import pytest

from tests.support.compare import floats_only_differ

pytest.importorskip("roscope._core", reason="the roscope core is not built")

import roscope  # noqa: E402
from roscope import flow as fl  # noqa: E402

from tests.support.cli import roscope as run_roscope
from tests.support.shared import TRACES

SHARED = sorted(
    os.path.join(TRACES, d, t) for d in ("ros2", "ros1") if os.path.isdir(os.path.join(TRACES, d))
    for t in os.listdir(os.path.join(TRACES, d))
)
#: Row order of each result table: flows and paths by id, segments by what they are.
ORDER = {"data_flows": "flow_id", "data_flow_steps": "flow_id, step", "data_flow_segments": "kind, a, b",
         "paths": "path_id", "causal_links": "out_publication_id, in_publication_id, in_run_id, kind"}
#: What the search measures of itself (time, its subtree cache) and how it was cut.
MEASUREMENTS = {"compute_ns", "ns_per_flow", "trees_cached", "cache_hits", "cache_evicted", "slices"}
TINY = {"reach_ns": 1_000_000}


@pytest.fixture(scope="module")
def dbs():
    return {}


def _db(dbs, path):
    if path not in dbs:
        dbs[path] = roscope.open(path)
    return dbs[path]


def _tables(db, names) -> dict:
    return {n: db.con.sql(f"SELECT * FROM {n} ORDER BY {ORDER[n]}").to_arrow_table() for n in names}


def _publications(db) -> int:
    return db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0]


def _both(db, **kw):
    """(summary, tables) of the whole search and of the sliced one."""
    whole = fl.data_flows(db, ".", ".", slice_publications=None, **kw)
    w = ({k: v for k, v in whole.summary.items() if k not in MEASUREMENTS}, _tables(db, fl.FLOW_TABLES))
    per = max(20, _publications(db) // 40)
    part = fl.data_flows(db, ".", ".", slice_publications=per, **TINY, **kw)
    s = ({k: v for k, v in part.summary.items() if k not in MEASUREMENTS}, _tables(db, fl.FLOW_TABLES))
    return w, s, part.summary["slices"]


def _same(w, s) -> None:
    assert s[0] == w[0]
    for name, t in w[1].items():
        assert s[1][name].num_rows == t.num_rows, name
        assert s[1][name].equals(t), name


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_sliced_flows_equal_the_whole_search(path, dbs):
    db = _db(dbs, path)
    w, s, slices = _both(db)
    _same(w, s)
    if _publications(db) > 100:
        assert slices["count"] > 2, slices
    # The flows exist at all (a comparison of two empty results proves little).
    assert w[0]["flows"] > 0


def test_flows_reaching_back_are_searched_again(dbs):
    """On the real Autoware trace, outputs' flows reach back to runs of callbacks
    that ran once, minutes before, whose inputs have no transport link: those
    outputs are searched again with what their slice lacked answered from the
    database, not with a slice that grows to the whole trace; segments forgotten by
    an earlier slice are found again and kept once."""
    db = _db(dbs, os.path.join(TRACES, "ros2", "autoware-carla-galactic"))
    w, s, slices = _both(db)
    _same(w, s)
    assert slices["restarts"] > 0 and slices["answered_from_database"] > 0, slices
    span = db.con.execute("SELECT max(start_ts) - min(start_ts) FROM callback_runs").fetchall()[0][0]
    assert slices["reach_ns"] < span / 100, (slices, span)
    assert slices["segments_found_again"] > 0, slices


@pytest.mark.parametrize("options", [
    {"implicit": "all", "all_paths": True},
    {"exact_links": False, "implicit": "annotations"},
    {"max_flows": 300},
    {"max_flows_per_output": 2, "exclude": "/rosout"},
    {"fallback": "pairs", "all_steps": True},
], ids=lambda o: ",".join(o))
def test_options_hold_across_slices(options, dbs):
    """Caps that stop the search in a middle slice, the newest-publication rule,
    every path of a pair, and exclusions give the whole search's result."""
    db = _db(dbs, os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds"))
    w, s, slices = _both(db, **options)
    _same(w, s)
    assert slices["count"] > 2, slices
    if "max_flows" in options:
        assert w[0]["caps"]["stopped_at_publication_id"] is not None


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_sliced_causal_links_equal_the_whole_model(path, dbs):
    db = _db(dbs, path)
    whole = fl.causal_link_table(db, slice_publications=None)
    w = _tables(db, ["causal_links"])
    part = fl.causal_link_table(db, slice_publications=max(20, _publications(db) // 40), **TINY)
    s = _tables(db, ["causal_links"])
    assert part["links"] == whole["links"]
    assert s["causal_links"].equals(w["causal_links"])
    if _publications(db) > 100:
        assert part["slices"]["count"] > 2, part["slices"]


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_message_graph_walked_over_the_database_equals_the_models(path, dbs):
    """`message_graph` on a trace with more than `slice_publications` publications
    walks the database (causal links made over slices) instead of the model in
    memory: the same publications, runs and edges, for the messages with the most
    causal, transport and published-in edges of each shared trace and the first."""
    db = _db(dbs, path)
    ctx = fl.context(db)
    fl.causal_link_table(db, slice_publications=None)
    busiest = [r[0] for r in db.con.execute("""
        SELECT p, count(*) AS n FROM (SELECT in_publication_id AS p FROM causal_links
                                      UNION ALL SELECT out_publication_id FROM causal_links
                                      UNION ALL SELECT publication_id FROM links WHERE run_id IS NOT NULL
                                      UNION ALL SELECT publication_id FROM publications WHERE run_id IS NOT NULL)
        GROUP BY p ORDER BY n DESC, p LIMIT 4""").fetchall()]
    sizes = []
    for pub in [0, *busiest]:
        whole = fl.message_graph(db, pub, ctx)
        walked = fl.message_graph(db, pub, slice_publications=max(1, _publications(db) // 4))
        for k in ("publications", "runs", "edges", "nodes"):
            assert walked[k] == whole[k], (pub, k)
        sizes.append(len(whole["edges"]))
    assert max(sizes) > 0, sizes


def test_flows_go_to_a_scratch_file_not_to_temporary_tables(tmp_path):
    """Without --store, the flows of `roscope flow` (76M at 144M events) go to a
    scratch database file in the Database's private directory, shown as temporary
    views: DuckDB compresses them and keeps no per-block bookkeeping of a spilled
    temporary table in memory (with temporary tables, RSS grew by 100 MiB over
    5.7 GB spilled). The database read stays untouched, the tables hold the flows
    the search counted, a second search shows its own under the names and leaves the first's
    result (a value) as it was, and close() removes the file."""
    import hashlib

    db_path = str(tmp_path / "aw.duckdb")
    p = run_roscope("load", os.path.join(TRACES, "ros2", "autoware-carla-galactic"), "-o", db_path)
    assert p.returncode == 0, p.stderr
    digest = hashlib.sha256(open(db_path, "rb").read()).hexdigest()
    db = roscope.open(db_path, memory=16 << 20)
    seen, searches = [], []
    for kw in ({}, {"all_paths": True}):
        res = fl.data_flows(db, ".", ".", **kw)
        counted = {"data_flows": res.summary["flows"], "paths": res.summary["paths"]}
        assert counted["data_flows"] > 10_000 and counted not in seen
        seen.append(counted)
        kinds = dict(db.con.execute("SELECT table_name, table_type FROM information_schema.tables "
                                    "WHERE table_catalog = 'temp'").fetchall())
        assert {n: kinds.get(n) for n in fl.FLOW_TABLES} == {n: "VIEW" for n in fl.FLOW_TABLES}
        stored = dict(db.con.execute("SELECT table_name, estimated_size FROM duckdb_tables() "
                                     "WHERE database_name = ?", [db.scratch_catalog()]).fetchall())
        assert {res.sql(n).split(".", 1)[1].strip('"') for n in fl.FLOW_TABLES} <= set(stored)  # this search's own
        for name, n in counted.items():
            assert db.con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0] == n
        searches.append((res, counted))
    for res, counted in searches:  # each search's result a value: the second left the first's rows alone
        assert {n: res.results[n].count() for n in counted} == counted
    [(scratch,)] = db.con.execute("SELECT path FROM duckdb_databases() WHERE database_name = ?",
                                  [db.scratch_catalog()]).fetchall()
    assert os.path.isfile(scratch) and os.path.dirname(scratch) == db.private_dir
    db.close()
    assert not os.path.exists(scratch)
    assert hashlib.sha256(open(db_path, "rb").read()).hexdigest() == digest


def test_a_renewed_connection_shows_the_same_results(tmp_path):
    """`roscope flow` takes a new connection after the causal links and after the
    search (`Database.renew`): DuckDB gives back what those inserts left outside its
    buffers only when its instance closes (bench/flow_phases.py). The new connection
    shows the same result tables with the same rows, keeps the memory budget and the
    private directory, and the statistics over it equal those over the old one. A
    database in memory, or one showing a registered Python object, is left as it is."""

    import pyarrow as pa

    db_path = str(tmp_path / "aw.duckdb")
    p = run_roscope("load", os.path.join(TRACES, "ros2", "autoware-carla-galactic"), "-o", db_path)
    assert p.returncode == 0, p.stderr
    db = roscope.open(db_path, memory=16 << 20)
    fl.causal_link_table(db)
    fl.data_flows(db, ".", ".")
    names = ["causal_links", *fl.FLOW_TABLES]
    before = _tables(db, names)
    stats = fl.path_stats(db), fl.component_stats(db)
    old = db.con
    settings = "SELECT name, value FROM duckdb_settings() WHERE name IN ('memory_limit', 'temp_directory') ORDER BY name"
    was = old.execute(settings).fetchall()
    assert db.renew() is True
    assert db.con is not old
    with pytest.raises(Exception, match="(?i)closed"):
        old.execute("SELECT 1")
    assert db.con.execute(settings).fetchall() == was
    assert dict(was)["temp_directory"] == db.private_dir
    after = _tables(db, names)
    for n in names:
        assert after[n].equals(before[n]), n
    assert all(after[n].num_rows > 0 for n in fl.FLOW_TABLES)  # (the trace has no transport links)
    # (std may differ in the last digit: DuckDB's threads sum in another order.)
    assert floats_only_differ((fl.path_stats(db), fl.component_stats(db)), stats)
    # A search after the renewal replaces the tables as before.
    res = fl.data_flows(db, ".", ".", all_paths=True)
    assert db.con.execute("SELECT count(*) FROM data_flows").fetchall()[0][0] == res.summary["flows"]
    # Not renewed: an open transaction would be rolled back, a registered Python
    # object could not be shown again.
    db.con.begin()
    kept = db.con
    assert db.renew() is False and db.con is kept
    db.con.rollback()
    db.con.register("mine", pa.table({"a": [1, 2]}))
    kept = db.con
    assert db.renew() is False and db.con is kept
    assert db.con.execute("SELECT sum(a) FROM mine").fetchall() == [(3,)]
    db.close()
    mem = roscope.open(os.path.join(TRACES, "ros2", "autoware-carla-galactic"))
    kept = mem.con
    assert mem.renew() is False and mem.con is kept
    mem.close()



def test_a_sliced_flow_imports_no_pyarrow(tmp_path):
    """`roscope flow` over slices reads the database and stores its results as Arrow streams
    between DuckDB and the core, without pyarrow (its libraries were 37 MiB of the peak of a
    flow over 136M events): in a fresh interpreter, on the shared Autoware trace loaded to a
    database, cut into slices of 500 publications, the flows are there (as many as the search
    over the whole model finds, in this process) and pyarrow was not imported."""
    import json
    import subprocess
    import sys

    trace = os.path.join(TRACES, "ros2", "autoware-carla-galactic")
    if not os.path.isdir(trace):
        pytest.skip(f"{trace} is not there")
    db = tmp_path / "aw.duckdb"
    p = run_roscope("load", trace, "-o", str(db))
    assert p.returncode == 0, p.stderr
    code = ("import sys; from roscope import cli; "
            "rc = cli.main(['flow', sys.argv[1], '--from', '.', '--to', '.', '--slice', '500', '--json']); "
            "print(sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules), file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[]", p.stderr
    summary = json.loads(p.stdout)["summary"]
    assert summary["slices"]["count"] > 1, summary["slices"]
    with roscope.open(str(db)) as whole:
        assert summary["flows"] == fl.data_flows(whole, ".", ".", slice_publications=None)["flows"] > 100
