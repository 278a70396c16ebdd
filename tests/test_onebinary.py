"""Flows on a one-binary ROS 1 system with races, against its own ground truth (issue 29).

examples/ros1_onebinary is recorded with `roscope record` (5 s): one binary whose
processes each run the node their argument names, every callback a lambda in
main(), state in function-local statics, a message counter every publishing
callback bumps through one helper lambda, and a node (the mapper) on a 2-thread
AsyncSpinner whose /ob/scan subscription writes what its 20 Hz timer reads, while
the timer runs now and then. The nodes log every message's true inputs, and the
mapper logs each of its runs (first to last statement, by its own clock):
tests/support/flow_truth.py matches the logs to the trace with babeltrace2 and says which
true pairs a race touches (a scan run overlapped, on the other thread, the timer
run that published), independently of roscope.

Shown here: `roscope deps` on the sources finds the true edges (tests/test_deps.py
checks them by hand); `flow --deps` has precision 1.0 on its certain flows and
finds every true pair no race touches; every flow it flags uncertain is a race in
the log; `--uncertain drop` leaves exactly those out; and `flow --deps` warns, with
names, when the dependency file misses callbacks of the trace or leaves one undecided.
"""
from __future__ import annotations

import copy
import json

import pytest

pytestmark = [pytest.mark.lttng, pytest.mark.ros1, pytest.mark.slow]

pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

from tests.support import flow_truth as ft  # noqa: E402

SYSTEM = "ros1_onebinary"
DURATION = 5.0


@pytest.fixture(scope="module")
def onebinary(tmp_path_factory):
    import roscope

    base = tmp_path_factory.mktemp(SYSTEM)
    trace, gt = ft.record(SYSTEM, base, DURATION)
    spec = ft.SYSTEMS[SYSTEM]
    truth = ft.select(ft.ground_truth(trace, gt), spec["from"], spec["to"])
    deps = ft.dependency_run(SYSTEM, base / "deps")
    db = roscope.open(str(trace))
    out = {"trace": trace, "gt": gt, "truth": truth, "deps": deps, "db": db, "spec": spec}
    rows = []
    for name, kw in [("default", {}), ("auto+deps", {"implicit": "auto", "deps": str(deps["path"])}),
                     ("deps, drop", {"implicit": "auto", "deps": str(deps["path"]), "uncertain": "drop"})]:
        r = ft.measure(db, truth, **kw)
        r["system"], r["implicit"] = SYSTEM, name
        out[name] = r
        rows.append(r)
    print(f"\n{ft.table(rows)}")
    return out


def test_the_log_shows_the_system_and_its_races(onebinary):
    """The example does what its README says, by its log alone."""
    truth = onebinary["truth"]
    msgs = truth.messages
    topic = lambda i: msgs[i]["topic"]  # noqa: E731
    by_topic: dict = {}
    for m in msgs.values():
        by_topic.setdefault(m["topic"], []).append(m)
    for out, src in [("/ob/control", "/ob/track"), ("/ob/plan", "/ob/map"), ("/ob/cmd_echo", "/ob/cmd")]:
        assert len(by_topic[out]) > 10 and all([topic(i) for i in m["inputs"]] == [src] for m in by_topic[out]), out
    tracks = [m for m in by_topic["/ob/track"] if len(m["inputs"]) == 2]
    assert len(tracks) > 20 and all(sorted(topic(i) for i in m["inputs"]) == ["/ob/imu", "/ob/objects"] for m in tracks)
    maps = [m for m in by_topic["/ob/map"] if m["inputs"]]
    assert len(maps) > 50 and all([topic(i) for i in m["inputs"]] == ["/ob/scan"] for m in maps)
    runs = [json.loads(line) for line in (onebinary["gt"] / "mapper.jsonl").read_text().splitlines()
            if '"ev":"run"' in line]
    assert len({r["tid"] for r in runs}) == 2  # the AsyncSpinner's two threads both ran callbacks
    raced = [g for g in truth.race_gap.values() if g is not None and g < 0]
    print(f"{len(raced)} of {len(truth.race_gap)} map outputs raced with a scan run (log)")
    assert len(raced) >= 5 and len(truth.racy) >= 5


