"""Shared pytest fixtures for roscope's tests (generic; any test may use them).

* ``shared_traces``      -- the directory of real traces (../shared/traces
                            beside the checkout, or $ROSCOPE_TRACES: support/shared.py); skips when absent.
* ``roscope_cmd``        -- argv prefix that runs the roscope CLI; skips with a
                            clear reason when the ``roscope`` module is not
                            importable.  $ROSCOPE_CLI (a path) overrides it.
* ``run_roscope``        -- run ``roscope ARGS...`` and get a CompletedProcess.
* ``lttng_session``      -- factory for LTTng sessions with unique names,
                            all destroyed at teardown (needs ``@pytest.mark.lttng``).
* ``ust_traces``         -- live LTTng-UST recordings of tests/fixtures
                            (dict name -> directory), made once per test session.
* ``fx_emit``            -- path of the built tests/fixtures/build/fx_emit.
* ``sched_recording``    -- support/sched.py's recording of the ROS 1 example with
                            kernel scheduling (perf), and its database, made once
                            per test session: test_sched.py and
                            test_report_why.py both read it.
* ``ros1_pipeline_run``  -- examples/ros1_pipeline recorded by its run.sh (8 s,
                            with the nodes' ground truth), once per test session:
                            test_ros1_pipeline, test_model_ros1, test_flow_truth,
                            test_deps and test_report read it.
* ``pipeline_deps``      -- `roscope deps` on examples/ros1_pipeline's sources
                            (compile_commands.json from its Makefile), once per
                            session: test_deps and test_flow_truth read it.
* ``unannotated_deps``   -- the same for examples/ros1_unannotated, once per session:
                            test_deps and test_flow_truth read it.
* ``ros2_pipeline_run``  -- factory: ros2_pipeline_run(distro) records the real
                            ROS 2 example examples/ros2_pipeline under that distro
                            from PyPI (.ros2/<distro>, `make setup`) with
                            `roscope record --kernel` for 8 s, once per distro per
                            session, and loads it: test_ros2_pipeline reads it.
* ``ros2_pipeline_slowed`` -- the same example (Jazzy) recorded for 4 s with
                            mapper.plan_path slowed by 20 ms, once per session.
* ``ros2_pipeline_dataset`` -- both loaded once into one dataset (runs base,
                            slowed): test_check and test_check_pytest read it.
* ``ros2sim_run``        -- factory: ros2sim_run(preset, distro, seconds) runs
                            tools/ros2sim once per session for those arguments and
                            returns its output directory (traces/, ground_truth/):
                            test_flow, test_flow_reference and test_ros2sim
                            simulate some of the same ones.
* ``chromium``           -- Debian's chromium, headless, driven by playwright,
                            launched once per session: test_report,
                            test_report_layout and test_report_why open their
                            pages in offline contexts of it.
* ``browser``            -- an offline context of ``chromium``, 1300 px wide, per module;
                            ``close_pages`` (autouse) closes the pages a test opened in it.
* ``report_page``        -- factory: report_page(input, pairs=()) runs `roscope
                            report INPUT [--from A --to B]...` once per session for
                            those arguments and returns the page's path:
                            test_report, test_report_layout, test_report_pairs and
                            test_report_why read the same pages of the CARET
                            end-to-end and Autoware traces.

Shared recordings and files are read-only for the tests: a test that changes
one works on its own copy (a database loaded in memory, a copied directory).

Test tiers (markers registered in pyproject.toml): ``lttng`` records live
LTTng traces, ``ros1`` runs real ROS 1 processes, ``ros2`` real ROS 2 processes
(the pip-installed Jazzy and Kilted of ``make setup``), ``slow`` takes more than a
few seconds (e.g. the big Autoware trace).  ``make test-fast`` runs
``-m "not lttng and not ros1 and not ros2 and not slow"``: quick tests on the
shared traces only.  A test that uses the LTTng fixtures without the ``lttng`` marker is
refused at collection, so that tier stays honest.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests.support import cli, recordings
from tests.support.shared import TRACES

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(TESTS_DIR)


def pytest_configure(config):
    """A suite started as a background job of a non-interactive shell (`make test &`,
    `nohup`) inherits SIGINT ignored, and so would every roscope the tests start: roscope
    keeps an inherited "ignore" (cli.py), so the tests that interrupt it would wait for
    nothing. Given Python's own handler here, the processes the tests start get SIGINT's
    default, as at a terminal."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def shared_traces() -> str:
    d = TRACES
    if not os.path.isdir(d):
        pytest.skip(f"the shared real traces are not at {d} (set ROSCOPE_TRACES)")
    return d


