"""Signals to processes known by identity: a signal goes to a PID only while it is
still the process that was recorded (same boot, same exact start time).

The check and the signal cannot be separated by a PID reuse: the process is
pinned first (a pidfd, Linux 5.3), its identity checked, and the signal sent
through that pidfd; on kernels without pidfds the window is the few
microseconds between the check and kill(2)."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from roscope.processes.identity import mismatch, same_process


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def send(ident: dict, sig: int, also=None) -> str | None:
    """Sends `sig` to the process `ident` if it is still that process (and `also(pid)`,
    when given, holds once it is pinned). Returns None when sent, else why not."""
    why = mismatch(ident)
    if why is not None:
        return why
    pid = ident["pid"]
    fd = _open_pidfd(pid)
    try:
        why = mismatch(ident)   # checked again once pinned: the pidfd names this process
        if why is None and also is not None and not also(pid):
            why = f"PID {pid} is no longer one of roscope's processes"
        if why is not None:
            return why
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
        return None
    except ProcessLookupError:
        return f"PID {pid} has ended"
    except PermissionError:
        return f"PID {pid}: not allowed to signal it"
    finally:
        if fd is not None:
            os.close(fd)


def wait_gone(idents: list[dict], timeout: float) -> list[dict]:
    """Waits until every process is gone; returns those still running after `timeout`."""
    end = time.monotonic() + timeout
    alive = [p for p in idents if same_process(p)]
    while alive and time.monotonic() < end:
        time.sleep(0.05)
        alive = [p for p in alive if same_process(p)]
    return alive


def stop_recorded(ident: dict | None, looks_like, sig: int, what: str, wait_s: float) -> str | None:
    """Stops a process a killed roscope left (`roscope record recover`), by its recorded
    identity and only while its command line passes `looks_like`: `sig`, then SIGKILL after
    `wait_s`. Returns what was done, or None when it no longer runs."""
    if not same_process(ident, looks_like):
        return None
    if send(ident, sig) is not None:
        return None
    if wait_gone([ident], wait_s):
        send(ident, signal.SIGKILL)
        wait_gone([ident], 5.0)
        return f"killed {what} (PID {ident['pid']}): it did not stop on {signal.Signals(sig).name}"
    return f"stopped {what} (PID {ident['pid']})"


@contextlib.contextmanager
def deferred(which=(signal.SIGINT, signal.SIGTERM)):
    """Holds back SIGINT and SIGTERM for the block (stopping what roscope started must not
    be cut short by a second Ctrl-C), then raises KeyboardInterrupt if one came -- unless
    the block is already running because of one. Only the main thread receives signals:
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in which}
    handling = isinstance(sys.exc_info()[1], KeyboardInterrupt)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if got and not handling:
        raise KeyboardInterrupt(signal.Signals(got[0]).name)


@contextlib.contextmanager
def as_interrupt(which=(signal.SIGTERM, signal.SIGHUP)):
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the block, as Ctrl-C does, so that what
    it runs through `group` (a build, say) is stopped on the way out instead of being left
    behind by a roscope that the signal's default action ended. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    old = {s: signal.signal(s, interrupt) for s in which}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
