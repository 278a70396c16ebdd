"""`roscope check --baseline DATASET [--runs GLOB]`: each budget line's metric against the
same metric in earlier runs (docs/ci.md, "Comparing with a baseline").

Per line, the values its statistic is of (a callback's run durations, a topic's delivery
latencies or publications per second, a path's flow latencies, ...; `measure.Context`
with `samples=True`) in this run are compared with those of the baseline runs, pooled,
with the statistics `roscope experiment compare` uses (roscope.experiment.stattests): the
difference of means with a 95 % bootstrap interval, and the two-sided Mann-Whitney U test.

The verdict is `worse` (or `better`) only when
1. the difference is significant as `experiment compare` calls it: p < alpha and the
   interval excludes 0; and
2. the run's value of the budget's statistic (its p99, its rate, ...) lies beyond the
   baseline runs' own values by more than their spread (above the highest by more than
   highest - lowest, for a metric where higher is worse): the values of one run share its
   conditions (the machine's load, its scheduling), so a difference that the baseline
   runs also show among themselves is run-to-run variation, not a change.

Otherwise `no significant difference`; with fewer than `MIN_RUNS` baseline runs that have
the metric, `too few runs`. Lost events are an absolute budget, not compared.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from roscope import dataset, opening
from roscope.check import infrastructure as infra
from roscope.check import units
from roscope.check.budgets import Budget
from roscope.check.measure import ERROR, Context, Line, evaluate
from roscope.errors import InputError
from roscope.experiment.stattests import bootstrap_diff_ci, mann_whitney_u

#: Baseline runs needed for a verdict (a spread needs two; three make it mean something).
MIN_RUNS = 3
ALPHA = 0.05
WORSE, BETTER, SAME, FEW, NOT = "worse", "better", "no significant difference", "too few runs", "not compared"


def line_id(line: Line) -> tuple:
    """A line's identity in every run: its budget, measure, statistic and subject."""
    return (line.budget.index, line.measure.name, line.limit.stat if line.limit else None, line.key)


def lower_is_worse(line: Line) -> bool:
    """Whether a lower value is the worse one (a topic's rate); else a higher one is."""
    return line.measure.name == "rate"


def baseline_runs(path: str, runs: str | None, exclude: str | None = None) -> list[str]:
    """The runs of the baseline dataset `path` chosen by `runs` (a shell pattern; all when None),
    without `exclude` (the run being checked, when it is in the same dataset)."""
    if not dataset.is_dataset(path):
        raise InputError(f"{path}: not a dataset (`roscope load TRACE --dataset DIR` makes one): --baseline takes one")
    ids = [r for r in dataset.select(path, runs) if r != exclude]
    if not ids:
        raise InputError(f"{path}: no baseline run" + (f" matches {runs!r}" if runs else "")
                         + (f" other than {exclude!r}" if exclude else ""))
    return ids


def measure_runs(path: str, ids: Sequence[str], budgets: Sequence[Budget], memory: int | None = None,
                 infrastructure: str = infra.DEFAULT) -> dict:
    """{run id: {line id: (value, samples)}} of every baseline run."""
    out = {}
    for rid in ids:
        db = opening.open(path, runs=[rid], memory=memory)
        try:
            lines = evaluate(db, budgets, Context(db, samples=True, infrastructure=infrastructure))
        finally:
            db.close()
        out[rid] = {line_id(x): (x.value, x.samples) for x in lines if x.status != ERROR}
    return out


def _finite(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def compare_line(line: Line, base: list[tuple], alpha: float = ALPHA) -> dict:
    """The comparison of one line with its values in the baseline runs ((value, samples) per run
    that has it)."""
    kind = line.limit.kind if line.limit else units.COUNT
    if line.status == ERROR or line.samples is None or line.measure.name == "lost":
        why = ("an absolute budget" if line.measure.name == "lost" else "no runs in this run" if line.no_runs
               else "not evaluated in this run")
        return {"verdict": NOT, "text": f"vs baseline: not compared ({why})"}
    base = [(v, s) for v, s in base if _finite(v) and s is not None and len(s)]
    values = [float(v) for v, _ in base]
    out = {"runs": len(base), "baseline_values": values, "value": line.value}
    if len(base) < MIN_RUNS:
        out.update(verdict=FEW, text=f"vs baseline: too few runs ({len(base)} baseline run"
                   f"{'s' if len(base) != 1 else ''} with this metric; {MIN_RUNS} needed)")
        return out
    cur = np.asarray(line.samples, dtype=float)
    pooled = np.concatenate([np.asarray(s, dtype=float) for _, s in base])
    if cur.size < 2 or pooled.size < 2:
        out.update(verdict=FEW, text=f"vs baseline: too few values ({cur.size} in this run, {pooled.size} in the "
                   "baseline runs)")
        return out
    u = mann_whitney_u(pooled, cur)
    lo, hi = bootstrap_diff_ci(pooled, cur)
    bmin, bmax = min(values), max(values)
    spread = bmax - bmin
    v = float(line.value)
    up, down = v > bmax + spread, v < bmin - spread
    significant = u["p"] < alpha and (lo > 0 or hi < 0)
    higher = lo > 0
    if significant and ((higher and up) or (not higher and down)):
        verdict = WORSE if higher != lower_is_worse(line) else BETTER
    else:
        verdict = SAME
    out.update(verdict=verdict, p=u["p"], u=u["u"], method=u["method"], diff_ci=[lo, hi],
               mean_baseline=float(pooled.mean()), mean=float(cur.mean()), baseline_min=bmin, baseline_max=bmax,
               samples=int(cur.size), baseline_samples=int(pooled.size))
    mk = units.SHARE if line.measure.name == "deadline" else kind  # the mean of 0/1 values is a share
    out["text"] = (f"vs baseline ({len(base)} runs, {units.show(bmin, kind)} to {units.show(bmax, kind)}): "
                   f"{units.show(v, kind)}, "
                   f"{verdict} (U test p = {u['p']:.3g}; difference of means {units.show(cur.mean() - pooled.mean(), mk)}"
                   f", 95 % interval {units.show(lo, mk)} to {units.show(hi, mk)})")
    return out


def compare(lines: Sequence[Line], runs: dict, alpha: float = ALPHA) -> dict:
    """{line index: comparison} of every line of this run with the baseline runs (`measure_runs`)."""
    out = {}
    for i, line in enumerate(lines):
        lid = line_id(line)
        base = [r[lid] for r in runs.values() if lid in r]
        out[i] = compare_line(line, base, alpha)
    return out
