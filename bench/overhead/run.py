#!/usr/bin/env python3
"""Latency overhead of the roscope ROS 1 tracer (method of the ros2_tracing paper).

For each message size and publishing rate, the ping-pong pair (pingpong.cpp)
runs twice in the same invocation: without the tracer (no preload, no session)
and with it (libroscope_ros1.so preloaded, an LTTng session recording all
roscope_ros1 events with the same channel settings as `roscope record`). The
order alternates between combinations. The one-way latency is the time from
the publish() call in ping to the entry of pong's subscription callback.

Reported per combination: mean / median / p99 of both, and the overhead
(traced minus baseline) of each statistic; then the paper's aggregate: every
traced latency minus the mean of its combination's baseline, pooled.

Second measure ("loop"): the CPU cost of the tracer per message on the
in-process publish -> callback path (pingpong loop: no sleeping, no wake-ups,
so scheduling noise of a shared machine mostly cancels), untraced vs traced.

usage: run.py [--sizes 1,32,64,256] [--rates 100,500,1000] [--duration 5]
              [--repeat 1] [--loop-iterations 100000] [-o RESULTS_DIR]
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
from roscope.record import RecordOptions, find_tracer, start_session, stop_session  # noqa: E402

WARMUP_S = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 15) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"rosmaster did not open port {port}")


def run_pair(binary: Path, size: int, rate: int, duration: float, csv_path: Path, env: dict) -> list[int]:
    pong = subprocess.Popen([str(binary), "pong"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        ping = subprocess.run([str(binary), "ping", str(size), str(rate), str(duration), str(csv_path)],
                              env=env, capture_output=True, text=True, timeout=duration + 60)
        if ping.returncode != 0:
            raise RuntimeError(f"ping failed: {ping.stderr}")
    finally:
        pong.send_signal(signal.SIGINT)
        try:
            pong.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pong.kill()
            pong.wait()
    skip = int(WARMUP_S * rate)
    with open(csv_path) as f:
        rows = [r for r in csv.DictReader(f) if int(r["seq"]) >= skip]
    return [int(r["ping_to_pong_ns"]) for r in rows]


def stats(xs: list[float]) -> dict:
    s = sorted(xs)
    p99 = s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]
    return {"n": len(s), "mean_us": statistics.fmean(s) / 1e3, "median_us": statistics.median(s) / 1e3,
            "p99_us": p99 / 1e3}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,32,64,256", help="message sizes in KiB")
    ap.add_argument("--rates", default="100,500,1000", help="publishing rates in Hz")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per run (first second discarded)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--loop-iterations", type=int, default=100000)
    ap.add_argument("-o", "--output", help="results directory to create (default results/<time>)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    rates = [int(x) for x in args.rates.split(",")]

    subprocess.run(["make", "-C", str(HERE)], check=True, capture_output=True)
    subprocess.run(["make", "-C", str(REPO / "instrument" / "ros1")], check=True, capture_output=True)
    binary = HERE / "build" / "pingpong"
    tracer = find_tracer()
    out = Path(args.output) if args.output else HERE / "results" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=False)

    port = free_port()
    base_env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1",
                    ROS_LOG_DIR=str(out / "ros-log"))
    base_env.pop("LD_PRELOAD", None)
    master = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], env=base_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = out / "state"
    results = []
    try:
        wait_port(port)
        order = 0
        for rep in range(args.repeat):
            for size in sizes:
                for rate in rates:
                    configs = ["baseline", "traced"] if order % 2 == 0 else ["traced", "baseline"]
                    order += 1
                    lat = {}
                    losses = None
                    for cfg in configs:
                        tag = f"{size}KiB-{rate}Hz-r{rep}-{cfg}"
                        env = dict(base_env)
                        name = None
                        if cfg == "traced":
                            env["LD_PRELOAD"] = str(tracer)
                            name = f"roscope-bench-{uuid.uuid4().hex[:8]}"
                            os.environ["XDG_STATE_HOME"] = str(state)
                            start_session(RecordOptions(output=str(out / "traces" / tag), name=name))
                        try:
                            lat[cfg] = run_pair(binary, size * 1024, rate, args.duration, out / f"{tag}.csv", env)
                        finally:
                            if name:
                                m = stop_session(name)
                                losses = m.get("events_discarded")
                    b, t = stats(lat["baseline"]), stats(lat["traced"])
                    row = {"size_kib": size, "rate_hz": rate, "repeat": rep, "baseline": b, "traced": t,
                           "overhead_mean_us": t["mean_us"] - b["mean_us"],
                           "overhead_median_us": t["median_us"] - b["median_us"],
                           "overhead_p99_us": t["p99_us"] - b["p99_us"],
                           "events_discarded": losses,
                           "aggregate_deltas_us": [(x / 1e3) - b["mean_us"] for x in lat["traced"]]}
                    results.append(row)
                    print(f"{size:4d} KiB {rate:5d} Hz  baseline mean {b['mean_us']:8.1f} med {b['median_us']:8.1f} "
                          f"p99 {b['p99_us']:8.1f} | traced mean {t['mean_us']:8.1f} med {t['median_us']:8.1f} "
                          f"p99 {t['p99_us']:8.1f} | overhead mean {row['overhead_mean_us']:+6.1f} "
                          f"med {row['overhead_median_us']:+6.1f} p99 {row['overhead_p99_us']:+7.1f} us"
                          f"  (lost {losses})", flush=True)
    finally:
        master.send_signal(signal.SIGINT)
        try:
            master.wait(timeout=10)
        except subprocess.TimeoutExpired:
            master.kill()

    loop = []
    try:
        master = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], env=base_env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port)
        for size in sizes:
            costs = {"baseline": [], "traced": []}
            for rep in range(3):
                for cfg in (["baseline", "traced"] if rep % 2 == 0 else ["traced", "baseline"]):
                    env = dict(base_env)
                    name = None
                    if cfg == "traced":
                        env["LD_PRELOAD"] = str(tracer)
                        name = f"roscope-bench-{uuid.uuid4().hex[:8]}"
                        os.environ["XDG_STATE_HOME"] = str(state)
                        start_session(RecordOptions(output=str(out / "traces" / f"loop-{size}KiB-{rep}"),
                                                    name=name))
                    try:
                        p = subprocess.run([str(binary), "loop", str(size * 1024), str(args.loop_iterations)],
                                           env=env, capture_output=True, text=True, timeout=300)
                    finally:
                        if name:
                            stop_session(name)
                    ns, received = p.stdout.split()
                    assert int(received) == args.loop_iterations // 1000 * 1000, p.stdout
                    costs[cfg].append(float(ns))
            b, t = statistics.median(costs["baseline"]), statistics.median(costs["traced"])
            loop.append({"size_kib": size, "baseline_ns_per_msg": b, "traced_ns_per_msg": t,
                         "overhead_ns_per_msg": t - b, "runs": costs})
            print(f"loop {size:4d} KiB: {b:8.0f} ns/msg untraced, {t:8.0f} ns/msg traced, "
                  f"overhead {t - b:+6.0f} ns/msg", flush=True)
    finally:
        master.send_signal(signal.SIGINT)
        try:
            master.wait(timeout=10)
        except subprocess.TimeoutExpired:
            master.kill()

    pooled = [d for r in results for d in r.pop("aggregate_deltas_us")]
    agg = {"n": len(pooled), "mean_us": statistics.fmean(pooled), "median_us": statistics.median(pooled),
           "p99_us": sorted(pooled)[int(0.99 * (len(pooled) - 1))]}
    summary = {"method": "one-way ping->pong latency, publish() to subscriber callback; traced minus baseline",
               "duration_s": args.duration, "warmup_s": WARMUP_S, "host": socket.gethostname(),
               "cpus": os.cpu_count(), "results": results, "loop": loop, "aggregate_overhead": agg,
               "mean_of_mean_overheads_us": statistics.fmean(r["overhead_mean_us"] for r in results),
               "median_of_median_overheads_us": statistics.median(r["overhead_median_us"] for r in results)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\naggregate (paper's method: traced latency minus its combination's baseline mean, pooled): "
          f"mean {agg['mean_us']:+.2f} us, median {agg['median_us']:+.2f} us, p99 {agg['p99_us']:+.2f} us "
          f"over {agg['n']} messages")
    print(f"mean of per-combination mean overheads {summary['mean_of_mean_overheads_us']:+.2f} us; "
          f"median of per-combination median overheads {summary['median_of_median_overheads_us']:+.2f} us")
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
