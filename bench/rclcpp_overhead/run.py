#!/usr/bin/env python3
"""Overhead of tracing real rclcpp (issue 38): message latency and callback CPU of a C++
ping-pong, untraced vs traced with ros2_tracing's events vs recorded by `roscope record`.

The system (pingpong.cpp, built here by CMake against .ros2/jazzy and the cached rclcpp of
scripts/rclcpp_setup.sh, into bench/rclcpp_overhead/build): two processes on one host. ping's
timer (RATE Hz, default 1000) publishes /roscope_bench/ping; pong's subscription answers each on
/roscope_bench/pong; ping's subscription receives it. Each message carries the CLOCK_MONOTONIC
time read just before its publish(), the receiving callback reads the clock first: latency =
publish -> callback, across processes (Fast DDS), both directions pooled. Over a window of
SECONDS after WARMUP, each process counts its callbacks and reads its CPU time (every thread,
DDS's too, CLOCK_PROCESS_CPUTIME_ID) and its executor thread's. Three modes, run back to back in
each round, in alternating order (a b c, then c b a, ...):

- untraced: nothing preloaded (rclcpp's calls go to the wheel's libtracetools, whose bundled
  LTTng-UST reaches no session daemon: docs/rclcpp.md), no session;
- ros2_tracing: roscope's libtracetools preloaded (what makes rclcpp's tracepoints reach the
  system's LTTng, `roscope env --ros2 jazzy`) and an LTTng session made here that enables
  `ros2:*` only, contexts vpid, vtid, procname (what `ros2 trace` enables by default), in a
  channel of roscope's sizes (8 x 1 MiB per CPU: only the events differ from the next mode);
- roscope: under `roscope record --ros2 jazzy` (its default events: ros2:*, roscope_ros2:*, and
  patterns that match nothing here).

Reported: per mode, the median over rounds of each round's latency p50 and p90 and of its CPU us
per callback (both processes' CPU over both processes' callbacks: ping's timer and
subscription, pong's subscription); the paired differences by round, ros2_tracing - untraced
and roscope - ros2_tracing, as their quartiles over rounds (the modes of a round ran back to
back: the machine's drift cancels); the events recorded per message (a message: one publish
and one callback) in the window, per provider, from the traces (babeltrace2). Other LTTng
sessions active during a run (other users' tests: a session enabling ros2:* records the
preloaded modes' processes too, at a cost) are listed per run. To keep them out, run.py runs
in a mount namespace of its own (`unshare -m`, as root) with a private /run/lttng and /dev/shm
and an LTTng session daemon of its own there, which only this benchmark's processes see (the
default; --shared-sessiond: the system's daemon). Results:
bench/results/rclcpp_overhead-<time>.json.

With --service, the ping-pong is a service call (pingpong.cpp, $PINGPONG_SERVICE): Jazzy's rmw
has no service tracepoints, so ros2_tracing's mode records none, and roscope's adds its own
(roscope_ros2:rmw_* from rmw's calls, the client's response-callback run: docs/ros2-pypi.md);
the preloaded library's rmw wrappers run in both traced modes.

usage: run.py [--rate 1000] [--warmup 1] [--seconds 3] [--rounds 20] [--modes untraced,ros2_tracing,roscope]
              [--service] [--shared-sessiond]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODES = ("untraced", "ros2_tracing", "roscope")
DISTRO = "jazzy"


def ros2_env() -> Path:
    return Path(os.environ.get("ROSCOPE_ROS2_ENV") or REPO / ".ros2" / DISTRO).absolute()


def build() -> tuple[Path, Path]:
    """Configures (when needed) and builds pingpong; returns (the program, rclcpp's prefix)."""
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"run.py: {p.stderr.strip()}")
    env_dir, prefix = ros2_env(), Path(p.stdout.strip())
    out = Path(os.environ.get("RCLCPP_OVERHEAD_BUILD") or HERE / "build").absolute()
    env = dict(os.environ, PATH=f"{env_dir / 'bin'}:{os.environ.get('PATH', '')}", AMENT_PREFIX_PATH=f"{prefix}:{env_dir}")
    want = {f"ROS2_ENV:PATH={env_dir}", f"RCLCPP_PREFIX:PATH={prefix}"}
    cache = out / "CMakeCache.txt"
    if not cache.exists() or not want <= set(cache.read_text().splitlines()):
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(["cmake", *gen, "-S", str(HERE), "-B", str(out), f"-DROS2_ENV={env_dir}", f"-DRCLCPP_PREFIX={prefix}",
                        f"-DROSCOPE_WHEEL_PYTHON={env_dir / 'bin' / 'python'}",
                        f"-DCMAKE_PROJECT_INCLUDE={REPO / 'instrument' / 'ros2' / 'cmake' / 'wheel_mends.cmake'}"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(out)], check=True, env=env, stdout=subprocess.DEVNULL)
    return out / "pingpong", prefix


