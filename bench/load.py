#!/usr/bin/env python3
"""Analysis benchmark: `roscope load` + `roscope stats` against `babeltrace2 -o dummy`.

On the largest real trace (ros2/autoware-carla-galactic, 683,756 events) and,
when present, on ros2sim traces, time in the same run, interleaved, best of N:

  babeltrace2 -o dummy TRACE                     the reference: decoding only
  roscope load TRACE -o DB                       decode + build the model + write DuckDB
  roscope stats DB --json                        the statistics from the database
  roscope stats TRACE --json                     end to end in one process

and report wall time, the ratio to babeltrace2 (> 1 means roscope is faster),
events/s and peak RSS of each. Writes bench/results/load.json.

    .venv/bin/python bench/load.py [--runs 3] [TRACE ...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from decode import RESULTS, TRACES, bt2_count, run_measured  # bench/ is the script's directory

ROSCOPE = [sys.executable, "-m", "roscope"]


def bench(trace: str, runs: int) -> dict:
    events = bt2_count(trace)["events"]
    best: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "run.duckdb")
        cmds = {
            "babeltrace2 -o dummy": ["babeltrace2", "-o", "dummy", trace],
            "roscope load": ROSCOPE + ["load", trace, "-o", db, "--force"],
            "roscope stats DB": ROSCOPE + ["stats", db, "--json"],
            "roscope stats TRACE": ROSCOPE + ["stats", trace, "--json"],
        }
        for _ in range(runs):
            for name, argv in cmds.items():
                r = run_measured(argv)
                if r["rc"] != 0:
                    raise SystemExit(f"{name} failed: {r['stderr'][-2000:]}")
                if name not in best or r["wall"] < best[name]["wall"]:
                    best[name] = {"wall": r["wall"], "maxrss_mib": r["maxrss_kib"] / 1024}
    ref = best["babeltrace2 -o dummy"]["wall"]
    load_stats = best["roscope load"]["wall"] + best["roscope stats DB"]["wall"]
    out = {"trace": trace, "events": events, "runs": runs, "results": best,
           "load_plus_stats_s": load_stats, "ratio_load_plus_stats": ref / load_stats,
           "ratio_stats_trace": ref / best["roscope stats TRACE"]["wall"]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("traces", nargs="*")
    a = ap.parse_args()
    traces = a.traces or [os.path.join(TRACES, "ros2", "autoware-carla-galactic")]
    os.makedirs(RESULTS, exist_ok=True)
    all_results = []
    for t in traces:
        r = bench(t, a.runs)
        all_results.append(r)
        print(f"\n{t}: {r['events']:,} events (best of {a.runs})")
        print(f"  {'command':<24} {'wall s':>8} {'x bt2':>7} {'events/s':>12} {'peak MiB':>9}")
        ref = r["results"]["babeltrace2 -o dummy"]["wall"]
        for name, v in r["results"].items():
            print(f"  {name:<24} {v['wall']:>8.3f} {ref / v['wall']:>7.2f} {r['events'] / v['wall']:>12,.0f} {v['maxrss_mib']:>9.1f}")
        print(f"  load + stats: {r['load_plus_stats_s']:.3f} s = {r['ratio_load_plus_stats']:.2f}x babeltrace2's decode alone;"
              f" stats from the trace in one process: {r['ratio_stats_trace']:.2f}x")
    with open(os.path.join(RESULTS, "load.json"), "w") as f:
        json.dump(all_results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
