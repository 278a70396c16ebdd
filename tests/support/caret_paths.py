"""The response times of the CARET end-to-end trace's path, computed from babeltrace2's events alone
(test_response_time.py's docstring states the definitions): roscope's documented cases (`_oracle`)
and CARET 0.7.3's (`_caret_073`); test_response_time and test_caret_architecture compare with them."""
from __future__ import annotations

import collections

import pytest

bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle")


def _events(path):
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            ev = msg.event
            yield (msg.default_clock_snapshot.ns_from_origin, ev.name, int(ev.common_context_field["vtid"]),
                   {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v)) for k, v in ev.payload_field.items()})


def _oracle(path: str, source: str) -> dict:
    """(output stamp, case) -> sorted [(input stamp, response_ns)] of the path from `source`
    (/topic3, or /topic1 through two direct nodes before it), from the events alone."""
    return _cases(*_outputs(path, source))


def _outputs(path: str, source: str) -> tuple[list, list]:
    """The path's inputs (publications on `source`, by time) and its outputs: (end, output
    stamp, newest input) per /topic4 message the actuator took, by end (its callback start)."""
    pub_topic, sub_topic, sub_of, cb_topic, node_of_handle, cb_node, timer_cb = {}, {}, {}, {}, {}, {}, set()
    sub_node, timer_node = {}, {}
    runs = {}  # vtid -> (callback, start, input stamp)
    pending_dispatch = {}  # vtid -> (callback, stamp)
    last_pub = {}  # vtid -> publication dict (for dds_bind_addr_to_stamp)
    pubs, sub_runs = [], []
    for ts, name, tid, f in _events(path):
        if name == "ros2:rcl_node_init":
            node_of_handle[f["node_handle"]] = f["node_name"]
        elif name == "ros2:rcl_publisher_init":
            pub_topic[f["publisher_handle"]] = f["topic_name"]
        elif name == "ros2:rcl_subscription_init":
            sub_topic[f["subscription_handle"]] = f["topic_name"]
            sub_node[f["subscription_handle"]] = node_of_handle.get(f["node_handle"])
        elif name == "ros2:rclcpp_subscription_init":
            sub_of[f["subscription"]] = f["subscription_handle"]
        elif name == "ros2:rclcpp_subscription_callback_added":
            h = sub_of[f["subscription"]]
            cb_topic[f["callback"]], cb_node[f["callback"]] = sub_topic[h], sub_node[h]
        elif name == "ros2:rclcpp_timer_callback_added":
            timer_cb.add(f["callback"])
            timer_node[f["timer_handle"]] = f["callback"]
        elif name == "ros2:rclcpp_timer_link_node":
            cb_node[timer_node[f["timer_handle"]]] = node_of_handle.get(f["node_handle"])
        elif name == "ros2:dispatch_subscription_callback":
            pending_dispatch[tid] = (f["callback"], f["source_stamp"])
        elif name == "ros2:callback_start":
            d = pending_dispatch.pop(tid, None)
            runs[tid] = (f["callback"], ts, d[1] if d and d[0] == f["callback"] else None)
        elif name == "ros2:callback_end":
            cb, start, stamp = runs.pop(tid, (None, None, None))
            if cb == f["callback"]:
                sub_runs.append({"cb": cb, "start": start, "end": ts, "stamp": stamp})
        elif name == "ros2:rclcpp_publish":
            run = runs.get(tid)
            p = {"topic": pub_topic.get(f["publisher_handle"]), "ts": ts, "message": f["message"], "stamp": None,
                 "run_cb": run[0] if run else None, "run_start": run[1] if run else None,
                 "run_input": run[2] if run else None}
            pubs.append(p)
            last_pub[tid] = p
        elif name == "ros2_caret:dds_bind_addr_to_addr":  # Fast DDS: the message's serialized copy
            p = last_pub.get(tid)
            if p and p["message"] == f["addr_from"]:
                p["message"] = f["addr_to"]
        elif name == "ros2_caret:dds_bind_addr_to_stamp":
            p = last_pub.get(tid)
            if p and p["message"] == f["addr"] and p["stamp"] is None:
                p["stamp"] = f["source_stamp"]
    by_stamp = {p["stamp"]: p for p in pubs if p["stamp"] is not None}
    upstream = {"/topic4": "/topic3", "/topic3": "/topic2", "/topic2": "/topic1"}

    def latest_input(cb, t):
        """The input of `cb`'s latest run that started before `t` and ended by then."""
        done = [r for r in sub_runs if r["cb"] == cb and r["start"] < t and r["end"] <= t]
        return by_stamp.get(max(done, key=lambda r: r["start"])["stamp"]) if done else None

    def back_to_source(p):
        """Upstream along the path: a run's own input when it is the upstream topic's
        message (direct), else the newest input the node's subscription to the upstream
        topic cached before the run started (timer_driven's timer, message_driven's /drive
        callback)."""
        while p is not None and p["topic"] != source:
            up = upstream[p["topic"]]
            own = by_stamp.get(p["run_input"])
            if own is not None and own["topic"] == up:
                p = own
                continue
            cache = next(c for c, t in cb_topic.items() if t == up and cb_node[c] == cb_node[p["run_cb"]])
            p = latest_input(cache, p["run_start"])
        return p

    actuator_start = {r["stamp"]: r["start"] for r in sub_runs if cb_topic.get(r["cb"]) == "/topic4"}
    outputs = sorted((p for p in pubs if p["topic"] == "/topic4" and p["run_cb"] in timer_cb and p["stamp"] in actuator_start),
                     key=lambda p: actuator_start[p["stamp"]])
    ins = sorted((p for p in pubs if p["topic"] == source), key=lambda p: p["ts"])
    found = [(actuator_start[o["stamp"]], o["stamp"], back_to_source(o)) for o in outputs]
    return ins, [f for f in found if f[2] is not None]


