"""The assertion API of the pytest plugin (roscope.pytest_plugin; docs/ci.md, "pytest"):
a trace's measures that read like the budgets, each measured as `roscope check` measures
it (its kind's entry in roscope.check.kinds, so by the verbs' library functions), read from
the measured values directly:

    trace.flow("^/sensors/", "^/cmd$").latency.p99 <= ms(50)
    trace.callback("Planner.*onTimer").duration.max <= ms(5)
    trace.topic("/imu").rate >= hz(90)
    trace.executor("^/fusion$").utilization <= pct(50)
    trace.lost == 0

A callback or topic regular expression leaves infrastructure (parameter services, /rosout,
/parameter_events, ...: roscope.check.infrastructure) out, as a budget does, unless asked
with `infrastructure="keep"` (per subject, or for the whole Trace); of the callbacks it
selects, those that never ran are left out too (they cannot break a limit).

A subject's attributes are its kind's measures (`MeasureSpec.read`: `.duration.p99`,
`.rate`, `.deadline(ms(30)).share`). A measure is a `Measured` (a float) that knows its
`Reading` (subject, measure, unit), so that a failing
comparison explains itself: the plugin's `pytest_assertrepr_compare` shows the measured
value, the limit, where the time went (`why`, when the trace has kernel data) and writes
the HTML report of the trace (its path in the message).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from roscope import opening, report
from roscope.check import infrastructure as infra
from roscope.check import units
from roscope.check.kind import Context, Selection
from roscope.check.kinds import KINDS
from roscope.check.kinds.path import PATH_KEYS
from roscope.check.limits import MeasureSpec
from roscope.errors import InputError, UserError, user_message


@dataclass(frozen=True)
class Reading:
    """One measured value of one subject, as the API read it: `kind` is its unit (duration,
    rate, share, count), `what` its measure and statistic ("duration p99"), `budget` the
    selection it came from."""
    budget: Selection
    subject: str
    what: str
    value: float
    kind: str


class Measured(float):
    """A measured value (ns, Hz, a fraction or a count) and the reading it came from."""

    reading: Reading
    trace: Trace

    def __new__(cls, reading: Reading, trace: Trace):
        v = super().__new__(cls, reading.value)
        v.reading, v.trace = reading, trace
        return v

    def __repr__(self) -> str:
        return f"{units.show(float(self), self.reading.kind)} ({self.reading.what} of {self.reading.subject})"


class _Stats:
    """The statistics of one measure of one subject: `.p99`, `.max`, ... (or `.count` of a deadline)."""

    def __init__(self, subject: Subject, spec: MeasureSpec, over: float | None = None):
        self._s, self._spec, self._over = subject, spec, over

    def __getattr__(self, stat: str) -> Measured:
        if stat.startswith("_"):
            raise AttributeError(stat)
        return self._s.measure(self._spec, stat, self._over)


class Subject:
    """What a budget selects: a callback, topic, path or executor; its kind's measures as
    attributes (roscope.check.kinds: `MeasureSpec.read` says how each is read)."""

    def __init__(self, trace: Trace, kind: str, select, infrastructure: str | None = None):
        if infrastructure is not None and infrastructure not in infra.CHOICES:
            raise InputError(f"infrastructure={infrastructure!r}: expected one of {', '.join(infra.CHOICES)}")
        self._t = trace
        self._sel = Selection(kind, None if kind == "path" else select, select if kind == "path" else (),
                              infrastructure)

    def measure(self, spec: MeasureSpec, stat: str, over: float | None = None) -> Measured:
        return Measured(self._t.reading(self._sel, spec, stat, over), self._t)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        kind = KINDS[self._sel.kind]
        spec = kind.measures.get(name)
        if spec is None:
            raise AttributeError(f"a {kind.name} has no measure {name!r} (its measures: {', '.join(kind.measures)})")
        if spec.form == "deadline":
            def deadline(over_ns: float) -> _Stats:
                """The runs or flows over `over_ns` (e.g. ms(30)): `.count` and `.share`."""
                return _Stats(self, spec, float(over_ns))
            return deadline
        return self.measure(spec, spec.read) if spec.read else _Stats(self, spec)


class Trace:
    """A trace (directory, database or dataset run) to assert on; `report_dir` is where a
    failing assertion writes the HTML report (None: nowhere); `infrastructure` (drop or
    keep) the default of its callback and topic selections and of its budgets."""

    def __init__(self, path, *, run: str | None = None, report_dir=None, db=None, infrastructure: str = infra.DEFAULT):
        self.path = os.fspath(path)
        self.run = run
        self.report_dir = report_dir
        self.db = db if db is not None else opening.open(self.path, runs=[run] if run else None)
        self.ctx = Context(self.db, infrastructure=infrastructure)
        self._report: str | None = None
        #: Why the report could not be written (`write_report`), or None.
        self.report_problem: str | None = None

    def close(self) -> None:
        self.db.close()

    def callback(self, regex: str, *, infrastructure: str | None = None) -> Subject:
        return Subject(self, "callback", regex, infrastructure)

    def topic(self, regex: str, *, infrastructure: str | None = None) -> Subject:
        return Subject(self, "topic", regex, infrastructure)

    def executor(self, regex: str) -> Subject:
        return Subject(self, "executor", regex)

    def flow(self, from_re: str, to_re: str, **options) -> Subject:
        """A path (options as a budgets file's path: definition, case, end, exclude, deps, ...)."""
        bad = [k for k in options if k not in PATH_KEYS]
        if bad:
            raise InputError(f"flow(): unknown option {bad[0]!r} (expected {', '.join(PATH_KEYS[2:])})")
        return Subject(self, "path", (("from", from_re), ("to", to_re), *sorted(options.items())))

    @property
    def lost(self) -> Measured:
        """Events and packets lost (summed)."""
        kind = KINDS["lost"]
        spec = kind.spec("lost")
        got = kind.measure(self.ctx, Selection("lost"), [("lost", None)]).subjects
        total = sum(s.values[("lost", None)].of(s.stats[0]) for s in got)
        return Measured(Reading(Selection("lost"), "events and packets lost", spec.what(spec.stats[0]), total,
                                spec.unit_of(spec.stats[0])), self)

    def reading(self, sel: Selection, spec: MeasureSpec, stat: str, over: float | None = None) -> Reading:
        """`spec`'s `stat` on the one subject `sel` selects (of the callbacks it selects,
        those that ran): read from the values its kind measured."""
        kind = KINDS[sel.kind]
        what = spec.what(stat, over)
        measured = kind.measure(self.ctx, sel, [(spec.name, over)])
        if measured.missing is not None:
            raise InputError(f"{kind.title(sel)}: {measured.missing}")
        got, errors = [], []
        for s in (s for s in measured.subjects if not s.no_runs):
            label = _label(kind, sel, s)
            v = s.values.get((spec.name, over))
            problem = s.missing or v.missing or (f"no value of {what} for {label}" if v.of(stat) is None else None)
            if problem:
                errors.append(problem)
            else:
                got.append(Reading(sel, label, what, v.of(stat), spec.unit_of(stat)))
        if not got:   # what ran has no value; the rest never ran
            raise InputError(f"{kind.title(sel)}: {errors[0] if errors else 'nothing measured'}")
        if len(got) > 1:
            raise InputError(f"{sel.kind} {(sel.select if sel.select is not None else sel.path)!r} selects "
                             f"{len(got)}: {', '.join(x.subject for x in got)}; "
                             "write a regular expression that selects one")
        return got[0]

    def why_text(self, line) -> str | None:
        """Where the time went for a duration or latency line (a `Reading`, or a budget's
        `roscope.check.measure.Line`): its `why` split (kernel data), or None."""
        sel = line.budget.selection if hasattr(line.budget, "selection") else line.budget
        kind = KINDS[sel.kind]
        if line.kind != units.DURATION or not kind.why_split or not self.ctx.kernel:
            return None
        why = ("why", None)
        got = [s.values[why] for s in kind.measure(self.ctx, sel, [why]).subjects
               if not s.no_runs and s.missing is None and _label(kind, sel, s) == line.subject]
        parts = [(p, got[0].of(p)) for p in kind.why_split] if got and got[0].missing is None else []
        parts = [(p, x) for p, x in parts if x is not None]
        if not parts:
            return None
        return "where the time went (roscope why): " + ", ".join(f"{p} {units.show(x, units.SHARE)}" for p, x in parts)

    def write_report(self, name: str) -> str | None:
        """The HTML report of this trace in `report_dir` (once per trace); its path."""
        if self._report or not self.report_dir or self.report_problem:
            return self._report
        try:
            if os.path.lexists(self.report_dir) and not os.path.isdir(self.report_dir):
                raise NotADirectoryError(f"{self.report_dir}: not a directory")
            os.makedirs(self.report_dir, exist_ok=True)
            out = os.path.join(self.report_dir, f"{name}.html")
            n = 1
            while os.path.lexists(out):
                n += 1
                out = os.path.join(self.report_dir, f"{name}-{n}.html")
            report.write(self.db, out, sources=[self.path])  # its data-flow pairs found automatically
        except (OSError, UserError) as e:   # the measured value is what the user must see: the report is extra
            self.report_problem = f"the report of the trace was not written: {user_message(e) or e}"
            return None
        self._report = out
        return out


def _label(kind, sel: Selection, s) -> str:
    """A subject's label, as a budget's line names it (a path: by the selection's name or title)."""
    return s.label or sel.name or kind.title(sel)


def explain(left, op: str, right, report_name: str | None) -> list[str] | None:
    """The lines of a failing comparison of a `Measured` (pytest_assertrepr_compare)."""
    m = left if isinstance(left, Measured) else right if isinstance(right, Measured) else None
    if m is None:
        return None
    other = right if m is left else left
    kind = getattr(other, "kind", m.reading.kind)
    r = m.reading
    limit = units.show(float(other), kind) if isinstance(other, (int, float)) else repr(other)
    out = [f"{r.what} of {r.subject}: measured {units.show(float(m), r.kind)}, limit {op} {limit}"
           if m is left else f"limit {limit} {op} measured {units.show(float(m), r.kind)} ({r.what} of {r.subject})"]
    why = m.trace.why_text(r)
    if why:
        out.append(why)
    if report_name:
        path = m.trace.write_report(report_name)
        if path:
            out.append(f"report of the trace: {path}")
        elif m.trace.report_problem:
            out.append(m.trace.report_problem)
    return out
