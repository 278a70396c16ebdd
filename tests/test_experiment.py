"""`roscope experiment` on tiny real systems (a shell script and a Python driver, real
processes, real signals, real /proc), and its statistics against hand-computed values.

The tiny system (written into tmp_path): a shell script that writes its own
Cpus_allowed_list (read by the kernel, through the script's own /proc/self/status)
into its directory, marks itself ready, and dies on purpose in the 'died' scenario.
The driver prints metrics from a fixed sequence (so that two runs have the same
distribution), crashes, hangs or reports a failure kind, as the scenario says.
"""
from __future__ import annotations

import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from roscope.experiment import stattests

SYSTEM = r"""#!/bin/bash
trap 'kill $child 2>/dev/null; exit 0' INT TERM
sleep 1000 & child=$!
grep Cpus_allowed_list /proc/$$/status > "$ROSCOPE_SYSTEM_DIR/self_cpus"
grep Cpus_allowed_list /proc/$child/status > "$ROSCOPE_SYSTEM_DIR/child_cpus"
touch "$ROSCOPE_SYSTEM_DIR/ready"
n=0
while true; do
  sleep 0.1; n=$((n+1))
  if [ "$ROSCOPE_SCENARIO" = died ] && [ $n -ge 8 ]; then echo "dying on purpose"; exit 3; fi
done
"""

DRIVER = r"""
import json, os, sys, time
sc = os.environ["ROSCOPE_SCENARIO"]
i = int(os.environ["ROSCOPE_TRIAL_INDEX"])
level = os.environ.get("ROSCOPE_LEVEL")
if sc == "crash":
    print("about to crash", flush=True); print("boom", file=sys.stderr); sys.exit(4)
if sc in ("hang", "died"):
    print("hanging", flush=True); time.sleep(100)
if sc == "fail":
    print(json.dumps({"status": "goal_failed", "t1_ms": 5})); sys.exit(1)
if sc == "bisect" and float(level) > 37:
    print(json.dumps({"status": "overloaded"})); sys.exit(1)
if sc == "slow":
    time.sleep(float(os.environ.get("SLOW_SLEEP", "0")))
off = 20.0 if sc == "slow" else 0.0
print(json.dumps({"t1_ms": [10.0, 12.0, 11.0, 13.0, 9.0, 10.5][i % 6] + off, "t2_ms": 100 + i}))
"""


def _write_experiment(tmp: Path, scenarios: str, *, trials: int = 1, timeout: float = 2.0, name: str = "tiny") -> Path:
    (tmp / "system.sh").write_text(SYSTEM)
    (tmp / "system.sh").chmod(0o755)
    (tmp / "driver.py").write_text(DRIVER)
    y = tmp / f"{name}.yaml"
    y.write_text(textwrap.dedent(f"""\
        name: {name}
        trials: {trials}
        system:
          start: ./system.sh
          ready: {{command: [sh, -c, 'test -e "$ROSCOPE_SYSTEM_DIR/ready"'], timeout: 5}}
          stop_timeout: 2
        driver:
          command: [{sys.executable}, -S, driver.py]
          timeout: {timeout}
        metrics:
          T1: {{from: driver, key: t1_ms, weight: 1.0, budget: 20}}
          T2: {{from: driver, key: t2_ms}}
          T4: {{from: wall, weight: 1.5, budget: 5000}}
        scenarios:
        """) + textwrap.indent(textwrap.dedent(scenarios), "  "))
    return y


def _results(run: Path) -> dict:
    with open(run / "trials.csv") as f:
        return {r["trial_id"]: r for r in csv.DictReader(f)}


def _roscope(roscope_cmd, *args, **kw):
    return subprocess.run([*roscope_cmd, *args], capture_output=True, text=True, timeout=kw.pop("timeout", 180), **kw)


# ---------------------------------------------------------------- statistics


