"""`roscope deps`: intra-node dependencies from C++ sources (docs/deps.md).

The truth is written by hand, never taken from roscope:
- examples/ros1_pipeline: its causal-link annotations (roscope::message_link_*
  calls in src/*.cpp, docs/ros1-tracer.md) say which callbacks feed which;
- tests/fixtures/deps/src/*.cpp: small nodes, one construct each, with the
  expected edges in comments next to the code and below;
- ros-realtime/reference-system: its README's documented node types.
On live recordings (lttng, ros1), the dependency file is matched to the trace's
callbacks and the edges are compared with the annotations as babeltrace2 decodes
them (which callbacks the annotated subscriptions have, and which callbacks
publish on the annotated publishers).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from roscope import deps
from roscope.errors import InputError

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "ros1_pipeline"
FX = REPO / "tests" / "fixtures" / "deps"
SRC = FX / "src"
STUB = FX / "rclcpp_stub"
REFSYS = FX / "reference_system" / "reference_system" / "include"

needs_roscpp = pytest.mark.skipif(not os.path.isfile("/usr/include/ros/ros.h"),
                                  reason="roscpp's headers are not installed (Debian's ros-core-dev / libroscpp-dev)")


def prf(found: set, truth: set) -> tuple[float, float]:
    tp = len(found & truth)
    return (tp / len(found) if found else 1.0), (tp / len(truth) if truth else 1.0)


def callbacks(doc: dict) -> dict[str, dict]:
    return {cb["id"]: cb for n in doc["nodes"] for cb in n["callbacks"]}


def key(cb: dict) -> str:
    """A callback named by what it is registered for: 'sub /topic', 'timer 100ms', 'srv name'."""
    if cb["kind"] == "timer":
        return f"timer {cb['period_ns'] // 1_000_000}ms" if cb["period_ns"] is not None else f"timer {cb['function']}"
    return f"{'sub' if cb['kind'] == 'subscription' else 'srv'} {cb['topic']}"


def edges_by_key(doc: dict) -> set[tuple[str, str]]:
    cbs = callbacks(doc)
    return {(key(cbs[e["from"]]), key(cbs[e["to"]])) for e in doc["edges"]}


# ---------------------------------------------------------------- examples/ros1_pipeline

# The truth, by hand from the annotations in the example's sources:
PIPELINE_TRUTH = {
    # perception.cpp, Fusion::Fusion: message_link_partial_sync({&sub_lidar_, &sub_imu_}, {&pub_}):
    # /fused is published by either subscription callback, from the latest message of both.
    ("Fusion::onLidar", "Fusion::onImu"), ("Fusion::onImu", "Fusion::onLidar"),
    # planner.cpp, Planner::Planner: message_link_periodic_async({&sub_fused_, &sub_camera_}, {&pub_}):
    # the timer publishes /plan from what the /fused and /camera callbacks cached.
    ("Planner::onFused", "Planner::onTimer"), ("Planner::onCamera", "Planner::onTimer"),
}
# No other annotation: Filter and the sensors publish from their own input only, Localizer's
# timer does not use what its /tf_like callback receives, Monitor publishes nothing.


@pytest.fixture(scope="module")
def pipeline(pipeline_deps):
    """`roscope deps -p BUILD -o FILE` on the example's sources, with a compile_commands.json
    made from its Makefile (run once per test session: tests/conftest.py's pipeline_deps,
    which test_flow_truth.py reads too)."""
    return pipeline_deps


@needs_roscpp
@pytest.mark.slow
def test_pipeline_edges_precision_recall(pipeline):
    doc = pipeline["doc"]
    found = {(e["from"], e["to"]) for e in doc["edges"]}
    precision, recall = prf(found, PIPELINE_TRUTH)
    print(f"examples/ros1_pipeline: {len(found)} edges, precision {precision:.3f}, recall {recall:.3f}, "
          f"roscope deps {pipeline['seconds']:.1f} s")
    assert (precision, recall) == (1.0, 1.0), found
    assert all(e["certain"] and e["through"] == "member" and not e["cross_node"] for e in doc["edges"])
    assert doc["undecided"] == []
    # the causes: the cached member fields
    by = {(e["from"], e["to"]): e["state"] for e in doc["edges"]}
    assert "Planner::fused_" in by[("Planner::onFused", "Planner::onTimer")]
    assert "Planner::camera_" in by[("Planner::onCamera", "Planner::onTimer")]
    assert {"Fusion::imu_", "Fusion::lidar_"} <= set(by[("Fusion::onImu", "Fusion::onLidar")])
    assert "Planner::onFused -> Planner::onTimer: Planner::fused_" in pipeline["stdout"]


@needs_roscpp
@pytest.mark.slow
def test_pipeline_callbacks(pipeline):
    doc = pipeline["doc"]
    cbs = callbacks(doc)
    # Every registration in the sources (subscribe, createTimer, advertiseService), no more.
    assert sorted(cbs) == sorted([
        "BurstNode::onTimer", "Filter::onLidar", "Fusion::onImu", "Fusion::onLidar", "Localizer::onTf",
        "Localizer::onTimer", "Monitor::onBurst", "Monitor::onCameraPy", "Monitor::onFiltered", "Monitor::onLidar",
        "Monitor::onPlan", "Monitor::onTimer", "Planner::onCamera", "Planner::onFused", "Planner::onStatus",
        "Planner::onTf", "Planner::onTimer", "SensorNode::onTimer"])
    assert {k: (cbs[k]["kind"], cbs[k]["topic"]) for k in ("Filter::onLidar", "Planner::onStatus", "Monitor::onBurst")} == {
        "Filter::onLidar": ("subscription", "/lidar"), "Planner::onStatus": ("service", "/planner/get_status"),
        "Monitor::onBurst": ("subscription", "/burst")}
    # Periods known at compile time: ros::Duration(0.5), ros::Duration(0.2); the others come from parameters.
    assert cbs["Monitor::onTimer"]["period_ns"] == 500_000_000
    assert cbs["BurstNode::onTimer"]["period_ns"] == 200_000_000
    assert cbs["Planner::onTimer"]["period_ns"] is None
    assert cbs["Planner::onTimer"]["period_expr"] == 'ros::Duration(1.0 / param_rate("PIPELINE_PLAN_HZ", 10))'
    # Symbols as roscope's ROS 1 tracer records them (the demangled member function).
    assert cbs["Filter::onLidar"]["symbol"] == (
        "Filter::onLidar(boost::shared_ptr<std_msgs::UInt64MultiArray_<std::allocator<void> > const> const&)")
    assert cbs["Planner::onStatus"]["symbol"] == ("Planner::onStatus(std_srvs::TriggerRequest_<std::allocator<void> >&, "
                                                  "std_srvs::TriggerResponse_<std::allocator<void> >&)")
    assert cbs["SensorNode::onTimer"]["symbol"] == "SensorNode::onTimer(ros::TimerEvent const&)"
    # What each publishes on (topics given as literals to advertise; SensorNode's comes from its constructor).
    pubs = {k: sorted({p["topic"] for p in cb["publishes"]}, key=str) for k, cb in cbs.items() if cb["publishes"]}
    assert pubs == {"BurstNode::onTimer": ["/burst"], "Filter::onLidar": ["/lidar_filtered"],
                    "Fusion::onImu": ["/fused"], "Fusion::onLidar": ["/fused"], "Localizer::onTimer": ["/tf_like"],
                    "Planner::onTimer": ["/plan"], "SensorNode::onTimer": [None]}
    assert cbs["SensorNode::onTimer"]["publishes"][0]["publisher"] == "SensorNode::pub_"
    # Node names given as literals to the NodeHandles.
    assert cbs["Fusion::onImu"]["ros_name"] == "/perception/fusion"
    assert cbs["Planner::onTimer"]["ros_name"] == "/planner"
    # Locks, ROS handles and the ground-truth log's FILE are not state.
    for cb in cbs.values():
        for acc in cb["reads"] + cb["writes"]:
            assert not re.search(r"::(mu_|nh_|pub_|sub_\w*|timer_)$|gt_\.mu_|gt_\.f_->", acc["state"]), (cb["id"], acc)


# ---------------------------------------------------------------- fixtures, one construct each

@pytest.fixture(scope="module")
def ros1_fixtures():
    """The ROS 1 fixtures analysed together (ros1_class_helpers.cpp defines what ros1_class.cpp declares)."""
    srcs = ["ros1_class.cpp", "ros1_class_helpers.cpp", "ros1_lambdas.cpp", "ros1_undecided.cpp"]
    return deps.analyze([str(SRC / s) for s in srcs], flags=["-std=c++17"])


def node_doc(doc: dict, name: str) -> dict:
    (node,) = [n for n in doc["nodes"] if n["name"] == name]
    ids = {cb["id"] for cb in node["callbacks"]}
    return {"nodes": [node], "edges": [e for e in doc["edges"] if e["from"] in ids and e["to"] in ids]}


@needs_roscpp
@pytest.mark.slow
def test_class_members_containers_const_calls_references(ros1_fixtures):
    doc = node_doc(ros1_fixtures, "Estimator")
    # By hand, from ros1_class.cpp (the callbacks named by their topic, relative to the "estimator" NodeHandle):
    truth = {
        ("sub raw", "timer 100ms"),     # samples_.push_back -> mean(): samples_.empty(), sum(samples_), size()
        ("sub reset", "timer 100ms"),   # samples_.clear()   -> the same reads
        ("sub config", "timer 100ms"),  # gains_["k"] = ...  -> gain(): gains_.find("k"), it->second
        ("sub mark", "sub stats"),      # clamp_all(filtered_) (non-const reference) -> total(filtered_)
    }
    # not: sub mark -> sub stats through last_ (read after the publication); nothing into sub log (publishes nothing)
    assert edges_by_key(doc) == truth
    cbs = {key(cb): cb for cb in doc["nodes"][0]["callbacks"]}
    writes = {k: sorted(a["state"] for a in cb["writes"]) for k, cb in cbs.items()}
    reads = {k: sorted(a["state"] for a in cb["reads"]) for k, cb in cbs.items()}
    assert writes["sub raw"] == ["Estimator::samples_"]            # push_back: a write
    assert writes["sub reset"] == ["Estimator::samples_"]          # clear: a write
    assert writes["sub config"] == ["Estimator::gains_", "Estimator::gains_[]"]  # map operator[] inserts, = sets
    assert reads["timer 100ms"] == ["Estimator::gains_", "Estimator::gains_[].second",  # find(), it->second
                                    "Estimator::samples_", "Estimator::samples_[]"]  # empty(), size(); sum()'s loop
    assert reads["sub log"] == ["Estimator::samples_"] and writes["sub log"] == []  # size() is const: a read
    assert "Estimator::last_" in reads["sub stats"]                # read, but after the publication
    assert "Estimator::filtered_[]" in writes["sub mark"]          # clamp_all's body (the other file) writes elements
    assert ros1_fixtures["notes"] == []                            # both helpers' definitions were found


@needs_roscpp
@pytest.mark.slow
def test_declarations_decide_without_definitions():
    """ros1_class.cpp alone: clamp_all and total are only declared there; the
    non-const reference is a write, the const reference a read, and it says so."""
    doc = deps.analyze([str(SRC / "ros1_class.cpp")])
    assert ("sub mark", "sub stats") in edges_by_key(doc)
    assert any(n.startswith("no definition of clamp_all (called at ") and "decided from its declaration" in n
               for n in doc["notes"])


@needs_roscpp
@pytest.mark.slow
def test_lambdas_in_main_captures_globals_free_functions(ros1_fixtures):
    doc = node_doc(ros1_fixtures, "main")
    # By hand, from ros1_lambdas.cpp:
    truth = {
        ("sub in", "timer 50ms"),      # [&last] writes last; [&] reads last
        ("sub offset", "timer 50ms"),  # onOffset (a free function) writes g_offset; corrected() reads it
        ("sub state", "timer 200ms"),  # [state] writes state->value (shared); [state, &pub] reads it
    }
    # not: sub copy -> timer 50ms: [copy_me] writes its own copy (the timer reads main's copy_me)
    assert edges_by_key(doc) == truth
    by = {(key(callbacks(doc)[e["from"]]), key(callbacks(doc)[e["to"]])): e for e in doc["edges"]}
    assert by[("sub in", "timer 50ms")]["state"] == ["main()::last"]
    assert by[("sub offset", "timer 50ms")]["state"] == ["g_offset"]
    assert by[("sub state", "timer 200ms")]["state"] == ["main()::state->value"]
    assert all(e["through"] == "shared" for e in doc["edges"])  # not member state: any node of the process
    cbs = {key(cb): cb for cb in doc["nodes"][0]["callbacks"]}
    # s_calls (a file-static) is written by onOffset and read by nobody
    assert "s_calls" in [a["state"] for a in cbs["sub offset"]["writes"]]
    # GCC numbers a function's lambdas in order: the two timers are main's 4th and 5th lambdas
    assert cbs["timer 50ms"]["symbol"] == "main::{lambda(ros::TimerEvent const&)#4}"
    assert cbs["sub in"]["symbol"] == (
        "main::{lambda(boost::shared_ptr<std_msgs::Float64_<std::allocator<void> > const> const&)#1}")
    assert cbs["sub offset"]["symbol"] == "onOffset(boost::shared_ptr<std_msgs::Float64_<std::allocator<void> > const> const&)"


@needs_roscpp
@pytest.mark.slow
def test_undecided_accesses_are_listed_with_their_location(ros1_fixtures):
    doc = node_doc(ros1_fixtures, "Odd")
    und = sorted((u["callback"], u["state"], u["at"].rsplit(":", 1)[0].split("/")[-1]) for u in ros1_fixtures["undecided"]
                 if u["callback"].startswith("Odd::"))
    # ros1_undecided.cpp line 19: hook_(value_), a call through a function pointer;
    # line 26: sscanf(..., &scanned_), a pointer given to a variadic function
    assert und == [("Odd::onA", "Odd::value_", "ros1_undecided.cpp:19"),
                   ("Odd::onC", "Odd::scanned_", "ros1_undecided.cpp:26")]
    # counted as writes, so the edges exist, marked as resting on an undecided access
    assert edges_by_key(doc) == {("sub a", "sub b"), ("sub c", "sub b")}
    assert all(not e["certain"] for e in doc["edges"])


@pytest.fixture(scope="module")
def ros2_doc():
    return deps.analyze([str(SRC / "ros2_nodes.cpp")], flags=["-isystem", str(STUB), "-std=c++17"])


def test_ros2_class_lambdas_bind_loops_and_main(ros2_doc):
    doc = ros2_doc
    relay, main = node_doc(doc, "Relay"), node_doc(doc, "main")
    # By hand, from ros2_nodes.cpp:
    assert edges_by_key(relay) == {
        ("sub input", "timer 100ms"),          # [this] writes latest_; the timer's publish_latest() reads it
        ("sub hint", "timer 100ms"),           # std::bind(&Relay::onHint, this, _1) writes hint_
        ("sub shared_in", "sub shared_in"),    # registered in a loop, all count in shared_count_
    }  # not sub lane_in -> sub lane_in: each registration counts in its own lanes_[i]
    assert edges_by_key(main) == {("sub label", "timer 500ms")}  # [&label] -> [&]; count is the timer's own
    cbs = {key(cb): cb for n in doc["nodes"] for cb in n["callbacks"]}
    assert cbs["sub lane_in"]["instances"] == cbs["sub shared_in"]["instances"] == "many"
    assert cbs["timer 100ms"]["ros_name"] == "relay" and cbs["timer 500ms"]["ros_name"] == "counter"
    assert [p["topic"] for p in cbs["timer 100ms"]["publishes"]] == ["relayed"]
    assert [p["topic"] for p in cbs["sub lane_in"]["publishes"]] == ["lane_out"]
    assert [p["topic"] for p in cbs["timer 500ms"]["publishes"]] == ["count"]
    # Relay's constructor's lambdas, as GCC numbers them (in order: the timer is the 2nd), and the ABI's
    # per-signature number (clang's) as the alternative.
    assert cbs["timer 100ms"]["symbol"] == "Relay::Relay()::{lambda()#2}"
    assert cbs["timer 100ms"]["symbol_alternatives"] == ["Relay::Relay()::{lambda()#1}"]
    assert cbs["sub input"]["symbol"] == "Relay::Relay()::{lambda(std::shared_ptr<std_msgs::msg::String_<std::allocator<void> > >)#1}"
    assert cbs["sub hint"]["symbol"] == "Relay::onHint(std::shared_ptr<std_msgs::msg::String_<std::allocator<void> > >)"
    assert doc["undecided"] == []


# ---------------------------------------------------------------- ros-realtime/reference-system

@pytest.fixture(scope="module")
def refsys():
    heads = sorted((REFSYS / "reference_system" / "nodes" / "rclcpp").glob("*.hpp"))
    t0 = time.perf_counter()
    doc = deps.analyze([str(h) for h in heads], flags=["-I", str(REFSYS), "-isystem", str(STUB), "-std=c++17"])
    return doc, time.perf_counter() - t0


@pytest.mark.slow
def test_reference_system_matches_its_documented_node_types(refsys):
    doc, seconds = refsys
    ns = "nodes::rclcpp_system::"
    kinds, edges = {}, {}
    for n in doc["nodes"]:
        name = n["name"].removeprefix(ns)
        kinds[name] = sorted((cb["kind"], cb["instances"], bool(cb["publishes"])) for cb in n["callbacks"])
        d = node_doc(doc, n["name"])
        pos = {cb["id"]: i for i, cb in enumerate(n["callbacks"])}
        edges[name] = sorted((pos[e["from"]], pos[e["to"]]) for e in d["edges"])
    print(f"reference system: {len(doc['inputs']['translation_units'])} node headers in {seconds:.1f} s, "
          f"{len(doc['edges'])} edges, {len(doc['undecided'])} undecided accesses")
    # reference_system/README.md, "Base node types":
    assert kinds == {
        # Sensor: one publisher, publishes cyclically
        "Sensor": [("timer", "one", True)],
        # Transform: one subscriber, one publisher, publishes after processing each message
        "Transform": [("subscription", "one", True)],
        # Fusion: 2 subscribers, one publisher, processes when a message was received from all subscriptions
        "Fusion": [("subscription", "one", True), ("subscription", "one", True)],
        # Cyclic: N subscribers (one registration in a loop), one publisher, processes cyclically
        "Cyclic": [("subscription", "many", False), ("timer", "one", True)],
        # Command: prints output stats every time a message is received (publishes nothing)
        "Command": [("subscription", "one", False)],
        # Intersection: like N transform nodes, one-to-one connections (one registration in a loop)
        "Intersection": [("subscription", "many", True)],
    }
    assert edges == {
        "Sensor": [], "Transform": [], "Command": [],
        "Fusion": [(0, 1), (1, 0)],    # each input's callback publishes once it has the other's message
        "Cyclic": [(0, 1)],            # every subscription's cache feeds the timer
        "Intersection": [],            # N independent transforms: no dependency between the registrations
    }
    assert doc["undecided"] == []      # the goal: every access decided
    assert seconds < 120


# ---------------------------------------------------------------- the command and the file

def test_cli_json_and_output_file(run_roscope, tmp_path):
    out = tmp_path / "deps.json"
    p = run_roscope("deps", "-o", str(out), "--json", "--flags", "-isystem", str(STUB), "-std=c++17",
                    str(SRC / "ros2_nodes.cpp"))
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert printed == json.loads(out.read_text())
    assert printed["format"] == "roscope-deps" and printed["version"] == 1
    assert deps.load(str(out)) == printed
    assert [f.name for f in tmp_path.iterdir()] == ["deps.json"]  # no temporary file left


@pytest.mark.parametrize("case", ["missing_source", "no_compile_db", "bad_compile_db", "option_after_flags",
                                  "output_dir_missing", "header_not_found", "no_source"])
def test_cli_errors_name_the_file(run_roscope, tmp_path, case):
    src = tmp_path / "node.cpp"
    src.write_text("#include <not_a_header_anywhere.hpp>\nint main() { return 0; }\n")
    args, expect = {
        "missing_source": (["deps", "--flags", "-I.", "--", str(tmp_path / "nope.cpp")], "nope.cpp: no such file"),
        "no_compile_db": (["deps", "-p", str(tmp_path), str(src)], "compile_commands.json: not found"),
        "bad_compile_db": (["deps", "-p", str(tmp_path), str(src)], "not a valid compilation database"),
        "option_after_flags": (["deps", "--flags", "-I.", "-o", "x.json", "--", str(src)], "-o is after --flags"),
        "output_dir_missing": (["deps", "-o", str(tmp_path / "no" / "x.json"), "--flags", "-isystem", str(STUB), "--",
                                str(SRC / "ros2_nodes.cpp")], f"the directory {tmp_path / 'no'} does not exist"),
        "header_not_found": (["deps", "--flags", "-I.", "--", str(src)], "'not_a_header_anywhere.hpp' file not found"),
        "no_source": (["deps", "--flags", "-I."], "no source file given"),
    }[case]
    if case == "bad_compile_db":
        (tmp_path / "compile_commands.json").write_text("[{\"file\": ")
    p = run_roscope(*args)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.startswith("roscope: error: ") and expect in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_write_is_atomic(tmp_path):
    path = tmp_path / "deps.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        deps.write({"format": "roscope-deps", "bad": object()}, str(path))
    assert path.read_text() == "old" and [f.name for f in tmp_path.iterdir()] == ["deps.json"]


@pytest.mark.parametrize("content, expect", [
    ("{", "not a JSON dependency file"),
    ('{"format": "something-else"}', "not a dependency file written by `roscope deps`"),
    ('{"format": "roscope-deps", "version": 99, "nodes": [], "edges": []}', "version 99"),
    ('{"format": "roscope-deps", "version": 1, "nodes": [{"callbacks": [{"id": "a", "kind": "subscription"}]}], '
     '"edges": [{"from": "a", "to": "b"}]}', "names a callback that is not in the file"),
])
def test_bad_dependency_files(tmp_path, content, expect):
    path = tmp_path / "deps.json"
    path.write_text(content)
    with pytest.raises(InputError, match=re.escape(expect)) as exc:
        deps.trace_edges(None, str(path))  # the file is checked before the database is used
    assert str(path) in str(exc.value)
    with pytest.raises(InputError, match="no such file"):
        deps.load(str(tmp_path / "missing.json"))


# ---------------------------------------------------------------- matching a recorded trace (live ROS 1)

def _annotation_truth(events: list[dict]) -> set[tuple[int, int]]:
    """(vpid, callback handle) pairs B depends on A, from the trace's annotations alone.
    A is the callback of an annotated subscription. Partial synchronous: the annotated
    subscriptions' callbacks publish the output from all inputs, so B is any other of
    them. Periodic asynchronous: B is a callback that publishes on an annotated publisher
    (seen inside its callback_start/end), in the same process."""
    sub_cb, publishing, stack = {}, {}, {}
    for e in events:
        n = e["name"].split(":", 1)[-1]
        if n == "subscription_init":
            sub_cb[(e["vpid"], e["subscription"])] = e["callback"]
        elif n == "callback_start":
            stack.setdefault(e["vtid"], []).append(e["callback"])
        elif n == "callback_end" and stack.get(e["vtid"]):
            stack[e["vtid"]].pop()
        elif n == "publish" and stack.get(e["vtid"]):
            publishing.setdefault((e["vpid"], e["publisher"]), set()).add(stack[e["vtid"]][-1])
    truth = set()
    for e in events:
        n = e["name"].split(":", 1)[-1]
        if n not in ("message_link_partial_sync", "message_link_periodic_async"):
            continue
        subs = [sub_cb[(e["vpid"], s)] for s in e["subs"]]
        for a in subs:
            if n == "message_link_partial_sync":
                bs = set(subs)
            else:
                bs = {b for p in e["pubs"] for b in publishing.get((e["vpid"], p), ())}
            truth |= {((e["vpid"], a), (e["vpid"], b)) for b in bs if b != a}
    return truth


@needs_roscpp
@pytest.mark.slow
@pytest.mark.lttng
@pytest.mark.ros1
def test_trace_edges_on_a_recorded_pipeline(pipeline, ros1_pipeline_run):
    import roscope

    from tests.support.ros1 import read_trace

    out = ros1_pipeline_run["trace"]  # the example recorded by its run.sh (tests/conftest.py)
    events, _ = read_trace(out)
    truth_handles = _annotation_truth(events)
    assert len(truth_handles) == 4, truth_handles  # Fusion's two callbacks both ways, the planner's two into its timer
    db = roscope.open(str(out))
    ids = {(int(r["pid"]), int(r["handle"])): int(r["callback_id"])
           for r in db.records("SELECT pid, handle, callback_id FROM callbacks_info")}
    truth = {(ids[a], ids[b]) for a, b in truth_handles}
    edges, report = deps.trace_edges(db, str(pipeline["path"]))
    precision, recall = prf(set(edges), truth)
    print(f"trace edges on a recording of examples/ros1_pipeline: {len(edges)}, precision {precision:.3f}, "
          f"recall {recall:.3f}")
    assert (precision, recall) == (1.0, 1.0)
    # every file callback is a trace callback (by its symbol), SensorNode::onTimer three times (three nodes)
    assert report["unmatched"] == [] and report["ambiguous"] == []
    assert {m["by"] for m in report["matched"]} == {"symbol"}
    assert {m["callback"]: len(m["trace_callbacks"]) for m in report["matched"]}["SensorNode::onTimer"] == 3
    assert report["trace_unmatched"] == []  # (the rospy nodes do not run without -P)


@needs_roscpp
@pytest.mark.slow
@pytest.mark.lttng
@pytest.mark.ros1
def test_trace_edges_match_lambdas_and_free_functions_by_symbol(ros1_fixtures, tmp_path):
    """The fixtures, built by GCC and recorded: every callback, lambdas in main included,
    is found by its symbol, and the edges land on the right trace callbacks."""
    import roscope

    from tests.support.ros1 import read_trace, roscope_record

    subprocess.run(["make", "-s", "-C", str(REPO / "instrument" / "ros1")], check=True, capture_output=True)
    subprocess.run(["make", "-s", "-C", str(FX)], check=True, capture_output=True)
    out = tmp_path / "trace"
    p = roscope_record(["-o", str(out), "--", str(FX / "run_ros1.sh"), "3", str(FX / "build" / "ros1_class"),
                        str(FX / "build" / "ros1_lambdas")])
    assert p.returncode == 0, p.stderr
    events, _ = read_trace(out)
    # trace callbacks by what they are registered for, from the init events
    what = {}
    for e in events:
        n = e["name"].split(":", 1)[-1]
        if n == "subscription_init":
            what[(e["vpid"], e["callback"])] = f"sub {e['topic'].rsplit('/', 1)[-1]}"
        elif n == "timer_init":
            what[(e["vpid"], e["callback"])] = f"timer {e['period'] // 1_000_000}ms"
    db = roscope.open(str(out))
    # (the recording may hold other processes' callbacks too: ROS 2 processes that ran on
    # the machine meanwhile, whose events carry no recording id; only the fixtures' are named)
    name = {int(r["callback_id"]): what[(int(r["pid"]), int(r["handle"]))]
            for r in db.records("SELECT pid, handle, callback_id FROM callbacks_info")
            if (int(r["pid"]), int(r["handle"])) in what}
    path = tmp_path / "deps.json"
    deps.write(ros1_fixtures, str(path))
    edges, report = deps.trace_edges(db, str(path))
    assert {m["by"] for m in report["matched"]} == {"symbol"}
    matched = {m["callback"] for m in report["matched"]}
    assert matched == {cb for n in ros1_fixtures["nodes"] if n["name"] in ("Estimator", "main") for cb in
                       [c["id"] for c in n["callbacks"]]}
    assert {u["callback"] for u in report["unmatched"]} == {"Odd::onA", "Odd::onB", "Odd::onC"}  # not run
    assert {(name[a], name[b]) for a, b in edges} == {
        ("sub raw", "timer 100ms"), ("sub reset", "timer 100ms"), ("sub config", "timer 100ms"),
        ("sub mark", "sub stats"),
        ("sub in", "timer 50ms"), ("sub offset", "timer 50ms"), ("sub state", "timer 200ms")}


@needs_roscpp
@pytest.mark.slow
def test_virtual_calls_templates_bindings_algorithms():
    doc = deps.analyze([str(SRC / "ros1_more.cpp")])
    # By hand, from the comments of ros1_more.cpp:
    assert edges_by_key(doc) == {
        ("sub a", "timer 250ms"), ("sub b", "timer 250ms"), ("sub c", "timer 250ms"), ("sub d", "timer 250ms"),
        ("sub names", "timer 250ms"), ("sub fn", "timer 250ms"), ("sub b", "sub d"), ("sub b", "sub names")}
    cbs = {key(cb): cb for n in doc["nodes"] for cb in n["callbacks"]}
    writes = {k: {a["state"] for a in cb["writes"]} for k, cb in cbs.items()}
    assert "Stress::impl_->acc" in writes["sub a"]        # Impl::step, through the Base interface
    assert "Stress::buf_.data_" in writes["sub a"]        # Buffer<double>::put's push_back
    assert {"Stress::history_[]", "Stress::names_[]", "Stress::raw_", "Stress::t1_", "Stress::t2_"} <= writes["sub b"]
    assert "Stress::table_[].second" in writes["sub d"]   # it->second.clear()
    assert doc["undecided"] == []


GCC_NAMES_SRC = r"""
// Prints the names GCC gives its lambdas (the oracle), registers them only when asked.
#include <ros/ros.h>
#include <std_msgs/Float64.h>
#include <cxxabi.h>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <typeinfo>

