"""`roscope dump TRACE...`: every event as one JSON line, in time order."""
from __future__ import annotations

import sys

from roscope.trace import Trace


def register(sub) -> None:
    p = sub.add_parser(
        "dump",
        help="every event as one JSON line in time order (docs/dump-format.md)",
        description="Print every event of the traces as JSON lines: ts, name, trace, stream, context, payload.",
    )
    p.add_argument("traces", nargs="+", metavar="TRACE")
    p.add_argument("-n", "--limit", type=int, default=None, help="stop after N events")
    p.set_defaults(func=run)


def run(args) -> int:
    t = Trace(args.traces)
    try:
        t.dump(sys.stdout, args.limit)
    finally:
        for w in t.warnings:
            print(f"roscope: warning: {w}", file=sys.stderr)
        for f, ev, pk in t.losses:
            print(f"roscope: warning: {f}: {ev:,} events discarded, {pk:,} packets lost by the tracer", file=sys.stderr)
    return 0
