"""Real ROS 2 from PyPI (Jazzy and Kilted, `make setup`), traced and checked against ground truth.

`roscope record --kernel -- python3 examples/ros2_pipeline/launch.py` runs the example under each
distro (its environment first on PATH: roscope finds the pip-installed ROS 2, preloads its own
tracer library and the rclpy hook), once per distro per session (tests/conftest.py's
ros2_pipeline_run). Expected values come from the nodes' ground-truth logs and from babeltrace2's
decoding of the trace (tests/support/ros2_truth.py), never from roscope: callbacks and their runs,
publications, deliveries, service calls (an action's goal and result too), and the data flows
from the sensors to the controller, through a service and an action. `why` (kernel data) and
`report` run on the recording; a recording without roscope's tracer records no ROS 2 event and
says why; ros2sim's traces and the real ones agree where they overlap.
"""
from __future__ import annotations

import collections
import csv
import json
import re
import subprocess
from types import SimpleNamespace

import pytest

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

from tests.support import ros2_truth as T  # noqa: E402

DISTROS = ["jazzy", "kilted"]
US = 1000


@pytest.fixture(scope="module", params=DISTROS)
def rec(request, ros2_pipeline_run):
    r = ros2_pipeline_run(request.param)
    t = T.read_trace(r["trace"])
    gt = T.GroundTruth(T.read_ground_truth(r["gt"]))
    return SimpleNamespace(distro=request.param, t=t, gt=gt, pubs=T.publication_ids(t, gt), gtdir=r["gt"],
                           db=r["db"], **{k: v for k, v in r.items() if k not in ("gt", "db")})


def _cb(rec, node: str, name: str):
    """(pid, callback handle) of a logged callback in the trace."""
    sym, kind, what = T.CALLBACKS[(node, name)]
    found = rec.t.callback(node, sym, kind, what)
    assert len(found) == 1, f"{node} {name}: {len(found)} callbacks registered as {sym} serving {what}"
    return found[0]


def _roscope_runs(rec, key) -> list[tuple]:
    """roscope's runs of the callback (pid, handle): [(run_id, start, end)] by start."""
    return [tuple(r.values()) for r in rec.db.records(
        """SELECT r.run_id, r.start_ts, r.end_ts FROM callback_runs r JOIN callbacks c USING (callback_id)
           JOIN processes p USING (proc_id) WHERE p.pid = ? AND c.handle = ? ORDER BY r.start_ts""", [key[0], key[1]])]


def _pseudo_publications(rec, pid: int, name: str) -> list[int]:
    """roscope's publications of `name` (a pseudo-topic, or a topic) by process `pid`, in time order."""
    return [r["publication_id"] for r in rec.db.records(
        """SELECT pb.publication_id FROM publications pb JOIN publishers pu USING (publisher_id)
           JOIN processes p ON p.proc_id = pu.proc_id WHERE p.pid = ? AND pu.name = ? ORDER BY pb.ts, pb.publication_id""",
        [pid, name])]


def _inputs(rec, run_ids: list[int]) -> list[int | None]:
    """The publication linked into each run (None: no link)."""
    by_run = {r["run_id"]: r["publication_id"] for r in rec.db.records("SELECT run_id, publication_id FROM links")}
    return [by_run.get(r) for r in run_ids]


# --------------------------------------------------------------------------
# recording
# --------------------------------------------------------------------------

def test_recorded_with_roscopes_tracer_and_nothing_lost(rec):
    man = json.loads((rec.trace / "roscope-manifest.json").read_text())
    assert man["events_discarded"] == 0 and man["packets_lost"] == 0 and rec.t.discarded == 0
    assert man["ros2"]["distro"] == rec.distro and man["ros2"]["preload"], man["ros2"]
    assert man["ros2"]["tracer_unreachable"] == [], man["ros2"]
    assert "NO ROS 2 EVENTS" not in rec.stderr and "LOST" not in rec.stderr
    # Every node process (and the launcher) announced this recording.
    assert set(rec.gt.pids().values()) <= rec.t.pids
    ros2 = {k: v for k, v in rec.t.events.items() if k.startswith("ros2:")}
    assert sum(ros2.values()) > 3000 and ros2["ros2:rcl_init"] == len(rec.gt.pids())
    # The service events: Kilted's rmw emits its own; on Jazzy the rclpy hook does.
    provider = "ros2" if rec.distro == "kilted" else "roscope_ros2"
    for ev in ("rmw_send_request", "rmw_take_request", "rmw_send_response", "rmw_take_response"):
        assert rec.t.events[f"{provider}:{ev}"] > 100, (provider, ev)
    print(f"\n{rec.distro}: events by name (babeltrace2): "
          + ", ".join(f"{k} {v}" for k, v in sorted(rec.t.events.items())))


