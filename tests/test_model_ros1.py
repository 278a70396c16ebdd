"""roscope's execution model and flows on the real ROS 1 example, against its ground truth.

The example (examples/ros1_pipeline) is recorded with `roscope record` (roscpp with
roscope's preloaded tracer); every node logs the message ids it publishes and
receives and the input ids of each output (the ids travel in the message data).
The model must match every publication to its receptions exactly and find the
direct, partial synchronous and periodic asynchronous causal links the nodes log.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "ros1_pipeline"

pytest.importorskip("roscope._core", reason="the roscope core is not built")


@pytest.fixture(scope="module")
def rec(ros1_pipeline_run):
    """The example recorded by its run.sh with the nodes' ground truth, once per test
    session (tests/conftest.py's ros1_pipeline_run); loaded here into a writable database."""
    out, gt = ros1_pipeline_run["trace"], ros1_pipeline_run["gt"]
    lines = []
    for f in sorted(gt.glob("*.jsonl")):
        lines += [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
    import roscope

    db = roscope.open(str(out), read_only=False)
    return {"db": db, "gt": lines}


def gt_pubs(gt) -> dict:
    out = defaultdict(list)
    for e in sorted((e for e in gt if e["ev"] == "pub"), key=lambda e: e["mono_ns"]):
        out[(e["node"], e["topic"])].append(e)
    return out


def gt_recvs(gt) -> dict:
    out = defaultdict(list)
    for e in sorted((e for e in gt if e["ev"] == "recv"), key=lambda e: e["mono_ns"]):
        out[(e["node"], e["topic"])].append(e["id"])
    return out


def pub_ids(db, gt) -> dict[int, int]:
    """roscope publication_id -> ground-truth message id, per (node, topic), in order."""
    gp = gt_pubs(gt)
    rows = db.records("""
        SELECT pb.publication_id, n.name AS node, pu.name AS topic FROM publications pb
        JOIN publishers pu USING (publisher_id) JOIN nodes n ON n.node_id = pu.node_id
        ORDER BY pb.ts, pb.publication_id""")
    seen = defaultdict(int)
    out = {}
    for r in rows:
        k = (r["node"], r["topic"])
        if k in gp:
            i = seen[k]
            seen[k] += 1
            if i < len(gp[k]):
                out[r["publication_id"]] = gp[k][i]["id"]
    for k, lst in gp.items():
        assert seen[k] == len(lst), f"{k}: {seen[k]} publications in the trace, {len(lst)} in the ground truth"
    return out


def run_ids(db, gt) -> dict[int, int]:
    """roscope run_id -> the ground-truth id of the message it received, per (node, topic), in order."""
    gr = gt_recvs(gt)
    rows = db.records("""
        SELECT r.run_id, c.node, c.topic FROM callback_runs r JOIN callbacks_info c USING (callback_id)
        WHERE c.kind = 'subscription' ORDER BY r.start_ts, r.run_id""")
    seen = defaultdict(int)
    out = {}
    for r in rows:
        k = (r["node"], r["topic"])
        if k in gr:
            i = seen[k]
            seen[k] += 1
            if i < len(gr[k]):
                out[r["run_id"]] = gr[k][i]
    for k, lst in gr.items():
        assert seen[k] == len(lst), f"{k}: {seen[k]} callback runs in the trace, {len(lst)} receptions logged"
    return out


def test_every_reception_is_linked_to_its_publication(rec):
    db, gt = rec["db"], rec["gt"]
    pids, rids = pub_ids(db, gt), run_ids(db, gt)
    links = db.records("SELECT publication_id, run_id, method FROM links WHERE run_id IS NOT NULL")
    assert links and all(l["method"] == "ros1_roscope" for l in links)
    linked_runs = set()
    for l in links:
        if l["run_id"] in rids:
            assert pids[l["publication_id"]] == rids[l["run_id"]], "a link joins different messages"
            linked_runs.add(l["run_id"])
    # Every logged reception of a roscpp node is matched (rospy's have their own events).
    assert linked_runs == set(rids), f"{len(set(rids) - linked_runs)} receptions without a link"


def test_causal_links_equal_logged_inputs(rec):
    from roscope import flow as fl

    db, gt = rec["db"], rec["gt"]
    fl.causal_links(db)
    pids = pub_ids(db, gt)
    truth = {(e["id"], i) for e in gt if e["ev"] == "pub" and e["topic"] in ("/lidar_filtered", "/fused", "/plan")
             for i in e["inputs"]}
    assert len(truth) > 100
    got = defaultdict(set)
    for r in db.records("""SELECT cl.in_publication_id, cl.out_publication_id, cl.kind, pi.topic FROM causal_links cl
                           JOIN publications_info pi ON pi.publication_id = cl.out_publication_id"""):
        if r["topic"] in ("/lidar_filtered", "/fused", "/plan"):
            got[r["kind"]].add((pids[r["out_publication_id"]], pids[r["in_publication_id"]]))
    allgot = set().union(*got.values())
    assert allgot == truth, f"missing {sorted(truth - allgot)[:5]}, extra {sorted(allgot - truth)[:5]}"
    # The kinds the nodes implement: filter direct, fusion partial sync, planner periodic async.
    assert got["direct"] and got["partial_sync"] and got["periodic_async"]


def test_tf_like_topic_does_not_loop(rec):
    from roscope import flow as fl

    db = rec["db"]
    p = db.records("""SELECT publication_id FROM publications_info WHERE topic = '/tf_like' ORDER BY publish_ts LIMIT 1 OFFSET 10""")[0]
    g = fl.message_graph(db, p["publication_id"])
    # /tf_like is published and subscribed by /perception/localizer: its own
    # reception is not a flow segment; /planner's is.
    receivers = {g["nodes"][e["to"]]["node"] for e in g["edges"] if e["kind"] == "transport"}
    assert "/planner" in receivers and "/perception/localizer" not in receivers


def _closure(start: int, step) -> set[int]:
    seen, todo = {start}, [start]
    while todo:
        for y in step(todo.pop()):
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return seen


@pytest.mark.parametrize("where", ["model", "database"])
def test_message_graphs_are_the_logged_ancestry_and_descent(rec, where):
    """One message's flow graph, backward from a /plan message and forward from a
    /lidar message: its messages are those the nodes' logged inputs lead to. Over
    the flow's model in memory, and walked over the database (what a trace of more
    than `SLICE_PUBLICATIONS` publications gets; forced here with slices of a tenth of
    the publications: each graph remakes the causal links over the slices, and one
    publication per slice made 1,400 of them, 70 s of this test under load)."""
    from roscope import flow as fl

    db, gt = rec["db"], rec["gt"]
    pids = pub_ids(db, gt)
    gid = {v: k for k, v in pids.items()}
    inputs = {e["id"]: e["inputs"] for e in gt if e["ev"] == "pub"}
    outputs = defaultdict(list)
    for e in gt:
        if e["ev"] == "pub":
            for i in e["inputs"]:
                outputs[i].append(e["id"])
    topic = {r["publication_id"]: r["topic"] for r in db.records("SELECT publication_id, topic FROM publications_info")}
    n_pubs = db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0]
    per = max(20, n_pubs // 10) if where == "database" else None
    assert per is None or per < n_pubs

    def graph(pub: int, forward: bool, backward: bool) -> dict:
        return fl.message_graph(db, pub, forward=forward, backward=backward, slice_publications=per)

    # /plan messages made with inputs (a planner tick with no new input has none)
    plans = sorted(p for p, t in topic.items() if t == "/plan" and p in pids and inputs[pids[p]])
    lidars = sorted(p for p, t in topic.items() if t == "/lidar" and p in pids)
    assert len(plans) > 20 and len(lidars) > 20
    for p in plans[5:-5:len(plans) // 6]:
        back = graph(p, False, True)
        truth = _closure(pids[p], lambda m: inputs.get(m, []))
        assert {pids.get(x) for x in back["publications"]} == truth, p
        assert len(truth) >= 3 and {"published_in", "transport"} <= {e["kind"] for e in back["edges"]}
    # /lidar messages the log says fed an output, and up to three it says fed nothing (one that
    # came before the fusion node subscribed, or that its full queue dropped): the graph of such
    # a message is itself alone
    fed = [p for p in lidars if outputs.get(pids[p])]
    unfed = [p for p in lidars if not outputs.get(pids[p])]
    assert len(fed) > 20
    for p in fed[5:-5:len(fed) // 6] + unfed[:3]:
        fwd = graph(p, True, False)
        truth = _closure(pids[p], lambda m: outputs.get(m, []))
        assert {pids.get(x) for x in fwd["publications"]} == truth, p
        assert {gid[m] for m in truth} == set(fwd["publications"])
        assert len(truth) >= 3 if p in fed else truth == {pids[p]}, (p, truth)
