"""`roscope export --perfetto`: the written file parsed back with the `perfetto`
package's own protobuf classes (perfetto_trace_pb2, an independent decoder).

Oracles: callback runs paired from babeltrace2's text output (per thread, with
nesting, as tests/test_model.py does); the tracer's discarded-event reports as
babeltrace2 counts them (tests/support/oracle.py); process ids, thread ids and names as
babeltrace2 shows them in the event contexts. Link counts and the nodes a thread
ran come from the model's tables, which tests/test_model.py checks against
babeltrace2.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.support.shared import TRACES as SHARED_TRACES

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                         reason="the perfetto package (pip install perfetto) parses the exported file back")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

from tests.support.bt2_text import bt2_events  # noqa: E402  (babeltrace2's text output, parsed)

TRACES = Path(SHARED_TRACES)
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3


def export(trace, out: Path, *extra: str) -> str:
    p = subprocess.run([sys.executable, "-m", "roscope", "export", str(trace), "--perfetto", str(out), *extra],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stderr


def parse(path: Path):
    t = pb.Trace()
    t.ParseFromString(path.read_bytes())
    names, tracks, events = {}, {}, []
    for p in t.packet:
        if p.HasField("interned_data"):
            names.update({n.iid: n.name for n in p.interned_data.event_names})
        if p.HasField("track_descriptor"):
            tracks[p.track_descriptor.uuid] = p.track_descriptor
        if p.HasField("track_event"):
            events.append((p.timestamp, p.track_event))
    return names, tracks, events


def slices(events, names):
    """(track uuid, name, begin ts, end ts or None) of every slice, paired per track with a stack."""
    stacks, out = defaultdict(list), []
    for ts, e in sorted(events, key=lambda x: x[0]):  # the trace processor sorts by time too (stable)
        if e.type == SLICE_BEGIN:
            stacks[e.track_uuid].append((names[e.name_iid], ts))
        elif e.type == SLICE_END:
            name, begin = stacks[e.track_uuid].pop()
            out.append((e.track_uuid, name, begin, ts))
    for uuid, st in stacks.items():
        out += [(uuid, name, begin, None) for name, begin in st]
    return out


def bt2_runs(trace: Path):
    """Callback runs paired from babeltrace2's events: Counter of (vtid, start, end)."""
    stacks, runs = defaultdict(list), Counter()
    for ts, name, f in bt2_events(trace, {"ros2:callback_start", "ros2:callback_end"}):
        st = stacks[(f["vpid"], f["vtid"])]
        if name == "ros2:callback_start":
            st.append((f["callback"], ts))
            continue
        for i in range(len(st) - 1, -1, -1):
            if st[i][0] == f["callback"]:
                runs[(f["vtid"], st[i][1], ts)] += 1
                del st[i:]
                break
    return runs


def model(trace: Path, sql: str) -> list[tuple]:
    import roscope

    db = roscope.open(str(trace))
    try:
        return [tuple(r) for r in db.con.execute(sql).fetchall()]
    finally:
        db.close()


def causal_links(trace: Path) -> int:
    import roscope
    from roscope import flow

    db = roscope.open(str(trace))
    try:
        return flow.causal_links(db).num_rows
    finally:
        db.close()


