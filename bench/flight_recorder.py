#!/usr/bin/env python3
"""What the flight recorder costs, and what a snapshot holds (issue 32).

Runs the ROS 1 example (examples/ros1_pipeline, with its rospy nodes) for --seconds (default
120) twice, one after the other on the same machine: under `roscope record --flight-recorder
--keep KEEP` and, as the reference, under a normal `roscope record`. In the flight run its
filter callback is slowed once (300 ms) at a random time in the second half, and SIGUSR1 is
sent to the recorder right after the slow run. Reports:

* the CPU time (user + system) and the peak RSS of LTTng's daemons (lttng-sessiond and the
  consumer daemons, from /proc) over each run, and the flight / normal ratio;
* the events per second the example emitted (the normal run's trace, babeltrace2's count);
* the memory the flight recorder's rings hold (runtime + init sessions, per-CPU sub-buffers
  as configured: what LTTng allocates for them) and the window they kept;
* trigger-to-disk time (the snapshot's manifest) and whether the snapshot holds the slow run
  and the KEEP seconds before it.

Writes bench/results/flight_recorder.json.

    .venv/bin/python bench/flight_recorder.py [--seconds 120] [--keep 10] [--rate 2500]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "ros1_pipeline"
CLK = os.sysconf("SC_CLK_TCK")
DAEMONS = ("lttng-sessiond", "lttng-consumerd")


def daemons() -> dict[int, tuple[float, int]]:
    """{pid: (cpu seconds, rss kB)} of LTTng's daemons now."""
    out = {}
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if comm not in DAEMONS:
                continue
            stat = Path(f"/proc/{pid}/stat").read_text()
            f = stat[stat.rfind(")") + 2:].split()
            rss = next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if x.startswith("VmRSS:"))
            out[pid] = ((int(f[11]) + int(f[12])) / CLK, rss)
        except (OSError, ValueError, StopIteration):
            continue
    return out


def run(args: list[str], env: dict, seconds: float, on_tick=None) -> dict:
    """Runs `roscope record ARGS`; samples the daemons every 0.5 s. Returns CPU and peak RSS."""
    before = daemons()
    p = subprocess.Popen([sys.executable, "-m", "roscope", "record", *args], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    peak = 0
    while p.poll() is None:
        now = daemons()
        peak = max(peak, sum(r for _, r in now.values()))
        if on_tick is not None:
            on_tick(p)
        time.sleep(0.5)
    after = daemons()
    err = p.stderr.read()
    assert p.returncode == 0, err
    cpu = sum(after[k][0] - before.get(k, (0.0, 0))[0] for k in after)
    return {"daemon_cpu_s": round(cpu, 3), "daemon_peak_rss_kb": peak, "stderr": err.strip().splitlines()[-3:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--keep", type=float, default=10)
    ap.add_argument("--rate", type=float, default=2500)
    a = ap.parse_args()
    for d in (REPO / "instrument" / "ros1", EXAMPLE):
        subprocess.run(["make", "-s", "-C", str(d)], check=True)
    tmp = Path(tempfile.mkdtemp(prefix="roscope-flight-bench-"))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("ROSCOPE_RECORD_ID", None)
    system = [str(EXAMPLE / "system.sh"), "-d", str(a.seconds), "-P"]

    normal = run(["-o", str(tmp / "normal"), "--", *system, "-g", str(tmp / "gt-normal")], env, a.seconds)
    counts = json.loads((tmp / "normal" / "roscope-manifest.json").read_text())
    normal["events"] = counts.get("events_recorded")
    normal["events_per_s"] = round(normal["events"] / a.seconds) if normal["events"] else None

    at = random.uniform(a.seconds / 2, a.seconds - 10)
    fenv = dict(env, ROS1_PIPELINE_SLOW_FILTER=f"300@{at:.1f}")
    state = {"slow": None, "sent": False}

    def trigger(p):
        log = tmp / "gt-flight" / "perception.jsonl"
        if state["sent"] or not log.exists():
            return
        slow = next((json.loads(x) for x in log.read_text().splitlines() if '"ev":"slow"' in x), None)
        if slow is not None:
            time.sleep(0.5)
            p.send_signal(signal.SIGUSR1)
            state.update(slow=slow, sent=True)

    flight = run(["--flight-recorder", "--keep", str(a.keep), "--rate", str(a.rate), "-o", str(tmp / "flight"), "--",
                  *system, "-g", str(tmp / "gt-flight")], fenv, a.seconds, trigger)
    man = json.loads((tmp / "flight" / "roscope-manifest.json").read_text())
    opts = man["lttng"]
    ncpu = os.cpu_count() or 1
    snap = next((tmp / "flight" / "snapshots").iterdir())
    sm = json.loads((snap / "roscope-snapshot.json").read_text())
    t = state["slow"]["mono_ns"]
    result = {
        "seconds": a.seconds, "keep_s": a.keep, "rate_sized_for": a.rate, "cpus": ncpu,
        "normal": normal, "flight": flight,
        "daemon_cpu_ratio_flight_over_normal": round(flight["daemon_cpu_s"] / normal["daemon_cpu_s"], 3)
        if normal["daemon_cpu_s"] else None,
        "ring_bytes_runtime": int(opts["subbuf_size"]) * int(opts["num_subbuf"]) * ncpu,
        "ring_bytes_init": 262144 * 4 * ncpu,
        "snapshot": {k: sm.get(k) for k in ("window_s", "trigger_to_disk_s", "complete_from_ns", "complete_until_ns")},
        "snapshot_holds_slow_run_and_keep_before": sm["complete_from_ns"] <= t - a.keep * 1e9
        and sm["complete_until_ns"] >= t + 300e6,
        "slow_at_s": round(at, 1),
    }
    out = REPO / "bench" / "results" / "flight_recorder.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
