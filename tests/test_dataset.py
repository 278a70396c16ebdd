"""Many runs as one dataset (issue 14): `roscope load --dataset`, `roscope.open(DIR, runs=...)`,
`--run` on the analysis verbs, `roscope dataset stats`, `roscope trend`.

Input: the five shared real ROS 2 traces, each loaded as four runs (20 runs) with
recorded times, configs and commits given at load. The reference for every
number is `roscope stats TRACE --json` / `roscope flow TRACE --json` on the trace
itself (that path is checked against babeltrace2 and CARET in test_model.py,
test_flow*.py); the dataset must give the same per-run values.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import statistics

import pytest
from roscope import cli
from roscope import dataset as ds
from roscope import dataset_queries as Q

from tests.support.cli import in_process
from tests.support.compare import floats_only_differ

TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "shared", "traces"))
ROS2 = os.path.join(TRACES, "ros2")
NAMES = ["autoware-carla-galactic", "caret-end-to-end-cyclonedds", "caret-intra-process-galactic",
         "caret-talker-listener-galactic", "pingpong-rolling-2021"]
REPEATS = 4
pytestmark = pytest.mark.skipif(not all(os.path.isdir(os.path.join(ROS2, n)) for n in NAMES),
                                reason=f"the shared ROS 2 traces are not all in {ROS2}")


def run(capfd, *args) -> tuple[int, str, str]:
    """roscope ARGS in this process: (exit status, stdout, stderr)."""
    try:
        rc = cli.main([str(a) for a in args])
    except SystemExit as exc:
        rc = exc.code
    cap = capfd.readouterr()
    return rc, cap.out, cap.err


def plan() -> list[dict]:
    """20 runs: run r00..r19 of trace i % 5, recorded on day (7 * i) % 20 of January
    2026 (so id order, load order and time order all differ)."""
    out = []
    for i in range(len(NAMES) * REPEATS):
        day = (7 * i) % 20 + 1
        out.append({"run_id": f"r{i:02d}", "trace": os.path.join(ROS2, NAMES[i % len(NAMES)]),
                    "recorded_at": f"2026-01-{day:02d}T03:00:00Z", "config": {"trial": i, "rate": 10 * (i % 3)},
                    "commit": f"v1.{i}-g{i:07x}"})
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("ds") / "runs")
    for p in plan():
        ds.append(p["trace"], d, run_id=p["run_id"], config=p["config"], commit=p["commit"], recorded_at=p["recorded_at"])
    return d


def stats_json(capfd, *args) -> dict:
    rc, out, err = run(capfd, "stats", "--json", *args)
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def ref_stats() -> dict:
    """{trace name: `roscope stats TRACE --json`}."""
    out = {}
    for n in NAMES:
        p = in_process("stats", "--json", os.path.join(ROS2, n))
        assert p.returncode == 0, p.stderr
        out[n] = json.loads(p.stdout)
    return out


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


STAT_KEYS = ("min", "mean", "std", "p50", "p90", "p99", "max")


def trace_of(run_id: str) -> str:
    return NAMES[int(run_id[1:]) % len(NAMES)]


# ----------------------------------------------------------------- layout and manifest


def test_layout_and_runs_table(dataset):
    runs = ds.runs(dataset)
    assert len(runs) == 20
    by_id = {r["run_id"]: r for r in runs}
    for p in plan():
        r = by_id[p["run_id"]]
        assert r["config"] == p["config"] and r["commit"] == p["commit"]
        assert r["recorded_at"] == p["recorded_at"]
        assert r["sources"] == [p["trace"]]
    # runs come in recorded-time order
    assert [r["recorded_at"] for r in runs] == sorted(p["recorded_at"] for p in plan())
    # hive layout: <table>/run=<id>/part-0.parquet, host=<hostname>/ where the table has hosts
    assert os.path.isfile(os.path.join(dataset, "callback_runs", "run=r00", "part-0.parquet"))
    assert os.path.isfile(os.path.join(dataset, "processes", "run=r04", "host=chrisnux", "part-0.parquet"))
    assert os.path.isfile(os.path.join(dataset, "runs", "run=r19", "part-0.parquet"))
    assert not [n for n in os.listdir(dataset) if n.startswith(".tmp")]


def test_event_counts_match_the_trace(dataset, ref_stats):
    """The runs table's totals equal `roscope stats`' summary of the trace."""
    for r in ds.runs(dataset):
        s = ref_stats[trace_of(r["run_id"])]["summary"]
        assert r["callback_runs"] == s["callback_runs"] + s["incomplete_runs"]
        assert r["publications"] == s["publications"]
        assert r["events"] == s["model_stats"]["events"]


# ----------------------------------------------------------------- per-run statistics


def test_queries_equal_roscope_stats_of_each_trace(dataset, ref_stats):
    """The shared queries (DuckDB) per run equal `roscope stats TRACE --json` on that run's trace."""
    res = Q.run_duckdb(dataset)
    cbs: dict = {}
    for row in res["callbacks"]:
        cbs.setdefault(row["run"], {})[row["callback_id"]] = row
    tps: dict = {}
    for row in res["topics"]:
        tps.setdefault(row["run"], {})[row["topic"]] = row
    assert sorted(cbs) == [f"r{i:02d}" for i in range(20)]
    compared = 0
    for rid in cbs:
        ref = ref_stats[trace_of(rid)]
        want = {c["callback_id"]: c for c in ref["callbacks"] if c["count"]}
        assert set(cbs[rid]) == set(want), rid
        for cid, c in want.items():
            got = cbs[rid][cid]
            assert got["count"] == c["count"] and got["min_ns"] == c["min_ns"] and got["max_ns"] == c["max_ns"]
            assert all(close(got[f"{k}_ns"], c[f"{k}_ns"]) for k in STAT_KEYS), (rid, cid, got, c)
            compared += 1
        want_t = {t["topic"]: t for t in ref["topics"] if t["deliveries"]}
        assert set(tps.get(rid, {})) == set(want_t), rid
        for name, t in want_t.items():
            got = tps[rid][name]
            assert got["lat_count"] == t["deliveries"]
            assert got["rate_hz"] == t["rate_hz"], (rid, name)  # one definition: stats.topic_rate
            assert all(close(got[f"lat_{k}_ns"], t[f"lat_{k}_ns"]) for k in STAT_KEYS), (rid, name)
    assert compared > 1000  # 342 callbacks per Autoware run alone


