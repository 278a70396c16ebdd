"""`roscope check` and its pytest API on callbacks nobody wrote (issue 39 item 3), on a real
trace recorded by others: CARET's 6-node end-to-end sample (ros2/caret-end-to-end-cyclonedds),
where every rclcpp node has six parameter services that never ran and a TimeSource
subscription to /parameter_events that did.

The oracle is babeltrace2 (tests/support/oracle.py, bt2): each node's callbacks from the
registration events (rcl_node_init, rcl_service_init + rclcpp_service_callback_added,
rcl_subscription_init + rclcpp_subscription_init + rclcpp_subscription_callback_added,
rclcpp_timer_link_node + rclcpp_timer_callback_added), and each callback's runs from
callback_start/callback_end paired on their thread. Fast: no LTTng, no ROS.
"""
from __future__ import annotations

import collections
import importlib.metadata
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.shared import TRACES as SHARED_TRACES

TRACE = os.path.join(SHARED_TRACES, "ros2", "caret-end-to-end-cyclonedds")
pytestmark = pytest.mark.skipif(not os.path.isdir(TRACE), reason=f"no shared trace at {TRACE}")
#: The parameter services rclcpp gives every node (rclcpp::ParameterService).
PARAMETER_SERVICES = {"get_parameters", "get_parameter_types", "set_parameters", "set_parameters_atomically",
                      "describe_parameters", "list_parameters"}


@pytest.fixture(scope="module")
def truth() -> dict:
    """{node: {(kind, topic or service or "timer"): {"runs": [durations ns], "ran": bool}}} from bt2."""
    oracle = pytest.importorskip("tests.support.oracle")
    if oracle.bt2 is None:
        pytest.skip("bt2 (babeltrace2's Python bindings) is not importable")
    nodes, services, subs, sub_objs, timers, cb_of = {}, {}, {}, {}, {}, {}
    stacks: dict = collections.defaultdict(list)
    runs: dict = collections.defaultdict(list)
    started: set = set()
    for ev in oracle.Reading(TRACE).events():
        n, p, tid = ev["name"], ev.get("payload", {}), ev.get("context", {}).get("vtid")
        if n == "ros2:rcl_node_init":
            ns = p["namespace"].rstrip("/")
            nodes[p["node_handle"]] = f"{ns}/{p['node_name']}"
        elif n == "ros2:rcl_service_init":
            services[p["service_handle"]] = (p["node_handle"], p["service_name"])
        elif n == "ros2:rclcpp_service_callback_added":
            node, name = services[p["service_handle"]]
            cb_of[p["callback"]] = (node, "service", name)
        elif n == "ros2:rcl_subscription_init":
            subs[p["subscription_handle"]] = (p["node_handle"], p["topic_name"])
        elif n == "ros2:rclcpp_subscription_init":
            sub_objs[p["subscription"]] = subs[p["subscription_handle"]]
        elif n == "ros2:rclcpp_subscription_callback_added":
            node, topic = sub_objs[p["subscription"]]
            cb_of[p["callback"]] = (node, "subscription", topic)
        elif n == "ros2:rclcpp_timer_link_node":
            timers[p["timer_handle"]] = p["node_handle"]
        elif n == "ros2:rclcpp_timer_callback_added":
            cb_of[p["callback"]] = (p["timer_handle"], "timer", "timer")
        elif n == "ros2:callback_start":
            stacks[tid].append((p["callback"], ev["ts"]))
            started.add(p["callback"])
        elif n == "ros2:callback_end" and stacks[tid] and stacks[tid][-1][0] == p["callback"]:
            cb, t0 = stacks[tid].pop()
            runs[cb].append(ev["ts"] - t0)
    out: dict = {}
    for cb, (owner, kind, name) in cb_of.items():
        node = nodes[timers[owner]] if kind == "timer" else nodes[owner]
        out.setdefault(node, {})[(kind, name)] = {"runs": runs.get(cb, []), "ran": cb in started}
    assert len(out) == 6 and all(sum(k[0] == "service" for k in cbs) == 6 for cbs in out.values())
    return out


def _infrastructure(node: str, kind: str, name: str) -> bool:
    """The oracle's own rule: a node's parameter services, a subscription to /parameter_events."""
    if kind == "service":
        prefix, _, last = name.rpartition("/")
        return prefix == node and last in PARAMETER_SERVICES
    return kind == "subscription" and name in ("/parameter_events", "/rosout", "/clock")