def pair(prog: str, rate: str, warmup: str, seconds: str, outdir: str) -> int:
    """The two processes of one run (this is the command `roscope record` runs): pong, then
    ping once pong is ready; both stop by themselves."""
    out = Path(outdir)
    pong = subprocess.Popen([prog, "pong", str(out / "pong.json")], stdout=subprocess.PIPE, text=True)
    try:
        if pong.stdout.readline().strip() != "ready":
            print("run.py: pong did not start", file=sys.stderr)
            return 1
        ping = subprocess.run([prog, "ping", rate, warmup, seconds, str(out / "ping.json")], stdout=subprocess.DEVNULL,
                              timeout=60 + float(warmup) + float(seconds))
        pong.wait(timeout=10)
    finally:
        if pong.poll() is None:
            pong.kill()
            pong.wait()
    return ping.returncode or pong.returncode


def active_sessions(mine: str | None = None) -> list[str]:
    """The active LTTng sessions other than `mine` (taken before and after a run: roscope
    record's own session exists only in between)."""
    p = subprocess.run(["lttng", "list"], capture_output=True, text=True)
    names = []
    for line in p.stdout.splitlines():
        if "[active" in line:
            names.append(line.split(")", 1)[1].split("[")[0].strip())
    return [n for n in names if n != mine]


def lttng(*args: str) -> None:
    subprocess.run(["lttng", *args], check=True, stdout=subprocess.DEVNULL)


def base_env(prefix: Path, k: int) -> dict:
    env_dir = ros2_env()
    env = dict(os.environ, ROS_DOMAIN_ID=str(os.getpid() % 80 + 140 + k % 2), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               RMW_IMPLEMENTATION="rmw_fastrtps_cpp", AMENT_PREFIX_PATH=f"{prefix}:{env_dir}",
               LD_LIBRARY_PATH=f"{prefix / 'lib'}:{env_dir / 'lib'}")
    for v in ("LD_PRELOAD", "ROSCOPE_RCLPY_HOOK"):
        env.pop(v, None)
    return env


def preloaded(env: dict) -> dict:
    """`env` with roscope's libtracetools preloaded (`roscope env --ros2 jazzy`)."""
    sys.path.insert(0, str(REPO / "python"))
    from roscope import ros2_pip
    return ros2_pip.Ros2Recording.setup(None, DISTRO, preload=True).environment(env)


def ros2_session(name: str, trace: Path) -> None:
    """An LTTng session enabling ros2:* only, contexts vpid, vtid, procname, started."""
    lttng("create", name, f"--output={trace}")
    try:
        lttng("enable-channel", "--userspace", "ros2", "--subbuf-size=1M", "--num-subbuf=8", f"--session={name}")
        lttng("enable-event", "--userspace", "ros2:*", "--channel=ros2", f"--session={name}")
        lttng("add-context", "--userspace", "--channel=ros2", f"--session={name}", "-t", "vpid", "-t", "vtid", "-t", "procname")
        lttng("start", name)
    except BaseException:
        lttng("destroy", name)
        raise


