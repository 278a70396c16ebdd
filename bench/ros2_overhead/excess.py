#!/usr/bin/env python3
"""Where a traced rclpy callback run's excess over the example's own log goes, per distro.

The example's ground truth (examples/ros2_pipeline) times each callback run from its first to
its last clock read. The trace has, per run, ros2:callback_start and callback_end (what any
tool reading ros2_tracing's events sees) and roscope_ros2:callback_frame, the hook's clock reads
right before the callback's frame starts and right after it returns (roscope's run). Per run,
with babeltrace2's timestamps and fields and the hook built once more with
-DROSCOPE_RCLPY_TIMING into a temporary directory (it also reads the clock before
callback_start and after callback_end; the environment's own build is not touched), the
example recorded with it (`roscope record --ros2 DISTRO`):

- ``start_write``: callback_start's clock read (its timestamp) to the frame's start:
  the tracepoint's write and commit after its clock read;
- ``frame_to_log``: the frame's start to the callback's first clock read: CPython's entry
  into the frame and the first statement, the log's blind spot (the callback has started,
  its log has not);
- ``log_to_return``: the callback's last clock read to the frame's return (the log's blind
  spot at the end);
- ``return_to_clock``: the frame's return to callback_end's clock read: the tracepoint's
  preamble at the caches the callback left;
- ``excess``: roscope's run (callback_frame) minus the log's = frame_to_log + log_to_return;
- ``excess_events``: callback_start to callback_end minus the log's = all four.

usage: python -m bench.ros2_overhead.excess [--distros jazzy,kilted] [--seconds 15]
Results: bench/results/ros2_excess-<time>.json and a table per distro.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import datetime as dt
import json
import os
import struct
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from roscope import ros2_pip

from tests.support import ros2_truth as T

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


PARTS = ("start_write", "frame_to_log", "log_to_return", "return_to_clock", "excess", "excess_events")


def build_timing_hook(distro: str, out: Path) -> Path:
    """The rclpy hook built with ROSCOPE_RCLPY_TIMING into `out` (the environment's own build
    is not touched)."""
    env = ros2_pip.named_env(distro)
    py = env.path / "bin" / "python"
    suffix = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    ext = out / f"_roscope_rclpy_fast{suffix}"
    subprocess.run(["make", "-s", "-C", str(REPO / "instrument" / "ros2"), f"ROS2_ENV={env.path}", f"OUT={out}",
                    "CFLAGS=-O2 -g -DROSCOPE_RCLPY_TIMING", str(ext)], check=True)
    return out


def timing_rows(d: Path) -> dict:
    """pid -> the hook's rows (handle, a, b, c, d), in order of b."""
    rows = {}
    for f in d.glob("*.bin"):
        rows[int(f.stem)] = sorted(struct.iter_unpack("5Q", f.read_bytes()), key=lambda r: r[2])
    return rows


def split_runs(t: T.Trace, gt: T.GroundTruth, rows: dict) -> dict:
    """(node, callback) -> [{part: ns}] per logged run."""
    out = collections.defaultdict(list)
    by_pid = collections.defaultdict(list)  # pid -> [(start, end, frame)] of its runs, by start
    for (p, cb), v in t.runs.items():
        by_pid[p] += [(s, e, f) for (s, e), f in zip(v, t.frames[(p, cb)])]
    for v in by_pid.values():
        v.sort()
    for (node, name), logged in gt.runs().items():
        pid = logged[0]["pid"]
        mine = rows.get(pid, [])
        bs = [r[2] for r in mine]
        traced = by_pid[pid]
        starts = [s for s, _, _ in traced]
        for g in logged:
            t0, t1 = g["start_ns"], g["end_ns"]
            i = bisect.bisect_right(bs, t0) - 1
            if i < 0:
                continue
            _h, a, b, c, d = mine[i]
            if not (b <= t0 <= t1 <= c):
                continue  # not a run through the frame hook (a partial, a callable object)
            j = bisect.bisect_left(starts, a)
            if j == len(starts) or not a <= starts[j] <= b:
                continue
            s, e, frame = traced[j]
            if not c <= e <= d or frame != (b, c):
                continue  # (b, c) are the frame's times, as callback_frame carries them
            out[(node, name)].append({"start_write": b - s, "frame_to_log": t0 - b, "log_to_return": c - t1,
                                      "return_to_clock": e - c, "excess": (c - b) - (t1 - t0),
                                      "excess_events": (e - s) - (t1 - t0)})
    return out


