"""Issue 39, item 4 and 5: `roscope watch` on a pip-installed ROS 2 that a script starts
(`--ros2 ENV`), and on one already running (`--attach`, on by default without a command), the
latter started with the variables `roscope env --ros2 ENV --shell` prints (run by bash, the
oracle of what that text means to a shell).

The system is the rclpy example (examples/ros2_pipeline) on PyPI's ROS 2 Jazzy, recorded for
real. What each window must name comes from the example's sources (tests/ros2_truth.CALLBACKS),
never from roscope's output."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import descendants
from tests.support.ros2_truth import CALLBACKS, EXAMPLE, REPO, env_of

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

#: The example's nodes and what each serves (kind, topic or service), from its sources.
NODES = {node for node, _cb in CALLBACKS}
#: Its processes' names: the interpreter's, and the one sensors.py gives itself (prctl), which
#: its threads show or not depending on when they started.
PROCNAMES = ("python", "lidar-imu-drv")


@pytest.fixture(scope="module")
def jazzy() -> Path:
    env = env_of("jazzy")
    if not (env / "bin" / "python").exists():
        pytest.skip("ROS 2 jazzy from PyPI is not installed (make setup)")
    return env


def _env(tmp: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), XDG_STATE_HOME=str(tmp / "state"))
    for k in ("ROSCOPE_RECORD_ID", "LD_PRELOAD", "ROSCOPE_RCLPY_HOOK"):
        env.pop(k, None)
    return env


def _watch(args: list[str], tmp: Path, timeout: float = 120) -> list[dict]:
    p = subprocess.run([sys.executable, "-m", "roscope", "watch", "--json", *args], env=_env(tmp),
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def _named(windows: list[dict], pids: set[int] | None = None) -> tuple[set[str], list[dict]]:
    """The nodes of the last full window's callbacks of the processes `pids` (else of the
    example's interpreter, whatever its processes renamed themselves), and its callbacks
    without a node."""
    last = [w for w in windows if "callbacks" in w][-1]
    cbs = [c for c in last["callbacks"]
           if (c.get("pid") in pids if pids is not None else c.get("procname", "").startswith(PROCNAMES))]
    return {c["node"] for c in cbs if c.get("node")}, [c for c in cbs if not c.get("node")]


def test_watch_attached_to_a_running_system_started_with_roscope_env(tmp_path, jazzy):
    """A system started by bash after `eval "$(roscope env --ros2 jazzy --shell)"`, then
    `roscope watch` with no command: the state dump names every callback (before: no state
    dump was asked for, 10 of 10 callbacks without a node)."""
    exports = subprocess.run([sys.executable, "-m", "roscope", "env", "--ros2", "jazzy", "--shell"], env=_env(tmp_path),
                             capture_output=True, text=True, check=True).stdout
    gt = tmp_path / "gt"
    system = subprocess.Popen(["bash", "-c", exports + f'\nexec "{jazzy}/bin/python" "{EXAMPLE}/launch.py" -d 40 -g "{gt}"'],
                              env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        time.sleep(5)   # the system runs before the watch starts
        assert system.poll() is None
        windows = _watch(["--duration", "6", "-o", str(tmp_path / "w")], tmp_path)
        pids = descendants(system.pid) | {system.pid}   # the example's node processes
    finally:
        os.killpg(system.pid, signal.SIGINT)
        system.wait(timeout=60)
    nodes, unnamed = _named(windows, pids)
    assert nodes == NODES and not unnamed, (nodes, unnamed)


def test_watch_ros2_traces_a_system_that_a_script_starts(tmp_path, jazzy):
    """`roscope watch --ros2 jazzy -- bash -c 'exec ENV/bin/python launch.py'`: the command's
    program is bash, so without --ros2 nothing says which ROS 2 to trace (before: no such
    option, and no ROS 2 event)."""
    gt = tmp_path / "gt"
    script = f'exec "{jazzy}/bin/python" "{EXAMPLE}/launch.py" -d 8 -g "{gt}"'
    windows = _watch(["--ros2", "jazzy", "-o", str(tmp_path / "w"), "--", "bash", "-c", script], tmp_path)
    nodes, unnamed = _named(windows)
    assert nodes == NODES and not unnamed, (nodes, unnamed)
