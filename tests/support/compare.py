"""Comparing values two runs give, as the tests do."""
from __future__ import annotations

import pytest


def floats_only_differ(a, b) -> bool:
    """Whether `a` and `b` (JSON-like: dicts, lists, tuples) have the same shape and
    equal values of the same types, floats within 1e-12 of each other: what two runs
    give when DuckDB sums the same rows in another order (std to the last digits)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(floats_only_differ(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(floats_only_differ(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=0)
    return type(a) is type(b) and a == b