def test_mann_whitney_exact_hand_computed():
    # a entirely below b: U1 = 0; P(U <= 0) = 1 / C(6,3) = 1/20, two-sided 0.1.
    r = stattests.mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert (r["u"], r["method"]) == (0.0, "exact")
    assert r["p"] == pytest.approx(0.1)
    # a = 1,3,5 vs b = 2,4,6: pairs with a > b: (3>2), (5>2), (5>4) -> U1 = 3. Arrangements
    # with U <= 3 (partitions of u into at most 3 parts <= 3): 1 + 1 + 2 + 3 = 7 of 20 -> p = 0.7.
    r = stattests.mann_whitney_u([1, 3, 5], [2, 4, 6])
    assert r["u"] == 3.0 and r["p"] == pytest.approx(0.7)
    # 5 vs 5 fully separated: 2 / C(10,5) = 2/252.
    assert stattests.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])["p"] == pytest.approx(2 / 252)
    # symmetric in direction
    assert stattests.mann_whitney_u([6, 7, 8, 9, 10], [1, 2, 3, 4, 5])["u"] == 25.0


def test_mann_whitney_normal_with_ties_hand_computed():
    # a = 1,2,2,3; b = 2,3,4,5,6. Pooled ranks: 1 -> 1; the three 2s -> 3; the two 3s -> 5.5;
    # 4, 5, 6 -> 7, 8, 9. R_a = 1 + 3 + 3 + 5.5 = 12.5, U1 = 12.5 - 4*5/2 = 2.5, mean 10.
    # Ties t = 3, 2: sum(t^3 - t) = 24 + 6 = 30; var = 4*5/12 * (10 - 30/(9*8)) = 15.97222.
    # z = (|2.5 - 10| - 0.5) / sqrt(15.97222) = 1.751521. From a normal table, 1 - Phi(1.75) = 0.040059
    # and phi(1.75) = 0.086277, so 1 - Phi(z) = 0.040059 - 0.001521 * 0.086277 = 0.039928: p = 0.079856.
    r = stattests.mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 5, 6])
    assert r["method"] == "normal" and r["u"] == 2.5
    assert r["p"] == pytest.approx(0.079856, abs=5e-6)
    assert stattests.mann_whitney_u([4, 4, 4], [4, 4])["p"] == 1.0


def test_bootstrap_ci():
    # constant samples: every resample has the same means, the interval is the point 5 - 2.
    assert stattests.bootstrap_diff_ci([2, 2, 2], [5, 5, 5, 5]) == (3.0, 3.0)
    # 0/1 samples of 400 with means 0.5 and 0.6: the normal-theory 95% interval is
    # 0.1 +- 1.96 * sqrt(0.25/400 + 0.24/400) = 0.1 +- 0.0686; the bootstrap's must be close.
    a = [0] * 200 + [1] * 200
    b = [0] * 160 + [1] * 240
    lo, hi = stattests.bootstrap_diff_ci(a, b, resamples=4000)
    half = 1.96 * math.sqrt(0.25 / 400 + 0.24 / 400)
    assert lo == pytest.approx(0.1 - half, abs=0.012) and hi == pytest.approx(0.1 + half, abs=0.012)


def test_describe_hand_computed():
    d = stattests.describe([1, 2, 3, 4])
    assert d["count"] == 4 and d["mean"] == 2.5 and d["std"] == pytest.approx(math.sqrt(5 / 3))
    # linear interpolation: p50 between 2 and 3; p90 at rank 0.9 * 3 = 2.7 -> 3 + 0.7
    assert d["p50"] == 2.5 and d["p90"] == pytest.approx(3.7)


# ---------------------------------------------------------------- running


@pytest.mark.slow
def test_failure_kinds_diagnostics_and_continuation(tmp_path, roscope_cmd):
    y = _write_experiment(tmp_path, """\
        - name: ok
        - name: crash
        - name: hang
        - name: died
        - name: fail
        - name: after
        """)
    run = tmp_path / "run"
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(run))
    assert p.returncode == 0, p.stderr
    res = _results(run)
    status = {k: v["status"] for k, v in res.items()}
    assert status == {"ok_001": "success", "crash_001": "driver_crash", "hang_001": "timeout",
                      "died_001": "system_died", "fail_001": "goal_failed", "after_001": "success"}
    assert float(res["ok_001"]["T1"]) == 12.0 and float(res["ok_001"]["T2"]) == 101.0
    # score: (1 * 12/20 + 1.5 * wall/5000) / 2.5
    wall = float(res["ok_001"]["T4"])
    assert float(res["ok_001"]["score"]) == pytest.approx((12 / 20 + 1.5 * wall / 5000) / 2.5)
    trials = run / "trials"
    assert not (trials / "ok_001" / "diagnostics.txt").exists()
    crash = (trials / "crash_001" / "diagnostics.txt").read_text()
    assert "exit status 4" in crash and "boom" in crash and "about to crash" in crash
    hang = json.loads((trials / "hang_001" / "result.json").read_text())
    assert "timeout of 2 s" in hang["reason"] and 2000 <= hang["wall_ms"] < 4000
    died = (trials / "died_001" / "diagnostics.txt").read_text()
    assert "dying on purpose" in died and "exited (status 3)" in died
    assert float(res["fail_001"]["T1"]) == 5.0   # metrics of a failed trial are kept
    # nothing roscope started is left: no process of ours still runs the tiny system
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "system.sh")], capture_output=True, text=True).stdout
    assert left.strip() == ""
    summary = json.loads((run / "summary.json").read_text())
    assert {s["condition"]: s["failures"] for s in summary}["hang"] == {"timeout": 1}
    man = json.loads((run / "manifest.json").read_text())
    assert man["state"] == "complete" and man["cpu_count"] == os.cpu_count() and man["kernel"].startswith("Linux")
    assert man["git"]["roscope"]["commit"]
    # results are never overwritten
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(run))
    assert p.returncode == 1 and "never overwritten" in p.stderr and "Traceback" not in p.stderr


