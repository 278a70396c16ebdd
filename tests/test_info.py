"""`roscope info`'s logic (roscope.info, roscope.flavour) on real traces.

Flavour detection gets the per-trace summary dicts of the real shared CARET
traces (Galactic); the Humble CARET shape is the same dict with the events
CARET emits on Humble (ros2_caret:caret_init with its `distribution` field,
ros2_caret:rcl_init instead of ros2:rcl_init: caret_trace's tp.h, and
../shared/reference/ros2-tracepoints.md). Which processes are ROS
processes is checked against babeltrace2's reading of the same events.
"""
from __future__ import annotations

import collections
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from roscope import flavour, info
from roscope.trace import Trace

from tests.support.shared import TRACES

CARET = ["caret-talker-listener-galactic", "caret-end-to-end-cyclonedds", "caret-intra-process-galactic"]
REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not os.path.isdir(TRACES), reason=f"no shared traces at {TRACES}")


def trace_summary(name: str) -> dict:
    s = Trace(os.path.join(TRACES, "ros2", name)).summary()
    assert len(s["traces"]) == 1
    return s["traces"][0]


def as_humble_caret(tr: dict, distribution: str = "humble", keep_rcl_init: bool = False) -> dict:
    """The summary of a CARET recording on Humble started after the application:
    CARET re-emits rcl_init as ros2_caret:rcl_init (context_handle, init_timestamp)
    and emits caret_init (clock_offset, distribution)."""
    tr = copy.deepcopy(tr)
    init = tr["first"]["ros2:rcl_init"]
    if not keep_rcl_init:
        del tr["counts"]["ros2:rcl_init"], tr["first"]["ros2:rcl_init"]
    tr["counts"]["ros2_caret:rcl_init"] = 2
    tr["first"]["ros2_caret:rcl_init"] = {**init, "name": "ros2_caret:rcl_init", "payload": {
        "context_handle": init["payload"]["context_handle"], "init_timestamp": init["ts"] - 5_000_000_000}}
    tr["counts"]["ros2_caret:caret_init"] = 2
    tr["first"]["ros2_caret:caret_init"] = {**init, "name": "ros2_caret:caret_init",
                                            "payload": {"clock_offset": 1_631_031_625_140_412_384, "distribution": distribution}}
    return tr


@pytest.mark.parametrize("name", CARET)
def test_real_galactic_caret_traces(name):
    got = flavour.detect(trace_summary(name))
    assert (got["flavour"], got["distro"], got["caret"]) == ("ROS 2", "Galactic", True)
    assert "rcl_init version 2.3.0" in got["evidence"]


@pytest.mark.parametrize("name", CARET)
def test_humble_caret_names_its_distro(name):
    """Was 'Galactic or later': the distro comes from caret_init, ros2_caret:rcl_init is noted."""
    got = flavour.detect(as_humble_caret(trace_summary(name)))
    assert (got["flavour"], got["distro"], got["caret"]) == ("ROS 2", "Humble", True)
    assert "caret_init distribution 'humble'" in got["evidence"]
    assert any(e.startswith("ros2_caret:rcl_init") for e in got["evidence"])


def test_caret_init_outranks_the_event_set_and_rcl_init():
    tr = as_humble_caret(trace_summary("caret-talker-listener-galactic"), "jazzy", keep_rcl_init=True)
    got = flavour.detect(tr)
    assert got["distro"] == "Jazzy"
    assert got["evidence"].index("caret_init distribution 'jazzy'") < got["evidence"].index("rcl_init version 2.3.0")
    got = flavour.detect(as_humble_caret(trace_summary("caret-talker-listener-galactic"), "someday"))
    assert got["distro"] == "someday"


def test_only_caret_events_is_still_ros2():
    tr = as_humble_caret(trace_summary("caret-talker-listener-galactic"))
    for n in [n for n in tr["counts"] if n.startswith("ros2:")]:
        del tr["counts"][n]
        tr["first"].pop(n, None)
    got = flavour.detect(tr)
    assert (got["flavour"], got["distro"], got["caret"]) == ("ROS 2", "Humble", True)


