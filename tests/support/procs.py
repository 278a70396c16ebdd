"""Processes as /proc shows them, and LTTng's sessions as `lttng list` shows them, for the tests
that start systems (no roscope code: an oracle)."""
from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path


def descendants(pid: int) -> set[int]:
    """The live descendants of `pid` (from /proc's parent links)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = {c for c, pp in parent.items() if pp == p} - out
        out |= kids
        todo += kids
    return out


def lttng_sessions() -> dict[str, str]:
    """{name: output path} as LTTng itself lists them (the oracle; not roscope's parser)."""
    p = subprocess.run(["lttng", "--mi", "xml", "list"], capture_output=True, text=True)
    return dict(re.findall(r"<session><name>([^<]*)</name><path>([^<]*)</path>", p.stdout))


def processes_mentioning(text: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `text` (from /proc)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in argv and state != "Z":
            found.append(int(d.name))
    return found


def start_ticks(pid: int) -> int | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if f[0] == "Z" else int(f[19])


def children_of(pid: int) -> list[int]:
    kids = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(x) for x in (t / "children").read_text().split()]
    return kids


def wait_for(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.1)


def interrupt(p: subprocess.Popen, timeout: float = 60) -> None:
    """Ctrl-C to `p` if it still runs (a roscope record stops its session and its system), SIGKILL
    after `timeout` s; waits for it."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def marked(mark: str) -> list[int]:
    """Every process of the machine (zombies aside) whose environment carries the marker."""
    needle = f"ROSCOPE_TEST_MARK={mark}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in env.split(b"\0") and state != "Z":
            found.append(int(d.name))
    return found