def test_ctrl_c_then_resume(tmp_path, roscope_cmd):
    y = _write_experiment(tmp_path, """\
        - name: ok
        """, trials=4)
    run = tmp_path / "run"
    p = subprocess.Popen([*roscope_cmd, "experiment", "run", str(y), "-o", str(run)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (run / "trials" / "ok_002" / "driver.stdout").exists():
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    man = json.loads((run / "manifest.json").read_text())
    assert man["state"] == "interrupted"
    done = _results(run)
    assert "ok_001" in done and "ok_004" not in done
    for r in done.values():   # the tables hold exactly the finished trials
        assert (run / "trials" / r["trial_id"] / "result.json").is_file()
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "system.sh")], capture_output=True, text=True).stdout
    assert left.strip() == ""
    first = (run / "trials" / "ok_001" / "result.json").read_text()
    p2 = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(run), "--resume")
    assert p2.returncode == 0, p2.stderr
    res = _results(run)
    assert sorted(res) == ["ok_001", "ok_002", "ok_003", "ok_004"]
    assert all(r["status"] == "success" for r in res.values())
    assert (run / "trials" / "ok_001" / "result.json").read_text() == first   # kept, not rerun
    assert json.loads((run / "manifest.json").read_text())["state"] == "complete"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to tell a cpuset from no cpuset")
def test_cpuset_verified_against_proc(tmp_path, roscope_cmd):
    y = _write_experiment(tmp_path, """\
        - name: pinned
          cpuset: {cpus: 1}
        - name: free
        """)
    run = tmp_path / "run"
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(run))
    assert p.returncode == 0, p.stderr
    want = str(sorted(os.sched_getaffinity(0))[-1])
    sdir = run / "trials" / "pinned_001"
    # the kernel's view, read by the system's own processes
    assert (sdir / "self_cpus").read_text().split()[-1] == want
    assert (sdir / "child_cpus").read_text().split()[-1] == want
    r = json.loads((sdir / "result.json").read_text())
    assert r["cpuset"]["verified"] and r["cpuset"]["cpus"] == want
    comms = {x["comm"] for x in r["cpuset"]["processes"]}
    assert {"system.sh", "sleep"} <= comms
    assert all(x["cpus_allowed_list"] == want for x in r["cpuset"]["processes"])
    assert r["cpuset"]["monitor"]["wrong"] == []
    free = (run / "trials" / "free_001" / "self_cpus").read_text().split()[-1]
    assert free != want
    assert "verified" in _roscope(roscope_cmd, "experiment", "report", str(run)).stdout
    with open(run / "summary.csv") as f:
        verified = {r["condition"]: r["cpuset_verified"] for r in csv.DictReader(f)}
    assert verified == {"pinned": "yes", "free": ""}


