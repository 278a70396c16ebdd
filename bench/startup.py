#!/usr/bin/env python3
"""Start-up on a small trace (issue 29): wall time, CPU time and peak RSS of
`roscope stats TRACE` on a ~100k-event trace, against `babeltrace2 -o dummy` on the
same trace in the same run (the ratios), and, with --before DIR, against another
roscope (a checkout's `python/` directory, e.g. ../before/python) on it too.

The trace: ros2sim's Autoware reference system on Jazzy layouts (`--scale 10
--duration 2.5`: about 107,000 events, the issue's "~100k-event trace"; ros2sim's
executor events made its former 4-s trace 170,759 events), made once into
bench/results/startup-jazzy-100k,
or the trace directory given with --trace. Every command runs --repeat times
(default 5), interleaved; the median of each is shown and the ratios are of medians.
Python's bytecode is compiled first into a private cache (PYTHONPYCACHEPREFIX), for
both roscopes, as an installed package has it: otherwise each run would compile
roscope's modules from source (with PYTHONDONTWRITEBYTECODE set, every run does).

With --instructions, each command also runs once under valgrind's callgrind, and the
instructions it executed (all threads) are shown: unlike CPU time, a count that the
other jobs of a shared machine do not change (it leaves out the cost of page faults
and of waiting; about 100x slower than a plain run).

    .venv/bin/python bench/startup.py [--trace DIR] [--before ../before/python] [--repeat 5] [--instructions]

Prints a table and writes bench/results/startup.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from scale import measured  # bench/ is the script's directory

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")

TRACE = os.path.join(RESULTS, "startup-jazzy-100k")


def ensure_trace() -> str:
    """bench/results/startup-jazzy-100k/traces, made with ros2sim when missing."""
    traces = os.path.join(TRACE, "traces")
    if not os.path.isdir(traces):
        os.makedirs(RESULTS, exist_ok=True)
        subprocess.run(["make", "-s", "-C", os.path.join(REPO, "tools", "ros2sim")], check=True)
        subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "ros2sim", "ros2sim.py"), "run", "--preset",
                        "autoware_reference_system_mp", "--distro", "jazzy", "--scale", "10", "--duration", "2.5",
                        "--out", TRACE], check=True)
    return traces


def instructions(argv: list[str], env: dict) -> int:
    """The instructions `argv` executes, all its threads, counted by valgrind's callgrind."""
    with tempfile.TemporaryDirectory(prefix="roscope-startup-cg-") as tmp:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", *argv], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"bench: callgrind of {' '.join(argv)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", help="a trace directory (default: the ros2sim Jazzy trace, made once)")
    ap.add_argument("--before", help="another roscope's python/ directory, run on the same trace")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--instructions", action="store_true", help="also count each command's instructions (callgrind)")
    args = ap.parse_args()
    trace = args.trace or ensure_trace()
    bt2 = shutil.which("babeltrace2")
    if bt2 is None:
        raise SystemExit("bench: babeltrace2 is not installed (the reference)")
    pythons = {"roscope": os.path.join(REPO, "python")}
    if args.before:
        pythons["before"] = os.path.abspath(args.before)
    with tempfile.TemporaryDirectory(prefix="roscope-startup-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for path in pythons.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(path, "roscope")], env=env,
                           check=True, stdout=subprocess.DEVNULL)
        cmds = {"babeltrace2": ([bt2, "-o", "dummy", trace], env)}
        for name, path in pythons.items():
            cmds[name] = ([sys.executable, "-m", "roscope", "stats", trace], {**env, "PYTHONPATH": path})
        events = json.loads(subprocess.run([sys.executable, "-m", "roscope", "info", trace, "--json"], check=True,
                                           capture_output=True, text=True, env=cmds["roscope"][1]).stdout)["events"]
        runs: dict[str, list[dict]] = {k: [] for k in cmds}
        for _ in range(args.repeat):
            for name, (argv, e) in cmds.items():
                runs[name].append(measured(argv, env=e))
        if args.instructions:
            if shutil.which("valgrind") is None:
                raise SystemExit("bench: --instructions needs valgrind")
            for name, (argv, e) in cmds.items():
                runs[name][0]["instructions"] = instructions(argv, e)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall_s", "cpu_s", "peak_rss_mib")} for k, v in runs.items()}
    ref = med["babeltrace2"]
    print(f"{trace}: {events:,} events, {args.repeat} runs each (medians)")
    print(f"{'':<12} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'wall/bt2':>9} {'cpu/bt2':>8}")
    for k, m in med.items():
        print(f"{k:<12} {m['wall_s']:>8.3f} {m['cpu_s']:>8.3f} {m['peak_rss_mib']:>9.1f} "
              f"{m['wall_s'] / ref['wall_s']:>9.2f} {m['cpu_s'] / max(ref['cpu_s'], 1e-3):>8.2f}")
    if args.instructions:
        print(f"{'':<12} {'instructions (callgrind)':>26} {'/bt2':>6}")
        ref_n = runs["babeltrace2"][0]["instructions"]
        for k, r in runs.items():
            print(f"{k:<12} {r[0]['instructions']:>26,} {r[0]['instructions'] / ref_n:>6.2f}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "startup.json"), "w") as f:
        json.dump({"trace": trace, "events": events, "medians": med, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
