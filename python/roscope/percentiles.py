"""The standard statistic set as SQL, and exact percentiles of groups of any size.

Every verb describes a set of durations with the same statistics and names
(docs/analyses.md):

    count, min, mean, std, p50, p90, p99, max      (+ p25, p75 where quartiles are shown)

- ``min``/``max``: smallest and largest value; ``mean``: arithmetic mean;
- ``std``: sample standard deviation (n - 1 in the denominator; null for one value);
- ``pXX``: the XX-th percentile, interpolated linearly between the two nearest
  ranks (DuckDB ``quantile_cont``, numpy's default ``linear`` method).

Durations are nanoseconds, so the JSON keys are ``<prefix><name>_ns``
(``min_ns``, ``lat_p99_ns``); ``count`` has no unit.

API:
    NAMES, QUARTILE_NAMES       the statistic names, in display order
    names(quartiles=False)      NAMES or QUARTILE_NAMES
    keys(prefix="", quartiles=False)  the JSON keys: ["min_ns", "mean_ns", ...]
    aggregates(expr, prefix="", count="count", quartiles=False) -> str
        a SQL select list of aggregates over `expr`, for a GROUP BY query:
        "count(expr) AS count, min(expr) AS min_ns, ..., max(expr) AS max_ns".
        `expr` and `prefix` are SQL written in roscope's code, never text from a
        user or a trace (those go in bind parameters).
    grouped(db, source, by)     the statistics per group as rows, with exact
                                percentiles also for groups too large for DuckDB's
                                budget (`grouped_by_selection`)
    grouped_by_selection(db, source, by)
                                the same rows, the percentiles by selection: little
                                memory at any size
    select_ranks(db, source, by, groups, wanted)
                                the values at given ranks of each group (buckets,
                                then only the buckets holding the ranks)

The statistics of `roscope stats` (per callback, topic, node) are `roscope.stats`'s;
this module is the machinery they and every other analysis share.
"""
from __future__ import annotations

import itertools
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roscope.database import Database

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.

#: The statistics of a set of durations, in display order (count is separate).
NAMES = ("min", "mean", "std", "p50", "p90", "p99", "max")
#: The same with quartiles, where a verb shows them.
QUARTILE_NAMES = ("min", "mean", "std", "p25", "p50", "p75", "p90", "p99", "max")

_SQL = {
    "min": "min({e})",
    "mean": "avg({e})",
    "std": "stddev_samp({e})",
    "max": "max({e})",
}
_IDENT = re.compile(r"[a-z_][a-z0-9_]*\Z")
#: Numbers the temporary tables of `select_ranks`.
_TEMP = itertools.count()


def names(quartiles: bool = False) -> tuple[str, ...]:
    """The statistic names (without count), in display order."""
    return QUARTILE_NAMES if quartiles else NAMES


def keys(prefix: str = "", quartiles: bool = False) -> list[str]:
    """The JSON keys of the statistics: ``[f"{prefix}{name}_ns", ...]``."""
    return [f"{prefix}{n}_ns" for n in names(quartiles)]


def _agg(name: str, expr: str, quartiles: bool = False) -> str:
    if name in _SQL:
        return _SQL[name].format(e=expr)
    # All percentiles from one aggregate over the list of fractions, indexed: DuckDB
    # computes the identical aggregate once (one sort instead of one per percentile:
    # bench/README.md has the figure), with the same values as one quantile_cont each.
    pcts = [n for n in names(quartiles) if n not in _SQL]
    fractions = ", ".join(repr(int(n[1:]) / 100) for n in pcts)
    return f"quantile_cont({expr}, [{fractions}])[{pcts.index(name) + 1}]"


