"""`roscope record --attach` on running systems (issue 28), against their ground truth.

The real ROS 1 example (examples/ros1_pipeline: roscpp and rospy nodes, with roscope's preloaded
tracer) and the real ROS 2 example (examples/ros2_pipeline under the pip-installed Jazzy, with
roscope's ROS 2 tracer and rclpy hook) are started with no LTTng session; 5 s later `roscope
record start --attach --pid ...` records them for 5 s. Their processes' init events are long
past: only the tracers' state dumps can name what runs. The window compared is the recording's,
from the last state dump of the example's processes (babeltrace2 says when) to the last event,
less 0.3 s at each end. In it:

* every callback run of the examples' processes belongs to a named callback (a symbol) of a named
  node, and the runs are the logged ones: each logged callback (ROS 2) or each logged event that
  a callback logs (ROS 1: timer ticks, receptions, service calls) lies in a run of a callback of
  its node, and each run contains one;
* the publications are the logged ones, per node and topic (the same count, each at its logged
  time within 5 ms);
* the links from those publications to the runs they fed are the logged receptions, exactly.

Expected values come from the nodes' own logs and babeltrace2; roscope gives only its model.
"""
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

import pytest

from tests.support import ros2_truth as T

bt2 = pytest.importorskip("bt2", reason="babeltrace2 Python bindings (python3-bt2) are needed")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

pytestmark = [pytest.mark.lttng, pytest.mark.ros1, pytest.mark.ros2]

REPO = Path(__file__).resolve().parents[1]
ROS1 = REPO / "examples" / "ros1_pipeline"
TRACER = REPO / "instrument" / "ros1" / "build" / "libroscope_ros1.so"
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


