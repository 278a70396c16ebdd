#!/usr/bin/env python3
"""Load-time cost of kernel scheduling and clock synchronization (issues 12, 14 and 29).

Records the Autoware reference-system preset (ros2sim, Rolling layouts, --scale 100)
split over two hosts (sensors and perception on host a; planning and control on host b,
whose clock runs 5 ms ahead and 50 ppm fast), about 10M events in 31.5 s, while
`perf record -k mono -e sched:sched_switch -e sched:sched_wakeup -a` records the
kernel's scheduling, as `roscope record --kernel` does. Then times, interleaved in one
run (best of --runs), `roscope load` of

  OUT                           kernel data (OUT/perf/perf.data) and clock sync: what users get
  OUT --no-sync                 kernel data only
  OUT --no-kernel               clock sync only
  OUT --no-kernel --no-sync     neither: the reference (the two hosts streamed as one)

and reports each as a ratio to the reference, for each recording length of
--durations (one recording each, kept in bench/results/why-cost-SECONDS): whether the
kernel data's memory grows with the recording; and issue 29's targets: kernel data at
most 1.5x the reference's time and under 500 MiB, clock sync within 20 % of its memory.
Peak RSS is given for the whole command (wait4: `roscope load` and any `perf script` it
runs: roscope reads perf.data itself, and runs perf only for a file its reader does not
handle) and for roscope's own process (its RUSAGE_SELF); `perf script` alone is measured
apart (its RSS is perf.data itself: 64-bit perf maps the whole file and keeps the pages it
has read). (Its children's RUSAGE_CHILDREN would not do: a child started by vfork counts
the parent's peak as its own.) With --before DIR (a python/ directory of another roscope
version, e.g. `git archive REV python | tar -x -C DIR` plus the built _core), every case
but the reference runs with it too, as "... (before)". Writes bench/results/why_cost.json.

    .venv/bin/python bench/why_cost.py [--durations 31.5 8] [--runs 1] [--before DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import scale  # bench/ is the script's directory: its measurement of a command

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
ROSCOPE = [sys.executable, "-m", "roscope"]


def system() -> dict:
    with open(os.path.join(REPO, "tools", "ros2sim", "presets", "autoware_reference_system_mp.json")) as f:
        sysd = json.load(f)
    for p in sysd["processes"]:
        p["host"] = "a" if p["name"] in ("sensors", "perception") else "b"
    sysd["hosts"] = [{"name": "a"}, {"name": "b", "clock_offset_ns": 5_000_000, "clock_drift_ppm": 50.0}]
    return sysd


def record(out: str, duration: float) -> None:
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "tools", "ros2sim")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        sysfile = os.path.join(tmp, "system.json")
        with open(sysfile, "w") as f:
            json.dump(system(), f)
        perf_data = os.path.join(tmp, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-k", "mono", "-e", "sched:sched_switch", "-e",
                                 "sched:sched_wakeup", "-a", "-o", perf_data], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(1.0)
        try:
            subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "ros2sim", "ros2sim.py"), "run",
                            "--system", sysfile, "--distro", "rolling", "--scale", "100", "--duration", f"{duration:g}",
                            "--subbuf-size", "4M", "--num-subbuf", "8", "--out", out], check=True)
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=120)
        os.makedirs(os.path.join(out, "perf"))
        shutil.move(perf_data, os.path.join(out, "perf", "perf.data"))


#: Runs `roscope` and reports, on stderr, the peak RSS of its own process.
_WRAP = ("import atexit, resource, runpy, sys\n"
         "def _peak():\n"
         "    print('#peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
         "atexit.register(_peak)\n"
         "sys.argv[0] = 'roscope'\n"
         "runpy.run_module('roscope', run_name='__main__', alter_sys=True)\n")


def measured(args: list[str], python_dir: str | None = None, own: bool = True) -> dict:
    """`roscope ARGS` (or, with own=False, the command ARGS): scale.py's figures of the
    whole command (wait4), and the peak RSS of roscope's own process (MiB); with
    `python_dir`, roscope from there."""
    env = {**os.environ, "PYTHONPATH": python_dir} if python_dir else None
    r = scale.measured([sys.executable, "-c", _WRAP, *args] if own else args, env=env, stderr=own)
    if own:
        text = r.pop("stderr")
        r["own_peak_rss_mib"] = round(int(next(ln.split()[1] for ln in text.splitlines() if ln.startswith("#peak"))) / 1024, 1)
    return r


def one_length(out: str, runs: int, before: str | None) -> dict:
    cases = {
        "kernel + sync": [out],
        "kernel only": [out, "--no-sync"],
        "sync only": [out, "--no-kernel"],
        "neither": [out, "--no-kernel", "--no-sync"],
    }
    todo = [(name, args, None) for name, args in cases.items()]
    if before:
        todo += [(f"{name} (before)", args, before) for name, args in cases.items() if name != "neither"]
    best: dict = {}
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        db = os.path.join(tmp, "x.duckdb")
        for _ in range(runs):
            for name, args, python_dir in todo:
                r = measured(["load", *args, "-o", db, "--force"], python_dir)
                if name not in best or r["wall_s"] < best[name]["wall_s"]:
                    best[name] = r
        info = json.loads(subprocess.run(ROSCOPE + ["load", out, "-o", db, "--force", "--json"], capture_output=True,
                                         text=True, check=True).stdout)
    ref = best["neither"]
    perf = os.path.join(out, "perf", "perf.data")
    alone = measured(["perf", "script", "--header", "--show-task-events", "-i", perf, "--ns", "-F", "pid,tid,cpu,time,event,trace"],
                     own=False)
    # Issue 29's targets: kernel data at most 1.5x the load's time and under 500 MiB; two hosts
    # with clock sync within 20 % of the memory of the same load without it (streamed like one host).
    # Both with and without sync: kernel + sync against sync only as well.
    k, s, ks = best["kernel only"], best["sync only"], best["kernel + sync"]
    checks = {"kernel_wall_ratio": round(k["wall_s"] / ref["wall_s"], 2), "kernel_peak_mib": k["peak_rss_mib"],
              "kernel_sync_wall_ratio": round(ks["wall_s"] / s["wall_s"], 2), "kernel_sync_peak_mib": ks["peak_rss_mib"],
              "sync_peak_ratio": round(s["peak_rss_mib"] / ref["peak_rss_mib"], 2)}
    checks["met"] = (max(checks["kernel_wall_ratio"], checks["kernel_sync_wall_ratio"]) <= 1.5
                     and max(checks["kernel_peak_mib"], checks["kernel_sync_peak_mib"]) < 500
                     and checks["sync_peak_ratio"] <= 1.2)
    return {"trace": out, "perf_data_bytes": os.path.getsize(perf), "perf_script_alone": alone, "checks": checks,
            "events": info["stats"]["events"], "tables": info["tables"], "best": best,
            "ratio_to_neither": {k: {"wall": round(v["wall_s"] / ref["wall_s"], 2),
                                     "peak_rss": round(v["peak_rss_mib"] / ref["peak_rss_mib"], 2),
                                     "own_peak_rss": round(v["own_peak_rss_mib"] / ref["own_peak_rss_mib"], 2)}
                                 for k, v in best.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--durations", type=float, nargs="+", default=[31.5, 8.0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--before", metavar="DIR", help="a python/ directory of the roscope to compare with")
    a = ap.parse_args()
    rows = []
    for duration in a.durations:
        out = os.path.join(RESULTS, f"why-cost-{duration:g}")
        if not os.path.isdir(out):
            record(out, duration)
        rows.append(one_length(out, a.runs, os.path.abspath(a.before) if a.before else None))
    with open(os.path.join(RESULTS, "why_cost.json.tmp"), "w") as f:
        json.dump({"machine_loaded": os.getloadavg(), "runs": rows}, f, indent=1)
    os.replace(os.path.join(RESULTS, "why_cost.json.tmp"), os.path.join(RESULTS, "why_cost.json"))
    for row in rows:
        t = row["tables"]
        print(f"{row['trace']}: {row['events']:,} events, perf.data {row['perf_data_bytes'] / 2**20:.0f} MiB; "
              f"thread_states {t.get('thread_states', 0):,}, preemptions {t.get('preemptions', 0):,}")
        p = row["perf_script_alone"]
        print(f"  perf script alone: {p['wall_s']:.2f} s, {p['peak_rss_mib']:.1f} MiB")
        print(f"  {'case':<24} {'wall s':>7} {'peak MiB':>9} {'own MiB':>8}  ratio to neither")
        for k, v in row["best"].items():
            r = row["ratio_to_neither"][k]
            print(f"  {k:<24} {v['wall_s']:7.2f} {v['peak_rss_mib']:9.1f} {v['own_peak_rss_mib']:8.1f}  "
                  f"wall x{r['wall']}, own RSS x{r['own_peak_rss']}")
        c = row["checks"]
        print(f"  kernel only: x{c['kernel_wall_ratio']} the time of neither (target <= 1.5), {c['kernel_peak_mib']:.0f} MiB "
              f"(target < 500); kernel + sync: x{c['kernel_sync_wall_ratio']} the time of sync only, "
              f"{c['kernel_sync_peak_mib']:.0f} MiB; sync only: x{c['sync_peak_ratio']} the memory of neither (target <= 1.2): "
              f"{'met' if c['met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
