"""`roscope stats` of a short recording without a database (issue 29: a ~100k-event
trace's statistics within 80 MB): the core computes the parts that roscope.stats reads
with SQL (crates/model/src/stats.rs, python/roscope/stats_core.py). Two implementations
of every statistic, so each is the other's check on every shared trace and on a ros2sim
run with a multi-threaded executor: every count, id, name, min, max, mean and percentile
equal to the bit, the standard deviations to 1e-12 (DuckDB sums a join's rows in the
order the join gives them). The statistics themselves are checked against independent
oracles where `roscope stats` is run on traces (CARET's numbers, babeltrace2's events,
the ground truth of the examples): those tests now run through this path on small
traces, and test_ros2_pipeline's service table checks both paths against babeltrace2."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from roscope import cli, loading, opening, stats_core
from roscope.commands import stats as stats_command
from roscope.commands._common import window_ns, window_place

from tests.support.damage import copy_with_cut_metadata
from tests.support.shared import TRACES

SHARED = ["ros2/pingpong-rolling-2021", "ros2/caret-end-to-end-cyclonedds", "ros2/caret-intra-process-galactic",
          "ros2/caret-talker-listener-galactic", "ros1/nodes-pipeline-melodic", "ros2/autoware-carla-galactic"]

#: Sample standard deviations: Welford's update in the order of the rows.
ORDERED = ("std_ns", "jitter_ns")
#: What a load measures of itself: a whole build holds every record, a streamed one a window's.
MEASURED = {"peak_records_in_memory"}


def differences(a, b, path="") -> list[str]:
    """Where `a` and `b` differ: keys and their order, types, values; floats of `ORDERED`
    keys within 1e-12 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a if k not in MEASURED for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if type(a) is not type(b):
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, float) and path.endswith(ORDERED):
        return [] if abs(a - b) <= 1e-12 * max(abs(a), abs(b)) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def both(paths: list[str], window=None) -> tuple[dict, dict]:
    """(`roscope stats [--window]`'s document from the core, from the database), JSON
    round-tripped; `window`: a --window's value (ns from the trace's start, END or None)."""
    doc, _traces = stats_core.compute(paths, place=window_place(window))
    core = json.loads(json.dumps(stats_command.document(**doc)))
    with opening.open(paths) as db:
        sql = json.loads(json.dumps(stats_command.collect(db, window_ns(window, db))))
    return core, sql


@pytest.mark.parametrize("trace", SHARED)
def test_the_cores_statistics_equal_the_databases(trace):
    core, sql = both([os.path.join(TRACES, trace)])
    assert differences(core, sql) == []
    assert core["callbacks"] or core["topics"]


@pytest.mark.parametrize("trace", SHARED)
@pytest.mark.parametrize("window", [(500_000_000, 2_500_000_000), (1_000_000_000, None), (0, 1)],
                         ids=["0.5:2.5", "1:", "0:1ns"])
def test_a_windows_statistics_from_the_core_equal_the_databases(trace, window):
    """`roscope stats --window`: the callbacks and topics of the window (the summary,
    services and nodes of the whole trace) the same from the core as from the database,
    the window placed on the trace by the same rule (`numbers.window_in`); an open end and
    a window of one ns (nothing in it) too."""
    core, sql = both([os.path.join(TRACES, trace)], window)
    assert differences(core, sql) == []
    first, last = core["summary"]["first_ts"], core["summary"]["last_ts"]
    assert core["window"] == {"start_ns": first + window[0], "end_ns": first + window[1] if window[1] else last + 1}


@pytest.mark.lttng
def test_on_a_multithreaded_executor_with_many_nodes(ros2sim_run):
    """ros2sim's Autoware reference system (Jazzy layouts): 24 nodes, every topic with
    deliveries and transport links, a 2-thread executor."""
    out = ros2sim_run("autoware_reference_system_mp", "jazzy", 4.0)
    core, sql = both([os.path.join(out, "traces")])
    assert differences(core, sql) == []
    assert sum(t["deliveries"] for t in core["topics"]) > 1000 and len(core["nodes"]) > 20


