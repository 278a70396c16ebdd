#!/usr/bin/env python3
"""Soak of `roscope watch` (docs/watch.md, "Soak"): --duration seconds (default 1800) of
the real ROS 1 example examples/ros1_pipeline plus tests/fixtures fx_emit emitting R
roscope_fx:tick events per second (default 50,000, paced every ms), both under one
`roscope watch --json --event roscope_fx:* --deadline DEADLINE` in command mode. With a
deadline (default '^/lidar$->^/lidar_filtered$=1', and the example's filter made to spin
--slow-ms ms longer in every run, PIPELINE_SLOW: every flow of that path misses, ~20 a
second) each alert's latency is its `alerted_ns` minus its flow's end (`end_ns`: the late
output's publication, CLOCK_MONOTONIC as the trace); --deadline '' watches no path.

Every 10 s it samples the watch process's RSS (/proc/PID/status VmRSS) and CPU time
(utime + stime of /proc/PID/stat), and the machine's load; at the end it reports: RSS at 60 s,
the lowest and highest after 60 s and the spread relative to the 60 s value, per minute, and
the least-squares slope of the samples after 60 s (MiB per minute); CPU per second
of run (percent of one core), overall and after 60 s; the windows printed; events lost as
LTTng counted them (the last window's lost_events_total), and the emitted count; the alerts'
latency (p50, p99, max) per minute of run (the first and last apart) and over it (those told
after --duration, once the command ended, apart), and their count. --vs DIR soaks a second
roscope (another checkout's python directory, e.g. a worktree of the code before a change) at
the same time, each with its own example and emitter: before and after under the same load.
--probe S measures each watch from inside as well (bench/watch_probe.py).
Results ("this", and "vs") into bench/results/watch_soak.json.

    PYTHONPATH=python python3 bench/watch_soak.py [--duration 1800] [--rate 50000] [--deadline D] [--slow-ms 2] [--vs REF/python] [--probe 60]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
EMIT = os.path.join(REPO, "tests", "fixtures", "build", "fx_emit")
SYSTEM = os.path.join(REPO, "examples", "ros1_pipeline", "system.sh")
TICKS = os.sysconf("SC_CLK_TCK")


def sample(pid: int) -> tuple[int, float]:
    """(RSS in KiB, CPU seconds) of `pid`."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / TICKS


