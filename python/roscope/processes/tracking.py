"""How roscope keeps track of every process it starts, descendants included.

Two ways, chosen once per roscope process by ``tracking()``:

- ``cgroup``: each started command gets its own cgroup v2 (``roscope.processes.cgroup``);
  its members are what the kernel lists in it. Nothing escapes: not a process group
  change, not ``setsid``, not a double fork re-parented to PID 1.
- ``subreaper``: without a writable cgroup2, roscope makes itself a child subreaper
  (``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant whose parent exits is re-parented to
  roscope, not to PID 1, so it stays in sight. A group's members are then its session
  and process groups, their descendants, the members seen earlier (by PID and exact
  start time), and the processes re-parented to roscope from its sessions; those
  re-parented from elsewhere are *strays*, stopped after every group. roscope reaps
  them when they end.

``ROSCOPE_PROCESS_TRACKING=cgroup|subreaper`` forces one (``cgroup`` fails when it
cannot work); by default cgroup v2 when it works here, else the subreaper.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import subprocess
import threading
from pathlib import Path

from roscope.errors import UserError
from roscope.processes import cgroup, signals
from roscope.processes.identity import Stat, identity, live_stats

PR_SET_CHILD_SUBREAPER = 36
ENV = "ROSCOPE_PROCESS_TRACKING"


class Tracking:
    """The way chosen, and what roscope knows of its own children."""

    def __init__(self, mode: str, parent: Path | None, why: str):
        self.mode, self.parent, self.why = mode, parent, why
        self.leaders: set[int] = set()       # PIDs of the commands started (roscope's own children)
        self.detached: dict[int, int] = {}   # daemons started to outlive roscope: pid -> start ticks
        self.started: list = []              # the groups started and not yet stopped (Started)
        self.lock = threading.Lock()

    def describe(self) -> str:
        if self.mode == "cgroup":
            return f"cgroup v2 per started command (under {self.parent})"
        return f"child subreaper + sessions and process groups ({self.why})"

    # -- subreaper mode: processes re-parented to roscope
    def adopted(self, stats: dict[int, Stat] | None = None) -> list[Stat]:
        """Processes re-parented to roscope: its children that it did not start itself."""
        if self.mode != "subreaper":
            return []
        me = os.getpid()
        stats = live_stats() if stats is None else stats
        with self.lock:
            leaders, detached = set(self.leaders), dict(self.detached)
        return [st for st in stats.values()
                if st.ppid == me and st.pid not in leaders and detached.get(st.pid) != st.start_ticks]

    def reap(self) -> None:
        """Collects the exit status of re-parented processes that ended (never of a command
        roscope started: its Popen does that). Main thread only."""
        if self.mode != "subreaper" or threading.current_thread() is not threading.main_thread():
            return
        me = os.getpid()
        for pid in _zombie_children(me):
            with self.lock:
                ours = pid in self.leaders
            if not ours:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def run_daemon(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        """Runs a command that leaves a daemon behind on purpose (``lttng-sessiond
        --daemonize``): the daemon is never taken for a stray."""
        before = {st.pid for st in self.adopted()}
        with signals.deferred():  # Ctrl-C in the fork is not lost in Python's at-fork functions
            p = subprocess.run(argv, **kw)
        if self.mode == "subreaper":
            with self.lock:
                for st in self.adopted():
                    if st.pid not in before:
                        self.detached[st.pid] = st.start_ticks
        return p


def _zombie_children(me: int) -> list[int]:
    out = []
    try:
        kids = Path(f"/proc/{me}/task/{me}/children").read_text().split()
    except OSError:
        kids = []
    for k in kids:
        try:
            text = Path(f"/proc/{k}/stat").read_text()
        except OSError:
            continue
        if text[text.rfind(")") + 2:].split()[:1] == ["Z"]:
            out.append(int(k))
    return out


_TRACKING: Tracking | None = None


def _choose() -> Tracking:
    want = os.environ.get(ENV, "").strip().lower()
    if want not in ("", "auto", "cgroup", "subreaper"):
        raise UserError(f"${ENV}={want!r}: give cgroup, subreaper or auto")
    why = f"${ENV}=subreaper" if want == "subreaper" else ""
    if want != "subreaper":
        me = identity(os.getpid())
        parent = cgroup.make_parent(me) if me else None
        if parent is not None:
            cgroup.collect_abandoned(parent.parent)
        if parent is not None and cgroup.probe(parent):
            atexit.register(cgroup.remove, parent)
            return Tracking("cgroup", parent, "")
        if parent is not None:
            cgroup.remove(parent)
        why = ("no cgroup2 mount" if cgroup.mount_point() is None
               else f"roscope's cgroup {cgroup.own_path()} cannot be written")
        if want == "cgroup":
            raise UserError(f"${ENV}=cgroup, but cgroup v2 cannot be used here: {why}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise UserError(f"cannot track the processes roscope starts: no cgroup v2 ({why}) and "
                        f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(err)}")
    return Tracking("subreaper", None, why)


def tracking() -> Tracking:
    """The way this roscope process tracks what it starts (chosen at the first call)."""
    global _TRACKING
    if _TRACKING is None:
        _TRACKING = _choose()
    return _TRACKING
