"""The assertion API of the pytest plugin (roscope.pytest_plugin; docs/ci.md, "pytest"):
a trace's measures that read like the budgets, each measured by `roscope check`'s own
evaluation (roscope.check.measure, so by the verbs' library functions):

    trace.flow("^/sensors/", "^/cmd$").latency.p99 <= ms(50)
    trace.callback("Planner.*onTimer").duration.max <= ms(5)
    trace.topic("/imu").rate >= hz(90)
    trace.executor("^/fusion$").utilization <= pct(50)
    trace.lost == 0

A callback or topic regular expression leaves infrastructure (parameter services, /rosout,
/parameter_events, ...: roscope.check.infrastructure) out, as a budget does, unless asked
with `infrastructure="keep"` (per subject, or for the whole Trace); of the callbacks it
selects, those that never ran are left out too (they cannot break a limit).

A measure is a `Measured` (a float) that knows its budget line, so that a failing
comparison explains itself: the plugin's `pytest_assertrepr_compare` shows the measured
value, the limit, where the time went (`why`, when the trace has kernel data) and writes
the HTML report of the trace (its path in the message).
"""
from __future__ import annotations

import math
import os

from roscope import opening, report
from roscope.check import infrastructure as infra
from roscope.check import units
from roscope.check.budgets import PATH_KEYS, Budget, Limit, Measure
from roscope.check.measure import ERROR, Context, Line, evaluate
from roscope.check.units import COUNT, DURATION, RATE, SHARE
from roscope.errors import InputError, UserError, user_message


class Measured(float):
    """A measured value (ns, Hz, a fraction or a count) and the budget line it came from."""

    line: Line
    trace: Trace

    def __new__(cls, line: Line, trace: Trace):
        v = super().__new__(cls, line.value)
        v.line, v.trace = line, trace
        return v

    def __repr__(self) -> str:
        return f"{units.show(float(self), self.line.kind)} ({self.line.what} of {self.line.subject})"


class _Stats:
    """The statistics of one measure of one subject: `.p99`, `.max`, ... (or `.min` of a rate)."""

    def __init__(self, subject: Subject, measure: str, unit: str, over: float | None = None):
        self._s, self._measure, self._unit, self._over = subject, measure, unit, over

    def __getattr__(self, stat: str) -> Measured:
        if stat.startswith("_"):
            raise AttributeError(stat)
        unit = SHARE if self._measure == "deadline" and stat == "share" else self._unit
        return self._s.measure(self._measure, stat, unit, self._over)


