#!/usr/bin/env python3
"""rclpy callback overhead of roscope's ROS 2 tracing (the tracer library and the rclpy hook),
in CPU microseconds per callback, against untraced runs of the same system.

The system (node.py, in the distro's pip-installed environment, `make setup`): a timer (RATE
Hz, default 200) publishing on a topic and a subscription receiving it, in one process. Each run
measures the CPU time of the executor's thread (where the callbacks, rclpy's executor, rcl's
and rmw's publish and take, every tracepoint and the rclpy hook run; the process's other
threads, DDS's, are noise here) over SECONDS after a warm-up, in three modes, interleaved round
by round:

- untraced: the environment's own Python, nothing preloaded (the wheels' own tracer, which
  reaches no session daemon here);
- hooked: roscope's tracer library preloaded and the rclpy hook active, no LTTng session (the
  cost of instrumented but disabled tracepoints);
- traced: under `roscope record --ros2 DISTRO` (every ros2:* and roscope_ros2:* event recorded).

Reported per distro: the median over rounds of CPU us per callback in each mode; the overhead,
traced - untraced (and hooked - untraced) paired by round (the modes of a round run back to
back, so the machine's drift cancels), as its quartiles over rounds; from the traced runs'
traces (babeltrace2): events recorded per callback, and how much longer each traced run is than
the callback's own first-to-last statement (the hook's dispatch); and one event's cost, recorded
and not, from a loop of 200,000 (the decomposition: events/callback x us/event is most of the
overhead). On a shared machine one run's CPU time per callback varies by tens of us: use many
rounds. Results: bench/results/ros2_overhead-<time>.json.

usage: run.py [--distros jazzy,kilted] [--rate 200] [--seconds 3] [--rounds 15]
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
from roscope import ros2_pip  # noqa: E402

MODES = ("untraced", "hooked", "traced")


def run_once(distro: str, mode: str, rate: float, seconds: float, work: Path) -> dict:
    env_dir = ros2_pip.named_env(distro)
    py = env_dir.path / "bin" / "python"
    out = work / f"{distro}-{mode}.json"
    cmd = [str(py), str(HERE / "node.py"), str(rate), str(seconds), str(out)]
    env = dict(os.environ, ROS_DOMAIN_ID=str(os.getpid() % 100 + 1), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env.pop("LD_PRELOAD", None)
    trace = None
    if mode == "hooked":
        rec = ros2_pip.Ros2Recording.setup(None, distro, preload=True)
        env = rec.environment(env)
    elif mode == "traced":
        trace = work / f"{distro}-trace-{len(list(work.iterdir()))}"
        env["PYTHONPATH"] = str(REPO / "python")
        cmd = [sys.executable, "-m", "roscope", "record", "--ros2", distro, "-o", str(trace), "--", *cmd]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120 + seconds)
    if p.returncode != 0:
        raise SystemExit(f"run.py: {distro} {mode} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    r = json.loads(out.read_text())
    r["trace"] = str(trace) if trace else None
    return r


def from_trace(r: dict) -> tuple[list[int], int]:
    """Per measured callback run: the traced run (callback_start/end) minus its own time; and
    the events the process recorded in the measured interval."""
    import bt2

    spans, stack, events = [], {}, 0
    lo, hi = r["measured"]
    for m in bt2.TraceCollectionMessageIterator(r["trace"]):
        if type(m) is not bt2._EventMessageConst:
            continue
        ts = m.default_clock_snapshot.value
        events += lo <= ts <= hi
        if m.event.name not in ("ros2:callback_start", "ros2:callback_end"):
            continue
        tid = int(m.event.common_context_field["vtid"])
        if m.event.name == "ros2:callback_start":
            stack[tid] = ts
        elif tid in stack:
            spans.append((stack.pop(tid), ts))
    spans.sort()
    out = []
    i = 0
    for _, t0, t1 in r["runs"]:
        while i < len(spans) and spans[i][1] < t1:
            i += 1
        if i < len(spans) and spans[i][0] <= t0 and lo <= t0 <= hi:
            out.append((spans[i][1] - spans[i][0]) - (t1 - t0))
    return out, events


def tracepoint_cost(distro: str, work: Path, traced: bool) -> float:
    """us of one callback_start event (the C extension's call), recorded or not."""
    env_dir = ros2_pip.named_env(distro)
    out = work / f"{distro}-tp.json"
    cmd = [str(env_dir.path / "bin" / "python"), str(HERE / "node.py"), "--tracepoints", "200000", str(out)]
    env = ros2_pip.Ros2Recording.setup(None, distro, preload=True).environment(dict(os.environ))
    if traced:
        env["PYTHONPATH"] = f"{REPO / 'python'}:{env['PYTHONPATH']}"
        cmd = [sys.executable, "-m", "roscope", "record", "--ros2", distro, "--events", "ros2:callback_start",
               "-o", str(work / f"{distro}-tp-trace"), "--", *cmd]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"run.py: the tracepoint loop failed ({p.returncode}):\n{p.stderr}")
    return json.loads(out.read_text())["event_us"]


