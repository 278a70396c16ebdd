"""What every node of the example shares: message ids, the ground-truth log, the slowdown
switch, and a spin loop that stops cleanly on SIGINT/SIGTERM (see ../README.md).

Ground truth: each process appends its facts to a list in memory and writes them, as JSON
lines, to $ROSCOPE_GT_DIR/<process>.jsonl when it stops (never overwriting a file): nothing is
written while a callback runs, so that a callback's logged duration is its own work. Times
are CLOCK_MONOTONIC (time.monotonic_ns), the clock of the trace.

- ``run``: one callback run: node, callback, kind, topic/service/action, start_ns (the
  callback's first operation), end_ns (its last). A callback reads the clock first thing
  (``t0 = monotonic_ns()``; a lambda registered as the callback does it before calling the
  method it wraps) and last thing (``run[2] = monotonic_ns()``, a store into the list
  ``begin`` made: no allocation, nothing else after the clock read), so that the logged run
  is the callback's whole run but CPython's entry into the frame and its return;
- ``pub``: a message published: node, topic, id, inputs (ids of the messages it came from),
  mono_ns (right before publish());
- ``recv``: a message a subscription callback received: node, topic, id;
- ``request`` / ``serve`` / ``response``: a service call as the client sends it, as the server
  handles it and as the client gets its response (ids of request and response);
- ``goal`` / ``goal_recv`` / ``feedback`` / ``feedback_recv`` / ``result`` / ``result_recv``:
  an action's goal, feedback and result, sent and received.

Message ids are 64-bit: (code << 32) | sequence, the code naming the topic or service.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import threading
import time

CODES = {"/lidar": 1, "/imu": 2, "/fused": 3, "/plan_path:request": 4, "/plan_path:response": 5, "/plan": 6,
         "/follow:goal": 7, "/follow:feedback": 8, "/follow:result": 9, "/cmd": 10}
SLOW_VAR = "ROS2_PIPELINE_SLOW"
#: Blocked from the start (this module is the nodes' first import), so that every thread
#: started later (rclpy's, DDS's) blocks them too, and only spin()'s thread takes them.
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def rename_process(name: str) -> None:
    """Names the process (its main thread's comm, what `ps` and the trace's procname show)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME


class Ids:
    """Message ids per code, numbered from 1."""

    def __init__(self):
        self.n = {}
        self.lock = threading.Lock()

    def next(self, what: str) -> int:
        with self.lock:
            k = self.n[what] = self.n.get(what, 0) + 1
        return (CODES[what] << 32) | k


class GroundTruth:
    def __init__(self, process: str):
        self.process = process
        self.rows = []
        self.add(ev="start", process=process, pid=os.getpid())

    def add(self, **kw) -> None:
        kw.setdefault("mono_ns", time.monotonic_ns())
        self.rows.append(kw)  # list.append: atomic under the GIL

    def run_key(self, node: str, cb: str, kind: str, what: str):
        """A callback's key for `begin`."""
        return (node, cb, kind, what)

    def begin(self, key, t0: int) -> list:
        """A run of the callback `key` that started at t0: ``[key, t0, 0]``, logged now; its
        callback ends it with ``run[2] = monotonic_ns()`` as its last statement."""
        run = [key, t0, 0]
        self.rows.append(run)
        return run

    def write(self) -> None:
        self.add(ev="stop")
        d = os.environ.get("ROSCOPE_GT_DIR") or "."
        with open(os.path.join(d, self.process + ".jsonl"), "x") as f:  # never overwrite
            for r in self.rows:
                if isinstance(r, list):
                    (node, cb, kind, what), t0, t1 = r
                    r = {"ev": "run", "node": node, "cb": cb, "kind": kind, "what": what, "start_ns": t0, "end_ns": t1}
                f.write(json.dumps(r) + "\n")


class Slow:
    """$ROS2_PIPELINE_SLOW=CALLBACK:MS[@FROM-TO]: the callback named CALLBACK (e.g.
    Fusion.on_lidar) spins MS milliseconds longer in each run (in the window FROM-TO seconds
    after its process started, if given). Spins: the time is CPU work, as a slow callback's."""

    def __init__(self):
        self.name, self.ns, self.window = None, 0, None
        spec = os.environ.get(SLOW_VAR, "").strip()
        if not spec:
            return
        try:
            name, rest = spec.rsplit(":", 1)
            ms, _, window = rest.partition("@")
            self.name, self.ns = name, int(float(ms) * 1e6)
            if window:
                a, b = window.split("-")
                t = time.monotonic_ns()
                self.window = (t + int(float(a) * 1e9), t + int(float(b) * 1e9))
        except ValueError:
            raise SystemExit(f"{SLOW_VAR}={spec!r}: expected CALLBACK:MS or CALLBACK:MS@FROM-TO (seconds)") from None

    def __call__(self, name: str) -> None:
        if name != self.name:
            return
        now = time.monotonic_ns()
        if self.window and not self.window[0] <= now < self.window[1]:
            return
        end = now + self.ns
        while time.monotonic_ns() < end:
            pass


def busy(us: int) -> None:
    """CPU work of `us` microseconds."""
    end = time.monotonic_ns() + us * 1000
    while time.monotonic_ns() < end:
        pass


def spin(executor, gt: GroundTruth, nodes) -> None:
    """Spins until SIGINT or SIGTERM, then stops the executor and writes the ground truth.
    The signals are taken by a thread of their own (init() blocks them in every other
    thread), which only sets a flag and wakes the executor (a guard condition): callbacks
    are never interrupted, and a process blocked in its executor's wait still stops."""
    import rclpy

    stop = []
    wake = nodes[0].create_guard_condition(lambda: None)

    def wait_for_signal():
        stop.append(signal.sigwait(STOP_SIGNALS))
        wake.trigger()

    threading.Thread(target=wait_for_signal, daemon=True).start()
    for n in nodes:
        executor.add_node(n)
    try:
        while not stop:
            executor.spin_once()
    finally:
        executor.shutdown()
        gt.write()
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()


def init():
    """rclpy.init without rclpy's own signal handlers (spin() takes SIGINT and SIGTERM).

    Python's cyclic garbage collector is off: a collection starts at any allocation, and one
    between a callback's last statement and its return (a pause of up to a millisecond) would
    be counted in the traced run but not in the logged one. The nodes make no reference
    cycles worth collecting in a run of seconds."""
    gc.disable()
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