def test_stats_on_a_run_equals_stats_on_its_trace(dataset, ref_stats, capfd):
    """`roscope stats DATASET --run X --json` is `roscope stats TRACE --json`, all of it: the
    trace's from the core (a short recording, roscope.stats_core), the run's from DuckDB over
    its Parquet files, so standard deviations to 1e-12 (sums in another order) and the load's
    measurement of itself (peak_records_in_memory: a whole build holds every record) aside."""
    for rid in ("r01", "r04"):
        got = stats_json(capfd, dataset, "--run", rid)
        ref = ref_stats[trace_of(rid)]
        for doc in (got, ref):
            doc["summary"]["model_stats"].pop("peak_records_in_memory")
        assert floats_only_differ(got, ref)


def test_flow_on_a_run_equals_flow_on_its_trace(dataset, capfd):
    rc, out, err = run(capfd, "flow", os.path.join(ROS2, NAMES[4]), "--from", ".", "--to", ".", "--json")
    assert rc == 0, err
    ref = json.loads(out)
    rc, out, err = run(capfd, "flow", dataset, "--run", "r04", "--from", ".", "--to", ".", "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["paths"] == ref["paths"] and got["causal_links"] == ref["causal_links"]
    assert got["summary"]["flows"] == ref["summary"]["flows"] == 112


def test_open_api(dataset):
    import roscope

    db = roscope.open(dataset, runs=["r03"])
    assert db.records("SELECT count(*) AS n FROM callbacks_info")[0]["n"] > 0
    db.close()
    many = roscope.open(dataset, runs=["r0*"])
    assert many.runs == [f"r0{i}" for i in range(10)]
    n = dict(many.con.execute("SELECT run, count(*) FROM callback_runs GROUP BY run").fetchall())
    assert n["r00"] == n["r05"] and n["r01"] == n["r06"] and len(n) == 10
    many.close()


def test_several_runs_are_refused_by_one_run_verbs(dataset, capfd):
    rc, _out, err = run(capfd, "flow", dataset, "--runs", "r1*", "--from", ".", "--to", ".")
    assert rc == 1 and "10 runs match" in err and "--run ID" in err and "Traceback" not in err
    rc, _out, err = run(capfd, "stats", dataset)
    assert rc == 1 and "20 runs in the dataset" in err
    rc, _out, err = run(capfd, "stats", dataset, "--run", "nope")
    assert rc == 1 and "no run matches 'nope'" in err


# ----------------------------------------------------------------- trend


def test_trend_orders_by_time_and_equals_per_run_stats(dataset, ref_stats, capfd):
    # /pong's latency: only the ping-pong trace's runs have it
    rc, out, err = run(capfd, "trend", dataset, "--metric", "topic:^/pong$", "--stat", "p99", "--json")
    assert rc == 0, err
    d = json.loads(out)
    times = [r["recorded_at"] for r in d["runs"]]
    assert times == sorted(times) and len(times) == 20
    want = next(t for t in ref_stats[NAMES[4]]["topics"] if t["topic"] == "/pong")
    seen = []
    for r in d["runs"]:
        if trace_of(r["run_id"]) == NAMES[4]:
            assert r["count"] == want["deliveries"] and close(r["value"], want["lat_p99_ns"])
        else:
            assert r["count"] == 0 and r["value"] is None
        # change detection as documented: against the median of the (up to) 5 values before
        base = statistics.median(seen[-5:]) if seen else None
        assert r["baseline"] == base
        if r["value"] is not None:
            seen.append(r["value"])
    # a callback metric: the talker's timer; its p50 per run is the trace's
    rc, out, err = run(capfd, "trend", dataset, "--metric", "callback:Talker::Talker", "--stat", "p50", "--json")
    assert rc == 0, err
    talker = next(c for c in ref_stats[NAMES[3]]["callbacks"] if "Talker::Talker" in (c["symbol"] or ""))
    vals = [r for r in json.loads(out)["runs"] if r["value"] is not None]
    assert len(vals) == REPEATS and all(close(r["value"], talker["p50_ns"]) for r in vals)


def test_trend_flags_a_change(dataset, ref_stats, capfd):
    """Callback runs per run swing between traces of very different sizes: each run
    whose count differs from the median of the five before by over 50% is flagged."""
    rc, out, err = run(capfd, "trend", dataset, "--metric", "callback:.", "--stat", "count", "--threshold", "0.5", "--json")
    assert rc == 0, err
    d = json.loads(out)
    seen = []
    for r in d["runs"]:
        s = ref_stats[trace_of(r["run_id"])]["summary"]
        assert r["value"] == s["callback_runs"]
        base = statistics.median(seen[-5:]) if seen else None
        assert r["flagged"] == (base is not None and abs(r["value"] - base) > 0.5 * abs(base))
        seen.append(r["value"])
    assert any(r["flagged"] for r in d["runs"]) and not all(r["flagged"] for r in d["runs"][1:])
    rc, out, err = run(capfd, "trend", dataset, "--metric", "path:^/ping$->^/pong$", "--stat", "max")
    assert rc == 0, err
    assert out.count("\n") == 22 and "r04" in out


def test_bad_metric(dataset, capfd):
    rc, _out, err = run(capfd, "trend", dataset, "--metric", "topics:x")
    assert rc == 1 and "callback:REGEX" in err
    rc, _out, err = run(capfd, "trend", dataset, "--metric", "path:a")
    assert rc == 1 and "path:FROM_REGEX->TO_REGEX" in err


# ----------------------------------------------------------------- appending


def tree(d: str) -> dict:
    out = {}
    for root, _dirs, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            st = os.stat(p)
            out[os.path.relpath(p, d)] = (st.st_size, st.st_mtime_ns)
    return out


def test_duplicate_run_refused_and_dataset_unchanged(dataset, capfd):
    before = tree(dataset)
    rc, _out, err = run(capfd, "load", os.path.join(ROS2, NAMES[2]), "--dataset", dataset, "--run-id", "r07")
    assert rc == 1 and "run 'r07' is already in the dataset" in err and "--force" in err
    assert tree(dataset) == before


def test_cli_load_force_and_failed_load(tmp_path, capfd):
    d = tmp_path / "d"
    tl = os.path.join(ROS2, NAMES[3])
    rc, out, err = run(capfd, "load", tl, "--dataset", d, "--config", "rate=20", "--config", "mode=fast",
                       "--commit", "v2.0-3-gabcdef0")
    assert rc == 0, err
    (r,) = ds.runs(str(d))
    assert r["run_id"] == NAMES[3] and r["config"] == {"rate": 20, "mode": "fast"} and r["commit"] == "v2.0-3-gabcdef0"
    assert r["recorded_at"] == "2021-09-08T05:29:49Z"  # the trace's creation time (CTF metadata, +0900)
    before = tree(str(d))
    # a load that fails (not a trace) leaves nothing behind
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _out, err = run(capfd, "load", empty, "--dataset", d, "--run-id", "bad")
    assert rc == 1 and "Traceback" not in err
    assert tree(str(d)) == before and not [n for n in os.listdir(d) if n.startswith(".tmp")]
    # --force replaces the run of that id (only)
    rc, out, err = run(capfd, "load", os.path.join(ROS2, NAMES[4]), "--dataset", d, "--run-id", NAMES[3], "--force")
    assert rc == 0, err
    (r,) = ds.runs(str(d))
    assert r["sources"] == [os.path.join(ROS2, NAMES[4])] and r["commit"] is None
    # a directory that is not a dataset is not written into
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    rc, _out, err = run(capfd, "load", tl, "--dataset", other)
    assert rc == 1 and "not a roscope dataset" in err and os.listdir(other) == ["notes.txt"]


def test_two_loads_of_one_run_id_at_once(tmp_path):
    """Two processes append the same run id at the same time: at most one wins, the
    dataset holds that run whole or not at all, and nothing temporary is left."""
    import subprocess
    import sys

    d = tmp_path / "d"
    ds.append(os.path.join(ROS2, NAMES[3]), str(d), run_id="first")
    argv = [sys.executable, "-m", "roscope", "load", "--dataset", str(d), "--run-id", "same"]
    procs = [subprocess.Popen(argv + [os.path.join(ROS2, n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in (NAMES[2], NAMES[4])]
    res = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sum(rc == 0 for rc, _e in res) <= 1, res
    for rc, err in res:
        assert rc in (0, 1) and "Traceback" not in err, err
        if rc == 1:
            assert "already in the dataset" in err or "appeared while roscope was writing it" in err, err
    tables = sorted(t for t in os.listdir(d) if os.path.isdir(d / t / "run=first"))
    have = sorted(t for t in os.listdir(d) if os.path.isdir(d / t / "run=same"))
    assert have in ([], tables)
    assert (have == tables) == any(rc == 0 for rc, _e in res)
    assert not [n for n in os.listdir(d) if n.startswith(".tmp")]


def test_report_on_a_run(dataset, tmp_path, capfd):
    out = tmp_path / "r.html"
    rc, _out, err = run(capfd, "report", dataset, "--run", "r03", "-o", out)
    assert rc == 0, err
    assert "/chatter" in out.read_text()


def test_bad_run_id(tmp_path, capfd):
    rc, _out, err = run(capfd, "load", os.path.join(ROS2, NAMES[3]), "--dataset", tmp_path / "d", "--run-id", "a/b")
    assert rc == 1 and "run id 'a/b'" in err and not os.path.exists(tmp_path / "d")


def test_damaged_parquet_file_is_named(dataset, tmp_path, capfd):
    d = str(tmp_path / "copy")
    shutil.copytree(dataset, d)
    bad = os.path.join(d, "callback_runs", "run=r03", "part-0.parquet")
    with open(bad, "r+b") as f:
        f.truncate(os.path.getsize(bad) // 2)
    rc, _out, err = run(capfd, "stats", d, "--run", "r03")
    assert rc == 1 and bad in err and "damaged Parquet file" in err and "Traceback" not in err
    rc, _out, err = run(capfd, "dataset", "stats", d)
    assert rc == 1 and bad in err and "damaged Parquet file" in err
    rc, _out, err = run(capfd, "trend", d, "--metric", "callback:.")
    assert rc == 1 and bad in err


# ----------------------------------------------------------------- two hosts (a live ros2sim recording)

TWO_HOSTS = {"hosts": [{"name": "a"}, {"name": "b", "clock_offset_ns": 1_000_000}],
             "processes": [
                 {"name": "talker", "host": "a", "nodes": [{"name": "talker", "publishers": [{"topic": "/ab"}],
                  "timers": [{"period_ms": 10, "work": {"dist": "fixed", "us": 50}, "publish": ["/ab"]}]}]},
                 {"name": "relay", "host": "b", "nodes": [{"name": "relay", "subscriptions": [
                     {"topic": "/ab", "depth": 10, "work": {"dist": "fixed", "us": 50}}]}]}]}


@pytest.mark.lttng
def test_two_hosts_are_partitions(tmp_path, capfd):
    """A two-host ros2sim recording as one run: its host tables are split by host, and
    the callback runs per node equal ros2sim's ground truth."""
    import csv
    import subprocess
    import sys
    from collections import Counter

    if os.geteuid() != 0:
        pytest.skip("ros2sim hosts need unshare (root)")
    from tests.support.ros2sim import DRIVER, build_ros2sim

    build_ros2sim()
    (tmp_path / "system.json").write_text(json.dumps(TWO_HOSTS))
    p = subprocess.run([sys.executable, str(DRIVER), "run", "--system", str(tmp_path / "system.json"), "--duration", "1.5",
                        "--out", str(tmp_path / "sim")], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    d = tmp_path / "ds"
    rc, _out, err = run(capfd, "load", tmp_path / "sim" / "traces", "--dataset", d, "--run-id", "sim")
    assert rc == 0, err
    for t in ("hosts", "processes", "traces"):
        assert sorted(os.listdir(d / t / "run=sim")) == ["host=a", "host=b"]
    assert not os.path.exists(d / "callback_runs" / "run=sim" / "host=a")
    db = ds.open(str(d), ["sim"])
    assert db.records("SELECT hostname FROM hosts ORDER BY hostname") == [{"hostname": "a"}, {"hostname": "b"}]
    db.close()
    got = Counter()
    for row in Q.run_duckdb(str(d))["callbacks"]:
        got[row["node_name"]] += row["count"]
    with open(tmp_path / "sim" / "ground_truth" / "callbacks.csv") as f:
        want = Counter(row["node"] for row in csv.DictReader(f))
    assert got == want and want["talker"] > 100
