"""The execution model against independent computations.

Oracles: babeltrace2's own text decoding (`babeltrace2 --clock-cycles`, so
timestamps are the raw clock values), callback runs paired here per thread
with nesting; and for pingpong, the tracetools_analysis pickle that came with
the trace, read with an unpickler that allows only plain types.
"""
from __future__ import annotations

import io
import json
import pickle
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support.bt2_text import bt2_events
from tests.support.cli import roscope as run_roscope
from tests.support.shared import TRACES as SHARED_TRACES

TRACES = Path(SHARED_TRACES)
ROS2 = ["pingpong-rolling-2021", "caret-talker-listener-galactic", "caret-end-to-end-cyclonedds",
        "caret-intra-process-galactic", pytest.param("autoware-carla-galactic", marks=pytest.mark.slow)]  # 684k events

roscope = pytest.importorskip("roscope._core", reason="the roscope core is not built")


def roscope_json(*args) -> dict:
    out = run_roscope(*args, "--json", check=True)
    return json.loads(out.stdout)


def pair_runs(events, start: str, end: str, key: str, is_run=lambda f: True):
    """Pairs start/end per (pid, tid) with a stack, nesting allowed: returns
    {(pid, callback): [durations]}."""
    stacks: dict = defaultdict(list)
    runs: dict = defaultdict(list)
    for ts, name, f in events:
        if not is_run(f):
            continue
        t = (f["vpid"], f["vtid"])
        if name == start:
            stacks[t].append((f[key], ts))
        elif name == end:
            st = stacks[t]
            for i in range(len(st) - 1, -1, -1):
                if st[i][0] == f[key]:
                    runs[(f["vpid"], f[key])].append(ts - st[i][1])
                    del st[i:]
                    break
    return runs


def roscope_runs(stats: dict) -> dict:
    return {(c["pid"], c["handle"]): c for c in stats["callbacks"]}


def check_runs(expected: dict, got: dict):
    assert set(expected) == set(got), f"callbacks differ: only oracle {set(expected) - set(got)}, only roscope {set(got) - set(expected)}"
    for k, durs in expected.items():
        c = got[k]
        assert c["count"] == len(durs), k
        assert c["min_ns"] == min(durs), k
        assert c["max_ns"] == max(durs), k
        assert c["mean_ns"] == pytest.approx(sum(durs) / len(durs), rel=1e-12), k
        s = sorted(durs)
        n = len(s)
        # DuckDB's quantile_cont interpolates linearly, as numpy's default does.
        pos = 0.5 * (n - 1)
        lo = int(pos)
        p50 = s[lo] + (s[min(lo + 1, n - 1)] - s[lo]) * (pos - lo)
        assert c["p50_ns"] == pytest.approx(p50, rel=1e-12), k


@pytest.mark.parametrize("name", ROS2)
def test_ros2_callback_runs_equal_babeltrace2_pairing(name):
    path = TRACES / "ros2" / name
    ev = bt2_events(path, {"ros2:callback_start", "ros2:callback_end"})
    expected = pair_runs(ev, "ros2:callback_start", "ros2:callback_end", "callback")
    assert expected, "the oracle found no callback runs"
    got = roscope_runs(roscope_json("stats", str(path)))
    check_runs(expected, got)


def test_ros1_bosch_callback_runs_equal_babeltrace2_pairing():
    path = TRACES / "ros1" / "nodes-pipeline-melodic"
    names = {"roscpp:callback_start", "roscpp:callback_end", "roscpp:subscriber_callback_start",
             "roscpp:subscriber_callback_end", "roscpp:subscriber_callback_added"}
    events = list(bt2_events(path, names))
    # Subscription queues: their callOneCB spans are not callback runs.
    queues = {(f["vpid"], f["queue_ref"]) for _, n, f in events if n == "roscpp:subscriber_callback_added"}
    timer_like = pair_runs(events, "roscpp:callback_start", "roscpp:callback_end", "callback_ref",
                           is_run=lambda f: (f["vpid"], f.get("callback_ref")) not in queues)
    subs = pair_runs(events, "roscpp:subscriber_callback_start", "roscpp:subscriber_callback_end", "callback_ref")
    expected = {**timer_like, **subs}
    # This pipeline's publisher loops on ros::Rate (no timer): every callOneCB
    # span is a subscription queue's, and none may count as a run of its own.
    assert subs and not timer_like
    assert any(n == "roscpp:callback_start" for _, n, _f in events)
    got = roscope_runs(roscope_json("stats", str(path)))
    check_runs(expected, got)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # pragma: no cover - a plain-types stream never gets here
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only plain types are allowed")


def read_converted(path: Path) -> list[dict]:
    data = path.read_bytes()
    f = io.BytesIO(data)
    # One pickler wrote the whole stream, so its memo spans the records.
    up = _PlainUnpickler(f)
    out = []
    while f.tell() < len(data):
        out.append(up.load())
    return out


def test_pingpong_runs_equal_tracetools_analysis_pickle():
    trace = TRACES / "ros2" / "pingpong-rolling-2021"
    events = read_converted(trace / "converted")
    assert len(events) == 864
    ev = [(e["_timestamp"], e["_name"], e) for e in events if e["_name"] in ("ros2:callback_start", "ros2:callback_end")]
    ev.sort(key=lambda x: x[0])
    expected = pair_runs(ev, "ros2:callback_start", "ros2:callback_end", "callback")
    got = roscope_runs(roscope_json("stats", str(trace)))
    check_runs(expected, got)


