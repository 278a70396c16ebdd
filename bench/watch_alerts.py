#!/usr/bin/env python3
"""How soon `roscope watch` tells a deadline miss (docs/watch.md, "Alerts"): RUNS runs of
examples/ros1_pipeline (6 s) with its filter slowed by ROS1_PIPELINE_SLOW=30@3-4 (20 slowed
flows per run) under `roscope.watch.Watch` in this process, the path /lidar -> /lidar_filtered
with a 25 ms deadline and a watched path /lidar -> /fused, an --on-miss command as the test's.
The delay of each slowed flow's alert is its `alerted_ns` minus the example's own log of the
flow's end (CLOCK_MONOTONIC, the trace's clock). It also times the steps of
`roscope.live.LiveWindows` (wrapped here, not in the library) and how long after a chunk's last
event watch had read the chunk. Prints one JSON document; nothing is written.

    PYTHONPATH=python python3 bench/watch_alerts.py [--runs 3]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from roscope import live, watch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = os.path.join(REPO, "examples", "ros1_pipeline", "system.sh")
ON_MISS = "import os, sys; open(os.path.join(sys.argv[1], os.environ['ROSCOPE_MISS_END_NS']), 'w').write('x')"
STEPS = ("feed", "check", "windows", "_flow_db", "_search", "window_stats", "_renew")


def _timed(cls, name: str, times: dict) -> None:
    f = getattr(cls, name)

    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            times.setdefault(name, []).append(time.perf_counter() - t)
    setattr(cls, name, g)


def one_run(d: str) -> list[float]:
    os.makedirs(os.path.join(d, "misses"))
    alerts: list[dict] = []
    opts = watch.WatchOptions(output=os.path.join(d, "trace"), window_s=2.0,
                              on_miss=shlex.join([sys.executable, "-c", ON_MISS, os.path.join(d, "misses")]),
                              paths=[("^/lidar$", "^/fused$", None), ("^/lidar$", "^/lidar_filtered$", 25_000_000)])
    os.environ["ROS1_PIPELINE_SLOW"] = "30@3-4"
    w = watch.Watch([SYSTEM, "-d", "6", "-g", os.path.join(d, "gt")], opts, lambda _w: None, alerts.append)
    w.run()
    with open(os.path.join(d, "gt", "perception.jsonl")) as f:
        slow = [json.loads(x) for x in f if '"slow"' in x]
    out = []
    for s in slow:
        mine = [a for a in alerts if abs(a["end_ns"] - s["mono_ns"]) < 2_000_000]
        out.append((mine[0]["alerted_ns"] - s["mono_ns"]) / 1e6 if mine else float("nan"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    times: dict[str, list[float]] = {}
    for n in STEPS:
        if hasattr(live.LiveWindows, n):   # (an older roscope, as a reference, has fewer steps)
            _timed(live.LiveWindows, n, times)
    read_lag: list[float] = []
    feed = live.LiveWindows.feed

    def lag(self, c):
        feed(self, c)
        if self.complete_until is not None:
            read_lag.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC) - self.complete_until) / 1e6
                            - 2 * live.HOLD_NS / 1e6)
    live.LiveWindows.feed = lag
    runs = []
    with tempfile.TemporaryDirectory(prefix="watch-alerts-") as tmp:
        for i in range(a.runs):
            delays = one_run(os.path.join(tmp, str(i)))
            runs.append({"load_average": os.getloadavg()[0], "alerts_of_slowed_flows": len(delays),
                         "min_ms": min(delays), "median_ms": statistics.median(delays), "max_ms": max(delays)})
    print(json.dumps({
        "runs": runs,
        "chunk_last_event_to_read_ms": {"median": statistics.median(read_lag), "max": max(read_lag)} if read_lag else None,
        "steps_ms": {k: {"n": len(v), "mean": 1000 * statistics.mean(v), "max": 1000 * max(v)} for k, v in times.items()},
    }, indent=1))


if __name__ == "__main__":
    main()
