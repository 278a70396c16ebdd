"""`roscope watch` (docs/watch.md) on a real ROS 1 system under a real LTTng session read by
the default source (tests/test_watch_live.py: the other, and the live client itself), one run with a known slow-down: each window it printed equals `roscope stats`
and `roscope flow` on the finished trace restricted to that window; its publication
counts agree with the example's ground-truth log; each slowed flow raised a deadline
alert within 2 s of its end (the example's own log of the slow-down), and no other
flow did; the trace it leaves loads without spurious losses; Ctrl-C ends it with 130."""
from __future__ import annotations

import json
import math
import os
import shlex
import signal
import subprocess
import sys
import time

import bt2
import pytest
import roscope
from roscope import _core, live, stats, watch

from tests.support.oracle import find_traces

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = os.path.join(REPO, "examples", "ros1_pipeline", "system.sh")
#: The filter callback (/lidar -> /lidar_filtered, normally well under 1 ms) sleeps 30 ms in
#: each run from 3 to 4 s after its process started.
SLOW = "30@3-4"
DEADLINE = "^/lidar$->^/lidar_filtered$=25"
#: --on-miss: writes each miss's facts (from its environment) into a file of its own.
ON_MISS = ("import os, sys; e = os.environ; open(os.path.join(sys.argv[1], e['ROSCOPE_MISS_END_NS']), 'w')"
           ".write(e['ROSCOPE_MISS_LATENCY_NS'] + ' ' + e['ROSCOPE_MISS_PATH'])")


#: How long the watched example runs (s): long enough for the live model to forget its oldest
#: ROS 1 messages (test_live_model_forgets_old_ros1_messages: 10 s + 2 holds, and more).
WATCH_S = 18


@pytest.fixture(scope="module")
def watched(lttng_ready, roscope_cmd, tmp_path_factory) -> dict:
    """`roscope watch --json --window 2` of examples/ros1_pipeline (`WATCH_S`) in command mode,
    a path watched and a deadline on another, with the filter slowed down (`SLOW`)."""
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    d = tmp_path_factory.mktemp("watch")
    (d / "misses").mkdir()
    on_miss = shlex.join([sys.executable, "-c", ON_MISS, str(d / "misses")])
    p = subprocess.run([*roscope_cmd, "watch", "--json", "--window", "2", "-o", str(d / "trace"),
                        "--from", "^/lidar$", "--to", "^/fused$", "--deadline", DEADLINE, "--on-miss", on_miss, "--",
                        SYSTEM, "-d", str(WATCH_S), "-g", str(d / "gt")], capture_output=True, text=True, timeout=180,
                       env={**os.environ, "ROS1_PIPELINE_SLOW": SLOW})
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    return {"trace": d / "trace", "gt": d / "gt", "windows": [x for x in lines if "window" in x],
            "alerts": [x for x in lines if x.get("alert")], "rc": p.returncode, "stderr": p.stderr,
            "misses": d / "misses"}


def _same(a, b) -> bool:
    # std is a floating-point sum whose order DuckDB does not fix: equal to 1e-12; the rest exactly
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12)
    return a == b


