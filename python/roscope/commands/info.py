"""`roscope info TRACE...`: what is in a trace, at a glance."""
from __future__ import annotations

import json
import sys

from roscope import manifest
from roscope.flavour import detect
from roscope.trace import Trace


def register(sub) -> None:
    p = sub.add_parser(
        "info",
        help="hosts, tracer, ROS flavour, duration, processes, event counts and lost events",
        description="Summarize one or more CTF traces (any directory above their 'metadata' files).",
    )
    p.add_argument("traces", nargs="+", metavar="TRACE")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(func=run)


def _fmt_ns(ns: int | None) -> str:
    if ns is None:
        return "-"
    return f"{ns / 1e9:.6f} s"


def build(paths: list[str]) -> dict:
    t = Trace(paths)
    s = t.summary()
    total_discarded = sum(x["events_discarded"] for x in s["streams"])
    total_packets_lost = sum(x["packets_lost"] for x in s["streams"])
    traces = []
    for i, tr in enumerate(s["traces"]):
        env = tr["env"]
        fl = detect(tr)
        tracer = env.get("tracer_name", "?")
        ver = ".".join(str(env[k]) for k in ("tracer_major", "tracer_minor", "tracer_patchlevel") if k in env)
        first, last = tr["first_ts"], tr["last_ts"]
        streams = [x for x in s["streams"] if x["trace"] == i]
        traces.append(
            {
                "path": tr["path"],
                "rel": tr["rel"],
                "hostname": env.get("hostname"),
                "domain": env.get("domain"),
                "tracer": f"{tracer} {ver}".strip(),
                "trace_name": env.get("trace_name"),
                "clock": tr["clocks"][0] if tr["clocks"] else None,
                "ros": fl,
                "events": tr["events"],
                "first_ts": first,
                "last_ts": last,
                "duration_ns": (last - first) if first is not None and last is not None else None,
                "counts": dict(sorted(tr["counts"].items(), key=lambda kv: (-kv[1], kv[0]))),
                "streams": len(streams),
                "events_discarded": sum(x["events_discarded"] for x in streams),
                "packets_lost": sum(x["packets_lost"] for x in streams),
            }
        )
    procs = [
        {
            "trace": s["traces"][p["trace"]]["rel"],
            "hostname": s["traces"][p["trace"]]["env"].get("hostname"),
            "pid": p["vpid"],
            "procname": p["procname"],
            "events": p["events"],
            "first_ts": p["first_ts"],
            "last_ts": p["last_ts"],
        }
        for p in s["processes"]
    ]
    lost = [
        {"file": x["file"], "events_discarded": x["events_discarded"], "packets_lost": x["packets_lost"]}
        for x in s["streams"]
        if x["events_discarded"] or x["packets_lost"]
    ]
    manifests = []
    for m, man in manifest.find(paths):
        if isinstance(man, Exception):
            print(f"roscope: warning: {m}: cannot read the manifest: {man}", file=sys.stderr)
        else:
            manifests.append(man)
    return {
        "paths": paths,
        "recordings": manifests,
        "events": s["events"],
        "hosts": sorted({t["hostname"] for t in traces if t["hostname"]}),
        "traces": traces,
        "processes": procs,
        "lost": {"events_discarded": total_discarded, "packets_lost": total_packets_lost, "streams": lost},
        "warnings": s["warnings"],
    }


def render_text(info: dict, out=sys.stdout) -> None:
    w = out.write
    w(f"{info['events']:,} events in {len(info['traces'])} trace(s) on {len(info['hosts'])} host(s)\n")
    for m in info.get("recordings", []):
        cmd = " ".join(m.get("command") or []) if isinstance(m.get("command"), list) else str(m.get("command") or "")
        w(f"recorded by roscope record on {m.get('host')} at {m.get('start_time')} ({m.get('state')}): {cmd}\n")
    for t in info["traces"]:
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
        w(f"  duration    {_fmt_ns(t['duration_ns'])}   ({t['events']:,} events in {t['streams']} streams)\n")
        lost = t["events_discarded"] or t["packets_lost"]
        w(f"  lost        {t['events_discarded']:,} events discarded, {t['packets_lost']:,} packets lost" + ("   <-- LOST EVENTS" if lost else "") + "\n")
        w("  events by name:\n")
        width = max((len(n) for n in t["counts"]), default=10)
        for name, n in t["counts"].items():
            w(f"    {name:<{width}}  {n:>12,}\n")
    if info["processes"]:
        w("\nprocesses:\n")
        w(f"  {'host':<16} {'pid':>8}  {'procname':<18} {'events':>12}  {'duration':>14}\n")
        for p in info["processes"]:
            w(f"  {str(p['hostname'] or '-'):<16} {p['pid']:>8}  {p['procname']:<18} {p['events']:>12,}  {_fmt_ns(p['last_ts'] - p['first_ts']):>14}\n")
    if info["lost"]["events_discarded"] or info["lost"]["packets_lost"]:
        w(f"\nWARNING: {info['lost']['events_discarded']:,} events were discarded and {info['lost']['packets_lost']:,} packets lost by the tracer:\n")
        for x in info["lost"]["streams"]:
            w(f"  {x['file']}: {x['events_discarded']:,} events, {x['packets_lost']:,} packets\n")


def run(args) -> int:
    info = build(args.traces)
    if args.json:
        json.dump(info, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render_text(info)
    for wmsg in info["warnings"]:
        print(f"roscope: warning: {wmsg}", file=sys.stderr)
    lost = info["lost"]
    if lost["events_discarded"] or lost["packets_lost"]:
        print(
            f"roscope: warning: {lost['events_discarded']:,} events discarded, {lost['packets_lost']:,} packets lost",
            file=sys.stderr,
        )
    return 0
