"""`roscope record`: crash, Ctrl-C, start/stop, --kernel, and never overwriting.

Real LTTng sessions and real roscpp processes (the example pipeline's nodes on
a private rosmaster port). Traces are read back with babeltrace2's bt2 and
compared with the nodes' own ground-truth logs.
"""
from __future__ import annotations

import collections
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_ros1_pipeline import EXAMPLE, REPO, TraceModel, build_all, read_ground_truth, read_trace, roscope_record

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]


@pytest.fixture(scope="module", autouse=True)
def built():
    build_all()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manifest_of(out: Path) -> dict:
    return json.loads((out / "roscope-manifest.json").read_text())


def runs_by_namespace(model: TraceModel) -> collections.Counter:
    c = collections.Counter()
    for key, init in model.cb_sub.items():
        if model.cb_kind[key] == "timer":
            c[("timer", init["nh_namespace"])] += len(model.runs.get(key, []))
        elif model.cb_kind[key] == "subscription":
            c[("recv", init["nh_namespace"], init["topic"])] += len(model.runs.get(key, []))
    return c


def truth_counts(gt: list[dict]) -> collections.Counter:
    c = collections.Counter()
    for r in gt:
        if r["ev"] == "timer":
            c[("timer", r["node"])] += 1
        elif r["ev"] == "recv":
            c[("recv", r["node"], r["topic"])] += 1
    return c


def test_refuses_to_write_into_an_existing_trace(tmp_path):
    out = tmp_path / "old-trace"
    out.mkdir()
    (out / "keep.txt").write_text("recorded earlier")
    p = roscope_record(["-o", str(out), "--", "true"])
    assert p.returncode == 1
    assert str(out) in p.stderr and "not empty" in p.stderr
    assert sorted(x.name for x in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "recorded earlier"
    # a file in the way is refused as well
    f = tmp_path / "a-file"
    f.write_text("x")
    p = roscope_record(["-o", str(f), "--", "true"])
    assert p.returncode == 1 and str(f) in p.stderr and f.read_text() == "x"


def test_missing_command_is_a_clear_error(tmp_path):
    out = tmp_path / "t"
    p = roscope_record(["-o", str(out), "--", "/nonexistent/roscope-no-such-program"])
    assert p.returncode == 1 and "command not found: /nonexistent/roscope-no-such-program" in p.stderr
    assert not out.exists()


def test_crashing_command_leaves_a_readable_trace_and_manifest(tmp_path):
    out, gt = tmp_path / "trace", tmp_path / "gt"
    gt.mkdir()
    port = free_port()
    script = (
        "ulimit -c 0; "
        f"rosmaster --core -p {port} >{gt}/rosmaster.log 2>&1 & "
        f"for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.1; done; "
        f"exec {EXAMPLE}/build/sensors")
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1",
               ROSCOPE_GT_DIR=str(gt), PIPELINE_CRASH_AFTER_S="2", ROS_LOG_DIR=str(gt / "log"))
    p = roscope_record(["-o", str(out), "--", "bash", "-c", script], env=env)
    assert p.returncode == 128 + signal.SIGSEGV, p.stderr
    m = manifest_of(out)
    assert m["state"] == "complete" and m["exit_signal"] == "SIGSEGV" and m["exit_code"] is None
    assert m["events_discarded"] == 0
    events, discarded = read_trace(out)
    assert discarded == 0 and m["events_recorded"] == len(read_trace(out, only_recorded=False)[0])
    model = TraceModel(events)
    truth = read_ground_truth(gt)
    # Every timer run and publication up to the crash is in the trace; the
    # crashing run has a callback_start and no callback_end.
    timers = {init["nh_namespace"]: model.runs.get(k, []) for k, init in model.cb_sub.items()}
    gt_timers = collections.Counter(r["node"] for r in truth if r["ev"] == "timer")
    assert set(timers) == set(gt_timers) and sum(gt_timers.values()) > 20
    unfinished = 0
    for ns, runs in timers.items():
        assert len(runs) == gt_timers[ns], ns
        unfinished += sum(1 for r in runs if r[1] is None)
    assert unfinished == 1
    gt_pubs = collections.Counter((r["node"], r["topic"]) for r in truth if r["ev"] == "pub")
    for key, init in model.pubs.items():
        assert len(model.publishes.get(key, [])) == gt_pubs[(init["nh_namespace"], init["topic"])]