def _check(tmp_path, body: str, *extra) -> tuple[int, dict]:
    f = tmp_path / "budgets.yaml"
    f.write_text(body)
    p = subprocess.run([sys.executable, "-m", "roscope", "check", str(f), TRACE, "--json", *extra],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1, 2), p.stderr
    return p.returncode, json.loads(p.stdout)


def _node_budgets(truth, extra: str = "") -> str:
    return "budgets:\n" + "".join(f"  - callback: '^{node} '\n{extra}    duration: {{p99: 100 ms, max: 1 s}}\n"
                                  for node in sorted(truth))


def _key(subject: str, node: str) -> tuple[str, str]:
    """(kind, what it serves) of a line's subject, `node topic-or-timer symbol`."""
    rest = subject[len(node) + 1:]
    if rest.startswith("timer "):
        return ("timer", "timer")
    name = rest.split(" ", 1)[0]
    return ("service" if name.startswith(node + "/") else "subscription", name)


def test_a_budget_over_a_node_passes_on_the_healthy_system(truth, tmp_path):
    """The issue's case: `callback: "^/node "` with a duration budget on a healthy system. Before, each
    node's six parameter services (never run: bt2 has no callback_start of them) were "cannot be
    evaluated" and the check exited 2; now they are left out as infrastructure, with the
    /parameter_events subscription, and every line is one of the node's own callbacks."""
    never = [(n, k) for n, cbs in truth.items() for k, v in cbs.items() if k[0] == "service" and not v["ran"]]
    assert len(never) == 36
    rc, doc = _check(tmp_path, _node_budgets(truth))
    assert rc == 0, [x["text"] for x in doc["lines"] if x["status"] != "pass"]
    for node, cbs in truth.items():
        lines = [x for x in doc["lines"] if x["select"] == f"^{node} "]
        own = {k for k, v in cbs.items() if not _infrastructure(node, *k)}
        assert own and {_key(x["subject"], node) for x in lines} == own, (node, own)
        for x in lines:
            d = cbs[_key(x["subject"], node)]["runs"]
            assert x["status"] == "pass" and not x["no_runs"]
            if x["stat"] == "max":
                assert x["value"] == max(d)


def test_infrastructure_keep_lists_the_callbacks_that_never_ran_as_passing(truth, tmp_path):
    for how in ("key", "flag"):
        body = _node_budgets(truth, "    infrastructure: keep\n" if how == "key" else "")
        rc, doc = _check(tmp_path, body, *(["--infrastructure", "keep"] if how == "flag" else []))
        assert rc == 0, (how, [x["text"] for x in doc["lines"] if x["status"] != "pass"])
        for node, cbs in truth.items():
            lines = [x for x in doc["lines"] if x["select"] == f"^{node} "]
            assert {_key(x["subject"], node) for x in lines} == set(cbs)
            for x in lines:
                v = cbs[_key(x["subject"], node)]
                if not v["ran"]:   # listed, passing, with no value
                    assert x["status"] == "pass" and x["no_runs"] and x["value"] is None, x
                    assert "no runs" in x["text"]
                else:
                    assert not x["no_runs"] and x["value"] is not None
                    if x["stat"] == "max":
                        assert x["value"] == max(v["runs"])
        n = sum(1 for cbs in truth.values() for v in cbs.values() if not v["ran"]) * 2  # two limits
        assert doc["summary"]["no_runs"] == n == 72


def test_a_budget_whose_callbacks_never_ran_cannot_be_evaluated(truth, tmp_path):
    body = "budgets:\n  - callback: '^/filter_node /filter_node/'\n    infrastructure: keep\n    duration: {max: 1 s}\n"
    rc, doc = _check(tmp_path, body)
    assert not any(v["ran"] for k, v in truth["/filter_node"].items() if k[0] == "service")
    errors = [x for x in doc["lines"] if x["status"] == "error"]
    assert rc == 2 and len(errors) == 1 and "none of the 6 callbacks it selects ran" in errors[0]["message"]
    # left out by default: nothing selected, and the message says what was left out and how to keep it
    rc, doc = _check(tmp_path, body.replace("    infrastructure: keep\n", ""))
    msg = next(x for x in doc["lines"] if x["status"] == "error")["message"]
    assert rc == 2 and "no callback matches" in msg and "6 infrastructure callbacks left out" in msg
    assert "infrastructure: keep" in msg