template <class F> void show(const F&) {
  int st = 0;
  char* d = abi::__cxa_demangle(typeid(F).name(), nullptr, nullptr, &st);
  std::printf("%s\n", d);
  std::free(d);
}

namespace demo {
class Node {
 public:
  explicit Node(bool start) {
    auto on_msg = [this](const std_msgs::Float64::ConstPtr& m) { last_ = m->data; };
    auto on_tick = [this](const ros::TimerEvent&) { ++ticks_; };
    auto on_other = [this](const std_msgs::Float64::ConstPtr& m) { last_ += m->data; };
    show(on_msg); show(on_tick); show(on_other);
    if (!start) return;
    nh_ = std::make_unique<ros::NodeHandle>();
    sub_ = nh_->subscribe<std_msgs::Float64>("x", 1, on_msg);
    timer_ = nh_->createTimer(ros::Duration(0.1), on_tick);
    other_ = nh_->subscribe<std_msgs::Float64>("y", 1, on_other);
  }
 private:
  std::unique_ptr<ros::NodeHandle> nh_;
  ros::Subscriber sub_, other_;
  ros::Timer timer_;
  double last_ = 0;
  int ticks_ = 0;
};
}  // namespace demo

int main(int argc, char** argv) {
  if (argc > 1) ros::init(argc, argv, "demo");
  demo::Node n(argc > 1);
  return 0;
}
"""


@needs_roscpp
@pytest.mark.slow
def test_lambda_symbols_are_gccs_names(tmp_path):
    """The oracle is GCC itself: the program prints typeid names of its lambdas."""
    src = tmp_path / "names.cpp"
    src.write_text(GCC_NAMES_SRC)
    exe = tmp_path / "names"
    subprocess.run(["g++", "-std=c++17", str(src), "-o", str(exe), "-lroscpp", "-lrosconsole", "-lroscpp_serialization",
                    "-lrostime"], check=True, capture_output=True)
    gcc = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert gcc[1] == "demo::Node::Node(bool)::{lambda(ros::TimerEvent const&)#2}"  # GCC: in order, not per signature
    doc = deps.analyze([str(src)])
    cbs = {key(cb): cb["symbol"] for n in doc["nodes"] for cb in n["callbacks"]}
    assert [cbs["sub x"], cbs["timer 100ms"], cbs["sub y"]] == gcc


def test_colcon_workspace_build_dir(tmp_path):
    """-p on a colcon (or catkin_tools) build/: one compile_commands.json per package, all read;
    entries in the "arguments" form, relative include paths against their directory."""
    pkg = tmp_path / "build" / "relay_pkg"
    pkg.mkdir(parents=True)
    rel_stub = os.path.relpath(STUB, pkg)
    (pkg / "compile_commands.json").write_text(json.dumps([{
        "directory": str(pkg), "file": str(SRC / "ros2_nodes.cpp"), "output": "x.o",
        "arguments": ["/usr/bin/c++", "-isystem", rel_stub, "-std=gnu++17", "-o", "x.o", "-c", str(SRC / "ros2_nodes.cpp")]}]))
    (tmp_path / "build" / "other_pkg").mkdir()  # a package without a database
    doc = deps.analyze([str(SRC / "ros2_nodes.cpp")], build_dir=str(tmp_path / "build"))
    assert doc["inputs"]["translation_units"][0]["flags_from"] == "compile_commands.json"
    assert doc["inputs"]["translation_units"][0]["errors"] == []
    assert ("sub input", "timer 100ms") in edges_by_key(doc)


# ---------------------------------------------------------------- examples/ros1_unannotated

UNANNOTATED = REPO / "examples" / "ros1_unannotated"
# The truth, by hand from the sources (the table "The true intra-node dependencies" of its README):
UNANNOTATED_TRUTH = {
    ("Localizer::onImu", "Localizer::onPoints"),     # localizer.cpp: onImu stores imu_id_, onPoints publishes with it
    ("Detector::onCamera", "Detector::onTimer"),     # detector.cpp: latest_camera_ and fresh_
    ("Planner::onPose", "Planner::onTimer"),         # planner.cpp: the timer publishes from pose_id_
    ("Planner::onObjects", "Planner::onTimer"),      # ... and objects_id_
}
# none into Planner::onTrajectory (reads none of the planner's state), none between gateway.cpp's
# two lambdas in main, none between the drivers' timers.


@needs_roscpp
@pytest.mark.slow
@pytest.mark.skipif(not (UNANNOTATED / "src").is_dir(), reason="examples/ros1_unannotated is not there")
def test_unannotated_example_edges_precision_recall(unannotated_deps):
    """`roscope deps` on the example's sources with a compile_commands.json made from its
    Makefile (once per test session: tests/conftest.py's unannotated_deps, which
    test_flow_truth.py reads too)."""
    doc = unannotated_deps["doc"]
    found = {(e["from"], e["to"]) for e in doc["edges"]}
    precision, recall = prf(found, UNANNOTATED_TRUTH)
    print(f"examples/ros1_unannotated: {len(found)} edges, precision {precision:.3f}, recall {recall:.3f}, "
          f"roscope deps {unannotated_deps['seconds']:.1f} s")
    assert (precision, recall) == (1.0, 1.0), found
    assert doc["undecided"] == []
    gateway = node_doc(doc, "main")
    assert len(gateway["nodes"][0]["callbacks"]) == 2 and gateway["edges"] == []


# ---------------------------------------------------------------- the package

def test_flow_imports_only_the_matching_part():
    """`roscope.flow` (and `roscope.deps.matching`) load no analysis module and no libclang
    (issue 25): the import graph as Python records it in a fresh interpreter."""
    code = ("import sys, roscope.flow, roscope.deps.matching; "
            "print(sorted(m for m in sys.modules if m.startswith(('roscope.deps', 'clang'))))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.replace("'", '"')) == ["roscope.deps", "roscope.deps.matching"]


def test_public_api_of_the_package():
    import roscope.deps.analysis
    import roscope.deps.document
    import roscope.deps.matching

    assert deps.analyze is roscope.deps.analysis.analyze and deps.write is roscope.deps.document.write
    assert (deps.load, deps.match, deps.trace_edges) == (
        roscope.deps.matching.load, roscope.deps.matching.match, roscope.deps.matching.trace_edges)
    assert deps.demangle(["_ZN3foo3barEv", "not mangled"]) == ["foo::bar()", "not mangled"]
    with pytest.raises(AttributeError):
        deps.no_such_name  # noqa: B018


# ---------------------------------------------------------------- deep code (issue 31, item 8)

def deep_node(tmp_path, name: str, write_expr: str, helpers: str = "") -> Path:
    """A node (rclcpp, the stub) whose subscription writes `state` through `write_expr`
    (C++ over `int x`, the message's length) and whose 100 ms timer publishes from it:
    the one true edge is sub in -> timer 100ms."""
    src = tmp_path / f"{name}.cpp"
    src.write_text(f"""#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/string.hpp>
#include <chrono>
#include <string>
using String = std_msgs::msg::String;
int state = 0;
{helpers}
int main(int argc, char** argv) {{
  rclcpp::init(argc, argv);
  auto node = rclcpp::Node::make_shared("deep");
  auto pub = node->create_publisher<String>("out", 10);
  auto sub = node->create_subscription<String>("in", 10, [](String::SharedPtr m) {{
    int x = int(m->data.size());
    {write_expr};
  }});
  auto timer = node->create_wall_timer(std::chrono::milliseconds(100), [&]() {{
    String out;
    out.data = std::to_string(state);
    pub->publish(out);
  }});
  rclcpp::spin(node);
  return 0;
}}
""")
    return src


def run_deep(run_roscope, src: Path, timeout: float = 300):
    return run_roscope("deps", "--json", "--flags", "-isystem", str(STUB), "-std=c++17", "--", str(src), timeout=timeout)


@pytest.mark.parametrize("case", ["sum_400", "calls_1000", "methods_1000", "sum_30000"])
def test_deep_code_is_analysed(run_roscope, tmp_path, case):
    """Plausible C++ that recursed past Python's limit (a 400-term expression, a chain of
    1,000 calls: RecursionError, exit 70) or past libclang's parsing thread's stack (a
    30,000-term expression: a segfault, exit 139): analysed, and the edge is found."""
    helpers = ""
    if case.startswith("sum_"):  # state = sum(x), whose body is one expression of that many terms
        helpers = "int sum(int a) { return " + " + ".join(["a"] * int(case[4:])) + "; }\n"
        expr = "state = sum(x)"
    elif case == "calls_1000":  # f999() returns f998() ... returns state: the write goes through 1,000 calls
        helpers = "int& f0() { return state; }\n" + "".join(f"int& f{i}() {{ return f{i - 1}(); }}\n" for i in range(1, 1000))
        expr = "f999() = x"
    else:  # one expression of 1,000 chained method calls, the last one writing
        helpers = "struct Chain { Chain& next() { return *this; } void put(int v) { state = v; } };\nChain chain;\n"
        expr = "chain" + ".next()" * 1000 + ".put(x)"
    p = run_deep(run_roscope, deep_node(tmp_path, case, expr, helpers))
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert edges_by_key(doc) == {("sub in", "timer 100ms")}
    (edge,) = doc["edges"]
    assert edge["state"] == ["state"] and edge["certain"]


def test_nesting_past_the_walks_limit_is_one_line(run_roscope, tmp_path):
    from roscope.deps.function import MAX_NESTING

    src = deep_node(tmp_path, "sum_deeper", "state = " + " + ".join(["x"] * (MAX_NESTING + 10_000)))
    p = run_deep(run_roscope, src)
    assert p.returncode == 1, p.stderr[-2000:]
    line = f"{src}:14:"  # the expression's line in deep_node
    assert p.stderr.startswith(f"roscope: error: {line}") and p.stderr.count("\n") == 1, p.stderr[-2000:]
    assert f"nested more than {MAX_NESTING:,} levels deep" in p.stderr


def test_libclang_crash_is_one_line(run_roscope, tmp_path):
    """A nesting deeper than libclang can parse even on the analysis' large stack (here
    a million terms) crashes libclang in the worker process, not roscope."""
    src = tmp_path / "million.cpp"
    src.write_text("int f(int a) { return " + "+".join(["a"] * 1_000_000) + "; }\n")
    p = run_roscope("deps", "--flags", "-std=c++17", "--", str(src), timeout=300)
    assert p.returncode == 1, p.stderr[-2000:]
    assert p.stderr.startswith(f"roscope: error: {src}: libclang crashed while roscope deps analysed it (signal "), p.stderr
    assert p.stderr.count("\n") == 1


# ---------------------------------------------------------------- bad inputs (issue 31, items 10 and 16)

@pytest.mark.parametrize("entry, expect", [
    ({"directory": ".", "file": 7, "command": "c++ -c x.cpp"}, "entry 1: 'file' must be a path (a non-empty string), not a number"),
    ({"directory": ["a"], "file": "x.cpp", "command": "c++"}, "entry 1: 'directory' must be a path (a non-empty string), not a list"),
    ({"directory": ".", "file": "", "command": "c++"}, "entry 1: 'file' must be a path (a non-empty string), not an empty string"),
    ({"directory": ".", "file": "x.cpp", "command": ["c++", "-c"]}, "entry 1: 'command' must be a string, not a list"),
    ({"directory": ".", "file": "x.cpp", "arguments": "c++ -c x.cpp"}, "entry 1: 'arguments' must be a list of strings, not a string"),
    ({"directory": ".", "file": "x.cpp", "arguments": ["c++", 3]}, "entry 1: 'arguments' must be a list of strings, not a list holding a number"),
    ({"directory": ".", "file": "x.cpp", "arguments": []}, "entry 1: an empty command"),
    ({"directory": ".", "file": "x.cpp", "command": "c++ -DX='unclosed"}, "entry 1: 'command' cannot be split into words"),
    ({"directory": ".", "file": "x\u0000.cpp", "command": "c++"}, "entry 1: 'file' must be a path (a non-empty string), not a string with a NUL"),
    ({"directory": ".", "file": "x.cpp", "command": None}, "entry 1: 'command' must be a string, not null"),
    ("not an object", "entry 1 lacks 'file', 'directory' or 'command'/'arguments'"),
])
def test_compile_database_fields_of_the_wrong_type(run_roscope, tmp_path, entry, expect):
    src = tmp_path / "node.cpp"
    src.write_text("int main() { return 0; }\n")
    good = {"directory": str(tmp_path), "file": "node.cpp", "command": "c++ -std=c++17 -c node.cpp"}
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([good, entry]))
    p = run_roscope("deps", "-p", str(tmp_path), str(src))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.startswith(f"roscope: error: {db}: {expect}") and p.stderr.count("\n") == 1, p.stderr


def test_deeply_nested_compile_database_is_one_line(run_roscope, tmp_path):
    (tmp_path / "compile_commands.json").write_text("[" * 200_000)
    src = tmp_path / "node.cpp"
    src.write_text("int main() { return 0; }\n")
    p = run_roscope("deps", "-p", str(tmp_path), str(src))
    assert p.returncode == 1 and "not a valid compilation database" in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_a_directory_as_a_source(run_roscope, tmp_path):
    d = tmp_path / "src"
    d.mkdir()
    p = run_roscope("deps", str(d))
    assert p.returncode == 1
    assert p.stderr == (f"roscope: error: {d}: is a directory; give the C++ sources in it (e.g. {d}/*.cpp) and their "
                        "flags with -p BUILD_DIR or --flags\n")


# ---------------------------------------------------------------- one binary, lambdas in main (issue 29)

ONEBINARY = REPO / "examples" / "ros1_onebinary"
ONEBINARY_SRC = ONEBINARY / "src" / "onebinary.cpp"
# The truth, by hand from src/onebinary.cpp (its header comment), callbacks named by the
# [role/what] comment on their registration line:
ONEBINARY_TRUTH = {
    ("tracker/objects", "tracker/timer"),  # last_obj: a function-local static, under a mutex
    ("tracker/imu", "tracker/timer"),      # last_imu
    ("mapper/scan", "mapper/timer"),       # latest_scan (the 2-thread node)
}


def tagged(doc: dict, source: Path) -> dict[str, dict]:
    """The callbacks of `doc` by the [role/what] comment on their registration line."""
    tags = {n: m.group(1) for n, line in enumerate(source.read_text().splitlines(), 1)
            if (m := re.search(r"// \[(\w+/\w+)\]$", line))}
    return {tags[int(cb["registered_at"].rsplit(":", 2)[1])]: cb for cb in callbacks(doc).values()}


@pytest.fixture(scope="module")
def onebinary_doc():
    return deps.analyze([str(ONEBINARY_SRC)])


@needs_roscpp
@pytest.mark.slow
def test_onebinary_edges_are_the_true_ones(onebinary_doc):
    """Issue 29: on a one-binary system (a role per process, every callback a lambda in
    main, state in function-local statics, a message counter every publisher bumps
    through one helper lambda), `roscope deps` found 0 edges: a call of a lambda kept in
    a variable (`send(pub, ...)`) was taken for a library call, so no callback
    published. Now every publishing callback publishes and the edges are the true ones."""
    doc = onebinary_doc
    cbs = tagged(doc, ONEBINARY_SRC)
    assert len(cbs) == 12 and {n["name"] for n in doc["nodes"]} == {"main"}
    assert {t for t, cb in cbs.items() if cb["publishes"]} == {
        "sensors/scan", "sensors/objects", "sensors/imu", "sensors/cmd", "tracker/timer", "mapper/timer",
        "mapper/cmd", "gateway/track", "gateway/map"}
    tag = {cb["id"]: t for t, cb in cbs.items()}
    found = {(tag[e["from"]], tag[e["to"]]): e for e in doc["edges"]}
    precision, recall = prf(set(found), ONEBINARY_TRUTH)
    print(f"examples/ros1_onebinary: {len(found)} edges, precision {precision:.3f}, recall {recall:.3f}")
    assert (precision, recall) == (1.0, 1.0), sorted(found)
    assert {k: e["state"] for k, e in found.items()} == {
        ("tracker/objects", "tracker/timer"): ["main()::last_obj"], ("tracker/imu", "tracker/timer"): ["main()::last_imu"],
        ("mapper/scan", "mapper/timer"): ["main()::latest_scan"]}
    assert all(e["certain"] and e["through"] == "shared" for e in found.values())
    assert doc["undecided"] == []


@needs_roscpp
@pytest.mark.slow
def test_onebinary_bookkeeping_is_listed_not_taken_for_data(onebinary_doc):
    """The message counter and the log's line count, touched by every publishing
    callback through `send`, are listed as bookkeeping and left out of the edges; the
    edges that rest on them alone are listed too."""
    doc = onebinary_doc
    books = {b["state"]: b for b in doc["bookkeeping"]}
    assert set(books) == {"g_msg_seq", "g_log.lines_"}
    tag = {cb["id"]: t for t, cb in tagged(doc, ONEBINARY_SRC).items()}
    publishing = {"sensors/scan", "sensors/objects", "sensors/imu", "sensors/cmd", "tracker/timer", "mapper/timer",
                  "mapper/cmd", "gateway/track", "gateway/map"}
    assert {tag[c] for c in books["g_msg_seq"]["callbacks"]} == publishing
    # the log is written by the mapper's scan subscription too (its "run" lines)
    assert {tag[c] for c in books["g_log.lines_"]["callbacks"]} == publishing | {"mapper/scan"}
    assert all(b["left_out"] and "each of the 9 publishing callbacks of main" in b["why"] for b in books.values())
    left = doc["edges_left_out"]
    assert len(left) > 50 and all(set(e["state"]) <= set(books) for e in left)
    assert ("gateway/track", "gateway/map") in {(tag[e["from"]], tag[e["to"]]) for e in left}


@needs_roscpp
@pytest.mark.slow
def test_ignore_state_and_keep_state(run_roscope, tmp_path):
    out = tmp_path / "deps.json"
    p = run_roscope("deps", "-o", str(out), "--ignore-state", "main()::last_imu", "--keep-state", "g_msg_seq",
                    "--ignore-state", "no_such_state", str(ONEBINARY_SRC))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    tag = {cb["id"]: t for t, cb in tagged(doc, ONEBINARY_SRC).items()}
    edges = {(tag[e["from"]], tag[e["to"]]): e["state"] for e in doc["edges"]}
    # ignored: the imu edge rests on last_imu alone, so it is left out, and listed so
    assert ("tracker/imu", "tracker/timer") not in edges
    assert ("tracker/imu", "tracker/timer") in {(tag[e["from"]], tag[e["to"]]) for e in doc["edges_left_out"]}
    # kept: the counter links every publishing callback of main to every other again
    assert edges[("gateway/track", "gateway/map")] == ["g_msg_seq"]
    assert edges[("tracker/objects", "tracker/timer")] == ["main()::last_obj"]  # (objects does not publish)
    assert {(b["state"], b["left_out"]) for b in doc["bookkeeping"]} == {("g_msg_seq", False), ("g_log.lines_", True)}
    assert doc["inputs"]["ignore_state"] == ["main()::last_imu", "no_such_state"]
    assert "--ignore-state no_such_state: no callback reads or writes state of that name" in " ".join(doc["notes"])
    assert "2 bookkeeping state(s)" in p.stdout and "g_msg_seq (kept: --keep-state)" in p.stdout
    assert "left out of the edges (--ignore-state): main()::last_imu, no_such_state" in p.stdout


HELPER_SRC = """#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/string.hpp>
#include <chrono>
#include <string>
using String = std_msgs::msg::String;
unsigned long g_seq = 0;
unsigned long next_id() { return ++g_seq; }
int main(int argc, char** argv) {
  rclcpp::init(argc, argv);
  auto node = rclcpp::Node::make_shared("helper");
  auto a_pub = node->create_publisher<String>("a_out", 10);
  auto b_pub = node->create_publisher<String>("b_out", 10);
  std::string latest;  // written by "in", read by the timer
  auto send = [&](const rclcpp::Publisher<String>::SharedPtr& pub, const std::string& text) {
    String m;
    m.data = std::to_string(next_id()) + text;
    pub->publish(m);
  };
  auto in = node->create_subscription<String>("in", 10, [&](String::SharedPtr m) { latest = m->data; });
  auto relay = node->create_subscription<String>("relay", 10, [&](String::SharedPtr m) { send(b_pub, m->data); });
  auto timer = node->create_wall_timer(std::chrono::milliseconds(100), [&]() { send(a_pub, latest); });
  [&]() { send(a_pub, "hello"); }();  // a lambda called where it is written
  rclcpp::spin(node);
  return 0;
}
"""


def test_a_helper_lambda_that_publishes_and_a_counter(tmp_path):
    """A lambda kept in a variable and called by the callbacks (`send`) is followed: the
    callbacks publish through it, so the timer's edge is found; the counter it bumps
    (`g_seq`, through next_id) is bookkeeping, so the relay and the timer (both
    publishing) are not linked by it."""
    src = tmp_path / "helper.cpp"
    src.write_text(HELPER_SRC)
    doc = deps.analyze([str(src)], flags=["-isystem", str(STUB), "-std=c++17"])
    assert edges_by_key(doc) == {("sub in", "timer 100ms")}
    cbs = {key(cb): cb for cb in callbacks(doc).values()}
    assert [p["topic"] for p in cbs["timer 100ms"]["publishes"]] == ["a_out"]
    assert [p["topic"] for p in cbs["sub relay"]["publishes"]] == ["b_out"]
    assert "g_seq" in [a["state"] for a in cbs["timer 100ms"]["writes"]]  # listed as what it touches
    assert [b["state"] for b in doc["bookkeeping"]] == ["g_seq"]
    assert {(callbacks(doc)[e["from"]]["topic"], callbacks(doc)[e["to"]]["topic"]) for e in doc["edges_left_out"]} == {
        ("relay", None), (None, "relay")}
    # A counter bumped by only one publishing callback is that callback's own: not bookkeeping.
    one = HELPER_SRC.replace("send(b_pub, m->data);", "String o; o.data = m->data; b_pub->publish(o);")
    src.write_text(one)
    doc = deps.analyze([str(src)], flags=["-isystem", str(STUB), "-std=c++17"])
    assert doc["bookkeeping"] == [] and edges_by_key(doc) == {("sub in", "timer 100ms")}