class Subject:
    """What a budget selects: a callback, topic, path or executor; its measures as attributes."""

    def __init__(self, trace: Trace, kind: str, select, infrastructure: str | None = None):
        if infrastructure is not None and infrastructure not in infra.CHOICES:
            raise InputError(f"infrastructure={infrastructure!r}: expected one of {', '.join(infra.CHOICES)}")
        self._t, self._kind, self._select, self._infra = trace, kind, select, infrastructure

    def measure(self, measure: str, stat: str, unit: str, over: float | None = None) -> Measured:
        return self._t.measure(self._kind, self._select, measure, stat, unit, over, infrastructure=self._infra)

    @property
    def duration(self) -> _Stats:
        return _Stats(self, "duration", DURATION)

    @property
    def latency(self) -> _Stats:
        return _Stats(self, "latency", DURATION)

    @property
    def why(self) -> _Stats:
        return _Stats(self, "why", SHARE)

    @property
    def jitter(self) -> Measured:
        return self.measure("jitter", "max", DURATION)

    @property
    def rate(self) -> Measured:
        return self.measure("rate", "min", RATE)

    @property
    def utilization(self) -> Measured:
        return self.measure("utilization", "max", SHARE)

    def deadline(self, over_ns: float) -> _Stats:
        """The runs or flows over `over_ns` (e.g. ms(30)): `.count` and `.share`."""
        return _Stats(self, "deadline", COUNT, float(over_ns))


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
        lines = evaluate(self.db, [Budget("lost", (Measure("lost", (Limit("events", "<=", 0, COUNT),
                                                                   Limit("packets", "<=", 0, COUNT))),))], self.ctx)
        total = Line(lines[0].budget, lines[0].measure, lines[0].limit, "events and packets lost",
                     "lost", sum(x.value for x in lines), kind=COUNT)
        return Measured(total, self)

    def line(self, kind: str, select, measure: str, stat: str, unit: str, over: float | None = None, *,
             infrastructure: str | None = None) -> Line:
        """The one budget line of `measure`'s `stat` on the subject `select` selects (of the
        callbacks it selects, those that ran)."""
        op = ">=" if (measure == "rate" and stat == "min") or stat == "min" and measure == "utilization" else "<="
        m = Measure(measure, (Limit(stat, op, math.inf if op == "<=" else 0, unit),), over=over)
        b = Budget(kind, (m,), select=None if kind == "path" else select, path=select if kind == "path" else (),
                   infrastructure=infrastructure)
        lines = evaluate(self.db, [b], self.ctx)
        if lines and all(x.status == ERROR for x in lines):
            raise InputError(f"{kind} {b.title()}: {lines[0].message}")
        errors = [x for x in lines if x.status == ERROR]
        lines = [x for x in lines if x.status != ERROR and not x.no_runs]
        if not lines:   # what ran has no complete run; the rest never ran
            raise InputError(f"{kind} {b.title()}: {errors[0].message}")
        if len({x.subject for x in lines}) > 1:
            raise InputError(f"{kind} {select!r} selects {len(lines)}: {', '.join(x.subject for x in lines)}; "
                             "write a regular expression that selects one")
        return lines[0]

    def measure(self, kind: str, select, measure: str, stat: str, unit: str, over: float | None = None, *,
                infrastructure: str | None = None) -> Measured:
        return Measured(self.line(kind, select, measure, stat, unit, over, infrastructure=infrastructure), self)

    def why_text(self, line: Line) -> str | None:
        """Where the time went for a duration or latency line: its `why` split (kernel data), or None."""
        if line.kind != DURATION or line.budget.kind not in ("callback", "path") or not self.ctx.kernel:
            return None
        parts = ("on_cpu", "cpu_wait", "blocked", "unknown") if line.budget.kind == "callback" else (
            "on_cpu", "cpu_wait", "blocked", "queued", "transport", "unknown")
        m = Measure("why", tuple(Limit(p, "<=", 1, SHARE) for p in parts))
        b = Budget(line.budget.kind, (m,), select=line.budget.select, path=line.budget.path,
                   infrastructure=line.budget.infrastructure)
        got = [x for x in evaluate(self.db, [b], self.ctx) if x.subject == line.subject and x.value is not None]
        if not got:
            return None
        return "where the time went (roscope why): " + ", ".join(f"{x.limit.stat} {units.show(x.value, SHARE)}"
                                                                  for x in got)

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


def explain(left, op: str, right, report_name: str | None) -> list[str] | None:
    """The lines of a failing comparison of a `Measured` (pytest_assertrepr_compare)."""
    m = left if isinstance(left, Measured) else right if isinstance(right, Measured) else None
    if m is None:
        return None
    other = right if m is left else left
    kind = getattr(other, "kind", m.line.kind)
    limit = units.show(float(other), kind) if isinstance(other, (int, float)) else repr(other)
    out = [f"{m.line.what} of {m.line.subject}: measured {units.show(float(m), m.line.kind)}, limit {op} {limit}"
           if m is left else f"limit {limit} {op} measured {units.show(float(m), m.line.kind)} "
           f"({m.line.what} of {m.line.subject})"]
    why = m.trace.why_text(m.line)
    if why:
        out.append(why)
    if report_name:
        path = m.trace.write_report(report_name)
        if path:
            out.append(f"report of the trace: {path}")
        elif m.trace.report_problem:
            out.append(m.trace.report_problem)
    return out
