"""`roscope executor TRACE...|DB`: executor states, utilization and input waits.

The analyses are roscope.executor's (library); this module only renders them:
text in milliseconds, JSON in nanoseconds (docs/analyses.md). The database is
opened read-only and nothing is written into it unless --store.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from roscope.commands import _common as C

if TYPE_CHECKING:
    from roscope.database import Database

#: The statistics shown per callback (JSON keys <name>_ns).
_STATS = ("min", "mean", "p50", "p90", "p99", "max")


def register(sub) -> None:
    p = sub.add_parser(
        "executor",
        help="executor states per thread (waiting, selecting, executing), utilization, input waits",
        description="Executor state shares per thread, where the trace has executor events; per executor thread, "
        "the callbacks it ran (runs, busy time, share); per executor object, where the trace has CARET's executor "
        "events, its type, callback groups and each group's callbacks (runs, busy time); and per subscription "
        "callback how long its input waited from publication to callback start and how much of that the executor "
        "thread was busy running other callbacks. Text in milliseconds, JSON in nanoseconds (docs/analyses.md). "
        "Nothing is written into a database unless --store.",
    )
    C.add_inputs(p)
    p.add_argument("--store", action="store_true",
                   help="store the per-message waits as table run_input_waits in the database, which must be a file "
                        "written by `roscope load`, writable")
    C.add_heuristics(p)
    C.add_json(p)
    C.add_wide(p)
    C.add_progress(p)
    p.set_defaults(func=run)


def collect(db: Database, store: bool = False) -> dict:
    """Everything `roscope executor` shows, as JSON-ready data (durations in ns)."""
    from roscope import executor as ex

    d = ex.executor(db, store=store)
    return C.clean({**d, "warnings": db.warnings, "losses": db.losses})


def _executors(rows: list[dict], w, wide: bool = False) -> None:
    """Per executor thread, the callbacks it ran (runs, busy ms, share of the thread's busy time)."""
    if not rows:
        return
    cbs = [c for t in rows for c in t["callbacks"]]
    what = lambda c: c["topic"] or (f"timer {c['period_ns'] / 1e6:g} ms" if c.get("period_ns") else c["kind"])  # noqa: E731
    nw, tw = C.width(cbs, lambda c: c["node"], 28, wide), C.width(cbs, what, 30, wide)
    sw = C.width(cbs, lambda c: c["symbol"], 50, wide)
    w("\ncallbacks per executor thread (busy = time in outermost callback runs, ms; executor events: the thread "
      "has rclcpp executor events)\n")
    for t in rows:
        w(f"  {C.cell(t['hostname'], 30)} pid {t['pid']} tid {t['tid']} {C.cell(t['procname'], 30)}: "
          f"{len(t['callbacks'])} callback(s), {t['runs']:,} runs, busy {C.ms(t['busy_ns'])}"
          + (", executor events" if t["executor_events"] else "") + "\n")
        for c in t["callbacks"]:
            w(f"    {C.cell(c['node'], nw):<{nw}} {C.cell(c['kind'], 12):<12} {C.cell(what(c), tw):<{tw}} "
              f"{c['runs']:>8,} {C.ms(c['busy_ns']):>12} {C.pct(c['share'] or 0):>7}  {C.cell(c['symbol'], sw)}\n")


def _hex(x) -> str:
    return "?" if x is None else f"0x{x:x}"


def _executor_objects(rows: list[dict], w, wide: bool = False) -> None:
    """Per executor object (CARET's events), its callback groups and their members (runs, busy ms)."""
    if not rows:
        w("\nexecutor objects and callback groups: not in this trace (CARET records them: construct_executor, "
          "add_callback_group, callback_group_add_*; ros2_tracing has no such events)\n")
        return
    ms = [m for x in rows for g in x["groups"] for m in g["members"]]
    what = lambda m: m["topic"] or (f"timer {m['period_ns'] / 1e6:g} ms" if m.get("period_ns") else _hex(m["handle"]))  # noqa: E731
    nw, tw = C.width(ms, lambda m: m["node"], 28, wide), C.width(ms, what, 30, wide)
    sw = C.width(ms, lambda m: m["symbol"], 50, wide)
    w("\nexecutors and their callback groups (CARET's executor events; runs and busy time of each member's callback, "
      "busy = time in outermost callback runs, ms)\n")
    for x in rows:
        where = (f"{C.cell(x['hostname'], 30)} pid {x['pid']} {C.cell(x['procname'], 30)}" if x["executor_id"] is not None
                 else "groups whose executor is not in the trace")
        threads = ", ".join(str(t) for t in x["tids"]) or "-"
        w(f"  {where}: executor {_hex(x['handle'])} {C.cell(x['type'] or '?', 40)}, threads {threads}: "
          f"{len(x['groups'])} group(s), {x['runs']:,} runs, busy {C.ms(x['busy_ns'])}\n")
        for g in x["groups"]:
            w(f"    group {_hex(g['handle'])} {C.cell(g['type'] or '?', 20)}: {len(g['members'])} member(s), "
              f"{g['runs']:,} runs, busy {C.ms(g['busy_ns'])}\n")
            for m in g["members"]:
                cb = "" if m["callback_id"] is not None else " (no callback recorded)"
                w(f"      {C.cell(m['node'], nw):<{nw}} {C.cell(m['kind'], 12):<12} {C.cell(what(m), tw):<{tw}} "
                  f"{m['runs']:>8,} {C.ms(m['busy_ns']):>12}  {C.cell(m['symbol'], sw)}{cb}\n")


def render_text(d: dict, out=None, wide: bool = False) -> None:
    w = C.TextOut(out or sys.stdout).write
    if not d["threads"]:
        w("no executor states in this trace (ros2_tracing records executor events from Humble on; ROS 1 has none)\n")
    else:
        w(f"{'host':<14} {'pid':>8} {'tid':>8} {'procname':<18} {'traced ms':>12} {'exec %':>7} {'wait %':>7} "
          f"{'select %':>8} {'runs':>8}\n")
        for t in d["threads"]:
            tr = t["traced_ns"] or 0
            ex, wa, se = ((t[k] or 0) / tr if tr else None for k in ("executing_ns", "waiting_ns", "selecting_ns"))
            w(f"{C.cell(t['hostname'], 14):<14} {t['pid']:>8} {t['tid']:>8} {C.cell(t['procname'], 18):<18} "
              f"{C.ms(tr):>12} {C.pct(ex):>7} {C.pct(wa):>7} {C.pct(se):>8} {t['executions']:>8}\n")
    _executors(d.get("executors") or [], w, wide)
    _executor_objects(d.get("executor_objects") or [], w, wide)
    if d["input_waits"]:
        w("\ninput wait, publication to callback start (ms), and executor busy with other callbacks meanwhile (ms)\n")
        w(f"  {'node / topic':<55} {'count':>7}" + "".join(f" {c:>9}" for c in _STATS) + f" {'busy mean':>9} {'busy max':>9}\n")
        for r in d["input_waits"]:
            name = f"{r['node']} {r['topic']}"
            w(f"  {C.cell(name, 55):<55} {r['count']:>7,}"
              + "".join(f" {C.ms(r[f'{k}_ns']):>9}" for k in _STATS)
              + f" {C.ms(r['executor_busy_mean_ns']):>9} {C.ms(r['executor_busy_max_ns']):>9}\n")


def run(args) -> int:
    from roscope.commands.flow import open_for

    with C.session(args, "executor") as s:
        db = s.open_inputs(lambda: open_for(args))
        s.progress.phase("executor states and input waits")
        d = collect(db, args.store)
    try:
        C.show(args, d, lambda r: render_text(r, wide=args.wide))
    finally:
        C.report_from(db)
    return 0
