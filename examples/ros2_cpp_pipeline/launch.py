#!/usr/bin/env python3
"""Runs the C++ example ROS 2 system (README.md) for a while, then stops it cleanly.

usage: launch.py [-d SECONDS] [-g GTDIR] [--domain ID]     run it (built already)
       launch.py --build                                 build it (then exit)

Starts the four processes (mapper, controller, planner, then perception, whose timers drive
the rest, 1 s later for discovery), each waited for until it says it is ready, lets the system
run SECONDS (default 5), then stops the processes upstream first with short gaps for what is in
flight (SIGINT: each stops spinning between callbacks and writes its ground truth to
GTDIR/<process>.jsonl). GTDIR: -g, else $ROS2_CPP_PIPELINE_GT, else a new
$TMPDIR/ros2-cpp-ground-truth-<time>-XXXXXX; it must not exist or be empty (never the current
directory). The processes talk on ROS_DOMAIN_ID ID (default: 120-219, from this process's id:
apart from examples/ros2_pipeline's 1-100, whose names some of these share), on this host only. Exits 0 when every process stopped cleanly.

The programs are built by CMake (CMakeLists.txt) against the pip-installed Jazzy
($ROSCOPE_ROS2_ENV, default .ros2/jazzy) and roscope's rclcpp (scripts/rclcpp_setup.sh), into
$ROS2_CPP_PIPELINE_BUILD (default examples/ros2_cpp_pipeline/build, git-ignored).
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
REPO = HERE.parents[1]
#: Receiving ends first; perception (the sensors' timers) last.
PROCESSES = ["mapper", "controller", "planner", "perception"]
#: Seconds to wait after stopping each, upstream first, so that what it sent last is handled.
STOP_GAPS = {"perception": 0.5, "planner": 0.6, "controller": 0.2}


def ros2_env() -> Path:
    return Path(os.environ.get("ROSCOPE_ROS2_ENV") or REPO / ".ros2" / "jazzy").absolute()


def build_dir() -> Path:
    return Path(os.environ.get("ROS2_CPP_PIPELINE_BUILD") or HERE / "build").absolute()


def rclcpp_prefix() -> Path:
    """rclcpp's install for this checkout; SystemExit (with rclcpp_setup.sh's reason) if absent."""
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"launch.py: {p.stderr.strip()}")
    return Path(p.stdout.strip())


def built_prefix(bindir: Path) -> Path:
    """RCLCPP_PREFIX of the build in `bindir` (its CMakeCache.txt)."""
    for line in (bindir / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("RCLCPP_PREFIX:PATH="):
            return Path(line.split("=", 1)[1])
    raise SystemExit(f"launch.py: no RCLCPP_PREFIX in {bindir / 'CMakeCache.txt'}: run {Path(__file__).name} --build")


def build(jobs: int | None = None) -> Path:
    """Configures (when needed) and builds the programs; returns the build directory."""
    env_dir, prefix, out = ros2_env(), rclcpp_prefix(), build_dir()
    cache = out / "CMakeCache.txt"
    want = {"ROS2_ENV:PATH": str(env_dir), "RCLCPP_PREFIX:PATH": str(prefix)}
    have = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            k, _, v = line.partition("=")
            if k in want:
                have[k] = v
    # AMENT_PREFIX_PATH: the message packages' CMake code finds the type supports through it
    env = dict(os.environ, PATH=f"{env_dir / 'bin'}:{os.environ.get('PATH', '')}", AMENT_PREFIX_PATH=f"{prefix}:{env_dir}")
    if have != want:
        gen = ["-G", "Ninja"] if subprocess.run(["sh", "-c", "command -v ninja"], capture_output=True).returncode == 0 else []
        subprocess.run(["cmake", *gen, "-S", str(HERE), "-B", str(out), f"-DROS2_ENV={env_dir}", f"-DRCLCPP_PREFIX={prefix}",
                        f"-DROSCOPE_WHEEL_PYTHON={env_dir / 'bin' / 'python'}",
                        f"-DCMAKE_PROJECT_INCLUDE={REPO / 'instrument' / 'ros2' / 'cmake' / 'wheel_mends.cmake'}"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(out), "-j", str(jobs or os.cpu_count() or 2)], check=True, env=env)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-d", "--duration", type=float, default=5.0, help="seconds the system runs (default 5)")
    ap.add_argument("-g", "--gt-dir", help="directory for the ground-truth logs (must not exist or be empty)")
    ap.add_argument("--domain", type=int, help="ROS_DOMAIN_ID (default: 120-219, from this process's id)")
    ap.add_argument("--build", action="store_true", help="build the programs, then exit")
    a = ap.parse_args(argv)
    if a.build:
        build()
        return 0
    bindir = build_dir()
    missing = [n for n in PROCESSES if not (bindir / n).exists()] + \
        ([] if (bindir / "CMakeCache.txt").exists() else ["CMakeCache.txt"])
    if missing:
        print(f"launch.py: {', '.join(missing)} not built in {bindir}: run {Path(__file__).name} --build first", file=sys.stderr)
        return 2
    gtarg = a.gt_dir or os.environ.get("ROS2_CPP_PIPELINE_GT")
    gt = Path(gtarg or tempfile.mkdtemp(prefix=f"ros2-cpp-ground-truth-{time.strftime('%Y%m%d-%H%M%S')}-")).absolute()
    if gt.exists() and any(gt.iterdir()):
        print(f"launch.py: {gt} exists and is not empty; refusing to overwrite", file=sys.stderr)
        return 2
    gt.mkdir(parents=True, exist_ok=True)
    # the rclcpp the programs were built against (from the build, not rclcpp_setup.sh: its
    # helper processes would be recorded too)
    env_dir, prefix = ros2_env(), built_prefix(bindir)
    env = dict(os.environ, ROSCOPE_GT_DIR=str(gt),
               ROS_DOMAIN_ID=str(a.domain if a.domain is not None else 120 + os.getpid() % 100),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
               AMENT_PREFIX_PATH=f"{prefix}:{env_dir}",
               LD_LIBRARY_PATH=":".join([str(prefix / "lib"), str(env_dir / "lib")] +
                                        ([os.environ["LD_LIBRARY_PATH"]] if os.environ.get("LD_LIBRARY_PATH") else [])))
    procs: dict[str, subprocess.Popen] = {}
    stopping = []
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        for name in PROCESSES:
            if name == "perception":
                time.sleep(1.0)  # discovery among the others
            log = open(gt / f"{name}.out", "w")
            procs[name] = subprocess.Popen([str(bindir / name)], env=env, stdout=subprocess.PIPE, stderr=log, text=True)
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
