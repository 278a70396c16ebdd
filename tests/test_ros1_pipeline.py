"""The ROS 1 tracer on the real example pipeline, checked against ground truth.

`roscope record` records examples/ros1_pipeline (real roscpp processes on a
private rosmaster port, preloaded with instrument/ros1's tracer). The trace is
decoded with babeltrace2's Python bindings (bt2) here in the test, and compared
with the ground-truth logs the nodes write themselves (message ids carried in
the message data, their inputs, and times). Nothing comes from roscope's own
trace loader.
"""
from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

bt2 = pytest.importorskip("bt2", reason="babeltrace2 Python bindings (python3-bt2) are needed")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "ros1_pipeline"
TRACER_DIR = REPO / "instrument" / "ros1"
MSG_TYPE = "std_msgs/UInt64MultiArray"

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]

from tests.support.ros1 import TraceModel, match_receptions, read_ground_truth, read_trace  # noqa: E402

# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pipeline_recording(ros1_pipeline_run):
    """The example recorded for 8 s by its run.sh (`roscope record` of system.sh with the
    nodes' ground truth), once per test session (tests/conftest.py's ros1_pipeline_run)."""
    out, gt = ros1_pipeline_run["trace"], ros1_pipeline_run["gt"]
    events, discarded = read_trace(out)
    manifest = json.loads((out / "roscope-manifest.json").read_text())
    assert manifest["events_recorded"] == len(read_trace(out, only_recorded=False)[0])
    return {"out": out, "gt": read_ground_truth(gt), "events": events, "discarded": discarded,
            "manifest": manifest, "model": TraceModel(events), "stderr": ros1_pipeline_run["stderr"]}


# The example's source code says which member function serves which callback.
EXPECTED_SUB_SYMBOLS = {
    ("/perception/filter", "/lidar"): "Filter::onLidar(",
    ("/perception/fusion", "/lidar_filtered"): "Fusion::onLidar(",
    ("/perception/fusion", "/imu"): "Fusion::onImu(",
    ("/perception/localizer", "/tf_like"): "Localizer::onTf(",
    ("/planner", "/fused"): "Planner::onFused(",
    ("/planner", "/camera"): "Planner::onCamera(",
    ("/planner", "/tf_like"): "Planner::onTf(",
    ("/monitor", "/lidar"): "Monitor::onLidar(",
    ("/monitor", "/lidar_filtered"): "Monitor::onFiltered(",
    ("/monitor", "/plan"): "Monitor::onPlan(",
    ("/monitor", "/burst"): "Monitor::onBurst(",
    ("/monitor", "/camera_py"): "Monitor::onCameraPy(",
}
EXPECTED_TIMER_SYMBOLS = {
    "/sensors/lidar": "SensorNode::onTimer(", "/sensors/imu": "SensorNode::onTimer(",
    "/sensors/camera": "SensorNode::onTimer(", "/sensors/burst": "BurstNode::onTimer(",
    "/perception/localizer": "Localizer::onTimer(",
    "/planner": "Planner::onTimer(", "/monitor": "Monitor::onTimer(",
}


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------

def test_nothing_lost_at_default_settings(pipeline_recording):
    r = pipeline_recording
    assert r["discarded"] == 0
    assert r["manifest"]["events_discarded"] == 0
    assert r["manifest"]["events_recorded"] >= len(r["events"]) > 1000
    assert "LOST" not in r["stderr"]


def test_init_events_names_topics_types_symbols(pipeline_recording):
    m, gt = pipeline_recording["model"], pipeline_recording["gt"]
    # publishers: exactly the (node, topic) pairs that the ground truth published on
    gt_pub = {(r["node"], r["topic"]) for r in gt if r["ev"] == "pub"}
    tr_pub = collections.Counter((e["nh_namespace"], e["topic"]) for e in m.pubs.values())
    assert set(tr_pub) == gt_pub and all(v == 1 for v in tr_pub.values())
    assert {e["msg_type"] for e in m.pubs.values()} == {MSG_TYPE}
    # subscriptions: the example's twelve, with the member function as symbol
    tr_sub = {(e["nh_namespace"], e["topic"]): key for key, e in m.subs.items()}
    assert set(tr_sub) == set(EXPECTED_SUB_SYMBOLS)
    for (ns, topic), (pid, handle) in tr_sub.items():
        e = m.subs[(pid, handle)]
        assert e["msg_type"] == MSG_TYPE and e["queue_size"] == (1 if topic == "/burst" else 100)
        kind, sym = m.symbols[(pid, e["callback"])]
        assert kind == "subscription"
        assert sym.startswith(EXPECTED_SUB_SYMBOLS[(ns, topic)]), (ns, topic, sym)
        assert "UInt64MultiArray" in sym
    # timers (period from the source) and the service
    tr_timers = {e["nh_namespace"]: e for e in m.timers.values()}
    assert set(tr_timers) == set(EXPECTED_TIMER_SYMBOLS)
    assert tr_timers["/sensors/lidar"]["period"] == 50_000_000
    assert tr_timers["/sensors/imu"]["period"] == 20_000_000
    assert tr_timers["/monitor"]["period"] == 500_000_000
    for ns, e in tr_timers.items():
        kind, sym = m.symbols[(e["vpid"], e["callback"])]
        assert kind == "timer" and sym.startswith(EXPECTED_TIMER_SYMBOLS[ns]), (ns, sym)
    (srv,) = m.services.values()
    assert (srv["service_name"], srv["srv_type"], srv["nh_namespace"]) == (
        "/planner/get_status", "std_srvs/Trigger", "/planner")
    assert m.symbols[(srv["vpid"], srv["callback"])][1].startswith("Planner::onStatus(")
    # node_init: one per roscpp process, named as the processes were
    nodes = {e["node_name"] for e in pipeline_recording["events"] if e["name"] == "roscope_ros1:node_init"}
    assert nodes == {"/sensors", "/perception", "/planner", "/monitor"}


