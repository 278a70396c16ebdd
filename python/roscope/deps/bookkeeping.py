"""Bookkeeping state, for `roscope deps`: state that every publishing callback of a
node reads and writes, and only through code they share (a message-id counter, a
log's line count),
and state the user names (`--ignore-state`). Both are listed in the dependency
document and left out of the edges: a counter that every publisher increments
links every callback to every other, which says nothing about where data flows.
An edge that also rests on other state keeps it (docs/deps.md, "Bookkeeping").
"""
from __future__ import annotations

from collections.abc import Iterable

from roscope.deps.paths import display

#: What may follow a state's name in the name of a part of it (`g_log.lines_`, `buf_[]`, `p->x`, `x(Base)`).
_PART = (".", "->", "[", "(")


def covers(names: Iterable[str], state: str) -> bool:
    """Whether `state` (a displayed path) is one of `names` or a part of one."""
    return any(state == n or (state.startswith(n) and state[len(n):].startswith(_PART)) for n in names)


def detect(cbs: list[dict], names: dict[str, str]) -> list[dict]:
    """The bookkeeping state of each node (`cbs`: the callbacks, with their node and
    events): state that each of the node's publishing callbacks (two or more) both
    reads and writes, and that is written nowhere but at source locations they all
    share (in a helper they all call: `++seq_` in `next_id()`). One entry per (node, state): state, node, callbacks (every callback
    of the node that touches it), publishing (how many publish), at (the shared
    locations of the writes)."""
    by_node: dict[str, list[dict]] = {}
    for cb in cbs:
        by_node.setdefault(cb["node"], []).append(cb)
    out = []
    for node, group in sorted(by_node.items()):
        publishing = [cb for cb in group if any(e[0] == "pub" for e in cb["_events"])]
        if len(publishing) < 2:
            continue
        touched = [_touched(cb, names) for cb in publishing]
        common = set.intersection(*(set(t) for t in touched))
        for state in sorted(common):
            shared_at = set.intersection(*(t[state] for t in touched))
            writes = {e[2] for cb in group for e in cb["_events"]
                      if e[0] == "w" and e[1] is not None and display(e[1], names) == state}
            if not shared_at or not writes <= shared_at:
                continue  # (written elsewhere too: a callback's own data, e.g. what a partial-synchronous node caches)
            users = [cb["id"] for cb in group if any(e[1] is not None and display(e[1], names) == state
                                                     for e in cb["_events"] if e[0] in ("r", "w"))]
            out.append({"state": state, "node": node, "callbacks": users, "publishing": len(publishing),
                        "at": sorted(shared_at)})
    return out


def _touched(cb: dict, names: dict[str, str]) -> dict[str, set[str]]:
    """State the callback both reads and writes: displayed path -> where it writes it."""
    reads, writes = set(), {}
    for kind, path, loc, *_ in cb["_events"]:
        if path is None or kind not in ("r", "w"):
            continue
        d = display(path, names)
        if kind == "r":
            reads.add(d)
        else:
            writes.setdefault(d, set()).add(loc)
    return {d: locs for d, locs in writes.items() if d in reads}
