"""roscope's pytest plugin (entry point `pytest11`: installed with roscope; docs/ci.md, "pytest").

Fixtures:
- `roscope_recording`: a `roscope record start` recording (roscope.record.session, as the
  CLI's) for the test's duration. Start the system under test with `recording.env()` as
  its environment; `recording.stop()` ends it (`roscope record stop`) and returns the
  `Trace` (also done at teardown). Options: marker `roscope_record(kernel=True, ros2=ENV)`,
  or `--roscope-kernel`, `--roscope-ros2 ENV`.
- `roscope_trace`: a given trace, database or dataset run instead: marker
  `roscope_trace(PATH, run=ID)` or `--roscope-trace PATH`.

Assertions read like the budgets (roscope.check.api): `trace.callback(RE).duration.max <=
ms(5)`; a failing one says the measured value, the limit, the `why` split and the path of
the HTML report written in `--roscope-reports` (default `roscope-reports/`).

Marker `roscope_budgets(FILE)` (or `--roscope-budgets FILE`): after the test, every budget
of FILE is checked on the test's trace as `roscope check` does; a failing or unevaluable
budget fails the test.

Callback and topic selections leave infrastructure out (parameter services, /rosout,
/parameter_events, ...), as `roscope check` does; `--roscope-infrastructure keep` keeps it
(as `roscope check --infrastructure keep`; a budget's or a selection's own word wins).
"""
from __future__ import annotations

import os
import re
import sys

import pytest

from roscope.check import infrastructure
from roscope.check.units import hz, ms, ns, pct, s, us
from roscope.errors import UserError

#: The units of the assertion API, importable from here too (light: the analyses, DuckDB and
#: the core are imported only when a test uses a fixture).
__all__ = ["ms", "us", "s", "ns", "hz", "pct"]
_UNITS = (hz, ms, ns, pct, s, us)


def pytest_addoption(parser) -> None:
    g = parser.getgroup("roscope", "roscope: latency budgets on traces")
    g.addoption("--roscope-trace", metavar="PATH", help="the trace, database or dataset run the roscope_trace fixture loads")
    g.addoption("--roscope-run", metavar="ID", help="with a dataset: the run roscope_trace loads")
    g.addoption("--roscope-budgets", metavar="FILE", help="check this budgets file on every test's roscope trace")
    g.addoption("--roscope-reports", metavar="DIR", default="roscope-reports",
                help="where a failing roscope assertion writes the trace's HTML report (default roscope-reports)")
    g.addoption("--roscope-kernel", action="store_true", help="roscope_recording records kernel scheduling data too")
    g.addoption("--roscope-ros2", metavar="ENV", help="roscope_recording traces this pip-installed ROS 2")
    g.addoption("--roscope-infrastructure", choices=infrastructure.CHOICES, default=infrastructure.DEFAULT,
                help="drop (default): callback and topic selections leave out parameter services, /rosout, "
                     "/parameter_events, /clock and their callbacks; keep: they select them too")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "roscope_budgets(FILE): check the budgets of FILE on the test's roscope trace")
    config.addinivalue_line("markers", "roscope_trace(PATH, run=None): the trace the roscope_trace fixture loads")
    config.addinivalue_line("markers", "roscope_record(kernel=False, ros2=None): roscope_recording's options")


_CURRENT: dict = {}


def _report_name(item) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_")[:150] or "test"


def _path(value, what: str) -> str:
    """`value` (a marker's or an option's path) as a str; the test fails naming `what` if it is no path
    (one line, no traceback)."""
    if isinstance(value, (str, os.PathLike)):
        try:
            p = os.fspath(value)
        except TypeError:
            p = None
        if isinstance(p, str) and p:
            return p
    pytest.fail(f"{what}: expected a path (str or os.PathLike), got {type(value).__name__} {value!r}", pytrace=False)


def _flag(value, what: str) -> bool:
    """A marker's True/False option; the test fails for anything else ("false" is text, not False)."""
    if not isinstance(value, bool):
        pytest.fail(f"{what}: expected True or False, got {type(value).__name__} {value!r}", pytrace=False)
    return value


def _report_dir(config) -> str:
    d = config.getoption("--roscope-reports")
    return d if os.path.isabs(d) else os.path.join(str(config.invocation_params.dir), d)


class Recording:
    """A `roscope record start` recording for one test."""

    def __init__(self, config, output: str, kernel: bool, ros2: str | None):
        from roscope.record.options import RecordOptions
        from roscope.record.session import start_session

        self.config = config
        self.state = start_session(RecordOptions(output=output, kernel=kernel, ros2=ros2))
        self.trace = None
        #: The error of the one `stop` (the recording is stopped once; a trace that cannot be
        #: read fails the test once, not again at teardown).
        self.error: BaseException | None = None
        self.stopped = False

    @property
    def output(self) -> str:
        return self.state["output"]

    def env(self, base: dict | None = None) -> dict:
        """`base` (default os.environ) with what the processes to trace need (the tracer preloaded...)."""
        out = dict(os.environ if base is None else base)
        add = {}
        if self.state.get("tracer"):
            add = {"LD_PRELOAD": self.state["tracer"], "ROSCOPE_RECORD_ID": self.state["name"]}
            if self.state.get("rospy_hook"):
                add["PYTHONPATH"] = self.state["rospy_hook"]
        add.update(self.state.get("ros2_environment") or {})
        for k, v in add.items():
            keep = out.get(k) if k in ("LD_PRELOAD", "PYTHONPATH") else None
            out[k] = f"{v}{':' if k == 'PYTHONPATH' else ' '}{keep}" if keep else v
        return out

    def stop(self):
        """Ends the recording (`roscope record stop`) and returns its Trace (once; a failure is
        raised again to a later call)."""
        if self.error is not None:
            raise self.error
        if self.trace is None:
            from roscope.check.api import Trace
            from roscope.record.session import stop_session

            self.stopped = True
            try:
                stop_session(self.state["name"])
                self.trace = Trace(self.output, report_dir=_report_dir(self.config),
                                   infrastructure=self.config.getoption("--roscope-infrastructure"))
            except Exception as e:
                self.error = e
                raise
        return self.trace


