"""rospy instrumented in-process (instrument/ros1/rospy, loaded by `roscope record`).

The example pipeline runs with its two rospy nodes (system.sh -P): roscpp -> rospy
(/camera -> /pyrelay), rospy -> rospy (/camera_py, /py_tick -> /pylistener) and
rospy -> roscpp (/camera_py -> /monitor). The trace, decoded with bt2, is checked
against the nodes' ground-truth logs: init events, every callback run and every
publication, and exact message matching across the two client libraries.
"""
from __future__ import annotations

import collections
import json

import pytest

from tests.support.ros1 import EXAMPLE, TraceModel, build_all, match_receptions, read_ground_truth, read_trace, roscope_record

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]


@pytest.fixture(scope="module")
def py_recording(tmp_path_factory):
    build_all()
    base = tmp_path_factory.mktemp("ros1_rospy")
    out, gt = base / "trace", base / "gt"
    p = roscope_record(["-o", str(out), "--", str(EXAMPLE / "system.sh"), "-P", "-d", "6", "-g", str(gt)])
    assert p.returncode == 0, p.stderr
    events, discarded = read_trace(out)
    return {"events": events, "discarded": discarded, "model": TraceModel(events), "gt": read_ground_truth(gt),
            "manifest": json.loads((out / "roscope-manifest.json").read_text())}


def test_rospy_init_events(py_recording):
    m, evs = py_recording["model"], py_recording["events"]
    assert py_recording["discarded"] == 0 and py_recording["manifest"]["events_discarded"] == 0
    nodes = {e["node_name"] for e in evs if e["name"] == "roscope_ros1:node_init"}
    assert {"/pyrelay", "/pylistener"} <= nodes
    subs = {(e["nh_namespace"], e["topic"]): e for e in m.subs.values() if e["procname"] == "python3"}
    assert set(subs) == {("/pyrelay", "/camera"), ("/pylistener", "/camera_py"), ("/pylistener", "/py_tick")}
    for e in subs.values():
        assert e["msg_type"] == "std_msgs/UInt64MultiArray" and e["queue_size"] == 100
    sym = {k: m.symbols[(e["vpid"], e["callback"])] for k, e in subs.items()}
    assert sym[("/pyrelay", "/camera")] == ("subscription", "__main__.main.<locals>.on_camera")
    assert sym[("/pylistener", "/py_tick")] == ("subscription", "__main__.on_py_tick")
    pubs = {(e["nh_namespace"], e["topic"]): e for e in m.pubs.values() if e["procname"] == "python3"}
    assert {("/pyrelay", "/camera_py"), ("/pyrelay", "/py_tick")} <= set(pubs)
    assert pubs[("/pyrelay", "/camera_py")]["queue_size"] == 10
    (timer,) = [e for e in m.timers.values() if e["procname"] == "python3"]
    assert timer["period"] == 200_000_000 and timer["nh_namespace"] == "/pyrelay"
    assert m.symbols[(timer["vpid"], timer["callback"])] == ("timer", "__main__.main.<locals>.on_tick")


def test_rospy_callbacks_and_publications_all_appear(py_recording):
    m, gt = py_recording["model"], py_recording["gt"]
    want = collections.Counter()
    for r in gt:
        if r["ev"] == "recv":
            want[("recv", r["node"], r["topic"])] += 1
        elif r["ev"] == "timer":
            want[("timer", r["node"])] += 1
        elif r["ev"] == "pub":
            want[("pub", r["node"], r["topic"])] += 1
    got = collections.Counter()
    for key, init in m.cb_sub.items():
        kind = m.cb_kind[key]
        if kind == "subscription":
            got[("recv", init["nh_namespace"], init["topic"])] += len(m.runs.get(key, []))
        elif kind == "timer":
            got[("timer", init["nh_namespace"])] += len(m.runs.get(key, []))
    for key, init in m.pubs.items():
        n = len(m.publishes.get(key, []))
        if init["topic"] != "/rosout":  # rospy's own log publisher: no ground truth
            got[("pub", init["nh_namespace"], init["topic"])] += n
    assert {k: v for k, v in got.items() if v or k in want} == dict(want)
    assert want[("recv", "/pylistener", "/camera_py")] > 30 and want[("timer", "/pyrelay")] > 20


def test_messages_matched_across_roscpp_and_rospy(py_recording):
    kinds, _pub, _recv = match_receptions(py_recording["model"], py_recording["gt"])
    assert kinds[("inter", "/camera")] > 60       # roscpp /sensors/camera -> planner and rospy /pyrelay
    assert kinds[("inter", "/camera_py")] > 60    # rospy -> rospy and rospy -> roscpp
    assert kinds[("inter", "/py_tick")] > 20      # rospy unqueued publisher -> rospy
