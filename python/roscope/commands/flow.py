"""`roscope flow TRACE...|DB`: end-to-end data flows, paths and latency breakdown; one message's graph.

The analyses are roscope.flow's (library): this module turns the arguments into
one `roscope.flow.FlowRequest`, hands it to `roscope.flow.analyse`, and renders
what comes back: text in milliseconds, JSON in nanoseconds (docs/analyses.md). The
database is opened read-only and nothing is written into it unless --store.
"""
from __future__ import annotations

import sys

from roscope import choices
from roscope.commands import _common as C
from roscope.errors import InputError

#: The statistics columns of the path tables (JSON keys <name>_ns).
_STATS = ("min", "mean", "std", "p25", "p50", "p75", "p90", "p99", "max")
#: The statistics shown per component (topic, node, callback).
_COMP_STATS = ("mean", "p50", "p99", "max")


def register(sub) -> None:
    p = sub.add_parser(
        "flow",
        help="end-to-end paths between topics with latency breakdown, or one message's flow graph",
        description="Data flows from topics matching --from to topics matching --to (regexes), grouped by path, "
        "with end-to-end latency split into communication, idle and computation; or, with --message, the "
        "flow graph of one publication, forward and backward. Text in milliseconds, JSON in nanoseconds "
        "(docs/analyses.md). Nothing is written into a database unless --store. A broad selection on a large trace "
        "can mean millions of candidate flows: narrow it with a narrower --to (anchor it: '^/control/cmd$'), "
        "--exclude RE for topics and nodes no flow should pass through (e.g. /tf, /diagnostics, a simulator), or "
        "--max-flows N; progress (outputs searched, flows, time left) shows on a terminal, and a search whose pace "
        "makes it huge says so in its first seconds. --paths FILE takes named paths (docs/paths.md).",
    )
    C.add_inputs(p, memory=fl_memory())
    p.add_argument("--from", dest="from_re", help="regex of input topics")
    p.add_argument("--to", dest="to_re", help="regex of output topics")
    p.add_argument("--paths", metavar="FILE",
                   help="named paths instead of --from/--to: a paths file (YAML: each path's topics in order, optional "
                        "callbacks, per-node input/output contexts, exclusions) or CARET's architecture file "
                        "(named_paths or path_name_aliases, message_contexts, variable_passings); each path's flows from its first to its last topic, the "
                        "paths through its topics in order (docs/paths.md)")
    p.add_argument("--path-name", action="append", metavar="NAME", help="with --paths: only this named path (repeatable)")
    p.add_argument("--message", type=C.int_range(0, 2**63 - 1), metavar="ID",
                   help="publication_id of the message whose flow graph to build")
    p.add_argument("--implicit", choices=choices.IMPLICIT_MODES, default=choices.IMPLICIT_DEFAULT,
                   help="intra-node dependencies: annotations where present and every callback pair elsewhere (auto), "
                        "every pair (all), annotations only, or none")
    p.add_argument("--fallback", choices=choices.FALLBACK_RULES, default=None,
                   help="on nodes without annotations or --deps, which callback pairs are assumed to depend (auto): "
                        "every timer/subscription pair; the same but for two callbacks that each publish in most "
                        "of their runs (two pipelines; the default); or only subscriptions into timers "
                        "(docs/analyses.md has the measured precision and recall)")
    p.add_argument("--definition", choices=choices.DEFINITIONS,
                   help="also show each path's response time under this definition, with CARET's cases (best, worst, "
                        "all, worst_with_external): dataflow = input's publishing callback start to output publication; "
                        "caret = input publication to the start (or, with --end callback_end, the end) of the callback "
                        "that received the output")
    p.add_argument("--end", choices=choices.CHOSEN_ENDS,
                   help="with --definition caret: where a path ends (default callback_start)")
    C.add_window(p, "the paths' statistics over the flows that end (their output's publication) in [START, END), in "
                    "seconds from the trace's first event (as roscope stats --window; what roscope watch prints)")
    p.add_argument("--exclude", action="append", metavar="RE", default=[],
                   help="leave out topics and callbacks matching RE (callbacks by label, `node topic-or-timer symbol`, "
                        "so a node name excludes its callbacks); repeatable; what was excluded is reported")
    p.add_argument("--deps", metavar="FILE",
                   help="intra-node dependencies from `roscope deps` (source analysis) instead of the fallback on the "
                        "nodes it describes; annotations in the trace still win")
    p.add_argument("--uncertain", choices=choices.UNCERTAIN_MODES, default=choices.UNCERTAIN_MODES[0],
                   help="flows through an intra-node dependency that a race makes uncertain (a run of the callback "
                        "depended on overlapped, on another thread, the run that depends on it): keep them, flagged and "
                        "counted (default), or drop them")
    p.add_argument("--all-paths", action="store_true",
                   help="keep one flow per path reaching an (input, output) message pair (the data-flow paper), "
                        "not one flow per pair")
    p.add_argument("--max-flows", type=C.int_range(0, 2**62), default=fl_caps()[1], metavar="N",
                   help="stop at the first output message after N candidate flows (before one flow per message pair "
                        "is kept), and say where: bounds the search's time (default %(default)s; 0: no cap)")
    p.add_argument("--max-flows-per-output", type=C.int_range(0, 2**62), default=fl_caps()[0], metavar="N",
                   help="at most N candidate flows per output message; capped outputs are counted and named "
                        "(default %(default)s; 0: no cap)")
    p.add_argument("--slice", type=C.int_range(0, 2**62), default=fl_slice(), metavar="PUBS",
                   help="above PUBS publications, search over slices of the model of about PUBS publications each, "
                        "so that memory depends on the slice, not on the trace; the results are the same "
                        "(default %(default)s; 0: always the whole model; docs/analyses.md, Slices)")
    p.add_argument("--no-exact-links", action="store_true",
                   help="ignore transport links and take the newest publication on the topic (the paper's D_cp)")
    p.add_argument("--store", action="store_true",
                   help="store the results (causal_links, data_flows, data_flow_steps, data_flow_segments, paths) "
                        "as tables in the database, which must be a file written by `roscope load`, writable")
    C.add_heuristics(p)
    C.add_json(p)
    C.add_wide(p)
    C.add_progress(p)
    # A smaller DuckDB budget than the other verbs': the flow's results spill to disk.
    p.set_defaults(func=run, memory=fl_memory())


