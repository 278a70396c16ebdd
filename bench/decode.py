#!/usr/bin/env python3
"""Decode benchmark: roscope's CTF reader against babeltrace2, same run, same traces.

For each trace (the largest real one, ../shared/traces/ros2/autoware-carla-galactic,
and a generated trace of >= 10M ROS 2-like events, made by bench/gen/record.sh and
cached under bench/results/gen-10M), time best-of-N (default 3), interleaved:

  babeltrace2 -o dummy TRACE            the reference (full decode, no output)
  target/release/roscope-ctf count TRACE pure-Rust decode of every field
  roscope info TRACE                    the end-to-end CLI (if roscope is importable)

and report wall time, events/s, speed-up over babeltrace2 and peak RSS of each
child (os.wait4's rusage, so each number is that process's own).  The event count
comes from babeltrace2 (sink.utils.counter), and roscope-ctf's own count is checked
against it.  Prints a table; writes bench/results/decode.json.

    .venv/bin/python bench/decode.py [--runs 3] [--events 10000000] [--only autoware|gen]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(REPO), "shared", "traces"))
BIG_REAL = os.path.join(TRACES, "ros2", "autoware-carla-galactic")
GEN_DIR = os.path.join(RESULTS, "gen-10M")
ROSCOPE_CTF = os.path.join(REPO, "target", "release", "roscope-ctf")


def run_measured(argv: list[str], timeout: float = 3600) -> dict:
    """Run argv with stdout/stderr captured to files; wall time and the
    child's own peak RSS (ru_maxrss, KiB on Linux) from os.wait4."""
    out_path = os.path.join(RESULTS, ".bench-stdout")
    err_path = os.path.join(RESULTS, ".bench-stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _pid, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, "rb") as f:
        stdout = f.read().decode("utf-8", "replace")
    with open(err_path, "rb") as f:
        stderr = f.read().decode("utf-8", "replace")
    return {"wall": wall, "maxrss_kib": ru.ru_maxrss, "user": ru.ru_utime, "sys": ru.ru_stime,
            "rc": proc.returncode, "stdout": stdout, "stderr": stderr}


def bt2_count(trace: str) -> dict:
    """Events and discarded-events messages according to babeltrace2."""
    p = subprocess.run(["babeltrace2", trace, "-c", "sink.utils.counter", "--params=step=+0"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    def get(label):
        m = re.search(r"^\s*(\d+) " + label, p.stdout, re.M)
        return int(m.group(1)) if m else None
    return {"events": get("Event messages"), "discarded_event_messages": get("Discarded event messages"),
            "discarded_packet_messages": get("Discarded packet messages")}


def ensure_generated(n: int) -> str | None:
    rec = os.path.join(GEN_DIR, "recorded.json")
    if os.path.isfile(rec):
        with open(rec) as f:
            info = json.load(f)
        if info.get("events", 0) >= n:
            return GEN_DIR
    if shutil.which("lttng") is None:
        print("bench: lttng not installed, cannot generate the 10M-event trace", file=sys.stderr)
        return None
    print(f"bench: recording {n:,} events into {GEN_DIR} (bench/gen/record.sh) ...", file=sys.stderr)
    subprocess.run([os.path.join(BENCH, "gen", "record.sh"), GEN_DIR, str(n)], check=True)
    return GEN_DIR


def roscope_cli() -> list[str] | None:
    venv_script = os.path.join(REPO, ".venv", "bin", "roscope")
    if os.path.exists(venv_script):
        return [venv_script]
    try:
        import importlib.util
        if importlib.util.find_spec("roscope") is not None:
            return [sys.executable, "-m", "roscope"]
    except Exception:
        pass
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=10_000_000, help="size of the generated trace")
    ap.add_argument("--only", choices=["autoware", "gen"])
    args = ap.parse_args()
    os.makedirs(RESULTS, exist_ok=True)

    traces = []
    if args.only in (None, "autoware"):
        if os.path.isdir(BIG_REAL):
            traces.append(("autoware-carla-galactic", BIG_REAL))
        else:
            print(f"bench: {BIG_REAL} missing, skipped", file=sys.stderr)
    if args.only in (None, "gen"):
        g = ensure_generated(args.events)
        if g:
            traces.append((f"generated-{args.events // 1_000_000}M", g))

    tools = [("babeltrace2", lambda t: ["babeltrace2", "-o", "dummy", t])]
    notes = []
    if os.access(ROSCOPE_CTF, os.X_OK):
        tools.append(("roscope-ctf count", lambda t: [ROSCOPE_CTF, "count", t]))
    else:
        notes.append(f"{ROSCOPE_CTF} not built (cargo build --release -p roscope-ctf)")
    cli = roscope_cli()
    if cli:
        tools.append(("roscope info", lambda t: [*cli, "info", t]))
    else:
        notes.append("roscope CLI not importable/installed: `roscope info` not measured")

    results = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                           "python": sys.version.split()[0]},
               "runs": args.runs, "traces": {}, "notes": notes}
    for label, trace in traces:
        ref = bt2_count(trace)
        n = ref["events"]
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _d, fs in os.walk(trace) for f in fs)
        entry = {"path": trace, "events": n, "bytes": size, "bt2_counter": ref, "tools": {}}
        samples = {name: [] for name, _ in tools}
        for _ in range(args.runs):
            for name, mk in tools:  # interleaved, so drift hits all alike
                r = run_measured(mk(trace))
                if r["rc"] != 0:
                    print(f"bench: {name} on {label} failed ({r['rc']}): {r['stderr'][-500:]}", file=sys.stderr)
                samples[name].append(r)
        for name, rs in samples.items():
            ok = [r for r in rs if r["rc"] == 0]
            if not ok:
                entry["tools"][name] = {"error": rs[-1]["stderr"][-500:]}
                continue
            best = min(ok, key=lambda r: r["wall"])
            t = {"best_wall_s": round(best["wall"], 4), "walls_s": [round(r["wall"], 4) for r in rs],
                 "events_per_s": round(n / best["wall"]), "peak_rss_mib": round(max(r["maxrss_kib"] for r in ok) / 1024, 1),
                 "cpu_s": round(best["user"] + best["sys"], 4)}
            if name == "roscope-ctf count":
                m = re.search(r"(\d+) events", best["stdout"] + best["stderr"])
                t["reported_events"] = int(m.group(1)) if m else None
                t["count_matches_babeltrace2"] = t["reported_events"] == n
            entry["tools"][name] = t
        ref_wall = entry["tools"].get("babeltrace2", {}).get("best_wall_s")
        for t in entry["tools"].values():
            if ref_wall and "best_wall_s" in t:
                t["speedup_vs_babeltrace2"] = round(ref_wall / t["best_wall_s"], 2)
        results["traces"][label] = entry

    # table
    print(f"\nbest of {args.runs} runs, {os.cpu_count()} CPUs")
    hdr = f"{'trace':<26} {'events':>11} {'tool':<18} {'wall s':>8} {'events/s':>13} {'x bt2':>7} {'peak RSS MiB':>13}"
    print(hdr)
    print("-" * len(hdr))
    for label, e in results["traces"].items():
        for name, t in e["tools"].items():
            if "error" in t:
                print(f"{label:<26} {e['events']:>11,} {name:<18} {'FAILED':>8}")
                continue
            extra = "" if t.get("count_matches_babeltrace2", True) else "  (count differs from babeltrace2!)"
            print(f"{label:<26} {e['events']:>11,} {name:<18} {t['best_wall_s']:>8.3f} {t['events_per_s']:>13,} "
                  f"{t.get('speedup_vs_babeltrace2', 0):>7.2f} {t['peak_rss_mib']:>13.1f}{extra}")
    for note in notes:
        print("note:", note)
    out = os.path.join(RESULTS, "decode.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\nwritten {out}")
    for p in (".bench-stdout", ".bench-stderr"):
        try:
            os.remove(os.path.join(RESULTS, p))
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
