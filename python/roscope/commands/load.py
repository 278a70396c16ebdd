"""`roscope load TRACE... -o run.duckdb`: build the execution database."""
from __future__ import annotations

import sys
import time


def register(sub) -> None:
    p = sub.add_parser(
        "load",
        help="build the execution database (DuckDB) from traces",
        description="Decode the traces and store roscope's execution model (docs/model.md) in a DuckDB file.",
    )
    p.add_argument("traces", nargs="+", metavar="TRACE")
    p.add_argument("-o", "--output", required=True, help="the DuckDB file to write (never overwritten without --force)")
    p.add_argument("--parquet", metavar="DIR", help="also write each table as DIR/<table>.parquet")
    p.add_argument("--no-heuristics", action="store_true", help="make only exact transport links")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.set_defaults(func=run)


def run(args) -> int:
    from roscope.db import load

    t0 = time.perf_counter()
    db, res = load(args.traces, args.output, heuristics=not args.no_heuristics, parquet_dir=args.parquet, force=args.force)
    db.close()
    dt = time.perf_counter() - t0
    print(f"wrote {res.db_path} in {dt:.2f} s ({res.stats.get('events', 0):,} events)")
    for name, n in res.tables.items():
        print(f"  {name:<16} {n:>12,} rows")
    for w in res.warnings:
        print(f"roscope: warning: {w}", file=sys.stderr)
    for f, ev, pk in res.losses:
        print(f"roscope: warning: {f}: {ev:,} events discarded, {pk:,} packets lost by the tracer", file=sys.stderr)
    return 0
