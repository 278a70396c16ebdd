"""The report's "Why late" section: roscope.sched's worst callback runs and input
waits (what `roscope why` shows), as tables and stacked bars.

Runs: time on a CPU, waiting for a CPU (and who held it), blocked, not covered by
the kernel data, preemptions, migrations. Waits (publication to callback start):
transport, queued behind other callbacks (named), the thread waiting for a CPU
(wake-up latency), the rest. Without kernel data the waits are still split
(transport, queued, rest) and one line says what `roscope record --kernel` adds.
"""
from __future__ import annotations

from roscope import sched
from roscope.errors import InputError
from roscope.report import figures as F
from roscope.report.build import Report
from roscope.report.html import Col, esc, table

RUN_PARTS = {"on_cpu_ns": ("on a CPU", "#54a24b"), "runnable_ns": ("waiting for a CPU", "#e45756"),
             "blocked_ns": ("blocked", "#4c78a8"), "unknown_ns": ("not covered", "#d3d3d3")}
WAIT_PARTS = {"transport_ns": ("transport", "#4c78a8"), "queued_ns": ("queued behind callbacks", "#f58518"),
              "wakeup_ns": ("waiting for a CPU", "#e45756"), "rest_ns": ("rest", "#bab0ac")}
NO_KERNEL = ("No kernel scheduling data: with <code>roscope record --kernel</code> this section would also split the "
             "longest callback runs into time on a CPU, waiting for a CPU (and who held it) and blocked, and show each "
             "wait's wake-up latency.")


def _who(c: dict) -> str:
    return f"{c.get('name') or '?'} [{c.get('tid')}] of {c.get('procname') or '?'} [{c.get('pid')}]"


def _rank(rows: list[dict], what: str) -> list[str]:
    return [F.t(f"{i}. {r.get('label') or '?'} ({what} {r['run_id']})", 90) for i, r in enumerate(rows, 1)]


def why(R: Report) -> None:
    """Adds the section (nothing when the trace has neither callback runs nor input waits)."""
    top = R.budget["why_rows"]
    try:
        runs = sched.worst_runs(R.db, None, top)
        waits = sched.worst_waits(R.db, None, top)
    except InputError as exc:  # a database written before roscope had the kernel tables
        R.page.add("why", "Why late", f'<p class="note">{esc(exc)}</p>')
        return
    if not runs["runs"] and not waits:
        return
    body = ('<p class="sub">Why the longest callback runs took long and the longest input waits were long, from the '
            "kernel's scheduler events joined to the callback runs: what <code>roscope why</code> shows.</p>")
    if not runs["kernel"]:
        body += f'<p class="note">{NO_KERNEL}</p>'
    elif runs["coverage"] is not None and runs["coverage"] < 0.5:
        body += (f'<p class="note">The kernel data covers only {100 * runs["coverage"]:.1f} % of the callback runs\' time: '
                 "the trace's threads are mostly not in it (recorded at another time, or the ROS processes in another pid "
                 "namespace than perf).</p>")
    if runs["kernel"] and runs["runs"]:
        body += run_part(R, runs)
    if waits:
        body += wait_part(R, waits, runs["kernel"])
    R.page.add("why", "Why late", body)


def run_part(R: Report, d: dict) -> str:
    rows = d["runs"]
    for r in rows:
        cul, procs = r["culprits"], r["culprit_processes"]
        r["top_culprit"] = _who(cul[0]) if cul else None
        r["top_culprit_tid"] = cul[0]["tid"] if cul else None
        r["top_culprit_ns"] = cul[0]["ns"] if cul else None
        r["culprits_text"] = "; ".join(f"{_who(c)} {c['ns'] / 1e6:.3f} ms" for c in cul[:3]) or None
        r["top_process"] = f"{procs[0]['procname'] or '?'} [{procs[0]['pid']}]" if procs else None
        r["top_process_ns"] = procs[0]["ns"] if procs else None
    labels = _rank(rows, "run")
    parts = {name: (colour, [F.ms(r[k]) for r in rows]) for k, (name, colour) in RUN_PARTS.items()}
    fig = F.stacked(labels, parts, "The longest callback runs: where their time went",
                    "time (ms)", [r["explanation"] for r in rows])
    cov = "" if d["coverage"] is None else f" The kernel data covers {100 * d['coverage']:.1f} % of all finished runs' time."
    cols = [Col("label", "callback"), Col("run_id", "run", "int"), Col("duration_ns", "duration ms", "ns"),
            Col("on_cpu_ns", "on CPU ms", "ns"), Col("runnable_ns", "waiting for a CPU ms", "ns", "runnable: ready, not running"),
            Col("blocked_ns", "blocked ms", "ns", "sleeping, I/O or a lock"), Col("unknown_ns", "not covered ms", "ns"),
            Col("preemptions", "preemptions", "int"), Col("migrations", "migrations", "int"),
            Col("top_culprit", "held the CPU most"), Col("top_culprit_tid", "its tid", "int"),
            Col("top_culprit_ns", "its ms", "ns"), Col("top_process", "process that held it most"),
            Col("top_process_ns", "that process ms", "ns"), Col("culprits_text", "held the CPU (top 3)"),
            Col("explanation", "in words")]
    return ("<h3>Longest callback runs</h3>" + R.page.fig(
        "why_runs", fig, f"The {len(rows)} longest finished runs, each split by its thread's scheduling state during the run; "
        "hover for the culprits." + cov) + table("why_runs", cols, rows, row_id="run_id"))


def wait_part(R: Report, rows: list[dict], kernel: bool) -> str:
    for r in rows:
        r["wait_id"] = f"{r['run_id']}:{r['publication_id']}"
        r["behind_text"] = "; ".join(f"{b['label'] or b['callback_id']} {b['ns'] / 1e6:.3f} ms" for b in r["behind"][:3]) or None
    keys = [k for k in WAIT_PARTS if kernel or k != "wakeup_ns"]
    labels = _rank(rows, "run")
    parts = {WAIT_PARTS[k][0]: (WAIT_PARTS[k][1], [F.ms(r[k]) for r in rows]) for k in keys}
    fig = F.stacked(labels, parts, "The longest input waits: publication to callback start", "time (ms)",
                    [r["explanation"] for r in rows])
    cols = [Col("label", "callback"), Col("run_id", "run", "int"), Col("publication_id", "publication", "int"),
            Col("wait_ns", "wait ms", "ns"), Col("transport_ns", "transport ms", "ns", "publication to arrival, where traced"),
            Col("queued_ns", "queued ms", "ns", "the thread ran other callbacks"), Col("behind_text", "queued behind")]
    if kernel:
        cols.append(Col("wakeup_ns", "waiting for a CPU ms", "ns", "wake-up latency: runnable outside other callbacks"))
    cols += [Col("rest_ns", "rest ms", "ns"), Col("explanation", "in words")]
    cap = (f"The {len(rows)} longest waits, split in order: transport (where the trace has the arrival: ROS 1 with "
           "roscope's tracer), queued behind other callback runs of the thread, "
           + ("the thread runnable but not running, " if kernel else "") + "and the rest.")
    return ("<h3>Longest input waits</h3>" + R.page.fig("why_waits", fig, cap)
            + table("why_waits", cols, rows, row_id="wait_id"))
