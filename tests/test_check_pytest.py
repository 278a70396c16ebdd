"""roscope's pytest plugin (roscope.pytest_plugin), run by pytester on the real ROS 2 example:
a test records examples/ros2_pipeline (Jazzy from PyPI) through the roscope_recording
fixture and passes; the same assertions fail on the session's recording of the system with
ROS2_PIPELINE_SLOW=mapper.plan_path:20 (conftest.ros2_pipeline_dataset, through the
roscope_trace fixture), the message naming the measured value, the limit, the `why` split
and the HTML report written. The same budgets file as tests/test_check.py serves the
roscope_budgets marker. The recording fixture also records the ROS 1 example (its env()
preloads roscope's ROS 1 tracer)."""
from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess

import pytest

from tests.support import ros2_truth

pytestmark = [pytest.mark.ros2, pytest.mark.lttng]
pytest_plugins = ["pytester"]

HERE = os.path.dirname(os.path.abspath(__file__))
BUDGETS = os.path.join(HERE, "data", "check", "ros2_pipeline.yaml")

INNER = '''
import os, subprocess
import pytest
from roscope.pytest_plugin import ms, pct

VENV = {venv!r}
LAUNCH = {launch!r}
DATASET = {dataset!r}


def run_system(recording, gt):
    env = recording.env()
    env["PATH"] = VENV + "/bin:" + env["PATH"]
    env["VIRTUAL_ENV"] = VENV
    subprocess.run(["python3", LAUNCH, "-d", "3", "-g", str(gt)], env=env, check=True, timeout=120)


def mapper_plans_fast(trace):
    assert trace.lost == 0
    assert trace.topic("^/imu$").rate >= 5
    assert trace.callback("^/mapper .*plan_path").duration.p50 <= ms(10)


@pytest.mark.roscope_record(kernel=True, ros2=VENV)
def test_mapper_plans_fast(roscope_recording, tmp_path):
    run_system(roscope_recording, tmp_path / "gt")
    mapper_plans_fast(roscope_recording.stop())


@pytest.mark.roscope_trace(DATASET, run="slowed")
def test_mapper_plans_fast_slowed(roscope_trace):
    mapper_plans_fast(roscope_trace)


@pytest.mark.roscope_budgets({budgets!r})
@pytest.mark.roscope_trace(DATASET, run="base")
def test_budgets_file(roscope_trace):
    assert roscope_trace.flow("^/lidar$", "^/fused$").latency.p50 <= ms(200)


@pytest.mark.roscope_budgets({budgets!r})
@pytest.mark.roscope_trace(DATASET, run="slowed")
def test_budgets_file_slowed(roscope_trace):
    assert roscope_trace.flow("^/lidar$", "^/fused$").latency.p50 <= ms(200)
'''


def _plugin_args() -> list[str]:
    """`-p roscope.pytest_plugin` unless roscope is installed with its pytest11 entry point."""
    eps = importlib.metadata.entry_points(group="pytest11")
    return [] if any(e.value == "roscope.pytest_plugin" for e in eps) else ["-p", "roscope.pytest_plugin"]


def _section(out: str, test: str) -> str:
    """The failure section of `test` in pytest's output."""
    m = re.search(rf"_{{3,}} {test} _{{3,}}\n(.*?)(?=\n_{{3,}} test_|\n=+ short test summary)", out, re.S)
    assert m, out
    return m.group(1)


def test_the_plugin_passes_the_system_and_fails_it_slowed(pytester, monkeypatch, ros2_pipeline_dataset):
    """One inner pytest run: a test records the system with roscope_recording (3 s) and passes; the same
    assertions fail on the session's recording of the slowed system (roscope_trace, a dataset run);
    the roscope_budgets marker with the budgets file of tests/test_check.py passes on the unchanged
    recording and fails on the slowed one."""
    venv = ros2_truth.env_of("jazzy")
    pytester.makepyfile(test_system=INNER.format(venv=str(venv), launch=str(ros2_truth.EXAMPLE / "launch.py"),
                                                budgets=BUDGETS, dataset=ros2_pipeline_dataset["dataset"]))
    monkeypatch.delenv("ROS2_PIPELINE_SLOW", raising=False)
    r = pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", "-rA", timeout=600)
    out = r.stdout.str()
    print(out)  # the failure messages, for the record
    r.assert_outcomes(passed=2, failed=2)
    assert re.search(r"PASSED test_system.py::test_mapper_plans_fast\n", out), out
    assert "PASSED test_system.py::test_budgets_file\n" in out, out

    slowed = _section(out, "test_mapper_plans_fast_slowed")
    assert re.search(r"duration p50 of /mapper /plan_path __main__\.plan_path: measured (\d+\.\d+) ms, "
                     r"limit <= 10\.000 ms", slowed), slowed
    measured = float(re.search(r"measured (\d+\.\d+) ms", slowed).group(1))
    assert measured >= 20
    assert re.search(r"where the time went \(roscope why\): on_cpu [\d.]+ %, cpu_wait [\d.]+ %", slowed), slowed
    report = re.search(r"report of the trace: (\S+\.html)", slowed).group(1)
    assert report.startswith(str(pytester.path / "roscope-reports"))
    html = open(report, encoding="utf-8").read()
    assert "<html" in html[:2000].lower() and "/mapper" in html

    budgets = _section(out, "test_budgets_file_slowed")
    assert "roscope budgets" in budgets and "FAIL  [mapper plans fast] duration p50 of /mapper /plan_path" in budgets
    assert "report of the trace:" in budgets


INNER_ROS1 = '''
import subprocess
import pytest
from roscope.pytest_plugin import ms

SYSTEM = {system!r}


def test_planner_ticks_fast(roscope_recording, tmp_path):
    subprocess.run([SYSTEM, "-d", "3", "-g", str(tmp_path / "gt")], env=roscope_recording.env(), check=True,
                   timeout=120)
    trace = roscope_recording.stop()
    assert trace.lost == 0
    assert trace.callback("^/planner timer .*Planner::onTimer").duration.p50 <= ms(10)
    assert trace.flow("^/lidar$", "^/fused$").latency.p50 <= ms(200)
'''


@pytest.mark.ros1
def test_the_recording_fixture_records_a_ros1_system(pytester):
    """roscope_recording's env() preloads the ROS 1 tracer: the system started with it is traced."""
    repo = os.path.dirname(HERE)
    example = os.path.join(repo, "examples", "ros1_pipeline")
    for d in (os.path.join(repo, "instrument", "ros1"), example):
        subprocess.run(["make", "-s", "-C", d], check=True, stdout=subprocess.DEVNULL)
    pytester.makepyfile(test_ros1=INNER_ROS1.format(system=os.path.join(example, "system.sh")))
    r = pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", timeout=600)
    assert r.ret == 0, r.stdout.str()
    r.assert_outcomes(passed=1)
