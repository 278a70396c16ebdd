"""Progress of long work, on stderr: what a verb is doing (its phase), how far it
got (e.g. output messages searched of the total, flows found so far), the time
elapsed and an estimate of the time left.

The work reports at its own pace, never per event: the Rust core stores counters in
a `_core.Meter` once per chunk of events or per output message, and Python code
calls `step()` once per slice or chunk; a thread of this module reads them a few
times a second and draws. On a terminal the progress is one line, redrawn in
place and cleared at the end; elsewhere (a log, `--progress` with a pipe) it is a
line every few seconds and at each new phase.

- `Progress(enabled, ...)`: the display; as a context manager it is also the
  *current* one (`current()`), which library code reports to without being handed
  it (a data-flow search inside `roscope report` or `roscope why` shows in the
  progress of the verb that runs it);
- `current()`: the progress being shown, or one that shows nothing;
- `Progress.phase(name, total=None, unit=..., meter=None, found=...)`: a new
  phase; `step(n)` counts Python-side work in it; `meter` counters are read from
  the core;
- `Progress.watch(check)`: `check(state)` is called by the thread about once a
  second while the phase lasts and may return a warning, printed once (e.g. "this
  search looks huge", `roscope.flow.search`); watching works also when nothing is
  drawn;
- `wanted(flag, json)`: the default of every verb: on a terminal unless `--json`,
  and always with `--progress` (`--no-progress`: never).
"""
from __future__ import annotations

import contextvars
import os
import shutil
import sys
import threading
import time
from typing import NamedTuple

from roscope.text import escape

__all__ = ["Progress", "State", "current", "duration", "wanted"]

#: How often the thread redraws a terminal line, and how often it prints a line elsewhere (seconds).
TTY_EVERY = 0.25
LOG_EVERY = 5.0
#: How often watchers are asked (seconds).
WATCH_EVERY = 0.5

_current: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("roscope_progress", default=None)


def wanted(flag: bool | None, json: bool = False, stream=None) -> bool:
    """Whether a verb shows progress: `flag` True/False when the user said so
    (`--progress`/`--no-progress`), else on a terminal (stderr) unless `--json`."""
    if flag is not None:
        return flag
    stream = stream or sys.stderr
    try:
        return stream.isatty() and not json
    except (AttributeError, ValueError):
        return False


class State(NamedTuple):
    """What a phase has done so far, as a watcher sees it."""

    phase: str
    elapsed: float  # seconds in this phase
    done: int
    total: int | None
    found: int
    work: int


def duration(s: float) -> str:
    """Seconds as text: '42 s', '3 min 05 s', '2 h 10 min'."""
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s // 60 % 60:02d} min"


