"""`roscope load TRACE... -o run.duckdb`: build the execution database."""
from __future__ import annotations

import sys
import time

from roscope.commands import _common as C
from roscope.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "load",
        help="build the execution database (DuckDB) from traces",
        description="Decode the traces and store roscope's execution model (docs/model.md) in a DuckDB file. "
        "The file is written under a temporary name and renamed when complete.",
    )
    C.add_inputs(p, databases=False)
    p.add_argument("-o", "--output",
                   help="the DuckDB file to write (never overwritten without --force; --force replaces only a regular file)")
    p.add_argument("--dataset", metavar="DIR",
                   help="instead of -o: append the traces as one run to the Parquet dataset DIR (created if missing; "
                        "docs/dataset.md); --force replaces a run of the same id")
    p.add_argument("--run-id", metavar="ID", help="with --dataset: the run's id (default: the recording's name, "
                   "else the trace directory's name)")
    p.add_argument("--config", action="append", metavar="KEY=VAL", default=[],
                   help="with --dataset: a configuration value stored with the run (repeatable)")
    p.add_argument("--commit", metavar="REV", help="with --dataset: the traced system's version (e.g. `git describe`)")
    p.add_argument("--recorded-at", metavar="TIME", help="with --dataset: when the run was recorded (ISO 8601; default: "
                   "the recording's start, else the trace's creation time)")
    p.add_argument("--parquet", metavar="DIR", help="also write each table as DIR/<table>.parquet")
    p.add_argument("--no-heuristics", action="store_true", help="make only exact transport links")
    p.add_argument("--no-sync", action="store_true", help=C.NO_SYNC_HELP)
    p.add_argument("--no-kernel", action="store_true",
                   help="leave out kernel scheduling data (perf.data beside the trace, LTTng sched events)")
    p.add_argument("--memory", type=C.size, metavar="SIZE", default=None,
                   help="DuckDB's memory cap while writing (e.g. 256M, 1G; default 64M, the least DuckDB works with; 0: DuckDB's own, 80%% of RAM)")
    p.add_argument("--window", type=C.number("s", 0, 1e6, hi_open=True), metavar="SECONDS", default=None,
                   help="records of this much trace time stay in memory while loading (default 1); older ones that "
                        "nothing will change are written out, so memory does not grow with the trace; 0: hold the "
                        "whole trace, then write")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    C.add_json(p)
    C.add_progress(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.dataset:
        return _run_dataset(args)
    if args.output is None:
        raise InputError("give the DuckDB file to write with -o FILE, or a dataset with --dataset DIR")
    if args.run_id or args.config or args.commit or args.recorded_at:
        raise InputError("--run-id, --config, --commit and --recorded-at go with --dataset DIR")
    t0 = time.perf_counter()
    window_ns = None if args.window is None else int(args.window * 1e9)
    C.check_recordings(args)
    with C.progress(args, "load"):
        from roscope.loading import write  # after the progress starts: DuckDB's import takes a while

        res = write(args.inputs, args.output, heuristics=not args.no_heuristics, parquet_dir=args.parquet,
                    force=args.force, sync=not args.no_sync, memory=args.memory, window_ns=window_ns,
                    kernel=not args.no_kernel)
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


def _run_dataset(args) -> int:
    if args.output or args.parquet:
        raise InputError("--dataset writes a dataset: leave out -o and --parquet")
    t0 = time.perf_counter()
    C.check_recordings(args)
    with C.progress(args, "load"):
        from roscope import dataset

        row, res = dataset.append(args.inputs, args.dataset, run_id=args.run_id,
                                  config=dataset.parse_config(args.config), commit=args.commit,
                                  recorded_at=args.recorded_at, force=args.force, heuristics=not args.no_heuristics,
                                  sync=not args.no_sync)
    dt = time.perf_counter() - t0
    try:
        if args.json:
            C.print_json({"dataset": args.dataset, "run": row, "seconds": dt, "stats": res.stats, "tables": res.tables,
                          "warnings": res.warnings, "losses": res.losses})
        else:
            C.TextOut(sys.stdout).write(f"added run {row['run_id']} to {args.dataset} in {dt:.2f} s "
                                        f"({row['events']:,} events, recorded {row['recorded_at'] or 'at an unknown time'})\n")
    finally:
        C.report_from(res)
    return 0
