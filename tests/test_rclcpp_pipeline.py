"""Real rclcpp (built by scripts/rclcpp_setup.sh from ../shared/third_party), recorded live.

`roscope record --ros2 jazzy -- python3 examples/ros2_cpp_pipeline/launch.py -d 4` runs the C++
example (four processes: three nodes composed with intra-process communication on a
MultiThreadedExecutor, a lifecycle node with a service, an action server and client) under
rclcpp's own tracepoints (ros2_tracing's, reaching LTTng through roscope's tracer library).
The expected values come from the nodes' ground-truth logs, never from roscope's output.

Skips, saying why, where rclcpp is not built (no ../shared/third_party/ros2-jazzy, or
`make setup` not run) or Jazzy from PyPI is not installed.
"""
from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lttng, pytest.mark.ros2]

import ros2_truth as T  # noqa: E402  (tests/ is on sys.path: conftest.py)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "ros2_cpp_pipeline"
SECONDS = 4.0

#: The example's callbacks that rclcpp traces (callback_start/end): a timer's, a subscription's
#: (intra-process ones too), a service's. (node, cb of the ground truth) -> (kind, topic or
#: service, or the timer's period in ns).
TRACED = {
    ("/camera", "camera.tick"): ("timer", 50_000_000),
    ("/lidar", "lidar.tick"): ("timer", 100_000_000),
    ("/detector", "detector.on_image"): ("subscription", "/image"),
    ("/detector", "detector.on_scan"): ("subscription", "/scan"),
    ("/detector", "detector.health"): ("timer", 200_000_000),
    ("/planner", "planner.on_detections"): ("subscription", "/detections"),
    ("/planner", "planner.on_scan"): ("subscription", "/scan"),
    ("/mapper", "mapper.plan"): ("service", "/plan"),
    ("/mapper", "mapper.tick"): ("timer", 500_000_000),
    ("/controller", "controller.on_path"): ("subscription", "/path"),
    ("/controller", "controller.step"): ("timer", 50_000_000),
}
#: Logged callbacks rclcpp 28 calls without a tracepoint around them: a client's response
#: callback (Client::handle_response) and rclcpp_action's callbacks (run inside the action
#: server's and client's Waitable::execute).
NOT_TRACED = {"planner.on_plan", "planner.on_goal_response", "planner.on_feedback", "planner.on_result",
              "controller.on_goal", "controller.on_accepted"}


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    pytest.importorskip("roscope._core", reason="the roscope core is not built")
    if not (T.env_of("jazzy") / "bin" / "python").exists():
        pytest.skip(f"ROS 2 jazzy from PyPI is not installed in {T.env_of('jazzy')} (make setup)")
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(p.stderr.strip())
    b = subprocess.run([sys.executable, str(EXAMPLE / "launch.py"), "--build"], capture_output=True, text=True, timeout=900)
    assert b.returncode == 0, f"building examples/ros2_cpp_pipeline failed:\n{b.stdout[-3000:]}\n{b.stderr[-3000:]}"
    out = tmp_path_factory.mktemp("rclcpp_pipeline")
    gt = out / "gt"
    r = T.record_command("jazzy", out / "trace", [sys.executable, str(EXAMPLE / "launch.py"), "-d", str(SECONDS), "-g", str(gt)],
                         ["--ros2", "jazzy"])
    assert r["rc"] == 0, f"roscope record of examples/ros2_cpp_pipeline failed:\n{r['stdout']}\n{r['stderr']}"
    import roscope

    db = roscope.open(str(out / "trace"))
    return {"trace": out / "trace", "gt": T.GroundTruth(T.read_ground_truth(gt)), "db": db, "stderr": r["stderr"]}


def test_recorded_with_rclcpps_tracepoints_and_nothing_lost(rec):
    man = json.loads((rec["trace"] / "roscope-manifest.json").read_text())
    assert man["events_discarded"] == 0 and man["packets_lost"] == 0
    assert man["ros2"]["distro"] == "jazzy" and man["ros2"]["preload"], man["ros2"]
    assert man["ros2"]["tracer_unreachable"] == [], man["ros2"]


def test_every_logged_callback_is_known(rec):
    logged = {cb for (_node, cb) in rec["gt"].runs()}
    assert logged == {cb for (_n, cb) in TRACED} | NOT_TRACED, logged


def test_callback_runs_per_callback_exact(rec):
    """Each traced callback's runs in roscope's model, against the number of runs its node logged."""
    pids = list(rec["gt"].pids().values())  # this recording's processes (others may run beside it)
    runs = collections.Counter()
    for r in rec["db"].records(
            f"""SELECT c.node, c.kind, c.topic, c.period_ns, count(r.run_id) AS n
               FROM callbacks_info c LEFT JOIN callback_runs r USING (callback_id)
               WHERE c.pid IN ({", ".join("?" * len(pids))})
               GROUP BY c.callback_id, c.node, c.kind, c.topic, c.period_ns""", pids):
        what = r["period_ns"] if r["kind"] == "timer" else r["topic"]
        runs[(r["node"], r["kind"], what)] += r["n"]
    logged = rec["gt"].runs()
    wrong = {}
    for (node, cb), (kind, what) in TRACED.items():
        expected = len(logged.get((node, cb), []))
        assert expected > 0, f"{node} {cb}: no run logged"
        if runs.get((node, kind, what), 0) != expected:
            wrong[f"{node} {cb}"] = (runs.get((node, kind, what), 0), expected)
    assert not wrong, f"(roscope's runs, logged runs) per callback: {wrong}"


