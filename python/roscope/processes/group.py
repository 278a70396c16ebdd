"""Starting a command, finding every process it made, and stopping them all.

``start`` runs a command in a new session (its own process group, so a terminal's
Ctrl-C reaches only roscope) with the default signal dispositions, tracked by
``roscope.processes.tracking`` (its own cgroup v2, or the subreaper's view).
``stop`` sends SIGINT, then SIGTERM, then SIGKILL to every member still running,
each by identity (``roscope.processes.signals``), and returns what it stopped.
``stop_everything`` stops whatever is left (the last started first), then the strays.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from roscope.files import log_file
from roscope.processes import cgroup, signals
from roscope.processes.identity import Stat, boot_id, cmdline, identity, identity_of, live_stats, stat
from roscope.processes.tracking import tracking

#: How long SIGKILL is given to take effect before a group is reported as not stopped (s).
KILL_WAIT_S = 5.0


@dataclass(eq=False)   # a group is itself: compared by identity
class Started:
    """A command roscope started, and every process it has made since."""
    name: str
    popen: subprocess.Popen
    ident: dict | None                   # the command's own process: pid, exact start time, boot id
    log: Path | None = None
    cgroup: Path | None = None           # its cgroup v2 (cgroup tracking)
    seen: dict = field(default_factory=dict)    # pid -> start ticks of every member ever seen
    groups: set = field(default_factory=set)    # sessions and process groups of its members
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def start(self) -> int | None:
        return self.ident["start_ticks"] if self.ident else None

    def alive(self) -> bool:
        """The command itself still runs (its descendants may outlive it: see members)."""
        return self.popen.poll() is None

    def members(self) -> list[Stat]:
        """Every process of the group that still runs (zombies left out), the command included."""
        if self.cgroup is not None:
            found = [st for st in map(stat, cgroup.members(self.cgroup)) if st is not None and not st.gone]
        else:
            found = self._members_by_session()
        with self.lock:
            for st in found:
                self.seen.setdefault(st.pid, st.start_ticks)
                self.groups.update((st.sid, st.pgid))
        return sorted(found, key=lambda st: st.pid)

    def _members_by_session(self) -> list[Stat]:
        stats = live_stats()
        me = stat(os.getpid())
        mine = {me.sid, me.pgid} if me else set()
        start = self.start or 0
        with self.lock:
            seen, groups = dict(self.seen), (self.groups | {self.pid}) - mine
        found = {p for p, st in stats.items()
                 if (st.sid in groups or st.pgid in groups) and st.start_ticks >= start}
        found |= {p for p, t in seen.items() if p in stats and stats[p].start_ticks == t}
        found |= {st.pid for st in tracking().adopted(stats) if st.sid in groups or st.pgid in groups}
        if self.pid in stats and stats[self.pid].start_ticks == start:
            found.add(self.pid)
        children: dict[int, list[int]] = {}
        for st in stats.values():
            children.setdefault(st.ppid, []).append(st.pid)
        todo = list(found)
        while todo:
            for c in children.get(todo.pop(), ()):
                if c not in found and stats[c].start_ticks >= start:
                    found.add(c)
                    todo.append(c)
        return [stats[p] for p in found]

    def holds(self, pid: int) -> bool:
        """Process `pid` (already checked by identity) is still one of this group's."""
        return self.cgroup is None or cgroup.holds(self.cgroup, pid)


def start(name: str, argv: list[str], *, cwd=None, env=None, log: Path | None = None,
          stdin=subprocess.DEVNULL, stdout=None, stderr=None, cpus: list[int] | None = None) -> Started:
    """Starts argv in a new session (its own process group), tracked; output to `log` or the
    given files (stdin: none unless given). With `cpus`, the affinity is set in the child
    before exec (inherited by all it starts). A program that cannot be run raises OSError."""
    t = tracking()
    cg = cgroup.make(t.parent, name) if t.mode == "cgroup" else None

    def pre():
        if cg is not None:
            cgroup.join_self(cg)   # before exec: every process it forks is in the cgroup
        # default dispositions, whatever roscope inherited (a background job of a script ignores SIGINT)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if cpus:
            os.sched_setaffinity(0, cpus)
    fh = None
    if log is not None:
        fh = log_file(log)
        stdout = stderr = fh
    try:
        # Registered before Ctrl-C can cut in: whatever happens next, stop_everything finds it.
        with signals.deferred(), t.lock:
            p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                                 start_new_session=True, preexec_fn=pre)
            t.leaders.add(p.pid)
            s = Started(name, p, identity(p.pid), log, cg)
            t.started.append(s)
    except BaseException:
        if cg is not None and not cgroup.members(cg):
            cgroup.remove(cg)
        raise
    finally:
        if fh is not None:
            fh.close()
    return s


def run(name: str, argv: list[str], timeout: float, **kw) -> int | None:
    """Runs a command to its end like ``start`` (tracked, output discarded unless given), for
    at most `timeout` seconds; then whatever it left running is stopped. Returns its exit
    status, None if it had to be stopped (or could not be run)."""
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    try:
        s = start(name, argv, **kw)
    except OSError:
        return None
    try:
        rc = s.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = None
    stop(s, 1.0)
    return rc