def q(v: list, p: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def summarize(runs: dict) -> dict:
    every = [r for v in runs.values() for r in v]
    per_cb = {f"{n} {c}": {"runs": len(v), **{k: q([r[k] for r in v], .5) for k in PARTS}} for (n, c), v in sorted(runs.items())}
    overall = {f"p{int(p * 100)}": {k: q([r[k] for r in every], p) for k in PARTS} for p in (.5, .9, .99, 1.0)}
    tracepoints = sorted(r["start_write"] + r["return_to_clock"] for r in every)
    return {"runs": len(every), "per_callback_p50": per_cb, "overall": overall,
            "within_5us": sum(r["excess"] <= 5000 for r in every) / len(every),
            "events_within_5us": sum(r["excess_events"] <= 5000 for r in every) / len(every),
            "tracepoints_part": {"p50": q(tracepoints, .5), "p90": q(tracepoints, .9), "p99": q(tracepoints, .99)}}


def show(distro: str, s: dict) -> None:
    print(f"\n{distro}: {s['runs']} runs; roscope's run within 5 us of the log's: {s['within_5us']:.1%}, "
          f"callback_start to callback_end: {s['events_within_5us']:.1%} (us; per callback: p50)")
    print(f"{'':34}" + "".join(f"{k:>16}" for k in PARTS))
    rows = [(k, v) for k, v in s["per_callback_p50"].items()] + [(f"all {p}", v) for p, v in s["overall"].items()]
    for k, v in rows:
        print(f"{k:34}" + "".join(f"{v[p] / 1e3:16.2f}" for p in PARTS))
    print("the tracepoints' part (start_write + return_to_clock): "
          + ", ".join(f"{p} {v / 1e3:.2f}" for p, v in s["tracepoints_part"].items()) + " us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--distros", default="jazzy,kilted")
    ap.add_argument("--seconds", type=float, default=15.0)
    a = ap.parse_args()
    results = {"started": dt.datetime.now().isoformat(timespec="seconds"), "seconds": a.seconds,
               "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), None),
               "loadavg": os.getloadavg(), "python": sysconfig.get_python_version(), "distros": {}}
    for distro in a.distros.split(","):
        with tempfile.TemporaryDirectory(prefix=f"roscope-excess-{distro}-") as tmp:
            tmp = Path(tmp)
            hook = build_timing_hook(distro, tmp / "hook")
            (tmp / "timing").mkdir()
            argv = ["env", f"{ros2_pip.HOOK_VAR}={hook}", f"ROSCOPE_RCLPY_TIMING_DIR={tmp / 'timing'}",
                    "python3", str(T.EXAMPLE / "launch.py"), "-d", str(a.seconds), "-g", str(tmp / "gt")]
            r = T.record_command(distro, tmp / "trace", argv, ["--ros2", distro])
            if r["rc"] != 0:
                print(r["stderr"], file=sys.stderr)
                return 1
            t = T.read_trace(tmp / "trace")
            gt = T.GroundTruth(T.read_ground_truth(tmp / "gt"))
            s = summarize(split_runs(t, gt, timing_rows(tmp / "timing")))
        results["distros"][distro] = s
        show(distro, s)
    out = REPO / "bench" / "results" / f"ros2_excess-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "x") as f:
        json.dump(results, f, indent=1)
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