def _roscope(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = _env({"PYTHONPATH": str(REPO / "python")})
    return subprocess.run([sys.executable, "-m", "roscope", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


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


@pytest.fixture(scope="module")
def attached(tmp_path_factory):
    venv = T.env_of("jazzy")
    if not (venv / "bin" / "python").exists():
        pytest.skip("the pip-installed Jazzy (.ros2/jazzy, make setup) is not here")
    for d in (REPO / "instrument" / "ros1", ROS1):
        assert subprocess.run(["make", "-s", "-C", str(d)], capture_output=True).returncode == 0
    out = tmp_path_factory.mktemp("attach")
    r2 = _ros2_environment()
    ros1 = subprocess.Popen([str(ROS1 / "system.sh"), "-d", "16", "-P", "-g", str(out / "gt1")],
                            env=_env({"LD_PRELOAD": str(TRACER), "PYTHONPATH": str(REPO / "instrument" / "ros1" / "rospy")}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ros2 = subprocess.Popen([str(venv / "bin" / "python"), str(T.EXAMPLE / "launch.py"), "-d", "14",
                             "-g", str(out / "gt2")], env=_env(r2), stdout=subprocess.DEVNULL,
                            stderr=open(out / "launch.log", "w"), start_new_session=True)
    name = f"attach-test-{os.getpid()}"
    try:
        # Every node has started (the ROS 1 nodes' logs exist, launch.py says it runs), then 5 s
        # more: the recording starts late.
        wait_until(lambda: len(list((out / "gt1").glob("*.jsonl"))) == 6 and ready(out / "launch.log"), ros1, ros2)
        time.sleep(5)
        p = _roscope("record", "start", "--attach", "--ros2", "jazzy", "--pid", f"{ros1.pid},{ros2.pid}",
                     "-o", str(out / "trace"), "--name", name)
        assert p.returncode == 0, p.stderr
        time.sleep(5)
        p = _roscope("record", "stop", "--name", name)
        assert p.returncode == 0, p.stderr
        assert ros1.wait(timeout=60) == 0 and ros2.wait(timeout=60) == 0
    finally:
        _roscope("record", "stop", "--name", name)
        _stop(ros1)
        _stop(ros2)
    gt = []
    for d in ("gt1", "gt2"):
        for f in sorted((out / d).glob("*.jsonl")):
            rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
            pid = next(r["pid"] for r in rows if r["ev"] == "start")
            for r in rows:  # the two systems log the same node names and message ids: keep them apart
                r["pid"], r["sys"] = pid, d
            gt += rows
    pids = {r["pid"] for r in gt if r["ev"] == "start"}
    assert len(pids) == 11, pids  # 4 roscpp + 2 rospy processes, 5 rclpy ones
    import roscope

    db = roscope.open(str(out / "trace"), read_only=False)
    return {"db": db, "gt": gt, "pids": pids, "trace": out / "trace", "window": _window(out / "trace", pids)}


def _window(trace: Path, pids: set) -> tuple[int, int]:
    """(after the last state dump of the examples' processes, before the trace's last event)."""
    dumps, last = {}, 0
    for m in bt2.TraceCollectionMessageIterator(str(trace)):
        if type(m) is not bt2._EventMessageConst:
            continue
        ts = int(m.default_clock_snapshot.value)
        last = max(last, ts)
        ev = m.event
        if ev.name.endswith(":state_dump_end"):
            pid = int(ev.common_context_field["vpid"])
            if pid in pids:
                dumps[pid] = ts
    assert set(dumps) == pids, f"no state dump from {pids - set(dumps)}"
    return max(dumps.values()) + EDGE, last - EDGE


def _pid_list(rec) -> str:
    return ", ".join(str(int(p)) for p in rec["pids"])


def test_every_object_of_the_running_systems_is_named_by_its_state_dump(attached):
    db = attached["db"]
    rows = db.records(f"""SELECT {NODE} AS name, n.known, n.dumped FROM nodes n JOIN processes p USING (proc_id)
                          WHERE p.pid IN ({_pid_list(attached)})""")
    names = {r["name"] for r in rows}
    logged = {r["node"] for r in attached["gt"] if r.get("node")}
    assert logged <= names, logged - names
    assert all(r["known"] == 1 and r["dumped"] == 1 for r in rows)
    for table in ("publishers", "subscriptions", "timers", "services", "clients", "callbacks"):
        # Endpoints that rcl never announces (the rmw's own: an rmw init event, no rcl one) are
        # known too: their init event is in the trace (the dump's).
        bad = db.records(f"""SELECT count(*) AS n FROM {table} t JOIN processes p USING (proc_id)
                             WHERE p.pid IN ({_pid_list(attached)}) AND t.known = 0""")[0]["n"]
        assert bad == 0, table
    stats = json.loads(db.records("SELECT value FROM meta WHERE key = 'stats'")[0]["value"])
    assert stats["state_dumps"] >= len(attached["pids"]) and stats["objects_dumped"] > 0


def _runs(rec) -> dict:
    """(pid, node) -> [(start, end, symbol)] of the examples' callback runs."""
    out = collections.defaultdict(list)
    for r in rec["db"].records(f"""
            SELECT p.pid, {NODE} AS node, c.symbol, r.start_ts, r.end_ts FROM callback_runs r JOIN callbacks c USING (callback_id)
            JOIN processes p ON p.proc_id = c.proc_id LEFT JOIN nodes n ON n.node_id = c.node_id
            WHERE p.pid IN ({_pid_list(rec)}) ORDER BY r.start_ts"""):
        out[(r["pid"], r["node"])].append((r["start_ts"], r["end_ts"], r["symbol"]))
    return out


def test_callback_runs_in_the_window_are_named_and_are_the_logged_ones(attached):
    w0, w1 = attached["window"]
    runs = _runs(attached)
    assert all(node for _, node in runs), "runs of callbacks without a node"
    logged = collections.defaultdict(list)  # (pid, node) -> [(start, end)] that must lie in one run
    for r in attached["gt"]:
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
        pid = next((r["pid"] for r in attached["gt"] if r["ev"] == "run" and r["node"] == node and r["cb"] == cb), None)
        if pid is not None and logged.get((pid, node)):
            assert sym in {x for _, _, x in runs[(pid, node)]}, (node, cb)


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


def test_publications_in_the_window_are_the_logged_ones(attached):
    ids = _match_publications(attached)
    assert len(ids) > 500


def test_links_in_the_window_are_the_logged_receptions(attached):
    """Each publication of the window is linked to the runs that logged its reception: the
    same receiving processes, and each linked run holds the reception's log line."""
    ids = _match_publications(attached)
    recv = collections.defaultdict(list)
    for r in attached["gt"]:
        if r["ev"] == "recv":
            recv[(r["sys"], r["id"], r["pid"])].append(r["mono_ns"])
    mine = set()
    for r in attached["db"].records(f"""
            SELECT l.publication_id, p.pid, r.start_ts, r.end_ts FROM links l JOIN callback_runs r USING (run_id)
            JOIN callbacks c USING (callback_id) JOIN processes p ON p.proc_id = c.proc_id
            WHERE p.pid IN ({_pid_list(attached)})"""):
        if r["publication_id"] in ids:
            key = (*ids[r["publication_id"]], r["pid"])
            assert any(r["start_ts"] <= ts <= r["end_ts"] for ts in recv.get(key, [])), key
            mine.add(key)
    sent = set(ids.values())
    logged = {k for k in recv if k[:2] in sent}
    assert mine == logged, (len(mine - logged), len(logged - mine))
    assert len(logged) > 200
