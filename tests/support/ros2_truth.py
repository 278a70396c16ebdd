"""The real ROS 2 example (examples/ros2_pipeline) as its oracle sees it, independently of roscope.

Used by tests/test_ros2_pipeline.py (and bench/ros2_overhead.py for the recording helpers).

- ``record(distro, out, ...)``: `roscope record` of examples/ros2_pipeline/launch.py run with
  the distro's pip-installed Python (found through PATH, as a user who activated the
  environment runs it), into out/trace, its ground truth into out/gt;
- ``Trace``: the recording decoded by babeltrace2 (bt2), the processes of this recording only
  (``roscope_ros2:process_init.record_id`` = the manifest's): nodes, callbacks with their
  registration and what they serve (rcl handle -> topic, service, timer), runs per callback (a
  stack per thread), publications per publisher (``rcl_publish``, with the start of the run open
  on the publishing thread), service requests and responses;
- ``GroundTruth``: the nodes' own logs (examples/ros2_pipeline/nodes/common.py), matched to the
  trace by order: the k-th publication a process logged on a topic is the k-th ``rcl_publish`` of
  its publisher of that topic, the k-th run a node logged for a callback is the k-th run of the
  callback registered with that node and symbol.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ros2_pipeline"
ENVS = Path(os.environ.get("ROSCOPE_ROS2_ENVS") or REPO / ".ros2")

#: Each logged callback (node, name in the ground truth) -> its Python symbol, its kind and
#: what it serves, as the example's sources define them.
CALLBACKS = {
    ("/sensors/lidar", "lidar.tick"): ("__main__.SensorNode.__init__.<locals>.<lambda>", "timer", "50 ms"),
    ("/sensors/imu", "imu.tick"): ("__main__.SensorNode.__init__.<locals>.<lambda>", "timer", "20 ms"),
    ("/fusion", "fusion.on_lidar"): ("__main__.Fusion.on_lidar", "subscription", "/lidar"),
    ("/fusion", "fusion.on_imu"): ("__main__.FusionBase.on_imu", "subscription", "/imu"),
    ("/fusion", "fusion.on_cmd"): ("__main__.Fusion.on_cmd", "subscription", "/cmd"),
    ("/planner", "planner.on_fused"): ("__main__.Planner.__init__.<locals>.<lambda>", "subscription", "/fused"),
    ("/planner", "planner.on_plan"): ("__main__.Planner.on_plan", "client", "/plan_path"),
    ("/planner", "planner.on_goal_response"): ("__main__.Planner.on_goal_response", "client", "/follow/_action/send_goal"),
    ("/planner", "planner.on_feedback"): ("__main__.Planner.on_feedback", "subscription", "/follow/_action/feedback"),
    ("/planner", "planner.on_result"): ("__main__.Planner.on_result", "client", "/follow/_action/get_result"),
    ("/mapper", "mapper.plan_path"): ("__main__.plan_path", "service", "/plan_path"),
    ("/controller", "controller.on_goal"): ("__main__.Controller.on_goal", "service", "/follow/_action/send_goal"),
    ("/controller", "controller.execute"): ("__main__.Controller.execute", "service", "/follow/_action/send_goal"),
}


def env_of(distro: str) -> Path:
    return ENVS / distro


def record(distro: str, out: Path, seconds: float = 8.0, extra: list[str] | None = None, timeout: float = 300) -> dict:
    """`roscope record [extra] -o out/trace -- python3 launch.py -d seconds -g out/gt`, with the
    distro's environment first on PATH (activated). Returns {"trace", "gt", "stderr", "rc"}."""
    gt = out / "gt"
    r = record_command(distro, out / "trace", ["python3", str(EXAMPLE / "launch.py"), "-d", str(seconds), "-g", str(gt)],
                       extra, timeout)
    return {**r, "gt": gt}


