"""`roscope stats TRACE|DB`: callback, topic and node statistics."""
from __future__ import annotations

import json
import math
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "stats",
        help="per-callback, per-topic and per-node statistics",
        description="Callback durations, timer periods and jitter, CPU shares, topic rates and "
        "publication-to-callback latencies, from traces or a database written by `roscope load`.",
    )
    p.add_argument("inputs", nargs="+", metavar="TRACE|DB")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.add_argument("--no-heuristics", action="store_true", help="use only exact transport links (traces only)")
    p.set_defaults(func=run)


def _clean(v):
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return v
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def _records(rows: list[dict]) -> list[dict]:
    return [{k: _clean(v) for k, v in row.items()} for row in rows]


def collect(db) -> dict:
    from roscope import stats as st

    return {
        "summary": st.summary(db),
        "callbacks": _records(st.callbacks(db)),
        "topics": _records(st.topics(db)),
        "nodes": _records(st.nodes(db)),
        "warnings": db.warnings,
        "losses": db.losses,
    }


def _us(v) -> str:
    return "-" if v is None else f"{v / 1e3:.1f}"


def _short(s, n):
    s = "-" if s is None else str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def render_text(d: dict, out=sys.stdout) -> None:
    w = out.write
    s = d["summary"]
    w(f"{s['duration_ns'] / 1e9:.3f} s traced: {s['processes']} processes, {s['nodes']} nodes, "
      f"{s['callbacks']} callbacks, {s['callback_runs']:,} callback runs, {s['publications']:,} publications, "
      f"{s['takes']:,} takes, {s['links']:,} transport links {s['links_by_method']}\n")
    if s["events_discarded"] or s["packets_lost"]:
        w(f"WARNING: the tracer lost {s['events_discarded']:,} events and {s['packets_lost']:,} packets: "
          "statistics near those gaps are incomplete\n")
    w("\nCallbacks (durations in µs)\n")
    w(f"  {'node':<28} {'kind':<12} {'topic / period':<26} {'count':>7} {'min':>8} {'mean':>8} {'p50':>8} "
      f"{'p90':>8} {'p99':>8} {'max':>9} {'period':>9} {'jitter':>8} {'cpu%':>6}  symbol\n")
    for c in d["callbacks"]:
        what = c["topic"] if c["topic"] else (f"{c['timer_period_ns'] / 1e6:g} ms" if c.get("timer_period_ns") else "-")
        w(f"  {_short(c['node'] or c['procname'], 28):<28} {c['kind']:<12} {_short(what, 26):<26} {c['count']:>7} "
          f"{_us(c['min_ns']):>8} {_us(c['mean_ns']):>8} {_us(c['p50_ns']):>8} {_us(c['p90_ns']):>8} "
          f"{_us(c['p99_ns']):>8} {_us(c['max_ns']):>9} {_us(c['period_mean_ns']):>9} {_us(c['period_jitter_ns']):>8} "
          f"{100 * (c['cpu_share'] or 0):>6.2f}  {_short(c['symbol'], 60)}\n")
    w("\nTopics (latency = publication to callback start, µs)\n")
    w(f"  {'topic':<36} {'pubs':>5} {'subs':>5} {'msgs':>7} {'rate Hz':>8} {'deliv':>7} {'min':>8} {'mean':>8} "
      f"{'p50':>8} {'p99':>8} {'max':>9} {'unmatched':>9} {'drops':>6}\n")
    for t in d["topics"]:
        um = t["unmatched_publications"]
        w(f"  {_short(t['topic'], 36):<36} {t['publishers']:>5} {t['subscriptions']:>5} {t['publications']:>7} "
          f"{t['rate_hz']:>8.2f} {t['deliveries']:>7} {_us(t['lat_min_ns']):>8} {_us(t['lat_mean_ns']):>8} "
          f"{_us(t['lat_p50_ns']):>8} {_us(t['lat_p99_ns']):>8} {_us(t['lat_max_ns']):>9} {('-' if um is None else um):>9} "
          f"{('-' if t['drops'] is None else int(t['drops'])):>6}\n")
    w("\nNodes\n")
    w(f"  {'node':<40} {'host':<14} {'pid':>8} {'callbacks':>9} {'runs':>8} {'busy ms':>10} {'cpu%':>6} {'pubs':>7}\n")
    for n in d["nodes"]:
        w(f"  {_short(n['node'], 40):<40} {_short(n['hostname'], 14):<14} {n['pid']:>8} {n['callbacks']:>9} {n['runs']:>8} "
          f"{n['busy_ns'] / 1e6:>10.2f} {100 * (n['cpu_share'] or 0):>6.2f} {n['publications']:>7}\n")


def run(args) -> int:
    import roscope

    if len(args.inputs) == 1:
        db = roscope.open(args.inputs[0], heuristics=not args.no_heuristics)
    else:
        db = roscope.open(args.inputs, heuristics=not args.no_heuristics)
    d = collect(db)
    if args.json:
        json.dump(d, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        render_text(d)
    for w in d["warnings"]:
        print(f"roscope: warning: {w}", file=sys.stderr)
    for f, ev, pk in d["losses"]:
        print(f"roscope: warning: {f}: {ev:,} events discarded, {pk:,} packets lost by the tracer", file=sys.stderr)
    return 0
