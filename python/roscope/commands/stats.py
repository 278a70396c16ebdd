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
        description="Callback durations, timer periods and jitter, CPU shares, topic rates, publication-to-callback "
        "(delivery) and publication-to-take (transport) latencies, from traces or a database written by `roscope "
        "load`. Text in milliseconds, JSON in nanoseconds (docs/analyses.md). What the trace lacks (take events, "
        "transport links, callback events) is said in the warnings, with what the unmatched counts then mean.",
    )
    C.add_inputs(p)
    C.add_json(p)
    C.add_wide(p)
    C.add_heuristics(p)
    C.add_progress(p)
    C.add_window(p, "only the callback runs, publications, takes and deliveries that start in [START, END), in "
                    "seconds from the trace's first event (exact to the ns, e.g. what `roscope watch --json` "
                    "prints as stats_window; either side may be empty); rates per second of the window, no drops")
    p.set_defaults(func=run)


def collect(db: Database, window=None) -> dict:
    """Everything `roscope stats` shows, as JSON-ready data (durations in ns);
    `window`: (start, end) ns, the callbacks and topics of that window only."""
    from roscope import progress
    from roscope import stats as st

    prog = progress.current()
    prog.phase("summary")
    summary = st.summary(db)
    prog.phase("callback statistics")
    callbacks = st.callbacks(db, window)
    prog.phase("topic statistics")
    topics = st.topics(db, window)
    prog.phase("node statistics")
    return document(summary=summary, callbacks=callbacks, topics=topics, services=st.services(db), nodes=st.nodes(db),
                    warnings=db.warnings, losses=db.losses, window=window)