def fl_memory() -> int:
    from roscope import flow as fl

    return fl.FLOW_MEMORY


def fl_slice() -> int:
    from roscope import flow as fl

    return fl.SLICE_PUBLICATIONS


def fl_caps() -> tuple[int, int]:
    """The library's default caps (per output, in all)."""
    from roscope import flow as fl

    return fl.MAX_FLOWS_PER_OUTPUT, fl.MAX_FLOWS


def request_options(args) -> dict:
    """The `roscope.flow.FlowRequest` fields of the arguments other than --from/--to."""

    return dict(
        implicit=args.implicit, fallback=args.fallback or choices.FALLBACK_RULE, deps=args.deps,
        exact_links=not args.no_exact_links, all_paths=args.all_paths, exclude=tuple(args.exclude),
        max_flows_per_output=args.max_flows_per_output or None, max_flows=args.max_flows or None,
        slice_publications=args.slice or None, store=args.store, definition=args.definition, end=args.end,
        memory=args.memory, uncertain=args.uncertain)


def request(args):
    """The `roscope.flow.FlowRequest` of the arguments (InputError for a wrong combination)."""
    from roscope import flow as fl

    return fl.FlowRequest(args.from_re, args.to_re, **request_options(args))


def _run_named(args) -> int:
    from roscope import paths as P

    pf = P.load(args.paths)  # read before the trace: a wrong file fails at once
    with C.session(args, "flow") as s:
        db = s.open_inputs(lambda: open_for(args))
        d = _named(args, s.progress, db, pf)
    C.show(args, d, lambda r: _named_text(r, wide=args.wide))
    C.report(d["named_paths"][0]["warnings"] if d["named_paths"] else db.warnings, db.losses)
    return 0


def open_for(args):
    """The database of `args.inputs`, read-only unless --store (which needs a database file)."""
    from roscope.database import is_db

    if getattr(args, "store", False) and not any(is_db(p) for p in args.inputs):
        raise InputError("--store stores results in a database: give a database written by `roscope load` "
                         "(traces are analysed in memory)")
    return C.open_inputs(args, writable=getattr(args, "store", False))