@pytest.mark.parametrize("name", ["caret-end-to-end-cyclonedds", "pingpong-rolling-2021"])
def test_callback_runs_tracks_and_flows(name, tmp_path):
    trace = TRACES / "ros2" / name
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    out = tmp_path / "t.pftrace"
    export(trace, out)
    names, tracks, events = parse(out)

    # Tracks: one process track per process, one thread track per thread, as babeltrace2 names them.
    procs = {d.process.pid: d.process.process_name for d in tracks.values() if d.HasField("process")}
    threads = {d.thread.tid: d for d in tracks.values() if d.HasField("thread")}
    seen = {}
    for _ts, _n, f in bt2_events(trace, {"ros2:callback_start", "ros2:rcl_init"}):
        seen.setdefault(f["vtid"], f["vpid"])
        if f["vtid"] == f["vpid"]:
            assert procs.get(f["vpid"]) == f["procname"], (f["vpid"], procs)
    assert set(procs) == set(seen.values())
    assert set(seen) <= set(threads)
    assert all(threads[t].thread.pid == p for t, p in seen.items())
    # A thread is named after the nodes whose callbacks ran on it (the model's nodes).
    for tid, nodes in model(trace, """SELECT t.tid, string_agg(DISTINCT c.node, ', ' ORDER BY c.node) FROM callback_runs r
                                      JOIN threads t USING (thread_id) JOIN callbacks_info c USING (callback_id)
                                      WHERE c.node IS NOT NULL GROUP BY t.tid"""):
        assert threads[tid].thread.thread_name.startswith(nodes), (tid, threads[tid].thread.thread_name)

    # One slice per callback run, on its thread's track, with babeltrace2's start and end.
    tid_of = {uuid: d.thread.tid for uuid, d in tracks.items() if d.HasField("thread")}
    got = Counter((tid_of[u], b, e) for u, _n, b, e in slices(events, names) if u in tid_of)
    assert got == bt2_runs(trace)

    # One flow per transport link (publication instant -> the run it fed) and per causal link.
    starts = Counter(f for _ts, e in events for f in e.flow_ids)
    ends = Counter(f for _ts, e in events for f in e.terminating_flow_ids)
    assert set(starts) == set(ends) and max(starts.values()) == 1 and max(ends.values()) == 1
    n_links = model(trace, "SELECT count(*) FROM links WHERE run_id IS NOT NULL OR take_id IS NOT NULL")[0][0]
    assert len(starts) == n_links + causal_links(trace)
    # Transport flows join a "publish TOPIC" instant to a callback run on the topic (or a take).
    by_flow = {}
    for ts, e in events:
        for f in e.flow_ids:
            by_flow.setdefault(f, {})["from"] = (ts, e)
        for f in e.terminating_flow_ids:
            by_flow.setdefault(f, {})["to"] = (ts, e)
    expected = Counter(model(trace, "SELECT publish_ts, coalesce(callback_start_ts, take_ts) FROM links_info"))
    transport = Counter((a[0], b[0]) for f, d in by_flow.items() if f <= n_links for a, b in [(d["from"], d["to"])])
    assert transport == expected
    assert all(names[d["from"][1].name_iid].startswith("publish ") for f, d in by_flow.items() if f <= n_links)


def test_executor_states_publications_and_takes(tmp_path):
    trace = TRACES / "ros2" / "pingpong-rolling-2021"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    out = tmp_path / "t.pftrace"
    export(trace, out)
    names, tracks, events = parse(out)
    ex_tracks = {u for u, d in tracks.items() if d.name == "executor states"}
    assert ex_tracks and all(tracks[u].parent_uuid in tracks for u in ex_tracks)
    got = Counter(n for u, n, _b, _e in slices(events, names) if u in ex_tracks)
    # rcl_wait / callback events make the states: counted by the model (tests/test_ros2sim checks them against ground truth).
    assert got == Counter(dict(model(trace, "SELECT state, count(*) FROM executor_states WHERE end_ts IS NOT NULL GROUP BY 1")))
    instants = Counter(names[e.name_iid].split(" ")[0] for _ts, e in events if e.type == INSTANT)
    # Every message passes rmw_publish once (the lowest layer; rclcpp/rcl publish only some); takes that took one.
    ev = list(bt2_events(trace, {"ros2:rmw_publish", "ros2:rmw_take"}))
    assert instants["publish"] == sum(1 for _ts, n, _f in ev if n == "ros2:rmw_publish")
    assert instants["take"] == sum(1 for _ts, n, f in ev if n == "ros2:rmw_take" and f["taken"])