def document(*, summary: dict, callbacks: list, topics: list, services: list, nodes: list, warnings: list,
             losses: list, window=None) -> dict:
    """`roscope stats`'s JSON document from its parts (from a database, `collect`, or
    from the core, `roscope.stats_core`): the trace's warnings, then what the
    statistics must be read with (`stats.warnings`)."""
    from roscope import stats as st

    return C.clean({
        "summary": summary,
        **({"window": {"start_ns": window[0], "end_ns": window[1]}} if window else {}),
        "callbacks": callbacks,
        "topics": topics,
        "services": services,
        "nodes": nodes,
        "warnings": warnings + st.warnings(summary, topics, services),
        "losses": losses,
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


def _callbacks(rows: list[dict], w, wide: bool = False) -> None:
    what = lambda c: c["topic"] if c["topic"] else (  # noqa: E731
        f"{c['timer_period_ns'] / 1e6:g} ms" if c.get("timer_period_ns") else None)
    nw = C.width(rows, lambda c: c["node"] or c["procname"], 28, wide)
    tw = C.width(rows, what, 26, wide)
    sw = C.width(rows, lambda c: c["symbol"], 60, wide)
    w("\nCallbacks (durations, timer period and jitter in ms)\n")
    w(f"  {'node':<{nw}} {'kind':<12} {'topic / period':<{tw}} {'count':>7}" + _head(_STATS)
      + f" {'period':>9} {'jitter':>9} {'cpu%':>6}  symbol\n")
    for c in rows:
        w(f"  {C.cell(c['node'] or c['procname'], nw):<{nw}} {C.cell(c['kind'], 12):<12} {C.cell(what(c), tw):<{tw}} "
          f"{_count(c['count']):>7}" + _stats(c)
          + f" {C.ms(c['period_mean_ns']):>9} {C.ms(c['period_jitter_ns']):>9} {C.pct(c['cpu_share'] or 0):>6}"
          f"  {C.cell(c['symbol'], sw)}\n")


def _topics(rows: list[dict], w, wide: bool = False, window: bool = False) -> None:
    tw = C.width(rows, lambda t: t["topic"], 36, wide)
    w("\nTopics (rate = " + ("msgs per second of the window" if window else
                           "the topic's own: (msgs - 1) / its first to last publication")
      + "; period and jitter = mean and std of the time between publications, ms; latency = delivery, publication "
      "to callback start, ms; unmatched: publications that no traced take received, takes matched to no "
      "publication)\n")
    w(f"  {'topic':<{tw}} {'pubs':>5} {'subs':>5} {'msgs':>7} {'rate Hz':>8} {'period':>9} {'jitter':>9} {'deliv':>7}"
      + _head(_STATS) + f" {'unm pubs':>9} {'unm takes':>9} {'drops':>6}\n")
    for t in rows:
        rate = "-" if t["rate_hz"] is None else f"{t['rate_hz']:.2f}"
        w(f"  {C.cell(t['topic'], tw):<{tw}} {t['publishers']:>5} {t['subscriptions']:>5} {t['publications']:>7} "
          f"{rate:>8} {C.ms(t['period_mean_ns']):>9} {C.ms(t['period_jitter_ns']):>9} {t['deliveries']:>7}"
          + _stats(t, "lat_")
          + f" {_count(t['unmatched_publications']):>9} {_count(t['unmatched_takes']):>9} {_count(t['drops']):>6}\n")
    trans = [t for t in rows if t.get("transport_count")]
    if trans:
        w("\nTopics' transport latency (publication to take, ms; beside the delivery latency above)\n")
        w(f"  {'topic':<{tw}} {'takes':>7} {'linked':>7}" + _head(_STATS) + "\n")
        for t in trans:
            w(f"  {C.cell(t['topic'], tw):<{tw}} {t['takes']:>7} {t['transport_count']:>7}" + _stats(t, "transport_")
              + "\n")


def _services(rows: list[dict], w, wide: bool = False) -> None:
    if not rows:
        return
    sw = C.width(rows, lambda s: s["service"], 36, wide)
    nw = C.width(rows, lambda s: s["server_node"], 20, wide)
    w("\nServices (server = request taken to response sent, at the server; round trip = request sent to response "
      "taken, at the client; ms)\n")
    w(f"  {'service':<{sw}} {'server node':<{nw}} {'calls':>6} {'answ':>6} {'what':<6}" + _head(_STATS) + "\n")
    for s in rows:
        for what, prefix in (("server", "server_"), ("rtt", "rtt_")):
            head = (f"  {C.cell(s['service'], sw):<{sw}} {C.cell(s['server_node'], nw):<{nw}} {s['calls']:>6} {s['answered']:>6}"
                    if what == "server" else f"  {'':<{sw}} {'':<{nw}} {'':>6} {'':>6}")
            w(head + f" {what:<6}" + _stats(s, prefix) + "\n")


def _nodes(rows: list[dict], w, wide: bool = False) -> None:
    nw = C.width(rows, lambda n: n["node"], 40, wide)
    hw = C.width(rows, lambda n: n["hostname"], 14, wide)
    w("\nNodes (busy = time in callbacks, ms)\n")
    w(f"  {'node':<{nw}} {'host':<{hw}} {'pid':>8} {'callbacks':>9} {'runs':>8} {'busy':>12} {'cpu%':>6} {'pubs':>7}\n")
    for n in rows:
        w(f"  {C.cell(n['node'], nw):<{nw}} {C.cell(n['hostname'], hw):<{hw}} {n['pid']:>8} {n['callbacks']:>9} "
          f"{n['runs']:>8} {C.ms(n['busy_ns']):>12} {C.pct(n['cpu_share'] or 0):>6} {n['publications']:>7}\n")


def render_text(d: dict, out=None, wide: bool = False) -> None:
    w = C.TextOut(out or sys.stdout).write
    _summary(d["summary"], w)
    _callbacks(d["callbacks"], w, wide)
    _topics(d["topics"], w, wide, window="window" in d)
    _services(d.get("services", []), w, wide)
    _nodes(d["nodes"], w, wide)


def run(args) -> int:
    from roscope import stats_core

    with C.session(args, "stats") as s:
        s.opening()
        # A short recording: its statistics from the core, without a database.
        parts = None
        if stats_core.applies(args.inputs):
            C.check_recordings(s.inputs)
            parts = stats_core.parts(args.inputs, heuristics=s.inputs.heuristics, sync=s.inputs.sync,
                                     place=C.window_place(args.window))
        if parts is not None:
            d = document(**parts)
        else:
            db = s.open_inputs()
            d = collect(db, C.window_ns(args.window, db))
    try:
        C.show(args, d, lambda r: render_text(r, wide=args.wide))
    finally:
        # the trace's warnings (the database's) and what the statistics must be read with
        C.report(d["warnings"], d["losses"])
    return 0