def test_each_window_equals_stats_on_the_finished_trace(watched, run_roscope):
    assert watched["rc"] == 3, watched["stderr"]   # a deadline was missed
    full = [w for w in watched["windows"] if w["callbacks"]]
    assert len(full) >= 3, watched["stderr"]
    db = roscope.open(str(watched["trace"]))
    for w in full:
        win = (w["window"]["start_ns"], w["window"]["end_ns"])
        off_cb = {c["callback_id"]: c for c in stats.callbacks(db, win)}
        live_cb = {c["callback_id"]: c for c in w["callbacks"]}
        assert set(live_cb) == set(off_cb), w["window"]
        for k, c in off_cb.items():
            bad = {f: (live_cb[k].get(f), v) for f, v in c.items() if not _same(live_cb[k].get(f), v)}
            assert not bad, (w["window"], c["symbol"], bad)
        off_tp = {t["topic"]: t for t in stats.topics(db, win) if t["publications"] or t["takes"]}
        live_tp = {t["topic"]: t for t in w["topics"]}
        assert set(live_tp) == set(off_tp)
        for k, t in off_tp.items():
            # a topic's publishers and subscriptions are those known when the window was shown (a
            # subscription made later is not counted, nor are its unmatched publications then)
            known = live_tp[k]["subscriptions"] == t["subscriptions"]
            bad = {f: (live_tp[k].get(f), v) for f, v in t.items() if not _same(live_tp[k].get(f), v)
                   and f not in ("publishers", "subscriptions") and (known or f != "unmatched_publications")}
            assert not bad, (w["window"], k, bad)
    # the CLI's --window reads back the printed window exactly
    w = full[len(full) // 2]
    p = run_roscope("stats", str(watched["trace"]), "--json", "--window", w["window"]["stats_window"])
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    assert (cli["window"]["start_ns"], cli["window"]["end_ns"]) == (w["window"]["start_ns"], w["window"]["end_ns"])
    assert {c["callback_id"]: c["count"] for c in cli["callbacks"]} == {c["callback_id"]: c["count"] for c in w["callbacks"]}


def test_each_window_paths_equal_flow_on_the_finished_trace(watched, run_roscope):
    full = [w for w in watched["windows"] if w["paths"] and w["paths"][0]["routes"]]
    assert len(full) >= 3, watched["stderr"]
    for w in full[1::2][:3]:
        for p in w["paths"]:
            src, dst = p["path"].split("->")
            r = run_roscope("flow", str(watched["trace"]), "--from", src, "--to", dst, "--json", "--window",
                            w["window"]["stats_window"])
            assert r.returncode == 0, r.stderr
            off = {x["path"]: (x["flows"], x["latency"]["p50_ns"], x["latency"]["p99_ns"], x["latency"]["max_ns"])
                   for x in json.loads(r.stdout)["paths"]}
            live = {x["route"]: (x["flows"], x["p50_ns"], x["p99_ns"], x["max_ns"]) for x in p["routes"]}
            assert live == off, (w["window"], p["path"])


def test_slowed_flows_alert_within_2_s_and_no_others(watched):
    """The example logs each slowed run (its end: right before it publishes /lidar_filtered,
    CLOCK_MONOTONIC as the trace). Each gets an alert for the flow ending there, told within
    2 s; a flow after the slow-down may still miss while the queue it built drains (within
    0.5 s), no other."""
    slow = [json.loads(x) for x in (watched["gt"] / "perception.jsonl").read_text().splitlines() if '"slow"' in x]
    assert len(slow) >= 10
    alerts = watched["alerts"]
    assert alerts, watched["stderr"]
    for s in slow:
        mine = [a for a in alerts if abs(a["end_ns"] - s["mono_ns"]) < 2_000_000]
        assert len(mine) == 1, (s, [a["end_ns"] for a in alerts])
        assert mine[0]["alerted_ns"] - s["mono_ns"] < 2_000_000_000, mine[0]
        assert mine[0]["latency_ns"] > 25_000_000
    lo, hi = min(s["begin_ns"] for s in slow), max(s["mono_ns"] for s in slow) + 500_000_000
    assert all(lo <= a["end_ns"] <= hi for a in alerts), [(a["end_s"], a["latency_ns"]) for a in alerts]
    # --on-miss ran once per miss, with the facts in its environment
    deadline = time.monotonic() + 10
    while len(list(watched["misses"].iterdir())) < len(alerts) and time.monotonic() < deadline:
        time.sleep(0.1)
    got = {int(f.name): f.read_text() for f in watched["misses"].iterdir()}
    assert got == {a["end_ns"]: f"{a['latency_ns']} {a['path']}" for a in alerts}


def test_window_publication_counts_agree_with_ground_truth(watched):
    """The example logs each publication (topic, CLOCK_MONOTONIC, the trace's clock) itself;
    its log time and the tracepoint's differ by microseconds, so a window's count may differ by
    a publication at each edge, no more."""
    # topics only examples/ros1_pipeline publishes (a ROS 2 system of another test may run
    # meanwhile: its processes started before the session are in the trace, and in the window)
    ours = {"/lidar_filtered", "/tf_like", "/burst", "/camera"}
    pubs: dict[str, list[int]] = {}
    for f in watched["gt"].glob("*.jsonl"):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("ev") == "pub" and e["topic"] in ours:
                pubs.setdefault(e["topic"], []).append(e["mono_ns"])
    checked = 0
    for w in watched["windows"]:
        lo, hi = w["window"]["start_ns"], w["window"]["end_ns"]
        for t in w["topics"]:
            if t["topic"] in pubs:
                truth = sum(lo <= x < hi for x in pubs[t["topic"]])
                assert abs(t["publications"] - truth) <= 2, (t["topic"], w["window"], t["publications"], truth)
                checked += truth > 0
    assert checked >= 4


def test_watched_trace_loads_without_spurious_losses(watched):
    """The chunks watch read (the live source's mini chunks: a packet that straddled a poll's
    time comes in two) continue their streams' packet numbers: no 'packets lost' (the session
    lost nothing: it printed 0), and the trace watch leaves loads without losses."""
    assert watched["windows"][-1]["lost_events_total"] == 0
    assert watched["windows"][-1]["packets_lost_total"] == 0
    assert int(watched["stderr"].rsplit(" chunks, ", 1)[0].rsplit("(", 1)[1]) >= 5
    db = roscope.open(str(watched["trace"]))
    assert db.losses == []


def test_manifest_counts_are_watchs_own_and_right(watched):
    """The manifest's counts come from watch's own reading (no second pass over the trace
    at its end): the events babeltrace2 decodes from every chunk, none discarded."""
    n = 0
    for t in find_traces(str(watched["trace"])):
        for msg in bt2.TraceCollectionMessageIterator(t):
            n += type(msg) is bt2._EventMessageConst
    m = json.loads((watched["trace"] / "roscope-manifest.json").read_text())
    assert m["state"] == "complete"
    assert n > 1000 and m["events_recorded"] == n
    assert m["events_discarded"] == 0 and m["packets_lost"] == 0


def test_ctrl_c_exits_130_and_leaves_the_trace(lttng_ready, roscope_cmd, tmp_path):
    out = tmp_path / "trace"
    p = subprocess.Popen([*roscope_cmd, "watch", "--json", "-o", str(out)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    # the session is made (rotation's archives/, or the relay's directory of the live session's
    # host), then the state dump asked of the running processes (at least 1 s) is over
    while not (out.is_dir() and any(x.is_dir() for x in out.iterdir())) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert (out / "roscope-manifest.json").is_file()
    assert json.loads((out / "roscope-manifest.json").read_text())["state"] == "complete"


#: roscope_ros1 events whose state the ROS 1 message matching keeps (crates/model/src/ros1_roscope.rs).
_R1_HELD = ("roscope_ros1:publish", "roscope_ros1:link_rx_message", "roscope_ros1:link_tx_write")


def test_live_model_forgets_old_ros1_messages(watched):
    """A live model fed the chunks of the module's watch of the example holds, after the last one,
    the ROS 1 message state (publications, receptions, writes on connections) of the last 10 s
    + 2 holds only (`LINK_WINDOW_NS`: the linker's horizon), as babeltrace2 counts those events
    in the chunks; it held every message of the run before (a soak's RSS grew ~17 KiB/s)."""
    out = watched["trace"]
    model = _core.LiveModel(True, None, live.HOLD_NS)
    # the chunks of a rotation, else the live source's relay output (one trace)
    fed = [c for c in watch.chunks(out) if next(c.rglob("metadata"), None) is not None] or [out]
    for c in fed:
        model.feed([str(c)])
    times: dict[str, list[int]] = {n: [] for n in _R1_HELD}
    last = 0
    for c in fed:
        for t in find_traces(str(c)):
            for msg in bt2.TraceCollectionMessageIterator(t):
                if type(msg) is bt2._EventMessageConst:
                    ts = msg.default_clock_snapshot.ns_from_origin
                    last = max(last, ts)
                    if msg.event.name in times:
                        times[msg.event.name].append(ts)
    horizon = last - 2 * live.HOLD_NS - 10_000_000_000
    recent = {n: sum(ts >= horizon for ts in v) for n, v in times.items()}
    # per publication: its entry, its message id and its message object; per reception and write one
    bound = 3 * recent["roscope_ros1:publish"] + recent["roscope_ros1:link_rx_message"] + recent["roscope_ros1:link_tx_write"]
    whole = 3 * len(times["roscope_ros1:publish"]) + len(times["roscope_ros1:link_rx_message"]) + len(times["roscope_ros1:link_tx_write"])
    assert recent["roscope_ros1:link_rx_message"] > 1000 and whole > 1.4 * bound  # long enough to tell
    assert 0 < model.held_messages <= bound, (model.held_messages, bound, whole)


def test_windows_store_forgets_what_no_later_window_counts(watched):
    """The windows' records (`_core.LiveStats`, in the core: no database) of a LiveWindows fed the
    module's watch, after its last window, are the callback runs that start from the oldest
    window still to come minus 2 holds (`LiveWindows.prune`), as many as babeltrace2 counts
    callback starts then, not the run's (memory bounded by the window); and no thread was made."""
    out = watched["trace"]
    fed = [c for c in watch.chunks(out) if next(c.rglob("metadata"), None) is not None] or [out]
    tasks = set(os.listdir("/proc/self/task"))
    lw = live.LiveWindows(2_000_000_000)
    for c in fed:
        lw.feed(str(c))
        lw.windows()
    lw.close()
    assert lw.windows(final=True)
    assert set(os.listdir("/proc/self/task")) <= tasks
    cutoff = lw.next_end - lw.window_ns - 2 * live.HOLD_NS
    # the model's times are the trace clock's values (LTTng's monotonic clock, 1 GHz), not from its origin
    starts = [msg.default_clock_snapshot.value for c in fed for t in find_traces(str(c))
              for msg in bt2.TraceCollectionMessageIterator(t)
              if type(msg) is bt2._EventMessageConst and msg.event.name == "roscope_ros1:callback_start"]
    held = dict(lw.store.rows)["callback_runs"]
    assert len(starts) > 5 * held > 0, (len(starts), held)   # the run's runs, against the window's
    assert held == sum(ts >= cutoff for ts in starts), (held, cutoff)
