#!/usr/bin/env python3
"""The system bench/ros2_overhead/run.py measures: one rclpy process, one node (no parameter
services, no /rosout: fewer entities for the executor to wait on), a timer at RATE Hz that
publishes a std_msgs/UInt64 on /bench and a subscription to /bench, on one single-threaded
executor.

usage: node.py RATE SECONDS OUT.json   (after 1 s of warm-up, SECONDS are measured)
       node.py --tracepoints N OUT.json   (CPU time of N callback_start events in a loop, through
                                          the rclpy hook's C extension: a tracepoint's own cost)

Writes: callbacks run in the measured interval, the CPU time over it of the executor's thread
(where the callbacks, rclpy's executor, rcl and rmw's publish and take run, with every
tracepoint and the rclpy hook) and of the whole process (DDS's threads too), and each callback
run's own time (its first to its last
statement, CLOCK_MONOTONIC) for the trace's comparison."""
import gc
import json
import resource
import sys
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import UInt64

WARMUP_S = 1.0


def tracepoints(n: int, out: str) -> None:
    import glob
    import importlib.machinery
    import importlib.util
    import os

    path = glob.glob(os.path.join(os.environ["ROSCOPE_RCLPY_HOOK"], "_roscope_rclpy_fast*.so"))[0]
    loader = importlib.machinery.ExtensionFileLoader("_roscope_rclpy_fast", path)
    fast = importlib.util.module_from_spec(importlib.util.spec_from_file_location("_roscope_rclpy_fast", path, loader=loader))
    loader.exec_module(fast)
    start, empty = fast.callback_start, (lambda h: None)
    t0 = time.thread_time_ns()
    for i in range(n):
        empty(i)
    t1 = time.thread_time_ns()
    for i in range(n):
        start(i)
    t2 = time.thread_time_ns()
    with open(out, "w") as f:
        json.dump({"events": n, "event_us": ((t2 - t1) - (t1 - t0)) / n / 1e3}, f)


def main() -> None:
    if sys.argv[1] == "--tracepoints":
        return tracepoints(int(sys.argv[2]), sys.argv[3])
    rate, seconds, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    gc.disable()  # as the example: no collection inside a callback's few microseconds
    rclpy.init()
    runs = []
    log = runs.append
    node = Node("bench", start_parameter_services=False, enable_rosout=False)
    pub = node.create_publisher(UInt64, "/bench", 10)
    n = [0]

    def tick():
        t0 = time.monotonic_ns()
        n[0] += 1
        pub.publish(UInt64(data=n[0]))
        t1 = time.monotonic_ns()
        log((0, t0, t1))

    def on_msg(msg):
        t0 = time.monotonic_ns()
        t1 = time.monotonic_ns()
        log((1, t0, t1))

    node.create_timer(1.0 / rate, tick)
    node.create_subscription(UInt64, "/bench", on_msg, 10)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    end = time.monotonic() + WARMUP_S
    while time.monotonic() < end:
        ex.spin_once()  # the timer wakes it: no timeout timer made per call
    before, k0, t_start, th0 = resource.getrusage(resource.RUSAGE_SELF), len(runs), time.monotonic_ns(), time.thread_time_ns()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ex.spin_once()  # the timer wakes it: no timeout timer made per call
    after, k1, t_end, th1 = resource.getrusage(resource.RUSAGE_SELF), len(runs), time.monotonic_ns(), time.thread_time_ns()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(out, "w") as f:
        json.dump({"callbacks": k1 - k0, "cpu_s": cpu, "thread_cpu_s": (th1 - th0) / 1e9, "wall_s": (t_end - t_start) / 1e9,
                   "measured": [t_start, t_end], "runs": runs[k0:k1]}, f)
    ex.shutdown()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
