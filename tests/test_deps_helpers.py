"""`roscope deps` on callbacks that publish through helpers (issue 39 item 8).

examples/ros1_helpers is a ROS 1 system none of whose callbacks calls
ros::Publisher::publish itself: lambdas in main() publish through a free template
`hs::publish(ros::Publisher&, const M&)`, by pointer (`hs::send`), two calls deep
(`hs::stamp_and_send`), through an object constructed with a pointer to the publisher
(`hs::Stamper status_out(&status_pub, 4)`); a class publishes from a member function
through a pointer member (`out_(&plan_pub_)`) and through a member object holding its
publisher.
Before, `roscope deps` saw no callback publish there: 0 edges, and `flow --deps`
found fewer flows than the trace alone.

The truth is never roscope's: which callback publishes which topic and which
callback depends on which are written below by hand from the example's sources
(the header comment of each src/*.cpp; callbacks are named by the `// [process/what]`
comment on their registration line); the flows' truth is the nodes' own log of every
message's inputs, matched to the trace's publications by babeltrace2
(tests/support/flow_truth.py).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.support import flow_truth as ft

REPO = Path(__file__).resolve().parents[1]
STUB = REPO / "tests" / "fixtures" / "deps" / "rclcpp_stub"
EXAMPLE = REPO / "examples" / "ros1_helpers"
SYSTEM = {"example": "examples/ros1_helpers", "from": r"^/hs/(scan|imu)$", "to": r"^/hs/(plan|echo|status)$"}
ft.SYSTEMS.setdefault("ros1_helpers", SYSTEM)

needs_roscpp = pytest.mark.skipif(not os.path.isfile("/usr/include/ros/ros.h"),
                                  reason="roscpp's headers are not installed (Debian's ros-core-dev / libroscpp-dev)")

# By hand from the sources: what each callback publishes (through the helpers).
PUBLISHES = {
    "sources/scan": {"/hs/scan"},      # hs::publish(scan_pub, ...): the free template, by reference
    "sources/imu": {"/hs/imu"},        # hs::stamp_and_send -> hs::send -> hs::publish: two calls deep
    "fusion/imu": set(),               # stores last_imu only
    "fusion/scan": {"/hs/fused"},      # hs::publish(fused_pub, out)
    "fusion/status": {"/hs/status"},   # status_out.send: a Stamper made with &status_pub, a pointer member
    "planner/fused": set(),            # caches fused_ only
    "planner/status": {"/hs/echo"},    # echo_.send(...): a member object's method, its publisher a field
    "planner/timer": {"/hs/plan"},     # plan(): through out_, a pointer member to plan_pub_
}
# By hand: B depends on A when A writes what B reads before it publishes.
EDGES = {("fusion/imu", "fusion/scan"),       # last_imu
         ("fusion/scan", "fusion/status"),    # last_scan
         ("planner/fused", "planner/timer")}  # fused_


def tagged(doc: dict) -> dict[str, dict]:
    """The callbacks of `doc` by the `// [process/what]` comment on their registration line."""
    tags = {}
    for src in (EXAMPLE / "src").glob("*.cpp"):
        for n, line in enumerate(src.read_text().splitlines(), 1):
            m = re.search(r"// \[(\w+/\w+)\]$", line)
            if m:
                tags[(src.name, n)] = m.group(1)
    out = {}
    for node in doc["nodes"]:
        for cb in node["callbacks"]:
            f, line, _col = cb["registered_at"].rsplit(":", 2)
            out[tags[(Path(f).name, int(line))]] = cb
    return out


@pytest.fixture(scope="module")
def helpers_deps(tmp_path_factory) -> dict:
    """`roscope deps -p BUILD -o deps.json` on the example's sources, with a
    compile_commands.json made from its Makefile (as a user makes one)."""
    return ft.dependency_run("ros1_helpers", tmp_path_factory.mktemp("helpers_deps"))


@needs_roscpp
@pytest.mark.slow
def test_publications_through_helpers_are_seen(helpers_deps):
    doc = helpers_deps["doc"]
    cbs = tagged(doc)
    assert set(cbs) == set(PUBLISHES)
    assert {t: {p["topic"] for p in cb["publishes"]} for t, cb in cbs.items()} == PUBLISHES
    tag = {cb["id"]: t for t, cb in cbs.items()}
    assert {(tag[e["from"]], tag[e["to"]]) for e in doc["edges"]} == EDGES
    # nothing that publishes is left unseen; nothing at all here
    assert doc["unseen"] == [] and all(cb["unseen"] == [] for cb in cbs.values())
    assert doc["undecided"] == [] and doc["bookkeeping"] == []
    assert "every callback's publications are seen" in helpers_deps["stdout"]


UNSEEN_SRC = """#include <ros/ros.h>
#include <std_msgs/String.h>
#include <functional>
#include <string>
void publish_elsewhere(ros::Publisher& pub, const std::string& s);  // defined in no analysed source
struct Sink { virtual void put(const std::string& s) = 0; };
int main(int argc, char** argv) {
  ros::init(argc, argv, "unseen");
  ros::NodeHandle nh;
  ros::Publisher a = nh.advertise<std_msgs::String>("a", 10);
  std::function<void(const std::string&)> out;
  std::string last;
  auto s = nh.subscribe<std_msgs::String>("in", 10, [&](const std_msgs::String::ConstPtr& m) { last = m->data; });
  auto t1 = nh.createTimer(ros::Duration(0.1), [&](const ros::TimerEvent&) { publish_elsewhere(a, last); });
  auto t2 = nh.createTimer(ros::Duration(0.2), [&](const ros::TimerEvent&) { out(last); });
  auto t3 = nh.createTimer(ros::Duration(0.3), [&](const ros::TimerEvent&) { std_msgs::String m; m.data = last; a.publish(m); });
  ros::spin();
}
"""


@needs_roscpp
@pytest.mark.slow
def test_callbacks_whose_publications_cannot_be_seen_are_listed(tmp_path, run_roscope):
    """A callback that publishes nowhere the analysis sees but calls into code it cannot
    see (a function no source defines, a std::function) is listed as unseen, with why;
    one seen publishing, or one that calls nothing unseen, is not."""
    src = tmp_path / "unseen.cpp"
    src.write_text(UNSEEN_SRC)
    p = run_roscope("deps", "--json", "--flags", "-std=c++17", str(src))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    by_line = {int(cb["registered_at"].rsplit(":", 2)[1]): cb for n in doc["nodes"] for cb in n["callbacks"]}
    sub, t1, t2, t3 = by_line[13], by_line[14], by_line[15], by_line[16]
    assert sub["unseen"] == [] and t3["unseen"] == [] and [x["topic"] for x in t3["publishes"]] == ["a"]
    assert "publish_elsewhere, which no analysed source defines" in t1["unseen"][0]["why"]
    assert "std::function" in t2["unseen"][0]["why"]
    assert {u["callback"] for u in doc["unseen"]} == {t1["id"], t2["id"]}
    assert "publications not seen" in p.stderr


COPIES_SRC = """#include <ros/ros.h>
#include <std_msgs/String.h>
#include <string>
std::string g_latest;
ros::Publisher g_pub;  // a global publisher, used by a helper that takes none
template <typename M>
void publish(const ros::Publisher& pub, const M& m) { pub.publish(m); }
void publish_global(const std::string& s) { std_msgs::String m; m.data = s; publish(g_pub, m); }
void publish_copy(ros::Publisher pub, const std::string& s) { std_msgs::String m; m.data = s; pub.publish(m); }
int main(int argc, char** argv) {
  ros::init(argc, argv, "copies");
  ros::NodeHandle nh;
  ros::Publisher a = nh.advertise<std_msgs::String>("a", 10);
  ros::Publisher b = nh.advertise<std_msgs::String>("b", 10);
  g_pub = nh.advertise<std_msgs::String>("g", 10);
  auto in = nh.subscribe<std_msgs::String>("in", 10, [&](const std_msgs::String::ConstPtr& m) { g_latest = m->data; });
  auto t1 = nh.createTimer(ros::Duration(0.1), [a](const ros::TimerEvent&) { std_msgs::String m; m.data = g_latest; publish(a, m); });
  auto t2 = nh.createTimer(ros::Duration(0.2), [=](const ros::TimerEvent&) { publish_copy(b, g_latest); });
  auto t3 = nh.createTimer(ros::Duration(0.3), [&](const ros::TimerEvent&) { publish_copy(b, "x"); });
  auto t4 = nh.createTimer(ros::Duration(0.4), [](const ros::TimerEvent&) { publish_global(g_latest); });
  ros::spin();
}
"""


@needs_roscpp
@pytest.mark.slow
def test_copies_and_globals_publish_on_their_topic(tmp_path):
    """A publisher captured by copy (`[a]`, `[=]`) and given to a helper, or given by value
    (`publish_copy(ros::Publisher pub, ...)`): a copy of a publisher publishes on its topic
    (by hand: the 100 ms timer publishes a, the 200 and 300 ms ones b, the 400 ms one g, the
    global publisher; all but the 300 ms one read g_latest, which the subscription writes)."""
    from roscope import deps

    src = tmp_path / "copies.cpp"
    src.write_text(COPIES_SRC)
    doc = deps.analyze([str(src)], flags=["-std=c++17"])
    cbs = {cb["period_ns"] // 1_000_000 if cb["kind"] == "timer" else cb["topic"]: cb
           for n in doc["nodes"] for cb in n["callbacks"]}
    assert {k: [p["topic"] for p in cb["publishes"]] for k, cb in cbs.items()} == {
        "in": [], 100: ["a"], 200: ["b"], 300: ["b"], 400: ["g"]}
    ids = {cb["id"]: k for k, cb in cbs.items()}
    assert {(ids[e["from"]], ids[e["to"]]) for e in doc["edges"]} == {("in", 100), ("in", 200), ("in", 400)}
    assert doc["unseen"] == [] and doc["undecided"] == []


RCLCPP_SRC = """#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/string.hpp>
#include <chrono>
#include <string>
using String = std_msgs::msg::String;
template <typename P, typename M>
void publish(P& pub, const M& m) { pub->publish(m); }  // the publisher's type a template parameter
template <typename M>
void publish_ptr(typename rclcpp::Publisher<M>::SharedPtr pub, const M& m) { pub->publish(m); }
template <typename M>
void publish_ref(rclcpp::Publisher<M>& pub, M m) { pub.publish(std::move(m)); }
template <typename M>
void twice_removed(rclcpp::Publisher<M>& pub, const M& m) { publish_ref(pub, m); }
class Relay : public rclcpp::Node {
 public:
  Relay() : rclcpp::Node("relay") {
    a_ = create_publisher<String>("a", 10);
    b_ = create_publisher<String>("b", 10);
    c_ = create_publisher<String>("c", 10);
    in_ = create_subscription<String>("in", 10, [this](String::SharedPtr m) { last_ = m->data; });
    t1_ = create_wall_timer(std::chrono::milliseconds(100), [this]() { String m; m.data = last_; publish(a_, m); });
    t2_ = create_wall_timer(std::chrono::milliseconds(200), [this]() { String m; m.data = last_; publish_ptr<String>(b_, m); });
    t3_ = create_wall_timer(std::chrono::milliseconds(300), [this]() { String m; m.data = "x"; twice_removed(*c_, m); });
  }
 private:
  rclcpp::Publisher<String>::SharedPtr a_, b_, c_;
  rclcpp::Subscription<String>::SharedPtr in_;
  rclcpp::TimerBase::SharedPtr t1_, t2_, t3_;
  std::string last_;
};
"""


def test_rclcpp_helpers_templates_on_the_publisher(tmp_path):
    """rclcpp: helpers templated on the message or on the publisher's type, given the
    SharedPtr or the publisher by reference, one and two calls deep (by hand: the 100 ms
    timer publishes a, the 200 ms one b, the 300 ms one c; the first two read what the
    subscription writes, the third reads nothing of it)."""
    from roscope import deps

    src = tmp_path / "relay.cpp"
    src.write_text(RCLCPP_SRC)
    doc = deps.analyze([str(src)], flags=["-isystem", str(STUB), "-std=c++17"])
    cbs = {cb["period_ns"] // 1_000_000 if cb["kind"] == "timer" else cb["topic"]: cb
           for n in doc["nodes"] for cb in n["callbacks"]}
    assert {k: [p["topic"] for p in cb["publishes"]] for k, cb in cbs.items()} == {
        "in": [], 100: ["a"], 200: ["b"], 300: ["c"]}
    ids = {cb["id"]: k for k, cb in cbs.items()}
    assert {(ids[e["from"]], ids[e["to"]]) for e in doc["edges"]} == {("in", 100), ("in", 200)}
    assert doc["unseen"] == []


# ---------------------------------------------------------------- flow --deps on a recording

@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, Path]:
    """examples/ros1_helpers recorded by `roscope record -- system.sh` for 4 s: (trace, ground truth)."""
    return ft.record("ros1_helpers", tmp_path_factory.mktemp("ros1_helpers"), 4.0)


@needs_roscpp
@pytest.mark.slow
@pytest.mark.lttng
@pytest.mark.ros1
def test_flow_with_the_dependency_file_is_never_worse_than_the_trace(recorded, helpers_deps, tmp_path):
    """On a real recording, against the nodes' own log: `flow --deps` with the file
    finds every true pair and no false one (the helpers are followed), at least what
    the trace alone finds; a stale file that saw no callback publish (what roscope
    wrote before: every `publishes` empty, no edge) leaves the callbacks the trace
    shows publishing with their trace edges, with a warning: the flows are the trace's."""
    import roscope
    import roscope.flow

    trace, gt = recorded
    truth = ft.select(ft.ground_truth(trace, gt), SYSTEM["from"], SYSTEM["to"])
    assert len(truth.pairs) > 20, "the recording holds too few flows to compare"
    db = roscope.open(str(trace))
    alone = ft.measure(db, truth)
    with_file = ft.measure(db, truth, implicit="auto", deps=str(helpers_deps["path"]))
    stale = json.loads(helpers_deps["path"].read_text())
    for node in stale["nodes"]:
        for cb in node["callbacks"]:
            cb["publishes"], cb["unseen"] = [], []
    stale["edges"] = []
    stale_path = tmp_path / "stale-deps.json"
    stale_path.write_text(json.dumps(stale))
    with_stale = ft.measure(db, truth, implicit="auto", deps=str(stale_path))
    for name, r in (("trace alone", alone), ("--deps", with_file), ("--deps (stale file)", with_stale)):
        print(f"examples/ros1_helpers, {name}: {r['pairs']} pairs of {r['true_pairs']} true, "
              f"precision {r['precision']:.3f}, recall {r['recall']:.3f}")
    assert (with_file["precision"], with_file["recall"]) == (1.0, 1.0), with_file
    for r in (with_file, with_stale):
        assert r["recall"] >= alone["recall"] and r["precision"] >= alone["precision"], (r, alone)
    assert (with_stale["pairs"], with_stale["found"]) == (alone["pairs"], alone["found"])
    res = roscope.flow.data_flows(db, SYSTEM["from"], SYSTEM["to"], implicit="auto", deps=str(stale_path))
    said = " ".join(res.summary["warnings"])
    assert "cannot be vouched for and keep the edges the trace alone gives them" in said, said
    assert "the trace shows" in said
    # the file itself: nothing unseen, no warning of the kind
    res = roscope.flow.data_flows(db, SYSTEM["from"], SYSTEM["to"], implicit="auto", deps=str(helpers_deps["path"]))
    assert res.summary["deps"]["unseen"] == []
    assert not any("vouched" in w for w in res.summary["warnings"])
