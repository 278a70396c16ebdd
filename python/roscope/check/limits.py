"""A budget's limits, and the measures that take them (docs/ci.md, "Budgets reference").

`MeasureSpec` is one measure of one budget kind (roscope.check.kinds): its name, its
statistics and their units, how the budgets file writes its limits (its `form`), which of
its statistics are lower bounds (`at_least`: the one place that rule is written), how a
line names it (`what`), how the pytest API reads it (`read`) and the function that measures
it on one subject (`of`). Parsing a measure's limits from the file is here, once per form:

- `stats`: a mapping of statistics to upper limits, `{p99: 2 ms, max: 10 ms}` (file order);
- `bounds`: `{min: .., max: ..}` (min a lower bound), or with `bare` one value that limits
  that statistic (`jitter: 5 ms`, `utilization: 50 %`);
- `deadline`: `{over: DURATION, count: N, share: PERCENT}`;
- `counts`: one count for every statistic (`lost: 0`), or a mapping (a missing one is 0).

Every mistake is one InputError naming the file, the line and the key
(`FILE:LINE: budgets[2].duration.p99: ...`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roscope import regex, yamlfile
from roscope.check import units
from roscope.check.units import COUNT, DURATION, UnitError
from roscope.errors import InputError

#: The comparisons a limit may make.
OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
       "==": lambda a, b: a == b}


@dataclass(frozen=True)
class Limit:
    """One limit of a measure: the measured `stat` must be `op` `value` (in `kind`'s base
    unit: ns, Hz, fraction, count). A budgets file has <= and >=; the assertion API also
    <, > and ==."""
    stat: str
    op: str
    value: float
    kind: str
    line: int = 0

    def holds(self, measured: float) -> bool:
        return OPS[self.op](measured, self.value)

    def margin(self, measured: float) -> float:
        """How far the measured value is inside the limit (negative: outside; for ==, minus
        the distance)."""
        if self.op == "==":
            return -abs(measured - self.value)
        return self.value - measured if self.op in ("<=", "<") else measured - self.value


@dataclass(frozen=True)
class Measure:
    """One measure of a budget (duration, jitter, deadline, rate, latency, why, utilization,
    lost) with its limits; `over` is a deadline's threshold (ns)."""
    name: str
    limits: tuple[Limit, ...]
    over: float | None = None
    line: int = 0

    @property
    def ask(self) -> tuple[str, float | None]:
        """What is measured for it: (name, over) (roscope.check.kinds' `Subject.values` key)."""
        return self.name, self.over


class FileErrors:
    """Error messages naming the budgets file, the line and the key."""

    def __init__(self, path: str):
        self.path = path

    def error(self, line: int, key: str, what: str) -> InputError:
        return InputError(f"{self.path}:{line}: {key}: {what}")

    def regex(self, line: int, key: str, value) -> str:
        """A regular expression of the file (checked by roscope.regex)."""
        if not isinstance(value, str) or not value:
            raise self.error(line, key, f"expected a regular expression (text), got {value!r}")
        try:
            regex.compile(value, None)
        except InputError as e:
            raise self.error(line, key, str(e)) from None
        return value

    def unit(self, line: int, key: str, value, kind: str) -> float:
        """A number of the file in `kind`'s base unit (roscope.check.units)."""
        try:
            return units.parse(value, kind)
        except UnitError as e:
            raise self.error(line, key, str(e)) from None

    def mapping(self, line: int, key: str, value, allowed) -> yamlfile.LineMap:
        """A non-empty mapping of the file whose keys are among `allowed`."""
        if not isinstance(value, dict):
            raise self.error(line, key, f"expected a mapping ({', '.join(allowed)}), got {value!r}")
        for k in value:
            if k not in allowed:
                raise self.error(value.line_of(k), f"{key}.{k}", f"unknown key (expected {', '.join(allowed)})")
        if not value:
            raise self.error(line, key, f"empty: give at least one of {', '.join(allowed)}")
        return value


