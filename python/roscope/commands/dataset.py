"""`roscope dataset runs|stats DATASET`: a dataset's runs, and its statistics across runs on DuckDB.

`stats` runs the queries of roscope.dataset_queries, the same SQL `roscope spark stats`
runs on Spark. Text in milliseconds, JSON in nanoseconds (docs/dataset.md).
"""
from __future__ import annotations

import sys
import time

from roscope.commands import _common as C


def register(sub) -> None:
    p = sub.add_parser("dataset", help="a dataset's runs, and statistics across its runs (DuckDB)",
                       description="Datasets are written by `roscope load TRACE --dataset DIR` (docs/dataset.md).")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    r = verbs.add_parser("runs", help="the runs of a dataset, in recorded-time order, with their manifest")
    r.add_argument("dataset", metavar="DATASET")
    r.add_argument("--runs", metavar="GLOB", action="append", help="only these runs (ids or shell patterns; repeatable)")
    C.add_json(r)
    r.set_defaults(func=run_runs)
    s = verbs.add_parser("stats", help="per run: callback durations and topic latencies (the queries Spark runs too)")
    s.add_argument("dataset", metavar="DATASET")
    s.add_argument("--runs", metavar="GLOB", action="append", help="only these runs (ids or shell patterns; repeatable)")
    C.add_json(s)
    C.add_wide(s)
    s.set_defaults(func=run_stats)


def run_runs(args) -> int:
    from roscope import dataset as ds

    rows = ds.runs(args.dataset, args.runs)

    def text(rows):
        w = C.TextOut(sys.stdout).write
        w(f"  {'run':<28} {'recorded':<20} {'commit':<16} {'events':>11} {'cb runs':>9} {'pubs':>9}  config\n")
        for r in rows:
            cfg = " ".join(f"{k}={v}" for k, v in (r["config"] or {}).items())
            w(f"  {C.cell(r['run_id'], 28):<28} {C.cell((r['recorded_at'] or '')[:19], 20):<20} {C.cell(r['commit'], 16):<16} "
              f"{r['events']:>11,} {r['callback_runs']:>9,} {r['publications']:>9,}  {C.cell(cfg, 60)}\n")

    C.show(args, rows, text)
    return 0


def render_stats(d: dict, out=None, wide: bool = False) -> None:
    """The rows of the callbacks and topics queries as text tables (ms); `wide`: names whole."""
    w = C.TextOut(out or sys.stdout).write
    stats = ("min", "mean", "std", "p50", "p90", "p99", "max")
    head = "".join(f" {s:>9}" for s in stats)
    node = lambda r: r["node_name"] if r["node_namespace"] in (None, "/") else f"{r['node_namespace']}/{r['node_name']}"  # noqa: E731
    cbs, tps = d["callbacks"], d["topics"]
    rw = C.width(cbs + tps, lambda r: r["run"], 24, wide)
    nw, tw = C.width(cbs, node, 28, wide), C.width(cbs + tps, lambda r: r.get("topic"), 36, wide)
    sw = C.width(cbs, lambda r: r["symbol"], 50, wide)
    w(f"Callback durations per run (ms){' on ' + d['engine'] if d.get('engine') else ''}\n")
    w(f"  {'run':<{rw}} {'id':>5} {'node':<{nw}} {'kind':<12} {'topic':<{tw}} {'count':>8}{head}  symbol\n")
    for r in cbs:
        w(f"  {C.cell(r['run'], rw):<{rw}} {r['callback_id']:>5} {C.cell(node(r), nw):<{nw}} {C.cell(r['kind'], 12):<12} "
          f"{C.cell(r.get('topic'), tw):<{tw}} {r['count']:>8,}" + "".join(f" {C.ms(r[f'{s}_ns']):>9}" for s in stats)
          + f"  {C.cell(r['symbol'], sw)}\n")
    w("\nTopic rate and latency per run (rate = the topic's own, (msgs - 1) / its first to last publication; "
      "latency = publication to callback start, ms)\n")
    w(f"  {'run':<{rw}} {'topic':<{tw}} {'rate Hz':>8} {'count':>8}{head}\n")
    for r in tps:
        rate = "-" if r.get("rate_hz") is None else f"{r['rate_hz']:.2f}"
        w(f"  {C.cell(r['run'], rw):<{rw}} {C.cell(r['topic'], tw):<{tw}} {rate:>8} {r['lat_count']:>8,}"
          + "".join(f" {C.ms(r[f'lat_{s}_ns']):>9}" for s in stats) + "\n")
    if d.get("seconds") is not None:
        w(f"\n{d['runs']} runs in {d['seconds']:.2f} s\n")


def run_stats(args) -> int:
    from roscope import dataset as ds
    from roscope import dataset_queries as Q

    t0 = time.perf_counter()
    res = Q.run_duckdb(args.dataset, runs=args.runs)
    d = {"engine": "duckdb", "runs": len(ds.select(args.dataset, args.runs)), "seconds": time.perf_counter() - t0, **res}
    C.show(args, d, lambda r: render_stats(r, wide=args.wide))
    return 0
