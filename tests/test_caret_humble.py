"""A Humble system with CARET (ros2sim --caret --distro humble) read by roscope.

ros2sim (tools/ros2sim, docs/ros2sim.md) emits through real LTTng what CARET's hook library
emits in a Humble application: its init events instead of ros2_tracing's (no ros2:rcl_init with
a version), ros2_caret:caret_init with the distribution, and dds_bind_addr_to_stamp instead of a
timestamped rmw_publish. One of the two hosts is not traced: its messages are taken by a traced
subscription without a publication in the trace, so there are unmatched takes besides unmatched
(dropped) publications. Expected values come from ros2sim's ground truth and from babeltrace2.
"""
from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys

import pytest

from tests.support.ros2sim import DRIVER, build_ros2sim, ground_truth, load_db, roscope_links, run_roscope, truth_links

pytestmark = pytest.mark.lttng
bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle of the events")

# /mixed: a traced and an untraced publisher, a slow traced subscriber with a history of 1 (drops);
# /chatter: a clean pair.
SYSTEM = {
    "hosts": [{"name": "traced-a"}, {"name": "hidden-b", "traced": False}],
    "processes": [
        {"name": "talker_a", "host": "traced-a", "nodes": [{"name": "talker_a",
            "publishers": [{"topic": "/mixed"}, {"topic": "/chatter"}],
            "timers": [{"period_ms": 20, "work": {"dist": "fixed", "us": 100}, "publish": ["/mixed"]},
                       {"period_ms": 50, "work": {"dist": "fixed", "us": 100}, "publish": ["/chatter"]}]}]},
        {"name": "talker_b", "host": "hidden-b", "nodes": [{"name": "talker_b", "publishers": [{"topic": "/mixed"}],
            "timers": [{"period_ms": 20, "offset_ms": 7, "work": {"dist": "fixed", "us": 100}, "publish": ["/mixed"]}]}]},
        {"name": "listener", "host": "traced-a", "nodes": [{"name": "listener", "subscriptions": [
            {"topic": "/mixed", "depth": 1, "work": {"dist": "fixed", "us": 15000}},
            {"topic": "/chatter", "depth": 10, "work": {"dist": "fixed", "us": 200}}]}]},
    ]}
