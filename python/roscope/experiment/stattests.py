"""Statistics of experiment results: summaries, the bootstrap interval of a difference
of means, and the Mann-Whitney U test (exact for small samples without ties, normal
approximation with tie and continuity corrections otherwise)."""
from __future__ import annotations

import math
from functools import cache

import numpy as np

#: Exact U distribution up to this many values per sample (no ties); normal approximation above.
EXACT_MAX = 20


def describe(values) -> dict:
    """count, mean, std (sample), min, p25, p50, p75, p90, p99, max (linear-interpolated percentiles)."""
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], dtype=float)
    out = {"count": int(v.size)}
    if v.size == 0:
        return out
    out["mean"] = float(v.mean())
    out["std"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
    out["min"] = float(v.min())
    for q in (25, 50, 75, 90, 99):
        out[f"p{q}"] = float(np.percentile(v, q))
    out["max"] = float(v.max())
    return out


#: Above this many draws per sample (resamples x values), the bootstrap draws its resamples
#: in chunks of rows, so that memory stays bounded (a few tens of MB) whatever the sample's size.
BOOTSTRAP_CHUNK_CELLS = 4_000_000


def _resample_means(rng, x: np.ndarray, resamples: int) -> np.ndarray:
    """The means of `resamples` resamples of `x` (with replacement): in one draw when it is
    small (experiment trials), else in chunks of rows (the same distribution)."""
    if resamples * x.size <= BOOTSTRAP_CHUNK_CELLS:
        return x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    rows = max(1, BOOTSTRAP_CHUNK_CELLS // x.size)
    out = np.empty(resamples)
    for i in range(0, resamples, rows):
        k = min(rows, resamples - i)
        out[i:i + k] = x[rng.integers(0, x.size, size=(k, x.size))].mean(axis=1)
    return out


def bootstrap_diff_ci(a, b, *, level: float = 0.95, resamples: int = 10000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(b) - mean(a), resampling each sample with replacement."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("bootstrap needs two non-empty samples")
    rng = np.random.default_rng(seed)
    ma = _resample_means(rng, a, resamples)
    mb = _resample_means(rng, b, resamples)
    d = mb - ma
    alpha = (1 - level) / 2
    return float(np.quantile(d, alpha)), float(np.quantile(d, 1 - alpha))


def _ranks(values: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Mid-ranks (1-based) and the sizes of the groups of ties."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size, dtype=float)
    ties = []
    i = 0
    sv = values[order]
    while i < sv.size:
        j = i
        while j + 1 < sv.size and sv[j + 1] == sv[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@cache
def _u_counts(n1: int, n2: int) -> tuple:
    """Number of arrangements giving each U = 0..n1*n2 (no ties): c(n1, n2, u) = c(n1-1, n2, u-n2) + c(n1, n2-1, u)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    a = _u_counts(n1 - 1, n2)
    b = _u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(a):
        out[u + n2] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def mann_whitney_u(a, b) -> dict:
    """Two-sided Mann-Whitney U test of a against b. U1 counts the pairs with a > b (ties 1/2).
    Returns u (U1), p, method ("exact" or "normal")."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("the U test needs two non-empty samples")
    ranks, ties = _ranks(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    mu = n1 * n2 / 2
    if not ties and n1 <= EXACT_MAX and n2 <= EXACT_MAX:
        counts = _u_counts(n1, n2)
        total = sum(counts)
        k = int(round(min(u1, n1 * n2 - u1)))
        p = min(1.0, 2 * sum(counts[:k + 1]) / total)
        return {"u": u1, "p": p, "method": "exact"}
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties) / (n * (n - 1))
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:   # every value equal
        return {"u": u1, "p": 1.0, "method": "normal"}
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    p = min(1.0, 2 * _normal_sf(max(z, 0.0)))
    return {"u": u1, "p": p, "method": "normal"}
