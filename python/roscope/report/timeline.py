"""The report's thread timeline: one window of the trace, its callback runs and
executor states per thread, grouped by process.

The data go to the page's JSON block (`timeline`), drawn by assets/timeline.js:
one row per process (collapsible; folded, it shows the runs of all its threads),
one row per thread under it, runs coloured by callback (the callbacks with the
most run time in the window get a colour each, named in the legend; hover names
any run), executor states as a strip under the runs, a time axis at the top and
at the bottom, zoom by dragging a range or with the buttons.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope.report import queries as Q
from roscope.report.html import esc
from roscope.text import escape

if TYPE_CHECKING:
    from roscope.report.build import Report

#: Tableau's 20 colours: the callbacks with the most run time in the window get one each.
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
           "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
OTHER = "#9aa4ad"
STATES = {"waiting": "#d3d3d3", "selecting": "#eeca3b", "executing": "#54a24b"}
#: Processes shown open at first: the busiest, while their threads fit this many rows.
OPEN_ROWS = 14


def data(R: Report, ths: list[dict], lo: int, hi: int, tl: dict) -> dict:
    """The timeline's JSON: processes (busiest first) with their threads' runs and
    states (ms from the window's start), callbacks with colours, the span."""
    by_id = {t["thread_id"]: t for t in ths}
    busy: dict[int, float] = {}
    for r in tl["runs"]:
        busy[r["callback_id"]] = busy.get(r["callback_id"], 0.0) + r["d"]
    ranked = sorted(busy, key=lambda c: -busy[c])
    cb_index = {c: i for i, c in enumerate(ranked)}
    callbacks = [{"label": escape(R.labels.get(c, f"callback #{c}")), "colour": PALETTE[i] if i < len(PALETTE) else OTHER,
                  "ms": round(busy[c], 3)} for i, c in enumerate(ranked)]
    threads: dict[int, dict] = {}

    def thread(tid: int) -> dict:
        if tid not in threads:
            t = by_id.get(tid, {})
            threads[tid] = {"tid": t.get("tid"), "nodes": escape(t.get("nodes") or ""), "proc": (t.get("hostname"), t.get("pid"),
                            t.get("procname")), "t": [], "d": [], "c": [], "st": [], "sd": [], "ss": [], "busy": 0.0}
        return threads[tid]

    for r in tl["runs"]:
        th = thread(r["thread_id"])
        th["t"].append(round(r["t0"], 4))
        th["d"].append(round(r["d"], 4))
        th["c"].append(cb_index[r["callback_id"]])
        th["busy"] += r["d"]
    codes = list(STATES)
    for s in tl["states"]:
        th = thread(s["thread_id"])
        th["st"].append(round(s["t0"], 4))
        th["sd"].append(round(s["d"], 4))
        th["ss"].append(codes.index(s["state"]) if s["state"] in codes else 0)
    procs: dict[tuple, dict] = {}
    for _, th in sorted(threads.items(), key=lambda kv: (kv[1]["tid"] or 0, kv[0])):
        host, pid, name = th.pop("proc")
        p = procs.setdefault((host, pid), {"name": escape(name or "?"), "pid": pid, "host": escape(host or ""), "threads": [],
                                           "busy": 0.0})
        p["threads"].append(th)
        p["busy"] += th["busy"]
    order = sorted(procs.values(), key=lambda p: -p["busy"])
    rows = 0
    for p in order:
        p["open"] = rows + len(p["threads"]) <= OPEN_ROWS or rows == 0
        rows += len(p["threads"]) if p["open"] else 0
        for th in p["threads"]:
            th["busy"] = round(th["busy"], 3)
        p["busy"] = round(p["busy"], 3)
    return {"span": round((hi - lo) / 1e6, 4), "start_s": round((lo - R.first) / 1e9, 6), "procs": order,
            "callbacks": callbacks, "states": [{"name": k, "colour": v} for k, v in STATES.items()]}


def section(R: Report, ths: list[dict], window: tuple[int, int] | None) -> str:
    """The timeline's HTML (its data go to the page's JSON block)."""
    limit = R.budget["timeline"]
    lo, hi = window or Q.default_window(R.con, R.first, R.last, limit)
    tl = Q.timeline(R.con, lo, hi, limit)
    if not tl["states"] and not tl["runs"]:
        return '<h3>Thread timeline</h3><p class="note">Nothing ran in the window.</p>'
    R.page.extra["timeline"] = d = data(R, ths, lo, hi, tl)
    title = f"{(lo - R.first) / 1e9:.3f} s to {(hi - R.first) / 1e9:.3f} s after the trace's start"
    threads = sum(len(p["threads"]) for p in d["procs"])
    cap = (f"The window {title} ({(hi - lo) / 1e6:.1f} ms; choose another with --window START:END, in seconds): "
           f"{len(d['procs']):,} processes, {threads:,} threads. Click a process to open or fold it; drag across the plot to "
           "zoom into a range (or use the buttons; double-click to see the whole window). Runs are coloured by callback: the "
           f"{min(len(d['callbacks']), 20)} with the most run time in the window have a colour each (legend), the others are "
           "grey; hover a run for its callback."
           + (f" Only the first {limit:,} states and runs of the window are drawn." if tl["truncated"] else
              " Everything in the window is drawn."))
    if tl["truncated"]:
        R.sampled.append(f"the timeline draws the first {limit:,} executor states and callback runs of its window")
    return (f'<h3>Thread timeline</h3><div class="timeline" id="timeline" aria-label="{esc("thread timeline " + title)}"></div>'
            f'<p class="caption">{cap}</p>')
