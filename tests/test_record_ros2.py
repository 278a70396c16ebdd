"""`roscope record` on a ROS 2 system, checked against the system's own ground truth.

ros2sim (tools/ros2sim, docs/ros2sim.md) runs a small ROS 2-like system as real processes
that emit ros2_tracing's events through real LTTng-UST. With --no-session it opens no LTTng
session of its own: its processes emit into the session `roscope record` created, so this
tests that `roscope record` enables the `ros2:*` events with the contexts roscope needs.
Expected values come from ros2sim's ground truth CSVs (written by the simulated processes),
never from roscope: callback runs, publications per topic and the transport links.

Its helpers are tests/support/ros2sim.py's, shared with the other tests that run ros2sim.
"""
from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path

import pytest

from tests.support.ros2sim import (
    DRIVER,
    build_ros2sim,
    check_runs_against_truth,
    ground_truth,
    load_db,
    publications_per_topic,
    roscope_links,
    rows,
    run_roscope,
    truth_links,
)

pytestmark = pytest.mark.lttng

REPO = Path(__file__).resolve().parents[1]
duckdb = pytest.importorskip("duckdb", reason="DuckDB reads the database roscope load writes")

# Three processes on one host: a source timer, a relay with a two-thread executor that
# republishes (direct), a sink with a periodic-asynchronous timer; /raw has two subscribers.
SYSTEM = {"processes": [
    {"name": "sensor", "nodes": [{"name": "sensor", "publishers": [{"topic": "/raw"}],
                                  "timers": [{"period_ms": 10, "work": {"dist": "uniform", "min_us": 100, "max_us": 300},
                                              "publish": ["/raw"]}]}]},
    {"name": "relay", "executor": {"type": "multi", "threads": 2},
     "nodes": [{"name": "relay", "reentrant": True, "publishers": [{"topic": "/filtered"}],
                "subscriptions": [{"topic": "/raw", "depth": 10, "work": {"dist": "uniform", "min_us": 200, "max_us": 600},
                                   "publish": ["/filtered"]}]}]},
    {"name": "sink", "nodes": [{"name": "sink", "publishers": [{"topic": "/cmd"}],
                                "subscriptions": [{"topic": "/filtered", "depth": 5, "work": {"dist": "fixed", "us": 150}},
                                                  {"topic": "/raw", "depth": 5, "work": {"dist": "fixed", "us": 80}}],
                                "timers": [{"period_ms": 25, "work": {"dist": "fixed", "us": 200},
                                            "inputs": ["/filtered"], "publish": ["/cmd"]}]}]},
]}


# ----------------------------------------------------------------------------- the recording
@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    build_ros2sim()
    p = subprocess.run(["make", "-s", "-C", str(REPO / "instrument" / "ros1")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    base = tmp_path_factory.mktemp("record-ros2")
    system = base / "system.json"
    system.write_text(json.dumps(SYSTEM))
    rec, sim = base / "trace", base / "sim"
    # the default recording: ROS 1 tracer preloaded too (harmless in ROS 2 processes)
    p = run_roscope("record", "-o", str(rec), "--", "/usr/bin/python3", str(DRIVER), "run", "--system", str(system),
                    "--distro", "jazzy", "--duration", "2", "--no-session", "--out", str(sim))
    assert p.returncode == 0, p.stdout + p.stderr
    manifest = json.loads((rec / "roscope-manifest.json").read_text())
    simman = json.loads((sim / "manifest.json").read_text())
    con = load_db(rec, base / "run.duckdb")
    yield {"rec": rec, "sim": sim, "manifest": manifest, "simman": simman, "gt": ground_truth(sim), "con": con,
           "pids": {p["vpid"] for p in simman["processes"]}}
    con.close()


def test_record_enables_what_ros2_trace_enables(recorded):
    m = recorded["manifest"]
    assert m["state"] == "complete" and m["exit_code"] == 0 and m["events_discarded"] == 0
    assert set(m["lttng"]["events"]) >= {"ros2:*", "ros2_caret:*", "dds:*", "roscope_ros1:*"}
    assert m["lttng"]["contexts"] == ["vpid", "vtid", "procname"]
    assert recorded["simman"]["ok"] and recorded["simman"]["session"].startswith("external")
    assert not (recorded["sim"] / "traces").exists()   # ros2sim wrote no trace of its own
    con, pids = recorded["con"], recorded["pids"]
    procs = {r["pid"]: r["procname"] for r in rows(con, "SELECT pid, procname FROM processes")}
    assert {pid: procs.get(pid) for pid in pids} == {p["vpid"]: p["name"] for p in recorded["simman"]["processes"]}


def test_callback_runs_equal_ground_truth(recorded):
    n = check_runs_against_truth(recorded["con"], recorded["gt"], recorded["pids"])
    assert n == len(recorded["gt"]["callbacks"]) > 300


def test_publications_per_topic_equal_ground_truth(recorded):
    want = collections.Counter(m["topic"] for m in recorded["gt"]["messages"])
    assert publications_per_topic(recorded["con"], recorded["pids"]) == want
    assert set(want) == {"/raw", "/filtered", "/cmd"}


def test_transport_links_equal_ground_truth(recorded):
    gt = recorded["gt"]
    got, methods = roscope_links(recorded["con"], gt, recorded["pids"])
    want = truth_links(gt)
    assert got == want and len(want) > 300
    assert methods == {"rmw_timestamp": len(want)}   # Jazzy: rmw_publish.timestamp = rmw_take.source_timestamp