def record_command(distro: str, trace: Path, argv: list[str], extra: list[str] | None = None,
                   timeout: float = 300) -> dict:
    """`roscope record [extra] -o trace -- argv...`, with the distro's environment first on PATH
    (activated). Returns {"trace", "stderr", "stdout", "rc"}."""
    env = dict(os.environ)
    venv = env_of(distro)
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONPATH"] = str(REPO / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONHOME", None)
    p = subprocess.run([sys.executable, "-m", "roscope", "record", *(extra or []), "-o", str(trace), "--", *argv],
                       capture_output=True, text=True, env=env, timeout=timeout)
    return {"trace": trace, "stderr": p.stderr, "stdout": p.stdout, "rc": p.returncode}


def read_ground_truth(gtdir: Path) -> list[dict]:
    rows = []
    for f in sorted(Path(gtdir).glob("*.jsonl")):
        pid = None
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r["ev"] == "start":
                pid = r["pid"]
            r["pid"] = pid
            r["file"] = f.stem
            rows.append(r)
    return rows


def node_name(name: str, ns: str) -> str:
    return "/" + name.lstrip("/") if ns in ("", "/") else ns.rstrip("/") + "/" + name


@dataclass
class Trace:
    """The recording of this record id, as babeltrace2 decodes it."""
    events: collections.Counter = field(default_factory=collections.Counter)
    discarded: int = 0
    record_id: str | None = None
    pids: set = field(default_factory=set)
    #: (pid, rcl node handle) -> node name
    nodes: dict = field(default_factory=dict)
    #: (pid, rcl handle) -> (kind, name, node) for publishers, subscriptions, services, clients, timers
    objects: dict = field(default_factory=dict)
    #: (pid, rmw handle) -> (pid, rcl handle)
    rmw: dict = field(default_factory=dict)
    #: (pid, callback) -> symbol; -> (kind, owner rcl handle)
    symbols: dict = field(default_factory=dict)
    owners: dict = field(default_factory=dict)
    #: (pid, callback) -> [(start, end)]
    runs: dict = field(default_factory=lambda: collections.defaultdict(list))
    #: (pid, callback) -> [(start, end) or None], parallel to `runs`: the times of the run's
    #: roscope_ros2:callback_frame (the rclpy hook's clock reads at the frame's start and return),
    #: the event after its callback_end on the thread
    frames: dict = field(default_factory=lambda: collections.defaultdict(list))
    #: (pid, rcl publisher handle) -> [(ts, start of the run open on the thread or None)]
    pubs: dict = field(default_factory=lambda: collections.defaultdict(list))
    #: service events: name -> [event dict with pid, ts, fields]
    service_events: dict = field(default_factory=lambda: collections.defaultdict(list))
    #: (pid, rmw client handle) -> client GID (Kilted's rmw_client_init)
    client_gid: dict = field(default_factory=dict)
    #: rmw publishers and subscriptions: (kind, pid, rmw handle) of each rmw init event, and of
    #: each rmw_publish / rmw_take
    rmw_inits: set = field(default_factory=set)
    rmw_used: set = field(default_factory=set)
    #: event name -> {field name: field class type name}, from the trace's metadata
    layouts: dict = field(default_factory=dict)

    def callback(self, node: str, symbol: str, kind: str, what: str):
        """The (pid, callback) registered in `node` with `symbol`, serving `what`."""
        found = []
        for key, sym in self.symbols.items():
            if sym != symbol or key not in self.owners:
                continue
            k, owner = self.owners[key]
            o = self.objects.get((key[0], owner))
            if k != kind or o is None or o[2] != node:
                continue
            if kind == "timer" or o[1] == what:
                found.append(key)
        return found


def _value(v):
    import bt2

    if isinstance(v, bt2._StringFieldConst):
        return str(v)
    if isinstance(v, bt2._ArrayFieldConst):
        return tuple(int(x) for x in v)
    return int(v)


