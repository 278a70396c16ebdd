"""Real rclcpp (issue 38), live: `roscope watch` attached to the running C++ example, and the
flight recorder on it. rclcpp has no state dump of its own; roscope's tracer library (the
`libtracetools.so` that carries rclcpp's tracepoints to LTTng 2.13) keeps what rclcpp registered
and dumps it when a session asks (`--attach`, the flight recorder's init session).

The example (examples/ros2_cpp_pipeline) is started with the variables `roscope env --ros2 jazzy
--shell` prints, run by bash. What must be named comes from the example's traced callbacks
(tests/support/rclcpp_example.TRACED, from its sources) and its ground-truth log; which processes a
snapshot names, from babeltrace2's reading of the snapshot."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import ros2_truth as T
from tests.support.rclcpp_example import EXAMPLE, REPO, TRACED

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

#: The example's processes and the nodes of its traced callbacks.
PROCESSES = {"perception", "planner", "mapper", "controller"}
NODES = {node for node, _cb in TRACED}


@pytest.fixture(scope="module")
def built():
    if not (T.env_of("jazzy") / "bin" / "python").exists():
        pytest.skip("ROS 2 jazzy from PyPI is not installed (make setup)")
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(p.stderr.strip())
    b = subprocess.run([sys.executable, str(EXAMPLE / "launch.py"), "--build"], capture_output=True, text=True, timeout=900)
    assert b.returncode == 0, b.stderr[-3000:]


def _env(tmp: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), XDG_STATE_HOME=str(tmp / "state"))
    for k in ("ROSCOPE_RECORD_ID", "LD_PRELOAD", "ROSCOPE_RCLPY_HOOK"):
        env.pop(k, None)
    return env


def _start_system(tmp: Path, seconds: float) -> subprocess.Popen:
    """The example, started by bash with `roscope env --ros2 jazzy --shell`'s variables."""
    exports = subprocess.run([sys.executable, "-m", "roscope", "env", "--ros2", "jazzy", "--shell"], env=_env(tmp),
                             capture_output=True, text=True, check=True).stdout
    script = exports + f'\nexec "{sys.executable}" "{EXAMPLE}/launch.py" -d {seconds:g} -g "{tmp / "gt"}"'
    return subprocess.Popen(["bash", "-c", script], env=_env(tmp), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _stop(system: subprocess.Popen) -> None:
    if system.poll() is None:
        os.killpg(system.pid, signal.SIGINT)
    system.wait(timeout=90)


def test_watch_attached_names_every_rclcpp_callback(tmp_path, built):
    """`roscope watch` (no command: --attach) started 8 s after the system: every traced callback
    of the example is named by its node in the last window (their init events were long past)."""
    system = _start_system(tmp_path, 40)
    try:
        time.sleep(8)
        assert system.poll() is None
        p = subprocess.run([sys.executable, "-m", "roscope", "watch", "--json", "--duration", "5", "-o", str(tmp_path / "w")],
                           env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    finally:
        _stop(system)
    assert p.returncode == 0, p.stderr
    windows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    last = [w for w in windows if "callbacks" in w][-1]
    # the example's processes by the pids its log names (another system of the machine may have
    # a process of the same name)
    pids = set(T.GroundTruth(T.read_ground_truth(tmp_path / "gt")).pids().values())
    assert {p for p in pids if p} and len(pids) == len(PROCESSES), pids
    ours = [c for c in last["callbacks"] if c.get("pid") in pids]
    assert {c["node"] for c in ours} == NODES and all(c["node"] for c in ours), ours


_BT2 = r"""
import json, sys
import bt2
out = []
for d in sys.argv[1:]:
    runtime, inits = set(), set()
    for m in bt2.TraceCollectionMessageIterator(d + "/runtime"):
        if type(m) is bt2._EventMessageConst:
            runtime.add(str(m.event.common_context_field["procname"]))
    for m in bt2.TraceCollectionMessageIterator(d + "/init"):
        if type(m) is bt2._EventMessageConst and m.event.name == "ros2:rcl_node_init":
            inits.add(str(m.event.payload_field["node_name"]))
    out.append({"runtime": sorted(runtime), "nodes": sorted(inits)})
print(json.dumps(out))
"""


def test_every_flight_recorder_snapshot_names_the_rclcpp_nodes(tmp_path, built):
    """`record --flight-recorder` of the example, 8 snapshots 0.5 s apart (twice the init rings'
    4 sub-buffers of the old design): each snapshot's init trace holds every node of the
    example (babeltrace2: rcl_node_init), and `roscope stats` names the traced callbacks."""
    gt, out = tmp_path / "gt", tmp_path / "fr"
    log = (tmp_path / "record.log").open("w+")
    env = _env(tmp_path)
    rec = subprocess.Popen([sys.executable, "-m", "roscope", "record", "--ros2", "jazzy", "--flight-recorder", "--keep", "5",
                            "-o", str(out), "--", sys.executable, str(EXAMPLE / "launch.py"), "-d", "60", "-g", str(gt)],
                           env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while not (out / "roscope-manifest.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        # the example's four processes run: launch.py starts them one after the other and says so
        # once each said it was ready (its stderr is the recorder's, in the log), then 2 s of their work
        while "launch.py: running for" not in Path(log.name).read_text() and time.monotonic() < deadline + 60:
            assert rec.poll() is None, Path(log.name).read_text()[-2000:]
            time.sleep(0.2)
        assert "launch.py: running for" in Path(log.name).read_text(), "the example did not start in 2 minutes"
        time.sleep(2)
        name = json.loads((out / "roscope-manifest.json").read_text())["session"]
        for i in range(8):
            p = subprocess.run([sys.executable, "-m", "roscope", "record", "snapshot", "--name", name, f"s{i}"],
                               env=env, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
            time.sleep(0.5)
    finally:
        rec.send_signal(signal.SIGINT)
        rec.wait(timeout=120)
    snaps = sorted((out / "snapshots").iterdir())
    assert len(snaps) == 8
    read = subprocess.run(["/usr/bin/python3", "-c", _BT2, *map(str, snaps)], capture_output=True, text=True, timeout=300)
    assert read.returncode == 0, read.stderr
    want = {n.lstrip("/") for n in NODES}
    for d, seen in zip(snaps, json.loads(read.stdout)):
        assert PROCESSES <= set(seen["runtime"]), (d.name, seen)
        assert want <= set(seen["nodes"]), (d.name, seen)
    s = subprocess.run([sys.executable, "-m", "roscope", "stats", "--json", str(snaps[-1])], env=env,
                       capture_output=True, text=True, timeout=120)
    assert s.returncode == 0, s.stderr
    named = {c["node"] for c in json.loads(s.stdout)["callbacks"] if c.get("procname") in PROCESSES and c.get("node")}
    assert named == NODES, named