def test_publications_per_topic_exact(rec):
    """One publication per message published, whether it went intra-process, to other processes
    or both (rclcpp_intra_publish and rclcpp_publish of one message are one publication)."""
    gt = rec["gt"]
    pids = gt.pids()
    logged = collections.Counter((r["pid"], r["topic"]) for r in gt.of("pub"))
    traced = collections.Counter()
    for r in rec["db"].records(
            f"""SELECT p.pid, pu.name, count(*) AS n FROM publications pb JOIN publishers pu USING (publisher_id)
                JOIN processes p ON p.proc_id = pu.proc_id WHERE p.pid IN ({", ".join("?" * len(pids))})
                GROUP BY p.pid, pu.name""", list(pids.values())):
        traced[(r["pid"], r["name"])] = r["n"]
    wrong = {k: (traced.get(k, 0), n) for k, n in logged.items() if traced.get(k, 0) != n}
    assert not wrong, f"(roscope's publications, logged) per (pid, topic): {wrong}"


def test_without_the_archives_setup_says_why_and_goes_on(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ROSCOPE_THIRD_PARTY": str(tmp_path / "absent")}
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh")], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "rclcpp skipped: the third-party sources it is built from are absent" in p.stdout, p
    q = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True, env=env)
    assert q.returncode == 1 and "absent" in q.stderr and not q.stdout, q


#: The subscription callbacks of the example and the topic each takes.
SUBSCRIPTIONS = {cb: what for (node, cb), (kind, what) in TRACED.items() if kind == "subscription"}


def _publication_ids(rec) -> dict:
    """roscope's publication_id -> the message's id in the log (the k-th publication of a
    process's publisher of a topic is the k-th one the process logged on it)."""
    gt, out = rec["gt"], {}
    logged = collections.defaultdict(list)
    for r in sorted(gt.of("pub"), key=lambda r: r["mono_ns"]):
        logged[(r["pid"], r["topic"])].append(r["id"])
    for (pid, topic), ids in logged.items():
        pubs = rec["db"].records(
            """SELECT pb.publication_id FROM publications pb JOIN publishers pu USING (publisher_id)
               JOIN processes p ON p.proc_id = pu.proc_id WHERE p.pid = ? AND pu.name = ? ORDER BY pb.ts, pb.publication_id""",
            [pid, topic])
        out.update({p["publication_id"]: i for p, i in zip(pubs, ids)})
    return out


def test_transport_links_exact(rec):
    """Every message a subscription callback received (the log's recv in its run) is linked into
    that run, and nothing else is linked into the example's runs."""
    gt, db = rec["gt"], rec["db"]
    ids = _publication_ids(rec)
    pids = list(gt.pids().values())
    expected, got = set(), set()
    logged = gt.runs()
    for (node, cb), (kind, what) in TRACED.items():
        runs = logged[(node, cb)]
        pid = runs[0]["pid"]
        cond = "c.period_ns = ?" if kind == "timer" else "c.topic = ?"
        traced = db.records(f"""SELECT r.run_id FROM callback_runs r JOIN callbacks_info c USING (callback_id)
                                WHERE c.pid = ? AND c.node = ? AND c.kind = ? AND {cond} ORDER BY r.start_ts""",
                            [pid, node, kind, what])
        assert len(traced) == len(runs), f"{node} {cb}"
        recv = [r for r in gt.of("recv", node=node) if r["what"] == what] if kind == "subscription" else []
        for t, g in zip(traced, runs):
            expected |= {(t["run_id"], r["id"]) for r in recv if g["start_ns"] <= r["mono_ns"] <= g["end_ns"]}
    ours = {t["run_id"] for t in db.records(f"""SELECT r.run_id FROM callback_runs r JOIN callbacks_info c USING (callback_id)
                                                WHERE c.pid IN ({", ".join("?" * len(pids))})""", pids)}
    got = {(r["run_id"], ids.get(r["publication_id"])) for r in db.records("SELECT run_id, publication_id FROM links")
           if r["run_id"] in ours and r["publication_id"] in ids}
    assert expected and got == expected, (f"missing {len(expected - got)}: {sorted(expected - got)[:5]}; "
                                          f"wrong {len(got - expected)}: {sorted(got - expected)[:5]}")


def test_flows_from_the_camera_to_the_detections(rec, run_roscope):
    """Each detection comes from one image: one flow per detection on the camera's path."""
    p = run_roscope("flow", str(rec["trace"]), "--from", "^/image$", "--to", "^/detections$", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    paths = {x["path"]: x["flows"] for x in json.loads(p.stdout)["paths"]}
    detections = len([r for r in rec["gt"].of("pub") if r["topic"] == "/detections"])
    assert paths == {"/camera timer -> [/image] -> /detector subscription(/image) -> [/detections]": detections}, paths


def test_missing_service_events_are_said_not_shown_as_no_calls(rec, run_roscope):
    """Jazzy's rclcpp has no request/response tracepoints: the planner's /plan client (and the
    action's) called 50 and 12 times in the log leave no service event. roscope says it cannot
    show service calls instead of showing none as a fact."""
    calls = [r for r in rec["gt"].of("request")]
    assert calls, "the log has no service call"
    p = run_roscope("stats", str(rec["trace"]))
    assert p.returncode == 0, p.stderr
    said = [x for x in p.stderr.splitlines() if "no request or response event" in x]
    assert len(said) == 1 and "cannot show service calls" in said[0], p.stderr
