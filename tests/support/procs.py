"""Processes as /proc shows them, for the tests that start systems (no roscope code: an oracle)."""
from __future__ import annotations

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