def test_refuses_to_overwrite(tmp_path):
    trace = TRACES / "ros2" / "caret-talker-listener-galactic"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    out = tmp_path / "t.pftrace"
    out.write_text("keep")
    p = subprocess.run([sys.executable, "-m", "roscope", "export", str(trace), "--perfetto", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "already exists" in p.stderr and "Traceback" not in p.stderr
    assert out.read_text() == "keep"
    export(trace, out, "--force")
    assert parse(out)[2]


@pytest.mark.lttng
def test_lost_events_marked(ust_traces, tmp_path):
    from tests.support import oracle

    trace = ust_traces["discard"]
    out = tmp_path / "t.pftrace"
    export(trace, out)
    names, tracks, events = parse(out)
    lost_tracks = {u for u, d in tracks.items() if d.name.startswith("lost events: ")}
    lost = [n for u, n, _b, _e in slices(events, names) if u in lost_tracks]
    r = oracle.Reading(trace).run()
    assert r.total_discarded_events() > 0
    assert sum(int(n.split(" ")[0].replace(",", "")) for n in lost) == r.total_discarded_events()
    assert json.dumps(sorted(lost))  # names are plain text


def test_encoding_is_bounded_in_memory_and_independent_of_chunks(tmp_path, monkeypatch):
    """Issue 30: Trace Compass's ROS 2 test trace (99k events) took 6.5 GB because one
    timer run had 2,029 inferred causal arrows and every row of a 200,000-row chunk was as
    wide as the widest. Here 150,000 events, one with 3,000 outgoing flows: the encoder's
    peak (numpy's allocations, traced by tracemalloc) stays under 150 MB, where one chunk of
    that width is 4.5 GB; and the bytes are the same whatever the chunk size."""
    import io
    import tracemalloc

    from roscope.export import perfetto as pf

    n, fan = 150_000, 3_000
    ev = pf.Events()
    ev.add(np.arange(n, dtype=np.int64) * 1000, 3, 0, INSTANT, 7, 1)
    ev.flow_ev.append(np.full(fan, 10, np.int64))
    ev.flow_id.append(np.arange(1, fan + 1, dtype=np.int64))
    ev.term_ev.append(np.arange(20, 20 + fan, dtype=np.int64))
    ev.term_id.append(np.arange(1, fan + 1, dtype=np.int64))
    cols = ev.cols()
    tracemalloc.start()
    big = io.BytesIO()
    assert pf.encode(cols, big) == n
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 150 << 20, peak
    monkeypatch.setattr(pf, "CHUNK_BYTES", 1 << 16)
    small = io.BytesIO()
    pf.encode(cols, small)
    assert small.getvalue() == big.getvalue()
    # parsed back: the fan-out event carries all its flow ids, each terminating once
    t = pb.Trace()
    t.ParseFromString(big.getvalue())
    flows = [p.track_event.flow_ids for p in t.packet]
    assert list(flows[10]) == list(range(1, fan + 1))
    assert sorted(i for p in t.packet for i in p.track_event.terminating_flow_ids) == list(range(1, fan + 1))


def test_a_trace_exports_the_same_in_small_chunks(tmp_path, monkeypatch):
    """The shared CARET trace, in-process: the file is byte for byte the same with chunks of 4 KiB."""
    import roscope
    from roscope import flow as fl
    from roscope.export import perfetto as pf

    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    if not trace.is_dir():
        pytest.skip("no shared traces")
    with roscope.open(str(trace)) as db:
        t = fl.causal_links(db)
        causal = {k: t.column(k).to_numpy(zero_copy_only=False) for k in ("in_run_id", "out_publication_id")}
        pf.export(db, str(tmp_path / "a.pftrace"), causal=causal)
        monkeypatch.setattr(pf, "CHUNK_BYTES", 4096)
        pf.export(db, str(tmp_path / "b.pftrace"), causal=causal)
    a, b = (tmp_path / "a.pftrace").read_bytes(), (tmp_path / "b.pftrace").read_bytes()
    assert len(a) > 10_000 and a == b