def test_deps_finds_the_true_edges_and_lists_the_bookkeeping(onebinary):
    """`roscope deps` as a user runs it (a compile_commands.json from the Makefile)."""
    doc = onebinary["deps"]["doc"]
    cbs = {cb["id"]: cb for n in doc["nodes"] for cb in n["callbacks"]}
    edges = {(cbs[e["from"]]["topic"] or f"timer {cbs[e['from']]['period_ns']}",
              cbs[e["to"]]["topic"] or f"timer {cbs[e['to']]['period_ns']}") for e in doc["edges"]}
    assert edges == {("/ob/objects", "timer 100000000"), ("/ob/imu", "timer 100000000"), ("/ob/scan", "timer 50000000")}
    assert sorted(b["state"] for b in doc["bookkeeping"]) == ["g_log.lines_", "g_msg_seq"]
    assert "2 bookkeeping state(s), left out of the edges" in onebinary["deps"]["stdout"]


def test_every_callback_matches_by_symbol(onebinary):
    """Every callback of the trace is a lambda of main, matched by GCC's name for it; the
    file's three edges land on the trace callbacks the log says feed each other."""
    from roscope import deps

    db = onebinary["db"]
    edges, report = deps.trace_edges(db, str(onebinary["deps"]["path"]))
    assert report["unmatched"] == [] and report["ambiguous"] == [] and report["trace_unmatched"] == []
    assert report["undecided"] == []
    # (processes other than the system's: what else ran on the machine meanwhile)
    assert [p for p in report["trace_processes_unmatched"] if p["procname"] == "onebinary"] == []
    assert {m["by"] for m in report["matched"]} == {"symbol"} and len(report["matched"]) == 12
    label = {r["callback_id"]: (r["node"], r["topic"] or r["period_ns"])
             for r in db.records("SELECT callback_id, node, topic, period_ns FROM callbacks_info")}
    assert {(label[a], label[b]) for a, b in edges} == {
        (("/tracker", "/ob/objects"), ("/tracker", 100_000_000)), (("/tracker", "/ob/imu"), ("/tracker", 100_000_000)),
        (("/mapper", "/ob/scan"), ("/mapper", 50_000_000))}


def test_flow_with_deps_is_exact_on_certain_flows(onebinary):
    """Precision 1.0 on the flows not flagged uncertain; every true pair no race touches
    is found (recall 1.0 on them), with babeltrace2's latency; no fallback edge is used."""
    r, truth = onebinary["auto+deps"], onebinary["truth"]
    assert r["unmatched"] == 0 and r["true_pairs"] > 200
    assert r["precision_certain"] == 1.0, r
    assert r["missed_not_racy"] == 0 and r["missed"] <= r["racy_pairs"] == len(truth.racy), r
    assert r["latency_error_max_ns"] == 0, r
    edges = {e for (e,) in onebinary["db"].con.execute("SELECT DISTINCT edge FROM data_flow_steps").fetchall()}
    assert "fallback" not in edges, edges
    # Without the file, the trace alone (the fallback rule) is less precise: the mapper's
    # scan subscription, which publishes nothing, is taken as an input of its /ob/cmd one.
    default = onebinary["default"]
    assert default["precision"] < r["precision"] and default["false_pairs_by_output_topic"].get("/ob/cmd_echo", 0) > 10


def _chain(truth, out: int) -> set:
    """`out` and every message that fed it, by the log."""
    seen, stack = set(), [out]
    while stack:
        x = stack.pop()
        if x not in seen and x in truth.messages:
            seen.add(x)
            stack.extend(truth.messages[x]["inputs"])
    return seen


def test_uncertain_flows_are_races_in_the_log(onebinary):
    """Each flow flagged uncertain goes through a map output whose timer run a scan run
    overlapped on the other thread, by the mapper's own log; `--uncertain drop` leaves
    out exactly them, and what remains is exact."""
    keep, drop, truth = onebinary["auto+deps"], onebinary["deps, drop"], onebinary["truth"]
    assert keep["flagged_pairs"] >= 5, keep
    gaps = []
    for _i, out in keep["flagged"]:
        near = [truth.race_gap[x] for x in _chain(truth, out) if truth.race_gap.get(x) is not None]
        assert near and min(near) < ft.RACE_SLACK_NS, (out, near)
        gaps.append(min(near))
    print(f"{len(gaps)} uncertain flows; the log's gap from the writing run to the reading run: "
          f"{sum(g < 0 for g in gaps)} overlap, the rest within {ft.RACE_SLACK_NS / 1e3:.0f} µs: {sorted(gaps)[-3:]}")
    assert drop["flagged_pairs"] == 0 and drop["flows"] == keep["flows"] - keep["flagged_pairs"]
    assert drop["precision"] == 1.0 and drop["missed_not_racy"] == 0, drop


