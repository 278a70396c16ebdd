"""The preloaded ROS 1 tracer traces ROS processes only (issue 29).

`roscope record` preloads instrument/ros1's libroscope_ros1.so into every process of the
launch. It must initialise LTTng-UST (register with the session daemon and start its
listener threads, named `<process>-ust`) only in processes that load roscpp or import
rospy: not in the shells, sleeps and other helpers a launch script runs.

The recording here: a launch script heavy on shells (subshells, `sleep`, `true`, `seq`,
`timeout`) that starts examples/ros1_manipulation (rosmaster and four rospy nodes) and,
on the same master, the roscpp `drivers` node of examples/ros1_unannotated, under
`roscope record --kernel`. The oracle is perf's record of the machine (`perf script
--show-task-events`): its FORK records give the process tree of the recorded command
(manifest `child.pid`), its COMM records every thread's names (LTTng-UST names its
listener threads `<name>-ust`). Every process of the tree with such threads must be one
the trace shows traced (a `roscope_ros1:process_init` of this recording, read with
babeltrace2), and every traced ROS node must have them and its events.
"""
from __future__ import annotations

import collections
import json
import re
import shutil
import socket
import subprocess

import pytest

from tests.support.ros1 import REPO, read_trace, roscope_record

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]

MANIP = REPO / "examples" / "ros1_manipulation"
UNANN = REPO / "examples" / "ros1_unannotated"

_FORK = re.compile(r"PERF_RECORD_FORK\((-?\d+):(-?\d+)\):\((-?\d+):(-?\d+)\)")
_COMM = re.compile(r"PERF_RECORD_COMM(?: exec)?: (.*):(-?\d+)/(-?\d+)$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed")
    for d in (REPO / "instrument" / "ros1", MANIP, UNANN):
        p = subprocess.run(["make", "-C", str(d)], capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
    d = tmp_path_factory.mktemp("preload")
    out, gt = d / "trace", d / "gt"
    gt.mkdir()
    port = free_port()
    script = (
        f"export ROSCOPE_MASTER_PORT={port} ROSCOPE_GT_DIR={gt} ROS_LOG_DIR={d}/ros-log; "
        "for i in $(seq 20); do (sleep 0.01; /bin/true) & done; wait; "
        # drivers starts once the master answers (under load the master can take seconds)
        f"timeout -s INT 6 {MANIP / 'system.sh'} & s=$!; sleep 1; "
        f"for i in $(seq 100); do (: </dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.1; done; "
        f"ROS_MASTER_URI=http://127.0.0.1:{port} ROS_IP=127.0.0.1 timeout -s INT 3 {UNANN / 'build' / 'drivers'} & c=$!; "
        "for i in $(seq 30); do sleep 0.05; /bin/true; done; wait $c; wait $s; exit 0")
    p = roscope_record(["-o", str(out), "--kernel", "--", "bash", "-c", script], timeout=180)
    assert p.returncode == 0, p.stderr
    return out


def perf_tree(out) -> tuple[set[int], dict[int, list[str]], dict[int, set[str]]]:
    """From `perf script`: the processes of the recorded command's tree (FORK records from
    the manifest's child pid), every name each process had (COMM records; its threads'
    included), and per process the names of its threads ending in -ust."""
    root = json.loads((out / "roscope-manifest.json").read_text())["child"]["pid"]
    text = subprocess.run(["perf", "script", "--show-task-events", "--ns", "-i", str(out / "perf" / "perf.data"),
                           "-F", "pid,tid,time,event"], capture_output=True, text=True, check=True).stdout
    tree, names, ust = {root}, collections.defaultdict(list), collections.defaultdict(set)
    for line in text.splitlines():
        if (f := _FORK.search(line)) and int(f[3]) in tree:
            tree.add(int(f[1]))
        elif c := _COMM.search(line):
            name, pid = c[1], int(c[2])
            if pid in tree:
                names[pid].append(name)
                if name.endswith("-ust"):
                    ust[pid].add(name)
    return tree, dict(names), dict(ust)


def test_only_ros_processes_start_lttng_ust(recording):
    out = recording
    events, _ = read_trace(out)  # this recording's processes (process_init with its record id)
    traced = {e["vpid"]: e["exe"].rsplit("/", 1)[-1] for e in events if e["name"] == "roscope_ros1:process_init"}
    nodes = {e["vpid"]: e["node_name"] for e in events if e["name"] == "roscope_ros1:node_init"}
    runs = collections.Counter(e["vpid"] for e in events if e["name"] == "roscope_ros1:callback_start")
    tree, names, ust = perf_tree(out)

    # The ROS nodes: the four rospy nodes and the roscpp drivers, each traced, with callbacks.
    assert sorted(nodes.values()) == ["/arm_controller", "/arm_planner", "/arm_sim", "/arm_state_publisher", "/drivers"], nodes
    assert set(nodes) <= set(traced) and set(nodes) <= tree
    # every node traced with its callbacks (how many it runs in the few seconds depends on the load:
    # under load average 10, /arm_planner ran under 10)
    assert all(runs[p] > 0 for p in nodes), {nodes[p]: runs[p] for p in nodes}
    # ... and they started LTTng-UST's threads.
    assert set(nodes) <= set(ust), {nodes[p]: ust.get(p) for p in nodes}
    # The launch's other processes (never a Python program, rosmaster or a node binary:
    # shells, their subshells, sleep, true, seq, timeout): many, none traced, none with
    # LTTng-UST's threads.
    ros_names = ("python", "rosmaster", "drivers")
    others = {p for p in tree if not any(n.startswith(ros_names) for n in names.get(p, []))}
    progs = collections.Counter(n for p in others for n in set(names.get(p, [])))
    assert len(others) >= 60 and progs["sleep"] >= 40 and progs["true"] >= 40 and progs["bash"] >= 1, progs
    assert not others & set(traced), sorted((p, names.get(p)) for p in others & set(traced))[:10]
    assert not others & set(ust), sorted((p, names.get(p), ust[p]) for p in others & set(ust))[:10]
    # Whatever has LTTng-UST's threads is traced: the nodes, and rosmaster (it imports rospy).
    assert set(ust) <= set(traced) and set(traced) - set(nodes) <= {p for p in traced if traced[p].startswith("python")}
