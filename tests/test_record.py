"""`roscope record`: crash, Ctrl-C, start/stop, --kernel, and never overwriting.

Real LTTng sessions and real roscpp processes (the example pipeline's nodes on
a private rosmaster port). Traces are read back with babeltrace2's bt2 and
compared with the nodes' own ground-truth logs.
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.procs import children_of, lttng_sessions, processes_mentioning, start_ticks, wait_for
from tests.support.ros1 import EXAMPLE, REPO, TraceModel, build_all, manifest_of, read_ground_truth, read_trace, roscope_record

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]


@pytest.fixture(scope="module", autouse=True)
def built():
    build_all()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    # the printed export lines, run by a shell (without an LD_PRELOAD of its own)
    exports = "\n".join(ln.strip() for ln in p.stdout.splitlines() if ln.strip().startswith("export "))
    shell_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ROSCOPE_RECORD_ID")}
    shown = subprocess.run(["bash", "-c", exports + '\nprintf "%s\\n" "$LD_PRELOAD" "$ROSCOPE_RECORD_ID"'],
                           env=shell_env, capture_output=True, text=True, check=True).stdout.splitlines()
    preload = shown[:1]
    assert preload[0].endswith("libroscope_ros1.so") and ":" not in preload[0]
    assert shown[1] == name
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
    # The process's life as its own log gives it, in CLOCK_MONOTONIC (main's start, and
    # its stop after ROS shut down: that shutdown took 0.3 s after the last callback here).
    log = [json.loads(line) for line in (gt / "sensors.jsonl").read_text().splitlines() if line.strip()]
    [start] = [g["mono_ns"] for g in log if g["ev"] == "start" and g["pid"] == pid]
    [stop] = [g["mono_ns"] for g in log if g["ev"] == "stop"]
    assert sensors[-1]["ts"] <= stop  # the tracer's first event comes before main, in its constructor
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
    # Same clock: the sensors process's context switches fall within its life, give or
    # take its exec before main and its exit after the log's stop (about 12 ms and 4 ms
    # here); most of them within the logged life itself. This catches a clock off by more
    # than 0.1 s (CLOCK_REALTIME, say); on this machine perf's default clock is within
    # milliseconds of CLOCK_MONOTONIC, so it cannot tell those two apart.
    slack = 100_000_000
    assert all(start - slack <= t <= stop + slack for t in times), (start, stop, min(times), max(times))
    inside = sum(start <= t <= stop for t in times)
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


# --------------------------------------------------------------------------
# issue 15: a failed setup cleans up and says so; recover after kill -9
# --------------------------------------------------------------------------


def programs_of(pids: list[int]) -> dict[int, str]:
    """{pid: argv[0]} of those still there."""
    out = {}
    for pid in pids:
        try:
            out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            pass
    return out


def assert_setup_failed(p, out: Path, name: str, state: Path, message: str) -> dict:
    """Exit 1 with one clear line, the manifest says failed and why, nothing else is left."""
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("roscope: error:")]
    assert len(errors) == 1 and message in errors[0] and 'state "failed"' in errors[0], p.stderr
    m = manifest_of(out)
    assert m["state"] == "failed" and message in m["error"] and m["end_time_ns"] >= m["start_time_ns"]
    assert sorted(x.name for x in out.iterdir()) == ["roscope-manifest.json"]
    assert not (state / "roscope" / "record" / f"{name}.json").exists()
    assert processes_mentioning(str(out)) == []
    return m


def assert_reusable(out: Path, name: str, env: dict) -> None:
    p = roscope_record(["-o", str(out), "--name", name, "--no-preload", "--", "true"], env=env)
    assert p.returncode == 0, p.stderr
    m = manifest_of(out)
    assert m["state"] == "complete" and m["session"] == name and m["exit_code"] == 0
    assert name not in lttng_sessions()
    assert not (Path(env["XDG_STATE_HOME"]) / "roscope" / "record" / f"{name}.json").exists()


NOT_EXECUTABLE = "not-executable.sh"
FAILED_SETUPS = {
    # case: (arguments before the name/output, what the one error line names)
    "subbuf-size": (["--subbuf-size", "3", "--", "true"], "enable-channel"),
    "subbuf-size-start": (["--subbuf-size", "3", "start"], "enable-channel"),
    "enable-event": (["--events", "ros2:*,ros2:*", "--", "true"], "UST event already enabled"),
    "command-not-runnable": (["--", NOT_EXECUTABLE], "could not run"),
    "perf-fails": (["--kernel", "--", "true"], "perf record failed to start"),
    "perf-fails-start": (["--kernel", "start"], "perf record failed to start"),
}


@pytest.mark.parametrize("case", sorted(FAILED_SETUPS))
def test_a_failed_setup_is_marked_failed_and_cleaned_up(case, tmp_path, lttng_ready):
    args, message = FAILED_SETUPS[case]
    out, state = tmp_path / "trace", tmp_path / "state"
    name = f"roscope-test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    if "perf" in case:
        if shutil.which("perf") is None:
            pytest.skip("perf is not installed")
        # a real perf that refuses to start: an invalid value in its configuration file
        (tmp_path / "perfconfig").write_text("[record]\n\tbuild-id = not-a-mode\n")
        env["PERF_CONFIG"] = str(tmp_path / "perfconfig")
    noexec = tmp_path / NOT_EXECUTABLE
    noexec.write_text("#!/bin/sh\nexit 0\n")
    noexec.chmod(0o644)
    args = [str(noexec) if a == NOT_EXECUTABLE else a for a in args]
    p = roscope_record(["-o", str(out), "--name", name, *args], env=env)
    assert_setup_failed(p, out, name, state, message)
    assert name not in lttng_sessions()
    env.pop("PERF_CONFIG", None)
    assert_reusable(out, name, env)


def test_a_name_taken_by_a_session_roscope_did_not_make_is_left_alone(tmp_path, lttng_ready):
    """'lttng create' fails: the other session (not roscope's) is not destroyed."""
    out, state, other = tmp_path / "trace", tmp_path / "state", tmp_path / "other"
    name = f"roscope-test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    subprocess.run(["lttng", "create", name, f"--output={other}"], check=True, capture_output=True)
    try:
        p = roscope_record(["-o", str(out), "--name", name, "--", "true"], env=env)
        assert_setup_failed(p, out, name, state, "Session name already exists")
        assert lttng_sessions().get(name) == str(other)
    finally:
        subprocess.run(["lttng", "destroy", name], capture_output=True)
    assert_reusable(out, name, env)


def test_a_name_taken_by_an_active_recording_is_refused_without_touching_it(tmp_path, lttng_ready):
    first, out, state = tmp_path / "first", tmp_path / "trace", tmp_path / "state"
    name = f"roscope-test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    p = roscope_record(["-o", str(first), "--name", name, "start"], env=env)
    assert p.returncode == 0, p.stderr
    try:
        for args in (["--", "true"], ["start"]):
            p = roscope_record(["-o", str(out), "--name", name, *args], env=env)
            assert p.returncode == 1 and "already active" in p.stderr and "Traceback" not in p.stderr
            m = manifest_of(out)
            assert m["state"] == "failed" and "already active" in m["error"]
            assert sorted(x.name for x in out.iterdir()) == ["roscope-manifest.json"]
            # the active recording is untouched: its state, its session, its manifest
            assert (state / "roscope" / "record" / f"{name}.json").exists()
            assert lttng_sessions().get(name) == str(first)
            assert manifest_of(first)["state"] == "recording"
    finally:
        p = roscope_record(["--name", name, "stop"], env=env)
    assert p.returncode == 0, p.stderr
    assert manifest_of(first)["state"] == "complete"
    assert_reusable(out, name, env)


def test_missing_command_leaves_nothing(tmp_path, lttng_ready):
    """A program that is not there is found before anything is created: nothing to clean."""
    out, state = tmp_path / "t", tmp_path / "state"
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    before = set(lttng_sessions())
    p = roscope_record(["-o", str(out), "--name", "roscope-test-missing", "--", "/nonexistent/prog"], env=env)
    assert p.returncode == 1 and p.stderr.strip() == "roscope: error: command not found: /nonexistent/prog"
    assert not out.exists() and not list(state.glob("roscope/record/*.json"))
    assert set(lttng_sessions()) <= before


def recover(state: Path, *args: str) -> subprocess.CompletedProcess:
    return roscope_record(["recover", *args], env=dict(os.environ, XDG_STATE_HOME=str(state)))


def test_recover_after_kill_9_stops_what_record_started_and_nothing_else(tmp_path, lttng_ready):
    """kill -9 of 'roscope record --kernel -- CMD': the session, perf and CMD stay. 'recover
    --dry-run' only lists; 'recover' destroys that session, stops that perf, leaves CMD running
    (no --kill-children), completes the manifest; a live recording and a session roscope did
    not make are left alone."""
    kernel = shutil.which("perf") is not None
    out, live_out, state = tmp_path / "killed", tmp_path / "live", tmp_path / "state"
    env = dict(os.environ, XDG_STATE_HOME=str(state), PYTHONPATH=str(REPO / "python"))
    # a rospy process (the tracer traces it once it imports rospy) among shell loop turns (not traced)
    cmd = ["bash", "-c", "/usr/bin/python3 -c 'import rospy, time; time.sleep(30)' & "
           "for i in $(seq 300); do /bin/true; sleep 0.1; done"]
    rec = subprocess.Popen([sys.executable, "-m", "roscope", "record", "-o", str(out)]
                           + (["--kernel"] if kernel else []) + ["--", *cmd],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live = subprocess.Popen([sys.executable, "-m", "roscope", "record", "-o", str(live_out), "--", "sleep", "30"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    foreign = f"roscope-test-foreign-{uuid.uuid4().hex[:8]}"
    subprocess.run(["lttng", "create", foreign, f"--output={tmp_path / 'foreign'}"], check=True, capture_output=True)
    child = None
    try:
        wanted = {"bash", "perf"} if kernel else {"bash"}
        wait_for(lambda: wanted <= set(programs_of(children_of(rec.pid)).values()), 20, "the command (and perf)")
        wait_for(lambda: "sleep" in programs_of(children_of(live.pid)).values(), 20, "the live recording")
        kids = programs_of(children_of(rec.pid))
        child = next(pid for pid, exe in kids.items() if exe == "bash")
        perf = next((pid for pid, exe in kids.items() if exe == "perf"), None)
        child_start, perf_start = start_ticks(child), perf and start_ticks(perf)
        name = manifest_of(out)["session"]
        time.sleep(1.5)
        rec.kill()  # kill -9: nothing of roscope runs any more
        rec.wait()
        sessions = lttng_sessions()
        assert sessions.get(name) == str(out) and foreign in sessions

        p = recover(state, "--dry-run")
        assert p.returncode == 0, p.stderr
        assert f"would recover {name} ({out})" in p.stdout and "would destroy LTTng session" in p.stdout
        assert f"left alone {manifest_of(live_out)['session']}" in p.stdout and "still running" in p.stdout
        assert name in lttng_sessions() and manifest_of(out)["state"] == "recording"
        assert perf is None or start_ticks(perf) == perf_start

        p = recover(state)
        assert p.returncode == 0, p.stderr
        assert f"recovered {name} ({out})" in p.stdout and f"PID {child} (bash)" in p.stdout
        sessions = lttng_sessions()
        assert name not in sessions and foreign in sessions
        assert sessions.get(manifest_of(live_out)["session"]) == str(live_out)
        assert manifest_of(live_out)["state"] == "recording" and live.poll() is None
        assert start_ticks(child) == child_start, "recover stopped the command without --kill-children"
        m = manifest_of(out)
        assert m["state"] == "recovered" and m["recovery"]["left_running"][0]["pid"] == child
        events, discarded = read_trace(out, only_recorded=False)
        assert m["events_recorded"] == len(events) and m["events_discarded"] == discarded
        own = [e for e in read_trace(out)[0] if e["name"] == "roscope_ros1:process_init"]
        exes = [e["exe"].rsplit("/", 1)[-1] for e in own]
        assert len(exes) == 1 and exes[0].startswith("python3"), exes  # not bash, seq, true, sleep
        if kernel:
            assert start_ticks(perf) is None and m["kernel"]["perf_ok"] is True
            s = subprocess.run(["perf", "report", "--header-only", "-i", str(out / "perf" / "perf.data")],
                               capture_output=True, text=True)
            assert s.returncode == 0 and "sched:sched_switch" in s.stdout
        info = subprocess.run([sys.executable, "-m", "roscope", "info", "--json", str(out)], env=env,
                              capture_output=True, text=True)
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["recordings"][0]["state"] == "recovered"
        assert not (state / "roscope" / "record" / f"{name}.json").exists()
        # nothing left to do for it; the live recording is still left alone
        p = recover(state)
        assert p.returncode == 0 and name not in p.stdout and "left alone" in p.stdout
    finally:
        subprocess.run(["lttng", "destroy", foreign], capture_output=True)
        if child and start_ticks(child) is not None:
            os.killpg(child, signal.SIGKILL)
        for proc in (rec, live):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=30)
    assert live.returncode == 130 and manifest_of(live_out)["state"] == "complete"
    assert "no recording to recover" in recover(state).stdout


def test_recover_kill_children_stops_the_ros1_system_and_keeps_its_trace(tmp_path, lttng_ready):
    """kill -9 of 'roscope record -- system.sh', then 'recover --kill-children': the nodes get
    SIGINT and shut down cleanly before the session stops, so every callback run their
    ground truth logged is in the trace, which babeltrace2 and roscope read."""
    out, gt, state = tmp_path / "trace", tmp_path / "gt", tmp_path / "state"
    env = dict(os.environ, XDG_STATE_HOME=str(state), PYTHONPATH=str(REPO / "python"))
    rec = subprocess.Popen([sys.executable, "-m", "roscope", "record", "-o", str(out), "--",
                            str(EXAMPLE / "system.sh"), "-d", "60", "-g", str(gt)],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    nodes: list[int] = []
    try:
        wait_for(lambda: (gt / "sensors.jsonl").exists(), 30, "the example to start")
        time.sleep(1)
        rec.kill()
        rec.wait()
        nodes = [r["pid"] for r in read_ground_truth(gt) if r["ev"] == "start"]
        assert len(nodes) == 4 and all(start_ticks(n) for n in nodes)
        p = recover(state, "--kill-children")
        assert p.returncode == 0, p.stderr
        assert "stopped the command's processes" in p.stdout and "left running" not in p.stdout
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
        for n in nodes:
            if start_ticks(n) is not None:
                os.kill(n, signal.SIGKILL)
    assert all(start_ticks(n) is None for n in nodes)
    assert processes_mentioning(str(gt)) == []  # system.sh, rosmaster, the nodes
    m = manifest_of(out)
    assert m["state"] == "recovered" and m["session"] not in lttng_sessions()
    events, discarded = read_trace(out)
    assert discarded == 0 and m["events_discarded"] == 0
    assert runs_by_namespace(TraceModel(events)) == truth_counts(read_ground_truth(gt))
    info = subprocess.run([sys.executable, "-m", "roscope", "info", str(out)], env=env, capture_output=True, text=True)
    assert info.returncode == 0 and "sensors" in info.stdout, info.stderr
