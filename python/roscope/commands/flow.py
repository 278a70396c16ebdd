"""`roscope flow`: end-to-end data flows, paths and latency breakdown; one message's graph."""
from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "flow",
        help="end-to-end paths between topics with latency breakdown, or one message's flow graph",
        description="Data flows from topics matching --from to topics matching --to (regexes), grouped by path, "
        "with end-to-end latency split into communication, idle and computation; or, with --message, the "
        "flow graph of one publication, forward and backward. Results are stored in the database.",
    )
    p.add_argument("input", metavar="TRACE|DB")
    p.add_argument("--from", dest="from_re", help="regex of input topics")
    p.add_argument("--to", dest="to_re", help="regex of output topics")
    p.add_argument("--message", type=int, metavar="ID", help="publication_id of the message whose flow graph to build")
    p.add_argument("--implicit", choices=["auto", "all", "annotations", "none"], default="auto",
                   help="intra-node dependencies: annotations where present and every callback pair elsewhere (auto), "
                        "every pair (all), annotations only, or none")
    p.add_argument("--no-exact-links", action="store_true",
                   help="ignore transport links and take the newest publication on the topic (the paper's D_cp)")
    p.add_argument("--no-heuristics", action="store_true", help="use only exact transport links (traces only)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _ms(v) -> str:
    return "-" if v is None else f"{v / 1e6:.3f}"


def run(args) -> int:
    import roscope
    from roscope import flow as fl

    db = roscope.open(args.input, heuristics=not args.no_heuristics, read_only=False)
    ctx = fl.context(db)
    nlinks = fl.causal_links(db, ctx)
    if args.message is not None:
        g = fl.message_graph(db, args.message, ctx)
        if args.json:
            json.dump(g, sys.stdout, indent=1, default=str)
            sys.stdout.write("\n")
        else:
            print(f"message p{args.message}: {len(g['publications'])} publications, {len(g['runs'])} callback runs, "
                  f"{len(g['edges'])} edges")
            for e in g["edges"]:
                a, b = g["nodes"].get(e["from"], {}), g["nodes"].get(e["to"], {})
                def lab(x, n):
                    if x.startswith("p"):
                        return f"{x} [{n.get('topic')}] @{n.get('publish_ts')}"
                    return f"{x} {n.get('node')} {n.get('kind')} @{n.get('start_ts')}"
                print(f"  {lab(e['from'], a):<70} --{e['kind']}--> {lab(e['to'], b)}")
        return 0
    if not args.from_re or not args.to_re:
        raise ValueError("give --from and --to (topic regexes), or --message ID")
    summary = fl.data_flows(db, args.from_re, args.to_re, ctx, implicit=args.implicit, exact_links=not args.no_exact_links)
    paths = fl.path_stats(db)
    comps = fl.component_stats(db)
    if args.json:
        json.dump({"summary": summary, "causal_links": nlinks, "paths": paths, "components": comps}, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return 0
    print(f"{summary['flows']:,} data flows on {summary['paths']} paths from {summary['outputs']:,} output messages "
          f"({summary['seconds'] * 1e3:.1f} ms, {summary['us_per_flow'] or 0:.2f} µs per flow); {nlinks:,} causal links")
    for p in paths:
        print(f"\npath {p['path_id']} ({p['flows']} flows): {p['path']}")
        print(f"  {'ms':<14}" + "".join(f"{c:>10}" for c in ("min", "mean", "std", "Q25", "Q50", "Q75", "P99", "max")))
        for comp in ("latency", "communication", "idle", "computation"):
            s = p[comp]
            print(f"  {comp:<14}" + "".join(f"{_ms(s[k]):>10}" for k in ("min", "mean", "std", "q25", "q50", "q75", "p99", "max")))
    if comps["communication_by_topic"]:
        print("\ncommunication by topic (ms): mean / p99 / max")
        for r in comps["communication_by_topic"]:
            print(f"  {r['topic']:<50} {_ms(r['mean']):>9} {_ms(r['p99']):>9} {_ms(r['max']):>9}  n={r['n']}")
    if comps["idle_by_node"]:
        print("\nidle by node (ms): mean / p99 / max")
        for r in comps["idle_by_node"]:
            print(f"  {r['node']:<50} {_ms(r['mean']):>9} {_ms(r['p99']):>9} {_ms(r['max']):>9}  n={r['n']}")
    if comps["computation_by_callback"]:
        print("\ncomputation by callback (ms): mean / p99 / max, callback duration mean")
        for r in comps["computation_by_callback"]:
            what = r["topic"] or r["kind"]
            print(f"  {str(r['node']) + ' ' + str(what):<50} {_ms(r['mean']):>9} {_ms(r['p99']):>9} {_ms(r['max']):>9} {_ms(r['callback_mean_ns']):>9}")
    return 0
