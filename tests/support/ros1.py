"""The ROS 1 example (examples/ros1_pipeline) as the tests run it: the tracer and the example
built, `roscope record` run, the trace decoded with babeltrace2's Python bindings (bt2) into a
model of its own (never roscope's loader) and the nodes' ground-truth logs read."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

bt2 = pytest.importorskip("bt2", reason="babeltrace2 Python bindings (python3-bt2) are needed")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ros1_pipeline"
TRACER_DIR = REPO / "instrument" / "ros1"


def build_all() -> None:
    for d in (TRACER_DIR, EXAMPLE):
        p = subprocess.run(["make", "-C", str(d)], capture_output=True, text=True)
        assert p.returncode == 0, f"building {d} failed:\n{p.stdout}\n{p.stderr}"


def roscope_record(args: list[str], timeout: float = 120, env: dict | None = None,
                   **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(REPO / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "roscope", "record", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, **kw)


def read_trace(path: Path, only_recorded: bool = True) -> tuple[list[dict], int]:
    """Events (name, ts in ns of the monotonic clock, context, payload) and the discarded count.

    LTTng records every traced process of the machine (other engineers may run ROS processes
    at the same time): with only_recorded, keep the processes whose roscope_ros1:process_init
    carries the record_id of the recording's manifest."""
    events = []
    discarded = 0
    for m in bt2.TraceCollectionMessageIterator(str(path)):
        if type(m) is bt2._DiscardedEventsMessageConst:
            discarded += m.count or 0
            continue
        if type(m) is not bt2._EventMessageConst:
            continue
        ev = m.event
        d = {"name": ev.name, "ts": int(m.default_clock_snapshot.value)}
        for fields in (ev.common_context_field, ev.payload_field):
            for k, v in fields.items():
                if isinstance(v, bt2._StringFieldConst):
                    d[k] = str(v)
                elif isinstance(v, bt2._ArrayFieldConst):
                    d[k] = [int(x) for x in v]
                else:
                    d[k] = int(v)
        events.append(d)
    events.sort(key=lambda e: e["ts"])
    manifest = Path(path) / "roscope-manifest.json"
    if only_recorded and manifest.exists():
        rid = json.loads(manifest.read_text()).get("record_id")
        pids = {e["vpid"] for e in events
                if e["name"] == "roscope_ros1:process_init" and e["record_id"] == rid}
        events = [e for e in events if e["vpid"] in pids]
    return events, discarded


def read_ground_truth(gtdir: Path) -> list[dict]:
    rows = []
    for f in sorted(gtdir.glob("*.jsonl")):
        with open(f) as fh:
            for line in fh:
                line = line.strip()
                if line:
                    r = json.loads(line)
                    r["file"] = f.stem
                    rows.append(r)
    return rows