# --------------------------------------------------------------------------
# the roscope CLI
# --------------------------------------------------------------------------

@pytest.fixture(scope="session")
def roscope_cmd() -> list[str]:
    argv = cli.argv()
    if argv is None:
        pytest.skip(f"the roscope module is not importable from {sys.executable} "
                    "(build it: make setup, then run pytest with .venv/bin/python)")
    return argv


@pytest.fixture(scope="session")
def run_roscope(roscope_cmd):
    return cli.roscope


# --------------------------------------------------------------------------
# LTTng
# --------------------------------------------------------------------------

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every test that records live (through a fixture that needs LTTng: the sessions, ros2sim,
    the examples' recordings) carries a live tier's marker, so that `make test-fast` never
    records."""
    live = ("lttng", "ros1", "ros2")
    unmarked = [it.nodeid for it in items if "lttng_ready" in getattr(it, "fixturenames", ())
                and not any(it.get_closest_marker(m) for m in live)]
    if unmarked:
        raise pytest.UsageError("these tests record LTTng traces (they use the LTTng fixtures) but are not marked "
                                "@pytest.mark.lttng (or ros1, ros2), so `make test-fast` would run them:\n  " + "\n  ".join(unmarked))


def _lttng_unavailable() -> str | None:
    for tool in ("lttng", "lttng-sessiond"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    try:
        recordings.ensure_sessiond()
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"cannot start lttng-sessiond: {exc}"
    return None


@pytest.fixture(scope="session")
def lttng_ready() -> None:
    why = _lttng_unavailable()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="session")
def fx_emit(lttng_ready) -> str:
    try:
        return recordings.build_fx_emit()
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"cannot build tests/fixtures (make -C tests/fixtures):\n{exc.stdout}")


@pytest.fixture
def lttng_session(lttng_ready, tmp_path):
    """Factory: ``lttng_session(tag="x", buffers=None|"pid"|"uid")`` returns a
    created ``recordings.Session`` writing under tmp_path; every session made
    is destroyed at teardown, whatever happens."""
    made = []

    def make(tag: str = "t", buffers: str | None = None, output: str | None = None):
        out = output or str(tmp_path / f"lttng-{tag}-{len(made)}")
        s = recordings.Session(out, tag, buffers=buffers)
        made.append(s)
        s.__enter__()
        return s

    yield make
    for s in made:
        s.destroy()


@pytest.fixture(scope="session")
def ust_traces(fx_emit, tmp_path_factory) -> dict:
    """Live recordings of tests/fixtures/fx_emit (see support/recordings.py):
    {"uid": dir, "pid": dir, "discard": dir, "multi": dir}."""
    base = tmp_path_factory.mktemp("ust-fixtures")
    try:
        return recordings.record_all(str(base))
    except (recordings.LttngError, RuntimeError, subprocess.SubprocessError) as exc:
        pytest.fail(f"recording the LTTng-UST fixtures failed: {exc}")


# --------------------------------------------------------------------------
# recordings shared by several test modules (each takes tens of seconds)
# --------------------------------------------------------------------------

@pytest.fixture(scope="session")
def sched_recording(lttng_ready, tmp_path_factory):
    """(trace directory, database) of tests/support/sched.record: the ROS 1 example pinned to one
    CPU with a SCHED_FIFO competitor under `roscope record --kernel`. Read-only for the
    tests that use it (they copy it before changing anything)."""
    from tests.support import sched

    return sched.record(tmp_path_factory)


#: How long ros1_pipeline_run lets examples/ros1_pipeline run (s).
ROS1_PIPELINE_SECONDS = 8


@pytest.fixture(scope="session")
def ros1_pipeline_run(lttng_ready, tmp_path_factory) -> dict:
    """examples/ros1_pipeline/run.sh -d 8 (the tracer and the example built, then
    `roscope record` of system.sh with its ground-truth logs): {"trace": DIR/trace,
    "gt": DIR/ground-truth, "stderr": run.sh's stderr, roscope record's included}."""
    if importlib.util.find_spec("roscope") is None:
        pytest.skip("the roscope module is not importable")
    run = tmp_path_factory.mktemp("ros1_pipeline_run") / "run"
    p = subprocess.run([os.path.join(REPO_DIR, "examples", "ros1_pipeline", "run.sh"), "-d", str(ROS1_PIPELINE_SECONDS),
                        "-o", str(run)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"examples/ros1_pipeline/run.sh failed:\n{p.stdout}\n{p.stderr}"
    return {"trace": run / "trace", "gt": run / "ground-truth", "stderr": p.stderr}


@pytest.fixture(scope="session")
def pipeline_deps(tmp_path_factory) -> dict:
    """`roscope deps -p BUILD -o BUILD/deps.json` on examples/ros1_pipeline/src/*.cpp with a
    compile_commands.json made from its Makefile (flow_truth.dependency_run): {"path",
    "doc" (the file, parsed), "stdout", "seconds"}."""
    from tests.support import flow_truth

    return flow_truth.dependency_run("ros1_pipeline", tmp_path_factory.mktemp("pipeline_deps"), argv=cli.argv())


@pytest.fixture(scope="session")
def unannotated_deps(tmp_path_factory) -> dict:
    """pipeline_deps for examples/ros1_unannotated (the same run of `roscope deps`, the same
    dict), once per session: test_deps and test_flow_truth read it."""
    from tests.support import flow_truth

    return flow_truth.dependency_run("ros1_unannotated", tmp_path_factory.mktemp("unannotated_deps"), argv=cli.argv())


class _Recording(dict):
    """A recording's dict whose "db" (roscope.open of its "trace", in memory) is loaded on first use:
    tests that read the trace with `roscope load` or a verb do not pay for it."""

    def __missing__(self, key):
        if key != "db":
            raise KeyError(key)
        import roscope

        self["db"] = roscope.open(str(self["trace"]))
        return self["db"]


#: How long ros2_pipeline_run lets examples/ros2_pipeline's sensors run (s).
ROS2_PIPELINE_SECONDS = 8


@pytest.fixture(scope="session")
def ros2_pipeline_run(lttng_ready, tmp_path_factory):
    """Factory: ros2_pipeline_run(distro) -> {"trace", "gt", "stderr", "db" (the trace loaded
    by roscope.open, in memory, on first use: not in items() before; read-only for the
    tests)}: `roscope record --kernel` of examples/ros2_pipeline/launch.py -d 8 run by the
    distro's python3 (its environment first on PATH), made on the first call per distro and
    shared by every later one."""
    from tests.support import ros2_truth

    made: dict = {}

    def run(distro: str) -> dict:
        if distro not in made:
            if not (ros2_truth.env_of(distro) / "bin" / "python").exists():
                pytest.skip(f"ROS 2 {distro} from PyPI is not installed in {ros2_truth.env_of(distro)} (make setup)")
            if importlib.util.find_spec("roscope") is None:
                pytest.skip("the roscope module is not importable")
            out = tmp_path_factory.mktemp(f"ros2_pipeline-{distro}")
            r = ros2_truth.record(distro, out, ROS2_PIPELINE_SECONDS, ["--kernel"])
            assert r["rc"] == 0, f"roscope record of examples/ros2_pipeline ({distro}) failed:\n{r['stdout']}\n{r['stderr']}"
            made[distro] = _Recording(r)
        return made[distro]

    return run


#: examples/ros2_pipeline's callback ros2_pipeline_slowed slows, and by how much (ms).
ROS2_PIPELINE_SLOWED = ("mapper.plan_path", 20)


@pytest.fixture(scope="session")
def ros2_pipeline_slowed(lttng_ready, tmp_path_factory) -> dict:
    """{"trace", "gt", "stderr"}: `roscope record --kernel` of examples/ros2_pipeline (Jazzy) for
    4 s with ROS2_PIPELINE_SLOW=mapper.plan_path:20 (roscope check's tests and its pytest plugin's)."""
    from tests.support import ros2_truth

    if not (ros2_truth.env_of("jazzy") / "bin" / "python").exists():
        pytest.skip("ROS 2 jazzy from PyPI is not installed (make setup)")
    out = tmp_path_factory.mktemp("ros2_pipeline-slowed")
    old = os.environ.get("ROS2_PIPELINE_SLOW")
    os.environ["ROS2_PIPELINE_SLOW"] = f"{ROS2_PIPELINE_SLOWED[0]}:{ROS2_PIPELINE_SLOWED[1]}"
    try:
        r = ros2_truth.record("jazzy", out, 4, ["--kernel"])
    finally:
        if old is None:
            os.environ.pop("ROS2_PIPELINE_SLOW")
        else:
            os.environ["ROS2_PIPELINE_SLOW"] = old
    assert r["rc"] == 0, f"roscope record of the slowed examples/ros2_pipeline failed:\n{r['stderr']}"
    return r


@pytest.fixture(scope="session")
def ros2_pipeline_dataset(ros2_pipeline_run, ros2_pipeline_slowed, tmp_path_factory) -> dict:
    """ros2_pipeline_run("jazzy") and ros2_pipeline_slowed loaded once into one dataset (`roscope load
    --dataset`), runs `base` and `slowed` (roscope check's tests and its pytest plugin's read them):
    {"dataset": DIR, "base"|"slowed": the recording's dict}. Read-only for the tests."""
    ds = tmp_path_factory.mktemp("ros2_pipeline-dataset") / "dataset"
    out = {"dataset": str(ds)}
    for rid, r in (("base", ros2_pipeline_run("jazzy")), ("slowed", ros2_pipeline_slowed)):
        p = subprocess.run([*cli.argv(), "load", str(r["trace"]), "--dataset", str(ds), "--run-id", rid],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"roscope load of {r['trace']} failed:\n{p.stderr}"
        out[rid] = r
    return out


@pytest.fixture(scope="session")
def ros2sim_run(lttng_ready, tmp_path_factory):
    """Factory: ros2sim_run(preset, distro, seconds) -> the directory of `ros2sim.py run
    --preset PRESET --distro DISTRO --duration SECONDS` (traces/, ground_truth/), made on
    the first call with those arguments and shared by every later one;
    ros2sim_run.many([(preset, distro, seconds), ...]) -> their directories, the missing ones
    made a few at a time."""
    from tests.support.ros2sim import build_ros2sim, simulate_many

    build_ros2sim()
    base = tmp_path_factory.mktemp("ros2sim-runs")
    made: dict = {}

    def many(specs, parallel: int = 3) -> list:
        """The runs of [(preset, distro, seconds)], those not made yet made `parallel` at a
        time (tests/support/ros2sim.simulate_many)."""
        keys = [(p, d, float(s)) for p, d, s in specs]
        todo = [k for k in dict.fromkeys(keys) if k not in made]
        outs = simulate_many([(base / f"{p}-{d}-{s:g}s", ["--preset", p, "--distro", d, "--duration", str(s)])
                              for p, d, s in todo], parallel=parallel)
        made.update(zip(todo, outs))
        return [made[k] for k in keys]

    def run(preset: str, distro: str, seconds: float):
        return many([(preset, distro, seconds)])[0]

    run.many = many
    return run


@pytest.fixture(scope="session")
def report_page(roscope_cmd, tmp_path_factory):
    """Factory: report_page(input, pairs=()) -> the HTML file written by the CLI's `roscope report
    INPUT -o FILE [--from A --to B]...` (`pairs`: the (A, B) regexes), made on the first call with
    those arguments (the command's stdout must be the file's path) and shared by every later one."""
    base = tmp_path_factory.mktemp("reports")
    made: dict = {}

    def make(inp, pairs=()):
        key = (os.path.abspath(str(inp)), tuple(tuple(p) for p in pairs))
        if key not in made:
            out = base / f"{len(made)}-{os.path.basename(key[0])}.html"
            args = [*roscope_cmd, "report", str(inp), "-o", str(out)]
            for a, b in pairs:
                args += ["--from", a, "--to", b]
            p = subprocess.run(args, capture_output=True, text=True, timeout=900)
            assert p.returncode == 0, f"roscope report {inp} failed:\n{p.stderr}"
            assert p.stdout.strip() == str(out.resolve())
            made[key] = out
        return made[key]

    return make


#: Debian's chromium (never `playwright install`) and its flags for the report tests.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture(scope="session")
def chromium():
    """The browser (playwright's Browser) the report tests open their pages in, each module in a
    context of its own (`chromium.new_context(offline=True, viewport=...)`): launched once."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip install playwright) drives the browser")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium is not installed ({CHROMIUM}; apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def browser(chromium):
    """An offline context of the session's chromium (conftest.py), 1300 px wide."""
    ctx = chromium.new_context(offline=True, viewport={"width": 1300, "height": 1000})
    yield ctx
    ctx.close()


@pytest.fixture(autouse=True)
def close_pages(request):
    """Closes the pages a test opened in `browser` when it ends: left open (the Autoware and
    10M-event pages, every plot drawn), they kept Chromium busy and slowed the next tests' pages."""
    yield
    ctx = request.node.funcargs.get("browser")
    if ctx is not None:
        for pg in ctx.pages:
            pg.close()
