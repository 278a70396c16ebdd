#!/usr/bin/env python3
"""What the preloaded ROS 1 tracer costs a shell-heavy launch (issue 29).

`roscope record` preloads instrument/ros1's libroscope_ros1.so into every process of a
launch. Before, every process (each shell, `sleep`, `true`) linked liblttng-ust and
libroscpp through it, registered with the session daemon and started LTTng-UST's two
listener threads; now only processes with roscpp or rospy do. This runs a launch-like
script (PROCS short programs one after the other: `true`, `sleep 0.001`, `seq 1`, as a
launch script's helpers are) with an LTTng session recording `roscope_ros1:*`, under
three preloads, interleaved, ROUNDS times each (median):

  none   no LD_PRELOAD: the script alone
  old    the tracer as it was built at OLD_REV (the last revision whose tracer linked
         liblttng-ust; found in git, or --old-rev)
  new    the tracer of this tree (make -C instrument/ros1)

and reports wall and CPU time (the whole process tree, wait4) and each tracer's cost over
`none`, old / new. Writes bench/results/preload.json.

    .venv/bin/python bench/preload.py [--rounds 5] [--procs 300] [--old-rev REV]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid

import scale  # bench/ is the script's directory: its measurement of a command

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, check=True).stdout


def old_revision() -> str:
    """The newest revision whose instrument/ros1/Makefile links liblttng-ust into the
    preloaded library itself (no separate tracepoint provider)."""
    for rev in ["HEAD"] + [f"{c}^" for c in git("log", "--format=%H", "--", "instrument/ros1/Makefile").split()]:
        text = subprocess.run(["git", "-C", REPO, "show", f"{rev}:instrument/ros1/Makefile"],
                              capture_output=True, text=True).stdout
        if text and "libroscope_ros1_tp" not in text:
            return git("rev-parse", rev).strip()
    raise SystemExit("no revision of instrument/ros1 before its tracepoint provider was split off: give --old-rev")


def build(tmp: str, rev: str | None) -> str:
    """The tracer of this tree (rev None) or of revision `rev`, built; its path."""
    if rev is None:
        subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
        return os.path.join(REPO, "instrument", "ros1", "build", "libroscope_ros1.so")
    src = os.path.join(tmp, "old")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev, "instrument/ros1"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
    subprocess.run(["make", "-s", "-C", os.path.join(src, "instrument", "ros1")], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(src, "instrument", "ros1", "build", "libroscope_ros1.so")


def lttng(*args: str) -> None:
    subprocess.run(["lttng", *args], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--procs", type=int, default=300, help="programs the script runs (a third each of true, sleep, seq)")
    ap.add_argument("--old-rev", help="the revision of the old tracer (default: found in git)")
    a = ap.parse_args()
    if shutil.which("lttng") is None:
        raise SystemExit("needs LTTng (lttng and a running lttng-sessiond)")
    os.makedirs(RESULTS, exist_ok=True)
    old_rev = a.old_rev or old_revision()
    script = f"for i in $(seq {a.procs // 3}); do /bin/true; sleep 0.001; seq 1 >/dev/null; done"
    session = f"roscope-bench-preload-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        libs = {"old": build(tmp, old_rev), "new": build(tmp, None)}
        lttng("create", session, f"--output={os.path.join(tmp, 'trace')}")
        try:
            lttng("enable-event", "-u", "roscope_ros1:*", "-s", session)
            lttng("start", session)
            runs: dict[str, list[dict]] = {"none": [], "old": [], "new": []}
            for _ in range(a.rounds):
                for name in runs:
                    env = dict(os.environ)
                    env.pop("LD_PRELOAD", None)
                    if name != "none":
                        env["LD_PRELOAD"] = libs[name]
                    runs[name].append(scale.measured(["bash", "-c", script], env=env))
        finally:
            subprocess.run(["lttng", "destroy", session], capture_output=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall_s", "cpu_s")} for k, v in runs.items()}
    cost = {k: {m: round(med[k][m] - med["none"][m], 3) for m in ("wall_s", "cpu_s")} for k in ("old", "new")}
    out = {"procs": a.procs, "rounds": a.rounds, "old_rev": old_rev, "machine_loaded": os.getloadavg(),
           "median": med, "runs": runs, "tracer_cost": cost,
           "ratio_old_to_new": {m: round(med["old"][m] / med["new"][m], 2) for m in ("wall_s", "cpu_s")},
           "cost_ratio_old_to_new": {m: (round(cost["old"][m] / cost["new"][m], 1) if cost["new"][m] > 0 else None)
                                     for m in ("wall_s", "cpu_s")}}
    with open(os.path.join(RESULTS, "preload.json.tmp"), "w") as f:
        json.dump(out, f, indent=1)
    os.replace(os.path.join(RESULTS, "preload.json.tmp"), os.path.join(RESULTS, "preload.json"))
    print(f"{a.procs} programs, {a.rounds} rounds (median), old tracer from {old_rev[:12]}:")
    for k in runs:
        print(f"  {k:<5} wall {med[k]['wall_s']:7.3f} s  cpu {med[k]['cpu_s']:7.3f} s")
    print(f"  tracer's cost over none: old wall {cost['old']['wall_s']:.3f} s cpu {cost['old']['cpu_s']:.3f} s; "
          f"new wall {cost['new']['wall_s']:.3f} s cpu {cost['new']['cpu_s']:.3f} s")
    print(f"  old / new: wall {out['ratio_old_to_new']['wall_s']}x, cpu {out['ratio_old_to_new']['cpu_s']}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
