"""Identity in the execution model when addresses and pids are reused, and
when two hosts have equal addresses (docs/model.md, "Identity and lifetimes").

Everything is recorded here, live, from a real process:
tests/fixtures/reuse/reuse_node (a ROS 2-like program with its own `ros2`
tracepoint provider, Jazzy layouts) creates a node, a publisher, two
subscriptions and two timers whose blocks are malloc'd and freed, so that the
second subscription (another topic) and the second timer (another period)
really get the first one's addresses.  It writes a ground-truth log (JSON
lines) of every object: addresses, pid, host, lifetime, callback runs, and
whether the addresses really were reused.

Each recording runs under its own lttng-sessiond in its own UTS + mount
namespace (tests/fixtures/reuse/host.sh, the approach of tools/ros2sim), so
the trace's hostname is real and no other process on the machine is recorded:

* handles  one run: one process, addresses reused inside it;
* pids     two runs one after the other, each in a fresh PID namespace: both
           are vpid 1 in one trace (pid reuse as the trace sees it);
* hosts    two "hosts" (two sessiond, hostnames reuse-host-a/-b) each running
           the program in a PID namespace with ASLR off: equal pids and equal
           addresses on both, checked from the traces with babeltrace2.

The expected values come from the ground-truth log and from bt2, never from
roscope.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid

import pytest

pytestmark = [pytest.mark.lttng, pytest.mark.slow]

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "reuse")
PROGRAM = os.path.join(FIXTURE, "build", "reuse_node")
HOST_SH = os.path.join(FIXTURE, "host.sh")

# what reuse_node does (its ground truth says it too; these only name the cases)
SUB_TOPICS = ["/reuse/alpha", "/reuse/beta"]
TIMER_PERIODS = [10_000_000, 20_000_000]


# --------------------------------------------------------------------------
# recording
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reuse_prog() -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces (unshare --uts --mount --pid) and a private lttng-sessiond")
    for tool in ("lttng", "lttng-sessiond", "unshare", "setarch", "hostname", "make", "gcc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    p = subprocess.run(["make", "-s", "-C", FIXTURE], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        pytest.fail(f"cannot build tests/fixtures/reuse:\n{p.stdout}")
    return PROGRAM


def _kill_sessiond(pidfile: str) -> None:
    """The private sessiond a host runner started, if it outlived it (by pid)."""
    try:
        with open(pidfile) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"lttng-sessiond" not in f.read():
                return
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        pass


def _start_host(base: str, hostname: str, *, pidns: bool, runs: int) -> dict:
    os.makedirs(base, exist_ok=True)
    h = {
        "hostname": hostname,
        "trace": os.path.join(base, "trace"),
        "gt": os.path.join(base, "ground_truth.jsonl"),
        "pidfile": os.path.join(base, "sessiond.pid"),
        "log": os.path.join(base, "host.log"),
        "session": f"roscope-reuse-{uuid.uuid4().hex[:12]}",
    }
    # same length for every host: the program's environment (and so its heap
    # layout under ASLR-off) does not depend on which host it runs on
    home = os.path.join(base, "lttng-home")
    with open(h["log"], "w") as log:
        h["proc"] = subprocess.Popen(
            ["unshare", "--uts", "--mount", "--fork", "--kill-child", "sh", HOST_SH,
             hostname, home, h["trace"], h["session"], h["pidfile"], "1" if pidns else "0",
             str(runs), h["gt"], PROGRAM],
            stdout=log, stderr=subprocess.STDOUT)
    return h


def _finish_host(h: dict) -> None:
    try:
        rc = h["proc"].wait(timeout=60)
    except subprocess.TimeoutExpired:
        h["proc"].kill()
        h["proc"].wait()
        rc = "timeout"
    finally:
        _kill_sessiond(h["pidfile"])
    if rc != 0:
        with open(h["log"]) as f:
            pytest.fail(f"recording on host {h['hostname']} failed ({rc}):\n{f.read()}")
    with open(h["gt"]) as f:
        h["truth"] = [json.loads(line) for line in f if line.strip()]


def record(base: str, hosts: list[str], *, pidns: bool, runs: int) -> list[dict]:
    started = []
    try:
        for name in hosts:
            started.append(_start_host(os.path.join(base, name), name, pidns=pidns, runs=runs))
    finally:
        for h in started:
            _finish_host(h)
    return started


@pytest.fixture(scope="module")
def handles_rec(reuse_prog, tmp_path_factory):
    [h] = record(str(tmp_path_factory.mktemp("reuse-handles")), ["reuse-handles"], pidns=False, runs=1)
    return h


@pytest.fixture(scope="module")
def pids_rec(reuse_prog, tmp_path_factory):
    [h] = record(str(tmp_path_factory.mktemp("reuse-pids")), ["reuse-pids"], pidns=True, runs=2)
    return h


@pytest.fixture(scope="module")
def hosts_rec(reuse_prog, tmp_path_factory):
    base = str(tmp_path_factory.mktemp("reuse-hosts"))
    return base, record(base, ["reuse-host-a", "reuse-host-b"], pidns=True, runs=1)


def open_db(path):
    roscope = pytest.importorskip("roscope")
    return roscope.open(path)


# --------------------------------------------------------------------------
# the ground truth and the bt2 oracle
# --------------------------------------------------------------------------

def truth(rows, kind, **match):
    return [r for r in rows if r["kind"] == kind and all(r[k] == v for k, v in match.items())]


def runs_of(rows):
    """label -> the process line of that run."""
    return {r["label"]: r for r in truth(rows, "process")}


def bt2_events(trace_dir: str) -> list[dict]:
    """Every ros2 event of a trace, decoded by babeltrace2: name, hostname (trace
    env), vpid, ts (the clock value: CLOCK_MONOTONIC ns, as in the ground
    truth), payload."""
    bt2 = pytest.importorskip("bt2")
    out = []
    for msg in bt2.TraceCollectionMessageIterator(trace_dir):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        out.append({
            "name": ev.name,
            "hostname": str(ev.stream.trace.environment["hostname"]),
            "vpid": int(ev.common_context_field["vpid"]),
            "ts": msg.default_clock_snapshot.value,
            "payload": {k: (str(v) if isinstance(v, bt2._StringFieldConst) else
                            [int(x) for x in v] if isinstance(v, bt2._ArrayFieldConst) else int(v))
                        for k, v in ev.payload_field.items()},
        })
    return out


# --------------------------------------------------------------------------
# checks shared by the three recordings: one process instance's objects
# --------------------------------------------------------------------------

def check_process_objects(db, proc_id: int, gt: list[dict], label: str) -> None:
    """The objects roscope found in process instance ``proc_id`` are exactly the
    ground truth's objects of run ``label``: one node, one publisher, one
    subscription per life (its topic, its handles), one timer per life, and one
    callback per life with that life's runs."""
    where = f"process {proc_id} (ground-truth run {label})"
    g_subs = sorted(truth(gt, "subscription", label=label), key=lambda r: r["life"])
    g_timers = sorted(truth(gt, "timer", label=label), key=lambda r: r["life"])
    [g_node] = truth(gt, "node", label=label)
    [g_pub] = truth(gt, "publisher", label=label)

    nodes = db.sql(f"SELECT name, handle FROM nodes WHERE proc_id = {proc_id}")
    assert nodes.to_dict("records") == [{"name": g_node["name"], "handle": g_node["handle"]}], where

    subs = db.sql(f"""SELECT subscription_id, name, handle, rmw_handle, rclcpp_handle, known, init_ts
                      FROM subscriptions WHERE proc_id = {proc_id} ORDER BY init_ts""")
    assert len(subs) == len(g_subs), f"{where}: subscriptions\n{subs}"
    for (_, s), g in zip(subs.iterrows(), g_subs):
        assert (s["name"], s["handle"], s["rmw_handle"], s["rclcpp_handle"], s["known"]) == \
            (g["topic"], g["handle"], g["rmw_handle"], g["rclcpp_handle"], 1), f"{where}: life {g['life']}\n{subs}"
        assert g["created_ns"] <= s["init_ts"] <= g["destroyed_ns"], f"{where}: {g['topic']} created out of its life"

    timers = db.sql(f"""SELECT timer_id, handle, period_ns, known, init_ts, node_id
                        FROM timers WHERE proc_id = {proc_id} ORDER BY init_ts""")
    assert len(timers) == len(g_timers), f"{where}: timers\n{timers}"
    for (_, t), g in zip(timers.iterrows(), g_timers):
        assert (t["handle"], t["period_ns"], t["known"]) == (g["handle"], g["period_ns"], 1), f"{where}\n{timers}"
        assert g["created_ns"] <= t["init_ts"] <= g["destroyed_ns"], f"{where}: timer {g['life']} created out of its life"

    # callbacks: one per life, owned by that life's subscription / timer, with
    # that life's symbol and runs; the runs lie within the life
    cbs = db.sql(f"""SELECT c.callback_id, c.handle, c.kind, c.owner_id, c.symbol,
                            count(r.run_id) AS runs, min(r.start_ts) AS first_start, max(r.end_ts) AS last_end,
                            count(r.end_ts) AS ended
                     FROM callbacks c LEFT JOIN callback_runs r USING (callback_id)
                     WHERE c.proc_id = {proc_id}
                     GROUP BY ALL ORDER BY c.callback_id""")
    expected = []
    for kind, gl, owners, idcol in (("subscription", g_subs, subs, "subscription_id"),
                                    ("timer", g_timers, timers, "timer_id")):
        for g, (_, o) in zip(gl, owners.iterrows()):
            expected.append({"handle": g["callback"], "kind": kind, "owner_id": int(o[idcol]),
                             "symbol": g["symbol"], "runs": g["runs"], "life": (g["created_ns"], g["destroyed_ns"])})
    got = cbs.to_dict("records")
    assert len(got) == len(expected), (
        f"{where}: {len(expected)} callbacks in the ground truth (every life of a reused address is its own "
        f"callback), roscope has {len(got)}:\n{cbs.to_string()}")
    for e in expected:
        mine = [c for c in got if c["kind"] == e["kind"] and c["owner_id"] == e["owner_id"]]
        assert len(mine) == 1, f"{where}: callbacks of {e['kind']} {e['owner_id']}:\n{cbs.to_string()}"
        c = mine[0]
        assert (c["handle"], c["symbol"], c["runs"], c["ended"]) == (e["handle"], e["symbol"], e["runs"], e["runs"]), \
            f"{where}: callback of {e['kind']} {e['owner_id']} (ground truth {e})\n{cbs.to_string()}"
        lo, hi = e["life"]
        assert lo <= c["first_start"] and c["last_end"] <= hi, f"{where}: runs of {e} outside its life"

    pubs = db.sql(f"""SELECT p.name, p.handle, count(pb.publication_id) AS n
                      FROM publishers p LEFT JOIN publications pb USING (publisher_id)
                      WHERE p.proc_id = {proc_id} GROUP BY ALL""")
    assert pubs.to_dict("records") == [{"name": g_pub["topic"], "handle": g_pub["handle"], "n": g_pub["published"]}], \
        f"{where}: publishers\n{pubs}"


