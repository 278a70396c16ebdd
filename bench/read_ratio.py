#!/usr/bin/env python3
"""Decoding against reading (issue 42): the core's decode and `roscope info` as ratios to
reading the same stream files from the page cache, and, with `--before`, to another
build of roscope, paired run by run in the same run.

For each trace, in turn (A B A B ...), `--repeat` times:

  cat STREAM-FILES > /dev/null           the reference: the bytes read, nothing decoded
  roscope-ctf count TRACE                the core's decode of every field, streams merged
  roscope-ctf info TRACE                 the core's summary (streams read in parallel)
  python -m roscope info TRACE           the whole command (interpreter, imports, core)
  (--before DIR: the last three of that build too: DIR/roscope-ctf, DIR/python)

Each child's wall time and CPU time (user + system of the child, os.wait4) are taken; the
table shows medians and, per command, the median of the per-pair ratios to `cat` (CPU and
wall) and to the same command of `--before`. The machine may be shared: CPU ratios are
the figure to read; wall times include waiting for a core. GB/s per core = bytes of the
stream files / median CPU time. Output: a table and bench/results/read_ratio.json.

    .venv/bin/python bench/read_ratio.py [--repeat 9] [--before DIR] [TRACE ...]

Default traces: the shared Autoware trace (683,756 events) and the 2.1M-event ros2sim
Autoware recording of `bench/scale.py`'s preset at D = 6.3
(`bench/results/scale-6.3/traces`, made as that docstring says when present).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(REPO), "shared", "traces"))
DEFAULT = [os.path.join(TRACES, "ros2", "autoware-carla-galactic"), os.path.join(RESULTS, "scale-6.3", "traces")]


def stream_files(trace: str) -> list[str]:
    """Every file of the trace's directories (metadata, streams, indexes)."""
    return sorted(os.path.join(r, f) for r, _d, fs in os.walk(trace) for f in fs)


def measured(argv: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of one run of argv, its output thrown away."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=null, stderr=null, env=env)
        _pid, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: {' '.join(argv[:4])} ... failed")
    return wall, ru.ru_utime + ru.ru_stime


def commands(trace: str, before: str | None) -> dict[str, tuple[list[str], dict | None]]:
    ctf = os.path.join(REPO, "target", "release", "roscope-ctf")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    cmds = {
        "cat": (["cat", *stream_files(trace)], None),
        "roscope-ctf count": ([ctf, "count", trace], None),
        "roscope-ctf info": ([ctf, "info", trace], None),
        "roscope info": ([sys.executable, "-m", "roscope", "info", trace], env),
    }
    if before:
        benv = dict(os.environ, PYTHONPATH=os.path.join(before, "python"))
        cmds["roscope-ctf count (before)"] = ([os.path.join(before, "roscope-ctf"), "count", trace], None)
        cmds["roscope-ctf info (before)"] = ([os.path.join(before, "roscope-ctf"), "info", trace], None)
        cmds["roscope info (before)"] = ([sys.executable, "-m", "roscope", "info", trace], benv)
    return cmds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--before", help="another build: DIR/roscope-ctf and DIR/python (with its _core)")
    args = ap.parse_args()
    traces = args.traces or [t for t in DEFAULT if os.path.isdir(t)]
    out: dict = {"repeat": args.repeat, "load_average": os.getloadavg(), "traces": {}}
    for trace in traces:
        size = sum(os.path.getsize(f) for f in stream_files(trace))
        cmds = commands(trace, args.before)
        for argv, env in cmds.values():  # warm the page cache and the bytecode caches
            measured(argv, env)
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        for _ in range(args.repeat):
            for name, (argv, env) in cmds.items():
                runs[name].append(measured(argv, env))
        rows = {}
        for name, rs in runs.items():
            row = {"wall_s": statistics.median(w for w, _ in rs), "cpu_s": statistics.median(c for _, c in rs),
                   "cpu_vs_cat": statistics.median(c / max(cc, 1e-3) for (_, c), (_, cc) in zip(rs, runs["cat"])),
                   "wall_vs_cat": statistics.median(w / ww for (w, _), (ww, _) in zip(rs, runs["cat"]))}
            row["gb_per_s_per_core"] = size / row["cpu_s"] / 1e9 if row["cpu_s"] > 0 else None
            if f"{name} (before)" in runs:
                row["cpu_vs_before"] = statistics.median(c / cb for (_, c), (_, cb) in zip(rs, runs[f"{name} (before)"]))
            rows[name] = row
        out["traces"][trace] = {"bytes": size, "commands": rows}
        print(f"\n{trace}: {size / 1e6:.1f} MB, median of {args.repeat} (load average {os.getloadavg()[0]:.1f})")
        print(f"{'command':<28} {'wall s':>8} {'CPU s':>7} {'GB/s/core':>9} {'CPU/cat':>8} {'wall/cat':>8} {'CPU/before':>10}")
        for name, r in rows.items():
            vb = f"{r['cpu_vs_before']:.3f}" if "cpu_vs_before" in r else ""
            gb = f"{r['gb_per_s_per_core']:.2f}" if r["gb_per_s_per_core"] else ""
            print(f"{name:<28} {r['wall_s']:>8.3f} {r['cpu_s']:>7.3f} {gb:>9} {r['cpu_vs_cat']:>8.1f} {r['wall_vs_cat']:>8.1f} {vb:>10}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "read_ratio.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
