"""The systems ros2_tracing's authors wrote (issue 38): `test_tracetools`' C++ test nodes,
built from the unmodified archive (tests/support/ros2_tracing_nodes.py) against real rclcpp 28 (Jazzy),
recorded for real with `roscope record --ros2 jazzy` (ros2_tracing's own tracepoints in rclcpp;
roscope's tracer library only carries them to the system's LTTng).

ping/pong (two processes, a timer and subscriptions), intra (two nodes in one process with
intra-process communication: a ConstSharedPtr subscription served from the ring buffer) and
timer, run together. The oracle is babeltrace2: every event decoded by roscope
equals babeltrace2's; callback runs, publications, takes and links of these processes equal what
their events say, computed here from bt2's reading (never from roscope's output)."""
from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import bt2
import pytest

from tests.support import ros2_tracing_nodes as nodes
from tests.support.dump_check import check_dump

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

REPO = Path(__file__).resolve().parents[1]
PROCS = ("test_ping", "test_pong", "test_intra", "test_timer")


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    built = nodes.build()
    if isinstance(built, str):
        pytest.skip(built)
    out = tmp_path_factory.mktemp("ros2_tracing_nodes") / "trace"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), ROS_DOMAIN_ID=str(220 + os.getpid() % 12),
               **nodes.run_env())
    env.pop("ROSCOPE_RECORD_ID", None)
    # ping and pong exchange messages every 500 ms until SIGINT; intra sends one message and stops
    script = (f'cd "{built}"; ./test_pong do_more & ./test_ping do_more & ./test_intra & ./test_timer & '
              'sleep 4; kill -INT %1 %2 %4 2>/dev/null; wait')
    p = subprocess.run([sys.executable, "-m", "roscope", "record", "--ros2", "jazzy", "-o", str(out), "--",
                        "bash", "-c", script], env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    import roscope
    return {"trace": out, "db": roscope.open(str(out)), "bt2": read_bt2(out)}


def read_bt2(trace: Path) -> dict:
    """babeltrace2's reading of the events of the test nodes' processes."""
    ev = collections.defaultdict(list)
    pids = {}
    for m in bt2.TraceCollectionMessageIterator(str(trace)):
        if type(m) is not bt2._EventMessageConst:
            continue
        ctx = m.event.common_context_field
        name = str(ctx["procname"])
        if name not in PROCS:
            continue
        pid = int(ctx["vpid"])
        pids[pid] = name
        f = {k: (int(v) if isinstance(v, (bt2._UnsignedIntegerFieldConst, bt2._SignedIntegerFieldConst)) else str(v))
             for k, v in m.event.payload_field.items()}
        ev[m.event.name].append({"pid": pid, "tid": int(ctx["vtid"]), "ts": m.default_clock_snapshot.value, **f})
    return {"ev": ev, "pids": pids}


def test_every_event_is_decoded_as_babeltrace2_decodes_it(rec, roscope_cmd):
    assert check_dump(roscope_cmd, str(rec["trace"])) > 0


def test_callback_runs_per_callback_equal_the_callback_starts(rec):
    b = rec["bt2"]
    assert set(b["pids"].values()) == set(PROCS)
    starts = collections.Counter((e["pid"], e["callback"]) for e in b["ev"]["ros2:callback_start"])
    pids = list(b["pids"])
    got = {(r["pid"], r["handle"]): r["n"] for r in rec["db"].records(
        f"""SELECT p.pid, c.handle, count(r.run_id) AS n FROM callbacks c JOIN processes p USING (proc_id)
            JOIN callback_runs r USING (callback_id) WHERE p.pid IN ({", ".join("?" * len(pids))})
            GROUP BY p.pid, c.handle""", pids)}
    assert got == dict(starts)
    # every callback that ran is known: registered with the symbol rclcpp gave it
    symbols = {(e["pid"], e["callback"]): e["symbol"] for e in b["ev"]["ros2:rclcpp_callback_register"]}
    known = {(r["pid"], r["handle"]): r["symbol"] for r in rec["db"].records(
        f"""SELECT p.pid, c.handle, c.symbol FROM callbacks c JOIN processes p USING (proc_id)
            WHERE p.pid IN ({", ".join("?" * len(pids))}) AND c.known = 1""", pids)}
    assert {k: symbols[k] for k in starts} == {k: known[k] for k in starts}


def test_publications_one_per_message_intra_process_ones_included(rec):
    """One publication per message: rcl_publish per publisher, plus each rclcpp_intra_publish
    not followed on its thread by an rcl_publish of the same publisher (intra-process only).
    test_intra's nodes publish /parameter_events both ways: once each, not twice."""
    b = rec["bt2"]
    want = collections.Counter((e["pid"], e["publisher_handle"]) for e in b["ev"]["ros2:rcl_publish"])
    by_thread = collections.defaultdict(list)
    for name in ("ros2:rclcpp_intra_publish", "ros2:rcl_publish"):
        for e in b["ev"][name]:
            by_thread[e["tid"]].append((e["ts"], name, e["publisher_handle"], e["pid"]))
    for seq in by_thread.values():
        seq.sort()
        for i, (_ts, name, h, pid) in enumerate(seq):
            nxt = seq[i + 1] if i + 1 < len(seq) else None
            if name == "ros2:rclcpp_intra_publish" and not (nxt and nxt[1] == "ros2:rcl_publish" and nxt[2] == h):
                want[(pid, h)] += 1
    pids = list(b["pids"])
    got = {(r["pid"], r["handle"]): r["n"] for r in rec["db"].records(
        f"""SELECT p.pid, pu.handle, count(*) AS n FROM publications pb JOIN publishers pu USING (publisher_id)
            JOIN processes p ON p.proc_id = pu.proc_id WHERE p.pid IN ({", ".join("?" * len(pids))})
              AND pu.handle <> 0   -- rcl's publishers (not Fast DDS's own discovery writer: rmw_publish only)
            GROUP BY p.pid, pu.handle""", pids)}
    assert got == dict(want)
    both = [e for e in b["ev"]["ros2:rclcpp_intra_publish"] if b["pids"][e["pid"]] == "test_intra"]
    assert both, "test_intra published nothing intra-process"


def test_links_are_the_dds_stamps_and_the_ring_buffer_slots(rec):
    """DDS: a take is linked to the publication whose rmw_publish stamp is its source stamp.
    Intra-process: a dequeue is linked to the enqueue of the same buffer slot."""
    b, db = rec["bt2"], rec["db"]
    pub_at = {(e["timestamp"]): e["ts"] for e in b["ev"]["ros2:rmw_publish"]}
    want = {(pub_at[e["source_timestamp"]], e["ts"]) for e in b["ev"]["ros2:rmw_take"]
            if e["taken"] and e["source_timestamp"] in pub_at}
    assert want
    got = {(r["rmw_ts"], r["take_rmw_ts"]) for r in db.records(
        """SELECT pb.rmw_ts, t.rmw_ts AS take_rmw_ts FROM links l JOIN publications pb USING (publication_id)
           JOIN takes t USING (take_id) WHERE l.method = 'rmw_timestamp'""") if r["rmw_ts"] is not None}
    assert want <= got
    enq = {(e["pid"], e["buffer"], e["index"]): e["ts"] for e in b["ev"]["ros2:rclcpp_ring_buffer_enqueue"]}
    deq = [e for e in b["ev"]["ros2:rclcpp_ring_buffer_dequeue"] if (e["pid"], e["buffer"], e["index"]) in enq]
    assert deq, "no intra-process delivery"
    n = db.records("SELECT count(*) AS n FROM links WHERE method = 'intra_ring_buffer'")[0]["n"]
    assert n == len(deq)


def test_the_intra_process_subscription_has_its_node_and_topic(rec):
    """test_intra's subscription (/the_topic, node test_intra_sub) ran from the ring buffer: its
    run's callback belongs to that subscription, named."""
    b = rec["bt2"]
    intra = {(e["pid"], e["callback"]) for e in b["ev"]["ros2:callback_start"] if e["is_intra_process"]}
    assert intra
    rows = rec["db"].records(
        """SELECT p.pid, c.handle, s.name AS topic, n.name AS node, s.known FROM callbacks c
           JOIN processes p USING (proc_id) JOIN subscriptions s ON s.subscription_id = c.owner_id
           JOIN nodes n ON n.node_id = s.node_id WHERE c.kind = 'subscription'""")
    named = {(r["pid"], r["handle"]): (r["node"], r["topic"], r["known"]) for r in rows}
    got = {named.get(k) for k in intra if b["pids"][k[0]] == "test_intra"}
    assert ("test_intra_sub", "/the_topic", 1) in got    # (and its nodes' /parameter_events, intra-process too)
    assert all(g is not None and g[0] and g[1] and g[2] == 1 for g in got), got