@pytest.mark.slow
def test_compare_same_and_shifted(tmp_path, roscope_cmd):
    y = _write_experiment(tmp_path, """\
        - name: base
        - name: slow
        """, trials=6)
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(d))
        assert p.returncode == 0, p.stderr
    p = _roscope(roscope_cmd, "experiment", "compare", str(a), str(b), "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    base = next(c for c in res["comparisons"] if c["a"] == "base")
    t1 = next(m for m in base["metrics"] if m["metric"] == "T1")
    assert t1["verdict"] == "no significant difference" and t1["diff"] == 0.0 and t1["p"] == 1.0
    assert t1["ci_low"] <= 0 <= t1["ci_high"]
    p = _roscope(roscope_cmd, "experiment", "compare", str(a), str(a), "--a", "base", "--b", "slow", "--json")
    t1 = next(m for m in json.loads(p.stdout)["comparisons"][0]["metrics"] if m["metric"] == "T1")
    # +20 ms on every trial: 6 vs 6 fully separated, exact p = 2 / C(12, 6) = 2/924
    assert t1["verdict"] == "worse" and t1["diff"] == pytest.approx(20.0) and t1["p"] == pytest.approx(2 / 924)
    assert 0 < t1["ci_low"] < 20.0 < t1["ci_high"] < 40.0
    text = _roscope(roscope_cmd, "experiment", "compare", str(a), str(b)).stdout
    assert "no significant difference" in text
    html = tmp_path / "a.html"
    p = _roscope(roscope_cmd, "experiment", "report", str(a), "--html", str(html))
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert "Distributions" in page and '"name":"slow"' in page and "<script" in page
    # the box of condition 'slow' carries the six T1 values the driver printed (10..13 + 20)
    assert '"y":[32.0,31.0,33.0,29.0,30.5,30.0]' in page
    p = _roscope(roscope_cmd, "experiment", "report", str(a), "--html", str(html))
    assert p.returncode == 1 and "already exists" in p.stderr
    lst = _roscope(roscope_cmd, "experiment", "list", str(tmp_path), "--json")
    assert {Path(r["dir"]).name for r in json.loads(lst.stdout)} == {"a", "b"}


@pytest.mark.slow
def test_breaking_point_bisection(tmp_path, roscope_cmd):
    y = _write_experiment(tmp_path, """\
        - name: bisect
          cpu_load: {workers: 1, load: 5}
          breaking_point: {param: cpu_load.load, low: 10, high: 90, trials: 1, resolution: 5}
        """)
    run = tmp_path / "run"
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(run))
    assert p.returncode == 0, p.stderr
    bp = json.loads((run / "breaking_points.json").read_text())["bisect"]
    # the driver fails above 37: levels 10 ok, 90 fail, 50 fail, 30 ok, 40 fail, 35 ok -> 40
    assert [t["level"] for t in bp["tried"]] == [10, 90, 50, 30, 40, 35]
    assert (bp["breaking_point"], bp["highest_passing"]) == (40, 35)
    assert "first failing level 40" in p.stdout


def test_bad_experiment_files(tmp_path, roscope_cmd):
    y = tmp_path / "bad.yaml"
    y.write_text("system: {start: x}\ndriver: {command: y}\nscenarios: [{name: a, cpu_lod: {}}]\n")
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(tmp_path / "r"))
    assert p.returncode == 1 and str(y) in p.stderr and "cpu_lod" in p.stderr and "Traceback" not in p.stderr
    y.write_text("system: {start: x}\ndriver: {command: y}\nscenarios: [{name: a, msg_load: {rate: 10}}]\n")
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(tmp_path / "r"))
    assert p.returncode == 1 and "ros: ros1" in p.stderr and not (tmp_path / "r").exists()
    y.write_text("system: [\n")
    p = _roscope(roscope_cmd, "experiment", "run", str(y))
    assert p.returncode == 1 and "not valid YAML" in p.stderr
    p = _roscope(roscope_cmd, "experiment", "report", str(tmp_path))
    assert p.returncode == 1 and "not an experiment results directory" in p.stderr


# ---------------------------------------------------------------- the ROS 1 example

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ros1_manipulation"


def _callback_start_jitter_ms(trace_dir: Path, symbol_part: str) -> float:
    """Sample std of the intervals between the starts of the callback whose registered symbol
    contains `symbol_part`, decoded by babeltrace2 (the independent oracle)."""
    import statistics as pystats

    from tests.support.oracle import Reading

    cbs, starts = set(), []
    for ev in Reading(str(trace_dir)).events():
        if ev["name"] == "roscope_ros1:callback_register" and symbol_part in ev["payload"]["symbol"]:
            cbs.add((ev["context"].get("vpid"), ev["payload"]["callback"]))
        elif ev["name"] == "roscope_ros1:callback_start" and (ev["context"].get("vpid"), ev["payload"]["callback"]) in cbs:
            starts.append(ev["ts"])
    starts.sort()
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    return pystats.stdev(gaps) / 1e6


