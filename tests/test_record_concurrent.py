"""Two `roscope record` runs at once stay apart (issue 15, item 10).

Recording A runs the example ROS 1 pipeline on one rosmaster port; recording B
starts while A runs and records a second instance of the pipeline on another
port. LTTng writes every traced process of the machine into both traces. The
oracle is independent of roscope: the node PIDs each system's ground truth logs,
and, read from each trace with babeltrace2, which PIDs announce which record id
in roscope_ros1:process_init and which emit roscope_ros1 events without one
(A's nodes in B's trace: they started before B's session).
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

from tests.support.ros1 import EXAMPLE, REPO, build_all, read_ground_truth, read_trace

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]


def record(out: Path, gt: Path, seconds: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    return subprocess.Popen([sys.executable, "-m", "roscope", "record", "-o", str(out), "--",
                             str(EXAMPLE / "system.sh"), "-d", str(seconds), "-g", str(gt)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def node_pids(gt: Path) -> set[int]:
    return {r["pid"] for r in read_ground_truth(gt) if r["ev"] == "start"}


def who_is_who(trace: Path) -> tuple[dict[int, str], set[int], collections.Counter]:
    """From babeltrace2: {pid: record id of its process_init}, the pids emitting roscope_ros1
    events without a process_init in this trace, and events per pid."""
    events, _ = read_trace(trace, only_recorded=False)
    announced: dict[int, str] = {}
    r1 = set()
    per_pid = collections.Counter()
    for e in events:
        per_pid[e["vpid"]] += 1
        if e["name"] == "roscope_ros1:process_init":
            announced.setdefault(e["vpid"], e["record_id"])
        elif e["name"].startswith("roscope_ros1:") and e["vpid"] not in announced:
            r1.add(e["vpid"])
    return announced, r1, per_pid


def loaded(trace: Path) -> tuple[set[int], dict, list[str]]:
    import roscope

    db = roscope.open(str(trace))
    pids = {int(x) for x in db.sql("SELECT pid FROM processes")["pid"]}
    return pids, dict(db.meta["stats"]), list(db.warnings)


def test_two_concurrent_recordings_keep_only_their_own_processes(tmp_path):
    build_all()
    ta, tb, gta, gtb = (tmp_path / x for x in ("trace-a", "trace-b", "gt-a", "gt-b"))
    a = record(ta, gta, 5)
    b = None
    try:
        end = time.monotonic() + 30
        while not (gta / "sensors.jsonl").exists() and time.monotonic() < end:
            time.sleep(0.1)
        assert (gta / "sensors.jsonl").exists(), "system A did not start"
        time.sleep(1)
        b = record(tb, gtb, 1)  # started while A runs, ends before A
        _, err_b = b.communicate(timeout=60)
        _, err_a = a.communicate(timeout=60)
    finally:
        for p in (a, b):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert a.returncode == 0, err_a
    assert b.returncode == 0, err_b
    nodes = {"a": node_pids(gta), "b": node_pids(gtb)}
    assert len(nodes["a"]) == len(nodes["b"]) == 4
    ids = {k: json.loads((t / "roscope-manifest.json").read_text())["record_id"] for k, t in (("a", ta), ("b", tb))}
    for me, other, trace in (("a", "b", ta), ("b", "a", tb)):
        announced, no_init, per_pid = who_is_who(trace)
        own = {pid for pid, rid in announced.items() if rid == ids[me]}
        others = {pid for pid, rid in announced.items() if rid != ids[me]}
        assert nodes[me] <= own  # each trace has its own nodes' process_init
        pids, stats, warnings = loaded(trace)
        # Only this recording's processes, and processes without roscope's tracer.
        assert nodes[me] <= pids
        assert not pids & (nodes[other] | others | no_init), (me, sorted(pids & (nodes[other] | others | no_init)))
        assert stats["processes_of_other_recordings"] == len(others)
        assert stats["events_of_other_recordings"] == sum(per_pid[p] for p in others)
        assert stats["processes_without_process_init"] == len(no_init)
        assert stats["events_without_process_init"] == sum(per_pid[p] for p in no_init)
        if me == "a":
            # B started during A's session: its processes announce B, all of them left out.
            assert nodes["b"] <= others and len(others) > 4
        else:
            # A's nodes started before B's session: no process_init in B's trace.
            assert nodes["a"] <= no_init
        expected = []
        if others:
            n = len(others)
            expected.append(f"left out {n} process{'es' if n > 1 else ''} ({stats['events_of_other_recordings']} "
                            f"events) of other recordings")
        if no_init:
            n = len(no_init)
            expected.append(f"left out {n} process{'es' if n > 1 else ''} ({stats['events_without_process_init']} "
                            f"events) that emit roscope_ros1 events without a roscope_ros1:process_init")
        for w in expected:
            assert sum(x.startswith(w) for x in warnings) == 1, (w, warnings)
        # every verb prints them on stderr like the trace's other warnings
        p = subprocess.run([sys.executable, "-m", "roscope", "stats", str(trace)], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
        assert p.returncode == 0, p.stderr
        for w in expected:
            assert f"roscope: warning: {w}" in p.stderr
