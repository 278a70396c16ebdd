"""`roscope check --baseline DATASET [--runs GLOB]`: each budget line's metric against the
same metric in earlier runs (docs/ci.md, "Comparing with a baseline").

Per line, the values its statistic is of (a callback's run durations, a topic's delivery
latencies or publications per second, a path's flow latencies, ...; `measure.Context`
with `samples=True`) in this run are compared with those of the baseline runs, pooled,
with the statistics `roscope experiment compare` uses (roscope.experiment.stattests): the
difference of means with a 95 % bootstrap interval, and the two-sided Mann-Whitney U test.

The verdict is `worse` (or `better`) only when
1. the difference is significant as `experiment compare` calls it, over the family of the
   lines this check compares: the U test's p-value adjusted by Holm-Bonferroni's step-down
   over every line compared (`holm`) is < alpha, and the interval excludes 0; so the chance
   of any false `worse` or `better` in one check is at most alpha (the family-wise error
   rate), however many lines it has -- tested alone at 5 %, 30 lines would give a false
   verdict in 1 - 0.95^30 = 79 % of the checks of an unchanged system; and
2. the run's value of the budget's statistic (its p99, its rate, ...) lies beyond the
   baseline runs' own values by more than their spread (above the highest by more than
   highest - lowest, for a metric where higher is worse): the values of one run share its
   conditions (the machine's load, its scheduling), so a difference that the baseline
   runs also show among themselves is run-to-run variation, not a change.

Otherwise `no significant difference`; with fewer than `MIN_RUNS` baseline runs that have
the metric, `too few runs` (not in the family: no test is made). Lost events are an absolute
budget, not compared.
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
    """Whether a lower value is the worse one (a topic's rate: its measure's `lower_is_worse`); else a
    higher one is."""
    return line.spec.lower_is_worse


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


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given: with the m p-values sorted
    ascending, p_(1) <= ... <= p_(m), the k-th is adjusted to max over j <= k of
    min(1, (m - j + 1) p_(j)). Rejecting where the adjusted value is < alpha is Holm's
    step-down procedure: its family-wise error rate is at most alpha under any dependence."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        out[i] = running
    return out


def _finite(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def compare_line(line: Line, base: list[tuple], alpha: float = ALPHA) -> dict:
    """The comparison of one line with its values in the baseline runs ((value, samples) per run
    that has it), alone (a family of one: its p-value unadjusted)."""
    out = line_statistics(line, base)
    if "p" in out:
        decide(line, out, out["p"], 1, alpha)
    return out


def line_statistics(line: Line, base: list[tuple]) -> dict:
    """The statistics of one line against the baseline runs: with a U test's `p` when one
    could be made (the verdict is `decide`'s, once the family's p-values are adjusted);
    without, its verdict and text (not compared, too few runs)."""
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
    out.update(p=u["p"], u=u["u"], method=u["method"], diff_ci=[lo, hi],
               mean_baseline=float(pooled.mean()), mean=float(cur.mean()), baseline_min=min(values),
               baseline_max=max(values), samples=int(cur.size), baseline_samples=int(pooled.size))
    return out


def decide(line: Line, out: dict, p_adjusted: float, family: int, alpha: float = ALPHA) -> dict:
    """`out` (a `line_statistics` with a p-value) given its verdict and text, with `p_adjusted` its
    p-value adjusted over the `family` of lines compared (Holm-Bonferroni)."""
    kind = line.limit.kind if line.limit else units.COUNT
    lo, hi = out["diff_ci"]
    bmin, bmax = out["baseline_min"], out["baseline_max"]
    spread = bmax - bmin
    v = float(line.value)
    up, down = v > bmax + spread, v < bmin - spread
    significant = p_adjusted < alpha and (lo > 0 or hi < 0)
    higher = lo > 0
    if significant and ((higher and up) or (not higher and down)):
        verdict = WORSE if higher != lower_is_worse(line) else BETTER
    else:
        verdict = SAME
    out.update(verdict=verdict, p_adjusted=p_adjusted, family=family)
    mk = units.SHARE if line.measure.name == "deadline" else kind  # the mean of 0/1 values is a share
    adj = (f", Holm-adjusted over {family} lines p = {p_adjusted:.3g}" if family > 1 else "")
    out["text"] = (f"vs baseline ({out['runs']} runs, {units.show(bmin, kind)} to {units.show(bmax, kind)}): "
                   f"{units.show(v, kind)}, "
                   f"{verdict} (U test p = {out['p']:.3g}{adj}; difference of means "
                   f"{units.show(out['mean'] - out['mean_baseline'], mk)}"
                   f", 95 % interval {units.show(lo, mk)} to {units.show(hi, mk)})")
    return out


def compare(lines: Sequence[Line], runs: dict, alpha: float = ALPHA) -> dict:
    """{line index: comparison} of every line of this run with the baseline runs (`measure_runs`):
    the lines with a U test are one family, their p-values adjusted by Holm-Bonferroni (`holm`)."""
    out = {}
    for i, line in enumerate(lines):
        lid = line_id(line)
        base = [r[lid] for r in runs.values() if lid in r]
        out[i] = line_statistics(line, base)
    family = [i for i, c in out.items() if "p" in c]
    for i, pa in zip(family, holm([out[i]["p"] for i in family])):
        decide(lines[i], out[i], pa, len(family), alpha)
    return out


def family(comparisons: dict, alpha: float = ALPHA) -> dict:
    """What the check's baseline verdicts hold to: the correction, the family (the lines compared
    with a U test), the family-wise error rate Holm keeps (at most alpha), and the one the lines
    would have tested alone at alpha (1 - (1 - alpha)^m for independent lines)."""
    m = sum(1 for c in comparisons.values() if "p" in c)
    return {"correction": "holm", "family": m, "alpha": alpha, "familywise_error_rate": alpha if m else 0.0,
            "uncorrected_familywise_error_rate": 1 - (1 - alpha) ** m,
            "worse": sum(1 for c in comparisons.values() if c.get("verdict") == WORSE),
            "better": sum(1 for c in comparisons.values() if c.get("verdict") == BETTER)}