def test_the_summary_counts_them_and_the_cli_keeps_or_drops(onebinary, run_roscope):
    spec, deps = onebinary["spec"], str(onebinary["deps"]["path"])
    args = ["flow", str(onebinary["trace"]), "--from", spec["from"], "--to", spec["to"], "--deps", deps]
    keep = run_roscope(*args, "--json")
    drop = run_roscope(*args, "--json", "--uncertain", "drop")
    text = run_roscope(*args)
    assert keep.returncode == drop.returncode == text.returncode == 0, (keep.stderr, drop.stderr, text.stderr)
    k, d = json.loads(keep.stdout)["summary"], json.loads(drop.stdout)["summary"]
    assert (k["uncertain"], d["uncertain"]) == ("keep", "drop")
    assert k["flows_uncertain"] == onebinary["auto+deps"]["flagged_pairs"] > 0 and k["uncertain_dropped"] == 0
    assert d["flows_uncertain"] == 0 and d["uncertain_dropped"] == k["flows_uncertain"]
    assert d["flows"] == k["flows"] - k["flows_uncertain"]
    assert f"uncertain flows (races between threads): {k['flows_uncertain']:,} kept, 0 dropped" in text.stdout
    assert any("flows are uncertain" in w for w in json.loads(keep.stdout)["warnings"])


def test_flow_deps_warns_with_names_when_the_file_falls_short(onebinary):
    """`flow --deps` is never silently worse than without the file: trace callbacks that
    no callback of the file matches, and callbacks it leaves undecided, are named."""
    from roscope import deps, flow

    db, spec = onebinary["db"], onebinary["spec"]
    full = deps.load(str(onebinary["deps"]["path"]))

    def warnings(doc):
        return [w for w in flow.data_flows(db, spec["from"], spec["to"], deps=doc)["warnings"] if w.startswith("--deps")]

    def ours(ws):  # (warnings about processes other than the system's: what else ran on the machine meanwhile)
        return [w for w in ws if "process(es) match nothing" not in w or "onebinary" in w]

    assert ours(warnings(full)) == []
    imu = next(cb["id"] for n in full["nodes"] for cb in n["callbacks"] if cb["topic"] == "/ob/imu")
    scan = next(cb["id"] for n in full["nodes"] for cb in n["callbacks"] if cb["topic"] == "/ob/scan")
    # the file without the tracker's /ob/imu subscription (and its edge)
    less = copy.deepcopy(full)
    for n in less["nodes"]:
        n["callbacks"] = [cb for cb in n["callbacks"] if cb["id"] != imu]
    less["edges"] = [e for e in less["edges"] if imu not in (e["from"], e["to"])]
    (w,) = ours(warnings(less))
    assert "1 trace callback(s) in the processes the dependency file describes match none of its callbacks: " \
           "/tracker subscription(/ob/imu)" in w
    # the scan subscription left an access undecided
    und = copy.deepcopy(full)
    for n in und["nodes"]:
        for cb in n["callbacks"]:
            if cb["id"] == scan:
                cb["undecided"] = [{"state": "main()::latest_scan", "access": "write", "at": "x.cpp:1:1",
                                    "why": "a call through a function object or pointer"}]
    (w,) = ours(warnings(und))
    assert "1 callback(s) of the dependency file leave accesses undecided" in w and scan in w
    # a file that describes no callback of the mapper's process
    in_mapper = {r["callback_id"] for r in db.records("SELECT callback_id FROM callbacks_info WHERE node = '/mapper'")}
    mapper = {m["callback"] for m in deps.trace_edges(db, full)[1]["matched"] if set(m["trace_callbacks"]) <= in_mapper}
    assert len(mapper) == 3  # the scan and cmd subscriptions, the timer
    nomap = copy.deepcopy(full)
    for n in nomap["nodes"]:
        n["callbacks"] = [cb for cb in n["callbacks"] if cb["id"] not in mapper]
    nomap["edges"] = [e for e in nomap["edges"] if not {e["from"], e["to"]} & mapper]
    ws = warnings(nomap)
    assert any("process(es) match nothing in the dependency file: " in w and "onebinary (pid" in w for w in ws), ws


def test_sliced_search_flags_the_same_flows(onebinary):
    """The races are facts of the whole trace (`roscope.overlaps`), so a search over small
    slices of the model (20 publications, 1 ms of reach at first) flags the same flows."""
    r = ft.measure(onebinary["db"], onebinary["truth"], implicit="auto", deps=str(onebinary["deps"]["path"]),
                   slice_publications=20, reach_ns=1_000_000)
    whole = dict(onebinary["auto+deps"])
    r["system"], r["implicit"] = whole["system"], whole["implicit"]
    assert r == whole