def _graph_text(g: dict, w) -> None:
    w(f"message p{g['publication_id']}: {len(g['publications'])} publications, {len(g['runs'])} callback runs, "
      f"{len(g['edges'])} edges\n")

    def label(x: str, n: dict) -> str:
        if x.startswith("p"):
            return f"{x} [{n.get('topic')}] @{n.get('publish_ts')}"
        return f"{x} {n.get('node')} {n.get('kind')} @{n.get('start_ts')}"

    for e in g["edges"]:
        a, b = g["nodes"].get(e["from"], {}), g["nodes"].get(e["to"], {})
        w(f"  {label(e['from'], a):<70} --{e['kind']}--> {label(e['to'], b)}\n")


def _head(cols) -> str:
    return "".join(f" {c:>9}" for c in cols)


def render_text(d: dict, out=None, wide: bool = False) -> None:
    w = C.TextOut(out or sys.stdout).write
    s = d["summary"]
    w(f"{s['flows']:,} data flows on {s['paths']} paths from {s['outputs']:,} of {s['outputs_total']:,} output messages "
      f"({C.ms(s['compute_ns'])} ms, {(s['ns_per_flow'] or 0) / 1e3:.2f} µs per flow)\n")
    rule = ("one flow per (input, output) message pair" + (f" ({s['duplicates_dropped']:,} more candidate paths of the "
            "same pairs dropped; --all-paths keeps them)" if s["duplicates_dropped"] else "")
            if s["one_flow_per_pair"] else "one flow per path of each pair")
    w(f"  {rule}; intra-node dependencies: {s['implicit']}{' + source analysis' if s['deps'] else ''}")
    if s["flows"]:
        w(f"; {s['flows_on_fallback']:,} flows ({C.pct(s['fallback_share'])}%) rest on fallback edges")
    if s["flows_from_publications"]:
        w(f"; {s['flows_from_publications']:,} start at a publication made outside any callback")
    w("\n")
    if s["flows_uncertain"] or s["uncertain_dropped"]:
        w(f"  uncertain flows (races between threads): {s['flows_uncertain']:,} kept, {s['uncertain_dropped']:,} dropped "
          f"(--uncertain {s['uncertain']})\n")
    ex = s["excluded"]
    if ex["patterns"]:
        w(f"  excluded: {len(ex['topics'])} topics, {len(ex['callbacks'])} callbacks "
          f"({C.escape(', '.join((ex['topics'] + ex['callbacks'])[:8]))}{', ...' if len(ex['topics'] + ex['callbacks']) > 8 else ''})\n")
    # Causal links are message-to-message links (docs/analyses.md); flows need none
    # where the trace has no transport links (they take the newest publication).
    w(f"  causal links between messages: {d['causal_links']:,}"
      + (" (the trace has no transport links: flows take the newest publication on each topic)"
         if not d["causal_links"] and s["flows"] else "") + "\n")
    for p in d["paths"]:
        fb = f", {p['fallback_edges']} fallback edge{'s' if p['fallback_edges'] != 1 else ''}" if p["fallback_edges"] else ""
        w(f"\npath {p['path_id']} ({p['flows']} flows{fb}): {C.escape(p['path'])}\n")
        w(f"  {'ms':<14}" + _head(_STATS) + "\n")
        for comp in ("latency", "communication", "idle", "computation"):
            st = p[comp]
            w(f"  {comp:<14}" + "".join(f" {C.ms(st[f'{k}_ns']):>9}" for k in _STATS) + "\n")
    _response_text(d.get("response_times"), w)
    comps = d["components"]
    sections = [("communication_by_topic", "communication by topic", lambda r: r["topic"]),
                ("idle_by_node", "idle by node", lambda r: r["node"]),
                ("computation_by_callback", "computation by callback",
                 lambda r: f"{r['node']} {r['topic'] or r['kind']}")]
    for key, title, name in sections:
        if not comps[key]:
            continue
        extra = key == "computation_by_callback"
        nw = C.width(comps[key], name, 50, wide)
        w(f"\n{title} (ms)\n  {'':<{nw}} {'count':>7}" + _head(_COMP_STATS) + (f" {'cb mean':>9}" if extra else "") + "\n")
        for r in comps[key]:
            w(f"  {C.cell(name(r), nw):<{nw}} {r['count']:>7,}" + "".join(f" {C.ms(r[f'{k}_ns']):>9}" for k in _COMP_STATS)
              + (f" {C.ms(r['callback_mean_ns']):>9}" if extra else "") + "\n")