def other_sessions() -> list[str]:
    """The LTTng sessions active now (another tool's session that enables ros2:* records the
    'hooked' runs too: they are not untraced then)."""
    p = subprocess.run(["lttng", "list"], capture_output=True, text=True)
    return [line.strip() for line in p.stdout.splitlines() if "[active]" in line]


def quartiles(v: list[float]) -> dict:
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return {"p25": round(q[0], 3), "p50": round(q[1], 3), "p75": round(q[2], 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--distros", default="jazzy,kilted")
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args(argv)
    results: dict = {"rate_hz": a.rate, "seconds": a.seconds, "rounds": a.rounds, "distros": {},
                     "active_sessions_before": other_sessions()}
    with tempfile.TemporaryDirectory(prefix="ros2-overhead-") as tmp:
        work = Path(tmp)
        for distro in a.distros.split(","):
            per = {m: [] for m in MODES}
            excess: list[int] = []
            events = callbacks = 0
            for k in range(a.rounds):
                order = MODES if k % 2 == 0 else tuple(reversed(MODES))
                for mode in order:
                    r = run_once(distro, mode, a.rate, a.seconds, work)
                    per[mode].append(1e6 * r["thread_cpu_s"] / r["callbacks"])
                    if mode == "traced":
                        ex, n_ev = from_trace(r)
                        excess += ex
                        events, callbacks = events + n_ev, callbacks + r["callbacks"]
                        shutil.rmtree(r["trace"], ignore_errors=True)
                    print(f"{distro} round {k} {mode:9} {r['callbacks']:6} callbacks  "
                          f"{per[mode][-1]:7.2f} CPU us/callback (executor thread)", file=sys.stderr)
            # Paired by round (the modes of a round ran back to back): the machine's drift cancels.
            traced = [t - u for t, u in zip(per["traced"], per["untraced"])]
            hooked = [h - u for h, u in zip(per["hooked"], per["untraced"])]
            excess.sort()
            n = len(excess)
            results["distros"][distro] = {
                "cpu_us_per_callback": {m: round(statistics.median(v), 3) for m, v in per.items()},
                "runs_us_per_callback": {m: [round(x, 3) for x in v] for m, v in per.items()},
                "overhead_traced_us": quartiles(traced),
                "overhead_hooked_us": quartiles(hooked),
                "events_per_callback": round(events / max(callbacks, 1), 2),
                "event_us": {"recorded": round(tracepoint_cost(distro, work, True), 3),
                             "not_recorded": round(tracepoint_cost(distro, work, False), 3)},
                "dispatch_excess_us": {"runs": n, **({f"p{q}": round(excess[min(n - 1, q * n // 100)] / 1e3, 3)
                                                      for q in (50, 90, 99)} if n else {})},
            }
    out = REPO / "bench" / "results" / f"ros2_overhead-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nrclpy callback overhead, {a.rate:g} Hz timer + subscription, {a.seconds:g} s x {a.rounds} rounds "
          f"(CPU us per callback on the executor's thread)")
    print(f"{'distro':<8} {'untraced':>9} {'hooked':>9} {'traced':>9}  {'traced-untraced p25/p50/p75':>28}"
          f"  {'events/cb':>9} {'us/event':>8}  dispatch excess p50/p90 us")
    for d, r in results["distros"].items():
        c, e, o = r["cpu_us_per_callback"], r["dispatch_excess_us"], r["overhead_traced_us"]
        print(f"{d:<8} {c['untraced']:>9.2f} {c['hooked']:>9.2f} {c['traced']:>9.2f}  "
              f"{o['p25']:>9.2f}/{o['p50']:.2f}/{o['p75']:.2f}{'':>5}  {r['events_per_callback']:>9} "
              f"{r['event_us']['recorded']:>8}  {e.get('p50', '-')}/{e.get('p90', '-')}")
    if results["active_sessions_before"]:
        print(f"note: {len(results['active_sessions_before'])} other LTTng session(s) were active: a session enabling "
              "ros2:* records the 'hooked' runs (and the tracepoint loop) too")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
