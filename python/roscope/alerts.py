"""What `roscope watch` does when a flow misses its deadline (docs/watch.md, "Alerts"):
a line on stderr, a JSON line (with --json), and the `--on-miss` action.

An action is either a command (its argv, as the user wrote it, split like a shell
would but run without one; the alert's facts are passed as environment variables
`ROSCOPE_MISS_*`, never in its argv or in any shell text; started through
`roscope.processes`, not waited for, from a thread of its own so that starting it
never holds up the next chunk's check) or the name of a built-in action: `ACTIONS`
maps names to functions of (alert, trace directory). Issue 32's flight recorder adds
`snapshot` there.
"""
from __future__ import annotations

import os
import queue
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from roscope import numbers, regex
from roscope.errors import InputError
from roscope.processes import group
from roscope.text import escape

#: Built-in actions by name: (alert, trace directory) -> None.
ACTIONS: dict[str, Callable[[dict, Path], None]] = {}
#: Names reserved for actions still to come (a clear error until they exist).
RESERVED = {"snapshot": "the flight recorder's snapshot (issue 32) is not part of this roscope yet"}
#: Exit code of `roscope watch` when a deadline was missed (and it was not interrupted).
EXIT_MISSED = 3


#: The range of a deadline (ms): from 1 us to an hour.
DEADLINE_MS = (0.001, 3_600_000)


def parse_deadline(text: str) -> tuple[str, str, int]:
    """'FROM->TO=MS' -> (from regex, to regex, deadline ns); InputError naming the part
    that is wrong (the form, a regex `roscope.regex` cannot run, a number out of range)."""
    path, sep, ms = text.rpartition("=")
    src, arrow, dst = path.partition("->")
    if not sep or not arrow or not src or not dst:
        raise InputError(f"--deadline {escape(repr(text))}: give FROM->TO=MS (topic regexes and a deadline in ms)")
    for what, rx in (("FROM", src), ("TO", dst)):
        try:
            regex.compile(rx, None)
        except InputError as e:
            raise InputError(f"--deadline {escape(repr(text))}: {what}: {e}") from None
    try:
        ns = numbers.duration_ns(ms, "ms", *DEADLINE_MS)
    except InputError as e:
        raise InputError(f"--deadline {escape(repr(text))}: the deadline {e}") from None
    return src, dst, ns


def environment(alert: dict, trace: Path) -> dict:
    """The alert's facts as ROSCOPE_MISS_* variables (values are data: never run)."""
    return {**os.environ, "ROSCOPE_MISS_PATH": alert["path"], "ROSCOPE_MISS_ROUTE": alert["route"],
            "ROSCOPE_MISS_LATENCY_NS": str(alert["latency_ns"]), "ROSCOPE_MISS_DEADLINE_NS": str(alert["deadline_ns"]),
            "ROSCOPE_MISS_START_NS": str(alert["start_ns"]), "ROSCOPE_MISS_END_NS": str(alert["end_ns"]),
            "ROSCOPE_TRACE_DIR": str(trace)}


class OnMiss:
    """The `--on-miss` action: a built-in one by name, or a command."""

    def __init__(self, text: str | None):
        self.action = None
        self.argv: list[str] | None = None
        self.started: list[group.Started] = []
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        if not text:
            return
        if text in RESERVED and text not in ACTIONS:
            raise InputError(f"--on-miss {text}: {RESERVED[text]}")
        if text in ACTIONS:
            self.action = ACTIONS[text]
            return
        try:
            self.argv = shlex.split(text)
        except ValueError as e:
            raise InputError(f"--on-miss {text!r}: {e}") from None
        if not self.argv:
            raise InputError("--on-miss: give a command or an action name")

    @staticmethod
    def tell(alert: dict) -> None:
        """The alert's line on stderr."""
        print(f"roscope: DEADLINE MISS {escape(alert['path'])}: flow ending at {alert['end_s']:.3f} s took "
              f"{alert['latency_ns'] / 1e6:.3f} ms > {alert['deadline_ns'] / 1e6:g} ms ({escape(alert['route'])})",
              file=sys.stderr, flush=True)

    def __call__(self, alert: dict, trace: Path) -> None:
        """Runs the action for `alert` (a command: started from the action thread, not
        waited for)."""
        if self.action is not None:
            self.action(alert, trace)
        elif self.argv is not None:
            if self._thread is None:
                self._thread = threading.Thread(target=self._starter, name="roscope-on-miss", daemon=True)
                self._thread.start()
            self._queue.put((alert, trace))

    def _starter(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self.started.append(group.start("on-miss", self.argv, env=environment(*item)))
            except OSError as e:
                print(f"roscope: warning: --on-miss {escape(self.argv[0])}: {e.strerror or e}", file=sys.stderr)

    def finish(self, grace_s: float = 5.0) -> None:
        """Lets the commands started still running finish within `grace_s`, then stops them
        (`roscope.processes`)."""
        if self._thread is not None:   # every command queued is started first
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        deadline = time.monotonic() + grace_s
        for s in self.started:
            try:
                s.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            group.stop(s, 1.0)
        self.started = []
