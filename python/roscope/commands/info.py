"""`roscope info TRACE...`: what is in a trace, at a glance (data: roscope.info)."""
from __future__ import annotations

import os
import sys

from roscope.commands import _common as C
from roscope.info import summarize


def register(sub) -> None:
    p = sub.add_parser(
        "info",
        help="hosts, tracer, ROS flavour, duration, processes, event counts and lost events",
        description="Summarize one or more CTF traces (any directory above their 'metadata' files), or a "
        "database written by `roscope load` (its sources, versions, tables and load statistics). "
        "ROS processes come first; processes that did nothing ROS-related are folded into one line.",
    )
    C.add_inputs(p, databases=False, merge=False, help="trace directories (any directory above 'metadata' files), or one database written by "
                         "`roscope load`")
    C.add_json(p)
    p.set_defaults(func=run)


def _seconds(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e9:.6f} s"


def _ros2_tracer(m: dict, w) -> None:
    """The tracers a recording preloaded (and why); a pip-installed ROS 2's tracer: which, and
    the processes it could not record."""
    t = m.get("tracer")
    if isinstance(t, dict) and isinstance(t.get("preloaded"), list):
        names = {"ros1": "roscope's ROS 1 tracer", "ros2-pypi": "roscope's ROS 2 tracer"}
        used = ", ".join(names.get(str(n), C.escape(str(n))) for n in t["preloaded"]) or "none of roscope's"
        w(f"  tracers preloaded: {used} ({C.escape(str(t.get('why') or '?'))})\n")
    r = m.get("ros2")
    if not isinstance(r, dict):
        return
    if r.get("env"):
        w(f"  ROS 2 from PyPI: {C.escape(str(r.get('distro') or '?'))} at {C.escape(str(r['env']))}, "
          + (f"recorded with roscope's ROS 2 tracer {C.escape(str(r.get('tracer')))}\n" if r.get("preload")
             else "recorded WITHOUT roscope's ROS 2 tracer\n"))
    bad = r.get("tracer_unreachable") or []
    if bad:
        w(f"  {'!' * 70}\n  WARNING: {len(bad)} process{'es' if len(bad) > 1 else ''} loaded a ROS 2 tracer that could not "
          "reach the LTTng session daemon: NONE OF THEIR ROS 2 EVENTS ARE IN THIS TRACE (details on stderr)\n"
          f"  {'!' * 70}\n")


def _trace(t: dict, w) -> None:
    ros = t["ros"]
    flav = ros["flavour"] + (f" ({ros['distro']})" if ros.get("distro") else "") + (" + CARET" if ros.get("caret") else "")
    w(f"\ntrace {t['rel']}  [{t['path']}]\n")
    w(f"  host        {t['hostname'] or '-'}   domain {t['domain'] or '-'}   tracer {t['tracer']}\n")
    w(f"  ROS         {flav}\n")
    if ros["evidence"]:
        w(f"              evidence: {'; '.join(ros['evidence'])}\n")
    c = t["clock"]
    if c:
        w(f"  clock       {c['name']} at {c['freq']:,} Hz, origin offset {c['offset_ns']:,} ns from the Unix epoch\n")
    w(f"  duration    {_seconds(t['duration_ns'])}   ({t['events']:,} events in {t['streams']} streams)\n")
    lost = t["events_discarded"] or t["packets_lost"]
    w(f"  lost        {t['events_discarded']:,} events discarded, {t['packets_lost']:,} packets lost"
      + ("   <-- LOST EVENTS" if lost else "") + "\n")
    w("  events by name:\n")
    width = max((len(C.escape(n)) for n in t["counts"]), default=10)
    for name, n in t["counts"].items():
        w(f"    {C.escape(name):<{width}}  {n:>12,}\n")


def _processes(info: dict, w) -> None:
    ros = [p for p in info["processes"] if p["ros"]]
    other = info["other_processes"]
    if not info["processes"]:
        return
    w(f"\nprocesses ({len(ros)} with ROS events):\n")
    w(f"  {'host':<16} {'pid':>8}  {'procname':<18} {'events':>12}  {'duration ms':>14}\n")
    for p in ros:
        w(f"  {C.cell(p['hostname'], 40):<16} {p['pid']:>8}  {C.cell(p['procname'], 40):<18} {p['events']:>12,}  "
          f"{C.ms(p['last_ts'] - p['first_ts']):>14}\n")
    if other["count"]:
        names = ", ".join(f"{C.escape(n)} ×{k}" for n, k in other["procnames"].items())
        w(f"  + {other['count']} other process{'es' if other['count'] > 1 else ''} without ROS events "
          f"({other['events']:,} events): {names}\n")


def render_text(info: dict, out=None) -> None:
    w = C.TextOut(out or sys.stdout).write
    w(f"{info['events']:,} events in {len(info['traces'])} trace(s) on {len(info['hosts'])} host(s)\n")
    for m in info.get("recordings", []):
        cmd = " ".join(map(str, m.get("command") or [])) if isinstance(m.get("command"), list) else str(m.get("command") or "")
        w(f"recorded by roscope record on {m.get('host')} at {m.get('start_time')} ({m.get('state')}): {cmd}\n")
        _ros2_tracer(m, w)
    for t in info["traces"]:
        _trace(t, w)
    _processes(info, w)
    if info["lost"]["events_discarded"] or info["lost"]["packets_lost"]:
        w(f"\nWARNING: {info['lost']['events_discarded']:,} events were discarded and "
          f"{info['lost']['packets_lost']:,} packets lost by the tracer:\n")
        for x in info["lost"]["streams"]:
            w(f"  {x['file']}: {x['events_discarded']:,} events, {x['packets_lost']:,} packets\n")


def render_db(d: dict, out=None) -> None:
    w = C.TextOut(out or sys.stdout).write
    w(f"database {C.escape(d['database'])}  ({d['size_bytes']:,} bytes)\n")
    w(f"  written by roscope {d['roscope_version']} (schema {d['schema_version']}) on {C.escape(d['host'] or '-')} "
      f"at {d['created']}; heuristic links {'on' if d['heuristic_links'] else 'off'}\n")
    for s in d["sources"]:
        w(f"  source  {C.escape(s['path'])}{'' if s['exists'] else '   (no longer there)'}\n")
    w(f"  events read {d['stats'].get('events', 0):,}\n\ntables:\n")
    for name, n in d["tables"].items():
        w(f"  {C.cell(name, 40):<28} {n:>12,}\n")


def _run_db(args) -> int:
    from roscope.info import summarize_db

    if len(args.inputs) > 1:
        raise C.InputError(f"{C.escape(args.inputs[0])} and {len(args.inputs) - 1} more: give one database, "
                           "or trace directories only")
    d = summarize_db(args.inputs[0])
    C.show(args, d, render_db)
    C.report(d["warnings"], d["losses"])
    return 0


def run(args) -> int:
    # A database is a file, a trace a directory: the database module only for files.
    if any(os.path.isfile(p) for p in args.inputs):
        from roscope.database import is_db

        if any(is_db(p) for p in args.inputs):
            return _run_db(args)
    info = summarize(args.inputs)
    try:
        C.show(args, info, render_text)
    finally:
        C.report(info["warnings"], [(x["file"], x["events_discarded"], x["packets_lost"]) for x in info["lost"]["streams"]])
    return 0
