"""Executor objects and callback groups (issue 30, CARET users' executor table):
`roscope executor`'s per-executor table against babeltrace2's decoding of CARET's executor
structure events, and each member's runs against ros2sim's ground truth.

The system (ros2sim --caret, a Humble application with CARET's hook library): a process with a
multi-threaded executor of three threads holding two nodes, one of them reentrant, with timers
and subscriptions in both; a single-threaded sensor process with one timer; and a relay whose
node only subscribes. Every executor, group and member roscope shows must be what the events
say (each once, though CARET may repeat them), with the executor and group types the system
description asks for; each member's runs are its entity's runs in the ground truth, on the
threads the ground truth saw them on. A trace without these events (the shared CARET
end-to-end trace: CARET on Galactic, whose metadata declares none) shows no executor object and
says so.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import pytest

from tests.support.ros2sim import DRIVER, build_ros2sim, ground_truth, run_roscope
from tests.support.shared import TRACES as SHARED_TRACES

bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle of the events")

WORK = {"dist": "fixed", "us": 300}
SYSTEM = {"processes": [
    {"name": "sensor", "nodes": [{"name": "lidar", "publishers": [{"topic": "/scan"}],
                                   "timers": [{"period_ms": 10, "work": WORK, "publish": ["/scan"]}]}]},
    {"name": "fusion_mt", "executor": {"type": "multi", "threads": 3}, "nodes": [
        {"name": "fuser", "reentrant": True, "publishers": [{"topic": "/fused"}],
         "subscriptions": [{"topic": "/scan", "depth": 5, "work": WORK, "publish": ["/fused"]}],
         "timers": [{"period_ms": 25, "work": WORK}]},
        {"name": "monitor", "subscriptions": [{"topic": "/fused", "depth": 5, "work": WORK}],
         "timers": [{"period_ms": 40, "offset_ms": 3, "work": WORK}]}]},
    {"name": "relay", "nodes": [{"name": "relay", "subscriptions": [{"topic": "/fused", "depth": 2, "work": WORK}]}]},
]}
STRUCTURE = ("ros2_caret:construct_executor", "ros2_caret:add_callback_group")
MEMBER = "ros2_caret:callback_group_add_"


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("ros2sim hosts need unshare (root)")
    build_ros2sim()
    base = tmp_path_factory.mktemp("executor-groups")
    system = base / "system.json"
    system.write_text(json.dumps(SYSTEM))
    out = base / "sim"
    p = subprocess.run([sys.executable, str(DRIVER), "run", "--system", str(system), "--distro", "humble", "--caret",
                        "--duration", "1", "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    r = run_roscope("executor", str(out / "traces"), "--json")
    assert r.returncode == 0, r.stderr
    text = run_roscope("executor", str(out / "traces"), "--wide")
    assert text.returncode == 0, text.stderr
    return {"out": out, "manifest": json.loads((out / "manifest.json").read_text()), "gt": ground_truth(out),
            "json": json.loads(r.stdout), "text": text.stdout}


def bt2_structure(path) -> dict:
    """Per pid, from babeltrace2: {executor addr: type}, {group addr: (executor addr, type)},
    {(group addr, kind, handle)}."""
    out = collections.defaultdict(lambda: ({}, {}, set()))
    for m in bt2.TraceCollectionMessageIterator(str(path)):
        if type(m) is not bt2._EventMessageConst or not m.event.name.startswith("ros2_caret:"):
            continue
        ev = m.event
        f, (execs, groups, members) = ev.payload_field, out[int(ev.common_context_field["vpid"])]
        if ev.name == STRUCTURE[0]:
            execs[int(f["executor_addr"])] = str(f["executor_type_name"])
        elif ev.name == STRUCTURE[1]:
            groups[int(f["callback_group_addr"])] = (int(f["executor_addr"]), str(f["group_type_name"]))
        elif ev.name.startswith(MEMBER):
            kind = ev.name[len(MEMBER):]
            members.add((int(f["callback_group_addr"]), kind, int(f[f"{kind}_handle"])))
    return dict(out)


@pytest.mark.lttng
def test_executors_groups_and_members_equal_babeltrace2s(sim):
    want = bt2_structure(sim["out"] / "traces")
    got = collections.defaultdict(lambda: ({}, {}, set()))
    for x in sim["json"]["executor_objects"]:
        assert x["executor_id"] is not None, "every group's executor is in the trace"
        execs, groups, members = got[x["pid"]]
        assert x["handle"] not in execs, "each executor once"
        execs[x["handle"]] = x["type"]
        for g in x["groups"]:
            assert g["handle"] not in groups, "each group once"
            groups[g["handle"]] = (x["handle"], g["type"])
            for m in g["members"]:
                key = (g["handle"], m["kind"], m["handle"])
                assert key not in members, "each member once"
                members.add(key)
    assert dict(got) == want
    assert len(want) == 3 and sum(len(g) for _, g, _ in want.values()) == 4


@pytest.mark.lttng
def test_types_are_the_systems(sim):
    """The executor type of each process and the group type of each node, as the description asks."""
    pids = {p["name"]: p["vpid"] for p in sim["manifest"]["processes"]}
    by_pid = {x["pid"]: x for x in sim["json"]["executor_objects"]}
    assert by_pid[pids["fusion_mt"]]["type"] == "multi_threaded_executor"
    assert by_pid[pids["sensor"]]["type"] == by_pid[pids["relay"]]["type"] == "single_threaded_executor"
    groups = {(x["pid"], m["node"]): g["type"] for x in sim["json"]["executor_objects"] for g in x["groups"]
              for m in g["members"] if m["kind"] != "service"}
    assert groups == {(pids["sensor"], "/lidar"): "mutually_exclusive", (pids["fusion_mt"], "/fuser"): "reentrant",
                      (pids["fusion_mt"], "/monitor"): "mutually_exclusive", (pids["relay"], "/relay"): "mutually_exclusive"}


@pytest.mark.lttng
def test_member_runs_and_threads_equal_ground_truth(sim):
    """Each timer's and subscription's runs and threads are its entity's in the ground truth."""
    runs, tids = collections.Counter(), collections.defaultdict(set)
    for r in sim["gt"]["callbacks"]:
        if r["end_ns"] and r["is_intra"] == "0":
            key = (int(r["vpid"]), r["kind"], int(r["entity_handle"], 16))
            runs[key] += 1
            tids[key].add(int(r["tid"]))
    seen = 0
    for x in sim["json"]["executor_objects"]:
        assert x["runs"] == sum(g["runs"] for g in x["groups"])
        assert x["tids"] == sorted({t for g in x["groups"] for m in g["members"] for t in m["tids"]})
        for g in x["groups"]:
            assert g["runs"] == sum(m["runs"] for m in g["members"])
            assert g["busy_ns"] == sum(m["busy_ns"] for m in g["members"])
            for m in g["members"]:
                key = (x["pid"], m["kind"], m["handle"])
                assert m["runs"] == runs[key], key
                assert set(m["tids"]) == tids[key], key
                assert m["callback_id"] is not None or m["runs"] == 0
                seen += m["kind"] in ("timer", "subscription")
    assert seen == 6 and sum(runs.values()) > 100
    fusion = [x for x in sim["json"]["executor_objects"] if x["type"] == "multi_threaded_executor"][0]
    assert len(fusion["tids"]) > 1, "the multi-threaded executor's callbacks ran on several threads"


