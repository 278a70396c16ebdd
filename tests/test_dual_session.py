"""ros2_tracing's dual-session traces (issue 32) load as one recording.

ros2_tracing 8.9 (`Trace(dual_session=True)`, `ros2 trace --dual-session`) records the init
events from launch in a snapshot-mode session and, from a later moment, everything else in a
normal session; the trace directory holds `snapshot/` (the init session's snapshot) and
`runtime/`. This test builds such a directory with the real LTTng and the real ROS 2 example
(rclpy on the pip-installed Jazzy, roscope's ROS 2 tracer): the init session starts before the
launch, the runtime session 5 s after it, and the snapshot is taken when the runtime session
stops. Loaded as one recording, every object is named (from the snapshot's init events), and in
the runtime window the callback runs, publications and links equal the nodes' logs.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.support import attach as A
from tests.support import ros2_truth as T

pytest.importorskip("roscope._core", reason="the roscope core is not built")
bt2 = pytest.importorskip("bt2", reason="babeltrace2 Python bindings (python3-bt2) are needed")

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

#: ros2_tracing's init events (the snapshot session's), as its dual-session mode splits them.
INIT = ["ros2:rcl_init", "ros2:rcl_node_init", "ros2:rmw_publisher_init", "ros2:rcl_publisher_init",
        "ros2:rmw_subscription_init", "ros2:rcl_subscription_init", "ros2:rclcpp_subscription_init",
        "ros2:rclcpp_subscription_callback_added", "ros2:rcl_service_init", "ros2:rclcpp_service_callback_added",
        "ros2:rcl_client_init", "ros2:rcl_timer_init", "ros2:rclcpp_timer_callback_added",
        "ros2:rclcpp_timer_link_node", "ros2:rclcpp_callback_register", "ros2:rcl_lifecycle_state_machine_init",
        "roscope_ros2:process_init", "roscope_ros2:client_callback_added"]


def _lttng(*args: str) -> None:
    p = subprocess.run(["lttng", *args], capture_output=True, text=True)
    assert p.returncode == 0, (args, p.stderr)


@pytest.fixture(scope="module")
def dual(tmp_path_factory):
    venv = T.env_of("jazzy")
    if not (venv / "bin" / "python").exists():
        pytest.skip("the pip-installed Jazzy (.ros2/jazzy, make setup) is not here")
    out = tmp_path_factory.mktemp("dual")
    trace = out / "trace"
    snap, run = f"dual-snap-{os.getpid()}", f"dual-run-{os.getpid()}"
    env = A._env(A._ros2_environment())
    launch = None
    try:
        _lttng("create", snap, "--snapshot", f"--output={out / 'lttng-snapshot-default'}")
        _lttng("enable-channel", "-u", "c", "--subbuf-size=262144", "--num-subbuf=4", "--overwrite", f"--session={snap}")
        _lttng("enable-event", "-u", ",".join(INIT), "--channel=c", f"--session={snap}")
        _lttng("add-context", "-u", "--channel=c", f"--session={snap}", "-t", "vpid", "-t", "vtid", "-t", "procname")
        _lttng("start", snap)
        launch = subprocess.Popen([str(venv / "bin" / "python"), str(T.EXAMPLE / "launch.py"), "-d", "12",
                                   "-g", str(out / "gt")], env=env, stdout=subprocess.DEVNULL,
                                  stderr=open(out / "launch.log", "w"), start_new_session=True)
        A.wait_until(lambda: A.ready(out / "launch.log"), launch)  # every process is ready
        time.sleep(5)
        _lttng("create", run, f"--output={trace / 'runtime'}")
        _lttng("enable-channel", "-u", "c", f"--session={run}")
        _lttng("enable-event", "-u", "ros2:*", "--exclude=" + ",".join(e for e in INIT if e.startswith("ros2:")),
               "--channel=c", f"--session={run}")
        _lttng("enable-event", "-u", "roscope_ros2:*", "--exclude=roscope_ros2:process_init,roscope_ros2:client_callback_added",
               "--channel=c", f"--session={run}")
        _lttng("add-context", "-u", "--channel=c", f"--session={run}", "-t", "vpid", "-t", "vtid", "-t", "procname")
        _lttng("start", run)
        time.sleep(5)
        _lttng("stop", run)
        _lttng("snapshot", "record", f"--session={snap}", f"file://{trace / 'snapshot'}")
        assert launch.wait(timeout=60) == 0
    finally:
        for s in (run, snap):
            subprocess.run(["lttng", "destroy", s], capture_output=True)
        if launch is not None:
            A._stop(launch)
    gt = []
    for f in sorted((out / "gt").glob("*.jsonl")):
        rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        pid = next(r["pid"] for r in rows if r["ev"] == "start")
        for r in rows:
            r["pid"], r["sys"] = pid, "ros2"
        gt += rows
    pids = {r["pid"] for r in gt if r["ev"] == "start"}
    import roscope

    db = roscope.open(str(trace), read_only=False)
    return {"db": db, "gt": gt, "pids": pids, "trace": trace, "window": _runtime_window(trace / "runtime")}


def _runtime_window(runtime) -> tuple[int, int]:
    first = last = None
    for m in bt2.TraceCollectionMessageIterator(str(runtime)):
        if type(m) is bt2._EventMessageConst:
            ts = int(m.default_clock_snapshot.value)
            first = ts if first is None else first
            last = ts
    return first + A.EDGE, last - A.EDGE


def test_every_object_is_named_from_the_snapshot(dual):
    db = dual["db"]
    names = {r["name"] for r in db.records(f"""SELECT {A.NODE} AS name FROM nodes n JOIN processes p USING (proc_id)
                                               WHERE p.pid IN ({A._pid_list(dual)})""")}
    assert {r["node"] for r in dual["gt"] if r.get("node")} <= names
    for table in ("publishers", "subscriptions", "timers", "services", "clients", "callbacks"):
        # Endpoints rcl never announces (the rmw's own: an rmw init event, no rcl one) are known
        # too: their init event is in the trace (the snapshot's dump).
        bad = db.records(f"""SELECT count(*) AS n FROM {table} t JOIN processes p USING (proc_id)
                             WHERE p.pid IN ({A._pid_list(dual)}) AND t.known = 0""")[0]["n"]
        assert bad == 0, table


def test_runs_publications_and_links_in_the_runtime_window_equal_the_logs(dual):
    A.check_runs_in_window(dual)
    assert len(A._match_publications(dual)) > 300
    A.check_links_in_window(dual)


def test_the_gap_before_the_runtime_session_is_reported(dual):
    """The runtime session started 5 s after the launch: every verb warns that the runtime events
    begin that long after the first init event (babeltrace2 gives both times)."""
    first_init = None
    for m in bt2.TraceCollectionMessageIterator(str(dual["trace"] / "snapshot")):
        if type(m) is bt2._EventMessageConst:
            first_init = int(m.default_clock_snapshot.value)
            break
    gap = (dual["window"][0] - A.EDGE - first_init) / 1e9
    warnings = json.loads(dual["db"].records("SELECT value FROM meta WHERE key = 'warnings'")[0]["value"])
    said = [w for w in warnings if w.startswith("runtime events were recorded only from ")]
    assert len(said) == 1, warnings
    assert abs(float(said[0].split()[6]) - gap) < 0.002, (said, gap)
    assert gap > 4
