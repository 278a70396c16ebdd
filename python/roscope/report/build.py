"""The sections of the report, each from roscope's analyses (roscope.stats,
roscope.flow, roscope.executor) and the bounded queries of report.queries.

`build_page(db, ...)` returns the HTML text; `roscope.report.write` writes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roscope import executor
from roscope.report import figures as F
from roscope.report import queries as Q
from roscope.report import timeline
from roscope.report.html import Col, Page, esc, fold, table

if TYPE_CHECKING:
    from roscope.database import Database

#: Budgets: what bounds the page's size whatever the trace (halved if the page is too big).
BUDGET = {
    "box_callbacks": 20,  # callbacks in the box plot: the top N by CPU share and the top N by p99
    "series_callbacks": 300,  # callbacks offered in the duration-over-time selector
    "series_points": 150_000,  # points over all of them (each gets at most 600, at least 60)
    "bars": 40,  # topics in the rate and latency plots
    "timeline": 4000,  # executor states, and callback runs, drawn in the timeline window
    "violin": 2000,  # end-to-end latencies per path in a violin
    "paths_drawn": 10,  # paths in the violin, breakdown and graph figures
    "table_rows": 3000,  # rows of any table
    "graph_nodes": 300,  # nodes of one message's flow graph
    "why_rows": 10,  # the longest runs and input waits in the "Why late" section
    "msgflow_candidates": 20_000,  # candidate flows of the message-flow plot's search (the first in time)
    "msgflow_flows": 300,  # flows drawn in the message-flow plot
}

STATS = ("min", "mean", "std", "p25", "p50", "p75", "p90", "p99", "max")


@dataclass
class Report:
    """What the sections share while the page is built."""

    db: Database
    page: Page
    budget: dict
    first: int
    last: int
    stats: dict = field(default_factory=dict)  # roscope stats: summary, callbacks, topics
    labels: dict = field(default_factory=dict)  # callback_id -> readable unique label
    sampled: list = field(default_factory=list)  # what was sampled or cut, in words

    @property
    def con(self):
        return self.db.con


def callback_labels(callbacks: list[dict]) -> dict[int, str]:
    """callback_id -> 'node kind topic-or-period', made unique with '#id'."""
    base = {}
    for c in callbacks:
        what = c.get("topic") or (f"{c['timer_period_ns'] / 1e6:g} ms" if c.get("timer_period_ns") else "")
        base[c["callback_id"]] = f"{c.get('node') or c.get('procname') or '?'} {c.get('kind')} {what}".rstrip()
    seen: dict[str, int] = {}
    for v in base.values():
        seen[v] = seen.get(v, 0) + 1
    return {k: (f"{v} #{k}" if seen[v] > 1 else v) for k, v in base.items()}


def plural(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "es" if what.endswith(("s", "x", "sh", "ch")) else "s")


def _ms_caption(n: int, of: int, what: str) -> str:
    return "" if n >= of else f" Showing {n:,} of {of:,} {what}."


# ---------------------------------------------------------------- overview


def overview(R: Report, flavours: list[str], sources: list[str]) -> None:
    s = R.stats["summary"]
    o = Q.overview(R.con)
    facts = [
        (f"{s['duration_ns'] / 1e9:.3f} s", "traced"), (", ".join(flavours) or "unknown", "ROS flavour"),
        (f"{len(o['hosts'])}", "hosts: " + ", ".join(o["hosts"])), (f"{len(o['processes'])}", "ROS processes"),
        (f"{len(o['nodes'])}", "nodes"), (f"{s['callbacks']:,}", "callbacks"), (f"{s['callback_runs']:,}", "callback runs"),
        (f"{s['publications']:,}", "publications"), (f"{s['takes']:,}", "takes"), (f"{s['links']:,}", "transport links"),
    ]
    body = '<div class="facts">' + "".join(f'<div class="fact"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
                                          for v, k in facts) + "</div>"
    body += quality_box(Q.quality(R.con, s, R.stats["topics"]), R.db.warnings)
    procs = table("processes", [
        Col("hostname", "host"), Col("pid", "pid", "int"), Col("procname", "process"), Col("nodes", "nodes", "int"),
        Col("callbacks", "callbacks", "int"), Col("runs", "callback runs", "int"), Col("events", "events", "int")],
        o["processes"], limit=R.budget["table_rows"])
    if o["other_processes"]:
        procs += f'<p class="caption">{o["other_processes"]:,} more traced processes had no ROS node or callback.</p>'
    body += fold(f"{plural(len(o['processes']), 'ROS process')}", procs)
    body += fold(f"{plural(len(o['nodes']), 'node')}", table("nodes", [Col("node", "node"), Col("hostname", "host"),
                                                                     Col("pid", "pid", "int")], o["nodes"],
                                                               limit=R.budget["table_rows"]))
    if sources:
        body += '<p class="caption">Input: ' + ", ".join(f"<code>{esc(p)}</code>" for p in sources) + "</p>"
    R.page.add("overview", "Overview", body)


def quality_box(q: dict, warnings: list[str]) -> str:
    """The trace-quality box: every fact that limits what the numbers mean, in words."""
    items, bad = [], False
    if q["events_discarded"] or q["packets_lost"]:
        bad = True
        items.append(f'<span class="bad">The tracer lost {q["events_discarded"]:,} events and {q["packets_lost"]:,} packets</span> '
                     f"({q['lost_reports']:,} discard reports): runs, messages and links near those gaps are missing or "
                     "incomplete, so counts and rates there are low.")
    else:
        items.append("No event was lost: the tracer reported no discarded events or lost packets.")
    if q["links"]:
        if q["heuristic_links"]:
            bad = True
            items.append(f'<span class="bad">{q["heuristic_links"]:,} of {q["links"]:,} transport links are heuristic</span>: '
                         "matched by the publisher's wall clock within 5 ms, not by an exact stamp; latencies over them are estimates.")
        else:
            items.append(f"All {q['links']:,} transport links (publication to take) are exact.")
    else:
        items.append("No transport link: this trace has no events that tie a publication to the message a subscription took "
                     "(e.g. no take events), so topic latencies and input waits are not available; data flows use the "
                     "newest publication on each topic instead.")
    um, ut = q["unmatched_publications"], q["unmatched_takes"]
    if um or ut:
        bad = True
        items.append(f'<span class="bad">{plural(um, "publication")} on topics with subscribers reached no subscription, and '
                     f'{plural(ut, "take")} matched no publication</span> (messages dropped, lost, sent before tracing started, '
                     "or taken from a process that was not traced).")
    elif q["links"]:
        items.append("Every publication on a subscribed topic and every take were matched.")
    if q["unknown_init"]:
        bad = True
        parts = ", ".join(f"{n:,} {t}" for t, n in q["unknown_init"].items())
        items.append(f'<span class="bad">Objects with unknown init: {esc(parts)}</span>. They were seen only at run time '
                     "(tracing started after they were created), so their names, topics or periods may be missing.")
    if q["incomplete_runs"] or q["unmatched_callback_ends"]:
        items.append(f"{q['incomplete_runs']:,} callback runs have no end and {q['unmatched_callback_ends']:,} ends have no start "
                     "(tracing started or stopped in the middle of a callback): they are left out of durations.")
    for w in warnings:
        bad = True
        items.append(f'<span class="bad">Warning:</span> {esc(w)}')
    return (f'<div class="quality{" warn" if bad else ""}" id="quality"><strong>Trace quality</strong><ul>'
            + "".join(f"<li>{i}</li>" for i in items) + "</ul></div>")


# ---------------------------------------------------------------- callbacks


CALLBACK_COLS = [
    Col("node", "node"), Col("kind", "kind"), Col("what", "topic / period"), Col("count", "runs", "int"),
    Col("min_ns", "min ms", "ns"), Col("mean_ns", "mean ms", "ns"), Col("std_ns", "std ms", "ns"), Col("p50_ns", "p50 ms", "ns"),
    Col("p90_ns", "p90 ms", "ns"), Col("p99_ns", "p99 ms", "ns"), Col("max_ns", "max ms", "ns"),
    Col("period_mean_ns", "period ms", "ns", "timers: mean time between run starts"),
    Col("period_jitter_ns", "jitter ms", "ns", "timers: standard deviation of the period"),
    Col("cpu_share", "CPU %", "pct", "run time / traced time"), Col("symbol", "symbol"),
]


def callbacks(R: Report) -> None:
    cbs = R.stats["callbacks"]
    rows = [{**c, "what": c.get("topic") or (f"{c['timer_period_ns'] / 1e6:g} ms" if c.get("timer_period_ns") else None)}
            for c in cbs]
    body = ('<p class="sub">Durations of complete callback runs (start to end), per callback; the table is sortable '
            "(click a column). CPU share: total run time over the traced time.</p>")
    body += table("callbacks", CALLBACK_COLS, rows, row_id="callback_id", limit=R.budget["table_rows"])
    if not cbs:
        R.page.add("callbacks", "Callbacks", body + '<p class="note">No complete callback run in this trace.</p>')
        return
    q = Q.callback_quartiles(R.con)
    n = R.budget["box_callbacks"]
    by_cpu = [c["callback_id"] for c in sorted(cbs, key=lambda c: -(c["cpu_share"] or 0))]
    by_p99 = [c["callback_id"] for c in sorted(cbs, key=lambda c: -(c["p99_ns"] or 0))]
    chosen = list(dict.fromkeys(by_cpu[:n] + by_p99[:n])) if len(cbs) > 1.5 * n else by_cpu
    lab = {cb: F.t(R.labels[cb], 90) for cb in chosen}
    orders = {"sort by p99": [lab[c] for c in by_p99 if c in lab], "sort by CPU share": [lab[c] for c in by_cpu if c in lab]}
    cap = ("Boxes: quartiles (p25, p50, p75) with whiskers at min and max; the red tick is p99; computed in DuckDB over "
           "every run." + _ms_caption(len(chosen), len(cbs), f"callbacks (the top {n} by CPU share and the top {n} by p99)"))
    fig = F.quartile_boxes([lab[c] for c in chosen], [q[c] for c in chosen], "Callback durations", "duration (ms)", orders)
    body += "<h3>Duration distribution per callback</h3>" + R.page.fig("callback_boxes", fig, cap + F.floor_note(fig))
    body += series(R, by_cpu)
    body += timers(R)
    R.page.add("callbacks", "Callbacks", body)


def series(R: Report, by_cpu: list[int]) -> str:
    k = min(len(by_cpu), R.budget["series_callbacks"])
    points = max(60, min(600, R.budget["series_points"] // max(k, 1)))
    ids = by_cpu[:k]
    data = Q.callback_series(R.con, R.first, R.last, ids, points)
    R.page.extra["series"] = {str(cb): s for cb, s in data.items()}
    R.page.extra["series_labels"] = {str(cb): F.t(R.labels[cb]) for cb in ids}
    binned = sum(1 for s in data.values() if s["binned"])
    opts = "".join(f'<option value="{cb}">{esc(R.labels[cb])}</option>' for cb in ids if cb in data)
    cap = (f"Every run is drawn for callbacks with at most {points} runs; for the {binned} with more, the trace is cut "
           f"into {points} equal time bins and each bin shows the min, mean and max duration of its runs (DuckDB)."
           + _ms_caption(k, len(by_cpu), "callbacks (by CPU share)"))
    return ('<h3>Duration over time</h3><p><label>Callback: <select id="series-select">' + opts + "</select></label></p>"
            f'<div class="plot" id="series-plot"></div><p class="caption">{cap}</p>')


def timers(R: Report) -> str:
    rows = Q.timer_periods(R.con)
    if not rows:
        return fold("Timer period and jitter", '<p class="note">No timer callback ran at least twice.</p>')
    rows = rows[: R.budget["bars"]]
    labs = [F.t(R.labels.get(r["callback_id"], f"#{r['callback_id']}"), 90) for r in rows]
    fig = F.timers(labs, rows, [r["nominal_ns"] for r in rows], "Timer periods (time between consecutive run starts)")
    for r in rows:
        r["label"] = R.labels.get(r["callback_id"])
    tbl = table("timers", [Col("label", "timer callback"), Col("nominal_ns", "nominal ms", "ns"), Col("count", "periods", "int")]
                + [Col(f"{s}_ns", f"{s} ms", "ns", "jitter" if s == "std" else "") for s in STATS], rows, row_id="callback_id")
    return fold(f"Timer period and jitter ({plural(len(rows), 'timer')})", R.page.fig(
        "timer_periods", fig, "Actual periods: quartiles, whiskers at min and max, p99 in red; the diamond is the nominal period. "
        "Jitter is the standard deviation of the period." + F.floor_note(fig)) + tbl)


# ---------------------------------------------------------------- topics


#: The topic rate's definition (roscope.stats.topic_rate), said where the report shows it.
RATE_TIP = "the topic's own: (messages - 1) / its first to last publication (all its publishers)"

TOPIC_COLS = [
    Col("topic", "topic"), Col("publishers", "pubs", "int"), Col("subscriptions", "subs", "int"),
    Col("publications", "messages", "int"), Col("rate_hz", "rate Hz", "hz", tip=RATE_TIP),
    Col("period_mean_ns", "period ms", "ns", tip="mean time between consecutive publications"),
    Col("period_jitter_ns", "jitter ms", "ns", tip="standard deviation of the time between consecutive publications"),
    Col("deliveries", "deliveries", "int"),
    Col("lat_min_ns", "lat min ms", "ns"), Col("lat_mean_ns", "lat mean ms", "ns"), Col("lat_p50_ns", "lat p50 ms", "ns"),
    Col("lat_p90_ns", "lat p90 ms", "ns"), Col("lat_p99_ns", "lat p99 ms", "ns"), Col("lat_max_ns", "lat max ms", "ns"),
    Col("heuristic_links", "heuristic links", "int"), Col("unmatched_publications", "unmatched pubs", "int"),
    Col("unmatched_takes", "unmatched takes", "int"), Col("drops", "drops", "int"),
]


def topics(R: Report) -> None:
    tps = R.stats["topics"]
    body = ('<p class="sub">Rate: the topic\'s own, (messages &minus; 1) over its first to last publication (all its '
            "publishers together), whatever the recording holds before or after them. Latency: publication (earliest layer) to the start "
            "of the callback run the message fed, per delivery. Drops: messages a subscription never received between the "
            "first and last it received from that publisher.</p>")
    body += table("topics", TOPIC_COLS, tps, row_id="topic", limit=R.budget["table_rows"])
    n = R.budget["bars"]
    busy = [t for t in tps if t["publications"] and t["rate_hz"] is not None][:n]
    if busy:
        body += "<h3>Rate</h3>" + R.page.fig("topic_rates", F.bars([F.t(t["topic"], 80) for t in busy], [t["rate_hz"] for t in busy],
                                                                   "Messages per second", "Hz"),
                                            "Each topic's own rate: (messages - 1) over its first to last publication."
                                            + _ms_caption(len(busy), len([t for t in tps if t["publications"] and t["rate_hz"] is not None]),
                                                          "topics (by messages)"))
    lat = Q.topic_latency_quartiles(R.con)
    with_lat = sorted((t for t in tps if t["topic"] in lat), key=lambda t: -t["deliveries"])
    if with_lat:
        shown = with_lat[:n]
        fig = F.quartile_boxes([F.t(t["topic"], 80) for t in shown], [lat[t["topic"]] for t in shown], "Latency per topic",
                               "latency (ms)", prefix="lat_")
        body += "<h3>Publication-to-callback latency</h3>" + R.page.fig(
            "topic_latency", fig, "Quartiles with whiskers at min and max, p99 in red, over every delivery (DuckDB)."
            + _ms_caption(len(shown), len(with_lat), "topics (by deliveries)") + F.floor_note(fig))
    else:
        body += '<h3>Publication-to-callback latency</h3><p class="note">No delivery could be measured: no transport link.</p>'
    drops = [t for t in tps if t.get("drops")]
    if drops:
        drops = sorted(drops, key=lambda t: -t["drops"])[:n]
        body += "<h3>Drops</h3>" + R.page.fig("topic_drops", F.bars([F.t(t["topic"], 80) for t in drops], [t["drops"] for t in drops],
                                                                    "Messages dropped", "messages", "#e45756"))
    else:
        body += '<h3>Drops</h3><p class="note">No drop was seen (between matched messages of each publisher and subscription).</p>'
    R.page.add("topics", "Topics", body)


# ---------------------------------------------------------------- executors and threads


def _thread_label(t: dict) -> str:
    nodes = t.get("nodes") or ""
    if len(nodes) > 50:
        nodes = nodes[:49] + "…"
    return f"{t['procname']} {t['tid']}" + (f" ({nodes})" if nodes else "")


def threads(R: Report, window: tuple[int, int] | None) -> None:
    ths = Q.threads(R.con)
    ex = {t["thread_id"]: t for t in executor.threads(R.db)}
    for t in ths:
        t["label"] = _thread_label(t)
        t["busy_share"] = t["busy_ns"] / t["traced_ns"] if t["traced_ns"] else None
        e = ex.get(t["thread_id"], {})
        tr = e.get("traced_ns") or 0
        for s in ("executing", "selecting", "waiting"):
            t[f"{s}_share"] = (e.get(f"{s}_ns") or 0) / tr if tr else None
    body = ('<p class="sub">Threads that ran callbacks. Executor states (waiting for work, selecting the next ready handle, '
            "executing) come from ros2_tracing's executor events (Humble on); without them a thread's busy share is the time "
            "in its outermost callback runs over its traced time.</p>")
    body += timeline.section(R, ths, window)
    if ths:
        key = "executing_share" if ex else "busy_share"
        shown = sorted(ths, key=lambda t: -(t[key] or 0))[: R.budget["bars"]]
        shares = {"executing": [t["executing_share"] for t in shown], "selecting": [t["selecting_share"] for t in shown],
                  "waiting": [t["waiting_share"] for t in shown]}
        if not ex:
            shares = {"busy (callbacks)": [t["busy_share"] for t in shown]}
        util = R.page.fig(
            "utilization", F.utilization([F.t(t["label"], 80) for t in shown], shares, "Share of the traced time",
                                         {**timeline.STATES, "busy (callbacks)": F.RUN_COLOUR}),
            ("Executor state shares per thread." if ex else "Busy: outermost callback runs over the thread's traced time.")
            + _ms_caption(len(shown), len(ths), "threads (the busiest)"))
        body += fold(f"Utilization per thread ({plural(len(ths), 'thread')})", util + table("threads", [Col("hostname", "host"), Col("pid", "pid", "int"), Col("tid", "tid", "int"), Col("procname", "process"),
                                  Col("nodes", "nodes"), Col("runs", "runs", "int"), Col("busy_share", "busy %", "pct"),
                                  Col("executing_share", "executing %", "pct"), Col("selecting_share", "selecting %", "pct"),
                                  Col("waiting_share", "waiting %", "pct")], ths, row_id="thread_id", limit=R.budget["table_rows"]))
    body += executor_table(R)
    body += executor_groups(R)
    body += input_waits(R)
    R.page.add("threads", "Executors and threads", body)


def executor_table(R: Report) -> str:
    """The callbacks each executor thread ran (`roscope executor`'s table), folded."""
    ths = executor.executor_callbacks(R.db)
    rows = [{"thread": f"{t['procname']} {t['tid']}" + (" · executor events" if t["executor_events"] else ""),
             "callback": " ".join(x for x in (c["node"], c["kind"], c["topic"]) if x), "runs": c["runs"],
             "busy_ns": c["busy_ns"], "share": c["share"]} for t in ths for c in t["callbacks"]]
    if not rows:
        return ""
    return fold(f"Callbacks per executor thread ({plural(len(ths), 'thread')})", table(
        "executor_callbacks", [Col("thread", "thread"), Col("callback", "callback"), Col("runs", "runs", "int"),
                               Col("busy_ns", "busy ms", "ns", "time in outermost runs"),
                               Col("share", "share %", "pct", "of the thread's busy time")],
        rows, limit=R.budget["table_rows"]))


def executor_groups(R: Report) -> str:
    """The executor objects, their callback groups and each group's callbacks (CARET's executor events), folded;
    nothing without those events."""
    xs = executor.executor_objects(R.db)
    rows = [{"executor": (f"{x['procname']} {x['pid']} · {x['type'] or '?'} 0x{x['handle']:x}"
                          if x["executor_id"] is not None else "executor not in the trace"),
             "group": f"{g['type'] or '?'} 0x{g['handle']:x}",
             "callback": " ".join(str(v) for v in (m["node"], m["kind"], m["topic"]) if v), "runs": m["runs"],
             "busy_ns": m["busy_ns"]} for x in xs for g in x["groups"] for m in g["members"]]
    if not rows:
        return ""
    return fold(f"Executors and callback groups ({plural(len(xs), 'executor')}, CARET's executor events)", table(
        "executor_groups", [Col("executor", "executor"), Col("group", "callback group"), Col("callback", "callback"),
                            Col("runs", "runs", "int"), Col("busy_ns", "busy ms", "ns", "time in outermost runs")],
        rows, limit=R.budget["table_rows"]))


def input_waits(R: Report) -> str:
    waits = executor.input_waits(R.db)
    if not waits:
        return ('<h3>Input waits</h3><p class="note">No input wait: it needs transport links from publications to the '
                "callback runs they fed.</p>")
    seen: dict[str, int] = {}
    for w in waits:
        w["label"] = f"{w.get('node') or '?'} {w.get('topic') or ''}".strip()
        seen[w["label"]] = seen.get(w["label"], 0) + 1
        if seen[w["label"]] > 1:
            w["label"] += f" ({seen[w['label']]})"
    shown = waits[: R.budget["bars"]]
    fig = F.quartile_boxes([F.t(w["label"], 90) for w in shown], shown, "Input wait: publication to callback start", "wait (ms)")
    return fold(f"Input waits ({plural(len(waits), 'subscription callback')})", R.page.fig(
        "input_waits", fig, "Per subscription callback: how long its messages waited from publication to the start of the run "
        "they fed; whiskers at min and max." + _ms_caption(len(shown), len(waits), "callbacks") + F.floor_note(fig))
            + table("input_waits", [Col("label", "callback"), Col("count", "messages", "int")]
                    + [Col(f"{s}_ns", f"{s} ms", "ns") for s in STATS]
                    + [Col("executor_busy_mean_ns", "busy mean ms", "ns", "time the thread ran other callbacks meanwhile"),
                       Col("executor_busy_max_ns", "busy max ms", "ns")], waits, limit=R.budget["table_rows"]))


# ---------------------------------------------------------------- method


def method(R: Report) -> None:
    sampled = ("<p>Sampled or cut on this page: " + "; ".join(esc(x) for x in R.sampled) + ".</p>") if R.sampled else (
        "<p>Nothing on this page is sampled except where a caption says so.</p>")
    body = f"""
<p>Every number comes from roscope's execution database (one pass over the LTTng events builds it; docs/model.md) and
roscope's analyses: the callback, topic and node tables are <code>roscope stats</code>'s, the path tables
<code>roscope flow</code>'s and the input waits <code>roscope executor</code>'s, on the same input. Durations are shown in
milliseconds; the data behind each table cell is kept in nanoseconds (its <code>data-v</code> attribute).</p>
<p>Every plot is aggregated or sampled in DuckDB before it reaches the page, so the page stays small whatever the
trace's length: box plots are drawn from quantiles computed over every value; the duration-over-time plots bin long
series; violins draw from a uniform sample of flows; the timeline shows one window. Each caption says what it shows.</p>
{sampled}
<details class="fold"><summary>Definitions</summary><div class="fold-body">
<dl class="defs">
<dt>Callback duration</dt><dd>From a callback run's start event to its end event on the same thread (nested runs are
their own runs). Runs without an end are left out.</dd>
<dt>CPU share</dt><dd>A callback's total run time over the traced time (first to last event of all threads).</dd>
<dt>Timer period and jitter</dt><dd>The time between the starts of consecutive runs of a timer callback; jitter is its
standard deviation.</dd>
<dt>Statistics</dt><dd>min, mean, std (sample standard deviation), pXX: the XX-th percentile interpolated linearly between
the nearest ranks (DuckDB <code>quantile_cont</code>), max.</dd>
<dt>Topic latency</dt><dd>From a message's publication (the earliest layer traced: rclcpp, rcl or rmw) to the start of the
callback run it fed, over transport links (docs/model.md: exact stamps, or heuristic wall-clock matching, flagged).</dd>
<dt>Drops</dt><dd>Messages that a publisher sent between the first and the last message a subscription received from it,
and that the subscription never received.</dd>
<dt>Executor states</dt><dd>waiting (for work), selecting (the next ready handle), executing (a callback), from the
executor's events; utilization is the executing share.</dd>
<dt>Input wait</dt><dd>From a message's publication to the start of the callback run it fed; "busy" is the part of it the
thread spent running other callbacks.</dd>
<dt>Why late</dt><dd><code>roscope why</code>'s analysis (docs/analyses.md): during a callback run, the time its thread
was on a CPU, runnable but not running (waiting for a CPU; the culprits are the threads that ran on that CPU meanwhile)
and blocked, from the kernel's sched_switch and sched_wakeup events (<code>roscope record --kernel</code>); an input
wait split into transport, queued behind other callback runs of the thread, the thread runnable outside them (wake-up
latency) and the rest.</dd>
<dt>Data flow, path, breakdown</dt><dd>A chain from the callback run that published a message on an input topic to a
message on an output topic; its latency runs from that run's start to the output's publication and splits into
communication (publication to the start of the run it fed), computation (a run's start to its publication, or a run's
duration before the next run of its node) and idle (between a run's end and the next run of the same node). Flows with
the same callbacks and topics form a path. Tables I to IV follow the data-flow paper.</dd>
<dt>How sure a flow is</dt><dd>A path is <em>guessed</em> when it rests on fallback intra-node edges (a node
without annotations or a dependency file of <code>roscope deps</code>: every pair of its callbacks is assumed to
depend), and has <em>no link</em> where a message is matched to the callback that took it without a transport link (the
newest publication on the topic before the run).</dd>
</dl></div></details>
<p>Definitions in full: <code>docs/analyses.md</code>, <code>docs/model.md</code> and <code>docs/report.md</code> in
roscope's source tree.</p>"""
    R.page.add("method", "How the numbers were made", body)