@pytest.mark.ros1
@pytest.mark.lttng
def test_manipulation_example_one_traced_trial(tmp_path, roscope_cmd):
    subprocess.run(["make", "-s", "-C", str(EXAMPLE.parent.parent / "instrument" / "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", str(EXAMPLE)], check=True)
    import yaml

    cfg = yaml.safe_load((EXAMPLE / "experiment.yaml").read_text())
    cfg["trials"] = 1
    cfg["scenarios"] = [{"name": "baseline"}]
    y = EXAMPLE / f".test-{os.getpid()}.yaml"     # beside system.sh and driver.py (relative commands)
    y.write_text(yaml.safe_dump(cfg))
    try:
        p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(tmp_path / "run"), timeout=240)
    finally:
        y.unlink()
    assert p.returncode == 0, p.stderr
    r = json.loads((tmp_path / "run" / "trials" / "baseline_001" / "result.json").read_text())
    assert r["status"] == "success", (r.get("reason"), (tmp_path / "run" / "trials" / "baseline_001" / "driver.stderr").read_text())
    m = r["metrics"]
    # the driver's own clock: T4 is planning plus execution (two goal round trips apart)
    assert 0 < m["T1"] < 5000 and 100 < m["T2"] < 20000 and m["T4"] == pytest.approx(m["T1"] + m["T2"], abs=5.0)
    assert r["trace"]["state"] == "complete"
    # T5 (the simulator's step jitter) and T3 (the control loop's) against babeltrace2's decoding of the trace
    trace = tmp_path / "run" / "trials" / "baseline_001" / "trace"
    assert m["T5"] == pytest.approx(_callback_start_jitter_ms(trace, "ArmSim.step"), rel=1e-6)
    assert m["T3"] == pytest.approx(_callback_start_jitter_ms(trace, "Controller.loop"), rel=1e-6)
    # every process of the stack was seen and stopped
    comms = " ".join(x["cmdline"] for x in r["system_processes"])
    for node in ("sim", "planner", "controller", "state_publisher"):
        assert f"nodes.py {node}" in comms
    assert r["system_stop"]["left"] == []
    # overhead figures over the driver's window: roscope's own process, the stack, LTTng's daemons
    assert 0 < r["harness_cpu_s"] < r["system_cpu_s"] and r["lttng_cpu_s"] >= 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf (linux-perf)")
