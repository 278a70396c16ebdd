"""What every budget kind (roscope.check.kinds: callback, topic, path, executor, lost) is
made of, and what they share.

A kind is one `Kind`: the key that names its subject in a budgets file and how that key
is read (`parse_subject`), its measures (`roscope.check.limits.MeasureSpec`, each with
the function that measures it), `measure` (its subjects' values on one trace, as values:
numbers, {stat: number}, arrays on demand; independent of any limit) and `suggest` (a
budgets file's entries from the values seen in a dataset's runs). Comparing limits with
the measured values is the same for every kind (roscope.check.measure.compare).

`Context` holds one trace's analyses, each made once for all the budgets.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roscope import sched
from roscope.check import infrastructure as infra
from roscope.check import units
from roscope.check.limits import FileErrors, MeasureSpec
from roscope.check.units import DURATION, SHARE
from roscope.errors import InputError

#: The message of a `why` measure on a trace without kernel data.
NO_KERNEL = ("no kernel scheduling data in this trace (record it with `roscope record --kernel`): `why` shares "
             "need it")


class Context:
    """One trace's analyses, each made once for all the budgets (`once`). `infrastructure`
    (keep or drop) is the default of the budgets that do not say; with `samples`, each
    line keeps the values its statistic is of (roscope.check.baseline)."""

    def __init__(self, db, samples: bool = False, infrastructure: str = infra.DEFAULT):
        if infrastructure not in infra.CHOICES:
            raise InputError(f"infrastructure: {infrastructure!r} is not one of {', '.join(infra.CHOICES)}")
        self.db = db
        self.samples = samples
        self.infrastructure = infrastructure
        self._once: dict[str, Any] = {}

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        """`make()`, made on the first call with `name` and kept for the trace."""
        if name not in self._once:
            self._once[name] = make()
        return self._once[name]

    def keeps_infrastructure(self, sel) -> bool:
        return (sel.infrastructure or self.infrastructure) == infra.KEEP

    @property
    def kernel(self) -> bool:
        """Whether the trace has kernel scheduling data (`why` needs it)."""
        return self.once("kernel", lambda: bool(sched.has_kernel_data(self.db)))


def run_sched(ctx: Context) -> str:
    """The SQL name of `roscope.sched.run_sched`'s result (per finished callback run, its
    scheduling split) on ctx.db: made once per trace, the value kept by `ctx` (so nothing
    is read back by a shared table name)."""
    return ctx.once("run_sched", lambda: sched.run_sched(ctx.db)).sql


def column(ctx: Context, sql: str, params: list) -> np.ndarray:
    """One numeric column of `sql` as a numpy array (DuckDB's fetchnumpy: no Python object per value;
    NULLs are NaN)."""
    cols = ctx.db.con.execute(sql, params).fetchnumpy()
    col = next(iter(cols.values()), None)
    if col is None or not len(col):
        return np.zeros(0)
    return np.ma.filled(np.ma.asarray(col).astype(float), np.nan) if np.ma.isMaskedArray(col) else np.asarray(
        col, dtype=float)


@dataclass(frozen=True)
class Selection:
    """What a budget (or a pytest API call) selects: its kind, `select` (a regular
    expression) or `path` (a path's options), its infrastructure word (None: the check's
    default) and its name (a path's subject is named by it)."""
    kind: str
    select: str | None = None
    path: tuple[tuple[str, object], ...] = ()
    infrastructure: str | None = None
    name: str | None = None
    default: bool = False

    @property
    def path_options(self) -> dict:
        return dict(self.path)


@dataclass
class Values:
    """One measure's values on one subject: `stats` ({stat: number or None}, or one number
    for every statistic) or why there are none (`missing`); `samples(stat)` gives the values
    a statistic is of (a numpy array; asked only by a check with a baseline)."""
    stats: dict | float | None = None
    missing: str | None = None
    samples: Callable[[str], Any] | None = None

    def of(self, stat: str) -> float | None:
        return self.stats.get(stat) if isinstance(self.stats, dict) else self.stats


@dataclass
class Subject:
    """One subject a selection selects (a callback, topic, path, executor thread, a kind of
    loss): its `label` (None: the selection's title), `key` (its name in every run; None: the
    label), `ref` (ids that explain it) and `values` ({(measure, over): Values}); or that
    it cannot be measured (`missing`), or that it never ran (`no_runs`: it cannot break a
    limit). `stats`: the only statistics it is of (None: all)."""
    label: str | None
    key: str | None = None
    ref: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    missing: str | None = None
    no_runs: bool = False
    stats: tuple[str, ...] | None = None


@dataclass
class Measurement:
    """A selection's subjects on one trace, or why nothing can be measured (`missing`)."""
    subjects: list[Subject] = field(default_factory=list)
    missing: str | None = None


class Kind:
    """One budget kind (see the module's doc). Subclasses set `name`, `measures` and
    `measure`; `infrastructure` says whether its selection may keep infrastructure
    (`infrastructure: keep|drop`)."""
    name: str = ""
    measures: dict[str, MeasureSpec] = {}
    infrastructure: bool = False
    #: `why`'s parts that split a subject's time (what a failing pytest assertion shows).
    why_split: tuple[str, ...] = ()

    @staticmethod
    def specs(*specs: MeasureSpec) -> dict[str, MeasureSpec]:
        return {s.name: s for s in specs}

    def spec(self, measure: str) -> MeasureSpec:
        return self.measures[measure]

    def parse_subject(self, f: FileErrors, item, key: str, base_dir: str) -> tuple[str | None, tuple]:
        """(select, path) of a budget's mapping `item`: by default its key is a regular expression."""
        return f.regex(item.line_of(self.name), f"{key}.{self.name}", item[self.name]), ()

    def title(self, sel) -> str:
        """What a budget selects, in words (its name wins: roscope.check.budgets.Budget.title)."""
        return f"{self.name} {sel.select}"

    def measure(self, ctx: Context, sel, asks: Sequence[tuple[str, float | None]]) -> Measurement:
        """The subjects `sel` selects with the values of `asks` ((measure, over) each)."""
        raise NotImplementedError

    def values(self, ctx: Context, asks, data) -> dict:
        """{ask: Values} of one subject (`data`: what this kind's measure functions take)."""
        return {a: self.measures[a[0]].of(ctx, data, a[1]) for a in asks}

    def observe(self, ctx: Context, paths: Sequence[tuple[str, str]]) -> dict:
        """What `roscope check --suggest` reads of one run: {(subject key, what): value}."""
        return {}

    def observe_every(self, ctx: Context, picks: dict[str, str]) -> dict:
        """{(subject label, measure): value} of `picks` ({measure: statistic}) on every subject
        a selection of "." selects (those with a value)."""
        out = {}
        for s in self.measure(ctx, Selection(self.name, "."), [(m, None) for m in picks]).subjects:
            for (m, _), v in s.values.items():
                x = v.of(picks[m])
                if v.missing is None and x is not None:
                    out[(s.label, m)] = x
        return out

    def suggest(self, seen: dict, runs: Sequence[str], margin: float, paths: Sequence[tuple[str, str]]) -> list[str]:
        """Budgets file lines from `seen` ({(subject key, what): {run: value}}, what every run had)."""
        return []


# ---------------------------------------------------------------- words of messages and suggestions

#: The statistics of a set of values (roscope.percentiles': with quartiles).
ALL_STATS = ("min", "mean", "std", "p25", "p50", "p75", "p90", "p99", "max")


def shown(names) -> str:
    """Names for a message: sorted, at most 12."""
    names = sorted({n for n in names if n})
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")


def left_out(what: str, names: list[str]) -> str:
    """The part of a "no ... matches" message that names the infrastructure left out."""
    if not names:
        return ""
    return (f"; {len(names)} infrastructure {what}{'s' if len(names) != 1 else ''} left out ({shown(names)}): "
            "`infrastructure: keep` (or --infrastructure keep) selects them too")


#: The smallest room a suggested limit leaves above the largest value seen.
FLOOR = {DURATION: 1e6, SHARE: 0.05}


def round_up(x: float) -> float:
    """`x` rounded up to two significant digits."""
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return math.ceil(x / 10 ** e - 1e-9) * 10 ** e


def round_down(x: float) -> float:
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return math.floor(x / 10 ** e + 1e-9) * 10 ** e


def upper_limit(worst: float, kind: str, margin: float) -> float:
    """The suggested upper limit over the largest value seen."""
    return round_up(max(worst * (1 + margin), worst + FLOOR.get(kind, 0)))


def yaml_text(s: str) -> str:
    """A YAML scalar for any text (JSON's double-quoted form is YAML's too)."""
    return json.dumps(s, ensure_ascii=False)


def exact(name: str) -> str:
    """A regular expression that matches `name` whole."""
    return "^" + re.escape(name) + "$"


def per_run(seen: dict, key, runs: Sequence[str]) -> list | None:
    """The values of `key` in `seen` in the order of `runs` (None: not seen)."""
    got = seen.get(key)
    return None if got is None else [got[r] for r in runs]


def seen_text(values, kind: str) -> str:
    """The values seen, for a suggestion's comment."""
    return ", ".join(units.show(x, kind) for x in values)


def suggested(measure: str, seen: str, values, kind: str, margin: float, stat: str | None = None) -> list[str]:
    """A suggested upper limit's two lines: `# <seen> seen: <values>` and `<measure>: <limit>`
    (`{<stat>: <limit>}` with `stat`), the limit over the largest value seen."""
    lim = units.text(upper_limit(max(values), kind, margin), kind)
    return [f"    # {seen} seen: {seen_text(values, kind)}", f"    {measure}: " + (f"{{{stat}: {lim}}}" if stat else lim)]