def test_load_writes_database_and_parquet_and_refuses_to_overwrite(tmp_path):
    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    db = tmp_path / "run.duckdb"
    pq = tmp_path / "pq"
    r = run_roscope("load", str(trace), "-o", str(db), "--parquet", str(pq))
    assert r.returncode == 0, r.stderr
    assert db.is_file() and (pq / "callback_runs.parquet").is_file()
    before = db.stat().st_mtime_ns
    r = run_roscope("load", str(trace), "-o", str(db))
    assert r.returncode != 0 and "already exists" in r.stderr and "Traceback" not in r.stderr
    assert db.stat().st_mtime_ns == before
    import pyarrow.parquet as papq
    import roscope as rs

    d = rs.open(str(db))
    n = d.con.execute("SELECT count(*) FROM callback_runs").fetchone()[0]
    assert papq.read_table(pq / "callback_runs.parquet").num_rows == n
    # The same callback-run count as pairing babeltrace2's events.
    ev = bt2_events(trace, {"ros2:callback_start", "ros2:callback_end"})
    expected = pair_runs(ev, "ros2:callback_start", "ros2:callback_end", "callback")
    complete = d.con.execute("SELECT count(*) FROM callback_runs WHERE end_ts IS NOT NULL").fetchone()[0]
    assert complete == sum(len(v) for v in expected.values())


def test_caret_links_match_source_stamps():
    """Every CARET dispatch whose source stamp was bound on the publishing side
    is linked, to a publication on its own topic, with a positive latency."""
    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    events = list(bt2_events(trace, {"ros2_caret:dds_bind_addr_to_stamp", "ros2:dispatch_subscription_callback"}))
    bound = {f["source_stamp"] for _, n, f in events if n == "ros2_caret:dds_bind_addr_to_stamp"}
    dispatches = [f for _, n, f in events if n == "ros2:dispatch_subscription_callback"]
    expected = sum(1 for f in dispatches if f["source_stamp"] in bound)
    assert expected > 300
    import roscope as rs

    d = rs.open(str(trace))
    got = d.sql("""SELECT l.method, pi.topic AS ptopic, s.name AS stopic, r.start_ts - pi.publish_ts AS lat
                   FROM links l JOIN publications_info pi USING (publication_id)
                   JOIN takes t USING (take_id) JOIN subscriptions s USING (subscription_id)
                   JOIN callback_runs r ON r.run_id = l.run_id""")
    assert len(got) == expected
    assert (got.method == "caret_source_stamp").all()
    assert (got.ptopic == got.stopic).all()
    assert (got.lat > 0).all()


def test_caret_intra_process_links():
    trace = TRACES / "ros2" / "caret-intra-process-galactic"
    events = list(bt2_events(trace, {"ros2:rclcpp_intra_publish", "ros2:dispatch_intra_process_subscription_callback"}))
    published = set()
    expected = 0
    for _, n, f in events:
        if n == "ros2:rclcpp_intra_publish":
            published.add((f["vpid"], f["message"]))
        elif (f["vpid"], f["message"]) in published:
            expected += 1
    import roscope as rs

    d = rs.open(str(trace))
    m = dict(d.con.execute("SELECT method, count(*) FROM links GROUP BY 1").fetchall())
    assert m == {"intra_message": expected}
    assert expected == 23


def test_pingpong_heuristic_links_are_flagged_and_consistent():
    trace = TRACES / "ros2" / "pingpong-rolling-2021"
    import roscope as rs

    d = rs.open(str(trace))
    off = d.con.execute("SELECT clock_offset_ns FROM traces").fetchone()[0]
    got = d.sql("""SELECT l.heuristic, pi.topic AS ptopic, s.name AS stopic, t.source_ts, pi.rmw_ts,
                          r.start_ts - pi.publish_ts AS lat
                   FROM links l JOIN publications_info pi USING (publication_id)
                   JOIN takes t USING (take_id) JOIN subscriptions s USING (subscription_id)
                   LEFT JOIN callback_runs r ON r.run_id = l.run_id""")
    assert len(got) > 30
    assert (got.heuristic == 1).all() and (got.ptopic == got.stopic).all()
    # The DDS stamp is taken just after rmw_publish, on the same clock.
    skew = got.source_ts - (got.rmw_ts + off)
    assert (skew.abs() < 1_000_000).all()
    assert (got.lat.dropna() > 0).all()
    exact = rs.open(str(trace), heuristics=False)
    assert exact.con.execute("SELECT count(*) FROM links").fetchone()[0] == 0


def test_truncated_trace_loads_with_warning(tmp_path):
    src = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    stream = max((p for p in dst.rglob("ros2_*") if p.is_file()), key=lambda p: p.stat().st_size)
    size = stream.stat().st_size
    with open(stream, "r+b") as f:
        f.truncate(size // 2 + 3)
    r = run_roscope("stats", str(dst), "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    assert stream.name in r.stderr and "truncated" in r.stderr
    d = json.loads(r.stdout)
    assert 0 < d["summary"]["callback_runs"] < 508