def assert_really_reused(gt: list[dict], label: str) -> None:
    """The program's own verdict: malloc really returned the same addresses."""
    for obj in ("subscription", "timer"):
        [r] = truth(gt, "reuse", label=label, object=obj)
        assert r["reused"] is True, f"run {label}: the {obj} addresses were not reused: {r}"
        for k, v in r.items():
            if isinstance(v, list):
                assert v[0] == v[1], (label, obj, k, v)


# --------------------------------------------------------------------------
# 1. handle reuse inside one process
# --------------------------------------------------------------------------

def test_handle_reuse_really_happens(handles_rec):
    gt = handles_rec["truth"]
    assert_really_reused(gt, "run1")
    # and the trace says so too (bt2): one handle, two init events, two topics
    evs = bt2_events(handles_rec["trace"])
    inits = [e["payload"] for e in evs if e["name"] == "ros2:rcl_subscription_init"]
    assert [i["topic_name"] for i in inits] == SUB_TOPICS
    assert len({i["subscription_handle"] for i in inits}) == 1
    cb_added = [e["payload"]["callback"] for e in evs if e["name"] == "ros2:rclcpp_subscription_callback_added"]
    assert len(cb_added) == 2 and cb_added[0] == cb_added[1]
    timers = [e["payload"] for e in evs if e["name"] == "ros2:rcl_timer_init"]
    assert [t["period"] for t in timers] == TIMER_PERIODS
    assert len({t["timer_handle"] for t in timers}) == 1


