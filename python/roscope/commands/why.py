"""`roscope why TRACE...|DB`: why the worst callback runs took long.

The analysis is roscope.sched's (library): each of the longest runs with its
time on a CPU, waiting for a CPU (and who ran meanwhile), blocked, preemptions
and migrations, from the kernel's sched events (`roscope record --kernel`).
Text in milliseconds, JSON in nanoseconds (docs/analyses.md, "Why late").
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from roscope.commands import _common as C

if TYPE_CHECKING:
    from roscope.database import Database


def register(sub) -> None:
    p = sub.add_parser(
        "why",
        help="why the longest callback runs and input waits took long: CPU, waiting for a CPU (and who held it), "
             "blocked, queued behind other callbacks",
        description="The longest callback runs, each split into time on a CPU, time runnable but waiting for a CPU "
        "(with the threads and processes that ran on it meanwhile), time blocked (sleeping, I/O, a lock), "
        "preemptions and CPU migrations, from the kernel's sched events: perf.data beside the trace (`roscope "
        "record --kernel`) or an LTTng kernel trace with sched_switch; and the longest input waits (publication "
        "to callback start) split into transport, queued behind other callbacks of the executor thread (named), "
        "the thread waiting for a CPU, and the rest. Text in milliseconds, times in seconds from the trace's start "
        "(as `report --window`); JSON in nanoseconds with absolute times (*_ts) and seconds from the start (*_s). "
        "Without kernel data the scheduling split is not measured: shown as –, null in JSON (docs/analyses.md).",
    )
    C.add_inputs(p)
    p.add_argument("--callback", metavar="RE", type=C.regex,
                   help="only callbacks whose label (`node topic-or-timer symbol`, roscope.selector) matches this "
                        "regular expression")
    p.add_argument("--top", metavar="K", type=C.int_range(1, 1_000_000), default=10,
                   help="how many runs, waits and flows (default 10)")
    p.add_argument("--from", dest="from_re", metavar="RE",
                   help="also the slowest data flows from the topics matching RE (with --to), each split the same way")
    p.add_argument("--to", dest="to_re", metavar="RE", help="the flows' output topics (with --from)")
    p.add_argument("--path", metavar="N", type=C.int_range(0, 2**62), help="only the flows of path N (`roscope flow`)")
    C.add_heuristics(p)
    C.add_json(p)
    C.add_wide(p)
    C.add_progress(p)
    p.set_defaults(func=run)


def collect(db: Database, callback: str | None = None, top: int = 10, flows: tuple | None = None) -> dict:
    """Everything `roscope why` shows, as JSON-ready data (durations in ns); `flows`:
    (a `roscope.flow.FlowRequest`, the path to keep or None). Times are absolute (`*_ts`,
    the trace's clock) and in seconds from the trace's start (`*_s`, what `report
    --window` takes); a section left empty says why in `dropped`."""
    from roscope import progress, sched, stats

    prog = progress.current()
    prog.phase("longest runs")
    d = sched.worst_runs(db, callback, top)
    prog.phase("longest input waits")
    d["waits"] = sched.worst_waits(db, callback, top)
    d["dropped"] = {}
    if not d["runs"]:
        d["dropped"]["runs"] = ("no finished callback run" + (f" of a callback matching --callback {callback!r}"
                                                                if callback is not None else " in the trace"))
    if not d["waits"]:
        d["dropped"]["waits"] = sched.why_no_waits(db, callback)
    if flows is not None:
        f = sched.flow_sched(db, flows[0], flows[1], top)
        d["flows"] = f["flows"]
        d["flow_summary"] = {k: f["summary"][k] for k in ("flows", "paths", "topics_from", "topics_to")}
        if not d["flows"]:
            why = [w for w in f["summary"]["warnings"] if w.startswith("no data flow")]
            d["dropped"]["flows"] = (why[0] if why else f"no data flow on path {flows[1]}" if flows[1] is not None
                                     else "no data flow")
    first, _last = stats.trace_span(db)
    d["trace_start_ts"] = first
    for r in d["runs"] + d["waits"] + d.get("flows", []):
        for k in ("start_ts", "end_ts", "publish_ts", "arrival_ts", "flow_id", "path_id"):
            if r.get(k) is not None:
                r[k] = int(r[k])
        for k in ("start_ts", "end_ts", "publish_ts"):
            if r.get(k) is not None:
                r[k[:-3] + "_s"] = (r[k] - first) / 1e9
    return C.clean({**d, "warnings": db.warnings, "losses": db.losses})


#: What a time or a split without kernel data reads as: not measured, never a zero.
DASH = "–"


def _at(r: dict, key: str) -> str:
    """A time in seconds from the trace's start (the convention of `report --window`)."""
    v = r.get(key[:-3] + "_s")
    return DASH if v is None else f"{v:.6f} s"


def render_text(d: dict, out=None, wide: bool = False) -> None:
    w = C.TextOut(out or sys.stdout).write
    cut = (lambda n: 10**9) if wide else (lambda n: n)  # noqa: E731
    w(f"times in seconds from the trace's start (absolute, the trace's clock: trace_start_ts {d['trace_start_ts']} ns "
      "+ the time; --json has both)\n")
    if not d["kernel"]:
        w("no kernel scheduling data in this trace: on a CPU, waiting for a CPU and blocked are not measured (shown "
          f"as {DASH}); record it with `roscope record --kernel` (perf sched events), or with an LTTng kernel channel "
          "with sched_switch and sched_wakeup\n")
    elif d.get("coverage") is not None and d["coverage"] < 0.5:
        w(f"the kernel data covers only {C.pct(d['coverage'])} % of the callback runs' time: the trace's threads are "
          "mostly not in it (recorded at another time, or the ROS processes in another pid namespace than perf)\n")
    w("\nlongest callback runs (ms)\n")
    if not d["runs"]:
        w(f"  none: {d['dropped']['runs']}\n")
    for i, r in enumerate(d["runs"], 1):
        w(f"{i:>3}. {C.cell(r['label'], cut(100))}\n")
        w(f"     run {r['run_id']} at {_at(r, 'start_ts')}, process {C.cell(r['procname'], cut(30))} [{r['pid']}]: "
          f"{C.ms(r['duration_ns'])} ms\n")
        if not d["kernel"]:
            w(f"     on CPU {DASH}, waiting for a CPU {DASH}, blocked {DASH}\n")
            continue
        w(f"     on CPU {C.ms(r['on_cpu_ns'])} ms, waiting for a CPU {C.ms(r['runnable_ns'])} ms, blocked "
          f"{C.ms(r['blocked_ns'])} ms, not covered {C.ms(r['unknown_ns'])} ms; preemptions {r['preemptions']}, "
          f"migrations {r['migrations']}\n")
        for c in r["culprits"][:3]:
            w(f"       held the CPU: {C.cell(c['name'], cut(20))} [{c['tid']}] of {C.cell(c['procname'], cut(20))} "
              f"[{c['pid']}] {C.ms(c['ns'])} ms\n")
        w(f"     {r['explanation']}\n")
    _render_waits(d, w, cut)
    _render_flows(d, w, cut)


def _render_flows(d: dict, w, cut) -> None:
    if "flows" not in d:
        return
    s = d["flow_summary"]
    w(f"\nslowest data flows ({s['flows']:,} flows, {s['paths']:,} paths): latency, on a CPU, waiting for a CPU, "
      "blocked (ms; computation and idle segments), queued, wake-up (ms; input waits)\n")
    if not d["flows"]:
        w(f"  none: {d['dropped']['flows']}\n")
    for i, r in enumerate(d["flows"], 1):
        w(f"{i:>3}. flow {r['flow_id']} of path {r['path_id']}, {_at(r, 'start_ts')} to {_at(r, 'end_ts')}: "
          f"{C.cell(r['path'], cut(160))}\n")
        k = {key: C.ms(r[key]) if d["kernel"] else DASH for key in ("on_cpu_ns", "runnable_ns", "blocked_ns")}
        wake = C.ms(r["wakeup_ns"]) if d["kernel"] else DASH
        w(f"     latency {C.ms(r['latency_ns'])}, on CPU {k['on_cpu_ns']}, waiting for a CPU {k['runnable_ns']}, "
          f"blocked {k['blocked_ns']}, queued {C.ms(r['queued_ns'])}, wake-up {wake}\n")
        w(f"     {r['explanation']}\n")


def _render_waits(d: dict, w, cut) -> None:
    w("\nlongest input waits, publication to callback start (ms): transport, queued behind other callbacks, "
      "waiting for a CPU, rest\n")
    if not d["waits"]:
        w(f"  none: {d['dropped']['waits']}\n")
    for i, r in enumerate(d["waits"], 1):
        wake = C.ms(r["wakeup_ns"]) if d["kernel"] else DASH
        w(f"{i:>3}. {C.cell(r['label'], cut(100))}\n")
        w(f"     run {r['run_id']}, publication {r['publication_id']} at {_at(r, 'publish_ts')}: wait "
          f"{C.ms(r['wait_ns'])}, transport {C.ms(r['transport_ns'])}, queued {C.ms(r['queued_ns'])}, wake-up "
          f"{wake}, rest {C.ms(r['rest_ns'])}\n")
        w(f"     {r['explanation']}\n")


def run(args) -> int:
    from roscope.errors import InputError

    if (args.from_re is None) != (args.to_re is None):
        raise InputError("--from and --to go together: give both to see data flows")
    if args.path is not None and args.from_re is None:
        raise InputError("--path N selects data flows: give --from and --to as well")
    flows = None
    if args.from_re is not None:
        from roscope.flow import FlowRequest

        flows = (FlowRequest(args.from_re, args.to_re, all_steps=True), args.path)
    with C.session(args, "why") as s:
        db = s.open_inputs()
        d = collect(db, args.callback, args.top, flows)
    try:
        d["callback"] = args.callback
        C.show(args, d, lambda r: render_text(r, wide=args.wide))
    finally:
        C.report_from(db)
    return 0