def _cases(ins: list, outputs: list) -> dict:
    """The cases by roscope's documented definition: each output's cycle."""
    out = collections.defaultdict(list)
    prev = None
    for end, key, newest in outputs:
        cycle = [i for i in ins if i["ts"] <= newest["ts"] and (i is newest or (prev is not None and i["ts"] > prev["ts"]))]
        out[(key, "best")].append((newest["stamp"], end - newest["ts"]))
        out[(key, "all")] += [(i["stamp"], end - i["ts"]) for i in cycle]
        oldest = min(cycle, key=lambda i: i["ts"])
        out[(key, "worst")].append((oldest["stamp"], end - oldest["ts"]))
        if prev is not None:
            out[(key, "worst_with_external")].append((prev["stamp"], end - prev["ts"]))
        prev = newest
    return {k: sorted(v) for k, v in out.items()}


def _caret_073(ins: list, outputs: list) -> dict:
    """CARET 0.7.3's response-time cases, as its documentation and its ResponseTime describe
    them, computed here from the path's records: one record per input, ending at the callback
    start of the first output it reached, where an input that reached none (dropped, or
    overwritten in a node's cache) is delayed to the first output a later input reached; an
    input after the last output has no record. The records that end at the earliest end (the
    first output, whose oldest input may precede the trace) are left out. Then per end:
    best from its newest input, worst from its oldest; all: every record.
    -> case -> sorted response times (ns)."""
    records = []
    for i in ins:
        ends = [end for end, _, newest in outputs if newest["ts"] >= i["ts"]]
        if ends:
            records.append((i["ts"], min(ends)))
    first = min(end for _, end in records)
    records = [(s, e) for s, e in records if e != first]
    by_end = collections.defaultdict(list)
    for s, e in records:
        by_end[e].append(s)
    return {"best": sorted(e - max(ss) for e, ss in by_end.items()),
            "worst": sorted(e - min(ss) for e, ss in by_end.items()),
            "all": sorted(e - s for s, e in records)}
