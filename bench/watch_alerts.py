#!/usr/bin/env python3
"""How soon `roscope watch` tells a deadline miss (docs/watch.md, "Alerts"): RUNS runs of
examples/ros1_pipeline (6 s) with its filter slowed by ROS1_PIPELINE_SLOW=30@3-4 (20 slowed
flows per run) under `roscope.watch.Watch`, the path /lidar -> /lidar_filtered with a 25 ms
deadline and a watched path /lidar -> /fused, an --on-miss command as the test's. The delay of
each slowed flow's alert is its `alerted_ns` minus the example's own log of the flow's end
(CLOCK_MONOTONIC, the trace's clock).

Each run is a process of its own (this script with --one), so that its CPU is the watch's alone
(reader, model, flows; the example runs in processes of its own): CPU time of the process per
second of the run and per chunk read, and of each step of `roscope.live` / `roscope.live_flows`
(wrapped here, not in the library: CPU time of the thread, and wall time), and how long after a
chunk's last event watch had read the chunk. With several --sources the runs alternate between
them (rotation, live, rotation, ...); with --vs PYDIR, between this code and the roscope in PYDIR
(a `python` directory holding an older roscope and its core: the reference), each source in
turn, so that both see the same load; the ratios of this code's figures over the reference's
(or of the second source over the first) are printed. Prints one JSON document; nothing is
written.

    PYTHONPATH=python python3 bench/watch_alerts.py [--runs 3] [--sources rotation live] [--live-ms 50] [--vs PYDIR]
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = os.path.join(REPO, "examples", "ros1_pipeline", "system.sh")
ON_MISS = "import os, sys; open(os.path.join(sys.argv[1], os.environ['ROSCOPE_MISS_END_NS']), 'w').write('x')"
#: The steps timed, where the code has them (an older roscope, as a reference, has others).
STEPS = {"live": ("LiveWindows", ("feed", "check", "windows", "_flush", "_flow_db", "_search", "window_stats", "_renew")),
         "live_flows": ("LiveFlows", ("check", "_topics", "_search", "entries")),
         "watch": ("Watch", ("_read_live", "_read_new"))}


def _wrap(times: dict, cls, name: str, key: str) -> None:
    f = getattr(cls, name)

    @functools.wraps(f)
    def g(*x, **k):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return f(*x, **k)
        finally:
            times.setdefault(key, []).append((time.perf_counter() - t, time.thread_time() - c))
    setattr(cls, name, g)


def one_run(d: str, source: str | None, live_ms: int | None) -> dict:
    """One watch of the slowed example, in this process: the delays (ms) of the slowed flows'
    alerts, CPU, chunks and the steps' times."""
    import importlib

    from roscope import live, watch
    times: dict[str, list] = {}
    for mod, (cls, names) in STEPS.items():
        try:
            m = importlib.import_module(f"roscope.{mod}")
        except ImportError:
            continue
        c = getattr(m, cls, None)
        for n in names:
            if c is not None and hasattr(c, n):
                _wrap(times, c, n, f"{cls}.{n}")
    read_lag: list[float] = []
    feed = live.LiveWindows.feed

    def lag(self, c, *more):
        feed(self, c, *more)
        if self.complete_until is not None:
            read_lag.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC) - self.complete_until) / 1e6 - 2 * live.HOLD_NS / 1e6)
    live.LiveWindows.feed = lag
    os.makedirs(os.path.join(d, "misses"))
    alerts: list[dict] = []
    extra = {"source": source} if source else {}   # (an older roscope, as a reference, may have no sources)
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
    cpu_s = c1.user + c1.system - c0.user - c0.system
    with open(os.path.join(d, "gt", "perception.jsonl")) as f:
        slow = [json.loads(x) for x in f if '"slow"' in x]
    delays = []
    for s in slow:
        mine = [a for a in alerts if abs(a["end_ns"] - s["mono_ns"]) < 2_000_000]
        delays.append((mine[0]["alerted_ns"] - s["mono_ns"]) / 1e6 if mine else float("nan"))
    others = [a for a in alerts if not any(abs(a["end_ns"] - s["mono_ns"]) < 2_000_000 for s in slow)]
    chunks = len(w.seen) + getattr(w, "_n", 0)
    return {"delays_ms": [round(x, 1) for x in delays], "other_alerts": [(a["end_ns"], a["latency_ns"]) for a in others],
            "watch_cpu": cpu_s / (t1 - t0), "cpu_s": cpu_s, "wall_s": t1 - t0, "chunks": chunks,
            "cpu_ms_per_chunk": 1000 * cpu_s / max(chunks, 1), "read_lag_ms": read_lag,
            "steps": {k: {"n": len(v), "wall_ms": 1000 * sum(x for x, _ in v), "cpu_ms": 1000 * sum(c for _, c in v)}
                      for k, v in times.items()}}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def _child(d: str, source: str | None, live_ms: int | None, pydir: str) -> dict:
    """One run in a process of its own, with the roscope of `pydir`."""
    argv = [sys.executable, os.path.abspath(__file__), "--one", d]
    if source:
        argv += ["--sources", source]
    if live_ms:
        argv += ["--live-ms", str(live_ms)]
    env = {**os.environ, "PYTHONPATH": pydir}
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per source (and per code)")
    ap.add_argument("--sources", nargs="+", default=[None], choices=["rotation", "live"],
                    help="the watch's sources (default: its default)")
    ap.add_argument("--live-ms", type=int, default=None, help="the live source's live timer")
    ap.add_argument("--vs", metavar="PYDIR", help="a reference roscope's python directory: runs alternate with it")
    ap.add_argument("--one", metavar="DIR", help=argparse.SUPPRESS)   # one run, in this process (a child)
    a = ap.parse_args()
    if a.one:
        r = one_run(a.one, a.sources[0], a.live_ms)
        print(json.dumps(r))
        return
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    here = os.path.join(REPO, "python")
    codes = [("this", here)] + ([("reference", os.path.abspath(a.vs))] if a.vs else [])
    runs = []
    with tempfile.TemporaryDirectory(prefix="watch-alerts-") as tmp:
        for i in range(a.runs):
            for src in a.sources:
                for code, pydir in codes:
                    r = _child(os.path.join(tmp, f"{i}-{src}-{code}"), src, a.live_ms, pydir)
                    d = r["delays_ms"]
                    runs.append({"code": code, "source": src, "load_average": os.getloadavg()[0],
                                 "alerts_of_slowed_flows": sum(x == x for x in d), "other_alerts": len(r["other_alerts"]),
                                 "min_ms": min(d), "median_ms": statistics.median(d), "p99_ms": _pct(d, 0.99),
                                 "max_ms": max(d), **{k: r[k] for k in ("watch_cpu", "cpu_s", "wall_s", "chunks",
                                                                       "cpu_ms_per_chunk", "steps")},
                                 "read_lag_median_ms": statistics.median(r["read_lag_ms"]) if r["read_lag_ms"] else None,
                                 "delays_ms": d})
    per: dict[str, dict] = {}
    for code, _p in codes:
        for src in a.sources:
            mine = [r for r in runs if r["source"] == src and r["code"] == code]
            every = [x for r in mine for x in r["delays_ms"]]
            steps: dict[str, dict] = {}
            for r in mine:
                for k, v in r["steps"].items():
                    s = steps.setdefault(k, {"n": 0, "wall_ms": 0.0, "cpu_ms": 0.0})
                    for f in s:
                        s[f] += v[f]
            per[f"{code}/{src}"] = {
                "alerts": sum(x == x for x in every), "other_alerts": sum(r["other_alerts"] for r in mine),
                "median_ms": statistics.median(every), "p99_ms": _pct(every, 0.99), "max_ms": max(every),
                "watch_cpu_mean": statistics.mean(r["watch_cpu"] for r in mine),
                "cpu_ms_per_chunk": statistics.mean(r["cpu_ms_per_chunk"] for r in mine),
                "load_average": [r["load_average"] for r in mine],
                "steps_cpu_ms_per_call": {k: round(v["cpu_ms"] / max(v["n"], 1), 3) for k, v in steps.items()},
                "steps_cpu_ms_per_run": {k: round(v["cpu_ms"] / len(mine), 1) for k, v in steps.items()},
            }
    out = {"runs": runs, "per": per}
    keys = ("median_ms", "p99_ms", "max_ms", "watch_cpu_mean", "cpu_ms_per_chunk")
    if a.vs:
        out["ratios_this_over_reference"] = {str(src): {k: per[f"this/{src}"][k] / per[f"reference/{src}"][k] for k in keys}
                                             for src in a.sources}
    elif len(a.sources) == 2:
        x, y = (per[f"this/{s}"] for s in a.sources)
        out["ratios_second_over_first"] = {k: y[k] / x[k] for k in keys}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
