#!/usr/bin/env python3
"""Load-time cost of kernel scheduling and clock synchronization (issue 12).

Records the Autoware reference-system preset (ros2sim, Rolling layouts, --scale 100)
split over two hosts (sensors and perception on host a; planning and control on host b,
whose clock runs 5 ms ahead and 50 ppm fast), about 10M events, while
`perf record -k mono -e sched:sched_switch -e sched:sched_wakeup -a` records the
kernel's scheduling, as `roscope record --kernel` does. Then times, interleaved in one
run (best of --runs), `roscope load` of

  OUT                           kernel data (OUT/perf/perf.data) and clock sync: what users get
  OUT --no-sync                 kernel data only
  OUT --no-kernel               clock sync only
  OUT --no-kernel --no-sync     neither: the reference

and reports each as a ratio to the reference. Writes bench/results/why_cost.json.

    .venv/bin/python bench/why_cost.py [--duration 31.5] [--runs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
ROSCOPE = [sys.executable, "-m", "roscope"]
sys.path.insert(0, BENCH)
from scale import measured  # noqa: E402


def system() -> dict:
    with open(os.path.join(REPO, "tools", "ros2sim", "presets", "autoware_reference_system_mp.json")) as f:
        sysd = json.load(f)
    for p in sysd["processes"]:
        p["host"] = "a" if p["name"] in ("sensors", "perception") else "b"
    sysd["hosts"] = [{"name": "a"}, {"name": "b", "clock_offset_ns": 5_000_000, "clock_drift_ppm": 50.0}]
    return sysd


def record(out: str, duration: float) -> None:
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "tools", "ros2sim")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        sysfile = os.path.join(tmp, "system.json")
        with open(sysfile, "w") as f:
            json.dump(system(), f)
        perf_data = os.path.join(tmp, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-k", "mono", "-e", "sched:sched_switch", "-e",
                                 "sched:sched_wakeup", "-a", "-o", perf_data], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(1.0)
        try:
            subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "ros2sim", "ros2sim.py"), "run",
                            "--system", sysfile, "--distro", "rolling", "--scale", "100", "--duration", f"{duration:g}",
                            "--subbuf-size", "4M", "--num-subbuf", "8", "--out", out], check=True)
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=120)
        os.makedirs(os.path.join(out, "perf"))
        shutil.move(perf_data, os.path.join(out, "perf", "perf.data"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=31.5)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    out = os.path.join(RESULTS, f"why-cost-{a.duration:g}")
    if not os.path.isdir(out):
        record(out, a.duration)
    cases = {
        "kernel + sync": [out],
        "kernel only": [out, "--no-sync"],
        "sync only": [out, "--no-kernel"],
        "neither": [out, "--no-kernel", "--no-sync"],
    }
    best: dict = {}
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        db = os.path.join(tmp, "x.duckdb")
        for _ in range(a.runs):
            for name, args in cases.items():
                r = measured(ROSCOPE + ["load", *args, "-o", db, "--force"])
                if name not in best or r["wall_s"] < best[name]["wall_s"]:
                    best[name] = r
        info = json.loads(subprocess.run(ROSCOPE + ["load", out, "-o", db, "--force", "--json"], capture_output=True,
                                         text=True, check=True).stdout)
    ref = best["neither"]["wall_s"]
    row = {"trace": out, "events": info["stats"]["events"], "tables": info["tables"], "best": best,
           "ratio_to_neither": {k: round(v["wall_s"] / ref, 2) for k, v in best.items()}}
    with open(os.path.join(RESULTS, "why_cost.json.tmp"), "w") as f:
        json.dump(row, f, indent=1)
    os.replace(os.path.join(RESULTS, "why_cost.json.tmp"), os.path.join(RESULTS, "why_cost.json"))
    print(f"{row['events']:,} events; kernel rows: thread_states {info['tables'].get('thread_states', 0):,}, "
          f"preemptions {info['tables'].get('preemptions', 0):,}")
    for k, v in best.items():
        print(f"  {k:<14} {v['wall_s']:7.2f} s  {v['peak_rss_mib']:7.1f} MiB  x{row['ratio_to_neither'][k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
