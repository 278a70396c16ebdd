"""Processes as the kernel shows them in /proc, and their identity.

A process is identified by its PID, its exact start time (``starttime``, field 22
of ``/proc/PID/stat``: clock ticks since boot) and the boot id
(``/proc/sys/kernel/random/boot_id``). A PID alone is reused by the kernel once
its process is gone; the three together name one process for ever.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Clock ticks per second: the unit of the start and CPU times of /proc/PID/stat.
CLK_TCK = os.sysconf("SC_CLK_TCK")
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


@dataclass(frozen=True)
class Stat:
    """The fields of /proc/PID/stat that roscope uses."""
    pid: int
    comm: str
    state: str          # R, S, D, Z (zombie), X (dead), T, t, I...
    ppid: int
    pgid: int
    sid: int
    cpu_ticks: int      # utime + stime
    start_ticks: int    # starttime: clock ticks after boot
    processor: int      # the CPU it last ran on

    @property
    def gone(self) -> bool:
        """A zombie or a dead task: it no longer runs, only its exit status is left."""
        return self.state in ("Z", "X")


def stat(pid: int) -> Stat | None:
    """/proc/PID/stat parsed (the name may hold spaces and parentheses: the fields
    follow its last ')'), or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    close = data.rfind(")")
    rest = data[close + 2:].split()
    try:
        return Stat(pid=pid, comm=data[data.find("(") + 1:close], state=rest[0], ppid=int(rest[1]),
                    pgid=int(rest[2]), sid=int(rest[3]), cpu_ticks=int(rest[11]) + int(rest[12]),
                    start_ticks=int(rest[19]), processor=int(rest[36]))
    except (IndexError, ValueError):
        return None


def all_pids() -> list[int]:
    """The PIDs of /proc now (processes, not threads)."""
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def live_stats() -> dict[int, Stat]:
    """{pid: Stat} of every process that still runs (zombies left out)."""
    out = {}
    for pid in all_pids():
        st = stat(pid)
        if st is not None and not st.gone:
            out[pid] = st
    return out


def boot_id() -> str | None:
    try:
        return Path(BOOT_ID_PATH).read_text().strip()
    except OSError:
        return None


def cmdline(pid: int) -> list[str]:
    """argv of process `pid` ([] if it is gone or a kernel thread)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def comm(pid: int) -> str:
    st = stat(pid)
    return st.comm if st is not None else "?"


def printable(text: str) -> str:
    """A process name or command line as text that cannot drive a terminal: control
    characters written as \\xNN (a process chooses its own name)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text)


def identity(pid: int) -> dict | None:
    """What identifies process `pid` later: {"pid", "start_ticks", "boot_id"} (None if it is gone)."""
    st = stat(pid)
    if st is None:
        return None
    return {"pid": pid, "start_ticks": st.start_ticks, "boot_id": boot_id()}


def identity_of(st: Stat) -> dict:
    return {"pid": st.pid, "start_ticks": st.start_ticks, "boot_id": boot_id()}


def same_process(ident: dict | None, looks_like=None) -> bool:
    """The process `ident` describes still runs (not a zombie, not a reused pid), and its
    command line passes `looks_like` (a predicate over argv) when given."""
    if not isinstance(ident, dict) or not isinstance(ident.get("pid"), int):
        return False
    if ident.get("boot_id") != boot_id():
        return False
    st = stat(ident["pid"])
    if st is None or st.gone or st.start_ticks != ident.get("start_ticks"):
        return False
    return looks_like is None or bool(looks_like(cmdline(ident["pid"])))


def mismatch(ident) -> str | None:
    """Why `ident` does not name a process that runs now (None when it does): never a
    guess -- a recorded PID is the same process only with the exact start time, in the
    same boot."""
    if not isinstance(ident, dict) or not isinstance(ident.get("pid"), int) or isinstance(ident.get("pid"), bool):
        return "no PID recorded"
    pid, start = ident["pid"], ident.get("start_ticks")
    if pid <= 0:
        return f"PID {pid} is not a process"
    if not isinstance(start, int) or isinstance(start, bool) or start <= 0:
        return f"PID {pid}: no exact start time recorded (start_ticks {start!r})"
    now = boot_id()
    if ident.get("boot_id") != now:
        return f"PID {pid} was recorded in another boot (boot id {ident.get('boot_id')!r}, now {now})"
    st = stat(pid)
    if st is None:
        return f"PID {pid} has ended"
    if st.gone:
        return f"PID {pid} has ended (a zombie)"
    if st.start_ticks != start:
        return (f"PID {pid} is now another process ({st.comm}, started at tick {st.start_ticks}; "
                f"the recorded one started at tick {start})")
    return None