def test_roscope_info_text_and_json(run_roscope):
    path = os.path.join(TRACES, "ros2", "caret-talker-listener-galactic")
    p = run_roscope("info", path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ROS 2 (Galactic) + CARET" in p.stdout and "processes (2 with ROS events)" in p.stdout
    js = json.loads(run_roscope("info", "--json", path, timeout=120).stdout)
    assert [(x["procname"], x["ros"]) for x in js["processes"]] == [("talker", True), ("listener", True)]
    assert js["other_processes"]["count"] == 0


def _bt2_ros_vpids(path: str) -> tuple[set, set]:
    """(vpids that emitted a ROS event other than process_init, all vpids), by babeltrace2."""
    from tests.support import oracle

    ros, every = set(), set()
    for ev in oracle.Reading(path).events():
        vpid = ev.get("context", {}).get("vpid")
        if vpid is None:
            continue
        every.add(vpid)
        if ev["name"].startswith(("ros2:", "ros2_caret:", "roscpp:", "roscope_ros1:")) and ev["name"] != "roscope_ros1:process_init":
            ros.add(vpid)
    return ros, every


@pytest.mark.parametrize("path", ["ros2/pingpong-rolling-2021", "ros1/nodes-pipeline-melodic", "ros2/caret-end-to-end-cyclonedds"])
def test_ros_processes_match_babeltrace2(path):
    full = os.path.join(TRACES, path)
    got = info.summarize([full])
    exp_ros, every = _bt2_ros_vpids(full)
    assert {p["pid"] for p in got["processes"]} == every
    assert {p["pid"] for p in got["processes"] if p["ros"]} == exp_ros


@pytest.mark.lttng
def test_processes_without_ros_events_are_folded(tmp_path, fx_emit):
    """`roscope record` of a shell that runs tests/fixtures/fx_emit three times (an
    LTTng-UST program with no ROS in it), then a ros2sim system (real processes
    emitting ros2:* through LTTng-UST). The ROS processes are those ros2sim's manifest
    lists; every other process that emitted anything (the three fx_emit runs: the
    ROS 1 tracer starts LTTng-UST only where roscpp or rospy runs, so the shell and
    the driver emit nothing) is folded into one line (babeltrace2 checks who emitted)."""
    driver = REPO / "tools" / "ros2sim" / "ros2sim.py"
    for d in (driver.parent, REPO / "instrument" / "ros1"):
        b = subprocess.run(["make", "-s", "-C", str(d)], capture_output=True, text=True)
        assert b.returncode == 0, b.stdout + b.stderr
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"processes": [
        {"name": "talker", "nodes": [{"name": "talker", "publishers": [{"topic": "/chatter"}],
                                      "timers": [{"period_ms": 20, "work": {"dist": "fixed", "us": 100}, "publish": ["/chatter"]}]}]},
        {"name": "listener", "nodes": [{"name": "listener", "subscriptions": [{"topic": "/chatter", "work": {"dist": "fixed", "us": 50}}]}]},
    ]}))
    rec, sim = tmp_path / "trace", tmp_path / "sim"
    script = f"{fx_emit} types; {fx_emit} types; {fx_emit} types; exec {sys.executable} {driver} run --system {system} " \
             f"--distro jazzy --duration 1 --no-session --out {sim}"
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    p = subprocess.run([sys.executable, "-m", "roscope", "record", "--events", "ros2:*,roscope_ros1:*,roscope_fx:*", "-o", str(rec),
                        "--", "/bin/sh", "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    sim_pids = {x["vpid"] for x in json.loads((sim / "manifest.json").read_text())["processes"]}
    exp_ros, every = _bt2_ros_vpids(str(rec))
    assert exp_ros == sim_pids
    got = info.summarize([str(rec)])
    assert [p["pid"] for p in got["processes"] if p["ros"]] == [p["pid"] for p in got["processes"][:len(sim_pids)]]
    assert {p["pid"] for p in got["processes"] if p["ros"]} == sim_pids
    others = collections.Counter(p["procname"] for p in got["processes"] if not p["ros"])
    assert others["fx_emit"] == 3 and sum(others.values()) == len(every - sim_pids)
    assert got["other_processes"]["count"] == len(every - sim_pids)
    t = subprocess.run([sys.executable, "-m", "roscope", "info", str(rec)], capture_output=True, text=True, env=env)
    assert t.returncode == 0, t.stderr
    folded = [x for x in t.stdout.splitlines() if "other process" in x]
    assert len(folded) == 1 and "fx_emit ×3" in folded[0], t.stdout
    assert not any(x.split()[2:3] == ["fx_emit"] for x in t.stdout.splitlines()), t.stdout


def test_info_on_a_database(run_roscope, tmp_path):
    """`roscope info DB` (issue 10: it said "not a trace directory"): the database's
    source, versions and tables; its event count is babeltrace2's."""
    from tests.support import oracle

    path = os.path.join(TRACES, "ros2", "caret-talker-listener-galactic")
    db = tmp_path / "t.duckdb"
    assert run_roscope("load", path, "-o", str(db), timeout=120).returncode == 0
    p = run_roscope("info", str(db), "--json", timeout=120)
    assert p.returncode == 0, p.stderr
    js = json.loads(p.stdout)
    assert js["sources"] == [{"path": os.path.abspath(path), "exists": True}]
    assert js["stats"]["events"] == sum(1 for _ in oracle.Reading(path).events())
    assert js["tables"]["nodes"] == 2 and js["tables"]["callback_runs"] > 0
    text = run_roscope("info", str(db), timeout=120)
    assert text.returncode == 0 and f"database {db}" in text.stdout and "callback_runs" in text.stdout
    both = run_roscope("info", str(db), path, timeout=120)
    assert both.returncode == 1 and "give one database" in both.stderr
