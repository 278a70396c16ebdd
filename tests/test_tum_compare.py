"""roscope flow next to TUM's own tool (TUM-AVS/ros2_latency_analysis, branch
dataflow-analysis) on the real 2M-event Autoware recording (issue 10).

TUM's tool is the independent oracle: its notebook's steps run in its own venv
(bench/tum_compare.py's docstring has the setup; none of it is part of `make
setup`), on the first output messages of /control/command/control_cmd. Where
both tools find the same flow (same callbacks and publishers in order, same input
and output messages), the end-to-end latency and its communication / idle /
computation split agree within 3 us; roscope's output has neither the duplicate
rows nor the loop paths that TUM's has.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench import tum_compare as tc

OUTPUTS = 20  # the first output messages TUM's tool searches (its full run took 28 minutes here)


def _unavailable() -> str | None:
    if not os.path.isdir(os.path.join(tc.TRACE, "ust")):
        return f"the Autoware trace is not at {tc.TRACE} (TUM-AVS/ros2_latency_analysis e4e3f151, artifacts/aw_scenario)"
    for path in (tc.TUM_PYTHON, os.path.join(tc.TUM_SRC, "ros2_latency_analysis", "message_tree"),
                 os.path.join(tc.TUM_SRC, "tracetools_analysis", "tracetools_analysis"),
                 os.path.join(tc.TUM_SRC, "ros2_tracing", "tracetools_read")):
        if not os.path.exists(path):
            return f"TUM's tool or its dependencies are not set up ({path} is missing; see bench/tum_compare.py)"
    probe = subprocess.run([tc.TUM_PYTHON, "-c", "import babeltrace, pandas, tqdm"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"TUM's venv cannot import its dependencies: {probe.stderr.strip().splitlines()[-1]}"
    if not os.path.isfile(os.path.join(tc.TUM_CACHE, "converted")):
        return (f"no converted trace in {tc.TUM_CACHE} (tracetools_analysis's conversion takes about 6 minutes: "
                "run bench/tum_compare.py once)")
    return None


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    db = str(tmp_path_factory.mktemp("tum") / "aws.duckdb")
    subprocess.run([sys.executable, "-m", "roscope", "load", tc.TRACE, "-o", db], check=True, capture_output=True)
    out = str(tmp_path_factory.mktemp("tum") / "tum.json")
    tc.run_tum(tc.TRACE, out, OUTPUTS)
    return tc.compare_all(tc.TRACE, db, out)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_same_flows_same_latencies(results):
    for name, c in results["selections"].items():
        n = c["messages_compared"]
        assert c["paths_in_common"] > 0 and n > 0, name
        # Every loop-free flow TUM's tool finds, roscope finds: same steps, same input and output.
        assert c["tum_only_flows"] == 0, name
        # End to end: within 3 us as they come (on the whole trace, all but 16 of 24,660 pointcloud
        # flows, whose start roscope takes at rclcpp_publish: up to 3.11 us), and at rcl_publish
        # as the tool takes publications, all.
        assert c["latency_within_3us"] >= 0.999 * n, (name, c["latency_max_diff_ns"])
        assert c["same_pub_latency_within_3us"] == n, (name, c["same_pub_latency_max_diff_ns"])
        # The split, with publications at rcl_publish and runs at the microsecond as the tool has
        # them: within 3 us but for its float epoch seconds (238 ns steps, 20-odd times a flow;
        # on the whole trace at most 5.12 us, and 98.5% or more of the flows within 3 us).
        for part in ("communication", "idle", "computation"):
            assert c[f"tum_time_{part}_max_diff_ns"] <= 6000, (name, part)
            assert c[f"tum_time_{part}_within_3us"] >= 0.95 * n, (name, part)
        # ... and the raw split differs by more: the check is not blind to the two definitions.
        assert c["communication_max_diff_ns"] > 3000, name


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_duplicates_or_loops_where_tum_has_them(results):
    for name, c in results["selections"].items():
        assert c["roscope_duplicate_rows"] == 0, name
        assert c["roscope_loop_rows"] == 0, name
    # The check finds them in TUM's output: it is not blind to them.
    assert sum(c["tum_duplicate_rows"] for c in results["selections"].values()) > 0