def test_handle_reuse_one_process(handles_rec):
    gt = handles_rec["truth"]
    [run] = truth(gt, "process")
    db = open_db(handles_rec["trace"])
    procs = db.sql("SELECT proc_id, pid FROM processes")
    assert procs["pid"].tolist() == [run["pid"]]
    assert db.sql("SELECT hostname FROM hosts")["hostname"].tolist() == [run["host"]]


def test_handle_reuse_subscriptions_and_timers(handles_rec):
    gt = handles_rec["truth"]
    db = open_db(handles_rec["trace"])
    subs = db.sql("SELECT name, handle FROM subscriptions ORDER BY init_ts")
    assert subs["name"].tolist() == SUB_TOPICS
    assert subs["handle"].tolist() == [g["handle"] for g in truth(gt, "subscription")]
    timers = db.sql("SELECT period_ns FROM timers ORDER BY init_ts")
    assert timers["period_ns"].tolist() == TIMER_PERIODS


def test_handle_reuse_callbacks_are_separate(handles_rec):
    """Two lives of one callback address are two callbacks, each with its own
    runs (3 then 5 for the subscriptions, 4 then 2 for the timers)."""
    gt = handles_rec["truth"]
    db = open_db(handles_rec["trace"])
    [proc_id] = db.sql("SELECT proc_id FROM processes")["proc_id"].tolist()
    check_process_objects(db, proc_id, gt, "run1")


# --------------------------------------------------------------------------
# 2. pid reuse: two processes, one after the other, both vpid 1
# --------------------------------------------------------------------------

