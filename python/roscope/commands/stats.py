"""`roscope stats TRACE...|DB`: callback, topic, service and node statistics.

The numbers come from roscope.stats (library); this module only renders them:
text tables in milliseconds, JSON in nanoseconds (docs/analyses.md).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from roscope.commands import _common as C

if TYPE_CHECKING:
    from roscope.database import Database

#: The statistics columns of the text tables (JSON keys <prefix><name>_ns).
_STATS = ("min", "mean", "std", "p50", "p90", "p99", "max")


def register(sub) -> None:
    p = sub.add_parser(
        "stats",
        help="per-callback, per-topic and per-node statistics",
        description="Callback durations, timer periods and jitter, CPU shares, topic rates and "
        "publication-to-callback latencies, from traces or a database written by `roscope load`. "
        "Text in milliseconds, JSON in nanoseconds (docs/analyses.md).",
    )
    C.add_inputs(p)
    C.add_json(p)
    C.add_heuristics(p)
    p.add_argument("--window", metavar="START:END",
                   help="only the callback runs, publications, takes and deliveries that start in [START, END), in "
                        "seconds from the trace's first event (exact to the ns, e.g. what `roscope watch --json` "
                        "prints as stats_window); rates per second of the window, no drops")
    p.set_defaults(func=run)


def collect(db: Database, window=None) -> dict:
    """Everything `roscope stats` shows, as JSON-ready data (durations in ns);
    `window`: (start, end) ns, the callbacks and topics of that window only."""
    from roscope import stats as st

    return C.clean({
        "summary": st.summary(db),
        **({"window": {"start_ns": window[0], "end_ns": window[1]}} if window else {}),
        "callbacks": st.callbacks(db, window),
        "topics": st.topics(db, window),
        "services": st.services(db),
        "nodes": st.nodes(db),
        "warnings": db.warnings,
        "losses": db.losses,
    })


def _head(cols) -> str:
    return "".join(f" {c:>9}" for c in cols)


def _stats(row: dict, prefix: str = "") -> str:
    return "".join(f" {C.ms(row.get(f'{prefix}{n}_ns')):>9}" for n in _STATS)


def _count(v) -> str:
    return "-" if v is None else f"{int(v):,}"


def _summary(s: dict, w) -> None:
    methods = ", ".join(f"{C.escape(k)} {v:,}" for k, v in s["links_by_method"].items())
    w(f"{s['duration_ns'] / 1e9:.3f} s traced: {s['processes']} processes, {s['nodes']} nodes, "
      f"{s['callbacks']} callbacks, {s['callback_runs']:,} callback runs, {s['publications']:,} publications, "
      f"{s['takes']:,} takes, {s['links']:,} transport links" + (f" ({methods})" if methods else "") + "\n")
    if s["events_discarded"] or s["packets_lost"]:
        w(f"WARNING: the tracer lost {s['events_discarded']:,} events and {s['packets_lost']:,} packets: "
          "statistics near those gaps are incomplete\n")


def _callbacks(rows: list[dict], w) -> None:
    w("\nCallbacks (durations, timer period and jitter in ms)\n")
    w(f"  {'node':<28} {'kind':<12} {'topic / period':<26} {'count':>7}" + _head(_STATS)
      + f" {'period':>9} {'jitter':>9} {'cpu%':>6}  symbol\n")
    for c in rows:
        what = c["topic"] if c["topic"] else (f"{c['timer_period_ns'] / 1e6:g} ms" if c.get("timer_period_ns") else None)
        w(f"  {C.cell(c['node'] or c['procname'], 28):<28} {C.cell(c['kind'], 12):<12} {C.cell(what, 26):<26} "
          f"{_count(c['count']):>7}" + _stats(c)
          + f" {C.ms(c['period_mean_ns']):>9} {C.ms(c['period_jitter_ns']):>9} {C.pct(c['cpu_share'] or 0):>6}"
          f"  {C.cell(c['symbol'], 60)}\n")


def _topics(rows: list[dict], w) -> None:
    w("\nTopics (latency = publication to callback start, ms; unmatched: publications that no subscription "
      "received, takes matched to no publication)\n")
    w(f"  {'topic':<36} {'pubs':>5} {'subs':>5} {'msgs':>7} {'rate Hz':>8} {'deliv':>7}" + _head(_STATS)
      + f" {'unm pubs':>9} {'unm takes':>9} {'drops':>6}\n")
    for t in rows:
        w(f"  {C.cell(t['topic'], 36):<36} {t['publishers']:>5} {t['subscriptions']:>5} {t['publications']:>7} "
          f"{t['rate_hz']:>8.2f} {t['deliveries']:>7}" + _stats(t, "lat_")
          + f" {_count(t['unmatched_publications']):>9} {_count(t['unmatched_takes']):>9} {_count(t['drops']):>6}\n")


def _services(rows: list[dict], w) -> None:
    if not rows:
        return
    w("\nServices (server = request taken to response sent, at the server; round trip = request sent to response "
      "taken, at the client; ms)\n")
    w(f"  {'service':<36} {'server node':<20} {'calls':>6} {'answ':>6} {'what':<6}" + _head(_STATS) + "\n")
    for s in rows:
        for what, prefix in (("server", "server_"), ("rtt", "rtt_")):
            head = (f"  {C.cell(s['service'], 36):<36} {C.cell(s['server_node'], 20):<20} {s['calls']:>6} {s['answered']:>6}"
                    if what == "server" else f"  {'':<36} {'':<20} {'':>6} {'':>6}")
            w(head + f" {what:<6}" + _stats(s, prefix) + "\n")


def _nodes(rows: list[dict], w) -> None:
    w("\nNodes (busy = time in callbacks, ms)\n")
    w(f"  {'node':<40} {'host':<14} {'pid':>8} {'callbacks':>9} {'runs':>8} {'busy':>12} {'cpu%':>6} {'pubs':>7}\n")
    for n in rows:
        w(f"  {C.cell(n['node'], 40):<40} {C.cell(n['hostname'], 14):<14} {n['pid']:>8} {n['callbacks']:>9} {n['runs']:>8} "
          f"{C.ms(n['busy_ns']):>12} {C.pct(n['cpu_share'] or 0):>6} {n['publications']:>7}\n")


def render_text(d: dict, out=None) -> None:
    w = C.TextOut(out or sys.stdout).write
    _summary(d["summary"], w)
    _callbacks(d["callbacks"], w)
    _topics(d["topics"], w)
    _services(d.get("services", []), w)
    _nodes(d["nodes"], w)


def parse_window(text: str, first: int) -> tuple[int, int]:
    """'START:END' (seconds from `first`, decimal, exact to the ns) -> (start, end) ns."""
    from decimal import Decimal, InvalidOperation

    from roscope.errors import InputError
    try:
        a, b = (int(Decimal(x.strip()) * 1_000_000_000) for x in text.split(":"))
    except (ValueError, InvalidOperation):
        raise InputError(f"--window {text!r}: give START:END in seconds from the trace's start, e.g. 1.5:2") from None
    if not 0 <= a < b:
        raise InputError(f"--window {text!r}: the window must start at or after 0 and end after its start")
    return first + a, first + b


def run(args) -> int:
    from roscope import stats as st

    db = C.open_inputs(args)
    try:
        window = parse_window(args.window, st.trace_span(db)[0]) if args.window else None
        C.show(args, collect(db, window), render_text)
    finally:
        C.report_from(db)
    return 0
