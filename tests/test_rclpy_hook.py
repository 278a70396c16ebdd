"""The rclpy hook's C wrapper (instrument/ros2/src/rclpy_fast.c, `Traced`) on callables of
every shape, recorded for real: a bound method, a free function, a lambda (their runs start and
end inside the callable's frame), a functools.partial and a callable object (timed around the
call), a callable that raises, a callback that runs another traced one inside it, and a call
that fails on its arguments before the callable runs (tests/support/rclpy_hook_shapes.py, run by the
distro's Python under `roscope record`).

Oracle: babeltrace2's reading of the trace (callback_start/end and their handles) against the
script's own log of each run's first and last statement: one run per call, each containing its
logged run, the inner runs inside the outer ones, a failed call a run of no length, and no run
from the same function called afterwards untraced (the wrapper left CPython as it found it)."""
from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from tests.support import ros2_truth

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

SCRIPT = Path(__file__).parent / "support" / "rclpy_hook_shapes.py"
CALLS = 30  # each case's calls (the script's loop)


@pytest.mark.parametrize("distro", ["jazzy", "kilted"])
def test_every_shape_of_callable_is_one_run_around_its_statements(distro, tmp_path, lttng_ready):
    if not (ros2_truth.env_of(distro) / "bin" / "python").exists():
        pytest.skip(f"ROS 2 {distro} from PyPI is not installed (make setup)")
    log_path = tmp_path / "log.json"
    r = ros2_truth.record_command(distro, tmp_path / "trace", ["python3", str(SCRIPT), str(log_path)], timeout=120)
    assert r["rc"] == 0, r["stderr"]
    got = json.loads(log_path.read_text())
    t = ros2_truth.read_trace(tmp_path / "trace")  # babeltrace2's reading, this recording's processes
    log = got["runs"]
    runs = {h: v for (pid, h), v in t.runs.items() if pid == got["pid"]}
    logged = collections.defaultdict(list)
    for x in log:
        logged[x["h"]].append(x)
    # one run per call: 30 of each case, 3 failed calls, none more (the direct call of `free`)
    assert {h: len(v) for h, v in runs.items()} == {**{h: CALLS for h in range(1, 9)}, 9: 3}
    assert {h: len(v) for h, v in logged.items()} == {**{h: CALLS for h in range(1, 9)}, 9: 3}
    for h in range(1, 9):
        for (s, e), g in zip(runs[h], logged[h]):
            assert s <= g["first"] <= g["last"] <= e, (h, g["case"], s, e, g)
            assert e - s < 50_000_000, (h, g["case"], e - s)  # not merged with a later run
    for s, e in runs[9]:  # the failed calls: a run of no length, as around the call
        assert 0 <= e - s < 1_000_000
    # the inner callback's runs inside the outer's, one each
    assert all(os_ <= s and e <= oe for (s, e), (os_, oe) in zip(runs[7], runs[6]))
