"""The watched paths of a live session (`roscope watch --from/--to`, `--deadline`;
docs/watch.md, "Alerts"): their data flows, searched as the records come, each output
once.

`LiveFlows.add` hands each chunk's runs, publications and links to the core
(`_core.FlowInput`: held there, nothing per record in Python, no database), which
forgets them once older than a search reaches. `LiveFlows.check(since, until)`
searches the flows of the outputs published in [since, until) only (the core's
`FlowSearch` with a `Window` on its outputs; the model whole otherwise, as
`roscope flow` sees a trace), over the flow's model of the records from `REACH_NS`
before `since` on: the same records, and so the same flows, as a search of every
record held that keeps the flows ending in [since, until), at a cost that follows the
new outputs, not the window. A check in which no publisher of a path's --to topics
published builds no model. The flows found are kept (their route, times and latency:
a few per output message) until `prune`; each window's path entries come from them
(`entries`: per route, the latencies of the flows ending in the window, and misses)
without searching again.
"""
from __future__ import annotations

from bisect import bisect_left

from roscope import _core, regex
from roscope.errors import NoTopicMatch
from roscope.flow.search import search_setup
from roscope.flow.slices import FlowContext

#: How far before the first output a check searches reaches (ns): a flow that ends in
#: the check's range and started up to this much earlier is found whole (a longer one
#: is not checked).
REACH_NS = 2_000_000_000

#: The object tables the flow's model reads (`_core.FlowModel.inputs()`): a change of
#: one of them changes the topics, callbacks and the options of the searches.
_OBJECTS = {name for name, _cols in _core.FlowModel.inputs()} - {"callback_runs", "publications", "links"}
#: The columns of a search's `data_flows` and `paths` a watch keeps.
_FLOW_COLUMNS = ["path_id", "start_ts", "end_ts", "latency_ns"]