def aggregates(expr: str, prefix: str = "", count: str | None = "count", quartiles: bool = False) -> str:
    """SQL aggregates of the standard statistic set over `expr` (a duration in ns).

    `count` names the count column (None: no count). Returns the select list,
    e.g. for ``aggregates("duration_ns")``: ``count(duration_ns) AS count,
    min(duration_ns) AS min_ns, avg(duration_ns) AS mean_ns, ...``.
    """
    if not _IDENT.match(prefix + "x") or (count is not None and not _IDENT.match(count)):
        raise ValueError(f"percentiles.aggregates: bad column name prefix {prefix!r} or count {count!r}")
    cols = [f"count({expr}) AS {count}"] if count else []
    cols += [f"{_agg(n, expr, quartiles)} AS {prefix}{n}_ns" for n in names(quartiles)]
    return ", ".join(cols)


def _interpolate(lo: int | float, hi: int | float, d: float) -> float:
    """`quantile_cont`'s value between two neighbouring ranks, bit for bit: DuckDB
    computes lo * (1 - d) + hi * d with the first product and the sum fused into one
    rounding (its build contracts them into an FMA), so it is emulated exactly here."""
    from fractions import Fraction  # here: the selection's path only (fractions imports decimal)

    a, b = float(lo), float(hi)
    return float(Fraction(a) * Fraction(1.0 - d) + Fraction(b * d))


def grouped(db: Database, source: str, by: list[str], *, quartiles: bool = False, extra: str = "",
            what: str = "statistics") -> list[dict]:
    """The standard statistics of `x` per group of the columns `by` over `source`
    (SQL that selects the `by` columns, `x` and whatever the `extra` aggregates
    read), as ``SELECT by, aggregates("x"), extra FROM (source) GROUP BY by``
    gives them, in that column order.

    That one query is tried first: fast, but `quantile_cont` holds each group's
    values whole in memory. When it runs out of DuckDB's budget (a path of tens of
    millions of flows: gigabytes), the same values come by selection instead
    (`grouped_by_selection`), in little memory at any size; should that still not
    fit (the joins of `source`), it runs again with the budget doubled
    (`memory.within_memory`), with a warning naming `what`. `by` and `extra` are SQL
    written in roscope's code."""
    import duckdb

    from roscope.memory import within_memory  # here: `roscope stats` of a short recording starts without it

    k = ", ".join(by)
    tail = f", {extra}" if extra else ""
    try:
        return db.records(f"SELECT {k}, {aggregates('x', quartiles=quartiles)}{tail} FROM ({source}) GROUP BY {k}")
    except duckdb.OutOfMemoryException:
        pass
    return within_memory(db.con, lambda: grouped_by_selection(db, source, by, quartiles=quartiles, extra=extra),
                         db.meta.setdefault("warnings", []), what)


def grouped_by_selection(db: Database, source: str, by: list[str], *, quartiles: bool = False,
                         extra: str = "") -> list[dict]:
    """`grouped`'s rows, their percentiles by selection, never holding a group's
    values: the plain aggregates (count, min, mean, std, max, `extra`) from one
    streaming GROUP BY; the ranks `quantile_cont` reads, floor and ceil of
    (n - 1) * f, from `select_ranks` (each group's values counted in buckets of
    value ranges, then only the buckets that hold a wanted rank looked at again,
    until they are small enough to sort); the value interpolated between those two
    ranks as `quantile_cont` does (the same doubles). `x` is an integer column."""
    k = ", ".join(by)
    tail = f", {extra}" if extra else ""
    plain = ", ".join(f"{_SQL[n].format(e='x')} AS {n}_ns" for n in ("min", "mean", "std", "max"))
    rows = db.records(f"SELECT {k}, count(x) AS count, {plain}{tail} FROM ({source}) GROUP BY {k}")
    if any(r["count"] and not isinstance(r["min_ns"], int) for r in rows):  # a bug in roscope, not an input's
        raise TypeError("percentiles.grouped_by_selection: x must be an integer column (its buckets are exact integers)")
    pcts = [n for n in names(quartiles) if n not in _SQL]
    fractions = [int(n[1:]) / 100 for n in pcts]
    wanted = []
    for r in rows:
        # The ranks quantile_cont reads: floor and ceil of (n - 1) * f, in doubles as it computes them.
        pos = [(r["count"] - 1) * f for f in fractions]
        wanted.append(sorted({math.floor(p) for p in pos} | {math.ceil(p) for p in pos}) if r["count"] else [])
    picked = select_ranks(db, source, by, [(tuple(r[c] for c in by), r["min_ns"], r["max_ns"], r["count"])
                                          for r in rows], wanted)
    head = [*by, "count", *keys(quartiles=quartiles)]
    out = []
    for r, at in zip(rows, picked):
        n = r["count"]
        for name, f in zip(pcts, fractions):
            p = (n - 1) * f
            lo, hi = math.floor(p), math.ceil(p)
            r[f"{name}_ns"] = None if n == 0 else float(at[lo]) if lo == hi else _interpolate(at[lo], at[hi], p - lo)
        out.append({**{c: r[c] for c in head}, **{c: v for c, v in r.items() if c not in head}})
    return out