def test_every_callback_run_appears(pipeline_recording):
    m, gt = pipeline_recording["model"], pipeline_recording["gt"]
    gt_recv = collections.defaultdict(list)
    gt_timer = collections.defaultdict(list)
    gt_srv = [r for r in gt if r["ev"] == "srv"]
    for r in gt:
        if r["ev"] == "recv":
            gt_recv[(r["node"], r["topic"])].append(r)
        elif r["ev"] == "timer":
            gt_timer[r["node"]].append(r)
    checked = 0
    for (pid, cb), init in m.cb_sub.items():
        runs = m.runs.get((pid, cb), [])
        kind = m.cb_kind[(pid, cb)]
        if kind == "subscription":
            truth = gt_recv[(init["nh_namespace"], init["topic"])]
        elif kind == "timer":
            truth = gt_timer[init["nh_namespace"]]
        else:
            truth = gt_srv
        assert len(runs) == len(truth), (kind, init.get("nh_namespace"), init.get("topic"))
        # the k-th logged run happened inside the k-th traced callback span
        for (start, end, _msg, _via), row in zip(runs, truth):
            assert end is not None and start <= row["mono_ns"] <= end
        checked += len(runs)
    assert checked > 500
    # no callback run of an unknown callback
    assert set(m.runs) <= set(m.cb_sub)


def test_every_publication_appears(pipeline_recording):
    m, gt = pipeline_recording["model"], pipeline_recording["gt"]
    gt_pub = collections.defaultdict(list)
    for r in gt:
        if r["ev"] == "pub":
            gt_pub[(r["node"], r["topic"])].append(r)
    for key, init in m.pubs.items():
        pubs = m.publishes.get(key, [])
        truth = gt_pub[(init["nh_namespace"], init["topic"])]
        assert len(pubs) == len(truth) > 0, (init["nh_namespace"], init["topic"])
        for ev, row in zip(pubs, truth):
            # logged right before publish(): the trace event follows within 50 ms
            assert 0 <= ev["ts"] - row["mono_ns"] < 50_000_000


def test_every_message_matched_to_its_receptions(pipeline_recording):
    """Publisher-side and subscriber-side events identify the same message, exactly."""
    m, gt = pipeline_recording["model"], pipeline_recording["gt"]
    kinds, gt_pub, gt_recv = match_receptions(m, gt)
    # both delivery paths were exercised: no-copy and serialized intra-process, and TCP
    assert kinds[("intra", "/lidar_filtered")] > 50      # filter -> fusion, shared_ptr (no copy)
    assert kinds[("intra", "/tf_like")] > 50             # localizer -> itself, serialized
    assert kinds[("inter", "/lidar_filtered")] > 50      # same publishes, to the monitor over TCP
    assert kinds[("inter", "/lidar")] > 100
    assert kinds[("inter", "/tf_like")] > 50             # localizer -> planner
    # /burst loses messages on purpose (publisher outbox of 1, subscription queue of 1):
    # matching stays exact when roscpp drops messages on either side.
    burst_pub, burst_recv = gt_pub[("/sensors/burst", "/burst")], gt_recv[("/monitor", "/burst")]
    assert 0 < kinds[("inter", "/burst")] == len(burst_recv) < len(burst_pub) - 10
    queued = collections.Counter(
        (e["vpid"], e["callback"]) for e in m.events if e["name"] == "roscope_ros1:message_queue")
    (burst_cb,) = [k for k, i in m.cb_sub.items() if i.get("topic") == "/burst"]
    assert len(burst_recv) < queued[burst_cb], "drops in the subscription queue"
    assert queued[burst_cb] < len(burst_pub), "drops in the publisher's outbox"