def test_topic_budgets_leave_out_infrastructure_topics(tmp_path):
    oracle = pytest.importorskip("tests.support.oracle")
    if oracle.bt2 is None:
        pytest.skip("bt2 is not importable")
    pubs, published = {}, set()
    for ev in oracle.Reading(TRACE).events():
        if ev["name"] == "ros2:rcl_publisher_init":
            pubs[ev["payload"]["publisher_handle"]] = ev["payload"]["topic_name"]
        elif ev["name"] == "ros2:rcl_publish" and ev["payload"]["publisher_handle"] in pubs:
            published.add(pubs[ev["payload"]["publisher_handle"]])
    assert "/parameter_events" in published
    body = "budgets:\n  - topic: '.'\n    rate: {min: 0.001 Hz}\n"
    rc, doc = _check(tmp_path, body)
    dropped = {x["subject"] for x in doc["lines"] if x["measure"] == "rate"}
    rc2, doc = _check(tmp_path, body, "--infrastructure", "keep")
    kept = {x["subject"] for x in doc["lines"] if x["measure"] == "rate"}
    # kept: /rosout too, declared by every node and never published on (rate 0: the line fails)
    assert rc == 0 and rc2 == 1
    assert kept == published | {"/rosout"} and dropped == published - {"/parameter_events"}


def test_the_pytest_api_leaves_out_what_never_ran_and_infrastructure(truth):
    from roscope.check.api import Trace
    from roscope.errors import InputError

    t = Trace(TRACE)
    try:
        want = max(truth["/filter_node"][("subscription", "/topic1")]["runs"])
        assert float(t.callback("^/filter_node ").duration.max) == want
        # kept: the six services never ran (left out), two callbacks that ran remain: not one subject
        with pytest.raises(InputError, match="selects 2"):
            t.callback("^/filter_node ", infrastructure="keep").duration.max  # noqa: B018
        with pytest.raises(InputError, match="none of the 6 callbacks it selects ran"):
            t.callback("^/filter_node /filter_node/", infrastructure="keep").duration.max  # noqa: B018
        pe = max(truth["/filter_node"][("subscription", "/parameter_events")]["runs"])
        assert float(t.callback("^/filter_node /parameter_events ", infrastructure="keep").duration.max) == pe
    finally:
        t.close()