def run_once(mode: str, prog: Path, prefix: Path, a, work: Path, k: int) -> dict:
    rundir = work / f"{k}-{mode}"
    rundir.mkdir()
    env = base_env(prefix, k)
    if a.service:
        env["PINGPONG_SERVICE"] = "1"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--pair", str(prog), str(a.rate), str(a.warmup),
           str(a.seconds), str(rundir)]
    trace, session = None, None
    if mode == "ros2_tracing":
        env = preloaded(env)
        trace, session = rundir / "trace", f"rclcpp-overhead-{os.getpid()}-{k}"
        ros2_session(session, trace)
    elif mode == "roscope":
        trace = rundir / "trace"
        env["PYTHONPATH"] = str(REPO / "python")
        cmd = [sys.executable, "-m", "roscope", "record", "--ros2", DISTRO, "-o", str(trace), "--", *cmd]
    others = active_sessions(session)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120 + a.warmup + a.seconds)
    finally:
        if session:
            lttng("stop", session)
            lttng("destroy", session)
    others = sorted(set(others) | set(active_sessions(session)))
    if p.returncode != 0:
        raise SystemExit(f"run.py: {mode} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    ping, pong = (json.loads((rundir / f"{r}.json").read_text()) for r in ("ping", "pong"))
    if not (ping["done"] and pong["done"]):
        raise SystemExit(f"run.py: {mode}: a window did not close: {rundir}")
    lat = sorted(ping["latencies_ns"] + pong["latencies_ns"])
    callbacks = ping["callbacks"] + pong["callbacks"]
    r = {"mode": mode, "round": k, "messages": len(lat),
         "latency_us": {"p50": pct(lat, 50) / 1e3, "p90": pct(lat, 90) / 1e3, "p99": pct(lat, 99) / 1e3,
                        "mean": statistics.fmean(lat) / 1e3},
         "cpu_us_per_callback": (ping["process_cpu_ns"] + pong["process_cpu_ns"]) / callbacks / 1e3,
         "thread_cpu_us_per_callback": (ping["thread_cpu_ns"] + pong["thread_cpu_ns"]) / callbacks / 1e3,
         "callbacks": callbacks, "sent": ping["sent"] + pong["sent"],
         "other_sessions": others}
    if trace is not None:
        r["events"] = count_events(trace, ping["window_ns"], {ping["pid"], pong["pid"]})
    shutil.rmtree(rundir, ignore_errors=True)
    return r


TP_MODES = ("untraced", "preloaded", "ros2_tracing", "roscope")


def tracepoint_cost(mode: str, prog: Path, prefix: Path, work: Path, k: int, calls: int) -> dict:
    """ns per call of rclcpp's ros_trace_callback_start in a loop (pingpong tploop): untraced
    (the wheel's libtracetools), preloaded (roscope's, no session), recorded by the ros2:*
    session, recorded by roscope record."""
    rundir = work / f"tp-{k}-{mode}"
    rundir.mkdir()
    out = rundir / "tp.json"
    env = base_env(prefix, k) if mode == "untraced" else preloaded(base_env(prefix, k))
    cmd = [str(prog), "tploop", str(calls), str(out)]
    session = None
    if mode == "ros2_tracing":
        session = f"rclcpp-overhead-tp-{os.getpid()}-{k}"
        ros2_session(session, rundir / "trace")
    elif mode == "roscope":
        env["PYTHONPATH"] = str(REPO / "python")
        cmd = [sys.executable, "-m", "roscope", "record", "--ros2", DISTRO, "-o", str(rundir / "trace"), "--", *cmd]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    finally:
        if session:
            lttng("stop", session)
            lttng("destroy", session)
    if p.returncode != 0:
        raise SystemExit(f"run.py: tploop {mode} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    r = json.loads(out.read_text())
    if mode in ("ros2_tracing", "roscope"):
        ev = count_events(rundir / "trace", [0, 2**63], set())
        r["recorded"] = ev.get("ros2:callback_start", 0)
    shutil.rmtree(rundir, ignore_errors=True)
    return r


def pct(v: list, q: float) -> float:
    return v[min(len(v) - 1, int(q * len(v) / 100))]


def count_events(trace: Path, window: list[int], pids: set[int]) -> dict:
    """Events of the two processes in ping's window, per name (babeltrace2; LTTng-UST's clock
    is CLOCK_MONOTONIC in ns, so its cycles are the programs' clock reads)."""
    lo, hi = window
    p = subprocess.Popen(["babeltrace2", "--clock-cycles", "--no-delta", str(trace)], stdout=subprocess.PIPE,
                         text=True, errors="replace")
    names: Counter = Counter()
    for line in p.stdout:
        # [3773114949758] host ros2:rclcpp_publish: { cpu_id = 0 }, { vpid = 1, vtid = 1, procname = "x" }, { ... }
        try:
            ts = int(line[1:line.index("]")])
        except ValueError:
            continue
        if not lo <= ts <= hi:
            continue
        i = line.find("vpid = ")
        if pids and (i < 0 or int(line[i + 7:line.index(",", i)]) not in pids):
            continue
        names[line.split(" ", 3)[2].rstrip(":")] += 1
    p.wait()
    return dict(names)


def quartiles(v: list[float]) -> dict:
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return {"p25": round(q[0], 3), "p50": round(q[1], 3), "p75": round(q[2], 3),
            "mean": round(statistics.fmean(v), 3),
            "sem": round(statistics.stdev(v) / len(v) ** 0.5, 3) if len(v) > 1 else None}


METRICS = {"latency_p50_us": lambda r: r["latency_us"]["p50"], "latency_p90_us": lambda r: r["latency_us"]["p90"],
           "cpu_us_per_callback": lambda r: r["cpu_us_per_callback"],
           "thread_cpu_us_per_callback": lambda r: r["thread_cpu_us_per_callback"]}
PAIRS = (("ros2_tracing", "untraced"), ("roscope", "ros2_tracing"), ("roscope", "untraced"))


def summarize(runs: dict[str, list[dict]]) -> dict:
    s: dict = {"per_mode": {}, "paired": {}}
    for m, rs in runs.items():
        if not rs:
            continue
        d = {k: round(statistics.median(f(r) for r in rs), 3) for k, f in METRICS.items()}
        ev = Counter()
        msgs = 0
        for r in rs:
            if "events" in r:
                ev.update(r["events"])
                msgs += r["sent"]
        if msgs:
            d["events_per_message"] = round(sum(ev.values()) / msgs, 2)
            prov = Counter()
            for n, c in ev.items():
                prov[n.split(":")[0]] += c
            d["events_per_message_by_provider"] = {p: round(c / msgs, 2) for p, c in sorted(prov.items())}
            d["events_per_message_by_name"] = {n: round(c / msgs, 3) for n, c in sorted(ev.items())}
        s["per_mode"][m] = d
    for hi, lo in PAIRS:
        if runs.get(hi) and runs.get(lo):
            s["paired"][f"{hi}-{lo}"] = {k: quartiles([f(x) - f(y) for x, y in zip(runs[hi], runs[lo])])
                                         for k, f in METRICS.items()}
    return s


PRIVATE = "RCLCPP_OVERHEAD_PRIVATE_SESSIOND"


def private_sessiond(argv: list[str]) -> int | None:
    """Runs this script again in a mount namespace of its own with its own LTTng session
    daemon (returns its exit status), or None when that cannot be (then: the shared daemon)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("run.py: not root (or no unshare): the system's LTTng session daemon is used", file=sys.stderr)
        return None
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        print(f"run.py: unshare -m failed ({probe.stderr.decode().strip()}): the system's LTTng session daemon is used",
              file=sys.stderr)
        return None
    return subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, str(Path(__file__).resolve()),
                           *argv], env=dict(os.environ, **{PRIVATE: "1"})).returncode


def start_private_sessiond() -> int:
    """In this namespace: private /run/lttng and /dev/shm, a session daemon there; its pid."""
    for d in ("/run/lttng", "/dev/shm"):
        os.makedirs(d, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", d], check=True)
    subprocess.run(["lttng-sessiond", "--daemonize", "--no-kernel"], check=True, stdout=subprocess.DEVNULL)
    return int(Path("/run/lttng/lttng-sessiond.pid").read_text())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--pair"]:
        return pair(*argv[1:])
    if "--shared-sessiond" not in argv and "-h" not in argv and "--help" not in argv and not os.environ.get(PRIVATE):
        rc = private_sessiond(argv)
        if rc is not None:
            return rc
    sessiond = None
    try:
        if os.environ.get(PRIVATE):
            sessiond = start_private_sessiond()
        return measure(argv, sessiond is not None)
    finally:
        if sessiond:
            os.kill(sessiond, 15)


def measure(argv: list[str], private: bool) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--tp-calls", type=int, default=100000, help="calls per tracepoint loop (0: no loops)")
    ap.add_argument("--tp-repeats", type=int, default=5)
    ap.add_argument("--service", action="store_true",
                    help="a service call (request and response) instead of the ping and pong topics")
    ap.add_argument("--shared-sessiond", action="store_true",
                    help="use the system's LTTng session daemon (others' sessions then see the traced modes' processes)")
    a = ap.parse_args(argv)
    modes = tuple(a.modes.split(","))
    if not set(modes) <= set(MODES):
        ap.error(f"--modes: of {', '.join(MODES)}")
    prog, prefix = build()
    results: dict = {"transport": "service" if a.service else "topics", "rate_hz": a.rate, "warmup_s": a.warmup, "seconds": a.seconds, "rounds": a.rounds,
                     "modes": list(modes), "cpus": os.cpu_count(), "load_before": os.getloadavg(),
                     "private_sessiond": private,
                     "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rclcpp-overhead-") as tmp:
        for k in range(a.rounds):
            for mode in (modes if k % 2 == 0 else tuple(reversed(modes))):
                r = run_once(mode, prog, prefix, a, Path(tmp), k)
                runs[mode].append(r)
                ev = sum(r.get("events", {}).values())
                print(f"round {k:2} {mode:12} latency p50 {r['latency_us']['p50']:7.1f} p90 {r['latency_us']['p90']:7.1f} us"
                      f"  CPU {r['cpu_us_per_callback']:6.1f} us/callback"
                      + (f"  {ev / r['sent']:5.1f} events/message" if "events" in r else "")
                      + (f"  (other sessions: {len(r['other_sessions'])})" if r["other_sessions"] else ""),
                      file=sys.stderr)
        tp: dict[str, list[dict]] = {m: [] for m in TP_MODES}
        for k in range(a.tp_repeats if a.tp_calls else 0):
            for mode in (TP_MODES if k % 2 == 0 else tuple(reversed(TP_MODES))):
                tp[mode].append(tracepoint_cost(mode, prog, prefix, Path(tmp), k, a.tp_calls))
        if a.tp_calls and a.tp_repeats:
            results["tracepoint_ns"] = {
                m: {"wall_p50": round(statistics.median(x["wall_ns_per_call"] for x in v), 1),
                    "cpu_p50": round(statistics.median(x["cpu_ns_per_call"] for x in v), 1),
                    "enabled": v[0]["enabled"], "calls": a.tp_calls,
                    **({"recorded_share": round(sum(x["recorded"] for x in v) / (a.tp_calls * len(v)), 4)}
                       if "recorded" in v[0] else {})}
                for m, v in tp.items()}
    results["wall_s"] = round(time.monotonic() - t_start, 1)
    results["load_after"] = os.getloadavg()
    results.update(summarize(runs))
    results["runs"] = runs
    out = REPO / "bench" / "results" / f"rclcpp_overhead{'-service' if a.service else ''}-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print_table(results, a)
    print(f"results: {out}")
    return 0


def print_table(res: dict, a) -> None:
    print(f"\nrclcpp ping-pong{' (a service call)' if a.service else ''}, 2 processes, {a.rate:g} Hz, {a.seconds:g} s x {a.rounds} paired rounds "
          f"({res['cpus']} CPUs; load {res['load_before'][0]:.1f} before, {res['load_after'][0]:.1f} after; "
          f"{'a private' if res['private_sessiond'] else 'the shared'} LTTng session daemon)")
    print(f"{'mode':<13} {'latency p50':>11} {'p90 (us)':>9} {'CPU us/cb':>10} {'exec thread':>11} {'events/msg':>10}")
    for m, d in res["per_mode"].items():
        print(f"{m:<13} {d['latency_p50_us']:>11.1f} {d['latency_p90_us']:>9.1f} {d['cpu_us_per_callback']:>10.1f} "
              f"{d['thread_cpu_us_per_callback']:>11.1f} {d.get('events_per_message', '-'):>10}")
    if "tracepoint_ns" in res:
        print("\none tracepoint (ros_trace_callback_start in a loop), ns per call, median of repeats: "
              + ", ".join(f"{m} {d['cpu_p50']:.0f}" + (f" ({100 * d['recorded_share']:.0f}% recorded)" if "recorded_share" in d else "")
                          for m, d in res["tracepoint_ns"].items()))
    print("\npaired differences by round, p25 / p50 / p75 (mean +- sem), us")
    for pair_name, d in res["paired"].items():
        cells = []
        for k in ("latency_p50_us", "latency_p90_us", "cpu_us_per_callback"):
            q = d[k]
            cells.append(f"{k.replace('_us', '').replace('_per_callback', '/cb')} {q['p25']:+.2f}/{q['p50']:+.2f}/{q['p75']:+.2f}"
                         f" ({q['mean']:+.2f}+-{q['sem']})")
        print(f"{pair_name:<24} " + "   ".join(cells))
    n_other = sum(1 for rs in res["runs"].values() for r in rs if r["other_sessions"])
    if n_other:
        print(f"note: {n_other} run(s) had other LTTng sessions active (other users' recordings; one enabling ros2:* "
              "records the preloaded modes' processes too): see 'other_sessions' per run")


if __name__ == "__main__":
    sys.exit(main())
