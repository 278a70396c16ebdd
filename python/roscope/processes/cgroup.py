"""cgroup v2 groups for the processes roscope starts: every process a started
command forks -- also a `setsid` daemon or a double fork re-parented to PID 1 --
stays in the command's cgroup, so none escapes being found and stopped.

A group's cgroup is ``<roscope's own cgroup>/roscope-<PID>-<START>/<NAME>-<N>``
on the cgroup2 mount (``/sys/fs/cgroup``, or ``/sys/fs/cgroup/unified`` in the
hybrid layout), where PID and START are the identity of the roscope process that
made it. The child joins its cgroup itself, before exec (it writes "0" to the
cgroup's ``cgroup.procs``), so even its first fork is inside. Only the processes
listed in a group's ``cgroup.procs`` are its members (zombies are not listed);
``cgroup.kill`` ends them all at once.

Whether this works depends on the machine: a cgroup2 mount, and write access to
roscope's own cgroup (root, or a cgroup delegated to the user by systemd).
``usable()`` probes it once; without it, roscope falls back to a child subreaper
(``roscope.processes.tracking``).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from roscope.files import write_control
from roscope.processes import signals
from roscope.processes.identity import stat

PREFIX = "roscope-"


def mount_point() -> Path | None:
    """Where cgroup2 is mounted (its root, as /proc/self/cgroup's paths are relative to it)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[:1] == ["cgroup2"] and len(fields) >= 5 and fields[3] == "/":
            return Path(fields[4])
    return None


def own_path(pid: int | str = "self") -> str | None:
    """The cgroup v2 path of a process (the "0::" line of /proc/PID/cgroup), e.g. "/user.slice/..."."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def directory_name(ident: dict) -> str:
    """The directory of the cgroups made by roscope process `ident`: it carries its identity."""
    return f"{PREFIX}{ident['pid']}-{ident['start_ticks']}"


def make_parent(ident: dict) -> Path | None:
    """Creates (or finds) the directory of roscope process `ident`'s cgroups under its own
    cgroup; None when there is no cgroup2 mount or it cannot be written."""
    mnt, mine = mount_point(), own_path()
    if mnt is None or mine is None:
        return None
    # A process in a cgroup with controllers enabled below it cannot have processes in child
    # cgroups; roscope's own cgroup is used as it is, and a refusal is found by probe().
    d = mnt / mine.lstrip("/") / directory_name(ident)
    try:
        d.mkdir(exist_ok=True)
    except OSError:
        return None
    return d


def remove_empty(d: Path) -> None:
    """Removes the empty cgroups under `d` (one level) and `d` itself when it is then empty."""
    try:
        kids = [k for k in d.iterdir() if k.is_dir()]
    except OSError:
        return
    for k in kids:
        if not members(k):
            remove(k)
    remove(d)


def collect_abandoned(base: Path) -> None:
    """Removes what roscope processes that no longer run left under `base`: their empty
    cgroups (processes still in one are left to `roscope record recover`)."""
    try:
        dirs = [d for d in base.iterdir() if d.is_dir() and d.name.startswith(PREFIX)]
    except OSError:
        return
    for d in dirs:
        pid, _, start = d.name[len(PREFIX):].partition("-")
        if not (pid.isdigit() and start.isdigit()):
            continue
        st = stat(int(pid))
        if st is None or st.gone or st.start_ticks != int(start):
            remove_empty(d)


def make(parent: Path, name: str) -> Path:
    """A new cgroup `name`-N under `parent` (N counts up until the name is free). `parent` is
    made again if it went away meanwhile (emptied and removed by another process)."""
    parent.mkdir(exist_ok=True)
    n = 1
    while True:
        d = parent / f"{name}-{n}"
        try:
            d.mkdir()
            return d
        except FileExistsError:
            n += 1


def join_self(cg: Path) -> None:
    """Moves the calling process into `cg` (used in the child, before exec)."""
    write_control(cg / "cgroup.procs", "0")


def probe(parent: Path) -> bool:
    """A child can join a cgroup under `parent`, and is then listed in it. Ctrl-C is held
    back meanwhile (`signals.deferred`), as for every process roscope starts: one that
    came while the fork ran Python's at-fork functions was lost there, printed as an
    ignored exception, and the probe's child was left to run."""
    with signals.deferred():
        cg = make(parent, "probe")
        try:
            p = subprocess.Popen(["sleep", "5"], preexec_fn=lambda: join_self(cg),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            remove(cg)
            return False
        try:
            return p.pid in members(cg)
        finally:
            p.kill()
            p.wait()
            remove(cg)


def members(cg: Path) -> list[int]:
    """The PIDs in cgroup `cg` now (its processes that have not exited; no zombies)."""
    try:
        return sorted(int(x) for x in (cg / "cgroup.procs").read_text().split())
    except (OSError, ValueError):
        return []


def holds(cg: Path, pid: int) -> bool:
    """Process `pid` is in cgroup `cg` (the kernel's /proc/PID/cgroup says so)."""
    mnt = mount_point()
    path = own_path(pid)
    return mnt is not None and path is not None and mnt / path.lstrip("/") == cg


def kill_all(cg: Path) -> bool:
    """SIGKILL to every process of the cgroup at once (cgroup.kill, Linux 5.14); False if absent."""
    try:
        write_control(cg / "cgroup.kill", "1")
        return True
    except OSError:
        return False


def remove(cg: Path) -> bool:
    """Removes an empty cgroup (False if it still holds processes or is gone)."""
    try:
        os.rmdir(cg)
        return True
    except OSError:
        return False


def parent_of_recording(cg: str | None, owner: dict | None) -> tuple[Path | None, str | None]:
    """The cgroup a manifest names, if it is one roscope process `owner` made: (path, None),
    or (None, why not). A manifest cannot send roscope into another cgroup."""
    if not cg:
        return None, "no cgroup recorded"
    path = Path(cg)
    mnt = mount_point()
    if mnt is None:
        return None, "no cgroup2 mount here"
    try:
        rel = path.relative_to(mnt)
    except ValueError:
        return None, f"{cg} is not on the cgroup2 mount {mnt}"
    if ".." in rel.parts or not isinstance(owner, dict) or path.parent.name != directory_name(owner):
        return None, f"{cg} is not a cgroup made by the recording's roscope process"
    if not path.is_dir():
        return None, f"its cgroup {cg} no longer exists"
    return path, None