class TraceModel:
    """Objects and message flow rebuilt from decoded roscope_ros1 events."""

    def __init__(self, events: list[dict]):
        self.events = events
        self.pubs = {}        # (pid, publisher) -> init event
        self.subs = {}        # (pid, subscription) -> init event
        self.cb_sub = {}      # (pid, callback) -> init event of subscription/timer/service
        self.cb_kind = {}     # (pid, callback) -> kind
        self.symbols = {}     # (pid, callback) -> symbol
        self.timers = {}
        self.services = {}
        tx_by_addr = {}
        rx_links = {}
        for e in events:
            pid = e["vpid"]
            n = e["name"].split(":", 1)[1]
            if n == "publisher_init":
                self.pubs[(pid, e["publisher"])] = e
            elif n == "subscription_init":
                self.subs[(pid, e["subscription"])] = e
                self.cb_sub[(pid, e["callback"])] = e
                self.cb_kind[(pid, e["callback"])] = "subscription"
            elif n == "timer_init":
                self.timers[(pid, e["timer"])] = e
                self.cb_sub[(pid, e["callback"])] = e
                self.cb_kind[(pid, e["callback"])] = "timer"
            elif n == "service_init":
                self.services[(pid, e["service"])] = e
                self.cb_sub[(pid, e["callback"])] = e
                self.cb_kind[(pid, e["callback"])] = "service"
            elif n == "callback_register":
                self.symbols[(pid, e["callback"])] = (e["kind"], e["symbol"])
            elif n == "link_tx_init":
                tx_by_addr[(e["local_addr"], e["remote_addr"])] = (pid, e["link"])
            elif n == "link_rx_init":
                rx_links[(pid, e["link"])] = (e["local_addr"], e["remote_addr"])
        # receiver link -> sender link, by the TCP 4-tuple seen from both ends
        self.peer = {}
        for k, (local, remote) in rx_links.items():
            if (remote, local) in tx_by_addr:
                self.peer[k] = tx_by_addr[(remote, local)]
        self.rx_links = rx_links

        # Replay the runtime events in time order.
        pub_count = collections.Counter()
        msg_of_id = {}        # (pid, message_id) -> (pid, publisher, k)
        last_buf = {}         # (pid, buffer) -> message
        last_obj = {}         # (pid, object) -> message
        tx_writes = collections.defaultdict(list)  # (pid, tx link) -> [message]
        rx_seen = collections.Counter()
        deser = {}            # (pid, deserializer) -> (message, via)
        self.publishes = collections.defaultdict(list)   # (pid, publisher) -> [event]
        self.runs = collections.defaultdict(list)        # (pid, callback) -> [(start, end, message, via)]
        self.unresolved_rx = []
        open_runs = {}
        for e in events:
            pid = e["vpid"]
            n = e["name"].split(":", 1)[1]
            if n == "publish":
                key = (pid, e["publisher"])
                pub_count[key] += 1
                msg = (pid, e["publisher"], pub_count[key])
                msg_of_id[(pid, e["message_id"])] = msg
                self.publishes[key].append(e)
                if e["message"]:
                    last_obj[(pid, e["message"])] = msg
            elif n == "publish_buffer":
                last_buf[(pid, e["buffer"])] = msg_of_id.get((pid, e["message_id"]))
            elif n == "link_tx_write":
                tx_writes[(pid, e["link"])].append(last_buf.get((pid, e["buffer"])))
            elif n == "link_rx_message":
                lk = (pid, e["link"])
                k = rx_seen[lk]
                rx_seen[lk] += 1
                assert e["index"] == k, "link_rx_message.index counts the link's messages"
                peer = self.peer.get(lk)
                writes = tx_writes.get(peer, [])
                msg = writes[k] if peer and k < len(writes) else None
                if msg is None:
                    self.unresolved_rx.append(e)
                last_buf[(pid, e["buffer"])] = ("rx", msg)
            elif n == "message_queue":
                src = last_buf.get((pid, e["buffer"])) if e["buffer"] else last_obj.get((pid, e["message"]))
                if isinstance(src, tuple) and src and src[0] == "rx":
                    deser[(pid, e["deserializer"])] = (src[1], "inter")
                else:
                    deser[(pid, e["deserializer"])] = (src, "intra")
            elif n == "callback_start":
                msg, via = deser.get((pid, e["deserializer"]), (None, None)) if e["deserializer"] else (None, None)
                open_runs[(pid, e["vtid"])] = (e["callback"], e["ts"], msg, via)
            elif n == "callback_end":
                cb, ts, msg, via = open_runs.pop((pid, e["vtid"]), (None, None, None, None))
                assert cb == e["callback"], "callback_start/end pair on one thread"
                self.runs[(pid, cb)].append((ts, e["ts"], msg, via))
        for (pid, _tid), (cb, ts, msg, via) in open_runs.items():
            self.runs[(pid, cb)].append((ts, None, msg, via))


def match_receptions(m: TraceModel, gt: list[dict]):
    """Resolve every subscription callback run to a publication through the trace, and compare
    its identity with the ground truth. Returns (kinds, gt_pub, gt_recv) after asserting."""
    gt_pub = collections.defaultdict(list)
    gt_recv = collections.defaultdict(list)
    for r in gt:
        if r["ev"] == "pub":
            gt_pub[(r["node"], r["topic"])].append(r["id"])
        elif r["ev"] == "recv":
            gt_recv[(r["node"], r["topic"])].append(r["id"])
    truth_fanout = collections.defaultdict(set)
    trace_fanout = collections.defaultdict(set)
    kinds = collections.Counter()
    for (pid, cb), init in m.cb_sub.items():
        if m.cb_kind[(pid, cb)] != "subscription":
            continue
        sub = (init["nh_namespace"], init["topic"])
        received = gt_recv[sub]
        runs = m.runs[(pid, cb)]
        assert len(runs) == len(received), sub
        for (start, _end, msg, via), gt_id in zip(runs, received):
            assert msg is not None, f"callback run of {sub} at {start} not matched to a publication"
            mpid, publisher, k = msg
            pinit = m.pubs[(mpid, publisher)]
            assert pinit["topic"] == init["topic"]
            traced_id = gt_pub[(pinit["nh_namespace"], pinit["topic"])][k - 1]
            assert traced_id == gt_id, f"{sub}: trace says message {traced_id}, ground truth {gt_id}"
            assert (via == "intra") == (mpid == pid)
            kinds[(via, init["topic"])] += 1
            trace_fanout[traced_id].add(sub)
            truth_fanout[gt_id].add(sub)
    assert trace_fanout == truth_fanout
    assert not m.unresolved_rx
    return kinds, gt_pub, gt_recv


def manifest_of(out: Path) -> dict:
    return json.loads((out / "roscope-manifest.json").read_text())
