"""Per-message input waits (`roscope.executor.run_input_waits`) against a direct
computation in plain Python from the model's tables.

The oracle is the definition, evaluated naively per message: the executor was busy
during a message's wait for the sum, over the other outermost (depth 0) runs with an
end on the run's thread with end > publish and start < the run's start, of
min(end, start of the run) - max(start, publish). Real traces have neither nested
runs, runs without end nor negative waits, so a second test edits a real trace's
tables to have all of them (and threads whose outermost runs overlap).
"""
from __future__ import annotations

import os
from collections import defaultdict

import duckdb
import pyarrow as pa
import pytest

pytest.importorskip("roscope._core", reason="the roscope core is not built")
roscope = pytest.importorskip("roscope")
executor = pytest.importorskip("roscope.executor")

TRACES = ["pingpong-rolling-2021", "caret-end-to-end-cyclonedds"]
RUN_COLS = "run_id, thread_id, start_ts, end_ts, depth"


def oracle(runs: list[tuple], links: list[tuple], publish: dict) -> list[tuple]:
    """(run_id, publication_id, wait_ns, executor_busy_ns) per link to a run, sorted."""
    by_id = {r[0]: r for r in runs}
    on_thread = defaultdict(list)
    for r in runs:
        on_thread[r[1]].append(r)
    out = []
    for run_id, pub_id in links:
        if run_id not in by_id or pub_id not in publish:
            continue
        _, thread, start, _, _ = by_id[run_id]
        p = publish[pub_id]
        busy = 0
        if thread is not None and p is not None:
            for o_id, _, o_start, o_end, o_depth in on_thread[thread]:
                if o_id != run_id and o_depth == 0 and o_end is not None and o_end > p and o_start < start:
                    busy += min(o_end, start) - max(o_start, p)
        out.append((run_id, pub_id, None if p is None else start - p, busy))
    return sorted(out, key=lambda t: (t[0], t[1]))


def tables(con) -> tuple[list, list, dict]:
    runs = con.execute(f"SELECT {RUN_COLS} FROM callback_runs").fetchall()
    links = con.execute("SELECT run_id, publication_id FROM links WHERE run_id IS NOT NULL").fetchall()
    publish = dict(con.execute("SELECT publication_id, publish_ts FROM publications_info").fetchall())
    return runs, links, publish


WAITS = "SELECT run_id, publication_id, wait_ns, executor_busy_ns FROM run_input_waits ORDER BY run_id, publication_id"


@pytest.fixture(scope="module", params=TRACES)
def trace_db(request, shared_traces):
    return roscope.open(os.path.join(shared_traces, "ros2", request.param))


def test_busy_equals_direct_sum(trace_db):
    runs, links, publish = tables(trace_db.con)
    expected = oracle(runs, links, publish)
    executor.run_input_waits(trace_db)
    got = trace_db.con.execute(WAITS).fetchall()
    assert got == expected
    assert len(got) > 30 and sum(1 for r in got if r[3] > 0) > 5


def edited(runs: list[tuple], links: list[tuple], publish: dict):
    """The tables with nested runs, runs without end, zero-length runs, publications
    on run boundaries, inside other runs and after the start (negative waits), and
    two threads whose outermost runs overlap or end before they start."""
    runs = [list(r) for r in runs]
    new_links = [(run_id, publish.get(pub)) for run_id, pub in links]
    for k in range(0, len(new_links), 3):  # every third message published after its run started
        run_id, _ = new_links[k]
        new_links[k] = (run_id, next(r[2] for r in runs if r[0] == run_id) + 3)
    next_id = max(r[0] for r in runs) + 1
    outer = sorted((r for r in runs if r[4] == 0 and r[3] is not None), key=lambda r: (r[1], r[2]))
    for i, r in enumerate(outer):
        start, end = r[2], r[3]
        if i % 4 == 0 and end - start >= 8:
            nested = [next_id, r[1], start + (end - start) // 4, start + 3 * (end - start) // 4, 1]
            runs += [nested, [next_id + 1, r[1], nested[2] + 1, None, 2]]
            new_links += [(next_id, nested[2] + 1), (next_id, start - 1000), (next_id + 1, end + 5)]
            next_id += 2
        elif i % 4 == 1:
            r[3] = None
        elif i % 4 == 2:
            runs.append([next_id, r[1], end, end, 0])
            new_links += [(r[0], end), (next_id, end - 1)]
            next_id += 1
        elif i + 1 < len(outer):
            new_links.append((outer[i + 1][0], start + (end - start) // 2))
    threads = sorted({r[1] for r in outer}, key=lambda t: -sum(1 for r in outer if r[1] == t))
    first = [r for r in outer if r[1] == threads[0] and r[3] is not None]
    first[0][3] = first[1][2] + 1  # overlaps the next outermost run
    second = next(r for r in outer if r[1] == threads[1] and r[3] is not None)
    second[3] = second[2] - 5  # ends before it starts
    runs = [tuple(r) for r in runs]
    links = [(run_id, k) for k, (run_id, _) in enumerate(new_links)]
    return runs, links, {k: p for k, (_, p) in enumerate(new_links)}


@pytest.mark.parametrize("trace", TRACES)
def test_busy_equals_direct_sum_on_edited_tables(trace, shared_traces):
    runs, links, publish = edited(*tables(roscope.open(os.path.join(shared_traces, "ros2", trace)).con))
    con = duckdb.connect()
    for name, cols, rows in (("callback_runs", RUN_COLS + ", callback_id", [(*r, 1) for r in runs]),
                             ("links", "run_id, publication_id", links),
                             ("publications_info", "publication_id, publish_ts", list(publish.items()))):
        con.register("t", pa.table({c: pa.array([r[i] for r in rows], pa.int64()) for i, c in enumerate(cols.split(", "))}))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM t")
        con.unregister("t")
    con.execute(f"CREATE TEMP VIEW run_input_waits AS {executor.RUN_INPUT_WAITS_SQL}")
    got = con.execute(WAITS).fetchall()
    expected = oracle(runs, links, publish)
    assert got == expected
    depth = {r[0]: r[4] for r in runs}
    assert any(w < 0 and b < 0 for _, _, w, b in got)  # a run nested in an outermost run enclosing its wait
    assert any(depth[r] > 0 and b > 0 for r, _, _, b in got)
    assert any(w < 0 and b == 0 for _, _, w, b in got) and any(b > 0 for _, _, _, b in got)
