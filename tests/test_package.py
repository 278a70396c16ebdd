"""The release build (issue 41): the wheel `make dist` builds (maturin), installed with pip into
a fresh virtual environment outside the checkout, run from a directory outside it, records and
analyses as the checkout does.

One wheel per version of its sources (cached in ~/.cache/roscope/test-package/wheels/<hash>: a
rebuild is `maturin build --release` of the core, ~1-2 min after `make core` on 2 cores, as it
shares make core's compiled dependencies); one virtual environment per module, its packages from
a cache of downloaded wheels (pip download once, then --no-index). In it (the core install: no pyarrow, pandas, plotly, libclang, pyspark): `roscope doctor`, then
`roscope record` of each ROS 1 example (examples/ros1_*: the ROS 1 tracer built from the wheel's
sources into a fresh cache on first use), of the rclpy example (ROS 2 Jazzy from PyPI: roscope's
ROS 2 tracer, built from the wheel's sources too), of a stock ros2_tracing system (ros2sim, with
the ROS_VERSION=2 a sourced ROS 2 leaves: nothing of roscope's preloaded) and of the rclcpp
example; then stats, flow, executor, why, check and info on each, and on each ROS 1 example what
`make demo` runs besides (load, stats of the database, export --perfetto), exit 0, and all but
check and info equal to the checkout's on the same trace (the Perfetto files byte for byte); a
verb whose extra is missing names it; the pytest plugin loads. A second environment follows
docs/ci.md's recipe (the wheel with [report]): doctor, record --kernel, check --junit --github,
and report of each ROS 1 example, equal to the checkout's. Cost here: 7 min 7 s at load 10 on 2
cores (the core venv 21 s; the CI venv 86 s, the first time: [report]'s packages downloaded once
into CACHE/deps; the eight recordings and the rclcpp build 103 s; the analyses 2.5 min, of which
the four new ROS 1 examples 75 s; the reports 55 s; since then the three C++ ROS 1 examples are
recorded at once, 13 s where one after the other took 41 s at load 8), plus ~10-60 s for the wheel's build when its
sources changed (after make core), plus ~30 s once per version of the tracers' sources to build
them (cached in ~/.cache/roscope/test-package/xdg)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.procs import interrupt


def live(test):
    """A test of the installed wheel: it records (the slow tier)."""
    for mark in (pytest.mark.slow, pytest.mark.lttng, pytest.mark.ros1, pytest.mark.ros2):
        test = mark(test)
    return test


REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roscope" / "test-package"
JAZZY = REPO / ".ros2" / "jazzy"
#: The core's dependencies (pyproject.toml), downloaded once into CACHE/deps.
SYSTEM = {"processes": [
    {"name": "sensor", "nodes": [{"name": "sensor", "publishers": [{"topic": "/raw"}],
                                  "timers": [{"period_ms": 10, "work": {"dist": "fixed", "us": 100}, "publish": ["/raw"]}]}]},
    {"name": "relay", "nodes": [{"name": "relay", "publishers": [{"topic": "/filtered"}],
                                 "subscriptions": [{"topic": "/raw", "work": {"dist": "fixed", "us": 200}, "publish": ["/filtered"]}]}]},
]}


def _sources() -> list[Path]:
    """What the wheel is made of: the Rust workspace, the Python package, the tracers' sources."""
    files = [REPO / n for n in ("pyproject.toml", "Cargo.toml", "Cargo.lock")]
    files += [p for p in (REPO / "crates").rglob("*") if p.is_file() and "fuzz" not in p.parts and "target" not in p.parts]
    files += [p for p in (REPO / "python" / "roscope").rglob("*") if p.is_file() and p.suffix in (".py", ".pyi")
              and "instrument" not in p.relative_to(REPO / "python" / "roscope").parts]
    files += [p for p in (REPO / "instrument").rglob("*") if p.is_file() and "build" not in p.parts and "__pycache__" not in p.parts]
    return sorted(files)


