"""Streaming load (issue 14): the model builder hands finished records to the
database in chunks while it reads, keeping only a window of trace time in
memory. The reference is the whole-trace build (`--window 0`), whose tables are
the ones checked against CARET and babeltrace2 elsewhere (test_model.py,
test_caret_humble.py, test_flow_truth.py): streaming must change nothing.

Chunks are forced every 50 events (the default is every 65,536), so that even
the small shared traces are cut into hundreds of chunks, with records held
past the window, takes linked in later chunks than their publications, and
publications forgotten by the linker.
"""
from __future__ import annotations

import json
import os

import duckdb
import pyarrow as pa
import pytest
from roscope import loading, opening

from tests.support.cli import in_process, roscope
from tests.support.compare import floats_only_differ
from tests.support.shared import TRACES

SHARED = sorted(
    os.path.join(TRACES, d, t) for d in ("ros2", "ros1") if os.path.isdir(os.path.join(TRACES, d))
    for t in os.listdir(os.path.join(TRACES, d))
)
#: Tables made of chunks; the others come whole at the end either way.
INSTANCES = ("callback_runs", "publications", "takes", "links", "executor_states")


def _whole(path):
    arrow, stats, _w, _l = loading.build([path], progress=False)
    return arrow, stats


def _streamed(path, window_ns, flush_every=50):
    chunks: dict[str, list] = {}
    arrow, stats, _w, _l = loading.build([path], progress=False, put=lambda n, t: chunks.setdefault(n, []).append(t),
                                     window_ns=window_ns, flush_every=flush_every)
    counts = {n: len(v) for n, v in chunks.items()}
    for n, t in arrow.items():
        chunks.setdefault(n, []).append(t)
    return {n: pa.concat_tables(v) for n, v in chunks.items()}, stats, counts


def _differences(a, b) -> dict:
    """Per table: rows of one not in the other (as multisets), both ways."""
    out = {}
    con = duckdb.connect()
    for name in a:
        con.register("x", a[name])
        con.register("y", b[name])
        d = con.execute("SELECT (SELECT count(*) FROM (SELECT * FROM x EXCEPT ALL SELECT * FROM y)), "
                        "(SELECT count(*) FROM (SELECT * FROM y EXCEPT ALL SELECT * FROM x))").fetchall()[0]
        if d != (0, 0) or a[name].num_rows != b[name].num_rows:
            out[name] = (a[name].num_rows, b[name].num_rows, d)
        con.unregister("x")
        con.unregister("y")
    return out


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_streamed_tables_equal_the_whole_build(path):
    whole, wstats = _whole(path)
    streamed, sstats, chunks = _streamed(path, window_ns=1_000_000_000)
    assert set(streamed) == set(whole)
    assert _differences(whole, streamed) == {}
    assert sstats["late_updates"] == 0
    # It did stream: the instance tables came in many chunks, and at no time
    # were all records in memory.
    made = sum(whole[n].num_rows for n in ("callback_runs", "publications", "takes"))
    if wstats["events"] > 2000:
        assert sum(chunks.get(n, 0) for n in INSTANCES) > 20, chunks
        assert 0 < sstats["peak_records_in_memory"] < made, (sstats, made)


def test_a_small_window_bounds_what_is_held():
    """On the largest shared trace (684k events over several seconds), a 100 ms
    window holds a small part of the records, and still changes nothing."""
    path = os.path.join(TRACES, "ros2", "autoware-carla-galactic")
    whole, _ = _whole(path)
    streamed, stats, _ = _streamed(path, window_ns=100_000_000, flush_every=4096)
    assert _differences(whole, streamed) == {}
    made = sum(whole[n].num_rows for n in ("callback_runs", "publications", "takes"))
    assert stats["peak_records_in_memory"] < made / 5, (stats["peak_records_in_memory"], made)


def _cli(*args):
    return roscope(*args, check=True).stdout


def _main(*args):
    """`roscope ARGS` run in this process (`cli.main`: the same parser, command and
    output, without a Python start and roscope's import per run): its stdout."""
    p = in_process(*args)
    assert p.returncode == 0, p.stderr
    return p.stdout


#: The trace whose loads and verbs run as `roscope` processes; the others' run in this process.
BY_PROCESS = "pingpong-rolling-2021"


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_stats_and_flow_json_unchanged(path, tmp_path):
    """`roscope stats --json` and `roscope flow --json` on the streamed
    database equal those on the whole-trace one (the path before streaming)."""
    run = _cli if os.path.basename(path) == BY_PROCESS else _main
    old, new = str(tmp_path / "whole.duckdb"), str(tmp_path / "streamed.duckdb")
    run("load", path, "-o", old, "--window", "0")
    run("load", path, "-o", new)
    for verb in (["stats"], ["flow", "--from", ".", "--to", "."]):
        a = _without_peak(json.loads(run(*verb, old, "--json")))
        b = _without_peak(json.loads(run(*verb, new, "--json")))
        # Floats (std) may differ in the last digit: the rows are stored in
        # another order, so DuckDB sums them in another order. Every integer
        # (counts, ns, percentiles of ns) and string is identical.
        assert floats_only_differ(a, b), verb


#: What a run measures of itself: how many records the load held at once (all of
#: them in a whole build; streaming is meant to change it) and the flow search's time.
MEASUREMENTS = {"peak_records_in_memory", "compute_ns", "ns_per_flow"}


def _without_peak(doc):
    """The document without `MEASUREMENTS`."""
    if isinstance(doc, dict):
        return {k: _without_peak(v) for k, v in doc.items() if k not in MEASUREMENTS}
    if isinstance(doc, list):
        return [_without_peak(v) for v in doc]
    return doc


@pytest.mark.parametrize("path", [p for p in SHARED if "carla" in p or "end-to-end" in p], ids=os.path.basename)
def test_traces_larger_than_a_quarter_of_the_budget_are_opened_from_a_private_file(path, monkeypatch):
    """`roscope.open(TRACE)` keeps the model in memory while the trace is at most a
    quarter of DuckDB's budget; beyond, in a database file of a private directory
    (the budget is then the queries'), which `close()` removes. Either way the
    statistics are the same (the share is raised to put these small traces beyond it)."""
    from roscope import stats

    size = opening._size([path])
    with opening.open(path) as mem:
        assert mem.private_dir is None or os.listdir(mem.private_dir) == []
        want = (stats.summary(mem), stats.callbacks(mem), stats.topics(mem))
    monkeypatch.setattr(opening, "IN_MEMORY_SHARE", size)
    with opening.open(path) as small:
        private = small.private_dir
        assert os.listdir(private) == ["model.duckdb"] and oct(os.stat(private).st_mode & 0o777) == "0o700"
        got = (stats.summary(small), stats.callbacks(small), stats.topics(small))
    assert not os.path.exists(private)
    assert floats_only_differ(_without_peak(json.loads(json.dumps(want, default=str))),
                               _without_peak(json.loads(json.dumps(got, default=str))))