def test_profile_flame_graph(tmp_path, roscope_cmd):
    (tmp_path / "system.sh").write_text("#!/bin/bash\ntrap 'kill $b; exit 0' INT TERM\n"
                                        "sha256sum /dev/zero & b=$!\ntouch \"$ROSCOPE_SYSTEM_DIR/ready\"\n"
                                        "while true; do sleep 0.1; done\n")
    (tmp_path / "system.sh").chmod(0o755)
    y = tmp_path / "p.yaml"
    y.write_text(textwrap.dedent(f"""\
        trials: 1
        system: {{start: ./system.sh, stop_timeout: 2, ready: {{command: [sh, -c, 'test -e "$ROSCOPE_SYSTEM_DIR/ready"'], delay: 0.5}}}}
        driver: {{command: [{sys.executable}, -S, -c, 'import time, json; time.sleep(1.5); print(json.dumps({{"x": 1}}))']}}
        scenarios: [{{name: p}}]
        """))
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(tmp_path / "run"), "--profile")
    assert p.returncode == 0, p.stderr
    tdir = tmp_path / "run" / "trials" / "p_001"
    r = json.loads((tdir / "result.json").read_text())
    perf_log = (tdir / "profile" / "perf.log").read_text(errors="replace") if (tdir / "profile" / "perf.log").exists() else ""
    assert r["status"] == "success" and r["profile"]["perf_data"] == "profile/perf.data", (r.get("reason"), r.get("profile"), perf_log)
    # perf's own reading of what it recorded: the system's busy process is in the samples
    rep = subprocess.run(["perf", "report", "-i", str(tdir / "profile" / "perf.data"), "--stdio", "--sort", "comm"],
                         capture_output=True, text=True, timeout=120).stdout
    assert "sha256sum" in rep, (rep[-2000:], perf_log, r["system_processes"])
    if shutil.which("inferno-flamegraph") or shutil.which("flamegraph.pl"):
        svg = (tdir / "profile" / "flame.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "sha256sum" in svg
    else:
        assert r["profile"]["flamegraph"] is None and "cargo install inferno" in r["profile"]["note"]


def test_trace_metrics_on_a_shared_ros2_trace(shared_traces):
    """Trace metrics by name on a real ROS 2 trace: the executor thread of 'ping' and its
    callback, against babeltrace2's count of rclcpp_executor_execute and callback_start."""
    from roscope.experiment.tracemetrics import trace_metrics

    from tests.support.oracle import Reading

    trace = Path(shared_traces) / "ros2" / "pingpong-rolling-2021"
    execs: dict = {}
    per_cb: dict = {}
    for ev in Reading(str(trace)).events():
        if ev["name"] in ("ros2:rclcpp_executor_execute", "ros2:callback_start"):
            key = (ev["name"], ev["context"].get("procname"))
            execs[key] = execs.get(key, 0) + 1
        if ev["name"] == "ros2:callback_start" and ev["context"].get("procname") == "ping":
            per_cb[ev["payload"]["callback"]] = per_cb.get(ev["payload"]["callback"], 0) + 1
    metrics = {"ex": {"from": "trace", "executor": "^ping$", "stat": "executions"},   # the process (roscope.selector)
               "util": {"from": "trace", "executor": "^/pong$", "stat": "utilization"},  # a node it ran
               "runs": {"from": "trace", "callback": "ping", "stat": "count"},
               "none": {"from": "trace", "executor": "^nothing$", "stat": "utilization"}}
    vals, warns = trace_metrics(trace, metrics)
    assert vals["ex"] == execs[("ros2:rclcpp_executor_execute", "ping")]
    assert 0.0 <= vals["util"] <= 1.0
    assert "none" not in vals and any("no executor thread matches" in w for w in warns)
    assert vals["runs"] in set(per_cb.values())   # the runs of one of ping's callbacks, as bt2 counts them


def test_documented_experiment_file_is_valid(tmp_path):
    """The annotated experiment file of docs/experiment.md is accepted as it is written."""
    import re

    from roscope.experiment import config

    doc = (Path(__file__).resolve().parent.parent / "docs" / "experiment.md").read_text()
    block = re.search(r"## The experiment file\n\n```yaml\n(.*?)```", doc, re.S).group(1)
    y = tmp_path / "doc.yaml"
    y.write_text(block)
    exp = config.load(y)
    ids = [c.id for s in exp.scenarios for c in config.conditions(s)]
    assert ids == ["baseline", "cpu_load", "msg_load@rate=250", "msg_load@rate=1000", "cpuset@cpus=1", "cpuset@cpus=2",
                   "pinned_and_loaded"]
    assert exp.scenarios[-1]["breaking_point"]["high"] == 4000 and exp.metrics["busy"]["stat"] == "utilization"


# ---------------------------------------------------------------- issue 31: bounded, escaped, checked

BOUNDS_DRIVER = r"""
import os, sys
sc = os.environ["ROSCOPE_SCENARIO"]
if sc == "nested":
    print("[" * 200000)
elif sc == "bigint":
    print('{"bigint": ' + "9" * 400 + ', "t1_ms": 3.5, "nan": NaN}')
elif sc == "huge":
    chunk = b"x" * (1 << 20)
    for _ in range(96):
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.write(b"\n")
elif sc == "formula":
    print('{"=HYPERLINK(\\"http://example.com\\",\\"x\\")": 1.25, "+cmd": 2, "status": "@SUM(1+1)", '
          '"reason": "=1+1"}')
else:
    print('{"-neg": -4.5, "t1_ms": 7}')
"""


def _bounds_experiment(tmp: Path, scenarios: list[str]) -> Path:
    (tmp / "system.sh").write_text(SYSTEM)
    (tmp / "system.sh").chmod(0o755)
    (tmp / "driver.py").write_text(BOUNDS_DRIVER)
    y = tmp / "bounds.yaml"
    y.write_text(textwrap.dedent(f"""\
        name: bounds
        trials: 1
        system:
          start: ./system.sh
          ready: {{command: [sh, -c, 'test -e "$ROSCOPE_SYSTEM_DIR/ready"'], timeout: 5}}
          stop_timeout: 1
        driver:
          command: [{sys.executable}, -S, driver.py]
          timeout: 60
        scenarios:
        """) + "".join(f"  - name: {s}\n" for s in scenarios))
    return y


def test_driver_output_is_read_with_bounds(tmp_path, roscope_cmd):
    """200,000 nested brackets, a 400-digit integer and a 96 MiB last line: each is a finding of
    its trial, never a crash of the run; roscope's memory stays below the line's size (its peak
    RSS, from the kernel's rusage of the waited-for child); diagnostics.txt stays small."""
    y = _bounds_experiment(tmp_path, ["nested", "bigint", "huge"])
    run = tmp_path / "run"
    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "sys.stderr.write(p.stderr)\n"
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = _roscope([sys.executable, "-c", probe, *roscope_cmd], "experiment", "run", str(y), "-o", str(run), timeout=300)
    rc, maxrss_kib = map(int, p.stdout.split())
    assert rc == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert maxrss_kib * 1024 < 96 << 20, f"roscope's peak RSS {maxrss_kib} KiB: it read the whole line"
    res = {t: json.loads((run / "trials" / f"{t}_001" / "result.json").read_text()) for t in ("nested", "bigint", "huge")}
    assert res["nested"]["status"] == "driver_crash" and "nests JSON 200000 deep (at most 64" in res["nested"]["reason"]
    assert res["bigint"]["status"] == "success" and res["bigint"]["metrics"] == {"t1_ms": 3.5}
    assert any("not finite, left out: bigint, nan" in w for w in res["bigint"]["warnings"])
    assert res["huge"]["status"] == "driver_crash"
    assert f"longer than {1 << 20} bytes (the file has {(96 << 20) + 1} bytes)" in res["huge"]["reason"]
    diag = run / "trials" / "huge_001" / "diagnostics.txt"
    assert diag.stat().st_size < 100_000 and f"[... the first {(96 << 20) + 1 - 65536} bytes are not shown]\n[...] xxx" \
        in diag.read_text()
    assert json.loads((run / "manifest.json").read_text())["state"] == "complete"


def test_csv_cells_are_escaped_against_formulas(tmp_path, roscope_cmd):
    """Metric names, a status and a reason a spreadsheet would run as formulas are written with a
    leading ' (read back with the csv module); numbers, also negative ones, stay numbers."""
    y = _bounds_experiment(tmp_path, ["formula", "plain"])
    run = tmp_path / "run"
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(run))
    assert p.returncode == 0, p.stderr
    with open(run / "trials.csv", newline="") as f:
        rows = list(csv.reader(f))
    head, cells = rows[0], [c for r in rows for c in r]
    assert "'=HYPERLINK(\"http://example.com\",\"x\")" in head and "'+cmd" in head and "'-neg" in head
    assert "'@SUM(1+1)" in cells and "'=1+1" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@")]
    plain = dict(zip(head, rows[[r[0] for r in rows].index("plain_001")]))
    assert float(plain["'-neg"]) == -4.5 and float(plain["t1_ms"]) == 7.0
    with open(run / "summary.csv", newline="") as f:
        metrics = {r["metric"] for r in csv.DictReader(f)}
    assert "'=HYPERLINK(\"http://example.com\",\"x\")" in metrics or "'-neg" in metrics
    assert not [m for m in metrics if m[:1] in ("=", "+", "-", "@")]


def test_list_survives_a_corrupt_manifest_and_looks_deeper(tmp_path, roscope_cmd):
    y = _write_experiment(tmp_path, """\
        - name: ok
        """)
    deep = tmp_path / "campaign" / "2026" / "run"
    p = _roscope(roscope_cmd, "experiment", "run", str(y), "-o", str(deep))
    assert p.returncode == 0, p.stderr
    broken = tmp_path / "campaign" / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"experiment": {"name": ')
    other = tmp_path / "campaign" / "other-tool"
    other.mkdir()
    (other / "manifest.json").write_text('{"something": "else"}')
    p = _roscope(roscope_cmd, "experiment", "list", str(tmp_path), "--json")
    assert p.returncode == 0, p.stderr
    runs = json.loads(p.stdout)
    assert [r["dir"] for r in runs] == [str(deep)] and runs[0]["trials"] == 1 and runs[0]["successes"] == 1
    warnings = [x for x in p.stderr.splitlines() if x.startswith("roscope: warning: ")]
    assert len(warnings) == 1 and f"left out {broken}: cannot read {broken / 'manifest.json'}" in warnings[0]