@dataclass(frozen=True)
class MeasureSpec:
    """One measure a budget kind takes (see the module's doc). `unit` is its statistics'
    unit, or {stat: unit}; `of(ctx, subject, over)` measures it on one subject of its kind
    (a kind's own subject data) and gives a `roscope.check.kinds.Values`."""
    name: str
    unit: str | Mapping[str, str]
    stats: tuple[str, ...]
    form: str
    of: Callable[..., Any]
    #: The statistics that are lower bounds: their limit is "at least" (>=); the rest are "at most" (<=).
    at_least: tuple[str, ...] = ()
    #: With form `bounds`: the statistic one bare value limits (and that a line names by the measure alone).
    bare: str | None = None
    #: How the pytest API reads it: None, its statistics as attributes (`.duration.p99`); a
    #: statistic, that one as the value (`.rate` is the rate's `min`); form `deadline`, a
    #: method taking the threshold (`.deadline(ms(30)).share`).
    read: str | None = None
    #: Whether a lower value is the worse one (a rate; roscope.check.baseline); else a higher one is.
    lower_is_worse: bool = False

    def unit_of(self, stat: str) -> str:
        return self.unit.get(stat, COUNT) if isinstance(self.unit, Mapping) else self.unit

    def op(self, stat: str) -> str:
        """The comparison a budgets file's limit of `stat` makes (the lower-bound rule)."""
        return ">=" if stat in self.at_least else "<="

    def limit(self, stat: str, value: float, line: int = 0) -> Limit:
        return Limit(stat, self.op(stat), value, self.unit_of(stat), line)

    def what(self, stat: str, over: float | None = None) -> str:
        """How a line names its measure and statistic: "duration p99", "rate min",
        "jitter", "deadline 30 ms share"."""
        if self.form == "deadline":
            return f"deadline {over / 1e6:g} ms {stat}"
        if stat == self.bare:
            return self.name
        return f"{self.name} {stat}".strip()

    def parse(self, f: FileErrors, value, line: int, key: str) -> Measure:
        """The measure as the budgets file gives it (`value` at `line`, under `key`)."""
        return _FORMS[self.form](self, f, value, line, key)


def _stats(spec: MeasureSpec, f: FileErrors, value, line: int, key: str) -> Measure:
    m = f.mapping(line, key, value, spec.stats)
    return Measure(spec.name, tuple(spec.limit(s, f.unit(m.line_of(s), f"{key}.{s}", m[s], spec.unit_of(s)),
                                               m.line_of(s)) for s in m), line=line)


def _bounds(spec: MeasureSpec, f: FileErrors, value, line: int, key: str) -> Measure:
    if spec.bare is not None and not isinstance(value, dict):
        return Measure(spec.name, (spec.limit(spec.bare, f.unit(line, key, value, spec.unit_of(spec.bare)), line),),
                       line=line)
    m = f.mapping(line, key, value, spec.stats)
    lim = tuple(spec.limit(b, f.unit(m.line_of(b), f"{key}.{b}", m[b], spec.unit_of(b)), m.line_of(b))
                for b in spec.stats if b in m)
    if len(lim) == 2 and lim[0].op == ">=" and lim[1].op == "<=" and lim[0].value > lim[1].value:
        raise f.error(line, key, f"{lim[0].stat} is above {lim[1].stat}")
    return Measure(spec.name, lim, line=line)


def _deadline(spec: MeasureSpec, f: FileErrors, value, line: int, key: str) -> Measure:
    m = f.mapping(line, key, value, ("over", *spec.stats))
    if "over" not in m:
        raise f.error(line, key, "give the deadline as over: DURATION (e.g. over: 50 ms)")
    if not any(s in m for s in spec.stats):
        raise f.error(line, key, "give the most runs or flows allowed over it: count: N or share: PERCENT")
    over = f.unit(m.line_of("over"), f"{key}.over", m["over"], DURATION)
    return Measure(spec.name, tuple(spec.limit(s, f.unit(m.line_of(s), f"{key}.{s}", m[s], spec.unit_of(s)),
                                               m.line_of(s)) for s in spec.stats if s in m), over=over, line=line)


def _counts(spec: MeasureSpec, f: FileErrors, value, line: int, key: str) -> Measure:
    if isinstance(value, dict):
        m = f.mapping(line, key, value, spec.stats)
        lim = {s: f.unit(m.line_of(s), f"{key}.{s}", m[s], spec.unit_of(s)) for s in m}
    else:
        n = f.unit(line, key, value, COUNT)
        lim = dict.fromkeys(spec.stats, n)
    return Measure(spec.name, tuple(spec.limit(s, lim.get(s, 0), line) for s in spec.stats), line=line)


_FORMS = {"stats": _stats, "bounds": _bounds, "deadline": _deadline, "counts": _counts}
