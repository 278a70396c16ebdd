"""The 10M-event ros2sim recording of the Autoware reference system that the
slow tests (test_report.py) and the benchmarks (bench/flow.py, bench/scale.py)
read: made once with tools/ros2sim (4 processes, Rolling layouts, --scale 100)
and kept in bench/results/flow-10M; a shorter duration is kept apart
(bench/results/flow-<duration>s). `FROM` and `TO` are its sensor and command
topics, the data-flow pair both read."""
from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(REPO, "bench", "results")

#: Seconds of simulated time: 31.5 s gives > 10M events.
DEFAULT_DURATION = 31.5
FROM = "^/(FrontLidarDriver|RearLidarDriver|PointCloudMap|Lanelet2Map|Visualizer|EuclideanClusterSettings)$"
TO = "^/(VehicleInterface|VehicleDBWSystem|EuclideanIntersection|IntersectionOutput)$"


def trace_dir(duration: float) -> str:
    """Where the recording of `duration` seconds is kept (its traces/ and ground_truth/)."""
    return os.path.join(RESULTS, "flow-10M" if duration == DEFAULT_DURATION else f"flow-{duration:g}s")


def ensure_trace(duration: float = DEFAULT_DURATION) -> str:
    """The traces/ directory of the recording, made with ros2sim when missing."""
    traces = os.path.join(trace_dir(duration), "traces")
    if os.path.isdir(traces):
        return traces
    os.makedirs(RESULTS, exist_ok=True)
    print(f"generating the Autoware reference-system trace ({duration:g} s) with ros2sim ...", file=sys.stderr)
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "tools", "ros2sim")], check=True)
    subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "ros2sim", "ros2sim.py"), "run",
                    "--preset", "autoware_reference_system_mp", "--distro", "rolling", "--scale", "100",
                    "--duration", f"{duration:g}", "--subbuf-size", "4M", "--num-subbuf", "8", "--no-ground-truth",
                    "--out", trace_dir(duration)],
                   check=True)
    return traces