_KEEP = {"rcl_node_init", "rcl_publisher_init", "rcl_subscription_init", "rcl_service_init", "rcl_client_init",
         "rcl_timer_init", "rclcpp_subscription_init", "rclcpp_subscription_callback_added",
         "rclcpp_timer_callback_added", "rclcpp_timer_link_node", "rclcpp_service_callback_added",
         "rclcpp_callback_register", "client_callback_added", "callback_start", "callback_end", "rcl_publish",
         "rmw_client_init", "rmw_send_request", "rmw_take_request", "rmw_send_response", "rmw_take_response",
         "process_init", "callback_frame", "rmw_publisher_init", "rmw_subscription_init", "rmw_publish", "rmw_take"}


def read_trace_layouts(path: Path) -> dict:
    """{event name: {field: babeltrace2 field class type}} of the ros2:* events of a trace."""
    import bt2

    out = {}
    for m in bt2.TraceCollectionMessageIterator(str(path)):
        if type(m) is bt2._EventMessageConst and m.event.name.startswith("ros2:") and m.event.name not in out:
            pf = m.event.payload_field
            out[m.event.name] = {f.name: type(f.field_class).__name__ for f in pf.cls.values()} if pf is not None else {}
    return out


def read_trace(path: Path) -> Trace:
    """The trace at `path` (a `roscope record` directory), this recording's processes only."""
    import bt2

    manifest = Path(path) / "roscope-manifest.json"
    rid = json.loads(manifest.read_text()).get("record_id") if manifest.exists() else None
    t = Trace(record_id=rid)
    rows = []
    for m in bt2.TraceCollectionMessageIterator(str(path)):
        if type(m) is bt2._DiscardedEventsMessageConst:
            t.discarded += m.count or 0
            continue
        if type(m) is not bt2._EventMessageConst:
            continue
        ev = m.event
        provider, name = ev.name.split(":", 1)
        if ev.name not in t.layouts and provider in ("ros2", "roscope_ros2"):
            t.layouts[ev.name] = {f.name: type(f.field_class).__name__ for f in ev.payload_field.cls.values()} \
                if ev.payload_field is not None else {}
        ctx = ev.common_context_field
        pid, tid = int(ctx["vpid"]), int(ctx["vtid"])
        if provider == "roscope_ros2" and name == "process_init":
            if rid is None or str(ev.payload_field["record_id"]) == rid:
                t.pids.add(pid)
        if name not in _KEEP or provider not in ("ros2", "roscope_ros2"):
            rows.append((ev.name, pid, None, None, None))
            continue
        d = {k: _value(v) for k, v in ev.payload_field.items()} if ev.payload_field is not None else {}
        rows.append((ev.name, pid, tid, int(m.default_clock_snapshot.value), d))
    stacks = collections.defaultdict(list)
    ended = {}  # (pid, tid) -> (pid, callback) of the run that ended last
    for full, pid, tid, ts, d in rows:
        if pid not in t.pids:
            continue
        t.events[full] += 1
        if d is None:
            continue
        name = full.split(":", 1)[1]
        if name == "rcl_node_init":
            t.nodes[(pid, d["node_handle"])] = node_name(d["node_name"], d["namespace"])
        elif name in ("rcl_publisher_init", "rcl_subscription_init", "rcl_service_init", "rcl_client_init"):
            kind = name[4:-5]
            h = d.get("publisher_handle") or d.get("subscription_handle") or d.get("service_handle") or d.get("client_handle")
            rmw = d.get("rmw_publisher_handle") or d.get("rmw_subscription_handle") or d.get("rmw_service_handle") \
                or d.get("rmw_client_handle")
            t.objects[(pid, h)] = (kind, d.get("topic_name") or d.get("service_name"), t.nodes.get((pid, d["node_handle"])))
            t.rmw[(pid, rmw)] = (pid, h)
        elif name == "rcl_timer_init":
            t.objects[(pid, d["timer_handle"])] = ("timer", f"{d['period'] / 1e6:g} ms", None)
        elif name == "rclcpp_timer_link_node":
            k, what, _ = t.objects[(pid, d["timer_handle"])]
            t.objects[(pid, d["timer_handle"])] = (k, what, t.nodes.get((pid, d["node_handle"])))
        elif name == "rclcpp_subscription_init":
            t.owners[("sub", pid, d["subscription"])] = d["subscription_handle"]
        elif name == "rclcpp_subscription_callback_added":
            t.owners[(pid, d["callback"])] = ("subscription", t.owners[("sub", pid, d["subscription"])])
        elif name == "rclcpp_timer_callback_added":
            t.owners[(pid, d["callback"])] = ("timer", d["timer_handle"])
        elif name == "rclcpp_service_callback_added":
            t.owners[(pid, d["callback"])] = ("service", d["service_handle"])
        elif name == "client_callback_added":
            t.owners[(pid, d["callback"])] = ("client", d["client_handle"])
        elif name == "rclcpp_callback_register":
            t.symbols[(pid, d["callback"])] = d["symbol"]
        elif name == "callback_start":
            stacks[(pid, tid)].append((d["callback"], ts))
        elif name == "callback_end":
            st = stacks[(pid, tid)]
            while st and st[-1][0] != d["callback"]:
                st.pop()
            if st:
                cb, start = st.pop()
                t.runs[(pid, cb)].append((start, ts))
                t.frames[(pid, cb)].append(None)
                ended[(pid, tid)] = (pid, cb)
        elif name == "callback_frame":
            key = ended.pop((pid, tid), None)
            if key == (pid, d["callback"]):
                t.frames[key][-1] = (d["start"], d["end"])
        elif name == "rcl_publish":
            st = stacks[(pid, tid)]
            t.pubs[(pid, d["publisher_handle"])].append((ts, st[-1][1] if st else None))
        elif name == "rmw_client_init":
            t.client_gid[(pid, d["rmw_client_handle"])] = d["gid"]
        elif name in ("rmw_publisher_init", "rmw_subscription_init"):
            kind = name[4:-5]
            t.rmw_inits.add((kind, pid, d[f"rmw_{kind}_handle"]))
        elif name == "rmw_publish":
            t.rmw_used.add(("publisher", pid, d["rmw_publisher_handle"]))
        elif name == "rmw_take":
            t.rmw_used.add(("subscription", pid, d["rmw_subscription_handle"]))
        elif name.startswith("rmw_") and ("request" in name or "response" in name):
            t.service_events[name].append({"pid": pid, "tid": tid, "ts": ts, **d})
    return t