@pytest.mark.lttng
def test_text_shows_each_executor_and_group(sim):
    text = sim["text"]
    assert "executors and their callback groups" in text
    for x in sim["json"]["executor_objects"]:
        assert f"executor 0x{x['handle']:x} {x['type']}" in text
        for g in x["groups"]:
            assert f"group 0x{g['handle']:x} {g['type']}" in text


@pytest.mark.lttng
def test_report_folds_the_executors_and_groups(sim, tmp_path):
    """The report's executors section lists every member under its executor and group."""
    html = tmp_path / "r.html"
    r = run_roscope("report", str(sim["out"] / "traces"), "-o", str(html))
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    fold = page[page.index("<summary>Executors and callback groups (3 executors"):]
    fold = fold[:fold.index("</details>")]
    for x in sim["json"]["executor_objects"]:
        assert f"{x['type']} 0x{x['handle']:x}" in fold
        for g in x["groups"]:
            assert fold.count(f'data-v="{g["type"]} 0x{g["handle"]:x}"') == len(g["members"])


def test_a_trace_without_the_events_says_so():
    path = os.path.join(SHARED_TRACES, "ros2", "caret-end-to-end-cyclonedds")
    if not os.path.isdir(path):
        pytest.skip("no shared traces")
    # babeltrace2: the trace declares no executor structure event.
    declared = set()
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is bt2._StreamBeginningMessageConst:
            declared |= {ec.name for ec in m.stream.cls.values()}
            break
    assert declared and not {n for n in declared if n.startswith(STRUCTURE) or n.startswith(MEMBER)}
    r = run_roscope("executor", path, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["executor_objects"] == [] and d["executors"], "the per-thread table stays"
    t = run_roscope("executor", path)
    assert t.returncode == 0, t.stderr
    assert "executor objects and callback groups: not in this trace" in t.stdout
    assert "callbacks per executor thread" in t.stdout
