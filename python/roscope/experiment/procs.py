"""Processes roscope starts for an experiment: started in their own session (so a
terminal's Ctrl-C reaches only roscope, which stops them in order), found again
through /proc, stopped only by the PIDs roscope started (and their descendants,
each checked by its start time so that a reused PID is never signalled).
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from roscope.processes import identity
from roscope.processes.identity import CLK_TCK, Stat, all_pids


def proc_stat(pid: int) -> Stat | None:
    """/proc/PID/stat of `pid` (roscope.processes.identity's one reading of it)."""
    return identity.stat(pid)


def tree(root: int, start: int | None = None) -> list[Stat]:
    """The processes of `root`'s tree: its session and its descendants (zombies left out)."""
    stats = {}
    for pid in all_pids():
        st = proc_stat(pid)
        if st is not None and st.state != "Z":
            stats[pid] = st
    children: dict[int, list[int]] = {}
    for st in stats.values():
        children.setdefault(st.ppid, []).append(st.pid)
    found = {p for p, st in stats.items() if st.sid == root and (start is None or st.start_ticks >= start)}
    todo = [root, *found]
    while todo:
        p = todo.pop()
        for c in children.get(p, ()):
            if c not in found and (start is None or stats[c].start_ticks >= start):
                found.add(c)
                todo.append(c)
    if root in stats and (start is None or stats[root].start_ticks == start):
        found.add(root)
    return [stats[p] for p in sorted(found)]


def cpu_ticks_by_comm(comms) -> int:
    """CPU time (ticks) of every process whose name is one of `comms` (read only)."""
    total = 0
    for pid in all_pids():
        st = proc_stat(pid)
        if st is not None and st.comm in comms:
            total += st.cpu_ticks
    return total


def cpus_allowed(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def parse_cpu_list(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return sorted(out)


def cpu_list_text(cpus) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def pick_cpus(n: int) -> list[int]:
    """The last n CPUs roscope may run on (CPU 0 and the first ones stay for the rest)."""
    return sorted(os.sched_getaffinity(0))[-n:]


def cmdline(pid: int) -> str:
    """The command line of `pid` as one string ("" if it is gone)."""
    return " ".join(identity.cmdline(pid))


@dataclass
class Started:
    """A process group roscope started; `start` identifies the leader against PID reuse."""
    name: str
    popen: subprocess.Popen
    start: int | None
    log: Path | None = None
    seen: dict = field(default_factory=dict)   # pid -> start ticks of every member ever seen

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def members(self) -> list[Stat]:
        procs = tree(self.pid, self.start)
        for st in procs:
            self.seen.setdefault(st.pid, st.start_ticks)
        return procs


def start(name: str, argv: list[str], *, cwd=None, env=None, log: Path | None = None,
          stdout=None, stderr=None, cpus: list[int] | None = None) -> Started:
    """Starts argv in a new session (its own process group); output to `log` or the given files.
    With `cpus`, the affinity is set in the child before exec (inherited by all it starts)."""
    def pre():
        # default dispositions, whatever roscope inherited (a background job of a script ignores SIGINT)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if cpus:
            os.sched_setaffinity(0, cpus)
    fh = None
    if log is not None:
        fh = open(log, "ab")
        stdout = stderr = fh
    try:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                             start_new_session=True, preexec_fn=pre)
    finally:
        if fh is not None:
            fh.close()
    st = proc_stat(p.pid)
    return Started(name, p, st.start_ticks if st else None, log)


def _in_group(s: Started, pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st.pgid == s.pid and st.start_ticks >= (s.start or 0)


def _signal_members(s: Started, sig: int) -> None:
    if any(_in_group(s, p) for p in _remaining(s)):
        try:
            os.killpg(s.pid, sig)   # the group roscope created (its pgid is the leader's PID)
        except (ProcessLookupError, PermissionError):
            pass
    for pid, start_ticks in list(s.seen.items()):  # members that left the group (setsid), by PID + start time
        st = proc_stat(pid)
        if st is not None and st.start_ticks == start_ticks and st.pgid != s.pid and st.state != "Z":
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def _remaining(s: Started) -> list[int]:
    """Live (non-zombie) processes of the group, and members seen earlier that left it."""
    s.popen.poll()
    left = set()
    for pid in all_pids():
        st = proc_stat(pid)
        if st is None or st.state == "Z":
            continue
        same_group = st.pgid == s.pid and (s.start is None or st.start_ticks >= s.start)  # not a later reuse
        if same_group or s.seen.get(pid) == st.start_ticks:
            left.add(pid)
    return sorted(left)


def stop(s: Started, timeout: float = 5.0) -> dict:
    """SIGINT, then SIGTERM, then SIGKILL to what roscope started; returns what it took."""
    s.members()
    steps = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if not _remaining(s):
            break
        steps.append(sig.name)
        _signal_members(s, sig)
        deadline = time.monotonic() + (timeout if sig != signal.SIGKILL else 5.0)
        while time.monotonic() < deadline and _remaining(s):
            time.sleep(0.05)
    try:
        rc = s.popen.wait(timeout=1)
    except subprocess.TimeoutExpired:
        rc = None
    return {"signals": steps, "returncode": rc, "left": _remaining(s)}


class Monitor:
    """Samples a process tree in the background: per process its allowed CPUs, the CPUs it
    was seen running on, and its CPU time (the independent check of a cpuset, and the
    system's CPU time for the harness overhead)."""

    def __init__(self, target: Started, interval: float = 0.2):
        self.target, self.interval = target, interval
        self.procs: dict[int, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        for st in self.target.members():
            p = self.procs.setdefault(st.pid, {"pid": st.pid, "comm": st.comm, "cmdline": cmdline(st.pid)[:200],
                                               "allowed": set(), "ran_on": set(), "first_ticks": st.cpu_ticks,
                                               "cpu_ticks": st.cpu_ticks})
            allowed = cpus_allowed(st.pid)
            if allowed is not None:
                p["allowed"].add(allowed)
            p["ran_on"].add(st.processor)
            p["cpu_ticks"] = st.cpu_ticks

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self):
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()

    def cpu_seconds(self) -> float:
        """CPU time the tree used while monitored (of processes seen at least twice, and all of new ones)."""
        return sum(p["cpu_ticks"] - p["first_ticks"] for p in self.procs.values()) / CLK_TCK

    def report(self) -> list[dict]:
        return [{"pid": p["pid"], "comm": p["comm"], "cmdline": p["cmdline"],
                 "cpus_allowed_list": sorted(p["allowed"]), "ran_on": sorted(p["ran_on"])}
                for p in self.procs.values()]


def verify_cpuset(s: Started, cpus: list[int], monitor: Monitor | None = None) -> dict:
    """Cpus_allowed_list of every process of the system against `cpus` (now), and what the
    monitor saw over the trial (allowed lists and CPUs run on)."""
    want = sorted(cpus)
    now = []
    for st in s.members():
        text = cpus_allowed(st.pid)
        if text is None:
            continue
        now.append({"pid": st.pid, "comm": st.comm, "cpus_allowed_list": text,
                    "ok": parse_cpu_list(text) == want})
    bad = [p for p in now if not p["ok"]]
    out = {"cpus": cpu_list_text(want), "processes": now, "verified": bool(now) and not bad}
    if monitor is not None:
        seen = monitor.report()
        wrong = [p for p in seen if any(parse_cpu_list(a) != want for a in p["cpus_allowed_list"])
                 or any(c not in want for c in p["ran_on"])]
        out["monitor"] = {"processes": len(seen), "wrong": wrong}
        out["verified"] = out["verified"] and not wrong
    return out
