"""`roscope spark stats|load`: a dataset's statistics on Apache Spark; traces loaded as one Spark task per run.

The work is roscope.spark's (library): the same queries as `roscope dataset
stats` (roscope.dataset_queries), and roscope's own load in each task (docs/dataset.md).
"""
from __future__ import annotations

import sys
import time

from roscope import files
from roscope.commands import _common as C
from roscope.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("spark", help="dataset statistics on Apache Spark; load many traces as Spark tasks",
                       description="Runs roscope's dataset jobs on Spark (pyspark and Java; `make setup` installs them). "
                       "--master local[2] runs on this machine; on a cluster give yarn, k8s://... or spark://..., "
                       "with --conf for what the cluster needs (docs/spark.md).")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser("stats", help="per run: callback durations and topic latencies, on Spark")
    s.add_argument("dataset", metavar="DATASET")
    s.add_argument("--runs", metavar="GLOB", action="append", help="only these runs (ids or shell patterns; repeatable)")
    _spark_options(s)
    C.add_json(s)
    s.set_defaults(func=run_stats)
    f = verbs.add_parser("flow", help="per run: data flows and path statistics (roscope flow), one Spark task per run")
    f.add_argument("dataset", metavar="DATASET")
    f.add_argument("--from", dest="from_re", required=True, help="regex of input topics")
    f.add_argument("--to", dest="to_re", required=True, help="regex of output topics")
    f.add_argument("--runs", metavar="GLOB", action="append", help="only these runs (ids or shell patterns; repeatable)")
    _spark_options(f)
    C.add_json(f)
    f.set_defaults(func=run_flow)
    ld = verbs.add_parser("load", help="load trace directories into a dataset, one Spark task per run")
    ld.add_argument("traces", nargs="+", metavar="TRACE", help="trace directories, one run each")
    ld.add_argument("--dataset", required=True, metavar="DIR", help="the dataset (created if missing)")
    ld.add_argument("--run-id", action="append", metavar="ID",
                    help="the runs' ids, one per trace in order (default: each recording's name, else its directory's)")
    ld.add_argument("--config", action="append", metavar="KEY=VAL", default=[], help="stored with every run (repeatable)")
    ld.add_argument("--commit", metavar="REV", help="the traced system's version, stored with every run")
    ld.add_argument("--force", action="store_true", help="replace runs of the same ids")
    _spark_options(ld)
    C.add_json(ld)
    ld.set_defaults(func=run_load)


def _spark_options(p) -> None:
    p.add_argument("--master", default="local[2]", help="Spark master (default %(default)s): local[N], spark://HOST:PORT, "
                   "yarn, k8s://URL")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting (repeatable), e.g. spark.executor.memory=2g, spark.archives=env.tar.gz#env")


def run_stats(args) -> int:
    from roscope import dataset as ds
    from roscope import spark
    from roscope.commands.dataset import render_stats

    conf = spark.parse_conf(args.conf)
    spark.check_master(args.master)
    chosen = ds.select(args.dataset, args.runs)
    t0 = time.perf_counter()
    with spark.running(args.master, conf, end_java=True) as sp:
        t1 = time.perf_counter()
        res = spark.stats(args.dataset, chosen, spark=sp)
    d = {"engine": f"spark {args.master}", "runs": len(chosen), "seconds": time.perf_counter() - t0,
         "session_seconds": t1 - t0, **res}
    C.show(args, d, render_stats)
    return 0


def _per_run(args, work):
    """Runs `work(session)` (one Spark task per run) in a session of `args.master` (and --conf);
    returns (each run's result, seconds, the failed ones), printed as JSON with --json."""
    from roscope import spark

    conf = spark.parse_conf(args.conf)
    spark.check_master(args.master)
    t0 = time.perf_counter()
    with spark.running(args.master, conf, end_java=True) as sp:
        res = work(sp)
    dt = time.perf_counter() - t0
    if args.json:
        C.print_json({"dataset": args.dataset, "seconds": dt, "runs": res})
    return res, dt, [r for r in res if not r["ok"]]


def run_flow(args) -> int:
    from roscope import dataset as ds
    from roscope import spark
    from roscope.flow import FlowRequest

    req = FlowRequest(args.from_re, args.to_re)
    ds.select(args.dataset, args.runs)  # a damaged dataset is refused before Spark starts
    res, dt, failed = _per_run(args, lambda sp: spark.flows(args.dataset, req, args.runs, spark=sp))
    if not args.json:
        w = C.TextOut(sys.stdout).write
        w(f"  {'run':<28} {'flows':>8} {'paths':>6} {'mean':>9} {'p50':>9} {'p99':>9} {'max':>9}  (end-to-end latency, ms)\n")
        for r in res:
            if r["ok"]:
                lat = r["latency"]
                w(f"  {C.cell(r['run'], 28):<28} {lat['count']:>8,} {len(r['paths']):>6}"
                  + "".join(f" {C.ms(lat.get(k + '_ns')):>9}" for k in ("mean", "p50", "p99", "max"))
                  + (f"  ({C.escape(r['note'])[:80]})" if r["note"] else "") + "\n")
        w(f"{len(res)} runs in {dt:.2f} s\n")
    for r in failed:
        C.warn(f"run {r['run']}: {r['error']}")
    return 1 if failed else 0


def run_load(args) -> int:
    from roscope import dataset as ds
    from roscope import spark

    if args.run_id and len(args.run_id) != len(args.traces):
        raise InputError(f"{len(args.run_id)} --run-id for {len(args.traces)} traces: give one per trace, in order")
    config = ds.parse_config(args.config)
    files.check(args.dataset, directory=True, inputs=args.traces, what="dataset directory")  # before Spark starts
    res, dt, failed = _per_run(args, lambda sp: spark.load(args.traces, args.dataset, args.run_id, spark=sp, config=config,
                                                           commit=args.commit, force=args.force))
    if not args.json:
        w = C.TextOut(sys.stdout).write
        for r in res:
            if r["ok"]:
                w(f"  added {C.escape(r['run_id'])}: {r['events']:,} events in {r['seconds']:.2f} s (executor pid {r['executor_pid']})\n")
        w(f"{len(res) - len(failed)} of {len(res)} runs added to {C.escape(args.dataset)} in {dt:.2f} s\n")
    for r in failed:
        C.warn(f"run {r['run_id']} ({', '.join(r['traces'])}): not added: {r['error']}")
    if any(r.get("bug") for r in failed):
        return 70
    return 1 if failed else 0