TOPICS = ("/mixed", "/chatter")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("ros2sim hosts need unshare (root)")
    build_ros2sim()
    base = tmp_path_factory.mktemp("caret-humble")
    system = base / "system.json"
    system.write_text(json.dumps(SYSTEM))
    out = base / "sim"
    p = subprocess.run([sys.executable, str(DRIVER), "run", "--system", str(system), "--distro", "humble", "--caret",
                        "--duration", "1.5", "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    traced = {p["name"] for p in manifest["processes"] if p["host"] == "traced-a"}
    gt = ground_truth(out)
    return {"out": out, "trace": out / "traces", "manifest": manifest, "gt": gt, "base": base,
            "pids": {p["vpid"] for p in manifest["processes"] if p["name"] in traced},
            "traced_msg": lambda m: m["process"] in traced}


def expected_topics(s) -> dict[str, dict]:
    """Per topic, from the ground truth: traced publications, deliveries linked, unmatched on each side."""
    gt, traced = s["gt"], s["traced_msg"]
    msgs = {m["msg_id"]: m for m in gt["messages"]}
    taken = collections.defaultdict(list)
    for d in gt["deliveries"]:
        if d["status"] == "taken":
            taken[d["msg_id"]].append(d)
    out = {}
    for t in TOPICS:
        mine = [m for m in gt["messages"] if m["topic"] == t and traced(m)]
        out[t] = {
            "publications": len(mine),
            "deliveries": sum(len(taken[m["msg_id"]]) for m in mine),
            "unmatched_publications": sum(1 for m in mine if not taken[m["msg_id"]]),
            "unmatched_takes": sum(1 for d in gt["deliveries"] if d["status"] == "taken" and d["topic"] == t
                                   and not traced(msgs[d["msg_id"]])),
        }
    return out


def test_the_trace_is_what_humble_with_caret_emits(sim):
    """The simulator's CARET mode, read with babeltrace2: CARET's events, without the ones it replaces."""
    names = collections.Counter()
    caret_init, stamps = [], collections.Counter()
    for m in bt2.TraceCollectionMessageIterator(str(sim["trace"])):
        if type(m) is not bt2._EventMessageConst:
            continue
        e = m.event
        names[e.name] += 1
        if e.name == "ros2_caret:caret_init":
            caret_init.append((int(e.common_context_field["vpid"]), str(e.payload_field["distribution"])))
        elif e.name == "ros2_caret:dds_bind_addr_to_stamp":
            stamps[(int(e.common_context_field["vpid"]), int(e.payload_field["source_stamp"]))] += 1
    assert sorted(caret_init) == sorted((pid, "humble") for pid in sim["pids"])
    assert names["ros2_caret:rcl_init"] == len(sim["pids"])
    for absent in ("ros2:rcl_init", "ros2:rcl_node_init", "ros2:rmw_publish", "ros2:rmw_publisher_init",
                   "ros2:rclcpp_executor_execute", "ros2:rcl_take"):
        assert names[absent] == 0, absent
    # one stamp per publication of the traced processes: the ground truth's source timestamps
    want = collections.Counter((int(m["vpid"]), int(m["source_timestamp"])) for m in sim["gt"]["messages"]
                               if sim["traced_msg"](m))
    assert stamps == want and sum(want.values()) > 50
    assert names["ros2:rmw_take"] >= sum(1 for d in sim["gt"]["deliveries"] if d["status"] == "taken")


def test_info_names_humble_with_caret(sim):
    """Needs roscope info to read caret_init.distribution and ros2_caret:rcl_init (issue 9)."""
    p = run_roscope("info", "--json", str(sim["trace"]))
    assert p.returncode == 0, p.stderr
    traces = json.loads(p.stdout)["traces"]
    assert len(traces) == 1   # the untraced host left no trace
    ros = traces[0]["ros"]
    assert ros["flavour"] == "ROS 2" and ros["caret"] is True
    assert str(ros["distro"]).startswith("Humble"), ros


def test_transport_links_are_caret_source_stamps_and_complete(sim):
    """Every delivery between traced processes is linked, by CARET's source stamp (issue 9: not rmw_timestamp)."""
    want = truth_links(sim["gt"], sim["traced_msg"])
    p = run_roscope("stats", "--json", str(sim["trace"]))
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stdout)
    topics = {t["topic"]: t for t in stats["topics"]}
    exp = expected_topics(sim)
    for t in TOPICS:
        got = {k: topics[t][k] for k in exp[t]}
        assert got == exp[t], t
    assert exp["/mixed"]["unmatched_publications"] > 0 and exp["/mixed"]["unmatched_takes"] > 0
    con = load_db(sim["trace"], sim["base"] / "caret.duckdb")
    try:
        got, methods = roscope_links(con, sim["gt"], sim["pids"])
    finally:
        con.close()
    assert got == want and len(want) > 50
    assert dict(methods) == {"caret_source_stamp": len(want)}
    assert stats["summary"]["links_by_method"] == {"caret_source_stamp": len(want)}


def unmatched_cells(text: str, topic: str) -> dict[str, str]:
    """The values under the text table's unmatched publications / takes columns (right-aligned) in a topic's row."""
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("Topics"))
    header = lines[i + 1]
    row = next(ln for ln in lines[i + 2:] if ln.split()[:1] == [topic])
    cells = {}
    for kind, pat in (("publications", r"unm\w*\.?\s+pub\w*"), ("takes", r"unm\w*\.?\s+take\w*")):
        m = re.search(pat, header, re.IGNORECASE)
        assert m, f"no column of unmatched {kind} in the Topics table: {header!r}"
        end = m.end()
        assert row[end:end + 1] in ("", " ") and row[end - 1:end] != " ", (kind, header, row)
        cells[kind] = row[:end].split()[-1]
    return cells


def test_stats_text_shows_unmatched_publications_and_takes(sim):
    """Issue 9: the text table showed only unmatched publications, the JSON also unmatched takes."""
    p = run_roscope("stats", str(sim["trace"]))
    assert p.returncode == 0, p.stderr
    exp = expected_topics(sim)
    for t in TOPICS:
        cells = unmatched_cells(p.stdout, t)
        assert cells == {"publications": str(exp[t]["unmatched_publications"]),
                         "takes": str(exp[t]["unmatched_takes"])}, (t, cells)