def _stats(xs: list[float]) -> dict:
    """n, p50, p99, max of latencies (nearest rank)."""
    if not xs:
        return {"n": 0}
    xs = sorted(xs)

    def q(f: float) -> float:
        return round(xs[min(len(xs) - 1, round(f * (len(xs) - 1)))], 1)
    return {"n": len(xs), "p50": q(0.5), "p99": q(0.99), "max": round(xs[-1], 1)}


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (x, y) points (None with fewer than 2 distinct x)."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def soak(a, python_dir: str, label: str) -> dict:
    """One soak: a watch of the roscope in `python_dir` over its own example and emitter."""
    work = tempfile.mkdtemp(prefix=f"watch-soak-{label}-")
    out = os.path.join(work, "trace")
    # A fixed script (no data in it): the example in the background, the emitter in front.
    script = '"$1" -d "$2" -g "$3" & "$4" rate "$5" "$2"; wait'
    deadline = ["--deadline", a.deadline] if a.deadline else []
    # --probe: the watch measured from inside too (bench/watch_probe.py), every --probe seconds
    run = [sys.executable, "-m", "roscope"] if not a.probe else [sys.executable, os.path.join(BENCH, "watch_probe.py")]
    cmd = [*run, "watch", "--json", "--event", "roscope_fx:*", *deadline, "-o", out, "--",
           "bash", "-c", script, "soak", SYSTEM, str(a.duration), os.path.join(work, "gt"), EMIT, str(a.rate)]
    env = {**os.environ, "PYTHONPATH": python_dir}
    if a.probe:
        env.update(PROBE_OUT=os.path.join(BENCH, "results", f"watch_probe-{label}.jsonl"), PROBE_S=str(a.probe))
    if a.deadline and a.slow_ms:
        env["PIPELINE_SLOW"] = f"filter.onLidar:{a.slow_ms}"
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "watch.err"), "w"), env=env)
    lines: list[dict] = []
    alerts: list[tuple[float, float]] = []   # (s of run when told, latency ms from the flow's end)

    def read():
        for line in p.stdout:
            d = json.loads(line)
            if d.get("alert"):
                alerts.append((time.monotonic() - t0, (d["alerted_ns"] - d["end_ns"]) / 1e6))
                continue
            lines.append({"end_s": d["window"]["end_s"], "lost": d["lost_events_total"],
                          "packets_lost": d["packets_lost_total"], "callbacks": len(d["callbacks"])})
    t0 = time.monotonic()
    th = threading.Thread(target=read, daemon=True)
    th.start()
    samples = []   # (s of run, RSS KiB, CPU s, the machine's 1-minute load)
    while p.poll() is None:
        try:
            rss, cpu = sample(p.pid)
        except (OSError, StopIteration):
            break
        samples.append((time.monotonic() - t0, rss, cpu, os.getloadavg()[0]))
        time.sleep(10)
    p.wait()
    th.join(30)
    after = [s for s in samples if s[0] >= 60]
    base = after[0] if after else samples[-1]
    last = samples[-1]
    minutes = [_stats([x for t, x in alerts if m * 60 <= t < (m + 1) * 60]) for m in range(a.duration // 60)]
    return {
        "python": python_dir, "duration_s": a.duration, "rate": a.rate, "exit_code": p.returncode, "windows": len(lines),
        "rss_kib_at_60s": base[1], "rss_kib_min_after_60s": min(s[1] for s in after) if after else None,
        "rss_kib_max_after_60s": max(s[1] for s in after) if after else None,
        "rss_spread_after_60s": ((max(s[1] for s in after) - min(s[1] for s in after)) / base[1]) if after else None,
        # least squares over every sample after 60 s (MiB per minute of run)
        "rss_slope_mib_per_min_after_60s": None if (k := slope([(s[0] / 60, s[1] / 1024) for s in after])) is None
        else round(k, 3),
        "cpu_percent": 100 * last[2] / max(last[0], 1e-9),
        "cpu_percent_after_60s": 100 * (last[2] - base[2]) / max(last[0] - base[0], 1e-9),
        "lost_events_total": lines[-1]["lost"] if lines else None,
        "packets_lost_total": lines[-1]["packets_lost"] if lines else None,
        "emitted_fx_events": a.rate * a.duration, "work_dir": work,
        "load_1min_min_max": [min(s[3] for s in samples), max(s[3] for s in samples)],
        "rss_mib_per_minute": [round(s[1] / 1024, 1) for s in samples if s[0] >= 60 and int(s[0]) % 60 < 10],
        # while the command ran (told within --duration of watch's start); those told after it
        # ended (the session's end read back from the relay) apart
        "alerts": len(alerts), "alert_latency_ms": _stats([x for t, x in alerts if t < a.duration]),
        "alert_latency_ms_first_minute": minutes[0] if minutes else None,
        "alert_latency_ms_last_minute": minutes[-1] if minutes else None,
        "alert_latency_ms_per_minute": [{"minute": m + 1, **x} for m, x in enumerate(minutes)],
        "alert_latency_ms_after_duration": _stats([x for t, x in alerts if t >= a.duration]),
        "alerts_over_1s": [(round(t, 1), round(x, 1)) for t, x in alerts if x > 1000],
        "samples": samples,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=1800)
    ap.add_argument("--rate", type=int, default=50_000)
    ap.add_argument("--deadline", default="^/lidar$->^/lidar_filtered$=1", help="a watched deadline ('': none)")
    ap.add_argument("--slow-ms", type=int, default=2, help="the example's filter spins this much longer per run")
    ap.add_argument("--vs", metavar="PYTHONPATH", help="also soak this roscope (a reference checkout's python "
                    "directory, its core built) at the same time, over an example and emitter of its own")
    ap.add_argument("--probe", type=float, metavar="S", help="measure each watch from inside every S seconds "
                    "(bench/watch_probe.py: malloc's arenas, Python's objects, the watch's state, DuckDB's memory) "
                    "into bench/results/watch_probe-{this,vs}.jsonl")
    a = ap.parse_args()
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "tests", "fixtures")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    runs = {"this": os.path.join(REPO, "python"), **({"vs": os.path.abspath(a.vs)} if a.vs else {})}
    res: dict = {}

    def one(label: str, python_dir: str) -> None:
        res[label] = soak(a, python_dir, label)
    threads = [threading.Thread(target=one, args=item) for item in runs.items()]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    res["load_average_at_end"] = os.getloadavg()
    with open(os.path.join(BENCH, "results", "watch_soak.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: {x: y for x, y in v.items() if x not in ("samples", "alert_latency_ms_per_minute")}
                      if isinstance(v, dict) else v for k, v in res.items()}, indent=1))


if __name__ == "__main__":
    main()
