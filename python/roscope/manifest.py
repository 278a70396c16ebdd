"""Finding what roscope writes beside traces: the manifests of `roscope record` (and what
they say: `record_ids`, `attached`), a kernel recording's perf.data (`find_perf`), and the
marker of a dataset directory (`is_dataset`). Cheap to import (the CLI's start-up: `roscope
stats` of a short recording reads these without the storage modules)."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence

NAME = "roscope-manifest.json"
#: The file that makes a directory a dataset (`roscope load --dataset`, roscope.dataset).
DATASET_MARKER = "roscope-dataset.json"


def find(paths: Sequence[str], below: bool = False) -> Iterator[tuple[str, dict | Exception]]:
    """(file, manifest) for the manifest at or up to three levels above each
    path, and with `below` also those inside it; an unreadable manifest is
    given as the exception instead. Each file once."""
    seen = set()
    for p in paths:
        d = os.path.abspath(p)
        found = []
        if below:
            found += [os.path.join(r, f) for r, _dirs, files in os.walk(d) for f in files if f == NAME]
        for _ in range(4):
            m = os.path.join(d, NAME)
            if os.path.isfile(m):
                found.append(m)
                break
            d = os.path.dirname(d)
        for m in found:
            if m in seen:
                continue
            seen.add(m)
            try:
                with open(m) as f:
                    yield m, json.load(f)
            except (OSError, ValueError) as exc:
                yield m, exc


def record_ids(paths: Sequence[str]) -> list[str]:
    """The recording names of `roscope record` manifests at, above or inside the
    given paths (a trace directory, or a folder of several)."""
    ids = []
    for _m, man in find(paths, below=True):
        rid = man.get("record_id") if isinstance(man, dict) else None
        if rid and rid not in ids:
            ids.append(rid)
    return ids


def attached(paths: Sequence[str]) -> bool:
    """Whether a `roscope record --attach` manifest is at, above or inside the given paths:
    the processes that were running when its session started belong to the recording
    (their state dumps name them; docs/ros1-tracer.md, "Attaching")."""
    return any(isinstance(man, dict) and man.get("attach") is True for _m, man in find(paths, below=True))


def find_perf(inputs: Sequence[str], trace_paths: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(perf.data, [trace directories it belongs to]) for each ``perf/perf.data``
    (as `roscope record --kernel` writes it) or ``perf.data`` found in an input
    directory, beside it, or in a directory above one of the traces up to the input
    (roscope.kernel reads them)."""
    roots = [os.path.abspath(p) for p in inputs]
    found: dict[str, list[str]] = {}
    for tp in trace_paths:
        d = os.path.abspath(tp)
        root = next((r for r in roots if d == r or d.startswith(r.rstrip(os.sep) + os.sep)), None)
        stop = os.path.dirname(root) if root else d
        while True:
            for cand in (os.path.join(d, "perf", "perf.data"), os.path.join(d, "perf.data")):
                if os.path.isfile(cand):
                    found.setdefault(cand, []).append(tp)
                    break
            else:
                if d == stop or os.path.dirname(d) == d:
                    break
                d = os.path.dirname(d)
                continue
            break
    return sorted(found.items())


def is_dataset(path) -> bool:
    """Whether `path` is a directory holding a roscope dataset's marker file."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, DATASET_MARKER))
