"""`roscope export TRACE...|DB -o FILE [--format perfetto]` (or `--perfetto FILE`): the
execution model as a Perfetto trace (TrackEvent protobuf) for the Perfetto UI
(docs/report.md). The format comes from `--format`, else from FILE's extension."""
from __future__ import annotations

import os
import sys

from roscope import files
from roscope.commands import _common as C
from roscope.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="export the model as a Perfetto trace (callback runs, executor states, messages, links as flows)",
        description="Writes a Perfetto trace (TrackEvent protobuf, open it in the Perfetto UI): a track per process and "
        "thread (named by node and executor), callback runs and executor states as slices, publications and takes as "
        "instants, transport and causal links as flow arrows, lost-event gaps as slices.",
    )
    C.add_inputs(p)
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="FILE",
                     help="the file to write, in the format of its extension (" + ", ".join(
                         f"{e}: {f}" for e, f in FORMATS.items()) + ") or of --format")
    out.add_argument("--perfetto", metavar="FILE", help="a Perfetto trace to write (as -o FILE --format perfetto)")
    p.add_argument("--format", choices=sorted(set(FORMATS.values())), help="the output's format, whatever its extension")
    p.add_argument("--no-causal", action="store_true", help="draw only transport links (no causal-link arrows)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    C.add_heuristics(p)
    C.add_progress(p)
    p.set_defaults(func=run)


#: File extensions and the format each means.
FORMATS = {".pftrace": "perfetto", ".perfetto-trace": "perfetto", ".perfetto": "perfetto"}


def output_of(args) -> tuple[str, str]:
    """(the file to write, its format) from -o/--perfetto and --format."""
    if args.perfetto is not None:
        if args.format not in (None, "perfetto"):
            raise InputError(f"--perfetto {C.escape(args.perfetto)} writes a Perfetto trace, not --format {args.format}")
        return args.perfetto, "perfetto"
    if args.format:
        return args.output, args.format
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in FORMATS:
        raise InputError(f"{C.escape(args.output)}: no format known for {C.escape(ext or 'a file without extension')} "
                         f"(extensions: {', '.join(FORMATS)}); name one with --format "
                         f"({', '.join(sorted(set(FORMATS.values())))})")
    return args.output, FORMATS[ext]


def run(args) -> int:
    from roscope.export import perfetto

    path, _fmt = output_of(args)  # one format today: perfetto
    files.check(path, force=args.force, inputs=args.inputs, what="Perfetto file")  # before any work
    with C.session(args, "export") as s:
        db = s.open_inputs()
        causal = None
        if not args.no_causal:
            import numpy as np

            from roscope.flow.slices import context

            s.progress.phase("causal links")
            # the core's table of links read by DuckDB into numpy arrays (no pyarrow)
            links = db.con.from_arrow(context(db).model.causal_links(True)).select("in_run_id", "out_publication_id")
            causal = {k: np.asarray(v) for k, v in links.fetchnumpy().items()}
        s.progress.phase("writing the Perfetto trace")
        res = perfetto.export(db, path, causal=causal, force=args.force, inputs=args.inputs)
    C.report_from(db)
    print(f"perfetto: {C.escape(path)}: {res['slices']:,} callback runs, {res['publications']:,} publications, "
          f"{res['takes']:,} takes, {res['transport_flows']:,} transport and {res['causal_flows']:,} causal flows, "
          f"{res['bytes'] / 1e6:.1f} MB", file=sys.stderr)
    print(C.escape(os.path.abspath(path)))
    return 0
