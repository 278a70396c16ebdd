"""`roscope export TRACE...|DB --perfetto FILE`: the execution model as a Perfetto
trace (TrackEvent protobuf) for the Perfetto UI (docs/report.md)."""
from __future__ import annotations

import os
import sys

from roscope import files
from roscope.commands import _common as C


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="export the model as a Perfetto trace (callback runs, executor states, messages, links as flows)",
        description="Writes a Perfetto trace (TrackEvent protobuf, open it in the Perfetto UI): a track per process and "
        "thread (named by node and executor), callback runs and executor states as slices, publications and takes as "
        "instants, transport and causal links as flow arrows, lost-event gaps as slices.",
    )
    C.add_inputs(p)
    p.add_argument("--perfetto", required=True, metavar="FILE", help="the .pftrace file to write")
    p.add_argument("--no-causal", action="store_true", help="draw only transport links (no causal-link arrows)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    C.add_heuristics(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from roscope.export import perfetto

    files.check(args.perfetto, force=args.force, inputs=args.inputs, what="Perfetto file")  # before any work
    db = C.open_inputs(args)
    try:
        causal = None
        if not args.no_causal:
            from roscope import flow as fl

            t = fl.causal_links(db)
            causal = {k: t.column(k).to_numpy(zero_copy_only=False) for k in ("in_run_id", "out_publication_id")}
        res = perfetto.export(db, args.perfetto, causal=causal, force=args.force, inputs=args.inputs)
    finally:
        C.report_from(db)
    print(f"perfetto: {C.escape(args.perfetto)}: {res['slices']:,} callback runs, {res['publications']:,} publications, "
          f"{res['takes']:,} takes, {res['transport_flows']:,} transport and {res['causal_flows']:,} causal flows, "
          f"{res['bytes'] / 1e6:.1f} MB", file=sys.stderr)
    print(C.escape(os.path.abspath(args.perfetto)))
    return 0