@dataclass
class Output:
    """What a short command printed, and how it ended (``returncode`` None: stopped at its
    time limit, or could not be waited for)."""
    returncode: int | None
    stdout: str | bytes
    stderr: str | bytes


def output(name: str, argv: list[str], timeout: float | None = None, *, input: str | bytes | None = None,
           text: bool = True, cwd=None, env=None) -> Output:
    """Runs a short command to its end like ``start`` (tracked: what it forks is stopped
    with it), its output captured; after `timeout` seconds it and all it made are stopped.
    With `text`, input and output are str (undecodable bytes replaced). A program that
    cannot be run raises OSError, as ``subprocess.run`` does."""
    s = start(name, argv, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    data = input.encode() if isinstance(input, str) else input
    rc = None
    try:
        try:
            out, err = s.popen.communicate(input=data, timeout=timeout)
            rc = s.popen.returncode
        except subprocess.TimeoutExpired:
            pass
    finally:
        stop(s, 1.0)   # also on Ctrl-C: nothing it started outlives it
    if rc is None:
        out, err = s.popen.communicate()   # what it wrote before it was stopped
    if text:
        return Output(rc, out.decode(errors="replace"), err.decode(errors="replace"))
    return Output(rc, out, err)


def _describe(st: Stat, group: str) -> dict:
    return {"group": group, "pid": st.pid, "comm": st.comm, "cmdline": " ".join(cmdline(st.pid))[:200],
            "start_ticks": st.start_ticks, "signals": []}


def _wait_empty(s: Started, seconds: float) -> list[Stat]:
    end = time.monotonic() + seconds
    while True:
        s.popen.poll()
        tracking().reap()
        left = s.members()
        if not left or time.monotonic() >= end:
            return left
        time.sleep(0.05)


def stop(s: Started, timeout: float = 5.0) -> dict:
    """SIGINT, then SIGTERM, then SIGKILL (`timeout` apart) to every process of the group that
    still runs, each by identity. Returns {"signals": the signals it took, "returncode" of
    the command, "stopped": the processes signalled, "left": PIDs still running}."""
    steps: list[str] = []
    stopped: dict[int, dict] = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        live = _wait_empty(s, 0)
        if not live:
            break
        steps.append(sig.name)
        for st in live:
            ident = {"pid": st.pid, "start_ticks": st.start_ticks, "boot_id": boot_id()}
            if signals.send(ident, sig, also=s.holds) is None:
                stopped.setdefault(st.pid, _describe(st, s.name))["signals"].append(sig.name)
        if sig == signal.SIGKILL and s.cgroup is not None:
            cgroup.kill_all(s.cgroup)   # also what forked meanwhile
        _wait_empty(s, timeout if sig != signal.SIGKILL else KILL_WAIT_S)
    try:
        rc = s.popen.wait(timeout=1)
    except subprocess.TimeoutExpired:
        rc = None
    left = [st.pid for st in _wait_empty(s, 0)]
    t = tracking()
    with t.lock:
        if rc is not None:
            t.leaders.discard(s.pid)
        if not left and s in t.started:
            t.started.remove(s)
    if s.cgroup is not None and not left:
        cgroup.remove(s.cgroup)
    return {"signals": steps, "returncode": rc, "stopped": list(stopped.values()), "left": left}


def signal_all(s: Started, sig: int) -> int:
    """Sends `sig` to every process of the group now (each by identity); returns how many got it."""
    n = 0
    for st in s.members():
        if signals.send(identity_of(st), sig, also=s.holds) is None:
            n += 1
    return n


def strays() -> list[Stat]:
    """Processes re-parented to roscope that no group claims (subreaper tracking only)."""
    return tracking().adopted()


def stop_strays(timeout: float = 2.0) -> dict:
    """Stops the strays (SIGINT, SIGTERM, SIGKILL), each by identity."""
    steps: list[str] = []
    stopped: dict[int, dict] = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        tracking().reap()
        live = strays()
        if not live:
            break
        steps.append(sig.name)
        for st in live:
            if signals.send(identity_of(st), sig) is None:
                stopped.setdefault(st.pid, _describe(st, "stray"))["signals"].append(sig.name)
        end = time.monotonic() + (timeout if sig != signal.SIGKILL else KILL_WAIT_S)
        while strays() and time.monotonic() < end:
            time.sleep(0.05)
            tracking().reap()
    return {"signals": steps, "stopped": list(stopped.values()), "left": [st.pid for st in strays()]}


def stop_everything(timeout: float = 2.0) -> list[dict]:
    """Stops every group started and not yet stopped (the last started first), then the
    strays; one record per group that had anything to stop: {"name", "signals",
    "returncode", "stopped", "left"}."""
    t = tracking()
    with t.lock:
        todo = list(reversed(t.started))
    out = []
    for s in todo:
        rec = stop(s, timeout)
        if rec["signals"]:
            out.append({"name": s.name, **rec})
    rest = stop_strays()
    if rest["signals"]:
        out.append({"name": "stray", **rest})
    return out
