"""Evaluating budgets on one trace: measure, then compare (docs/ci.md, "What each budget
measures"). Each budget's kind (roscope.check.kinds) measures what it selects, as
values, with the library function of the verb that shows them (never computed again
here); `compare` holds every limit against them, the same way for every kind.

`evaluate(db, budgets)` gives one `Line` per limit and subject (a budget whose
regular expression selects three callbacks gives three lines per limit). A line that
cannot be evaluated (nothing selected, no flow, no kernel data for `why`) is an
`error` line with the reason: never a pass. A subject that never ran (a callback)
passes with no value: `no runs`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from roscope.check.budgets import Budget
from roscope.check.kind import Context, Measurement, Values
from roscope.check.kinds import KINDS
from roscope.check.limits import Limit, Measure, MeasureSpec
from roscope.check.units import COUNT

if TYPE_CHECKING:
    from roscope.database import Database

__all__ = ["ERROR", "FAIL", "NO_RUNS", "PASS", "Context", "Line", "compare", "evaluate", "exit_status"]

PASS, FAIL, ERROR = "pass", "fail", "error"
#: The message of a line that passes because its callback never ran (its value is None).
NO_RUNS = "no runs in this trace"


@dataclass
class Line:
    """One limit of one budget on one subject: its measured value and verdict."""
    budget: Budget
    measure: Measure
    limit: Limit | None
    subject: str                  # what was measured: a callback's label, a topic, a path, a thread
    key: str                      # the subject as it is named in every run (for --baseline)
    value: float | None = None
    status: str = ERROR
    message: str = ""
    kind: str = COUNT
    ref: dict = field(default_factory=dict)   # ids to explain it (callback_id, topic, thread_id)
    samples: object = None        # with Context(samples=True): the values the statistic is of (numpy array)

    @property
    def spec(self) -> MeasureSpec:
        return KINDS[self.budget.kind].spec(self.measure.name)

    @property
    def what(self) -> str:
        """The measure and statistic, e.g. "duration p99", "rate min", "deadline 30 ms share"."""
        return self.spec.what(self.limit.stat if self.limit else "", self.measure.over)

    @property
    def margin(self) -> float | None:
        return None if self.value is None or self.limit is None else self.limit.margin(self.value)

    @property
    def no_runs(self) -> bool:
        """A line that passes because the callback it measures never ran."""
        return self.status == PASS and self.value is None


def _errors(b: Budget, message: str, subject: str, limits=None, measures=None) -> list[Line]:
    """Every limit of `b` (of `measures`) as a line that cannot be evaluated, for `message`."""
    return [Line(b, m, lim, subject, subject, None, ERROR, message, lim.kind)
            for m in (b.measures if measures is None else measures) for lim in (m.limits if limits is None else limits)]


def _lines(ctx: Context, b: Budget, m: Measure, limits, subject: str, key: str, v: Values, ref: dict) -> list[Line]:
    """One line per limit of `m` for its measured values `v` (with their samples when `ctx` keeps
    them: asked once per statistic, for the lines that have a value)."""
    out, got = [], {}
    for lim in limits:
        x = v.of(lim.stat)
        line = Line(b, m, lim, subject, key, x, kind=lim.kind, ref=dict(ref))
        if x is None:
            line.status, line.message = ERROR, f"no value of {line.what} for {subject}"
        else:
            line.status = PASS if lim.holds(x) else FAIL
            if ctx.samples and v.samples is not None:
                if lim.stat not in got:
                    got[lim.stat] = np.asarray(v.samples(lim.stat), dtype=float)
                line.samples = got[lim.stat]
        out.append(line)
    return out


def compare(ctx: Context, b: Budget, measured: Measurement) -> list[Line]:
    """Every limit of `b` against what its kind measured: a line per limit and subject, in
    the subjects' order, then the measures', then the limits'."""
    if measured.missing is not None:
        return _errors(b, measured.missing, b.title())
    out = []
    for s in measured.subjects:
        label = s.label or b.title()
        if s.no_runs:  # never ran: cannot break a budget (listed, not failed)
            out += [Line(b, m, lim, label, label, None, PASS, NO_RUNS, lim.kind, dict(s.ref))
                    for m in b.measures for lim in m.limits]
            continue
        if s.missing is not None:
            out += _errors(b, s.missing, label)
            continue
        for m in b.measures:
            limits = [lim for lim in m.limits if s.stats is None or lim.stat in s.stats]
            v = s.values[m.ask]
            if v.missing is not None:
                out += _errors(b, v.missing, label, limits, [m])
            else:
                out += _lines(ctx, b, m, limits, label, s.key or label, v, s.ref)
    return out


def evaluate(db: Database, budgets: Sequence[Budget], ctx: Context | None = None) -> list[Line]:
    """Every budget on `db` (a `roscope.open` Database): its lines, in the budgets' order.
    Each budget is measured, then compared, before the next is measured."""
    ctx = ctx or Context(db)
    out = []
    for b in budgets:
        out += compare(ctx, b, KINDS[b.kind].measure(ctx, b.selection, [m.ask for m in b.measures]))
    return out


def exit_status(lines: Sequence[Line]) -> int:
    """0 every line passes; 1 a line fails; 2 a line cannot be evaluated (and none fails)."""
    if any(x.status == FAIL for x in lines):
        return 1
    if any(x.status == ERROR for x in lines):
        return 2
    return 0
