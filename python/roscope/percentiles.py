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
                                budget (`grouped_by_sort`: from a sort spilled to disk)

The statistics of `roscope stats` (per callback, topic, node) are `roscope.stats`'s;
this module is the machinery they and every other analysis share.
"""
from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction
from typing import TYPE_CHECKING

from roscope.memory import within_memory

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
#: Numbers the temporary tables of `grouped_by_sort`.
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
    # computes the identical aggregate once (one sort instead of one per percentile;
    # 4x faster on 2M values), with the same values as one quantile_cont each.
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
    millions of flows), the percentiles come from a sort that DuckDB spills to disk
    instead: each group's values ranked (`row_number`), only the two ranks around
    each percentile kept, and the value interpolated as `quantile_cont` does (the
    same doubles). Memory then stays within the budget whatever a group's size, and
    a warning says so; should the sort still not fit (the joins of `source`), it is
    run again with the budget doubled (`memory.within_memory`), with a warning. `by` and `extra` are SQL written in roscope's code."""
    import duckdb

    k = ", ".join(by)
    tail = f", {extra}" if extra else ""
    try:
        return db.records(f"SELECT {k}, {aggregates('x', quartiles=quartiles)}{tail} FROM ({source}) GROUP BY {k}")
    except duckdb.OutOfMemoryException:
        pass
    warning = (f"{what}: exact percentiles of the largest groups did not fit in DuckDB's budget; computed from a "
               "sort spilled to disk instead (slower, same values)")
    if warning not in db.meta.setdefault("warnings", []):
        db.meta["warnings"].append(warning)
    # The sort itself needs little, but the joins of `source` a little more than a
    # tight budget: then the budget is doubled for it, with a warning (memory.within_memory).
    return within_memory(db.con, lambda: grouped_by_sort(db, source, by, quartiles=quartiles, extra=extra),
                         db.meta["warnings"], what)


def grouped_by_sort(db: Database, source: str, by: list[str], *, quartiles: bool = False, extra: str = "") -> list[dict]:
    """`grouped`'s rows with the percentiles from a sort that spills, not `quantile_cont`.
    `source` is first stored in a temporary table, so that its joins are done (and
    their memory given back) before the aggregate and the sort read it."""
    k = ", ".join(by)
    tail = f", {extra}" if extra else ""
    plain = ", ".join(f"{_SQL[n].format(e='x')} AS {n}_ns" for n in ("min", "mean", "std", "max"))
    pcts = [n for n in names(quartiles) if n not in _SQL]
    fractions = [int(n[1:]) / 100 for n in pcts]
    # Only the ranks quantile_cont reads: floor and ceil of (n - 1) * f, in doubles as it computes them.
    pos = [f"((n - 1)::DOUBLE * {f!r}::DOUBLE)" for f in fractions]
    wanted = ", ".join(f"floor({p})::BIGINT, ceil({p})::BIGINT" for p in pos)
    name = f"_roscope_grouped_{next(_TEMP)}"
    # In the Database's scratch file when it has one: compressed, and not a temporary
    # table's in-memory bookkeeping for each block it spills (tens of MiB at 76M rows).
    scratch = db.scratch_catalog()
    table = f"{scratch}.{name}" if scratch else name
    db.con.execute(f"CREATE {'' if scratch else 'TEMP '}TABLE {table} AS {source}")
    try:
        rows = db.records(f"SELECT {k}, count(x) AS count, {plain}{tail} FROM {table} GROUP BY {k}")
        # Each group as a number (text keys in a sort's partitions cost DuckDB more than
        # its budget: 13M values by callback name did not fit 128 MiB), then the
        # group's values ranked.
        db.con.execute(f"CREATE TEMP TABLE {name}_g AS SELECT {k}, row_number() OVER () AS g "
                       f"FROM (SELECT DISTINCT {k} FROM {table})")
        on = " AND ".join(f"t.{c} IS NOT DISTINCT FROM k.{c}" for c in by)
        picked = db.con.execute(f"""
            SELECT {", ".join(f"k.{c}" for c in by)}, v.r, v.x FROM (
                SELECT g, r, x FROM (
                    SELECT k.g, t.x, row_number() OVER (PARTITION BY k.g ORDER BY t.x) - 1 AS r,
                           count(*) OVER (PARTITION BY k.g) AS n
                    FROM {table} t JOIN {name}_g k ON {on} WHERE t.x IS NOT NULL)
                WHERE r IN ({wanted})) v JOIN {name}_g k USING (g)""").fetchall()
    finally:
        db.con.execute(f"DROP TABLE IF EXISTS {table}")
        db.con.execute(f"DROP TABLE IF EXISTS {name}_g")
    at: dict[tuple, dict[int, int | float]] = {}
    for row in picked:
        at.setdefault(tuple(row[:len(by)]), {})[row[-2]] = row[-1]
    head = [*by, "count", *keys(quartiles=quartiles)]
    out = []
    for r in rows:
        ranks, n = at.get(tuple(r[c] for c in by), {}), r["count"]
        for name, f in zip(pcts, fractions):
            p = (n - 1) * f
            lo, hi = math.floor(p), math.ceil(p)
            r[f"{name}_ns"] = None if n == 0 else float(ranks[lo]) if lo == hi else _interpolate(ranks[lo], ranks[hi], p - lo)
        out.append({**{c: r[c] for c in head}, **{c: v for c, v in r.items() if c not in head}})
    return out
