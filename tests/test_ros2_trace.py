"""`ros2 trace` itself: ros2_tracing's own tools record the C++ example, roscope reads that trace;
and ros2_tracing's own reader reads the trace `roscope record` writes.

ros2_tracing 8.2.2's `lttngpy` (built against the system's liblttng-ctl, LTTng 2.13),
`tracetools_trace` and `tracetools_read` come from the unmodified archive in ../shared/third_party,
built into the user's cache by tests/support/ros2_tracing_tools.py. No wheel serves ros2cli for Jazzy, so
`ros2 trace start NAME -p DIR` / `ros2 trace stop NAME` are run as ros2trace's verbs run them
(`tracetools_trace.trace.start` / `stop` with `tracetools_trace.tools.args`' parser). The traced
processes get roscope's libtracetools preloaded (`roscope env --ros2 jazzy --shell`): the wheel's
own links a bundled LTTng-UST that cannot reach LTTng 2.13's session daemon.

Expected values come from the example's ground-truth logs (docs: examples/ros2_cpp_pipeline) and
from ros2_tracing's own reading of its own trace, never from roscope's output. A ros2_tracing
session records every process of the user (per-user buffers, no process filter), so other
processes running beside the test may be in its trace: callbacks are compared by the example's
pids, and ros2_tracing's events by their `vpid`.

Skips, saying why, where the archive, rclcpp, Jazzy from PyPI, liblttng-ctl-dev or pybind11 are
absent (make setup installs them).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

from tests.support import ros2_tracing_tools as R  # noqa: E402
from tests.support import ros2_truth as T  # noqa: E402
from tests.support.rclcpp_example import OURS  # noqa: E402
from tests.support.rclcpp_example import TRACED as EXAMPLE_TRACED  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "ros2_cpp_pipeline"
SECONDS = 3.0

#: The example's callbacks that rclcpp traces itself (tests/support/rclcpp_example.py's, less
#: those roscope's tracer library makes runs of): (node, cb of the ground truth) -> (kind, topic
#: or service, or the timer's period in ns).
TRACED = {k: v for k, v in EXAMPLE_TRACED.items() if k[1] not in OURS}
#: The action client's subscriptions whose messages' handling roscope's tracer library (preloaded
#: here) makes runs of (rclcpp_action has no tracepoint for them; docs/rclcpp.md).
ACTION_SUBSCRIPTIONS = {"/follow/_action/feedback", "/follow/_action/status"}
#: Context fields `ros2 trace` enables by default (tracetools_trace.tools.names.DEFAULT_CONTEXT).
CONTEXT = {"procname", "vpid", "vtid"}


def _launch(gt: Path) -> list[str]:
    return [sys.executable, str(EXAMPLE / "launch.py"), "-d", str(SECONDS), "-g", str(gt)]


@pytest.fixture(scope="module")
def tools():
    pytest.importorskip("roscope._core", reason="the roscope core is not built")
    if not (T.env_of("jazzy") / "bin" / "python").exists():
        pytest.skip(f"ROS 2 jazzy from PyPI is not installed in {T.env_of('jazzy')} (make setup)")
    site = R.build()
    if isinstance(site, str):
        pytest.skip(site)
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(p.stderr.strip())
    b = subprocess.run([sys.executable, str(EXAMPLE / "launch.py"), "--build"], capture_output=True, text=True, timeout=900)
    assert b.returncode == 0, f"building examples/ros2_cpp_pipeline failed:\n{b.stdout[-3000:]}\n{b.stderr[-3000:]}"
    return site


@pytest.fixture(scope="module")
def r2t(tools, tmp_path_factory, roscope_cmd):
    """The example recorded by `ros2 trace start/stop` (ros2_tracing's tools), traced processes
    with roscope's libtracetools preloaded."""
    out = tmp_path_factory.mktemp("ros2_trace")
    name = f"roscope-test-r2t-{os.getpid()}"
    t0 = time.monotonic()
    p = R.ros2_trace(tools, "start", name, "-p", str(out))
    assert p.returncode == 0, f"ros2 trace start failed:\n{p.stdout}\n{p.stderr}"
    try:
        env = subprocess.run([*roscope_cmd, "env", "--ros2", "jazzy", "--shell"], capture_output=True, text=True)
        assert env.returncode == 0, env.stderr
        run = subprocess.run(["bash", "-c", env.stdout + '\nexec "$@"', "bash", *_launch(out / "gt")],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"the example failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    finally:
        s = R.ros2_trace(tools, "stop", name)
    assert s.returncode == 0, f"ros2 trace stop failed:\n{s.stdout}\n{s.stderr}"
    return {"trace": out / name, "gt": T.GroundTruth(T.read_ground_truth(out / "gt")), "start": p.stdout,
            "seconds": time.monotonic() - t0}


@pytest.fixture(scope="module")
def rr(tools, tmp_path_factory):
    """The same example recorded by `roscope record --ros2 jazzy`."""
    out = tmp_path_factory.mktemp("roscope_record")
    r = T.record_command("jazzy", out / "trace", _launch(out / "gt"), ["--ros2", "jazzy"], timeout=180)
    assert r["rc"] == 0, f"roscope record failed:\n{r['stdout']}\n{r['stderr']}"
    return {"trace": out / "trace", "gt": T.GroundTruth(T.read_ground_truth(out / "gt"))}


def _stats(run_roscope, rec) -> dict:
    if "stats" not in rec:
        p = run_roscope("stats", str(rec["trace"]), "--json")
        assert p.returncode == 0, p.stderr[-3000:]
        rec["stats"] = json.loads(p.stdout)
    return rec["stats"]


def _runs(stats: dict, pids) -> collections.Counter:
    """(node, kind, topic or timer period) -> runs, of the callbacks of these pids."""
    runs = collections.Counter()
    for c in stats["callbacks"]:
        if c["pid"] in pids:
            runs[(c["node"], c["kind"], c["timer_period_ns"] if c["kind"] == "timer" else c["topic"])] += c["count"]
    return runs


def _tracetools_read(tools, rec) -> dict:
    if "read" not in rec:
        got = R.read_events(tools, rec["trace"], sorted(rec["gt"].pids().values()))
        if isinstance(got, str):
            pytest.skip(got)
        rec["read"] = got
    return rec["read"]


# ---- 1. ros2_tracing's recording, read by roscope -----------------------------------------

def test_ros2_trace_writes_its_own_layout(r2t):
    """`ros2 trace` made its session as ros2_tracing does: 35 ros2 events, the ros2 channel in
    per-user buffers (ust/uid/UID/64-bit), procname/vpid/vtid context."""
    assert "UST tracing enabled (35 events)" in r2t["start"] and "context (3 fields)" in r2t["start"], r2t["start"]
    metadata = sorted(r2t["trace"].glob("ust/uid/*/64-bit/metadata"))
    assert metadata, sorted(str(p.relative_to(r2t["trace"])) for p in r2t["trace"].rglob("*"))[:20]
    assert sorted(p.name for p in metadata[0].parent.glob("ros2_*") if not p.name.endswith(".idx")), metadata


def test_roscope_reads_ros2_traces_runs_per_callback_exact(r2t, run_roscope):
    stats = _stats(run_roscope, r2t)
    assert stats["losses"] == [], stats["losses"]
    runs = _runs(stats, set(r2t["gt"].pids().values()))
    logged = r2t["gt"].runs()
    wrong = {}
    for (node, cb), key in TRACED.items():
        expected = len(logged.get((node, cb), []))
        assert expected > 0, f"{node} {cb}: no run logged"
        if runs.get((node, *key), 0) != expected:
            wrong[f"{node} {cb}"] = (runs.get((node, *key), 0), expected)
    assert not wrong, f"(roscope's runs, logged runs) per callback: {wrong}"


def test_roscope_reads_ros2_traces_topics(r2t, run_roscope):
    """Every topic the example published on, with its publications (exact when no other process
    of the user was traced beside it), and the subscriptions' topics (rclcpp's, and the action
    client's feedback and status subscriptions roscope's tracer library gives runs)."""
    stats = _stats(run_roscope, r2t)
    pids = set(r2t["gt"].pids().values())
    foreign = {c["pid"] for c in stats["callbacks"]} - pids
    logged = collections.Counter(r["topic"] for r in r2t["gt"].of("pub"))
    topics = {t["topic"]: t for t in stats["topics"]}
    missing = sorted(set(logged) - set(topics))
    assert not missing, f"topics the example published on, absent from roscope's stats: {missing}"
    wrong = {t: (topics[t]["publications"], n) for t, n in logged.items()
             if (topics[t]["publications"] != n if not foreign else topics[t]["publications"] < n)}
    assert not wrong, f"(roscope's publications, logged) per topic (other processes traced: {sorted(foreign)}): {wrong}"
    subs = {what for (_n, _cb), (kind, what) in TRACED.items() if kind == "subscription"} | ACTION_SUBSCRIPTIONS
    got = {c["topic"] for c in stats["callbacks"] if c["pid"] in pids and c["kind"] == "subscription"} - {"/parameter_events"}
    assert got == subs, (got, subs)


# ---- 2. the same numbers as roscope's own recording -----------------------------------------

def test_same_callbacks_and_topics_as_roscope_record(r2t, rr, run_roscope):
    """The same callbacks (node, kind, topic or period, symbol), runs within the noise of two
    runs, the same topics, whichever tool recorded."""
    a, b = _stats(run_roscope, r2t), _stats(run_roscope, rr)
    pa, pb = set(r2t["gt"].pids().values()), set(rr["gt"].pids().values())

    # What roscope's own events (roscope_ros2:*, which ros2 trace does not enable) add is left out:
    # a client response callback's owner (client_callback_added: under ros2 trace its runs and
    # symbol are an unknown callback's) and the services' pseudo-topics (<service>:request/response).
    def callbacks(stats, pids):
        return {(None, "unknown", None, c["symbol"]) if c["kind"] == "client" else
                (c["node"], c["kind"], c["timer_period_ns"] if c["kind"] == "timer" else c["topic"], c["symbol"])
                for c in stats["callbacks"] if c["pid"] in pids}
    assert callbacks(a, pa) == callbacks(b, pb), (sorted(callbacks(a, pa) ^ callbacks(b, pb), key=str))
    # each recording's runs against its own log are exact (above, and test_rclcpp_pipeline for
    # roscope record's); the processes' lifetimes differ from run to run (startup, discovery),
    # so the two are compared as rates: roscope's runs over the span of the runs the nodes logged
    def rates(stats, pids, gt):
        runs, logged = _runs(stats, pids), gt.runs()
        return {(node, *key): runs[(node, *key)] / ((logged[(node, cb)][-1]["start_ns"] - logged[(node, cb)][0]["start_ns"]) / 1e9)
                for (node, cb), key in TRACED.items()}
    ra, rb = rates(a, pa, r2t["gt"]), rates(b, pb, rr["gt"])
    far = {k: (round(ra[k], 2), round(rb[k], 2)) for k in ra if abs(ra[k] - rb[k]) > 0.1 * max(ra[k], rb[k])}
    assert not far, f"(runs per second under ros2 trace, under roscope record) per callback: {far}"
    ours = {t["topic"] for t in b["topics"] if ":" not in t["topic"]}
    theirs = {t["topic"] for t in a["topics"]}
    foreign = {c["pid"] for c in a["callbacks"]} - pa
    assert ours <= theirs and (foreign or ours == theirs), (sorted(ours - theirs), sorted(theirs - ours))


# ---- 3. roscope's recording, read by ros2_tracing's reader -----------------------------------

def test_babeltrace2_reads_roscopes_trace(rr):
    p = subprocess.run(["babeltrace2", str(rr["trace"]), "-o", "dummy"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]


def test_tracetools_read_reads_roscopes_trace_as_ros2_traces(tools, r2t, rr):
    """tracetools_read (babeltrace 1, as tracetools_analysis loads a trace directory) reads the
    trace roscope recorded: the same ros2 events, each with the same fields (payload and
    context), as ros2_tracing's own trace of the same system."""
    theirs, ours = _tracetools_read(tools, r2t), _tracetools_read(tools, rr)
    assert ours["counts"], "tracetools_read found no event of the example in roscope's trace"
    r2 = {n for n in theirs["fields"] if n.startswith("ros2:")}
    mine = {n for n in ours["fields"] if n.startswith("ros2:")}
    assert mine == r2, f"only in roscope's trace: {sorted(mine - r2)}; only in ros2 trace's: {sorted(r2 - mine)}"
    differ = {n: (ours["fields"][n], theirs["fields"][n]) for n in r2
              if set(ours["fields"][n]) - {"cpu_id"} != set(theirs["fields"][n]) - {"cpu_id"}}
    assert not differ, f"(roscope's fields, ros2 trace's) per event: {differ}"
    assert all(CONTEXT <= set(f) for f in ours["fields"].values()), ours["fields"]
    # the example's callbacks ran as often under both (its log, per run): runs within noise
    for rec, read in ((r2t, theirs), (rr, ours)):
        logged = sum(len(v) for (node, cb), v in rec["gt"].runs().items() if (node, cb) in TRACED)
        assert read["counts"]["ros2:callback_start"] >= logged, (read["counts"]["ros2:callback_start"], logged)
    assert ours["other_providers"] <= {"roscope_ros2", "lttng_ust_statedump", "lttng_ust_lib", "lttng_ust_dl"}, ours["other_providers"]


def test_roscopes_trace_has_ros2_tracings_layout(rr):
    """The directory layout ros2_tracing's sessions have (one UST trace in per-user buffers under
    ust/uid/UID/64-bit; the channel is named roscope, not ros2: readers find traces by their
    metadata), and every ros2 event laid out as ros2_tracing 8.2.2 declares it (the archive's
    tracetools/include/tracetools/tp_call.h: field names, order and kinds), as babeltrace2 reads it."""
    metadata = sorted(rr["trace"].glob("ust/uid/*/64-bit/metadata"))
    assert len(metadata) == 1, sorted(str(p.relative_to(rr["trace"])) for p in rr["trace"].rglob("metadata"))
    declared = R.declared_events()
    if isinstance(declared, str):
        pytest.skip(declared)
    kinds = {"_StringFieldClassConst": "string", "_UnsignedIntegerFieldClassConst": "unsigned",
             "_SignedIntegerFieldClassConst": "signed", "_StaticArrayFieldClassConst": "static_array",
             "_DynamicArrayFieldClassConst": "dynamic_array",
             "_DynamicArrayWithLengthFieldFieldClassConst": "dynamic_array"}
    layouts = T.read_trace_layouts(rr["trace"])
    assert len(layouts) >= 30, sorted(layouts)
    unknown = sorted(set(layouts) - set(declared))
    assert not unknown, f"ros2 events in roscope's trace that ros2_tracing 8.2.2 does not declare: {unknown}"
    wrong = {n: ([(f, kinds.get(k, k)) for f, k in fields.items()], declared[n]) for n, fields in layouts.items()
             if [(f, kinds.get(k, k)) for f, k in fields.items()] != declared[n]}
    assert not wrong, f"(roscope's trace, tp_call.h) per event: {wrong}"


def test_flows_on_ros2_traces_trace(r2t, run_roscope):
    """`roscope flow` on ros2 trace's recording: one flow per detection from the camera's image
    (each detection comes from one image: the example's log; exact when the session recorded
    no other process)."""
    p = run_roscope("flow", str(r2t["trace"]), "--from", "^/image$", "--to", "^/detections$", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    paths = {x["path"]: x["flows"] for x in json.loads(p.stdout)["paths"]}
    detections = len([r for r in r2t["gt"].of("pub") if r["topic"] == "/detections"])
    path = "/camera timer -> [/image] -> /detector subscription(/image) -> [/detections]"
    foreign = {c["pid"] for c in _stats(run_roscope, r2t)["callbacks"]} - set(r2t["gt"].pids().values())
    if foreign:  # another process of the user traced beside the example (a test run beside this one)
        assert set(paths) == {path} and paths[path] >= detections, (paths, sorted(foreign))
    else:
        assert paths == {path: detections}, paths
