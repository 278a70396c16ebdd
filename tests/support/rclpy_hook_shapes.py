"""Callables of every shape through the rclpy hook's C wrapper (`_roscope_rclpy_fast.Traced`),
run by tests/test_rclpy_hook.py under `roscope record --ros2 DISTRO` with the distro's Python.

Each case calls a `Traced(fn, handle)` the way rclpy's executor calls a callback, and logs, as
ground truth, the handle and the monotonic times of the callable's first and last statements
(`first`/`last`), or that a call failed before it ran (`failed`). The log (JSON: the process id
and the runs) goes to argv[1]. Handles are small numbers: the trace's callback_start/end carry
them.
"""
from __future__ import annotations

import functools
import glob
import importlib.machinery
import importlib.util
import json
import os
import sys
import time

log: list[dict] = []
now = time.monotonic_ns


def fast_module():
    """The wrapper's extension from roscope's tracer directory ($ROSCOPE_RCLPY_HOOK)."""
    (path,) = glob.glob(os.path.join(os.environ["ROSCOPE_RCLPY_HOOK"], "_roscope_rclpy_fast*.so"))
    loader = importlib.machinery.ExtensionFileLoader("_roscope_rclpy_fast", path)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_file_location("_roscope_rclpy_fast", path, loader=loader))
    loader.exec_module(mod)
    return mod


F = fast_module()


class Sensor:
    def __init__(self):
        self.seen = 0

    def on_msg(self, msg):  # a bound method
        t0 = now()
        self.seen += msg
        log.append({"case": "method", "h": 1, "first": t0, "last": now()})


def free(msg, scale=1, h=2):  # a free function; through a partial with keywords too
    t0 = now()
    log.append({"case": "function", "h": h, "first": t0, "last": now(), "v": msg * scale})


class Hook:  # a callable object: no function to watch, timed around the call
    def __call__(self, msg):
        t0 = now()
        log.append({"case": "callable", "h": 4, "first": t0, "last": now()})


def boom(msg):
    t0 = now()
    log.append({"case": "raises", "h": 5, "first": t0, "last": now()})
    raise ValueError(msg)


def inner(msg):
    t0 = now()
    log.append({"case": "inner", "h": 7, "first": t0, "last": now()})


traced_inner = F.Traced(inner, 7)


def outer(msg):  # a callback that runs another traced callback inside it
    t0 = now()
    traced_inner(msg)
    log.append({"case": "outer", "h": 6, "first": t0, "last": now()})


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main() -> None:
    s = Sensor()
    cases = [F.Traced(s.on_msg, 1), F.Traced(free, 2),
             F.Traced(functools.partial(free, scale=3, h=3), 3), F.Traced(Hook(), 4),
             F.Traced(boom, 5), F.Traced(outer, 6),
             # a lambda: its frame is the run's
             F.Traced(lambda msg: log.append({"case": "lambda", "h": 8, "first": now(), "last": now()}), 8)]
    for i in range(30):
        for c in cases:
            try:
                c(i)
            except ValueError:
                pass
        time.sleep(0.002)
    # Called with arguments it does not take: the call fails before the callable's frame runs
    # (a run of no length, as around the call); then the same function, called directly and
    # untraced, must make no run, and Python code runs on as before.
    bad = F.Traced(free, 9)
    for _ in range(3):
        try:
            bad(1, 2, 3, 4)
        except TypeError:
            log.append({"case": "failed", "h": 9})
    free(0)
    log.pop()  # the direct call's own line: not a traced run
    assert fib(18) == 2584 and s.seen == sum(range(30))
    with open(sys.argv[1], "w") as f:
        json.dump({"pid": os.getpid(), "runs": log}, f)


if __name__ == "__main__":
    main()
