#!/usr/bin/env python3
"""Dataset benchmark: the same statistics queries on DuckDB and on Spark (local mode), same dataset, same run.

Builds a dataset of N runs (default 20) from the shared real ROS 2 traces (each
trace loaded as several runs), twice: with `roscope load --dataset` run by run in
one process, and with `roscope spark load` (one Spark task per run). Then times,
interleaved, best of --repeat, on the first dataset:

  duckdb   roscope.dataset_queries.run_duckdb (what `roscope dataset stats` runs)
  spark    roscope.spark.stats on a warm session (what `roscope spark stats` runs, less the session start)

and the Spark session's start; checks that both engines give the same rows.
Writes bench/results/dataset.json.

    .venv/bin/python bench/dataset.py [--runs 20] [--repeat 3] [--master local[2]]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "shared", "traces"))


def same(a: dict, b: dict) -> bool:
    for n in a:
        if len(a[n]) != len(b[n]):
            return False
        for x, y in zip(a[n], b[n]):
            for k in x:
                u, v = x[k], y[k]
                if isinstance(u, float) or isinstance(v, float):
                    if (u is None) != (v is None) or (u is not None and not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-6)):
                        return False
                elif u != v:
                    return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    from roscope import dataset as ds
    from roscope import dataset_queries as Q
    from roscope import spark as rs

    ros2 = os.path.join(TRACES, "ros2")
    names = sorted(os.listdir(ros2))
    plan = [(f"b{i:02d}", os.path.join(ros2, names[i % len(names)])) for i in range(args.runs)]
    out: dict = {"runs": args.runs, "traces": names, "master": args.master, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        d1, d2 = os.path.join(tmp, "duckdb"), os.path.join(tmp, "spark")
        t0 = time.perf_counter()
        for rid, trace in plan:
            ds.append(trace, d1, run_id=rid)
        out["load_sequential_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        sp = rs.session(args.master)
        out["spark_session_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = rs.load([t for _r, t in plan], d2, [r for r, _t in plan], spark=sp)
        out["load_spark_s"] = time.perf_counter() - t0
        assert all(r["ok"] for r in res), [r for r in res if not r["ok"]]
        out["events"] = sum(r["events"] for r in ds.runs(d1))
        out["callback_runs"] = sum(r["callback_runs"] for r in ds.runs(d1))
        best = {"duckdb": math.inf, "spark": math.inf, "spark_first": None}
        for i in range(args.repeat):
            t0 = time.perf_counter()
            a = Q.run_duckdb(d1)
            best["duckdb"] = min(best["duckdb"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            b = rs.stats(d1, spark=sp)
            dt = time.perf_counter() - t0
            best["spark_first"] = dt if i == 0 else best["spark_first"]
            best["spark"] = min(best["spark"], dt)
            assert same(a, b), "Spark and DuckDB differ"
        sp.stop()
        out["stats_duckdb_s"] = best["duckdb"]
        out["stats_spark_s"] = best["spark"]
        out["stats_spark_first_s"] = best["spark_first"]
        out["rows"] = {n: len(v) for n, v in a.items()}
        out["equal"] = True
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "dataset.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