def test_the_pytest_api_reads_each_kinds_measures(truth):
    """A subject's attributes are its kind's measures (roscope.check.kinds), each read from the
    measured values: a callback's deadline count and share and its duration's median equal
    the oracle's runs'; a topic has no duration (the error names its measures)."""
    from roscope.check.api import Trace
    from roscope.check.units import SHARE

    runs = sorted(truth["/filter_node"][("subscription", "/topic1")]["runs"])
    over = runs[len(runs) // 2]
    t = Trace(TRACE)
    try:
        cb = t.callback("^/filter_node ")
        assert float(cb.duration.p50) == pytest.approx(float(np.percentile(runs, 50)), abs=1)
        late = sum(1 for d in runs if d > over)
        assert late > 0
        assert float(cb.deadline(over).count) == late
        share = cb.deadline(over).share
        assert float(share) == pytest.approx(late / len(runs)) and share.reading.kind == SHARE
        assert repr(share).endswith(f"(deadline {over / 1e6:g} ms share of {share.reading.subject})")
        with pytest.raises(AttributeError, match="a topic has no measure 'duration' .*rate, latency"):
            t.topic("^/topic1$").duration  # noqa: B018
    finally:
        t.close()


INNER = '''
import pytest
from roscope.pytest_plugin import ms


@pytest.mark.roscope_budgets({budgets!r})
@pytest.mark.roscope_trace({trace!r})
def test_nodes_are_fast(roscope_trace):
    assert roscope_trace.callback("^/filter_node ").duration.max <= ms(1000)
'''


def test_the_budgets_marker_passes_a_node_budget(pytester_like, truth, tmp_path):
    budgets = tmp_path / "nodes.yaml"
    budgets.write_text(_node_budgets(truth))
    r = pytester_like(INNER.format(budgets=str(budgets), trace=TRACE))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def pytester_like(tmp_path):
    """Runs one test file with roscope's pytest plugin in a fresh pytest (a subprocess)."""
    def run(text: str) -> subprocess.CompletedProcess:
        d = tmp_path / "inner"
        d.mkdir()
        (d / "test_inner.py").write_text(text)
        eps = importlib.metadata.entry_points(group="pytest11")
        plugin = [] if any(e.value == "roscope.pytest_plugin" for e in eps) else ["-p", "roscope.pytest_plugin"]
        return subprocess.run([sys.executable, "-m", "pytest", "-q", *plugin, "-p", "no:cacheprovider", "--rootdir", str(d), "--roscope-reports", str(d / "reports"),
                               str(d / "test_inner.py")], capture_output=True, text=True, timeout=300, cwd=d)
    return run


@pytest.mark.parametrize("body, key, what", [
    ("budgets:\n  - callback: x\n    infrastructure: yes\n    duration: {max: 1 ms}\n", "budgets[0].infrastructure",
     "is not one of drop, keep"),
    ("budgets:\n  - path: {from: a, to: b}\n    infrastructure: keep\n    latency: {max: 1 ms}\n",
     "budgets[0].infrastructure", "unknown key for a path budget"),
])
def test_the_infrastructure_key_is_checked(tmp_path, body, key, what):
    from roscope.check import budgets
    from roscope.errors import InputError

    f = tmp_path / "b.yaml"
    f.write_text(body)
    with pytest.raises(InputError) as e:
        budgets.load(f)
    assert str(e.value).startswith(f"{f}:3: {key}: ") and what in str(e.value), str(e.value)


def test_the_infrastructure_topics_are_the_reports():
    from roscope.check import infrastructure
    from roscope.report import pairs

    names = ["/rosout", "/rosout_agg", "/parameter_events", "/clock", "/caret/x", "/ns/rosout", "/imu",
             "/parameter_events_x", "/clock2"]
    assert [infrastructure.topic(n) for n in names] == [pairs.infrastructure(n) for n in names]
    # callbacks: a node's own services (and clients of any node's), ROS 1's logger services
    assert infrastructure.callback("service", "/a/get_parameters", "/a")
    assert not infrastructure.callback("service", "/b/get_parameters", "/a")
    assert infrastructure.callback("client", "/b/set_parameters", "/a")
    assert infrastructure.callback("service", "/node_1/get_loggers", "/node_1")
    assert infrastructure.callback("subscription", "/rosout", "/rosout")
    assert not infrastructure.callback("service", "/a/plan_path", "/a")
    assert not infrastructure.callback("timer", None, "/a")


# ---------------------------------------------------------------- a real rclpy recording


@pytest.mark.ros2
@pytest.mark.lttng
def test_a_node_budget_on_a_recorded_rclpy_system(ros2_pipeline_run, tmp_path):
    """examples/ros2_pipeline under Jazzy from PyPI (conftest.ros2_pipeline_run, 8 s, shared): every
    rclpy node has parameter services that never run (babeltrace2: registered to the node, no
    callback_start), so `callback: "^/planner "` with a p99 budget exited 2. Now it passes, its
    lines are the planner's own callbacks (the example's sources: ros2_truth.CALLBACKS), and with
    `--infrastructure keep` the lines with no runs are exactly the ones bt2 saw never run."""
    from tests.support import ros2_truth as T

    r = ros2_pipeline_run("jazzy")
    t = T.read_trace(r["trace"])
    mine = {}   # (kind, what it serves) -> ran, of the planner's callbacks
    for key, v in t.owners.items():
        if key[0] == "sub" or not isinstance(v, tuple):   # a subscription's own handle, not a callback
            continue
        kind, owner = v
        o = t.objects.get((key[0], owner))
        if o is not None and o[2] == "/planner":
            mine[(kind, o[1] if kind != "timer" else "timer")] = bool(t.runs.get(key))
    print("the planner's callbacks (kind, serves): ran", mine)
    params = {k for k in mine if k[0] == "service" and k[1].rpartition("/")[2] in PARAMETER_SERVICES}
    assert len(params) == 6 and not any(mine[k] for k in params), mine
    own = {(kind, what) for (node, _), (_sym, kind, what) in T.CALLBACKS.items() if node == "/planner"}
    assert own <= set(mine) and all(mine[k] for k in own), (own, mine)

    f = tmp_path / "planner.yaml"
    f.write_text("budgets:\n  - callback: '^/planner '\n    duration: {p99: 100 ms}\n")
    argv = [sys.executable, "-m", "roscope", "check", str(f), str(r["trace"]), "--json"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [x for x in json.loads(p.stdout)["lines"] if x["kind"] == "callback"]
    subjects = {(x["subject"].split(" ")[1]) for x in lines}
    assert subjects == {what for _kind, what in own}, subjects
    p = subprocess.run([*argv, "--infrastructure", "keep"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [x for x in json.loads(p.stdout)["lines"] if x["kind"] == "callback"]
    never = {x["subject"].split(" ")[1] for x in lines if x["no_runs"]}
    assert never == {what for (kind, what), ran in mine.items() if not ran and kind != "timer"}
    assert {k[1] for k in params} <= never