def test_callbacks_registered_with_their_symbols_and_handles(rec):
    """Each logged callback is registered once, with the Python symbol of its source, tied to
    the rcl handle of its timer, subscription, service or client; roscope's callbacks agree."""
    rows = rec.db.records("SELECT node, kind, topic, period_ns, symbol, handle, pid, known FROM callbacks_info")
    for (node, name), (sym, kind, what) in T.CALLBACKS.items():
        pid, handle = _cb(rec, node, name)
        mine = [r for r in rows if r["pid"] == pid and r["handle"] == handle]
        assert len(mine) == 1, (node, name)
        r = mine[0]
        assert (r["node"], r["kind"], r["symbol"], r["known"]) == (node, kind, sym, 1), (node, name, r)
        if kind == "timer":
            assert f"{r['period_ns'] / 1e6:g} ms" == what
        else:
            assert r["topic"] == what, (node, name, r)


def test_callback_runs_match_the_ground_truth(rec):
    """Per callback: exactly as many runs as the node logged; each of roscope's runs is the
    trace's own: its roscope_ros2:callback_frame (the hook's clock reads right before the
    frame's first instruction and after its return), within its callback_start/end
    (babeltrace2); and it contains the callback's logged run (its first to its last clock read).

    What is left between roscope's run and the log's is the log's own blind spots: CPython's
    entry into the frame up to the callback's first clock read, its last one to the frame's
    return, at the caches of a callback that runs at 7-50 Hz (bench/ros2_overhead/excess.py
    splits each run; docs/ros2-pypi.md): p50 ~1.5-2 us, p99 ~4-5 us here. Between the
    tracepoints (what another tool reading callback_start/end sees) it is ~1 us more (p50).
    Bounds, for a shared 2-core machine: 98 % of all runs within 5 us and their median within
    3 us, each callback's median within 5 us, every run within 20 ms (a pause inside the gap)."""
    excess, raw, before, after = [], [], [], []
    for (node, name), logged in rec.gt.runs().items():
        key = _cb(rec, node, name)
        traced, frames = rec.t.runs[key], rec.t.frames[key]
        mine = _roscope_runs(rec, key)
        assert len(logged) == len(traced) == len(mine), (node, name, len(logged), len(traced), len(mine))
        assert all(f is not None and s <= f[0] <= f[1] <= e for (s, e), f in zip(traced, frames)), (node, name)
        assert [(s, e) for _, s, e in mine] == frames, (node, name)
        ex = []
        for (s, e), (fs, fe), g in zip(traced, frames, logged):
            assert fs <= g["start_ns"] <= g["end_ns"] <= fe, (node, name, fs, fe, g)
            ex.append((fe - fs) - (g["end_ns"] - g["start_ns"]))
            raw.append((e - s) - (g["end_ns"] - g["start_ns"]))
            before.append(g["start_ns"] - fs)
            after.append(fe - g["end_ns"])
        ex.sort()
        print(f"\n{rec.distro} {node} {name}: {len(ex)} runs, roscope - logged p50 {ex[len(ex) // 2] / US:.2f} us, "
              f"max {ex[-1] / US:.2f} us", end="")
        assert ex[len(ex) // 2] <= 5 * US and ex[-1] <= 20_000 * US, (node, name, ex[len(ex) // 2], ex[-1])
        excess += ex
    excess.sort()
    raw.sort()
    n = len(excess)
    within = sum(1 for x in excess if x <= 5 * US) / n
    print(f"\n{rec.distro}: {n} runs, roscope - logged duration: p50 {excess[n // 2] / US:.2f} us, p90 "
          f"{excess[9 * n // 10] / US:.2f} us, p99 {excess[99 * n // 100] / US:.2f} us, max {excess[-1] / US:.2f} us; "
          f"{within:.1%} within 5 us (the frame's start to the first clock read p50 {sorted(before)[n // 2] / US:.2f} us, "
          f"the last one to the frame's return p50 {sorted(after)[n // 2] / US:.2f} us); between callback_start and "
          f"callback_end: p50 {raw[n // 2] / US:.2f} us, p99 {raw[99 * n // 100] / US:.2f} us, "
          f"{sum(1 for x in raw if x <= 5 * US) / n:.1%} within 5 us")
    assert n > 1000
    assert excess[n // 2] <= 3 * US and within >= 0.98, (excess[n // 2], within)
    # Every callback_frame of the recording (babeltrace2) gave a run its times, none was left over.
    stats = json.loads(rec.db.records("SELECT value FROM meta WHERE key = 'stats'")[0]["value"])
    assert stats["callback_frames"] == rec.t.events["roscope_ros2:callback_frame"] >= n, stats
    assert stats["unmatched_callback_frames"] == 0, stats


def test_the_rmws_own_endpoints_are_told_apart_from_unnamed_ones(rec):
    """Fast DDS's rmw makes a publisher and a subscription of its own in each process (its
    discovery topic): rmw init events and no rcl ones. roscope counts them as the rmw's
    (`meta.stats.rmw_own_endpoints`: babeltrace2's rmw publishers and subscriptions with an rmw
    init event, no rcl init event naming their rmw handle, that published or took) and does not
    warn that objects are unnamed for want of a state dump: every other object is named."""
    own = {(k, pid, h) for k, pid, h in rec.t.rmw_inits & rec.t.rmw_used if (pid, h) not in rec.t.rmw}
    stats = json.loads(rec.db.records("SELECT value FROM meta WHERE key = 'stats'")[0]["value"])
    warnings = json.loads(rec.db.records("SELECT value FROM meta WHERE key = 'warnings'")[0]["value"])
    assert len(own) >= len(rec.t.pids) - 1 > 0, own  # one each, but launch.py's own process (no rclpy)
    assert stats["rmw_own_endpoints"] == len(own), (stats, own)
    assert stats["objects_unnamed"] == 0 and not [w for w in warnings if "known only by their handles" in w], warnings
    # The object tables say the same (`known`, which the report counts).
    for table in ("nodes", "publishers", "subscriptions", "timers", "services", "clients"):
        assert rec.db.records(f"SELECT count(*) AS n FROM {table} WHERE known = 0")[0]["n"] == 0, table


def test_deliveries_and_transport_links_are_exact(rec):
    """Every message a subscription callback logged it received is the publication roscope
    links into that run (recall 1.0), and every link into those runs is one (precision 1.0)."""
    checked = collections.Counter()
    gt_feedback = [r["id"] for r in rec.gt.of("feedback")]
    for (node, name), (_sym, kind, what) in T.CALLBACKS.items():
        if kind != "subscription":
            continue
        pid, handle = _cb(rec, node, name)
        if what == "/follow/_action/feedback":
            got = [r["id"] for r in rec.gt.of("feedback_recv")]
            pub_ids = dict(zip(_pseudo_publications(rec, rec.gt.pids()["controller"], what), gt_feedback))
        else:
            got = [r["id"] for r in rec.gt.of("recv", node=node, topic=what)]
            pub_ids = _topic_ids(rec, what)
        runs = _roscope_runs(rec, (pid, handle))
        linked = [pub_ids.get(p) for p in _inputs(rec, [r for r, _, _ in runs])]
        assert linked == got, (node, what)
        checked[what] += len(got)
    assert all(checked[t] > 20 for t in ("/lidar", "/imu", "/fused", "/cmd", "/follow/_action/feedback")), checked
    # No other link on these topics (precision), among the example's processes (LTTng records
    # any other ROS 2 process of the machine too).
    n = rec.db.records(f"""SELECT count(*) AS n FROM links l JOIN publications pb USING (publication_id)
                          JOIN publishers pu USING (publisher_id) JOIN processes p ON p.proc_id = pu.proc_id
                          WHERE pu.name IN ('/lidar', '/imu', '/fused', '/cmd', '/follow/_action/feedback')
                          AND p.pid IN ({_pids_sql(rec)})""")[0]["n"]
    assert n == sum(checked.values())
    methods = {r["method"] for r in rec.db.records(f"""
        SELECT DISTINCT l.method FROM links l JOIN publications pb USING (publication_id)
        JOIN publishers pu USING (publisher_id) JOIN processes p ON p.proc_id = pu.proc_id
        WHERE p.pid IN ({_pids_sql(rec)})""")}
    assert methods == {"rmw_timestamp", "service_gid_sequence" if rec.distro == "kilted" else "service_sequence"}


def _pids_sql(rec) -> str:
    """The example's process ids, as a SQL list (integers from the ground truth)."""
    return ", ".join(str(int(p)) for p in rec.gt.pids().values())


def _topic_ids(rec, topic: str) -> dict:
    """roscope publication_id -> ground-truth id, for a topic the nodes log publications of."""
    out = {}
    for r in rec.db.records("""
            SELECT pb.publication_id, p.pid, pu.handle,
                   row_number() OVER (PARTITION BY pb.publisher_id ORDER BY pb.ts, pb.publication_id) AS k
            FROM publications pb JOIN publishers pu USING (publisher_id) JOIN processes p ON p.proc_id = pu.proc_id
            WHERE pu.name = ?""", [topic]):
        out[r["publication_id"]] = rec.pubs.get((r["pid"], r["handle"], r["k"]))
    return out


def test_service_and_action_requests_and_responses_are_linked(rec):
    """The requests and responses roscope links into the service, client, goal, execute and
    result callbacks are the ones their ground truth names."""
    pids = rec.gt.pids()
    requests = dict(zip(_pseudo_publications(rec, pids["planner"], "/plan_path:request"),
                        [r["id"] for r in rec.gt.of("request")]))
    responses = dict(zip(_pseudo_publications(rec, pids["mapper"], "/plan_path:response"),
                         [r["response_id"] for r in rec.gt.of("serve")]))
    goals = dict(zip(_pseudo_publications(rec, pids["planner"], "/follow/_action/send_goal:request"),
                     [r["id"] for r in rec.gt.of("goal")]))
    results = dict(zip(_pseudo_publications(rec, pids["controller"], "/follow/_action/get_result:response"),
                       [r["id"] for r in rec.gt.of("result")]))
    cases = [
        ("/mapper", "mapper.plan_path", requests, [r["id"] for r in rec.gt.of("serve")]),
        ("/planner", "planner.on_plan", responses, [r["id"] for r in rec.gt.of("response")]),
        ("/controller", "controller.on_goal", goals, [r["id"] for r in rec.gt.of("goal_recv")]),
        ("/controller", "controller.execute", goals, [r["id"] for r in rec.gt.of("execute")]),
        ("/planner", "planner.on_result", results, [r["id"] for r in rec.gt.of("result_recv")]),
    ]
    for node, name, ids, truth in cases:
        runs = _roscope_runs(rec, _cb(rec, node, name))
        assert [ids.get(p) for p in _inputs(rec, [r for r, _, _ in runs])] == truth, (node, name)
        assert len(truth) > 10, (node, name)


def test_each_service_request_is_paired_with_its_response(rec):
    """`service_calls` pairs each request with its response, as the mapper logged them; the
    trace's own events (babeltrace2) give as many complete calls."""
    pids = rec.gt.pids()
    req_ids = dict(zip(_pseudo_publications(rec, pids["planner"], "/plan_path:request"), [r["id"] for r in rec.gt.of("request")]))
    resp_ids = dict(zip(_pseudo_publications(rec, pids["mapper"], "/plan_path:response"),
                        [r["response_id"] for r in rec.gt.of("serve")]))
    calls = rec.db.records("""SELECT sc.* FROM service_calls sc JOIN services s USING (service_id) WHERE s.name = '/plan_path'""")
    pairs = {(req_ids.get(c["request_publication_id"]), resp_ids.get(c["response_publication_id"])) for c in calls}
    truth = {(r["id"], r["response_id"]) for r in rec.gt.of("serve")}
    assert pairs == truth and len(calls) == len(truth) == len(rec.gt.of("request")) > 50
    assert all(c["response_take_id"] is not None for c in calls)
    # The trace's own calls: request and response events joined by client and sequence number.
    ev = rec.t.service_events
    sent = {(e["pid"], e["rmw_client_handle"], e["sequence_number"]) for e in ev["rmw_send_request"]}
    answered = {(e["pid"], e["rmw_client_handle"], e["sequence_number"]) for e in ev["rmw_take_response"]}
    assert len(sent & answered) == len(rec.db.records("SELECT * FROM service_calls WHERE response_take_id IS NOT NULL"))
    if rec.distro == "kilted":  # the client's GID on the server's side (Kilted's rmw)
        gids = {e["client_gid"] for e in ev["rmw_take_request"]}
        assert gids <= set(rec.t.client_gid.values())
    by_service = {r["name"]: r["n"] for r in rec.db.records(
        "SELECT s.name, count(*) AS n FROM service_calls JOIN services s USING (service_id) GROUP BY 1")}
    assert by_service["/follow/_action/send_goal"] == len(rec.gt.of("goal"))
    assert by_service["/follow/_action/get_result"] == len(rec.gt.of("result_recv"))


def _truth_flows(rec) -> dict:
    """The true (input id, output id) pairs from /lidar and /imu to /cmd, by the nodes'
    logged inputs through the service and the action, with their latency from babeltrace2:
    the output's rcl_publish to the start of the run that published the input."""
    parents = {}
    for r in rec.gt.of("pub") + rec.gt.of("goal"):
        parents[r["id"]] = r["inputs"]
    for r in rec.gt.of("request"):
        parents[r["id"]] = r["inputs"]
    for r in rec.gt.of("serve"):
        parents[r["response_id"]] = [r["id"]]
    times = {}
    for (pid, h, k), gid in rec.pubs.items():
        times[gid] = rec.t.pubs[(pid, h)][k - 1]
    pairs = {}
    for r in rec.gt.of("pub", topic="/cmd"):
        seen, stack = set(), list(r["inputs"])
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            topic = x >> 32
            if topic in (1, 2):  # /lidar, /imu (examples/ros2_pipeline/nodes/common.py CODES)
                pairs[(x, r["id"])] = times[r["id"]][0] - times[x][1]
            stack.extend(parents.get(x, []))
    return pairs


def test_flows_from_the_sensors_to_the_controller(rec):
    """`flow.data_flows(db, /lidar|/imu -> /cmd)`: every true pair (recall 1.0), precision >= 0.98,
    each latency within 10 us of babeltrace2's."""
    from roscope import flow

    truth = _truth_flows(rec)
    assert len(truth) > 50
    ids = {**_topic_ids(rec, "/lidar"), **_topic_ids(rec, "/imu"), **_topic_ids(rec, "/cmd")}
    res = flow.data_flows(rec.db, "^/(lidar|imu)$", "^/cmd$")
    t = res.data_flows.select(["input_publication_id", "output_publication_id", "latency_ns"]).to_pydict()
    got = {}
    for i, o, lat in zip(t["input_publication_id"], t["output_publication_id"], t["latency_ns"]):
        if ids.get(o) is not None:  # the example's /cmd (not another process's of the machine)
            got[(ids.get(i), ids.get(o))] = lat
    found = set(got) & set(truth)
    assert len(found) == len(truth), f"missed {len(truth) - len(found)} of {len(truth)} true flows"
    assert len(found) / len(got) >= 0.98, f"precision {len(found) / len(got):.3f}"
    errors = [abs(got[p] - truth[p]) for p in found]
    print(f"\n{rec.distro}: {len(truth)} true flows, {len(got)} found, recall {len(found) / len(truth):.3f}, "
          f"precision {len(found) / len(got):.3f}, latency error max {max(errors)} ns")
    assert max(errors) <= 10 * US, f"latency error up to {max(errors) / US:.1f} us"
    paths = res.paths.column("path").to_pylist()
    assert any("[/plan_path:request]" in p and "[/follow/_action/send_goal:request]" in p for p in paths), paths


@pytest.mark.parametrize("source", ["database", "core"])
def test_stats_per_service(rec, source):
    """`roscope stats`' service table: calls, answered, server time and round trip, against
    the request and response events as babeltrace2 reads them (/plan_path); from the
    database and from the core (a short recording's `roscope stats`, roscope.stats_core)."""
    from roscope import stats, stats_core

    rows = stats.services(rec.db) if source == "database" else stats_core.compute([str(rec.trace)])[0]["services"]
    row = {r["service"]: r for r in rows}["/plan_path"]
    ev = rec.t.service_events
    assert row["calls"] == row["answered"] == len(rec.gt.of("request"))
    take = {(e["sequence_number"]): e["ts"] for e in ev["rmw_take_request"] if e["pid"] == rec.gt.pids()["mapper"]}
    send = {(e["sequence_number"]): e["ts"] for e in ev["rmw_send_response"] if e["pid"] == rec.gt.pids()["mapper"]}
    server = sorted(send[s] - take[s] for s in take)
    assert (row["server_min_ns"], row["server_max_ns"]) == (server[0], server[-1])
    req = {e["sequence_number"]: e["ts"] for e in ev["rmw_send_request"] if e["pid"] == rec.gt.pids()["planner"]
           and (e["pid"], e["rmw_client_handle"]) in rec.t.rmw and
           rec.t.objects[rec.t.rmw[(e["pid"], e["rmw_client_handle"])]][1] == "/plan_path"}
    resp = {e["sequence_number"]: e["ts"] for e in ev["rmw_take_response"] if e["pid"] == rec.gt.pids()["planner"]
            and rec.t.objects[rec.t.rmw[(e["pid"], e["rmw_client_handle"])]][1] == "/plan_path"}
    rtt = sorted(resp[s] - req[s] for s in req)
    # A round trip that comes out negative (the client took the response before the hook emitted
    # its send event) is no measurement: counted apart, never the minimum (issue 39).
    measured = [x for x in rtt if x >= 0]
    assert (row["rtt_min_ns"], row["rtt_max_ns"], row["rtt_count"]) == (measured[0], measured[-1], len(measured))
    assert row["rtt_negative"] == len(rtt) - len(measured)


#: The sensors' timers (examples/ros2_pipeline/nodes/sensors.py): topic -> Hz.
SENSOR_HZ = {"/lidar": 20, "/imu": 50}
#: How far a sensor topic's own rate may be from its timer's (a share): the nodes' log gives
#: each run's true rate, which the tests compare exactly; this only keeps it near the timer.
SENSOR_SLACK = 0.05


def log_rate(gt, topic: str) -> float:
    """A topic's own rate as the nodes' ground-truth log gives it: (n - 1) / (last - first)."""
    times = sorted(r["mono_ns"] for r in gt.of("pub", topic=topic))
    return (len(times) - 1) * 1e9 / (times[-1] - times[0])


@pytest.mark.parametrize("source", ["database", "core"])
def test_topic_rate_is_the_topics_own(rec, source):
    """A topic's rate is its own (issue 39): its publications over its own first to last
    publication, (n - 1) / (last - first), as the nodes' ground-truth log gives them (each
    publication's CLOCK_MONOTONIC time, logged just before it is published), not over the
    recording, which holds seconds before the sensors start and after they stop. The sensors'
    timers read their configured rate, 20 and 50 Hz, within 0.5 Hz; the mean period is 1 / rate."""
    from roscope import stats, stats_core

    rows = stats.topics(rec.db) if source == "database" else stats_core.compute([str(rec.trace)])[0]["topics"]
    got = {t["topic"]: t for t in rows}
    first, last = stats.trace_span(rec.db)
    compared = 0
    for topic in ("/lidar", "/imu", "/fused", "/plan", "/cmd"):
        times = sorted(r["mono_ns"] for r in rec.gt.of("pub", topic=topic))
        assert len(times) > 10, topic
        truth = (len(times) - 1) * 1e9 / (times[-1] - times[0])
        t = got[topic]
        assert t["publications"] == len(times), topic
        assert t["rate_hz"] == pytest.approx(truth, rel=2e-3), (topic, t["rate_hz"], truth)
        assert abs(t["first_publish_ts"] - times[0]) < 2_000_000 and abs(t["last_publish_ts"] - times[-1]) < 2_000_000
        assert t["period_mean_ns"] == pytest.approx(1e9 / t["rate_hz"], rel=1e-9)
        assert t["period_jitter_ns"] is not None and t["period_jitter_ns"] >= 0
        compared += 1
    for topic, hz in SENSOR_HZ.items():
        # Near the timer's (the log's rate, asserted above, is the oracle: in some runs on this
        # 2-core VM the sensors' ticks spanned ~0.26 s more than their periods, lowering both alike).
        assert abs(got[topic]["rate_hz"] - hz) <= SENSOR_SLACK * hz, (topic, got[topic]["rate_hz"])
        # what the old definition (publications over the whole recording) read: far below it
        assert got[topic]["publications"] * 1e9 / (last - first) < 0.9 * hz
    assert compared == 5


def test_a_windows_rate_is_per_second_of_the_window(rec):
    """`stats --window` and `watch` (stats.topics(db, window)): a topic's rate over a window is
    its publications in the window per second of it: 4 s inside the sensors' run, against the
    log's publications in those 4 s (a publication at an edge may fall on either side: 1/4 Hz)."""
    from roscope import stats

    for topic, hz in SENSOR_HZ.items():
        times = sorted(r["mono_ns"] for r in rec.gt.of("pub", topic=topic))
        a = times[0] + 1_000_000_000 + 500_000_000 // hz  # between two publications
        window = (a, a + 4_000_000_000)
        truth = sum(window[0] <= t < window[1] for t in times) / 4
        got = {t["topic"]: t for t in stats.topics(rec.db, window)}[topic]["rate_hz"]
        assert abs(got - truth) <= 0.25 + 1e-9 and abs(got - hz) <= 0.5, (topic, got, truth)


def test_a_rate_budget_on_a_healthy_timer_passes(rec, tmp_path):
    """`rate: {min: ...}` 0.5 % below the rate the nodes' log gives /imu (50 Hz timer) and
    /lidar (20 Hz) pass (roscope check's budgets, measured by stats.topic_rate); 1 % above
    /imu's fails."""
    from roscope.check import budgets, measure

    imu, lidar = log_rate(rec.gt, "/imu"), log_rate(rec.gt, "/lidar")
    f = tmp_path / "budgets.yaml"
    f.write_text(f"budgets:\n  - topic: '^/imu$'\n    rate: {{min: {imu * 0.995:.3f} Hz}}\n  - topic: '^/lidar$'\n"
                 f"    rate: {{min: {lidar * 0.995:.3f} Hz}}\n  - topic: '^/imu$'\n    rate: {{min: {imu * 1.01:.3f} Hz}}\n")
    lines = [x for x in measure.evaluate(rec.db, budgets.load(str(f)).budgets) if x.budget.kind == "topic"]
    assert [(x.subject, x.status) for x in lines] == [("/imu", "pass"), ("/lidar", "pass"), ("/imu", "fail")], \
        [(x.subject, x.status, x.value, x.message) for x in lines]


def test_no_negative_latency_is_shown(rec):
    """Every delivery, transport and service time `roscope stats` shows is >= 0; a negative one
    (babeltrace2: a request's send event after its take, emitted after the DDS write) is counted
    apart and said in a warning."""
    from roscope import stats

    ev = rec.t.service_events
    sent = {(e["pid"], e["rmw_client_handle"], e["sequence_number"]): e["ts"] for e in ev["rmw_send_request"]}
    answered = {(e["pid"], e["rmw_client_handle"], e["sequence_number"]): e["ts"] for e in ev["rmw_take_response"]}
    late = sum(answered[k] < sent[k] for k in sent.keys() & answered.keys())
    svc = stats.services(rec.db)
    assert sum(s["rtt_negative"] for s in svc) == late
    assert all(s["rtt_min_ns"] is None or s["rtt_min_ns"] >= 0 for s in svc)
    assert all(s["server_min_ns"] is None or s["server_min_ns"] >= 0 for s in svc)
    topics = stats.topics(rec.db)
    assert all(t["lat_min_ns"] is None or t["lat_min_ns"] >= 0 for t in topics)
    assert all(t["transport_min_ns"] is None or t["transport_min_ns"] >= 0 for t in topics)
    warned = [w for w in stats.warnings(stats.summary(rec.db), topics, svc) if "came out negative" in w]
    assert bool(warned) == bool(late or any(t["negative_latencies"] or t["negative_transports"] for t in topics))


def test_why_and_report_on_the_real_stack(rec, tmp_path, run_roscope):
    """`why` splits the controller's execute runs by the kernel's sched events, accounting for
    each one's whole duration: each slept three times 2 ms (its source), so each was blocked at
    least 1 ms (here between 2.6 and 6.2 ms was seen blocked per run, the rest of the sleeps on
    the CPU or waiting for it: not looked into further); `report` writes its page with the
    service path."""
    from roscope.commands import why

    from tests.support.sched import missed_switches, perf_saw_whole

    # perf on this machine drops some switches (no loss record): a run whose thread lost one has
    # its sleep estimated as running (tests/test_sched.py); the check needs runs perf saw whole.
    missed = missed_switches(rec.trace / "perf" / "perf.data")
    # up to the 40 slowest (the pipeline makes ~35), not 10: the slowest are where perf most often misses a switch
    d = why.collect(rec.db, callback="Controller.execute", top=40)
    assert d["kernel"] and len(d["runs"]) >= 10
    whole = 0
    for r in d["runs"]:
        assert r["symbol"] == "__main__.Controller.execute"
        assert r["on_cpu_ns"] + r["runnable_ns"] + r["blocked_ns"] + r["unknown_ns"] == r["duration_ns"]
        if not perf_saw_whole(missed, r["tid"], r["start_ts"], r["end_ts"]):
            continue
        whole += 1
        assert r["blocked_ns"] >= 1_000_000 and r["preemptions"] >= 0, r["explanation"]
    assert whole >= 3, f"only {whole} of {len(d['runs'])} runs without a switch perf missed"
    out = tmp_path / "report.html"
    p = run_roscope("report", str(rec.trace), "-o", str(out), "--from", "^/(lidar|imu)$", "--to", "^/cmd$")
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert "/plan_path:request" in html and "Controller.execute" in html
    # the topic table's rate is each sensor topic's own (issue 39): the nodes' log's
    for topic in SENSOR_HZ:
        m = re.search(rf'<tr data-id="{re.escape(topic)}">(?:(?!</tr>).)*?<td data-k="rate_hz" data-v="([^"]*)"', html)
        assert m and float(m.group(1)) == pytest.approx(log_rate(rec.gt, topic), rel=2e-3), (topic, m and m.group(1))


def test_dataset_stats_rate_is_the_topics_own(ros2_pipeline_dataset):
    """`dataset stats` (roscope.dataset_queries' topics query, the SQL DuckDB and Spark run): a
    topic's rate in a run is the one of `roscope stats`, its own, against that run's nodes' log."""
    from roscope import dataset_queries as Q

    gt = T.GroundTruth(T.read_ground_truth(ros2_pipeline_dataset["base"]["gt"]))
    rows = {r["topic"]: r for r in Q.run_duckdb(ros2_pipeline_dataset["dataset"], runs=["base"])["topics"]}
    for topic, hz in SENSOR_HZ.items():
        times = sorted(r["mono_ns"] for r in gt.of("pub", topic=topic))
        truth = (len(times) - 1) * 1e9 / (times[-1] - times[0])
        assert rows[topic]["rate_hz"] == pytest.approx(truth, rel=2e-3) and abs(rows[topic]["rate_hz"] - hz) <= SENSOR_SLACK * hz


# --------------------------------------------------------------------------
# without roscope's tracer; ros2sim
# --------------------------------------------------------------------------

@pytest.mark.parametrize("distro", DISTROS)
def test_without_roscopes_tracer_nothing_is_recorded_and_roscope_says_why(distro, tmp_path, run_roscope):
    if not (T.env_of(distro) / "bin" / "python").exists():
        pytest.skip(f"ROS 2 {distro} from PyPI is not installed (make setup)")
    r = T.record(distro, tmp_path, 1.5, ["--no-preload"])
    assert r["rc"] == 0, r["stderr"]
    gt = T.GroundTruth(T.read_ground_truth(r["gt"]))
    pids = set(gt.pids().values())
    import bt2

    # With nothing traced LTTng may write no CTF stream at all; babeltrace2 refuses a
    # directory without one, which is itself the oracle's "no events".
    ros2 = []
    if any(r["trace"].rglob("metadata")):
        ros2 = [m.event.name for m in bt2.TraceCollectionMessageIterator(str(r["trace"]))
                if type(m) is bt2._EventMessageConst and m.event.name.startswith("ros2")
                and int(m.event.common_context_field["vpid"]) in pids]
    assert ros2 == []
    warned = [line for line in r["stderr"].splitlines() if "NO ROS 2 EVENTS RECORDED" in line]
    assert {int(w.split("from process ")[1].split()[0]) for w in warned} >= pids, r["stderr"]
    assert all("lttng-ust-sock-6" in w and "libtracetools.so" in w for w in warned)
    man = json.loads((r["trace"] / "roscope-manifest.json").read_text())
    assert {u["pid"] for u in man["ros2"]["tracer_unreachable"]} >= pids
    info = run_roscope("info", str(r["trace"]))
    assert info.returncode == 0 and "NONE OF THEIR ROS 2 EVENTS ARE IN THIS TRACE" in info.stdout
    assert "NO ROS 2 EVENTS RECORDED" in info.stderr


#: ros2sim's distro for each real one: Kilted's layouts are Rolling's for the events both have.
SIM_DISTRO = {"jazzy": "jazzy", "kilted": "rolling"}


def test_ros2sim_and_the_real_stack_agree(rec, ros2sim_run):
    """Where ros2sim and the real distro overlap: every event both emit has the same fields of
    the same types (babeltrace2's field classes), and roscope links their deliveries the same
    way (by rmw_publish.timestamp = rmw_take.source_timestamp), every delivery of each."""
    import roscope

    sim = ros2sim_run("talker_listener", SIM_DISTRO[rec.distro], 4)
    traces = sorted((sim / "traces").glob("*"))
    st = T.read_trace_layouts(traces[0])
    common = set(st) & set(rec.t.layouts)
    assert len(common) >= 15, common
    for ev in sorted(common):
        assert st[ev] == rec.t.layouts[ev], (ev, st[ev], rec.t.layouts[ev])
    db = roscope.open(str(sim / "traces"))
    vpids = ", ".join(str(int(p["vpid"])) for p in json.loads((sim / "manifest.json").read_text())["processes"])
    mine = """FROM links l JOIN publications pb USING (publication_id) JOIN publishers pu USING (publisher_id)
               JOIN processes p ON p.proc_id = pu.proc_id WHERE p.pid IN ({})"""
    sim_methods = {r["method"] for r in db.records(f"SELECT DISTINCT l.method {mine.format(vpids)}")}
    real = {r["method"] for r in rec.db.records(
        f"SELECT DISTINCT l.method {mine.format(_pids_sql(rec))} AND pu.name NOT LIKE '%:%'")}
    assert sim_methods == real == {"rmw_timestamp"}
    with open(sim / "ground_truth" / "deliveries.csv", newline="") as f:
        deliveries = sum(1 for r in csv.DictReader(f) if r["status"] == "taken")
    assert db.records(f"SELECT count(*) AS n {mine.format(vpids)}")[0]["n"] == deliveries > 30


def test_the_example_runs_without_roscope_and_slows_a_callback_on_request(tmp_path):
    """launch.py alone (no recording): every process stops cleanly and logs its ground truth;
    with ROS2_PIPELINE_SLOW=fusion.on_lidar:3 that callback's runs take 3 ms longer, no other's."""
    import os

    py = T.env_of("jazzy") / "bin" / "python"
    if not py.exists():
        pytest.skip("ROS 2 jazzy from PyPI is not installed (make setup)")
    env = dict(os.environ, ROS2_PIPELINE_SLOW="fusion.on_lidar:3")
    env.pop("LD_PRELOAD", None)
    # 5 s: once the processes' start (rclpy's imports, DDS discovery) left a 3-s run 7 of
    # fusion.on_lidar's 20 Hz runs
    p = subprocess.run([str(py), str(T.EXAMPLE / "launch.py"), "-d", "5", "-g", str(tmp_path / "gt")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert {f.stem for f in (tmp_path / "gt").glob("*.jsonl")} == {"sensors", "fusion", "planner", "mapper", "controller"}
    gt = T.GroundTruth(T.read_ground_truth(tmp_path / "gt"))
    assert gt.of("pub", topic="/lidar") and len(gt.of("stop")) == 5
    runs = gt.runs()
    slowed = [r["end_ns"] - r["start_ns"] for r in runs[("/fusion", "fusion.on_lidar")]]
    assert len(slowed) > 10 and min(slowed) >= 3_000_000
    assert sorted(r["end_ns"] - r["start_ns"] for r in runs[("/fusion", "fusion.on_imu")])[len(runs[("/fusion", "fusion.on_imu")]) // 2] < 1_000_000
