"""Which data flows the report analyses: the --from/--to pairs given, or the
sources and sinks found automatically.

`flow_requests(db, given)` is the one place the report's flow pairs come from: a
paths file (`--paths FILE`, named end-to-end paths) replaces the automatic pairs by
handing its requests in as `given`.

Sources and sinks are found at the level of nodes, as the default implicit
dependencies of `roscope flow` (every callback of a node may feed every other):

- a *source* is a topic whose publishers subscribe to no other topic with
  traffic;
- a *sink* is a topic with traffic that no node subscribing to it republishes on
  another topic.

Only topics with publications count. ROS and tool infrastructure (`INFRA`:
/rosout, /parameter_events, CARET's /caret/*, /clock) is neither: it is left out of
the graph altogether. Transforms (`NOT_SOURCES`: /tf, /tf_static, also under a
namespace) are inputs of many nodes but never the start of a flow. A topic that
would be both a source and a sink (published by a node without inputs, republished
by none of its subscribers; a transform too) carries no flow from one node to
another: it is neither, and the page lists it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roscope.flow import FlowRequest

if TYPE_CHECKING:
    from roscope.database import Database

#: Topics of ROS and of the tools, never sources or sinks (and not part of the node graph).
INFRA = re.compile(r"^/(rosout|rosout_agg|parameter_events|clock)$|^/caret/")
#: Topics that are never sources (they may be sinks): transforms, at the root or in a namespace.
NOT_SOURCES = re.compile(r"(^|/)tf(_static)?$")


@dataclass
class AutoPairs:
    """What the automatic search found (for the page to say it)."""

    sources: list[str] = field(default_factory=list)
    sinks: list[str] = field(default_factory=list)
    isolated: list[str] = field(default_factory=list)  # would be both: left out of both
    infra: list[str] = field(default_factory=list)  # topics with traffic left out as infrastructure


def infrastructure(topic: str) -> bool:
    return bool(INFRA.search(topic))


def auto_pairs(db: Database) -> AutoPairs:
    """Sources and sinks of the node graph of `db` (module docstring)."""
    live = db.con.execute("""SELECT DISTINCT topic, node_id FROM publications_info
                             WHERE topic IS NOT NULL AND node_id IS NOT NULL""").fetchall()
    subs = db.con.execute("SELECT DISTINCT node_id, name FROM subscriptions WHERE node_id IS NOT NULL AND name IS NOT NULL").fetchall()
    found = AutoPairs(infra=sorted({t for t, _ in live if infrastructure(t)}))
    live = [(t, n) for t, n in live if not infrastructure(t)]
    with_traffic = {t for t, _ in live}
    inputs: dict[int, set[str]] = {}  # node -> topics with traffic it subscribes to
    for n, t in subs:
        if t in with_traffic:
            inputs.setdefault(n, set()).add(t)
    outputs: dict[int, set[str]] = {}  # node -> topics it published
    for t, n in live:
        outputs.setdefault(n, set()).add(t)
    publishers: dict[str, set[int]] = {}
    for t, n in live:
        publishers.setdefault(t, set()).add(n)
    subscribers: dict[str, set[int]] = {}
    for n, ts in inputs.items():
        for t in ts:
            subscribers.setdefault(t, set()).add(n)
    starts = {t for t, ns in publishers.items() if all(not (inputs.get(n, set()) - {t}) for n in ns)}
    ends = {t for t in with_traffic if not any(outputs.get(n, set()) - {t} for n in subscribers.get(t, ()))}
    both = starts & ends
    found.sources = sorted(t for t in starts - both if not NOT_SOURCES.search(t))
    found.sinks, found.isolated = sorted(ends - both), sorted(both)
    return found


def exact_regex(topics: list[str]) -> str:
    return "^(" + "|".join(re.escape(t) for t in topics) + ")$"


def flow_requests(db: Database, given: list[FlowRequest]) -> tuple[list[FlowRequest], AutoPairs | None]:
    """The requests of the data-flow section: `given` when there are any (from
    --from/--to, or a paths file), else one request from every source to every sink
    found automatically (none when either side is empty), with what was found."""
    if given:
        return list(given), None
    found = auto_pairs(db)
    if not found.sources or not found.sinks:
        return [], found
    return [FlowRequest(exact_regex(found.sources), exact_regex(found.sinks))], found