class LiveFlows:
    """The flows of the watched paths (`roscope.live.WatchedPath`) of one live session."""

    def __init__(self, paths: list):
        self.paths = list(paths)
        self.input = _core.FlowInput()
        #: The object tables as `_core.LiveModel.changed_objects` last gave them, by name.
        self._objects: dict = {}
        self._stale = False
        #: Per path: whether its topics are seen (`_topics`) and the publishers on its --to topics.
        self.matched = [False] * len(self.paths)
        self._outputs: list[list[int]] = [[] for _ in self.paths]
        #: Per path: route -> an id stable across checks (in the order found), and its
        #: flows kept, in check order: (end_ts, start_ts, latency_ns, route id).
        self._routes: list[dict[str, int]] = [{} for _ in self.paths]
        self.flows: list[list[tuple[int, int, int, int]]] = [[] for _ in self.paths]

    def add(self, records) -> None:
        """The records of one chunk (`_core.LiveModel.feed`'s (name, table))."""
        for name, t in records:
            self.input.add(name, t)

    def objects(self, changed) -> None:
        """The object tables that changed (`_core.LiveModel.changed_objects`)."""
        for name, t in changed:
            if name in _OBJECTS:
                self._objects[name] = t
                self._stale = True

    def _topics(self) -> FlowContext:
        """For the objects known now: which paths' topics are seen (`matched`: as
        `roscope.flow.data_flows` refuses a --from or --to no topic matches, and a trace
        without topics has no flows) and the publishers on each path's --to topics (a
        check searches a path only when one of them published)."""
        topics = _core.FlowInput().model(self._objects).topics
        pubs = _core.table_rows(self._objects["publishers"], ["publisher_id", "name"]) if "publishers" in self._objects else []
        for k, p in enumerate(self.paths):
            is_in = regex.compile(p.request.from_re, "--from").mask(topics)
            is_out = regex.compile(p.request.to_re, "--to").mask(topics)
            self.matched[k] = not topics or (any(is_in) and any(is_out))
            out = {t for t, m in zip(topics, is_out) if m}
            self._outputs[k] = sorted(i for i, n in pubs if n in out)
        self._stale = False

    def check(self, since: int, until: int, first: int) -> list[dict]:
        """Searches the flows of each path's outputs published in [since, until) (over the
        records from `REACH_NS` before `since` on) and keeps them; returns the deadline
        misses among them, per path, oldest first."""
        self.input.forget_before(since - REACH_NS)
        if not self._objects:
            return []
        if self._stale:
            self._topics()
        todo = [k for k in range(len(self.paths))
                if self.matched[k] and self.input.published(since, until, self._outputs[k])]
        if not todo:
            return []
        ctx = FlowContext(self.input.model(self._objects))
        misses = []
        for k in todo:
            p = self.paths[k]
            found = self._search(ctx, p.request, since, until)
            if found is None:
                continue
            kept = self._keep(k, *found)
            if p.deadline_ns is not None:
                names = {i: r for r, i in self._routes[k].items()}
                late = sorted((e, s, n, r) for e, s, n, r in kept if n > p.deadline_ns and since <= e < until)
                misses += [{"path": p.name, "deadline_ns": p.deadline_ns, "start_ns": s, "end_ns": e, "latency_ns": n,
                            "route": names[r], "end_s": (e - first) / 1e9} for e, s, n, r in late]
        return misses

    def _search(self, ctx: FlowContext, req, since: int, until: int):
        """(flows as (path_id, start_ts, end_ts, latency_ns), paths as (path_id, path)) of
        `req` for the outputs in [since, until), or None when its topics are not seen yet.
        As `roscope.flow.data_flows` runs one request (the same options, races,
        dependency file), over the model whole."""
        try:
            setup = search_setup(None, ctx, req)   # a watched path has no --exclude or --deps: no database read
        except NoTopicMatch:
            return None
        search = _core.FlowSearch(ctx.model, setup.options, None)
        if req.implicit != "none" and "callbacks" in self._objects:   # races matter on intra-node edges only
            for runs in self.input.races(self._objects["callbacks"]):
                search.add_overlaps(runs)
        flows: list[tuple] = []

        def sink(name: str, table) -> None:
            if name == "data_flows":
                flows.extend(_core.table_rows(table, _FLOW_COLUMNS))
        search.run(ctx.model, sink, outputs=(since, until))
        paths, _stats = search.finish(sink)
        return flows, _core.table_rows(paths, ["path_id", "path"])

    def _keep(self, k: int, flows: list[tuple], paths: list[tuple]) -> list[tuple[int, int, int, int]]:
        """Keeps path k's flows of one check, their routes under stable ids; returns them."""
        mine = self._routes[k]
        local = {}
        for pid, route in paths:
            local[pid] = mine.setdefault(route, len(mine))
        kept = [(e, s, n, local[pid]) for pid, s, e, n in flows]
        self.flows[k] += kept
        return kept

    def entries(self, bounds: list[tuple[int, int]]) -> dict[int, list[dict]]:
        """Per path whose topics are seen, its entry in each window of `bounds`: per route,
        the latencies of the flows that end in the window (sorted; `roscope.live` computes
        their statistics as `path_stats` does) and the misses of its deadline; routes by
        flows, most first."""
        out = {}
        for k, p in enumerate(self.paths):
            if not self.matched[k]:
                continue
            flows = sorted(self.flows[k])
            ends = [f[0] for f in flows]
            names = {i: r for r, i in self._routes[k].items()}
            per = []
            for lo, hi in bounds:
                routes: dict[int, list[int]] = {}
                for _e, _s, n, r in flows[bisect_left(ends, lo):bisect_left(ends, hi)]:
                    routes.setdefault(r, []).append(n)
                rows = []
                for r, xs in sorted(routes.items(), key=lambda x: (-len(x[1]), x[0])):
                    xs.sort()
                    rows.append({"route": names[r], "flows": len(xs), "latencies": xs,
                                 "misses": None if p.deadline_ns is None else sum(x > p.deadline_ns for x in xs)})
                per.append({"path": p.name, "deadline_ns": p.deadline_ns, "routes": rows})
            out[k] = per
        return out

    def prune(self, keep: int) -> None:
        """Forgets the flows that end before `keep` (no later window counts them)."""
        for k, flows in enumerate(self.flows):
            if flows and min(f[0] for f in flows) < keep:
                self.flows[k] = [f for f in flows if f[0] >= keep]

