"""`roscope dump TRACE...`: every event as one JSON line, in time order."""
from __future__ import annotations

import sys

from roscope.commands import _common as C
from roscope.trace import Trace

#: The largest --limit (the core counts events in an unsigned 64-bit integer).
MAX_LIMIT = 2**63 - 1


def register(sub) -> None:
    p = sub.add_parser(
        "dump",
        help="every event as one JSON line in time order (docs/dump-format.md)",
        description="Print every event of the traces as JSON lines: ts, name, trace, stream, context, payload.",
    )
    C.add_inputs(p, databases=False, merge=False)
    p.add_argument("-n", "--limit", type=C.int_range(0, MAX_LIMIT), default=None, metavar="N", help="stop after N events")
    p.set_defaults(func=run)


def run(args) -> int:
    t = Trace(args.inputs)
    try:
        t.dump(sys.stdout, args.limit)
    finally:
        C.report_from(t)
    return 0
