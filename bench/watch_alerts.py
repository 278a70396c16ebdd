#!/usr/bin/env python3
"""How soon `roscope watch` tells a deadline miss (docs/watch.md, "Alerts"): RUNS runs of
examples/ros1_pipeline (6 s) with its filter slowed by ROS1_PIPELINE_SLOW=30@3-4 (20 slowed
flows per run) under `roscope.watch.Watch` in this process, the path /lidar -> /lidar_filtered
with a 25 ms deadline and a watched path /lidar -> /fused, an --on-miss command as the test's.
The delay of each slowed flow's alert is its `alerted_ns` minus the example's own log of the
flow's end (CLOCK_MONOTONIC, the trace's clock). It also times the steps of
`roscope.live.LiveWindows` (wrapped here, not in the library), how long after a chunk's last
event watch had read the chunk, and the CPU of this process (the watch: reader, model, flows;
the example runs in processes of its own) per second of run. With several --sources, the runs
alternate between them (rotation, live, rotation, ...) so that both see the same load, and the
ratios of their medians are printed. Prints one JSON document; nothing is written.

    PYTHONPATH=python python3 bench/watch_alerts.py [--runs 3] [--sources rotation live] [--live-ms 50]
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


def one_run(d: str, source: str | None = None, live_ms: int | None = None) -> tuple[list[float], float]:
    """The delays (ms) of the slowed flows' alerts, and the watch's CPU (share of a core)."""
    os.makedirs(os.path.join(d, "misses"))
    alerts: list[dict] = []
    extra = {"source": source} if source else {}   # (an older roscope, as a reference, has no sources)
    if live_ms:
        extra["live_ms"] = live_ms
    opts = watch.WatchOptions(output=os.path.join(d, "trace"), window_s=2.0, **extra,
                              on_miss=shlex.join([sys.executable, "-c", ON_MISS, os.path.join(d, "misses")]),
                              paths=[("^/lidar$", "^/fused$", None), ("^/lidar$", "^/lidar_filtered$", 25_000_000)])
    os.environ["ROS1_PIPELINE_SLOW"] = "30@3-4"
    w = watch.Watch([SYSTEM, "-d", "6", "-g", os.path.join(d, "gt")], opts, lambda _w: None, alerts.append)
    c0, t0 = os.times(), time.monotonic()
    w.run()
    c1, t1 = os.times(), time.monotonic()
    cpu = (c1.user + c1.system - c0.user - c0.system) / (t1 - t0)
    with open(os.path.join(d, "gt", "perception.jsonl")) as f:
        slow = [json.loads(x) for x in f if '"slow"' in x]
    out = []
    for s in slow:
        mine = [a for a in alerts if abs(a["end_ns"] - s["mono_ns"]) < 2_000_000]
        out.append((mine[0]["alerted_ns"] - s["mono_ns"]) / 1e6 if mine else float("nan"))
    return out, cpu


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per source")
    ap.add_argument("--sources", nargs="+", default=[None], choices=["rotation", "live"],
                    help="the watch's sources (default: its default)")
    ap.add_argument("--live-ms", type=int, default=None, help="the live source's live timer")
    a = ap.parse_args()
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    times: dict[str, dict[str, list[float]]] = {}
    current = {"source": None}

    def _timed(cls, name: str) -> None:
        f = getattr(cls, name)

        @functools.wraps(f)
        def g(*x, **k):
            t = time.perf_counter()
            try:
                return f(*x, **k)
            finally:
                times.setdefault(str(current["source"]), {}).setdefault(name, []).append(time.perf_counter() - t)
        setattr(cls, name, g)
    for n in STEPS:
        if hasattr(live.LiveWindows, n):   # (an older roscope, as a reference, has fewer steps)
            _timed(live.LiveWindows, n)
    if hasattr(watch.Watch, "_read_live"):
        _timed(watch.Watch, "_read_live")
    read_lag: dict[str, list[float]] = {}
    feed = live.LiveWindows.feed

    def lag(self, c, *more):
        feed(self, c, *more)
        if self.complete_until is not None:
            read_lag.setdefault(str(current["source"]), []).append(
                (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - self.complete_until) / 1e6 - 2 * live.HOLD_NS / 1e6)
    live.LiveWindows.feed = lag
    runs = []
    with tempfile.TemporaryDirectory(prefix="watch-alerts-") as tmp:
        for i in range(a.runs):
            for src in a.sources:
                current["source"] = src
                delays, cpu = one_run(os.path.join(tmp, f"{i}-{src}"), src, a.live_ms)
                runs.append({"source": src, "load_average": os.getloadavg()[0], "alerts_of_slowed_flows": len(delays),
                             "min_ms": min(delays), "median_ms": statistics.median(delays), "p99_ms": _pct(delays, 0.99),
                             "max_ms": max(delays), "watch_cpu": cpu, "delays_ms": [round(x, 1) for x in delays]})
    per: dict[str, dict] = {}
    for src in a.sources:
        mine = [r for r in runs if r["source"] == src]
        every = [x for r in mine for x in r["delays_ms"]]
        lags = read_lag.get(str(src), [])
        per[str(src)] = {
            "alerts": len(every), "median_ms": statistics.median(every), "p99_ms": _pct(every, 0.99), "max_ms": max(every),
            "watch_cpu_mean": statistics.mean(r["watch_cpu"] for r in mine),
            "chunk_last_event_to_read_ms": {"median": statistics.median(lags), "max": max(lags)} if lags else None,
            "steps_ms": {k: {"n": len(v), "mean": 1000 * statistics.mean(v), "max": 1000 * max(v)}
                         for k, v in times.get(str(src), {}).items()},
        }
    out = {"runs": runs, "sources": per}
    if len(a.sources) == 2:
        x, y = (per[str(s)] for s in a.sources)
        out["ratios_second_over_first"] = {k: y[k] / x[k] for k in ("median_ms", "p99_ms", "max_ms", "watch_cpu_mean")}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
