"""What an experiment measures of the processes it started, through /proc: the CPUs
they may run on and did run on (the check of a cpuset), and their CPU time. They are
started, tracked and stopped by ``roscope.processes``.
"""
from __future__ import annotations

import os
import threading

from roscope.processes import identity
from roscope.processes.group import Started
from roscope.processes.identity import CLK_TCK, all_pids


def cpu_ticks_by_comm(comms) -> int:
    """CPU time (ticks) of every process whose name is one of `comms` (read only)."""
    total = 0
    for pid in all_pids():
        st = identity.stat(pid)
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
