"""A process that reads damaged traces with roscope's core, case after case.

    python -m tests.faults.worker BASES.pickle      (from the repository root)

reads one JSON request per line on stdin ({"case": ..., "root": working copy
of the case's base}), reads the damaged trace in-process with
``roscope._core.Trace`` (no CLI), checks what it read against babeltrace2's
reading of the undamaged base (faults.bases) and writes one JSON result per
line on stdout. The runner kills and restarts it on a hang or a crash.
"""
from __future__ import annotations

import collections
import json
import os
import pickle
import re
import sys
import tempfile
import traceback

from tests.faults.bases import Base
from tests.faults.mutations import Case
from tests.support import oracle

AT_BYTE = re.compile(r"^(?P<file>.+?): at byte (?P<off>[0-9]+): ")
#: The start of a dump line up to its stream: ts, and (trace, stream) as text.
KEY = re.compile(rb'^\{"ts":([0-9]+),"name":"(?:[^"\\]|\\.)*","trace":("(?:[^"\\]|\\.)*"),"stream":(\{[^}]*\})')


def read(root: str) -> tuple[str, str, list[bytes], list[str]]:
    """(status, message, dump lines, warnings) of reading `root` like `roscope dump`."""
    from roscope import _core

    try:
        t = _core.Trace([root])
        with tempfile.TemporaryFile() as f:
            t.dump(f.fileno())
            f.seek(0)
            lines = f.read().splitlines()
        return "ok", "", lines, list(t.warnings())
    except _core.TraceError as exc:
        return "error", str(exc), [], []
    except BaseException as exc:  # a panic (pyo3's PanicException is a BaseException) or a bug
        kind = "panic" if type(exc).__name__ == "PanicException" else "bug"
        return kind, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:], [], []


class Expected:
    """roscope's dump lines of an undamaged base, checked once against
    babeltrace2's events file by file (so that comparing damaged readings
    with them line by line is comparing with babeltrace2), grouped by file."""

    def __init__(self, base: Base):
        status, message, lines, warnings = read(base.src)
        if status != "ok" or warnings:
            raise RuntimeError(f"{base.src}: the undamaged base does not read cleanly: {message} {warnings[:3]}")
        by_key: dict[tuple, list[bytes]] = {}
        raw_key: dict[tuple, bytes] = {}
        for line in lines:
            ev = json.loads(line)
            key = oracle.stream_key(ev)
            by_key.setdefault(key, []).append(line)
            raw_key[key] = KEY.match(line).group(2, 3)
        self.lines: dict[str, list[bytes]] = {}
        self.file_of: dict[tuple, str] = {}
        for f in base.files.values():
            got = by_key.get(f.key, [])
            exp = [e for pk in f.events for e in pk]
            oracle.compare(exp, [json.loads(x) for x in got], what=f"roscope on the undamaged {f.rel}")
            self.lines[f.rel] = got
            if got:
                self.file_of[raw_key[f.key]] = f.rel
        self.n = len(lines)
        self.all = collections.Counter(lines)


def _subsequence(exp: list[bytes], act: list[bytes]) -> int:
    """How many of `exp` appear in `act`, in order (greedy)."""
    i = 0
    for a in act:
        if i < len(exp) and a == exp[i]:
            i += 1
    return i


def _group(exp: Expected, lines: list[bytes]) -> tuple[dict[str, list[bytes]], bool]:
    """Lines by file (unknown streams under "?"), and whether each stream is in time order."""
    groups: dict[str, list[bytes]] = {}
    last: dict[str, int] = {}
    in_order = True
    for line in lines:
        m = KEY.match(line)
        f = exp.file_of.get(m.group(2, 3), "?") if m else "?"
        groups.setdefault(f, []).append(line)
        ts = int(m.group(1)) if m else 0
        in_order &= ts >= last.get(f, 0)
        last[f] = ts
    return groups, in_order


def check_stream(base: Base, exp: Expected, case: Case, root: str, lines: list[bytes], warnings: list[str]) -> dict:
    f = base.files[case.file]
    groups, in_order = _group(exp, lines)
    k = f.packet_at(case.lo)
    k2 = f.packet_at(max(case.lo, case.hi - 1))
    act = groups.get(f.rel, [])
    mine = exp.lines[f.rel]
    nb = sum(len(pk) for pk in f.events[:k])
    after = mine[sum(len(pk) for pk in f.events[:k2 + 1]):] if case.kind != "truncate" else []
    # Every event of the undamaged files, unchanged and in order. (Events of
    # the damaged packet may join another file's stream when its cpu_id is
    # damaged into that file's: streams are told apart by their context.)
    others_ok = all(_subsequence(exp.lines[rel], groups.get(rel, [])) == len(exp.lines[rel]) for rel in base.files if rel != f.rel)
    lo = f.packets[k]["offset"]
    hi = max(f.packet_end(k2), case.hi)
    path = os.path.join(root, case.file)
    named = [w for w in warnings if w.startswith(path + ": ")]
    warned_at = any((m := AT_BYTE.match(w)) and m["file"] == path and lo <= int(m["off"]) <= hi for w in named)
    return {
        "before": nb,
        "before_kept": act[:nb] == mine[:nb],
        "after": len(after),
        "recovered": _subsequence(after, act[nb:]),
        "others_ok": others_ok,
        "in_order": in_order,
        "same": act == mine and others_ok and "?" not in groups,
        # Events lost (a damaged cpu_id moves the packet's events to an
        # unknown stream: they are not lost).
        "lost": len(act) + len(groups.get("?", [])) < len(mine),
        "boundary": case.kind == "truncate" and any(p["offset"] == case.lo for p in f.packets),
        "warned_at": warned_at,
        "named": bool(named),
        "range": [lo, hi],
    }


def check_metadata(base: Base, exp: Expected, case: Case, root: str, status: str, message: str, lines: list[bytes],
                   warnings: list[str]) -> dict:
    path = os.path.join(root, case.file)
    said = [m for m in [message, *warnings] if path in m]
    located = any(re.search(re.escape(path) + r"(:[0-9]+:|: at byte [0-9]+)", m) for m in said)
    groups, in_order = _group(exp, lines)
    same = status == "ok" and len(lines) == exp.n and all(groups.get(rel, []) == exp.lines[rel] for rel in base.files)
    # Metadata that still parses but describes the events wrongly shows where
    # the events stop decoding: warnings naming a stream file and an offset.
    reported = bool(said) or any(AT_BYTE.match(w) for w in warnings)
    return {"named": bool(said), "reported": reported, "warned_at": located, "same": same, "in_order": in_order,
            "lost": len(lines) < exp.n}


def run_case(bases: dict[str, Base], expected: dict[str, Expected], req: dict) -> dict:
    case = Case.from_json(req["case"])
    root = req["root"]
    base = bases[case.base]
    if case.base not in expected:
        expected[case.base] = Expected(base)
    exp = expected[case.base]
    status, message, lines, warnings = read(root)
    res = {"id": case.id, "status": status, "message": message[:3000], "n": len(lines), "warnings": warnings[:20],
           "genuine": sum((collections.Counter(lines) & exp.all).values())}
    if status == "ok" and not case.metadata:
        res.update(check_stream(base, exp, case, root, lines, warnings))
    elif case.metadata:
        res.update(check_metadata(base, exp, case, root, status, message, lines, warnings))
    return res


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        bases = pickle.load(f)
    expected: dict[str, Expected] = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            res = run_case(bases, expected, req)
        except Exception:  # the checks themselves failed: report, do not die
            res = {"id": req["case"]["id"], "status": "harness", "message": traceback.format_exc()[-3000:], "n": 0}
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
