"""`roscope record --attach` on running systems (issue 28), against their ground truth.

The real ROS 1 example (examples/ros1_pipeline: roscpp and rospy nodes, with roscope's preloaded
tracer) and the real ROS 2 example (examples/ros2_pipeline under the pip-installed Jazzy, with
roscope's ROS 2 tracer and rclpy hook) are started with no LTTng session; 5 s later `roscope
record start --attach --pid ...` records them for 5 s. Their processes' init events are long
past: only the tracers' state dumps can name what runs. The window compared is the recording's,
from the last state dump of the example's processes (babeltrace2 says when) to the last event,
less 0.3 s at each end. In it:

* every callback run of the examples' processes belongs to a named callback (a symbol) of a named
  node, and the runs are the logged ones: each logged callback (ROS 2) or each logged event that
  a callback logs (ROS 1: timer ticks, receptions, service calls) lies in a run of a callback of
  its node, and each run contains one;
* the publications are the logged ones, per node and topic (the same count, each at its logged
  time within 5 ms);
* the links from those publications to the runs they fed are the logged receptions, exactly.

Expected values come from the nodes' own logs and babeltrace2; roscope gives only its model.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import ros2_truth as T
from tests.support.attach import (
    EDGE,
    NODE,
    _env,
    _match_publications,
    _pid_list,
    _ros2_environment,
    _stop,
    check_links_in_window,
    check_runs_in_window,
    ready,
    wait_until,
)
from tests.support.cli import roscope

bt2 = pytest.importorskip("bt2", reason="babeltrace2 Python bindings (python3-bt2) are needed")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

pytestmark = [pytest.mark.lttng, pytest.mark.ros1, pytest.mark.ros2]

REPO = Path(__file__).resolve().parents[1]
ROS1 = REPO / "examples" / "ros1_pipeline"
TRACER = REPO / "instrument" / "ros1" / "build" / "libroscope_ros1.so"


def _roscope(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return roscope(*args, timeout=timeout, env=_env({}))


@pytest.fixture(scope="module")
def attached(tmp_path_factory):
    venv = T.env_of("jazzy")
    if not (venv / "bin" / "python").exists():
        pytest.skip("the pip-installed Jazzy (.ros2/jazzy, make setup) is not here")
    for d in (REPO / "instrument" / "ros1", ROS1):
        assert subprocess.run(["make", "-s", "-C", str(d)], capture_output=True).returncode == 0
    out = tmp_path_factory.mktemp("attach")
    r2 = _ros2_environment()
    ros1 = subprocess.Popen([str(ROS1 / "system.sh"), "-d", "16", "-P", "-g", str(out / "gt1")],
                            env=_env({"LD_PRELOAD": str(TRACER), "PYTHONPATH": str(REPO / "instrument" / "ros1" / "rospy")}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ros2 = subprocess.Popen([str(venv / "bin" / "python"), str(T.EXAMPLE / "launch.py"), "-d", "14",
                             "-g", str(out / "gt2")], env=_env(r2), stdout=subprocess.DEVNULL,
                            stderr=open(out / "launch.log", "w"), start_new_session=True)
    name = f"attach-test-{os.getpid()}"
    try:
        # Every node has started (the ROS 1 nodes' logs exist, launch.py says it runs), then 5 s
        # more: the recording starts late.
        wait_until(lambda: len(list((out / "gt1").glob("*.jsonl"))) == 6 and ready(out / "launch.log"), ros1, ros2)
        time.sleep(5)
        p = _roscope("record", "start", "--attach", "--ros2", "jazzy", "--pid", f"{ros1.pid},{ros2.pid}",
                     "-o", str(out / "trace"), "--name", name)
        assert p.returncode == 0, p.stderr
        time.sleep(5)
        p = _roscope("record", "stop", "--name", name)
        assert p.returncode == 0, p.stderr
        assert ros1.wait(timeout=60) == 0 and ros2.wait(timeout=60) == 0
    finally:
        _roscope("record", "stop", "--name", name)
        _stop(ros1)
        _stop(ros2)
    gt = []
    for d in ("gt1", "gt2"):
        for f in sorted((out / d).glob("*.jsonl")):
            rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
            pid = next(r["pid"] for r in rows if r["ev"] == "start")
            for r in rows:  # the two systems log the same node names and message ids: keep them apart
                r["pid"], r["sys"] = pid, d
            gt += rows
    pids = {r["pid"] for r in gt if r["ev"] == "start"}
    assert len(pids) == 11, pids  # 4 roscpp + 2 rospy processes, 5 rclpy ones
    import roscope

    db = roscope.open(str(out / "trace"), read_only=False)
    return {"db": db, "gt": gt, "pids": pids, "trace": out / "trace", "window": _window(out / "trace", pids)}


def _window(trace: Path, pids: set) -> tuple[int, int]:
    """(after the last state dump of the examples' processes, before the trace's last event)."""
    dumps, last = {}, 0
    for m in bt2.TraceCollectionMessageIterator(str(trace)):
        if type(m) is not bt2._EventMessageConst:
            continue
        ts = int(m.default_clock_snapshot.value)
        last = max(last, ts)
        ev = m.event
        if ev.name.endswith(":state_dump_end"):
            pid = int(ev.common_context_field["vpid"])
            if pid in pids:
                dumps[pid] = ts
    assert set(dumps) == pids, f"no state dump from {pids - set(dumps)}"
    return max(dumps.values()) + EDGE, last - EDGE


def test_every_object_of_the_running_systems_is_named_by_its_state_dump(attached):
    db = attached["db"]
    rows = db.records(f"""SELECT {NODE} AS name, n.known, n.dumped FROM nodes n JOIN processes p USING (proc_id)
                          WHERE p.pid IN ({_pid_list(attached)})""")
    names = {r["name"] for r in rows}
    logged = {r["node"] for r in attached["gt"] if r.get("node")}
    assert logged <= names, logged - names
    assert all(r["known"] == 1 and r["dumped"] == 1 for r in rows)
    for table in ("publishers", "subscriptions", "timers", "services", "clients", "callbacks"):
        # Endpoints that rcl never announces (the rmw's own: an rmw init event, no rcl one) are
        # known too: their init event is in the trace (the dump's).
        bad = db.records(f"""SELECT count(*) AS n FROM {table} t JOIN processes p USING (proc_id)
                             WHERE p.pid IN ({_pid_list(attached)}) AND t.known = 0""")[0]["n"]
        assert bad == 0, table
    stats = json.loads(db.records("SELECT value FROM meta WHERE key = 'stats'")[0]["value"])
    assert stats["state_dumps"] >= len(attached["pids"]) and stats["objects_dumped"] > 0


def test_callback_runs_in_the_window_are_named_and_are_the_logged_ones(attached):
    check_runs_in_window(attached)


def test_publications_in_the_window_are_the_logged_ones(attached):
    ids = _match_publications(attached)
    assert len(ids) > 500


def test_links_in_the_window_are_the_logged_receptions(attached):
    check_links_in_window(attached)
