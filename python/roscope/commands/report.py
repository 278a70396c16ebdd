"""`roscope report TRACE...|DB`: one self-contained offline HTML report (docs/report.md).

The numbers are roscope's analyses (roscope.stats, roscope.flow, roscope.executor)
and the bounded queries of roscope.report; nothing is written into a database.
"""
from __future__ import annotations

import os
import sys
import time

from roscope import files
from roscope.commands import _common as C
from roscope.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "report",
        help="write one self-contained HTML report (overview, callbacks, topics, executors, data flows)",
        description="Writes one HTML file that works offline (every script and style inlined, nothing fetched): "
        "overview and trace quality, callback durations, timer periods, topic rates and latencies, executor states and "
        "thread utilization, data flows with their latency breakdown, and how the numbers were made. Every plot is "
        "aggregated or sampled first, so the file stays under 15 MB whatever the trace's length.",
    )
    C.add_inputs(p)
    p.add_argument("-o", "--output", default="report.html", metavar="FILE", help="the HTML file to write (default report.html)")
    p.add_argument("--from", dest="from_re", action="append", default=[], metavar="RE",
                   help="regex of input topics of a data-flow pair; repeat with --to for several pairs "
                        "(default: sources and sinks found automatically)")
    p.add_argument("--to", dest="to_re", action="append", default=[], metavar="RE", help="regex of output topics of a pair")
    p.add_argument("--paths", metavar="FILE",
                   help="named paths (a paths file or CARET's architecture file, docs/paths.md) as the data-flow pairs, "
                        "instead of --from/--to or the automatic sources and sinks")
    C.add_window(p, "the timeline's window, in seconds from the trace's start (default: a window in the middle)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    C.add_heuristics(p)
    C.add_progress(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from roscope import report
    from roscope.flow import FlowRequest

    if len(args.from_re) != len(args.to_re):
        raise InputError(f"give --from and --to in pairs ({len(args.from_re)} --from, {len(args.to_re)} --to)")
    if args.paths is not None and args.from_re:
        raise InputError("--paths names the data-flow pairs: leave out --from and --to")
    requests = [FlowRequest(a, b) for a, b in zip(args.from_re, args.to_re)]
    named = None
    if args.paths is not None:
        from roscope import paths

        named = paths.load(args.paths)  # read before the trace: a wrong file fails at once
    files.check(args.output, force=args.force, inputs=args.inputs, what="HTML file")  # before any work
    t0 = time.monotonic()
    with C.session(args, "report") as s:
        db = s.open_inputs()
        window = C.window_ns(args.window, db, within=True)
        if named is not None:
            requests = [req for _named, req in paths.requests(named, db)]
        s.progress.phase("building the report")
        res = report.write(db, args.output, force=args.force, inputs=args.inputs, flows=requests, window=window,
                           sources=list(args.inputs))
    C.report_from(db)
    print(f"report: {C.escape(res['path'])} ({res['bytes'] / 1e6:.1f} MB, {time.monotonic() - t0:.1f} s)", file=sys.stderr)
    print(C.escape(os.path.abspath(res["path"])))
    return 0