def _columns(stream) -> int:
    """The width of the terminal `stream` writes to (stderr's, not stdout's, which may be a file)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 100
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size((100, 20)).columns


class Progress:
    """The progress display of one verb (see the module's doc). Thread-safe for
    its users: they set numbers, the thread reads them."""

    def __init__(self, enabled: bool, verb: str = "", stream=None, *, tty: bool | None = None):
        self.enabled = enabled
        self.verb = verb
        self.out = stream or sys.stderr
        if tty is None:
            try:
                tty = self.out.isatty()
            except (AttributeError, ValueError):
                tty = False
        self.tty = tty
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._token = None
        self._drawn = False
        self._last_log = 0.0
        self._set_phase("starting", None, "", None, "", 1)
        self._watchers: list = []
        self._warned: set[int] = set()

    # ------------------------------------------------------------ for the work

    def _set_phase(self, name, total, unit, meter, found, scale) -> None:
        self._phase, self._total, self._unit, self._meter, self._found_name = name, total, unit, meter, found
        self._scale = scale
        self._steps = 0
        self._phase_t0 = time.monotonic()

    def phase(self, name: str, total: int | None = None, unit: str = "", meter=None, found: str = "",
              scale: float = 1) -> None:
        """A new phase `name`; `total` units of work (`unit`, e.g. 'output messages'),
        counted by `step()` or read from `meter` (`_core.Meter`: done, total, found,
        work); `found`: what the meter's third counter counts (e.g. 'flows'); done and
        total are shown divided by `scale` (e.g. bytes as MB)."""
        log = self.enabled and not self.tty and self._thread is not None
        if log and (self._meter is not None or self._steps):
            self._log_line(force=True)  # how the phase ended, in a log
        with self._lock:
            self._set_phase(name, total, unit, meter, found, scale)
            self._watchers = []
        if log:
            self._log_line(force=True)

    def step(self, n: int = 1) -> None:
        """`n` more units of the phase's work done (Python side: per slice, per chunk)."""
        self._steps += n

    def watch(self, check) -> None:
        """Calls `check(State)` about every WATCH_EVERY s while this phase lasts; a
        text it returns is printed once as a warning."""
        with self._lock:
            self._watchers.append(check)

    def warn(self, text: str) -> None:
        """A warning line (control characters escaped) above the progress line."""
        with self._lock:
            self._clear()
            print(f"roscope: warning: {escape(text)}", file=self.out, flush=True)
            self._drawn = False

    # ------------------------------------------------------------ state

    def state(self) -> State:
        with self._lock:
            return self._state()

    def _state(self) -> State:
        done, total, found, work = self._steps, self._total, 0, 0
        if self._meter is not None:
            d, t, found, work = self._meter.read()
            done += d
            if total is None and t:
                total = t
        return State(self._phase, time.monotonic() - self._phase_t0, done, total, found, work)

    def line(self) -> str:
        """The progress as one line of text."""
        with self._lock:
            s = self._state()
        parts = []
        k = self._scale
        if s.total:
            share = min(1.0, s.done / s.total)
            parts.append(f"{s.done / k:,.0f}/{s.total / k:,.0f} {self._unit} ({100 * share:.0f} %)".replace("  ", " "))
        elif s.done:
            parts.append(f"{s.done / k:,.0f} {self._unit}".rstrip())
        if self._found_name:
            parts.append(f"{s.found:,} {self._found_name}")
        parts.append(f"{duration(time.monotonic() - self.t0)} elapsed")
        if s.total and 0 < s.done < s.total and s.elapsed >= 1.0:
            parts.append(f"about {duration(s.elapsed * (s.total - s.done) / s.done)} left")
        return f"roscope{' ' + self.verb if self.verb else ''}: {s.phase}: " + ", ".join(parts)

    # ------------------------------------------------------------ drawing

    def _clear(self) -> None:
        if self.tty and self._drawn:
            self.out.write("\r\x1b[K")
            self.out.flush()

    def _draw(self) -> None:
        text = self.line()
        with self._lock:
            width = _columns(self.out) - 1
            if len(text) > width:
                text = text[: max(0, width - 1)] + "…"
            self.out.write("\r\x1b[K" + text)
            self.out.flush()
            self._drawn = True

    def _log_line(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_log >= LOG_EVERY:
            self._last_log = now
            print(self.line(), file=self.out, flush=True)

    def _run(self) -> None:
        next_watch = 0.0
        while True:
            now = time.monotonic()
            if self._watchers and now >= next_watch:
                next_watch = now + WATCH_EVERY
                self._check_watchers()
            if self.enabled:
                if self.tty:
                    self._draw()
                else:
                    self._log_line()
            if self._stop.wait(TTY_EVERY):
                return

    def _check_watchers(self) -> None:
        with self._lock:
            watchers = list(self._watchers)
            s = self._state()
        for check in watchers:
            if id(check) in self._warned:
                continue
            msg = check(s)
            if msg:
                self._warned.add(id(check))
                self.warn(msg)

    # ------------------------------------------------------------ lifetime

    def start(self) -> Progress:
        self._token = _current.set(self)
        self._last_log = time.monotonic()  # elsewhere than on a terminal, each phase prints its first line
        self._thread = threading.Thread(target=self._run, name="roscope-progress", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops the thread and clears the line (on a terminal), so that what the
        verb prints next starts on a clean line."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        with self._lock:
            self._clear()
            self._drawn = False
        if self._token is not None:
            try:
                _current.reset(self._token)
            except ValueError:  # closed in another context
                _current.set(None)
            self._token = None

    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


_NONE = Progress(False, tty=False)


def current() -> Progress:
    """The progress being shown (`with Progress(...)`), else one that shows nothing."""
    return _current.get() or _NONE
