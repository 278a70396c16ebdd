"""What is in a set of traces, at a glance: the data behind `roscope info`.

`summarize(paths)` returns a JSON-ready dict: hosts, tracers, ROS flavour per
trace (roscope.flavour), duration, event counts by name, processes (ROS
processes first; each with ``ros`` saying whether it did anything ROS-related),
lost events, `roscope record` manifests, and the warnings met on the way.

A process is ROS-related when it emitted at least one event of a ROS provider
(``ros2:``, ``ros2_caret:``, ``roscpp:``, ``roscope_ros1:``, ``roscope_ros2:``) other
than the ``process_init`` of roscope's ROS 1 and ROS 2 tracers, which they emit in every
process they are loaded into (a `sleep` started by a launch script too).

A recording of a pip-installed ROS 2 whose tracer could not reach the session daemon
(roscope.ros2_pip) has it in its manifest: each such process is a warning.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from roscope import manifest
from roscope.flavour import detect
from roscope.trace import Trace

#: Providers whose events make a process a ROS process.
ROS_PROVIDERS = ("ros2:", "ros2_caret:", "roscpp:", "roscope_ros1:", "roscope_ros2:")
#: ROS-provider events that every traced process emits, ROS or not.
BOOKKEEPING_EVENTS = frozenset({"roscope_ros1:process_init", "roscope_ros2:process_init"})


def is_ros_event(name: str) -> bool:
    """Whether an event of this name makes its process a ROS process."""
    return name.startswith(ROS_PROVIDERS) and name not in BOOKKEEPING_EVENTS


def _non_ros_counts(trace_path: str, names: list[str]) -> dict[int, int]:
    """vpid -> events of the given (non-ROS) names in one trace; one columnar pass, each
    batch counted by DuckDB (no pyarrow)."""
    import duckdb

    counts: dict[int, int] = {}
    con = duckdb.connect()
    try:
        for _ti, _name, table in Trace([trace_path]).core_batches(names):
            rel = con.from_arrow(table)
            if "vpid" not in rel.columns:
                continue
            for vpid, n in rel.aggregate("vpid, count(*)", "vpid").fetchall():
                if vpid is not None:
                    counts[vpid] = counts.get(vpid, 0) + n
    finally:
        con.close()
    return counts


def ros_processes(summary: dict) -> set[tuple[int, int]]:
    """(trace index, vpid) of the ROS processes among the summary's processes.

    A trace whose events are all ROS events needs no reading (all its processes
    are ROS), nor one without any ROS event (none are); a trace holding both
    is read once more for the non-ROS events only: a process is ROS-related
    when it has more events than non-ROS ones."""
    ros: set[tuple[int, int]] = set()
    by_trace: dict[int, list[dict]] = {}
    for p in summary["processes"]:
        by_trace.setdefault(p["trace"], []).append(p)
    for ti, procs in by_trace.items():
        tr = summary["traces"][ti]
        names = list(tr["counts"])
        non_ros = [n for n in names if not is_ros_event(n)]
        if len(non_ros) == len(names):
            continue
        if not non_ros:
            ros.update((ti, p["vpid"]) for p in procs)
            continue
        other = _non_ros_counts(tr["path"], non_ros)
        ros.update((ti, p["vpid"]) for p in procs if p["events"] > other.get(p["vpid"], 0))
    return ros


def _trace_entry(i: int, tr: dict, streams: list[dict]) -> dict:
    env = tr["env"]
    tracer = env.get("tracer_name", "?")
    ver = ".".join(str(env[k]) for k in ("tracer_major", "tracer_minor", "tracer_patchlevel") if k in env)
    first, last = tr["first_ts"], tr["last_ts"]
    mine = [x for x in streams if x["trace"] == i]
    return {
        "path": tr["path"],
        "rel": tr["rel"],
        "hostname": env.get("hostname"),
        "domain": env.get("domain"),
        "tracer": f"{tracer} {ver}".strip(),
        "trace_name": env.get("trace_name"),
        "clock": tr["clocks"][0] if tr["clocks"] else None,
        "ros": detect(tr),
        "events": tr["events"],
        "first_ts": first,
        "last_ts": last,
        "duration_ns": (last - first) if first is not None and last is not None else None,
        "counts": dict(sorted(tr["counts"].items(), key=lambda kv: (-kv[1], kv[0]))),
        "streams": len(mine),
        "events_discarded": sum(x["events_discarded"] for x in mine),
        "packets_lost": sum(x["packets_lost"] for x in mine),
    }


def _processes(s: dict) -> tuple[list[dict], dict]:
    """All processes (ROS ones first, each in order of appearance) and a summary of the others."""
    ros = ros_processes(s)
    procs = [
        {
            "trace": s["traces"][p["trace"]]["rel"],
            "hostname": s["traces"][p["trace"]]["env"].get("hostname"),
            "pid": p["vpid"],
            "procname": p["procname"],
            "ros": (p["trace"], p["vpid"]) in ros,
            "events": p["events"],
            "first_ts": p["first_ts"],
            "last_ts": p["last_ts"],
        }
        for p in s["processes"]
    ]
    procs.sort(key=lambda p: not p["ros"])  # stable: order of appearance within each group
    others = [p for p in procs if not p["ros"]]
    names: dict[str, int] = {}
    for p in others:
        names[p["procname"]] = names.get(p["procname"], 0) + 1
    folded = {
        "count": len(others),
        "events": sum(p["events"] for p in others),
        "procnames": dict(sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))),
    }
    return procs, folded


def _empty_recording(paths: Sequence[str]) -> bool:
    """A recording by `roscope record` (its manifest is there) in which LTTng wrote no
    stream at all: a trace to report as empty, not a directory without a trace."""
    if not any(True for _ in manifest.find(paths)):
        return False
    return not any("metadata" in files for p in paths for _r, _d, files in os.walk(p))


def summarize(paths: Sequence[str]) -> dict:
    """Everything `roscope info` shows about the traces at `paths`, JSON-ready."""
    t = Trace(paths)
    if _empty_recording(t.paths):
        s = {"traces": [], "streams": [], "processes": [], "events": 0,
             "warnings": [f"{p}: this recording holds no CTF stream: LTTng recorded no event "
                          "(no traced process reached the session)" for p in t.paths]}
    else:
        s = t.summary()
    paths = t.paths
    traces = [_trace_entry(i, tr, s["streams"]) for i, tr in enumerate(s["traces"])]
    procs, folded = _processes(s)
    lost = [
        {"file": x["file"], "events_discarded": x["events_discarded"], "packets_lost": x["packets_lost"]}
        for x in s["streams"]
        if x["events_discarded"] or x["packets_lost"]
    ]
    warnings = list(s["warnings"])
    manifests = []
    for m, man in manifest.find(paths):
        if isinstance(man, Exception):
            warnings.append(f"{m}: cannot read the manifest: {man}")
        else:
            manifests.append(man)
            if isinstance(man, dict) and isinstance(man.get("ros2"), dict):
                from roscope import ros2_pip  # here: a pip-installed ROS 2's recording only (~13 ms of imports)

                warnings += ros2_pip.warnings_of_manifest(man)
    return {
        "paths": paths,
        "recordings": manifests,
        "events": s["events"],
        "hosts": sorted({t["hostname"] for t in traces if t["hostname"]}),
        "traces": traces,
        "processes": procs,
        "other_processes": folded,
        "lost": {
            "events_discarded": sum(x["events_discarded"] for x in s["streams"]),
            "packets_lost": sum(x["packets_lost"] for x in s["streams"]),
            "streams": lost,
        },
        "warnings": warnings,
    }


def summarize_db(path: str) -> dict:
    """What a database written by `roscope load` holds: where and when it was made
    (sources, whether they are still there, roscope and schema versions), its tables
    with row counts, the load's statistics, warnings and lost events."""
    from roscope import opening  # here, not at the top: `roscope info TRACE` starts without DuckDB

    with opening.open(path) as d:
        meta = d.meta
        tables = {r["table_name"]: r["estimated_size"] for r in d.records(
            "SELECT table_name, estimated_size FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' ORDER BY table_name")}
        for name in tables:  # exact counts (names come from the catalog, quoted)
            tables[name] = d.con.table(f'"{name}"').aggregate("count(*)").fetchall()[0][0]
    sources = [{"path": s, "exists": os.path.exists(s)} for s in meta.get("sources", [])]
    return {"database": os.path.abspath(path), "size_bytes": os.path.getsize(path),
            "schema_version": meta.get("schema_version"), "roscope_version": meta.get("roscope_version"),
            "created": meta.get("created"), "host": meta.get("host"), "heuristic_links": meta.get("heuristic_links"),
            "sources": sources, "tables": tables, "stats": meta.get("stats", {}),
            "warnings": list(meta.get("warnings", [])), "losses": list(meta.get("losses", []))}
