"""The README's Python example ("From Python") runs as written, on a trace and on a
database written by `roscope load`, and what it computes is right.

The example's code block is taken from README.md itself; only the session path and
the topic regexes are put in (the CARET end-to-end sample: a sensor timer publishes
/topic1, a filter /topic2, a fusion node /topic3, and a timer node /topic4). The
oracle is babeltrace2 (bt2): the /topic4 publications (every output of a flow), the
time each was published (its rclcpp_publish), and the callback runs of the sensor
that published /topic1 (where each flow starts). The flows themselves are compared
with tests/support/flow_reference.py, a separate plain-Python Algorithm 1.
"""
from __future__ import annotations

import hashlib
import os
import re

import pytest

from tests.support.cli import roscope as run_roscope

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FROM, TO = "^/topic1$", "^/topic4$"

bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle")


def readme_example() -> str:
    text = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    m = re.search(r"From Python:\s*```python\n(.*?)```", text, re.S)
    assert m, "README.md has no 'From Python' example"
    code = m.group(1)
    assert code.count('"path/to/session"') == 2 and '"^/sensors/", "^/control/"' in code
    return code


def run_example(session: str, db_or_trace: str) -> dict:
    code = readme_example().replace('roscope.open("path/to/session")', f"roscope.open({db_or_trace!r})")
    code = code.replace('Trace("path/to/session")', f"Trace({session!r})")
    code = code.replace('"^/sensors/", "^/control/"', f"{FROM!r}, {TO!r}")
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - the README's own example
    return ns


@pytest.fixture(scope="module")
def e2e(shared_traces) -> str:
    return os.path.join(shared_traces, "ros2", "caret-end-to-end-cyclonedds")


@pytest.fixture(scope="module")
def oracle(e2e) -> dict:
    """From bt2: publish times of /topic4 messages (their rclcpp_publish), and the
    start times of the callback runs that published /topic1."""
    topic, open_run, first_layer = {}, {}, {}
    out_times, in_starts, callback_starts = [], set(), 0
    for msg in bt2.TraceCollectionMessageIterator(e2e):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev, ts = msg.event, msg.default_clock_snapshot.value
        ctx = ev.common_context_field
        vpid, vtid = int(ctx["vpid"]), int(ctx["vtid"])
        if ev.name == "ros2:rcl_publisher_init":
            topic[(vpid, int(ev.payload_field["publisher_handle"]))] = str(ev.payload_field["topic_name"])
        elif ev.name == "ros2:callback_start":
            open_run[vtid] = ts
            callback_starts += 1
        elif ev.name == "ros2:callback_end":
            open_run.pop(vtid, None)
        elif ev.name == "ros2:rclcpp_publish":
            first_layer[(vtid, int(ev.payload_field["message"]))] = ts
        elif ev.name == "ros2:rcl_publish":
            t = topic.get((vpid, int(ev.payload_field["publisher_handle"])))
            if t == "/topic4":
                out_times.append(first_layer.pop((vtid, int(ev.payload_field["message"]))))
            elif t == "/topic1" and vtid in open_run:
                in_starts.add(open_run[vtid])
    assert len(out_times) > 30 and len(in_starts) > 30 and callback_starts > 100
    return {"out_times": sorted(out_times), "in_starts": in_starts}


@pytest.fixture(scope="module")
def loaded(e2e, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("api") / "run.duckdb")
    run_roscope("load", e2e, "-o", out, check=True, timeout=300)
    return out


def check(ns: dict, oracle: dict) -> None:
    db = ns["db"]
    # The example's other lines gave real results.
    assert len(db.sql("SELECT * FROM callbacks_info")) > 10
    assert len(ns["tables"]["ros2:callback_start"]) == 508  # babeltrace2 counts 508
    # The flows it found are visible to SQL on the connection.
    flows = db.records("SELECT output_publication_id, input_publication_id, start_ts, end_ts, latency_ns, "
                       "communication_ns + idle_ns + computation_ns AS parts FROM data_flows ORDER BY end_ts")
    paths = db.records("SELECT path FROM paths")
    # One flow per /topic4 message, ending when it was published, starting at a
    # sensor run that published /topic1.
    assert [f["end_ts"] for f in flows] == oracle["out_times"]
    assert all(f["start_ts"] in oracle["in_starts"] for f in flows)
    assert all(f["latency_ns"] == f["end_ts"] - f["start_ts"] == f["parts"] > 0 for f in flows)
    assert len(paths) == 1 and paths[0]["path"].startswith("/sensor_dummy_node timer -> [/topic1] -> ")
    assert paths[0]["path"].endswith("-> /timer_driven_node timer -> [/topic4]")
    # The same flows as the plain-Python Algorithm 1 (tests/support/flow_reference.py).
    from tests.support import flow_reference

    model = flow_reference.load(db)
    outs, ref = flow_reference.run(db, FROM, TO, flow_reference.implicit_pairs(db, "auto"), model=model)
    assert len(outs) == len(flows) and len(ref) == len(flows)
    ours = {(f["output_publication_id"], f["input_publication_id"], f["latency_ns"]) for f in flows}
    theirs = {(steps[-1][1], steps[1][1], flow_reference.breakdown(model, steps)[0]) for steps in ref}
    assert ours == theirs


def test_readme_example_on_a_trace(e2e, oracle):
    check(run_example(e2e, e2e), oracle)


def test_readme_example_on_a_loaded_database(e2e, oracle, loaded):
    before = hashlib.sha256(open(loaded, "rb").read()).hexdigest()
    ns = run_example(e2e, loaded)
    check(ns, oracle)
    ns["db"].close()
    # Opened read-only, nothing was written into the database.
    assert hashlib.sha256(open(loaded, "rb").read()).hexdigest() == before


def test_database_arrow_and_records_give_babeltrace2s_publications(e2e, oracle):
    """`Database.arrow` (a pyarrow Table) and `Database.records` on one query give the same
    rows, and the /topic4 publications' times are babeltrace2's (the rclcpp_publish of each
    /topic4 message, every one a flow's output)."""
    pytest.importorskip("pyarrow", reason="Database.arrow gives pyarrow Tables (the arrow extra)")
    import roscope

    db = roscope.open(e2e)
    q = "SELECT publish_ts FROM publications_info WHERE topic = ? ORDER BY publish_ts"
    table = db.arrow(q, ["/topic4"])
    assert type(table).__name__ == "Table" and table.column_names == ["publish_ts"]
    times = table.column("publish_ts").to_pylist()
    assert times == [r["publish_ts"] for r in db.records(q, ["/topic4"])]
    assert times == oracle["out_times"]
