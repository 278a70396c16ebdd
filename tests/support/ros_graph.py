"""The ROS graph of a ROS 2 trace as babeltrace2 reads it: the independent oracle of
the report's automatic sources and sinks (roscope.report.pairs) and of what the
report says about the trace's annotations.

Nothing here uses roscope. Objects are keyed by (vpid, handle): handles are
addresses, unique within a process only.

    g = read("/path/to/trace")
    g.sources_and_sinks()   # the documented rule, on babeltrace2's events

read() decodes a trace once per test session (the Autoware trace's 684k events take
babeltrace2 tens of seconds): the Graph it returns is shared, read-only.
"""
from __future__ import annotations

import collections
import functools
import os
import re
from dataclasses import dataclass, field

import bt2

#: docs/report.md: never sources or sinks; transforms never sources.
INFRA = re.compile(r"^/(rosout|rosout_agg|parameter_events|clock)$|^/caret/")
NOT_SOURCES = re.compile(r"(^|/)tf(_static)?$")
PUBLISH_EVENTS = ("rcl_publish", "rclcpp_intra_publish")


@dataclass
class Graph:
    nodes: dict = field(default_factory=dict)  # (vpid, node handle) -> full node name
    publishers: dict = field(default_factory=dict)  # (vpid, publisher handle) -> ((vpid, node handle), topic)
    subscriptions: list = field(default_factory=list)  # ((vpid, node handle), topic)
    published: collections.Counter = field(default_factory=collections.Counter)  # ((vpid, node handle), topic) -> messages
    events: collections.Counter = field(default_factory=collections.Counter)  # event name -> count

    def topic_messages(self) -> collections.Counter:
        out: collections.Counter = collections.Counter()
        for (_node, topic), n in self.published.items():
            out[topic] += n
        return out

    def sources_and_sinks(self) -> tuple[set[str], set[str], set[str]]:
        """(sources, sinks, left out as both) by the rule of docs/report.md."""
        live = {(n, t) for (n, t), k in self.published.items() if k and not INFRA.search(t)}
        traffic = {t for _n, t in live}
        inputs = collections.defaultdict(set)
        for n, t in self.subscriptions:
            if t in traffic:
                inputs[n].add(t)
        outputs = collections.defaultdict(set)
        for n, t in live:
            outputs[n].add(t)
        starts = {t for t in traffic if all(not (inputs[n] - {t}) for n, u in live if u == t)}
        ends = {t for t in traffic
                if not any(outputs[n] - {t} for n, u in self.subscriptions if u == t)}
        both = starts & ends
        return {t for t in starts - both if not NOT_SOURCES.search(t)}, ends - both, both


def read(path) -> Graph:
    """The graph of the trace at `path` (shared: do not change it)."""
    return _read(os.path.abspath(str(path)))


@functools.cache
def _read(path: str) -> Graph:
    g = Graph()
    for msg in bt2.TraceCollectionMessageIterator(str(path)):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        g.events[ev.name] += 1
        provider, _, name = ev.name.partition(":")
        if provider not in ("ros2", "ros2_caret"):  # CARET's hooks emit the init events as ros2_caret:*
            continue
        ctx = ev.common_context_field
        pid = int(ctx["vpid"]) if ctx is not None and "vpid" in ctx else 0
        p = ev.payload_field
        if name == "rcl_node_init":
            ns, name = str(p["namespace"]), str(p["node_name"])
            g.nodes[(pid, int(p["node_handle"]))] = ("/" + name.lstrip("/")) if ns in ("", "/") else ns.rstrip("/") + "/" + name
        elif name == "rcl_publisher_init":
            g.publishers[(pid, int(p["publisher_handle"]))] = ((pid, int(p["node_handle"])), str(p["topic_name"]))
        elif name == "rcl_subscription_init":
            g.subscriptions.append(((pid, int(p["node_handle"])), str(p["topic_name"])))
        elif name in PUBLISH_EVENTS:
            pub = g.publishers.get((pid, int(p["publisher_handle"])))
            if pub is not None:
                g.published[pub] += 1
    return g