def sources_sha256() -> str:
    h = hashlib.sha256()
    for f in _sources():
        h.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _offline(stderr: str) -> bool:
    """Whether pip failed for want of a package index (not for a bad wheel)."""
    return any(w in stderr for w in ("Could not find a version", "No matching distribution", "ConnectionError",
                                     "Max retries", "Temporary failure", "Network is unreachable"))


def run(argv, timeout=600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def wheel() -> Path:
    """$ROSCOPE_TEST_WHEEL (a wheel to test, e.g. make dist's), else the wheel of these sources:
    cached, else built (maturin build --release, as make dist)."""
    if os.environ.get("ROSCOPE_TEST_WHEEL"):
        return Path(os.environ["ROSCOPE_TEST_WHEEL"]).absolute()
    d = CACHE / "wheels" / sources_sha256()[:16]
    found = sorted(d.glob("roscope-*.whl"))
    if found:
        return found[0]
    maturin = Path(sys.executable).parent / "maturin"
    if not maturin.exists():
        pytest.skip("maturin is not installed here (make setup installs it)")
    tmp = CACHE / "wheels" / f".build-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    p = run([maturin, "build", "--release", "-q", "-i", sys.executable, "--out", tmp], timeout=1800, cwd=REPO)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    return sorted(d.glob("roscope-*.whl"))[0]


def _install(base: Path, requirement: str) -> Path:
    """A fresh virtual environment `base`/venv with `requirement` (the wheel, maybe with extras)
    installed by pip as a user would, its dependencies from CACHE/deps (downloaded there once,
    then --no-index); returns its python."""
    venv = base / "venv"
    p = run([getattr(sys, "_base_executable", None) or "/usr/bin/python3", "-m", "venv", venv])
    assert p.returncode == 0, p.stderr
    py = venv / "bin" / "python"
    deps = CACHE / "deps"
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    p = run([*pip, "--no-index", "--find-links", deps, requirement], cwd=base)
    if p.returncode != 0:   # the first time (or new requirements): download them once
        d = run([py, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", deps, requirement], cwd=base)
        if d.returncode != 0 and _offline(d.stderr):
            pytest.skip(f"the wheel's dependencies cannot be downloaded (no package index?): {d.stderr.strip()[-300:]}")
        assert d.returncode == 0, d.stderr
        p = run([*pip, "--no-index", "--find-links", deps, requirement], cwd=base)
    assert p.returncode == 0, p.stdout + p.stderr
    return py


@pytest.fixture(scope="module")
def env(wheel, tmp_path_factory) -> dict:
    """A fresh virtual environment outside the checkout with the wheel installed (the core:
    `pip install roscope-*.whl`), and a directory outside the checkout to run in, with a
    cache of its own (the tracers are built from the wheel's sources)."""
    base = tmp_path_factory.mktemp("package")
    assert REPO not in base.resolve().parents, base
    py = _install(base, str(wheel))
    venv = py.parent.parent
    work = base / "work"
    work.mkdir()
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ROSCOPE_ROS1_TRACER")}
    # the tracers' builds: a cache of the test's own, kept between runs (a build per version of their sources)
    environ["XDG_CACHE_HOME"] = str(CACHE / "xdg")
    return {"base": base, "venv": venv, "roscope": venv / "bin" / "roscope", "py": py, "work": work, "env": environ}


def roscope(env, *args, timeout=600, extra_env=None) -> subprocess.CompletedProcess:
    """The installed roscope, run from the directory outside the checkout."""
    return run([env["roscope"], *args], timeout=timeout, cwd=env["work"], env={**env["env"], **(extra_env or {})})


def checkout(*args, cwd) -> subprocess.CompletedProcess:
    """The checkout's roscope on the same input."""
    e = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    return run([sys.executable, "-m", "roscope", *args], cwd=cwd, env=e)


@live
def test_installed_from_the_wheel_not_the_checkout(env):
    p = run([env["py"], "-c", "import roscope, roscope._core; print(roscope.__file__); "
                              "from roscope.ros2_pip import INSTRUMENT_ROOT; print(INSTRUMENT_ROOT)"], cwd=env["work"],
            env=env["env"])
    assert p.returncode == 0, p.stderr
    mod, inst = p.stdout.split()
    assert mod.startswith(str(env["venv"])) and inst.startswith(str(env["venv"])), p.stdout
    for f in ("ros1/Makefile", "ros1/src/tracer.cpp", "ros1/rospy/sitecustomize.py", "ros2/Makefile", "ros2/rclpy/roscope_rclpy.py",
              "include/roscope/roscope_attach_tp.h"):
        assert (Path(inst) / f).is_file(), f
    assert not list(Path(inst).rglob("*.so")) and not list(Path(inst).rglob("*.o")), "a build in the wheel"
    # the extras are not in the core install (pyarrow neither: DuckDB reads the core's Arrow streams itself)
    p = run([env["py"], "-c", "import importlib.util as u; print([m for m in ('plotly', 'clang', 'pyspark', 'pandas', 'pyarrow') "
                              "if u.find_spec(m)])"], env=env["env"])
    assert p.stdout.strip() == "[]", p.stdout
    # the pytest plugin is registered for pytest to load
    p = run([env["py"], "-c", "from importlib.metadata import entry_points; "
                              "print([e.value for e in entry_points(group='pytest11') if e.name == 'roscope'])"], env=env["env"])
    assert p.stdout.strip() == "['roscope.pytest_plugin']", p.stdout + p.stderr


@live
def test_a_verb_whose_extra_is_missing_names_it(env):
    """The core install has no plotly, libclang nor pyspark: report, deps and spark say which
    extra brings them."""
    trace = SHARED / "ros2" / "caret-end-to-end-cyclonedds"
    if not trace.is_dir():
        pytest.skip(f"the shared traces are not at {trace}")
    p = roscope(env, "report", trace, "-o", env["work"] / "report.html")
    assert p.returncode == 1 and "pip install 'roscope[report]'" in p.stderr, p.stderr
    assert not (env["work"] / "report.html").exists()
    src = env["work"] / "node.cpp"
    src.write_text("int main() { return 0; }\n")
    p = roscope(env, "deps", src, "-o", env["work"] / "deps.yaml")
    assert p.returncode == 1 and "pip install 'roscope[deps]'" in p.stderr, p.stderr
    ds = env["work"] / "dataset"
    p = roscope(env, "load", trace, "--dataset", ds, "--run-id", "e2e")  # the dataset: Parquet by DuckDB, no pyarrow
    assert p.returncode == 0, p.stderr
    p = roscope(env, "spark", "stats", ds)
    assert p.returncode == 1 and "pip install 'roscope[spark]'" in p.stderr, p.stderr


def test_spark_without_pyspark_names_the_extra(tmp_path):
    """`roscope spark` where pyspark cannot be imported (the import itself fails: the module
    is blocked in sys.modules, as an environment without it fails): exit 1, naming
    `pip install 'roscope[spark]'`, and no traceback. Quick: a dataset of one shared trace."""
    trace = SHARED / "ros2" / "caret-talker-listener-galactic"
    if not trace.is_dir():
        pytest.skip(f"the shared traces are not at {trace}")
    e = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    p = run([sys.executable, "-m", "roscope", "load", trace, "--dataset", tmp_path / "ds", "--run-id", "r1"], env=e)
    assert p.returncode == 0, p.stderr
    for verb in (["stats"], ["flow", "--from", "^/chatter$", "--to", "^/chatter$"]):
        p = run([sys.executable, "-c", "import sys; sys.modules['pyspark'] = None; from roscope.cli import main; "
                                       "sys.exit(main(sys.argv[1:]))", "spark", *verb, tmp_path / "ds"], env=e)
        assert p.returncode == 1, (verb, p.stdout, p.stderr)
        assert "pip install 'roscope[spark]'" in p.stderr and "Traceback" not in p.stderr, (verb, p.stderr)


@live
def test_pytest_plugin_loads_in_the_installed_environment(env):
    p = run([env["py"], "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--find-links",
             CACHE / "deps", "pytest"], cwd=env["work"], env=env["env"])
    if p.returncode != 0:
        d = run([env["py"], "-m", "pip", "download", "-q", "-d", CACHE / "deps", "pytest"], cwd=env["work"])
        if d.returncode != 0 and _offline(d.stderr):
            pytest.skip(f"pytest cannot be downloaded: {d.stderr.strip()[-300:]}")
        p = run([env["py"], "-m", "pip", "install", "-q", "--no-index", "--find-links", CACHE / "deps", "pytest"], cwd=env["work"])
    assert p.returncode == 0, p.stderr
    t = env["work"] / "test_uses_plugin.py"
    t.write_text("def test_fixture_is_there(request):\n    assert 'roscope_recording' in request.fixturenames or "
                 "request.config.pluginmanager.has_plugin('roscope')\n")
    p = run([env["py"], "-m", "pytest", "-q", "-p", "no:cacheprovider", str(t)], cwd=env["work"], env=env["env"])
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr


@live
def test_doctor_says_recording_will_work(env):
    p = roscope(env, "doctor", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    checks = {c["check"]: c for c in json.loads(p.stdout)["checks"]}
    assert checks["LTTng session daemon"]["status"] == "ok"
    # no ROS 1 tracer in the checkout's place: built in the test's cache, or buildable from the wheel's sources
    found = checks["ROS 1 tracer"]["found"]
    assert checks["ROS 1 tracer"]["status"] == "ok" and ("buildable" in found or str(CACHE / "xdg") in found), checks
    # a broken PATH: no lttng, reported with the command that fixes it, exit 1
    p = roscope(env, "doctor", extra_env={"PATH": str(env["venv"] / "bin")})
    assert p.returncode == 1 and "FAIL" in p.stdout and "apt install lttng-tools" in p.stdout, p.stdout + p.stderr


#: The other ROS 1 examples (examples/ros1_*; ros1_pipeline is "ros1"), each recorded for 2 s:
#: the command (in examples/) and the topics of flow's --from and --to. ros1_manipulation's
#: system.sh runs until SIGINT: `timeout` sends it (and exits with its status, 0).
ROS1_EXAMPLES = {
    "ros1-helpers": (["ros1_helpers/system.sh", "-d", "2"], r"^/hs/(scan|imu)$", r"^/hs/(plan|echo|status)$"),
    "ros1-onebinary": (["ros1_onebinary/system.sh", "-d", "2"], r"^/ob/(scan|objects|imu|cmd)$", r"^/ob/(control|plan|cmd_echo)$"),
    "ros1-unannotated": (["ros1_unannotated/system.sh", "-d", "2"], r"^/(sensing/(lidar|imu|camera|gnss)|vehicle/status)$",
                         r"^/(control/command|localization/gnss_pose|vehicle/velocity)$"),
    "ros1-manipulation": (["timeout", "--preserve-status", "-s", "INT", "3", "ros1_manipulation/system.sh"], r"^/joint_states$",
                          r"^/tf$"),
}


@pytest.fixture(scope="module")
def recordings(env):
    """The recordings, made by the installed roscope."""
    examples = REPO / "examples"
    scripts = [next(a for a in cmd if a.endswith(".sh")) for cmd, _f, _t in ROS1_EXAMPLES.values()]
    for d in (examples / "ros1_pipeline", REPO / "tools" / "ros2sim", *(examples / a.split("/")[0] for a in scripts)):
        b = run(["make", "-s", "-C", d])
        assert b.returncode == 0, b.stdout + b.stderr
    out = {}
    w = env["work"]
    # ROS 1: the example's nodes (roscpp) under the ROS 1 tracer, built now into the fresh cache
    p = roscope(env, "record", "-o", w / "ros1", "--", examples / "ros1_pipeline" / "system.sh", "-d", "3",
                "-g", w / "gt-ros1")
    assert p.returncode == 0, p.stdout + p.stderr
    out["ros1"] = w / "ros1"
    # every other ROS 1 example (roscpp, one binary of several roles, rospy with actionlib and tf2):
    # the three C++ ones at once (the tracer is built by now), each on a rosmaster port of its own,
    # each recording keeping its own processes by their record id (tests/test_record_concurrent.py):
    # ~20 s less than one after the other. The rospy one alone: its nodes start slowly (Python),
    # and its 3 s run must hold /joint_states (run at once with the three others, it held none once).
    argvs = {}
    for name, (cmd, _f, _t) in ROS1_EXAMPLES.items():
        argvs[name] = [str(examples / a) if a.endswith(".sh") else a for a in cmd]
        if cmd[0] != "timeout":
            argvs[name] += ["-g", str(w / f"gt-{name}")]
    alone = [n for n, (cmd, _f, _t) in ROS1_EXAMPLES.items() if cmd[0] == "timeout"]
    for name in alone:
        p = roscope(env, "record", "-o", w / name, "--", *argvs[name])
        assert p.returncode == 0, (name, p.stdout[-2000:], p.stderr[-2000:])
        out[name] = w / name
    started = {}
    for name, argv in argvs.items():
        if name in alone:
            continue
        log = (w / f"record-{name}.log").open("w+")
        started[name] = (log, subprocess.Popen([str(env["roscope"]), "record", "-o", str(w / name), "--", *argv], cwd=env["work"],
                                               env=env["env"], stdout=log, stderr=subprocess.STDOUT, text=True))
    try:
        for name, (log, p) in started.items():
            p.wait(timeout=600)
            log.seek(0)
            assert p.returncode == 0, (name, log.read()[-4000:])
            out[name] = w / name
    finally:   # a failure above: none left running (Ctrl-C: roscope record stops its session and system)
        for log, p in started.values():
            interrupt(p)
            log.close()
    # rclpy: ROS 2 Jazzy from PyPI, roscope's ROS 2 tracer built from the wheel's sources
    if not (JAZZY / "bin" / "python").exists():
        pytest.skip(f"ROS 2 Jazzy from PyPI is not installed at {JAZZY} (make setup)")
    p = roscope(env, "record", "-o", w / "rclpy", "--", JAZZY / "bin" / "python", REPO / "examples" / "ros2_pipeline" / "launch.py",
                "-d", "3", "-g", w / "gt-rclpy", timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    out["rclpy"] = w / "rclpy"
    # stock ROS 2 (ros2_tracing's tracepoints, LTTng-UST of this system): ros2sim, in the environment a sourced ROS 2 leaves
    system = w / "system.json"
    system.write_text(json.dumps(SYSTEM))
    p = roscope(env, "record", "-o", w / "stock", "--", "/usr/bin/python3", REPO / "tools" / "ros2sim" / "ros2sim.py", "run",
                "--system", system, "--distro", "jazzy", "--duration", "2", "--no-session", "--out", w / "sim",
                extra_env={"ROS_VERSION": "2", "ROS_DISTRO": "jazzy"})
    assert p.returncode == 0, p.stdout + p.stderr
    out["stock"] = w / "stock"
    # rclcpp (Jazzy, built from ../shared/third_party by make setup): ros2_tracing's own tracepoints in rclcpp,
    # reaching LTTng through roscope's ROS 2 tracer; left out, and said so, where rclcpp is not built here
    rclcpp = REPO / "examples" / "ros2_cpp_pipeline"
    if run(["bash", REPO / "scripts" / "rclcpp_setup.sh", "--prefix"]).returncode == 0:
        b = run([sys.executable, rclcpp / "launch.py", "--build"], timeout=900)
        assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
        p = roscope(env, "record", "--ros2", JAZZY, "-o", w / "rclcpp", "--", sys.executable, rclcpp / "launch.py", "-d", "3",
                    "-g", w / "gt-rclcpp", timeout=900)
        assert p.returncode == 0, p.stdout + p.stderr
        out["rclcpp"] = w / "rclcpp"
    return out


@live
def test_each_recording_preloads_only_what_it_needs(env, recordings):
    want = {"ros1": ["ros1"], "rclpy": ["ros2-pypi"], "stock": [], "rclcpp": ["ros2-pypi"], **dict.fromkeys(ROS1_EXAMPLES, ["ros1"])}
    for name, trace in recordings.items():
        m = json.loads((trace / "roscope-manifest.json").read_text())
        assert m["state"] == "complete" and m["exit_code"] == 0, (name, m.get("state"), m.get("exit_code"))
        assert m["tracer"]["preloaded"] == want[name], (name, m["tracer"])
        assert m["events_recorded"] > 100, (name, m["events_recorded"])
    # the ROS 1 tracer: built in the user's cache from the sources the wheel installed (the same hash)
    m = json.loads((recordings["ros1"] / "roscope-manifest.json").read_text())
    lib = Path(m["tracer"]["ros1_library"])
    assert lib.is_relative_to(CACHE / "xdg" / "roscope" / "ros1-tracer"), m["tracer"]
    p = run([env["py"], "-c", "from roscope.record.tracer import ros1_sources_sha256; print(ros1_sources_sha256())"],
            cwd=env["work"], env=env["env"])
    assert json.loads((lib.parent / "build-info.json").read_text())["sources_sha256"] == p.stdout.strip() != ""
    # roscope's ROS 2 tracer for Jazzy: built from the same sources as the wheel's (in the cache, or make setup's)
    m = json.loads((recordings["rclpy"] / "roscope-manifest.json").read_text())
    p = run([env["py"], "-c", "from roscope.ros2_pip import sources_sha256; print(sources_sha256())"], cwd=env["work"], env=env["env"])
    info = json.loads((Path(m["ros2"]["tracer"]) / "build-info.json").read_text())
    assert info["sources_sha256"] == p.stdout.strip() != "", (m["ros2"], info.get("sources_sha256"))
    assert m["ros2"]["rclpy_hook"].startswith(str(env["venv"])), m["ros2"]


def _untimed(text: str) -> str:
    """An analysis's output without the time it took (flow says it)."""
    return re.sub(r"\([0-9.]+ ms, [0-9.]+ µs per flow\)", "(TIME)", text)


ANALYSES = {
    "ros1": [["stats"], ["flow", "--from", "^/lidar$", "--to", "^/lidar_filtered$"],
             ["flow", "--from", "^/(lidar|imu|camera)$", "--to", "^/plan$"], ["executor"], ["why", "--top", "3"]],
    "rclpy": [["stats"], ["flow", "--from", "^/(lidar|imu)$", "--to", "^/cmd$"], ["executor"], ["why", "--top", "3"]],
    "stock": [["stats"], ["flow", "--from", "^/raw$", "--to", "^/filtered$"], ["executor"], ["why", "--top", "3"]],
    "rclcpp": [["stats"], ["flow", "--from", "^/image$", "--to", "^/cmd$"], ["executor"], ["why", "--top", "3"]],
    **{name: [["stats"], ["flow", "--from", f, "--to", t], ["executor"], ["why", "--top", "3"]]
       for name, (_c, f, t) in ROS1_EXAMPLES.items()},
}
BUDGETS = {"ros1": "^/lidar$", "rclpy": "^/imu$", "stock": "^/raw$", "rclcpp": "^/image$", "ros1-helpers": "^/hs/scan$",
           "ros1-onebinary": "^/ob/scan$", "ros1-unannotated": "^/sensing/lidar$", "ros1-manipulation": "^/joint_states$"}
ROS1 = ["ros1", *ROS1_EXAMPLES]
#: The ROS 1 recordings also loaded, exported and reported from the wheel (each such pair of runs
#: costs ~25 s of CI's 30 minutes): the demo's, and the rospy one with actionlib and tf2 (the
#: shape least like it); every ROS 1 recording gets the analyses above.
ROS1_WHOLE = ["ros1", "ros1-manipulation"]


@live
@pytest.mark.parametrize("name", ["rclpy", "stock", "rclcpp", *ROS1])
def test_analyses_exit_0_and_equal_the_checkouts(env, recordings, name):
    if name not in recordings:
        pytest.skip("rclcpp is not built here (scripts/rclcpp_setup.sh --prefix: ../shared/third_party absent)")
    trace = recordings[name]
    for args in ANALYSES[name]:
        mine = roscope(env, *args, trace)
        assert mine.returncode == 0, (args, mine.stdout[-2000:], mine.stderr[-2000:])
        theirs = checkout(*args, trace, cwd=env["work"])
        assert theirs.returncode == 0, theirs.stderr[-2000:]
        assert _untimed(mine.stdout) == _untimed(theirs.stdout), args
        assert len(mine.stdout.splitlines()) > 1, (args, mine.stdout)
    budgets = env["work"] / f"budgets-{name}.yaml"
    budgets.write_text(f"budgets:\n  - topic: '{BUDGETS[name]}'\n    rate: {{min: 1 Hz}}\n")
    p = roscope(env, "check", budgets, trace)
    assert p.returncode == 0, p.stdout + p.stderr
    p = roscope(env, "info", trace)
    assert p.returncode == 0 and "tracers preloaded" in p.stdout, p.stdout + p.stderr
    if name not in ROS1_WHOLE:
        return
    # what `make demo` runs besides on a ROS 1 recording: load, then the analyses on the database; export
    db = env["work"] / f"{name}.duckdb"
    p = roscope(env, "load", trace, "-o", db)
    assert p.returncode == 0, p.stdout + p.stderr
    mine, theirs = roscope(env, "stats", db), checkout("stats", db, cwd=env["work"])
    assert mine.returncode == theirs.returncode == 0 and mine.stdout == theirs.stdout, (mine.stderr, theirs.stderr)
    mine_pf, theirs_pf = env["work"] / f"{name}-mine.pftrace", env["work"] / f"{name}-theirs.pftrace"
    p = roscope(env, "export", trace, "--perfetto", mine_pf)
    assert p.returncode == 0, p.stdout + p.stderr
    p = checkout("export", trace, "--perfetto", theirs_pf, cwd=env["work"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert mine_pf.read_bytes() == theirs_pf.read_bytes() and mine_pf.stat().st_size > 1000


@pytest.fixture(scope="module")
def ci_env(wheel, env, tmp_path_factory) -> dict:
    """docs/ci.md's recipe: a second fresh virtual environment with `pip install "WHEEL[report]"`
    (the extra a CI job needs for `roscope report` and the pytest plugin's reports)."""
    base = tmp_path_factory.mktemp("package-ci")
    py = _install(base, f"{wheel}[report]")
    work = base / "work"
    work.mkdir()
    return {**env, "base": base, "venv": py.parent.parent, "roscope": py.parent / "roscope", "py": py, "work": work}


@live
def test_the_ci_recipe(ci_env):
    """docs/ci.md's steps, as written there, in the environment its pip line makes: doctor
    --start-daemon, record --kernel of a ROS 1 system, check --junit --github, report: each
    exits 0 (kernel data recorded, the JUnit file written, the report a page)."""
    w = ci_env["work"]
    p = roscope(ci_env, "doctor", "--start-daemon")
    assert p.returncode == 0, p.stdout + p.stderr
    p = roscope(ci_env, "record", "-o", w / "trace", "--kernel", "--", REPO / "examples" / "ros1_pipeline" / "system.sh", "-d", "2",
                "-g", w / "gt")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (w / "trace" / "perf" / "perf.data").is_file()
    (w / "budgets.yaml").write_text("budgets:\n  - topic: '^/lidar$'\n    rate: {min: 1 Hz}\n"
                                    "  - callback: '^/planner '\n    duration: {p99: 1000 ms}\n")
    p = roscope(ci_env, "check", "budgets.yaml", "trace", "--junit", "check.xml", "--github")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "<testsuite" in (w / "check.xml").read_text()
    p = roscope(ci_env, "report", "trace", "-o", "report.html")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (w / "report.html").read_text().rstrip().endswith("</html>")


@live
@pytest.mark.parametrize("name", ROS1_WHOLE)
def test_report_of_each_ros1_example_equals_the_checkouts(ci_env, recordings, name):
    """`roscope report` (the [report] extra) on each ROS 1 example's recording: the page the
    checkout writes for the same trace."""
    trace = recordings[name]
    _c, f, t = ROS1_EXAMPLES.get(name, (None, "^/(lidar|imu|camera)$", "^/plan$"))
    mine, theirs = ci_env["work"] / f"{name}-mine.html", ci_env["work"] / f"{name}-theirs.html"
    p = roscope(ci_env, "report", trace, "-o", mine, "--from", f, "--to", t)
    assert p.returncode == 0, p.stdout + p.stderr
    p = checkout("report", trace, "-o", theirs, "--from", f, "--to", t, cwd=ci_env["work"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert _unstamped(mine.read_text()) == _unstamped(theirs.read_text())


def _unstamped(html: str) -> str:
    """A report without what differs between two writes of it (the time it was made)."""
    return re.sub(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?", "TIME", html)


def _needed(elf: Path) -> list[str]:
    """The libraries an ELF program needs, as readelf (binutils) reads them: the oracle."""
    p = run(["readelf", "-d", elf])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", p.stdout)


def test_which_ros_a_command_runs():
    """roscope.record.tracer.ros_of_command on real programs, against what readelf says they
    link and what their scripts say: ROS 1's roscpp programs and launch script, an rclcpp
    program, a program of neither; and the environment a ROS's setup.bash leaves first."""
    from roscope.record.tracer import ros1_wanted, ros_of_command
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    bare = {k: v for k, v in os.environ.items() if k not in ("ROS_VERSION", "AMENT_PREFIX_PATH", "ROS_ROOT")}
    cases = []
    for elf in sorted((REPO / "examples" / "ros1_pipeline" / "build").glob("*")) + \
            sorted((REPO / "examples" / "ros2_cpp_pipeline" / "build").glob("*")) + [Path("/bin/true")]:
        if not elf.is_file() or not os.access(elf, os.X_OK):
            continue
        needed = _needed(elf)
        want = "ros1" if any(n.startswith("libroscpp.so") for n in needed) else \
            "ros2" if any(n.startswith(("librclcpp.so", "librcl.so", "libtracetools.so")) for n in needed) else None
        cases.append(([str(elf)], want))
    script = REPO / "examples" / "ros1_pipeline" / "system.sh"
    assert "rosmaster" in script.read_text()
    cases.append((["bash", str(script), "-d", "1"], "ros1"))
    assert {w for _, w in cases} >= {"ros1", None}, cases
    for command, want in cases:
        assert ros_of_command(command, bare)[0] == want, (command, want, ros_of_command(command, bare))
    # a sourced ROS says which it is, whatever the program
    assert ros_of_command(["/bin/true"], {**bare, "ROS_VERSION": "2"})[0] == "ros2"
    assert ros_of_command(["/bin/true"], {**bare, "ROS_VERSION": "1"})[0] == "ros1"
    assert ros1_wanted(["/bin/true"], {**bare, "ROS_VERSION": "2"})[0] is False