def test_inputs_of_direct_and_indirect_links(pipeline_recording):
    """Ground-truth inputs are consistent with the trace's message flow (causality in time)."""
    m, gt = pipeline_recording["model"], pipeline_recording["gt"]
    pub_ts = {}
    gt_pub = collections.defaultdict(list)
    for r in gt:
        if r["ev"] == "pub":
            gt_pub[(r["node"], r["topic"])].append(r)
    for key, init in m.pubs.items():
        for ev, row in zip(m.publishes[key], gt_pub[(init["nh_namespace"], init["topic"])]):
            pub_ts[row["id"]] = ev["ts"]
    fused = gt_pub[("/perception/fusion", "/fused")]
    assert fused and all(len(r["inputs"]) == 2 for r in fused)
    for r in fused + gt_pub[("/perception/filter", "/lidar_filtered")] + gt_pub[("/planner", "/plan")]:
        for i in r["inputs"]:
            assert pub_ts[i] < pub_ts[r["id"]]


def test_annotations_name_the_right_handles(pipeline_recording):
    m = pipeline_recording["model"]
    evs = pipeline_recording["events"]
    (ps,) = [e for e in evs if e["name"] == "roscope_ros1:message_link_partial_sync"]
    (pa,) = [e for e in evs if e["name"] == "roscope_ros1:message_link_periodic_async"]

    def names(e):
        subs = {(m.subs[(e["vpid"], h)]["nh_namespace"], m.subs[(e["vpid"], h)]["topic"]) for h in e["subs"]}
        pubs = {(m.pubs[(e["vpid"], h)]["nh_namespace"], m.pubs[(e["vpid"], h)]["topic"]) for h in e["pubs"]}
        return subs, pubs

    assert names(ps) == ({("/perception/fusion", "/lidar_filtered"), ("/perception/fusion", "/imu")},
                         {("/perception/fusion", "/fused")})
    assert names(pa) == ({("/planner", "/fused"), ("/planner", "/camera")}, {("/planner", "/plan")})


def test_queue_span_is_not_a_callback_run(pipeline_recording):
    evs = pipeline_recording["events"]
    starts = [e for e in evs if e["name"] == "roscope_ros1:callback_start"]
    queue = [e for e in evs if e["name"] == "roscope_ros1:queue_call_start"]
    # every user callback run is inside a callOneCB span on the same thread
    spans = collections.defaultdict(list)
    open_q = {}
    for e in evs:
        if e["name"] == "roscope_ros1:queue_call_start":
            open_q[e["vtid"]] = e["ts"]
        elif e["name"] == "roscope_ros1:queue_call_end" and e["vtid"] in open_q:
            spans[e["vtid"]].append((open_q.pop(e["vtid"]), e["ts"]))
    for s in starts:
        assert any(a <= s["ts"] <= b for a, b in spans[s["vtid"]])
    assert len(queue) >= len(starts)


def test_direct_links_are_visible_in_the_trace(pipeline_recording):
    """A publish inside a subscription callback run (same thread, between start and end) is the
    direct causal link of the message-flow paper: for the filter, the trace's input message must
    be the ground truth's input id."""
    m, gt = pipeline_recording["model"], pipeline_recording["gt"]
    kinds, gt_pub, _ = match_receptions(m, gt)
    (filt_key,) = [k for k, i in m.pubs.items() if i["topic"] == "/lidar_filtered"]
    (filt_cb,) = [k for k, i in m.cb_sub.items() if i.get("topic") == "/lidar" and
                  i["nh_namespace"] == "/perception/filter"]
    truth = [r for r in gt if r["ev"] == "pub" and r["topic"] == "/lidar_filtered"]
    runs = m.runs[filt_cb]
    assert len(runs) == len(truth) == len(m.publishes[filt_key])
    for ev, row in zip(m.publishes[filt_key], truth):
        (run,) = [r for r in runs if r[0] <= ev["ts"] <= r[1]]
        mpid, publisher, k = run[2]
        pinit = m.pubs[(mpid, publisher)]
        assert gt_pub[(pinit["nh_namespace"], pinit["topic"])][k - 1] == row["inputs"][0]


def test_processes_of_the_recording_are_tagged(pipeline_recording):
    """process_init.record_id tells this recording's processes from any other traced ones."""
    evs, gt = pipeline_recording["events"], pipeline_recording["gt"]
    rid = pipeline_recording["manifest"]["record_id"]
    tagged = {e["vpid"]: e for e in evs if e["name"] == "roscope_ros1:process_init"}
    assert all(e["record_id"] == rid for e in tagged.values())
    gt_pids = {r["pid"] for r in gt if r["ev"] == "start"}
    node_pids = {e["vpid"] for e in evs if e["name"] == "roscope_ros1:node_init"}
    assert node_pids == gt_pids and gt_pids <= set(tagged)
    assert {tagged[p]["exe"].rsplit("/", 1)[-1] for p in gt_pids} == {"sensors", "perception", "planner", "monitor"}
