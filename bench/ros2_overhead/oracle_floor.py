#!/usr/bin/env python3
"""How finely the ROS 2 example's ground truth can time a callback (issue 26): an rclpy node
with a timer at the example's sensor rate (20 Hz), untraced, whose callback reads the clock
twice as its first two statements, as the example's callbacks log their first statement. The
gap between the two reads is the log's own resolution where a callback starts: what a traced
run's excess over the logged one (test_ros2_pipeline, "traced - logged") can be held to.

Run with a distro's interpreter (`make setup`):

    .ros2/jazzy/bin/python bench/ros2_overhead/oracle_floor.py [--seconds 30] [--rate 20]

Prints the gap's percentiles; measured at stop 38 (quiet machine, Jazzy, 30 s): 600 runs, p50
246 ns, p90 456 ns, p99 738 ns, max 1.5 µs, none over 5 µs.
"""
from __future__ import annotations

import argparse
import time

import rclpy
from rclpy.node import Node


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=20.0, help="the timer's rate, Hz")
    a = ap.parse_args()
    clock = time.monotonic_ns
    gaps: list[int] = []
    rclpy.init()
    node = Node("oracle_floor")

    def on_timer() -> None:
        t0 = clock()
        t1 = clock()
        gaps.append(t1 - t0)

    node.create_timer(1.0 / a.rate, on_timer)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_node()
    rclpy.shutdown()
    gaps.sort()
    n = len(gaps)
    print(f"{n} runs of a {a.rate:g} Hz timer: two successive clock reads at the callback's start: p50 {gaps[n // 2]} ns, "
          f"p90 {gaps[9 * n // 10]} ns, p99 {gaps[99 * n // 100]} ns, max {gaps[-1]} ns; "
          f"over 1 us: {sum(g > 1000 for g in gaps)}, over 5 us: {sum(g > 5000 for g in gaps)}")


if __name__ == "__main__":
    main()