#: A range of one group's values is sorted (to read its wanted ranks) when it holds
#: at most this many values; a larger one is first counted in buckets ...
GATHER = 256
#: ... of about this many values each (more when the round's ranges hold more
#: than `ROUND_BUCKETS` times as many) ...
BUCKET_VALUES = 16
#: ... and at most this many buckets per range ...
MAX_BUCKETS = 1 << 16
#: ... and about this many in a round (one hash-aggregate row each).
ROUND_BUCKETS = 1 << 16


def select_ranks(db: Database, source: str, by: list[str], groups: list[tuple], wanted: list[list[int]]) -> list[dict]:
    """The values at the given ranks of each group's `x` (integers), without holding
    a group's values: {rank: value} per group, in the order of `groups`.

    `groups`: per group (its `by` values, min, max, count of non-null `x`), as a
    GROUP BY over `source` gives them; `wanted`: the 0-based ranks of each group's
    values in ascending order. A task is one range [lo, hi] of one group's values
    holding n of them, and the ranks wanted inside it. A range of at most `GATHER`
    values is sorted (a window over those rows only); a larger one is counted in
    buckets of w values, ``(x - lo) // w``, which never decreases as x grows: a
    bucket's values are then exactly those between its smallest and its largest, so
    each wanted rank becomes a rank in a smaller range, the bucket that holds it
    (counts summed in order). A range whose lo equals its hi holds one value. Each
    round reads `source` once; a range shrinks by a factor of its bucket count per
    round, so a few rounds reach any integer's precision; the small ranges of all
    rounds are sorted at the end, in one more reading."""
    out: list[dict] = [{} for _ in groups]
    # (group index, lo, hi, n, {rank in the range: rank in the group})
    tasks = [(i, g[1], g[2], g[3], {r: r for r in w}) for i, (g, w) in enumerate(zip(groups, wanted)) if w]
    small: list[tuple] = []
    while tasks:
        large = []
        for t in tasks:
            if t[1] == t[2]:  # every value of the range is the same
                out[t[0]].update(dict.fromkeys(t[4].values(), t[1]))
            else:
                (small if t[3] <= GATHER else large).append(t)
        tasks = _split(db, source, by, groups, large) if large else []
    # The small ranges of every round sorted at the end, in one query.
    if small:
        for ti, r, x in _ranges_query(db, source, by, groups, small, sort=True):
            out[small[ti][0]][small[ti][4][r]] = x
    return out


def _split(db: Database, source: str, by: list[str], groups: list[tuple], tasks: list[tuple]) -> list[tuple]:
    """One round of `select_ranks` for the large ranges: the new tasks, the buckets
    that hold wanted ranks. Bucket b of a range [lo, hi] split in buckets of w values
    holds exactly its values in [lo + b * w, lo + (b + 1) * w - 1]."""
    found: dict[tuple, dict[int, int]] = {}
    for ti, b, w, m, before, r in _ranges_query(db, source, by, groups, tasks, sort=False):
        found.setdefault((ti, b, w, m), {})[r - before] = tasks[ti][4][r]
    new = []
    for (ti, b, w, m), inside in found.items():
        gi, lo, hi, n, _ranks = tasks[ti]
        blo, bhi = lo + b * w, min(hi, lo + (b + 1) * w - 1)
        if (blo, bhi) == (lo, hi):  # cannot happen: with >= 4 buckets, w < hi - lo + 1
            raise AssertionError(f"percentiles: the range {lo}..{hi} of {n} values did not split")
        new.append((gi, blo, bhi, m, inside))
    return new


