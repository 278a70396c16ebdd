"""Finding the manifests that `roscope record` writes beside its traces."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence

NAME = "roscope-manifest.json"


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