@pytest.mark.ros2
@pytest.mark.lttng
@pytest.mark.parametrize("distro", ["jazzy", "kilted"])
def test_on_the_real_ros2_example_with_services_and_actions(distro, ros2_pipeline_run):
    """The real ROS 2 example (rclpy, a service, an action, a multi-threaded executor), as
    test_ros2_pipeline records it: the same statistics, services included. Its kernel data
    (perf) adds warnings in the database and is not read by the core: compared without them."""
    rec = ros2_pipeline_run(distro)
    doc, _traces = stats_core.compute([str(rec["trace"])])
    core = json.loads(json.dumps(stats_command.document(**doc)))
    sql = json.loads(json.dumps(stats_command.collect(rec["db"])))
    assert differences({**core, "warnings": []}, {**sql, "warnings": []}) == []
    assert core["services"] and all(s["calls"] for s in core["services"])


def _cli(args: list[str]) -> subprocess.CompletedProcess:
    code = ("import sys; from roscope import cli; rc = cli.main(sys.argv[1:]); "
            "print([m for m in ('duckdb', 'pyarrow', 'numpy', 'pandas') if m in sys.modules], file=sys.stderr); "
            "sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_stats_of_a_short_recording_starts_without_duckdb():
    """In a fresh interpreter, `roscope stats TRACE --json` on a short recording imports
    neither DuckDB nor pyarrow, and prints what the database path gives."""
    trace = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")
    p = _cli(["stats", trace, "--json"])
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[]"
    with opening.open(trace) as db:
        sql = json.loads(json.dumps(stats_command.collect(db)))
    assert differences(json.loads(p.stdout), sql) == []


def test_a_window_takes_the_core_and_kernel_data_the_database(tmp_path):
    """--window is computed by the core too (without DuckDB, the same document as the
    database's); a trace with kernel scheduling data (its tables and warnings are made in
    DuckDB) takes the database path."""
    trace = os.path.join(TRACES, "ros2", "caret-talker-listener-galactic")
    p = _cli(["stats", trace, "--window", "0:1", "--json"])
    assert p.returncode == 0 and p.stderr.strip().splitlines()[-1] == "[]", p.stderr
    with opening.open(trace) as db:
        sql = json.loads(json.dumps(stats_command.collect(db, window_ns((0, 1_000_000_000), db))))
    assert differences(json.loads(p.stdout), sql) == []
    kernel = os.path.join(os.path.dirname(__file__), "data", "lttng-kernel-sched")
    assert stats_core.applies([kernel]) and stats_core.parts([kernel]) is None
    p = _cli(["stats", kernel, "--json"])
    assert p.returncode == 0 and "duckdb" in p.stderr.strip().splitlines()[-1], p.stderr


def test_a_damaged_trace_gives_the_databases_error(tmp_path, monkeypatch, capsys):
    """A trace whose metadata is cut short: `roscope stats` says what the database path
    says (the file and what is wrong), exit status 1 from both."""
    from roscope import cli

    trace = tmp_path / "cut"
    meta = copy_with_cut_metadata(os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds"), trace)
    said = {}
    for core in (True, False):
        if not core:
            monkeypatch.setattr(stats_core, "applies", lambda inputs, window=None: False)
        rc = cli.main(["stats", str(trace)])
        said[core] = (rc, capsys.readouterr().err)
    assert said[True] == said[False]
    assert said[True][0] != 0 and str(meta) in said[True][1], said


def test_larger_traces_take_the_database(monkeypatch, capsys):
    """Beyond `stats_core.CORE_BYTES` the statistics come from the database, which streams
    the build instead of holding it whole; the Autoware trace (29 MB) is within it. With the
    bound below that trace's size, `roscope stats` takes the database and says the same
    (no shared trace exceeds 128 MiB)."""
    trace = os.path.join(TRACES, "ros2", "autoware-carla-galactic")
    size = loading.trace_bytes([trace], stats_core.CORE_BYTES)
    assert 16 << 20 < size <= stats_core.CORE_BYTES and stats_core.applies([trace])
    taken: list[int] = []
    real = stats_core.compute
    monkeypatch.setattr(stats_core, "compute", lambda *a, **k: taken.append(1) or real(*a, **k))
    said = []
    for bound in (stats_core.CORE_BYTES, size - 1):
        monkeypatch.setattr(stats_core, "CORE_BYTES", bound)
        taken.clear()
        assert cli.main(["stats", trace]) == 0
        said.append((bool(taken), capsys.readouterr().out))
    assert [t for t, _ in said] == [True, False]
    assert said[0][1] == said[1][1] and "callbacks" in said[0][1].lower()
