"""The examples recorded by `roscope record --attach` (test_attach, test_dual_session,
test_flight_recorder), against the nodes' own logs: the ROS 2 example's environment and start,
the compared window's edges, and the checks of a recording's runs, publications and links in
its window (`rec`: {"db", "gt", "pids", "window"})."""
from __future__ import annotations

import bisect
import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support import ros2_truth as T

REPO = Path(__file__).resolve().parents[2]


MS = 1_000_000
EDGE = 300 * MS
#: A node's full name (ROS 2 nodes have a name and a namespace; ROS 1 ones a full name).
NODE = ("CASE WHEN n.namespace IS NULL OR n.name LIKE '/%' THEN n.name WHEN n.namespace = '/' THEN '/' || n.name "
        "ELSE n.namespace || '/' || n.name END")
#: What each ROS 1 node logs inside a callback of its own.
ROS1_IN_RUN = ("timer", "recv", "srv", "srv_call")


def _env(extra: dict) -> dict:
    env = dict(os.environ)
    env.pop("ROSCOPE_RECORD_ID", None)
    env.update(extra)
    return env


def _ros2_environment() -> dict:
    """What `roscope record` gives a pip-installed Jazzy's processes (the tracer, the rclpy hook)."""
    code = ("import json; from roscope.ros2_pip import Ros2Recording; "
            "print(json.dumps(Ros2Recording.setup(None, 'jazzy', True).environment({})))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=_env({"PYTHONPATH": str(REPO / "python")}), timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def ready(launch_log: Path) -> bool:
    """Whether examples/ros2_pipeline/launch.py said that every process is ready."""
    return launch_log.exists() and "launch.py: running for" in launch_log.read_text()


def wait_until(cond, *procs: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "the example did not start"
        assert all(p.poll() is None for p in procs), "the example ended before it started"
        time.sleep(0.2)


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _pid_list(rec) -> str:
    return ", ".join(str(int(p)) for p in rec["pids"])


def _runs(rec) -> dict:
    """(pid, node) -> [(start, end, symbol)] of the examples' callback runs."""
    out = collections.defaultdict(list)
    for r in rec["db"].records(f"""
            SELECT p.pid, {NODE} AS node, c.symbol, r.start_ts, r.end_ts FROM callback_runs r JOIN callbacks c USING (callback_id)
            JOIN processes p ON p.proc_id = c.proc_id LEFT JOIN nodes n ON n.node_id = c.node_id
            WHERE p.pid IN ({_pid_list(rec)}) ORDER BY r.start_ts"""):
        out[(r["pid"], r["node"])].append((r["start_ts"], r["end_ts"], r["symbol"]))
    return out


def _match_publications(rec) -> dict[int, tuple]:
    """roscope publication_id -> (system, logged message id), per process, node and topic. Each
    node logs a publication just before it publishes, in the same thread, so publication k lies
    between log line k and log line k+1; asserts that the window holds the same publications
    (a log line just before the window's start may go with a publication inside it, and one just
    before its end with a publication after it)."""
    w0, w1 = rec["window"]
    gt = collections.defaultdict(list)
    for r in rec["gt"]:
        if r["ev"] == "pub":
            gt[(r["pid"], r["node"], r["topic"])].append((r["mono_ns"], (r["sys"], r["id"])))
    mine = collections.defaultdict(list)
    for r in rec["db"].records(f"""
            SELECT pb.publication_id, pb.ts, p.pid, {NODE} AS node, pu.name AS topic FROM publications pb
            JOIN publishers pu USING (publisher_id) JOIN processes p ON p.proc_id = pu.proc_id
            LEFT JOIN nodes n ON n.node_id = pu.node_id WHERE p.pid IN ({_pid_list(rec)}) ORDER BY pb.ts"""):
        mine[(r["pid"], r["node"], r["topic"])].append((r["ts"], r["publication_id"]))
    out = {}
    for key, logged in gt.items():
        logged.sort()
        times = [t for t, _ in logged]
        used = set()
        for ts, pid in mine.get(key, []):
            if not w0 <= ts <= w1:
                continue
            k = bisect.bisect_right(times, ts) - 1
            assert k >= 0 and (k + 1 == len(times) or ts < times[k + 1]), (key, ts, "not between its log lines")
            assert k not in used, (key, ts)
            used.add(k)
            out[pid] = logged[k][1]
        inside = {k for k, t in enumerate(times) if w0 <= t <= w1}
        assert used - inside <= {min(inside, default=0) - 1}, (key, sorted(used - inside))
        assert inside - used <= {max(inside, default=0)}, (key, sorted(inside - used))
    return out


def check_runs_in_window(rec) -> None:
    w0, w1 = rec["window"]
    runs = _runs(rec)
    assert all(node for _, node in runs), "runs of callbacks without a node"
    logged = collections.defaultdict(list)  # (pid, node) -> [(start, end)] that must lie in one run
    for r in rec["gt"]:
        if r["ev"] == "run" and w0 <= r["start_ns"] and r["end_ns"] <= w1:
            logged[(r["pid"], r["node"])].append((r["start_ns"], r["end_ns"]))
        elif r["ev"] in ROS1_IN_RUN and "mono_ns" in r and w0 <= r["mono_ns"] <= w1:
            logged[(r["pid"], r["node"])].append((r["mono_ns"], r["mono_ns"]))
    checked = 0
    for node, mine in runs.items():
        inside = [(s, e, sym) for s, e, sym in mine if w0 <= s and e is not None and e <= w1]
        assert all(sym for _, _, sym in inside), f"{node}: runs of callbacks without a symbol"
        marks = sorted(logged.get(node, []))
        starts = [s for s, _ in marks]
        for s, e, _sym in inside:  # each run contains something its node logged
            k = bisect.bisect_left(starts, s)
            assert k < len(marks) and marks[k][1] <= e, f"{node}: run {s}..{e} holds nothing logged"
        for a, b in marks:  # everything logged lies in a run of its node
            assert any(s <= a and b <= (e or 0) for s, e, _ in mine), f"{node}: logged {a}..{b} is in no run"
            checked += 1
    assert checked > 200 and set(logged) <= set(runs)
    for (node, cb), (sym, _kind, _what) in T.CALLBACKS.items():
        pid = next((r["pid"] for r in rec["gt"] if r["ev"] == "run" and r["node"] == node and r["cb"] == cb), None)
        if pid is not None and logged.get((pid, node)):
            assert sym in {x for _, _, x in runs[(pid, node)]}, (node, cb)


def check_links_in_window(rec) -> None:
    """Each publication of the window is linked to the runs that logged its reception: the
    same receiving processes, and each linked run holds the reception's log line."""
    ids = _match_publications(rec)
    recv = collections.defaultdict(list)
    for r in rec["gt"]:
        if r["ev"] == "recv":
            recv[(r["sys"], r["id"], r["pid"])].append(r["mono_ns"])
    mine = set()
    for r in rec["db"].records(f"""
            SELECT l.publication_id, p.pid, r.start_ts, r.end_ts FROM links l JOIN callback_runs r USING (run_id)
            JOIN callbacks c USING (callback_id) JOIN processes p ON p.proc_id = c.proc_id
            WHERE p.pid IN ({_pid_list(rec)})"""):
        if r["publication_id"] in ids:
            key = (*ids[r["publication_id"]], r["pid"])
            assert any(r["start_ts"] <= ts <= r["end_ts"] for ts in recv.get(key, [])), key
            mine.add(key)
    sent = set(ids.values())
    logged = {k for k in recv if k[:2] in sent}
    assert mine == logged, (len(mine - logged), len(logged - mine))
    assert len(logged) > 200