@pytest.fixture
def roscope_recording(request, tmp_path):
    """A recording for this test (see the module's doc); stopped at teardown if the test did not."""
    m = request.node.get_closest_marker("roscope_record")
    kw = dict(m.kwargs) if m else {}
    kernel = _flag(kw.get("kernel", bool(request.config.getoption("--roscope-kernel"))), "roscope_record(kernel=...)")
    ros2 = kw.get("ros2", request.config.getoption("--roscope-ros2"))
    if ros2 is not None:
        ros2 = _path(ros2, "roscope_record(ros2=...)")
    rec = Recording(request.config, str(tmp_path / "roscope-trace"), kernel, ros2)
    request.node.stash[_TRACES] = rec
    try:
        yield rec
    finally:
        if not rec.stopped:   # stopped by the test (or the budgets): its failure was told there
            rec.stop().close()
        elif rec.trace is not None:
            rec.trace.close()


@pytest.fixture
def roscope_trace(request):
    """The given trace (marker roscope_trace(PATH, run=ID) or --roscope-trace PATH) as a Trace."""
    from roscope.check.api import Trace

    m = request.node.get_closest_marker("roscope_trace")
    path = m.args[0] if m and m.args else request.config.getoption("--roscope-trace")
    run = (m.kwargs.get("run") if m else None) or request.config.getoption("--roscope-run")
    if not path:
        pytest.fail("roscope_trace: give the trace with @pytest.mark.roscope_trace(PATH) or --roscope-trace PATH",
                    pytrace=False)
    path = _path(path, "roscope_trace(PATH)")
    if run is not None and not isinstance(run, str):
        pytest.fail(f"roscope_trace(run=...): expected a run id (str), got {type(run).__name__} {run!r}", pytrace=False)
    t = Trace(path, run=run, report_dir=_report_dir(request.config),
              infrastructure=request.config.getoption("--roscope-infrastructure"))
    request.node.stash[_TRACES] = t
    try:
        yield t
    finally:
        t.close()


_TRACES = pytest.StashKey()


def _budgets_file(item) -> str | None:
    m = item.get_closest_marker("roscope_budgets")
    if m is not None:
        if not m.args:
            raise pytest.UsageError(f"{item.nodeid}: roscope_budgets needs the budgets file: roscope_budgets(FILE)")
        f = _path(m.args[0], f"{item.nodeid}: roscope_budgets(FILE)")
        return f if os.path.isabs(f) else os.path.join(os.path.dirname(str(item.path)), f)
    return item.config.getoption("--roscope-budgets")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _CURRENT["item"] = item
    try:
        outcome = yield
    finally:
        _CURRENT.pop("item", None)
    if outcome.excinfo is not None:
        return
    try:
        budgets_file = _budgets_file(item)
    except pytest.fail.Exception as e:
        outcome.force_exception(e)
        return
    if budgets_file is None:
        return
    held = item.stash.get(_TRACES, None)
    if held is None:
        raise pytest.UsageError(f"{item.nodeid}: roscope budgets need a roscope_recording or roscope_trace fixture")
    trace = held.stop() if hasattr(held, "stop") else held
    from roscope.check import budgets, measure, output
    try:
        spec = budgets.load(budgets_file)
    except UserError as e:   # the file's own words are never quoted (roscope.check.budgets)
        outcome.force_exception(pytest.fail.Exception(f"roscope budgets: {e}", pytrace=False))
        return
    lines = measure.evaluate(trace.db, spec.budgets, trace.ctx)
    bad = [x for x in lines if x.status != measure.PASS]
    if bad:
        path = trace.write_report(_report_name(item))
        text = "\n".join(output.verdict(x) for x in bad)
        for x in bad:
            why = trace.why_text(x) if x.status == measure.FAIL else None
            if why:
                text += f"\n  {output.head(x)}: {why}"
        outcome.force_exception(AssertionError(f"roscope budgets {budgets_file}: {len(bad)} of {len(lines)} lines "
                                               f"not met\n{text}" + (f"\nreport of the trace: {path}" if path else
                                                                      f"\n{trace.report_problem}" if trace.report_problem
                                                                      else "")))


def pytest_assertrepr_compare(config, op, left, right):
    api = sys.modules.get("roscope.check.api")  # loaded if a measure was made
    if api is None or not (isinstance(left, api.Measured) or isinstance(right, api.Measured)):
        return None
    item = _CURRENT.get("item")
    return api.explain(left, op, right, _report_name(item) if item is not None else "assertion")