def test_ctrl_c_stops_cleanly_and_keeps_the_trace(tmp_path):
    out, gt = tmp_path / "trace", tmp_path / "gt"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.Popen([sys.executable, "-m", "roscope", "record", "-o", str(out), "--",
                             str(EXAMPLE / "system.sh"), "-d", "120", "-g", str(gt)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (gt / "sensors.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (gt / "sensors.jsonl").exists(), "the example did not start"
        time.sleep(4)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=40)
        assert time.monotonic() - t0 < 30
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    m = manifest_of(out)
    assert m["state"] == "complete" and m["interrupted"] is True and m["interrupt_signal"] == "SIGINT"
    assert m["events_discarded"] == 0
    events, discarded = read_trace(out)
    assert discarded == 0 and len(read_trace(out, only_recorded=False)[0]) == m["events_recorded"]
    assert len(events) > 1000
    # The nodes were shut down cleanly: every callback run they logged is in the trace.
    got, want = runs_by_namespace(TraceModel(events)), truth_counts(read_ground_truth(gt))
    assert got == want
    # none of this run's node processes is left running
    for pid in {r["pid"] for r in read_ground_truth(gt) if r["ev"] == "start"}:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_start_stop_for_a_system_started_elsewhere(tmp_path):
    out, gt = tmp_path / "trace", tmp_path / "gt"
    name = f"roscope-test-{uuid.uuid4().hex[:8]}"
    state = tmp_path / "state"
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    p = roscope_record(["-o", str(out), "--name", name, "start"], env=env)
    assert p.returncode == 0, p.stderr
    preload = [ln.split("=", 1)[1] for ln in p.stdout.splitlines() if "export LD_PRELOAD=" in ln]
    assert preload and preload[0].endswith("libroscope_ros1.so")
    assert f"export ROSCOPE_RECORD_ID={name}" in p.stdout
    try:
        # a second start with the same name is refused
        p2 = roscope_record(["-o", str(tmp_path / "other"), "--name", name, "start"], env=env)
        assert p2.returncode == 1 and "already active" in p2.stderr
        sysenv = dict(os.environ, LD_PRELOAD=preload[0], ROSCOPE_RECORD_ID=name)
        subprocess.run([str(EXAMPLE / "system.sh"), "-d", "3", "-g", str(gt)], env=sysenv, check=True,
                       capture_output=True, timeout=60)
    finally:
        p = roscope_record(["--name", name, "stop"], env=env)
    assert p.returncode == 0, p.stderr
    m = manifest_of(out)
    assert m["state"] == "complete" and m["mode"] == "start/stop" and m["events_discarded"] == 0
    events, _ = read_trace(out)
    assert runs_by_namespace(TraceModel(events)) == truth_counts(read_ground_truth(gt))
    # stopping again: nothing active any more
    p = roscope_record(["--name", name, "stop"], env=env)
    assert p.returncode == 1 and "no active recording" in p.stderr


def test_kernel_sched_events_with_the_monotonic_clock(tmp_path):
    if subprocess.run(["perf", "--version"], capture_output=True).returncode != 0:
        pytest.skip("perf is not installed")
    out, gt = tmp_path / "trace", tmp_path / "gt"
    p = roscope_record(["-o", str(out), "--kernel", "--", str(EXAMPLE / "system.sh"), "-d", "2", "-g", str(gt)])
    assert p.returncode == 0, p.stderr
    m = manifest_of(out)
    assert m["kernel"]["file"] == "perf/perf.data" and m["kernel"]["perf_ok"] is True
    events, _ = read_trace(out)
    sensors = [e for e in events if e["procname"] == "sensors"]
    pid = sensors[0]["vpid"]
    lo, hi = sensors[0]["ts"], sensors[-1]["ts"]
    s = subprocess.run(["perf", "script", "-i", str(out / "perf" / "perf.data"), "-F", "pid,time,event",
                        "--ns"], capture_output=True, text=True)
    assert s.returncode == 0, s.stderr
    times = []
    for line in s.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == str(pid) and parts[2].startswith("sched:sched_switch"):
            sec, ns = parts[1].rstrip(":").split(".")
            times.append(int(sec) * 1_000_000_000 + int(ns))
    assert len(times) > 50
    # Same clock: the sensors process's context switches fall within its UST events' span.
    inside = sum(lo <= t <= hi for t in times)
    assert inside > 0.8 * len(times)


def test_lost_events_are_counted_and_reported_loudly(tmp_path):
    """Tiny buffers and a publish/callback loop without pauses: LTTng must discard events."""
    subprocess.run(["make", "-C", str(REPO / "bench" / "overhead")], check=True, capture_output=True)
    out = tmp_path / "trace"
    port = free_port()
    script = (
        f"rosmaster --core -p {port} >/dev/null 2>&1 & m=$!; "
        f"for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.1; done; "
        f"{REPO}/bench/overhead/build/pingpong loop 256 200000; rc=$?; kill -TERM $m; wait $m; exit $rc")
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1",
               ROS_LOG_DIR=str(tmp_path / "log"))
    p = roscope_record(["-o", str(out), "--subbuf-size", "4K", "--num-subbuf", "2", "--",
                        "bash", "-c", script], env=env)
    assert p.returncode == 0, p.stderr
    m = manifest_of(out)
    events, discarded = read_trace(out)  # the oracle: bt2's discarded-events messages
    assert discarded > 1000
    assert m["events_discarded"] == discarded
    assert m["events_recorded"] == len(read_trace(out, only_recorded=False)[0])
    assert f"WARNING: {discarded} EVENTS WERE LOST" in p.stderr
    # what survived is still consistent: the loop's callbacks are 200000 runs minus losses
    starts = sum(1 for e in events if e["name"] == "roscope_ros1:callback_start")
    assert 0 < starts < 200000


def test_subcommands_take_options_in_any_order_and_are_never_programs(tmp_path):
    """Issue 15: 'record stop --name N' and 'record start --name N -o DIR' (options after the
    subcommand) work, and 'start'/'stop' are never looked up on PATH, even when programs of those
    names exist there; '--' runs such a program explicitly."""
    bindir, marks = tmp_path / "bin", tmp_path / "marks"
    bindir.mkdir()
    marks.mkdir()
    for verb in ("start", "stop"):
        prog = bindir / verb
        prog.write_text(f"#!/bin/sh\ntouch {marks}/{verb}-ran\n")
        prog.chmod(0o755)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PATH=f"{bindir}:{os.environ['PATH']}")
    names = [f"roscope-test-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    outs = [tmp_path / "after", tmp_path / "before"]
    try:
        p = roscope_record(["start", "--name", names[0], "-o", str(outs[0])], env=env)
        assert p.returncode == 0, p.stderr
        assert f"stop with: roscope record stop --name {names[0]}" in p.stdout
        p = roscope_record(["--name", names[1], "start", "-o", str(outs[1]), "--no-preload"], env=env)
        assert p.returncode == 0, p.stderr
        assert "LD_PRELOAD" not in p.stdout
        # 'stop' accepts only --name
        p = roscope_record(["stop", "--name", names[0], "-o", str(tmp_path / "x")], env=env)
        assert p.returncode == 2 and "unrecognized arguments: -o" in p.stderr
        p = roscope_record(["-o", str(tmp_path / "x"), "stop", "--name", names[0]], env=env)
        assert p.returncode == 2 and "takes only --name" in p.stderr and "--output" in p.stderr
    finally:
        results = [roscope_record(["stop", "--name", names[0]], env=env),
                   roscope_record(["--name", names[1], "stop"], env=env)]
    for p, out, name in zip(results, outs, names):
        assert p.returncode == 0, p.stderr
        m = manifest_of(out)
        assert m["state"] == "complete" and m["mode"] == "start/stop" and m["session"] == name
    assert manifest_of(outs[0])["preload"] and manifest_of(outs[1])["preload"] is None
    assert list(marks.iterdir()) == []
    # after '--' the word is the command: the program named 'stop' on PATH runs, traced
    out = tmp_path / "explicit"
    p = roscope_record(["-o", str(out), "--no-preload", "--", "stop"], env=env)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in marks.iterdir()) == ["stop-ran"]
    assert manifest_of(out)["command"] == ["stop"]