def _response_text(rts, w) -> None:
    """Response time per path under the chosen definition, CARET's cases as rows."""
    if not rts:
        return
    r0 = rts[0]
    defn = ("input's publishing callback start -> output publication" if r0["definition"] == "dataflow" else
            f"input publication -> {r0['end'].replace('_', ' ')} of the callback receiving the output")
    w(f"\nresponse time ({r0['definition']}: {defn}; ms)\n")
    for r in rts:
        where = f" -> {C.escape(r['end_node'])} ({C.escape(r['end_topic'] or '')})" if r["end_node"] else ""
        w(f"  path {r['path_id']}{where}\n    {'case':<20} {'count':>7}" + _head(_STATS) + "\n")
        for case, st in r["cases"].items():
            if st:
                w(f"    {case:<20} {st['count']:>7,}" + "".join(f" {C.ms(st[f'{k}_ns']):>9}" for k in _STATS) + "\n")
        if r.get("left_out"):
            w("    left out (the first output: its cycle may begin before the trace): "
              + ", ".join(f"{case} {n:,}" for case, n in r["left_out"].items()) + "\n")


def _named(args, prog, db, pf) -> dict:
    """`--paths FILE` (`pf`, its `roscope.paths.PathsFile`): per named path, `analyse` of
    its request with only the paths that go through its topics (and callbacks), and how
    many others the search found."""
    from roscope import flow as fl
    from roscope import paths as P

    base = request_options(args)
    out = {"paths_file": pf.source, "format": pf.format, "named_paths": []}
    for named, req in P.requests(pf, db, args.path_name, **base):
        prog.phase(f"named path {named.name}")
        d = fl.analyse(db, req)
        kept = [p for p in d["paths"] if P.matches(named, p["path"])]
        d["other_paths"] = len(d["paths"]) - len(kept)
        d["paths"] = kept
        if "response_times" in d:  # the kept paths', ending where the file says the path ends
            ids = {p["path_id"] for p in kept}
            d["response_times"] = [r for r in d["response_times"] if r["path_id"] in ids and (
                named.end is None or (r["end_node"], r["end_topic"]) == named.end)]
        out["named_paths"].append({"name": named.name, "topics": list(named.topics), "callbacks": list(named.callbacks),
                                   "end": list(named.end) if named.end else None,
                                   "from_re": req.from_re, "to_re": req.to_re, **d})
    return C.clean(out)


def _named_text(d: dict, out=None, wide: bool = False) -> None:
    w = C.TextOut(out or sys.stdout).write
    for n in d["named_paths"]:
        w(f"named path {C.escape(n['name'])} ({d['format']} file): {' -> '.join(C.escape(t) for t in n['topics'])}"
          + (f"; callbacks {', '.join(C.escape(c) for c in n['callbacks'])}" if n["callbacks"] else "")
          + (f"; ends at {C.escape(n['end'][0])} ({C.escape(n['end'][1])})" if n.get("end") else "")
          + f"; {len(n['paths'])} path(s) through them"
          + (f", {n['other_paths']} other path(s) between its ends left out" if n["other_paths"] else "") + "\n")
        render_text(n, out, wide)
        w("\n")


def run(args) -> int:
    if args.paths is not None:
        if args.from_re is not None or args.to_re is not None or args.message is not None:
            raise InputError("--paths names the paths: leave out --from, --to and --message")
        return _run_named(args)
    if args.path_name:
        raise InputError("--path-name chooses among the paths of --paths FILE")
    if args.message is None and (args.from_re is None or args.to_re is None):
        raise InputError("give --from and --to (topic regexes), or --message ID")
    if args.message is not None and (args.from_re is not None or args.to_re is not None):
        raise InputError("--message draws one message's graph: leave out --from and --to")
    with C.session(args, "flow") as s:
        # Started before the library is imported: the first line shows at once.
        from roscope import flow as fl

        req = request(args) if args.message is None else None
        db = s.open_inputs(lambda: open_for(args))
        if req is None:
            s.progress.phase("one message's graph")
            g = fl.message_graph(db, args.message, slice_publications=args.slice or None)
        else:
            d = C.clean(fl.analyse(db, req, C.window_ns(args.window, db)))
    if req is None:
        if args.json:
            C.print_json(g)
        else:
            _graph_text(g, C.TextOut(sys.stdout).write)
        C.report_from(db)
        return 0
    C.show(args, d, lambda r: render_text(r, wide=args.wide))
    C.report(d["warnings"], d["losses"])
    return 0
