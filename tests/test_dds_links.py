"""Transport links from the DDS layer's own instrumentation (issue 10): a Humble system
(`rmw_publish` without a timestamp) recorded by ros2sim with `--dds`, which emits the
message-flow paper's `dds:*` events through real LTTng (create_writer/create_reader with
GIDs, `write` with the data and the DDS source timestamp, `read`). Every delivery is linked
exactly, by `dds_write_stamp`, where the same system without the DDS events is linked only by
the wall-clock heuristic. Expected links come from ros2sim's ground truth; the events from
babeltrace2.
"""
from __future__ import annotations

import collections
import json
import os

import pytest

from tests.support.ros2sim import build_ros2sim, ground_truth, load_db, roscope_links, simulate_many, truth_links

pytestmark = pytest.mark.lttng
bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle of the events")

SYSTEM = {"processes": [
    {"name": "talker", "nodes": [{"name": "talker", "publishers": [{"topic": "/chatter"}, {"topic": "/status"}],
        "timers": [{"period_ms": 10, "work": {"dist": "fixed", "us": 100}, "publish": ["/chatter"]},
                   {"period_ms": 25, "work": {"dist": "fixed", "us": 100}, "publish": ["/status"]}]}]},
    {"name": "listener", "nodes": [{"name": "listener", "subscriptions": [
        {"topic": "/chatter", "depth": 10, "work": {"dist": "fixed", "us": 200}},
        {"topic": "/status", "depth": 10, "work": {"dist": "fixed", "us": 200}}]}]}]}


@pytest.fixture(scope="module")
def sims(tmp_path_factory):
    """The system with and without the DDS events, the two runs at once (tests/support/ros2sim.simulate_many)."""
    if os.geteuid() != 0:
        pytest.skip("ros2sim hosts need unshare (root)")
    build_ros2sim()
    bases = {dds: tmp_path_factory.mktemp(f"dds-{dds}") for dds in (True, False)}
    for base in bases.values():
        (base / "system.json").write_text(json.dumps(SYSTEM))
    outs = simulate_many([(base / ("dds" if dds else "plain"), ["--system", base / "system.json", "--distro", "humble",
                                                                *(["--dds"] if dds else []), "--duration", "1.0"])
                          for dds, base in bases.items()])
    out = {}
    for (dds, base), sim in zip(bases.items(), outs):
        manifest = json.loads((sim / "manifest.json").read_text())
        out[dds] = {"out": sim, "trace": sim / "traces", "gt": ground_truth(sim), "base": base,
                    "pids": {p["vpid"] for p in manifest["processes"]}}
    return out


def test_the_trace_has_the_dds_layers_events(sims):
    """babeltrace2 sees one dds:write per inter-process publication, whose timestamp is the
    source_timestamp of the rmw_take of that message, and one dds:create_writer per writer."""
    names = collections.Counter()
    writes, takes = set(), set()
    for msg in bt2.TraceCollectionMessageIterator(str(sims[True]["trace"])):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        names[ev.name] += 1
        if ev.name == "dds:write":
            writes.add(int(ev.payload_field["timestamp"]))
        elif ev.name == "ros2:rmw_take" and int(ev.payload_field["taken"]):
            takes.add(int(ev.payload_field["source_timestamp"]))
    assert names["dds:write"] == names["ros2:rmw_publish"] > 100
    assert names["dds:create_writer"] >= 2 and names["dds:create_reader"] >= 2
    assert takes and takes <= writes


@pytest.mark.parametrize("dds", [True, False], ids=["with-dds", "without"])
def test_links_are_exact_with_the_dds_layer(sims, dds):
    s = sims[dds]
    want = truth_links(s["gt"])
    con = load_db(s["trace"], s["base"] / "links.duckdb")
    try:
        got, methods = roscope_links(con, s["gt"], s["pids"])
    finally:
        con.close()
    assert got == want and len(want) > 100
    assert dict(methods) == {"dds_write_stamp" if dds else "heuristic_wall_clock": len(want)}
