"""`roscope executor`'s callbacks per executor thread (issue 30, CARET users' executor
table), against babeltrace2: per thread (vtid) and callback symbol, the callback_start
events and the time in outermost callback runs (callback_start/callback_end paired per
thread, nested runs inside); a thread has "executor events" when babeltrace2 shows
rclcpp_executor_* events on it.
"""
from __future__ import annotations

import collections
import json
import os

import pytest

from tests.support.cli import roscope as run_roscope
from tests.support.shared import TRACES

bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings are the oracle")


def bt2_threads(path: str):
    """{(tid, symbol): [runs, outermost busy ns]}, {tids with executor events}."""
    symbol, stack, out, executor = {}, collections.defaultdict(list), collections.defaultdict(lambda: [0, 0]), set()
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is not bt2._EventMessageConst:
            continue
        ev, ts = m.event, m.default_clock_snapshot.ns_from_origin
        pid, tid = int(ev.common_context_field["vpid"]), int(ev.common_context_field["vtid"])
        if ev.name == "ros2:rclcpp_callback_register":
            symbol[(pid, int(ev.payload_field["callback"]))] = str(ev.payload_field["symbol"])
        elif ev.name.startswith("ros2:rclcpp_executor_"):
            executor.add(tid)
        elif ev.name == "ros2:callback_start":
            stack[tid].append((ts, symbol.get((pid, int(ev.payload_field["callback"])))))
        elif ev.name == "ros2:callback_end" and stack[tid]:
            start, sym = stack[tid].pop()
            out[(tid, sym)][0] += 1
            if not stack[tid]:
                out[(tid, sym)][1] += ts - start
    return dict(out), executor


@pytest.mark.parametrize("name", ["pingpong-rolling-2021", "caret-end-to-end-cyclonedds"])
def test_callbacks_per_executor_thread_equal_babeltrace2s(name):
    path = os.path.join(TRACES, "ros2", name)
    if not os.path.isdir(path):
        pytest.skip("no shared traces")
    want, executor = bt2_threads(path)
    p = run_roscope("executor", path, "--json", timeout=600)
    assert p.returncode == 0, p.stderr
    got = collections.defaultdict(lambda: [0, 0])
    for t in json.loads(p.stdout)["executors"]:
        assert t["executor_events"] == (t["tid"] in executor), t["tid"]
        assert t["runs"] == sum(c["runs"] for c in t["callbacks"])
        assert t["busy_ns"] == sum(c["busy_ns"] for c in t["callbacks"])
        assert sum(c["share"] for c in t["callbacks"]) == pytest.approx(1.0)
        for c in t["callbacks"]:
            got[(t["tid"], c["symbol"])][0] += c["runs"]
            got[(t["tid"], c["symbol"])][1] += c["busy_ns"]
    assert dict(got) == want
    assert (name == "pingpong-rolling-2021") == bool(executor)


def test_the_report_has_the_executor_table(tmp_path):
    path = os.path.join(TRACES, "ros2", "pingpong-rolling-2021")
    if not os.path.isdir(path):
        pytest.skip("no shared traces")
    want, _executor = bt2_threads(path)
    out = tmp_path / "r.html"
    p = run_roscope("report", path, "-o", str(out), timeout=600)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert f"Callbacks per executor thread ({len({tid for tid, _s in want})} threads)" in html
