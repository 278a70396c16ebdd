#!/usr/bin/env python3
"""Runs the example ROS 2 system (../README.md) for a while, then stops it cleanly.

usage: launch.py [-d SECONDS] [-g GTDIR] [--domain ID]

Starts the five node processes with this Python (so: the ROS 2 environment it belongs to),
the receiving ends first, waits until each is ready (and 1 s for discovery), starts the
sensors, lets the system run SECONDS (default 10), then stops the processes upstream first, with
short gaps for what is in flight (SIGINT: each node stops spinning between callbacks and writes
its ground truth to GTDIR/<process>.jsonl; GTDIR must not exist or be empty; default
a new $TMPDIR/ros2-ground-truth-<time>-XXXXXX).
The processes talk on ROS_DOMAIN_ID ID (default: one from this process's id, 1..100), on this
host only. Exits 0 when every process stopped cleanly. No launch package is needed.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Receiving ends first: the sensors start when every other process is ready.
PROCESSES = ["controller", "mapper", "planner", "fusion", "sensors"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-d", "--duration", type=float, default=10.0, help="seconds the sensors run (default 10)")
    ap.add_argument("-g", "--gt-dir", help="directory for the ground-truth logs (must not exist or be empty)")
    ap.add_argument("--domain", type=int, help="ROS_DOMAIN_ID (default: from this process's id)")
    a = ap.parse_args(argv)
    # never into the caller's current directory: a new temporary one unless told
    gt = Path(a.gt_dir or tempfile.mkdtemp(prefix=f"ros2-ground-truth-{time.strftime('%Y%m%d-%H%M%S')}-")).absolute()
    if gt.exists() and any(gt.iterdir()):
        print(f"launch.py: {gt} exists and is not empty; refusing to overwrite", file=sys.stderr)
        return 2
    gt.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ROSCOPE_GT_DIR=str(gt), ROS_DOMAIN_ID=str(a.domain if a.domain is not None else os.getpid() % 100 + 1),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", RMW_IMPLEMENTATION="rmw_fastrtps_cpp", PYTHONUNBUFFERED="1")
    procs: dict[str, subprocess.Popen] = {}
    stopping = []
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        for name in PROCESSES:
            if name == "sensors":
                time.sleep(1.0)  # discovery among the others
            log = open(gt / f"{name}.out", "w")
            procs[name] = subprocess.Popen([sys.executable, str(HERE / "nodes" / f"{name}.py")], env=env,
                                           stdout=subprocess.PIPE, stderr=log, text=True)
            line = procs[name].stdout.readline()
            if line.strip() != "ready":
                print(f"launch.py: {name} did not start (see {gt / (name + '.out')})", file=sys.stderr)
                return 1
        print(f"launch.py: running for {a.duration:g} s (ROS_DOMAIN_ID {env['ROS_DOMAIN_ID']}, ground truth in {gt})",
              file=sys.stderr)
        end = time.monotonic() + a.duration
        while time.monotonic() < end and not stopping and all(p.poll() is None for p in procs.values()):
            time.sleep(0.05)
    finally:
        rc = stop(procs)
    return rc


#: Seconds to wait after stopping each process, so that what it sent in its last moments is
#: handled: upstream first (the sensors' last messages, the planner's last goal), then the rest.
STOP_GAPS = {"sensors": 0.5, "fusion": 0.2, "planner": 0.5}


def stop(procs: dict) -> int:
    """SIGINT to each process, upstream first (STOP_GAPS); SIGKILL after 10 s."""
    rc = 0
    order = [n for n in reversed(PROCESSES) if n in procs]
    for name in order:
        p = procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        time.sleep(STOP_GAPS.get(name, 0))
    for name in order:
        p = procs[name]
        try:
            code = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            code = p.wait()
            print(f"launch.py: {name} did not stop on SIGINT: killed", file=sys.stderr)
        if code != 0:
            print(f"launch.py: {name} exited with {code}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