def _temp(db: Database, columns: list[list], as_select: str) -> str:
    """A new temporary table of the columns (as lists: one statement, where executemany
    runs one per row), typed as `as_select` (a SELECT ... LIMIT 0); returns its name."""
    name = f"_roscope_ranges_{next(_TEMP)}"
    db.con.execute(f"CREATE TEMP TABLE {name} AS {as_select}")
    db.con.execute(f"INSERT INTO {name} SELECT {', '.join(f'unnest(${i + 1})' for i in range(len(columns)))}",
                   columns)
    return name


def _ranges_query(db: Database, source: str, by: list[str], groups: list[tuple], tasks: list[tuple], sort: bool):
    """Reads `source` once for the ranges of `tasks` (a temporary table of them, joined
    on the group columns, null equal to null): with `sort`, the wanted ranks of each
    range's values (task, rank in the range, x); without, each range's buckets (task,
    bucket, count, min, max)."""
    cols = ", ".join(by)
    large = sum(t[3] for t in tasks)
    per = max(BUCKET_VALUES, -(-large // ROUND_BUCKETS))
    rows = []
    for ti, (gi, lo, hi, n, _ranks) in enumerate(tasks):
        # Buckets of w values each: at least 4 of them (so that w fits a BIGINT and a range always splits).
        nb = min(MAX_BUCKETS, max(4, n // per))
        rows.append((*groups[gi][0], ti, lo, hi, -(-(hi - lo + 1) // nb)))
    want = [(ti, r) for ti, t in enumerate(tasks) for r in t[4]]
    names = [_temp(db, [list(c) for c in zip(*rows)], f"SELECT {cols}, 0::BIGINT AS t, 0::BIGINT AS lo, 0::BIGINT AS hi, "
                   f"0::BIGINT AS w FROM ({source}) LIMIT 0")]
    try:
        names.append(_temp(db, [[w[0] for w in want], [w[1] for w in want]], "SELECT 0::BIGINT AS t, 0::BIGINT AS r LIMIT 0"))
        on = " AND ".join(f"s.{c} IS NOT DISTINCT FROM p.{c}" for c in by)
        joined = f"FROM ({source}) s JOIN {names[0]} p ON {on} AND s.x BETWEEN p.lo AND p.hi"
        if sort:
            # Ranks from 0, as quantile_cont counts them; only these ranges' rows are sorted,
            # and only the wanted ranks come back.
            return db.con.execute(f"SELECT t, r, x FROM (SELECT p.t, s.x, (row_number() OVER (PARTITION BY p.t "
                                  f"ORDER BY s.x) - 1)::BIGINT AS r {joined}) JOIN {names[1]} USING (t, r)").fetchall()
        # The bucket never decreases as x grows (exact integer arithmetic; in BIGINT, 5x
        # faster than HUGEINT, unless a range is too wide for a BIGINT difference). Only
        # the buckets holding a wanted rank come back: (task, bucket, its width, count,
        # values before it in the range, the wanted rank).
        wide = any(t[2] - t[1] >= 1 << 62 for t in tasks)
        b = "((s.x::HUGEINT - p.lo) // p.w)::BIGINT" if wide else "(s.x - p.lo) // p.w"
        return db.con.execute(f"""
            SELECT c.t, c.b, c.w, c.n, c.before, w.r FROM (
                SELECT t, b, w, n, sum(n) OVER (PARTITION BY t ORDER BY b) - n AS before FROM (
                    SELECT p.t, p.w, {b} AS b, count(*) AS n {joined} GROUP BY ALL)) c
            JOIN {names[1]} w ON w.t = c.t AND w.r >= c.before AND w.r < c.before + c.n""").fetchall()
    finally:
        for name in names:
            db.con.execute(f"DROP TABLE IF EXISTS {name}")