def test_pid_reuse_really_happens(pids_rec):
    gt = pids_rec["truth"]
    runs = runs_of(gt)
    assert sorted(runs) == ["run1", "run2"]
    assert runs["run1"]["pid"] == runs["run2"]["pid"], runs
    assert runs["run1"]["end_ns"] < runs["run2"]["start_ns"]
    for label in runs:
        assert_really_reused(gt, label)
    # the trace: both processes' events carry the same vpid; two rcl_init
    evs = bt2_events(pids_rec["trace"])
    assert {e["vpid"] for e in evs} == {runs["run1"]["pid"]}
    inits = [e for e in evs if e["name"] == "ros2:rcl_init"]
    assert len(inits) == 2
    for e, label in zip(inits, ["run1", "run2"]):
        assert runs[label]["start_ns"] <= e["ts"] <= runs[label]["end_ns"], (label, e, runs[label])


def test_pid_reuse_two_process_instances(pids_rec):
    gt = pids_rec["truth"]
    runs = runs_of(gt)
    db = open_db(pids_rec["trace"])
    procs = db.sql("SELECT proc_id, pid, first_ts, last_ts FROM processes ORDER BY first_ts")
    assert procs["pid"].tolist() == [runs["run1"]["pid"], runs["run2"]["pid"]], procs
    # each instance spans exactly one run (trace timestamps are CLOCK_MONOTONIC, as the log's)
    for (_, p), label in zip(procs.iterrows(), ["run1", "run2"]):
        r = runs[label]
        assert r["start_ns"] <= p["first_ts"] <= p["last_ts"] <= r["end_ns"], (label, r, procs)
    assert len(db.sql("SELECT * FROM nodes")) == 2


def test_pid_reuse_objects_per_instance(pids_rec):
    """Both processes have the same addresses (ASLR off, same program): every
    object must still belong to its own process instance."""
    gt = pids_rec["truth"]
    db = open_db(pids_rec["trace"])
    procs = db.sql("SELECT proc_id FROM processes ORDER BY first_ts")["proc_id"].tolist()
    assert len(procs) == 2
    # equal addresses across the two runs (else this case would prove less)
    a = {(g["kind"], g.get("life")): g["handle"] for g in gt if g["label"] == "run1" and "handle" in g}
    b = {(g["kind"], g.get("life")): g["handle"] for g in gt if g["label"] == "run2" and "handle" in g}
    assert a == b
    for proc_id, label in zip(procs, ["run1", "run2"]):
        check_process_objects(db, proc_id, gt, label)


# --------------------------------------------------------------------------
# 3. two hosts with equal pids and equal addresses
# --------------------------------------------------------------------------

def test_two_hosts_really_equal(hosts_rec):
    """From the traces (bt2): two hostnames, the same vpid, the same addresses."""
    base, hosts = hosts_rec
    per_host = {}
    for h in hosts:
        evs = bt2_events(h["trace"])
        assert {e["hostname"] for e in evs} == {h["hostname"]}
        per_host[h["hostname"]] = evs
    assert len(per_host) == 2
    shapes = []
    for evs in per_host.values():
        # every event's name, vpid and pointer fields, in order (strings and
        # timestamps aside): equal on both hosts
        shapes.append([(e["name"], e["vpid"], tuple(v for k, v in sorted(e["payload"].items())
                                                      if k not in ("timestamp",) and isinstance(v, int)))
                       for e in evs])
    assert len(shapes[0]) > 50
    assert shapes[0] == shapes[1]
    for h in hosts:
        [run] = truth(h["truth"], "process")
        assert run["host"] == h["hostname"]
        assert_really_reused(h["truth"], "run1")
    pids = {truth(h["truth"], "process")[0]["pid"] for h in hosts}
    assert len(pids) == 1


def test_two_hosts_separate(hosts_rec):
    base, hosts = hosts_rec
    db = open_db(base)   # the folder holding both hosts' traces
    assert sorted(db.sql("SELECT hostname FROM hosts")["hostname"]) == sorted(h["hostname"] for h in hosts)
    procs = db.sql("""SELECT p.proc_id, p.pid, h.hostname FROM processes p JOIN hosts h USING (host_id)
                      ORDER BY h.hostname""")
    assert procs["hostname"].tolist() == sorted(h["hostname"] for h in hosts), procs
    for h in hosts:
        [run] = truth(h["truth"], "process")
        [proc_id] = procs[procs["hostname"] == h["hostname"]]["proc_id"].tolist()
        assert procs[procs["proc_id"] == proc_id]["pid"].tolist() == [run["pid"]]
        check_process_objects(db, proc_id, h["truth"], "run1")
    # nothing is shared: every object's process is on one host, counts add up
    for table, per_run in (("nodes", 1), ("subscriptions", 2), ("timers", 2), ("publishers", 1)):
        n = db.sql(f"SELECT count(*) AS n FROM {table}")["n"][0]
        assert n == per_run * len(hosts), table
