"""Races between callbacks (`roscope.overlaps`, issue 29): the runs that overlap on two
threads of a process, found by the core's sweep, against a plain SQL self-join of
`callback_runs` (every pair of runs of a process on different threads whose times
intersect) on real traces. The flows these facts make uncertain are measured
against a recorded system's own log in tests/test_onebinary.py."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("roscope._core", reason="the roscope core is not built")

ORACLE = """
    WITH r AS (SELECT c.proc_id, r.thread_id, r.callback_id, r.start_ts, r.end_ts
               FROM callback_runs r JOIN callbacks c USING (callback_id) WHERE r.end_ts IS NOT NULL)
    SELECT DISTINCT a.callback_id, b.callback_id, b.start_ts FROM r a JOIN r b
    ON a.proc_id = b.proc_id AND a.thread_id <> b.thread_id AND a.start_ts < b.end_ts AND b.start_ts < a.end_ts"""
#: ORACLE's rows (a, b, t) with a <> b, both callbacks of one (known) node: the same self-join
#: with that condition in its ON clause, so that DuckDB joins by node first (ORACLE over the
#: Autoware trace, then filtered, took 40 s).
ORACLE_SAME_NODE = """
    WITH r AS (SELECT c.proc_id, c.node_id, r.thread_id, r.callback_id, r.start_ts, r.end_ts
               FROM callback_runs r JOIN callbacks c USING (callback_id) WHERE r.end_ts IS NOT NULL AND c.node_id IS NOT NULL)
    SELECT DISTINCT a.callback_id, b.callback_id, b.start_ts FROM r a JOIN r b
    ON a.proc_id = b.proc_id AND a.node_id = b.node_id AND a.callback_id <> b.callback_id
       AND a.thread_id <> b.thread_id AND a.start_ts < b.end_ts AND b.start_ts < a.end_ts"""


@pytest.mark.parametrize("trace, multi_threaded", [
    ("ros2/caret-end-to-end-cyclonedds", True),   # its callbacks run on several threads of a process
    ("ros2/caret-talker-listener-galactic", False),
    ("ros1/nodes-pipeline-melodic", False),
])
def test_overlapping_runs_equal_a_self_join(shared_traces, trace, multi_threaded):
    import roscope
    from roscope.overlaps import overlapping_runs

    db = roscope.open(os.path.join(shared_traces, trace))
    got = overlapping_runs(db)
    want = {tuple(r) for r in db.con.execute(ORACLE).fetchall()}
    assert set(got) == want and len(got) == len(want)
    assert bool(got) == multi_threaded
    # symmetric: a run of A overlapping a run of B is a run of B overlapping one of A
    starts = {(r["callback_id"], r["start_ts"]) for r in db.records("SELECT callback_id, start_ts FROM callback_runs")}
    assert all((b, t) in starts for _a, b, t in got)
    if got:
        a, b, _t = got[0]
        assert any(x == b and y == a for x, y, _ in got)


def test_the_sweep_wants_runs_in_order():
    import pyarrow as pa
    from roscope import _core

    runs = pa.table({"proc_id": [1, 1], "thread_id": [1, 2], "callback_id": [10, 20], "start_ts": [5, 4], "end_ts": [9, 8]})
    with pytest.raises(ValueError, match=r"not in \(process, start\) order"):
        _core.overlapping_runs(runs)
    ok = pa.table({"proc_id": [1, 1], "thread_id": [1, 2], "callback_id": [10, 20], "start_ts": [4, 5], "end_ts": [9, 8]})
    assert _core.overlapping_runs(ok) == [(20, 10, 4), (10, 20, 5)]


@pytest.fixture(scope="module")
def autoware(shared_traces):
    """The Autoware trace opened once for both parameters below (each opening loads its
    684k events), the flow's model of it, the self-join's overlaps of two callbacks of
    one node and the count of all of them: read-only for the tests."""
    import roscope
    from roscope.flow import context
    from roscope.overlaps import overlapping_runs

    db = roscope.open(os.path.join(shared_traces, "ros2/autoware-carla-galactic"))
    same_node = {tuple(r) for r in db.con.execute(ORACLE_SAME_NODE).fetchall()}
    return db, context(db).model, same_node, len(overlapping_runs(db))


@pytest.mark.parametrize("implicit", ["all", "none"])
def test_a_search_holds_the_overlaps_of_its_intra_node_edges_only(autoware, implicit):
    """`FlowSearch.add_overlaps` keeps, of the self-join's overlaps, those an intra-node
    edge depends on: with `implicit="all"` (no annotations in this trace) every pair
    of distinct callbacks of a node, with "none" no edge at all. On the Autoware
    trace the runs overlap 50,386 times, none of two callbacks of one node (its
    multi-threaded executors run different nodes' callbacks side by side); the
    races within a node, and the flows they make uncertain, are checked against a
    recorded system's log in tests/test_onebinary.py."""
    from roscope import _core
    from roscope.overlaps import add_overlaps

    db, model, same_node, n_overlaps = autoware
    assert len(same_node) < n_overlaps  # overlaps of other pairs, to be left out
    n = len(model.topics)
    options = _core.SearchOptions(is_input=[True] * n, is_output=[True] * n, implicit=implicit, fallback="pairs",
                                  exact_links=True, max_flows_per_output=None, max_flows=None, all_paths=False,
                                  all_steps=False, excluded_topics=None, excluded_callbacks=None, deps=None,
                                  deps_callbacks=None, drop_uncertain=False)
    held = add_overlaps(db, _core.FlowSearch(model, options))
    assert held == (len(same_node) if implicit == "all" else 0)
