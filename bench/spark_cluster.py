#!/usr/bin/env python3
"""Spark cluster benchmark: `roscope spark stats` on a Spark standalone cluster vs local mode vs DuckDB.

Builds a dataset of N runs (default 8, at least 8) from the shared real ROS 2
traces (each trace loaded as several runs, as bench/dataset.py does), starts a
Spark standalone cluster on this machine (`roscope.spark.standalone`: a master and
--workers workers of 1 core each, bound to 127.0.0.1), then times, interleaved
round by round, each command as a whole process (its start, Spark's session and
executors included, as a user runs it):

  cluster   roscope spark stats DS --master spark://127.0.0.1:PORT --json
  local     roscope spark stats DS --master local[2] --json
  duckdb    roscope dataset stats DS --json

and checks the three print the same rows (counts, minima, maxima exactly; means,
deviations and percentiles up to floating rounding). Reported: each command's
median wall time and the medians of the per-round ratios cluster/duckdb,
local/duckdb and cluster/local. Writes bench/results/spark_cluster.json.

    .venv/bin/python bench/spark_cluster.py [--runs 8] [--repeat 3] [--workers 2]
    .venv/bin/python bench/spark_cluster.py --serve     # build, start, print the three commands, wait for Enter

With --serve the dataset and the cluster stay until Enter (or end of input), so
the three commands can be timed by an outside tool against each other.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "shared", "traces"))
ROSCOPE = [sys.executable, "-m", "roscope"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--serve", action="store_true", help="keep the dataset and cluster until Enter; time nothing")
    args = ap.parse_args()
    if not (8 <= args.runs <= 1000 and 1 <= args.repeat <= 100 and 1 <= args.workers <= 8):
        ap.error("--runs 8 to 1000, --repeat 1 to 100, --workers 1 to 8")
    from dataset import same  # bench/dataset.py's comparison of the engines' rows
    from roscope import dataset as ds
    from roscope import spark as rs
    from roscope.processes import group

    ros2 = os.path.join(TRACES, "ros2")
    names = sorted(os.listdir(ros2))
    plan = [(f"b{i:02d}", os.path.join(ros2, names[i % len(names)])) for i in range(args.runs)]
    out: dict = {"runs": args.runs, "traces": names, "workers": args.workers, "cpus": os.cpu_count(),
                 "load_average_before": os.getloadavg()}
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}   # the drivers too: every address on 127.0.0.1
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "ds")
        for rid, trace in plan:
            ds.append(trace, d, run_id=rid)
        out["events"] = sum(r["events"] for r in ds.runs(d))
        t0 = time.perf_counter()
        with rs.standalone(os.path.join(tmp, "cluster"), workers=args.workers, cores=1, memory="1g") as c:
            out["cluster_start_s"] = time.perf_counter() - t0
            cmds = {"cluster": [*ROSCOPE, "spark", "stats", d, "--master", c.url, "--json"],
                    "local": [*ROSCOPE, "spark", "stats", d, "--master", "local[2]", "--json"],
                    "duckdb": [*ROSCOPE, "dataset", "stats", d, "--json"]}
            if args.serve:
                print("SPARK_LOCAL_IP=127.0.0.1; the three commands:")
                for k, v in cmds.items():
                    print(f"  {k}: {' '.join(v)}")
                print("Enter stops the cluster and removes the dataset.", flush=True)
                sys.stdin.readline()
                return 0
            times: dict[str, list[float]] = {k: [] for k in cmds}
            ref = None
            for _ in range(args.repeat):
                for k, argv in cmds.items():
                    t = time.perf_counter()
                    res = group.output(f"bench-{k}", argv, timeout=900, env=env)
                    times[k].append(time.perf_counter() - t)
                    if res.returncode != 0:
                        print(f"{k}: exit {res.returncode}\n{res.stderr[-2000:]}", file=sys.stderr)
                        return 1
                    rows = json.loads(res.stdout)
                    rows = {n: rows[n] for n in ("callbacks", "topics")}
                    if ref is None:
                        ref = rows
                    elif not same(ref, rows):
                        print(f"{k}: rows differ from the first command's", file=sys.stderr)
                        return 1
            out["rows"] = {n: len(ref[n]) for n in ("callbacks", "topics")}
    out["equal"] = True
    out["load_average_after"] = os.getloadavg()
    out["median_s"] = {k: statistics.median(v) for k, v in times.items()}
    out["times_s"] = times
    pairs = {"cluster/duckdb": ("cluster", "duckdb"), "local/duckdb": ("local", "duckdb"), "cluster/local": ("cluster", "local")}
    out["median_ratio"] = {n: statistics.median(x / y for x, y in zip(times[a], times[b])) for n, (a, b) in pairs.items()}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "spark_cluster.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