@dataclass
class GroundTruth:
    rows: list

    def of(self, ev: str, **match) -> list[dict]:
        return [r for r in self.rows if r["ev"] == ev and all(r.get(k) == v for k, v in match.items())]

    def runs(self) -> dict:
        out = collections.defaultdict(list)
        for r in self.of("run"):
            out[(r["node"], r["cb"])].append(r)
        for v in out.values():
            v.sort(key=lambda r: r["start_ns"])
        return out

    def pids(self) -> dict:
        """process (file stem) -> pid"""
        return {r["file"]: r["pid"] for r in self.of("start")}


def publication_ids(t: Trace, gt: GroundTruth) -> dict:
    """(pid, rcl publisher handle, k from 1) -> ground-truth id, for every user topic; asserts
    the counts agree (a broken recording otherwise)."""
    out = {}
    for (pid, h), pubs in t.pubs.items():
        kind, topic, node = t.objects.get((pid, h), (None, None, None))
        if kind != "publisher":
            continue
        logged = [r for r in gt.of("pub") if r["pid"] == pid and r["topic"] == topic]
        if not logged:
            continue
        assert len(logged) == len(pubs), f"{node} {topic}: {len(logged)} publications logged, {len(pubs)} traced"
        for k, r in enumerate(logged, 1):
            out[(pid, h, k)] = r["id"]
    return out
