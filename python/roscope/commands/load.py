"""`roscope load TRACE... -o run.duckdb`: build the execution database."""
from __future__ import annotations

import sys
import time

from roscope.commands import _common as C


def register(sub) -> None:
    p = sub.add_parser(
        "load",
        help="build the execution database (DuckDB) from traces",
        description="Decode the traces and store roscope's execution model (docs/model.md) in a DuckDB file. "
        "The file is written under a temporary name and renamed when complete.",
    )
    C.add_inputs(p, db=False)
    p.add_argument("-o", "--output", required=True,
                   help="the DuckDB file to write (never overwritten without --force; --force replaces only a regular file)")
    p.add_argument("--parquet", metavar="DIR", help="also write each table as DIR/<table>.parquet")
    p.add_argument("--no-heuristics", action="store_true", help="make only exact transport links")
    p.add_argument("--no-sync", action="store_true",
                   help="keep every host's raw clock (by default the clocks of several hosts are synchronized from "
                        "the messages between them; the clock_sync table has each host's map)")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    C.add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from roscope.db import write

    t0 = time.perf_counter()
    res = write(args.inputs, args.output, heuristics=not args.no_heuristics, parquet_dir=args.parquet, force=args.force,
                sync=not args.no_sync)
    dt = time.perf_counter() - t0
    try:
        if args.json:
            C.print_json({"output": res.db_path, "seconds": dt, "stats": res.stats, "tables": res.tables,
                          "warnings": res.warnings, "losses": res.losses})
        else:
            w = C.TextOut(sys.stdout).write
            w(f"wrote {res.db_path} in {dt:.2f} s ({res.stats.get('events', 0):,} events)\n")
            for name, n in res.tables.items():
                w(f"  {name:<16} {n:>12,} rows\n")
    finally:
        C.report_from(res)
    return 0
