"""The data-flow search (docs/analyses.md): data flows from input to output topics
(the data-flow paper's Algorithm 1, in Rust: `_core.FlowSearch`), grouped into
paths, each flow's latency split into communication, idle and computation.

`data_flows(db, request)` runs one `FlowRequest`: over the whole model, or slice
after slice on a long trace (`roscope.flow.slices`); the flows stream into the
database's connection (`results.Appender`) as they are found. It returns a
`DataFlows`: the summary, with the warnings the user must read, and the tables
(values of this search: `results.Result`).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roscope import _core, progress, regex, selector
from roscope.deps.matching import trace_edges
from roscope.deps.matching import warnings as deps_warnings
from roscope.errors import NoTopicMatch
from roscope.flow.request import SEARCH_MEMORY, FlowRequest
from roscope.flow.slices import ONE_SLICE, FlowContext, Reads, context, facts, pub_ts, slice_model, sliced
from roscope.memory import at_most
from roscope.overlaps import add_overlaps
from roscope.results import Appender

if TYPE_CHECKING:
    from roscope.database import Database


#: The result tables of `data_flows`.
FLOW_TABLES = ("data_flows", "data_flow_steps", "data_flow_segments", "paths")


@dataclass
class DataFlows(Mapping):
    """The result of `data_flows`: the summary (read it as a dict: `res["flows"]`,
    `res["warnings"]`) and the result tables, each a `results.Result` of this search
    alone (`results`; `sql(name)` names it in a query: a later search does not
    change it); they are also shown to users under their names on the database's
    connection (temporary views over a scratch file, `results.Appender`, or stored
    tables with `store=True`). Read one whole as a pyarrow Table through its
    attribute:

    - `data_flows`: one row per flow: flow_id, path_id, output_publication_id,
      input_publication_id, first_run_id, start_ts, end_ts, latency_ns,
      communication_ns, idle_ns, computation_ns, fallback_edges, uncertain (a race:
      `roscope.overlaps`);
    - `data_flow_steps`: flow_id, step, is_run, id: the steps of the first flow of
      each path (or of all);
    - `data_flow_segments`: kind, a, b, duration_ns: each distinct segment once;
    - `paths`: path_id, flows, path, fallback_edges.
    """

    summary: dict
    results: dict = field(repr=False)

    @property
    def db(self) -> Database:
        return self.results["data_flows"].db

    def sql(self, name: str) -> str:
        """The SQL name of this search's result table `name` (one of FLOW_TABLES)."""
        if name not in FLOW_TABLES:
            raise KeyError(name)
        return self.results[name].sql

    def table(self, name: str):
        """Result table `name` (one of FLOW_TABLES), read whole, as a pyarrow Table."""
        if name not in FLOW_TABLES:
            raise KeyError(name)
        return self.results[name].arrow()

    data_flows = property(lambda self: self.table("data_flows"))
    data_flow_steps = property(lambda self: self.table("data_flow_steps"))
    data_flow_segments = property(lambda self: self.table("data_flow_segments"))
    paths = property(lambda self: self.table("paths"))

    def tables(self) -> dict:
        return {name: self.table(name) for name in FLOW_TABLES}

    def __getitem__(self, key: str):
        return self.summary[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.summary)

    def __len__(self) -> int:
        return len(self.summary)



def _topic_mask(topics: list[str], pattern: str, option: str) -> list[bool]:
    return regex.compile(pattern, option).mask(topics)


def _exclusions(db: Database, ctx: FlowContext, exclude) -> tuple[list[bool] | None, list[bool] | None, dict]:
    """Masks of the topics (by name) and callbacks (by roscope.selector's label, `node
    topic-or-timer symbol`, so a node's name excludes its callbacks) that `exclude`
    matches, and what they are."""
    sels = [selector.Selector("callback", p, "--exclude") for p in ([exclude] if isinstance(exclude, str)
                                                                    else exclude or ())]
    if not sels:
        return None, None, {"patterns": [], "topics": [], "callbacks": []}
    by_id = selector.callback_labels(db)   # the model's callbacks are its rows 0..n-1 by callback_id
    labels = [by_id.get(i) for i in range(len(ctx.model.callback_labels))]
    ex_t = [any(s.matches(t) for s in sels) for t in ctx.topics]
    ex_c = [any(s.matches(c) for s in sels) for c in labels]
    return ex_t, ex_c, {"patterns": [s.pattern for s in sels],
                        "topics": [t for t, x in zip(ctx.topics, ex_t) if x],
                        "callbacks": [c for c, x in zip(labels, ex_c) if x]}


def _deps_edges(db: Database, deps) -> tuple[list[tuple[int, int]] | None, dict | None, list[int] | None,
                                             list[int] | None]:
    """Intra-node edges (callback ids) from a dependency file of `roscope deps` (a
    path or its parsed dict), or a list of (callback_id, callback_id); with the
    match's report, the callbacks the file matched (their nodes are the ones it
    describes: no fallback edge there) and those it cannot vouch for (they keep
    their fallback edges: the report's "unseen")."""
    if deps is None:
        return None, None, None, None
    if isinstance(deps, (list, tuple)):
        return [(int(a), int(b)) for a, b in deps], None, None, None
    edges, report = trace_edges(db, deps)
    matched = sorted({int(c) for m in report["matched"] for c in m["trace_callbacks"]})
    unseen = sorted({int(c) for u in report.get("unseen") or [] for c in u["trace_callbacks"]})
    return [(int(a), int(b)) for a, b in edges], report, matched, unseen


def data_flows(db: Database, request: FlowRequest | str, to_re: str | None = None, ctx: FlowContext | None = None,
               **options) -> DataFlows:
    """The data flows of `request` (a `FlowRequest`; or, as a shorthand, its
    `from_re` with `to_re` and its other fields as keywords).

    Flows are streamed into the database's connection as they are found (memory
    holds one chunk): `data_flows`, `data_flow_steps`, `data_flow_segments`,
    `paths` (tables of a scratch file, `results.Appender`, shown under these
    names), or stored tables with `request.store`. Returns a `DataFlows`, which
    holds them as values (`DataFlows.sql`). An (input message, output
    message) pair is one flow (the candidate with the fewest fallback edges, then
    the most steps) unless `all_paths`; when a cap is reached, the summary says
    where and its `warnings` say so.

    Without `ctx` (the whole model, read once, e.g. for several requests), a
    database with more than `request.slice_publications` publications is searched
    in slices of the model of about that many publications, each reaching
    `request.reach_ns` before and after its outputs, with what flows need beyond
    that answered from the database (or a longer reach) (docs/analyses.md,
    "Slices"): memory then depends on the slice, not on the trace, and the results
    are those of the whole search.

    DuckDB's budget is at most `SEARCH_MEMORY` meanwhile: what it would keep beyond
    is only a cache of blocks.
    """
    req = request if isinstance(request, FlowRequest) else FlowRequest(request, to_re, **options)
    with at_most(db.con, SEARCH_MEMORY):
        return _search(db, req, ctx)


@dataclass
class SearchSetup:
    """What the core's search of one request runs with over a model (`search_setup`):
    its options, the topic masks, the topics and callbacks --exclude removes (masks, and
    what they are) and the dependency file's match."""

    options: _core.SearchOptions
    is_in: list[bool]
    is_out: list[bool]
    ex_t: list[bool] | None
    ex_c: list[bool] | None
    excluded: dict
    deps_report: dict | None


def search_setup(db: Database | None, ctx: FlowContext, req: FlowRequest) -> SearchSetup:
    """The core's options for `req` over the topics and callbacks of `ctx`. NoTopicMatch when
    --from or --to matches none of the topics (a mistake; a trace without topics simply has
    no data flows). `db` (its callbacks' labels, a dependency file's match) is read only
    for --exclude and --deps: None without them."""
    topics = ctx.topics
    is_in = _topic_mask(topics, req.from_re, "--from")
    is_out = _topic_mask(topics, req.to_re, "--to")
    shown = ", ".join(topics[:20]) + (", ..." if len(topics) > 20 else "")
    if topics and not any(is_in):
        raise NoTopicMatch(f"no topic matches --from {req.from_re!r} (topics: {shown})")
    if topics and not any(is_out):
        raise NoTopicMatch(f"no topic matches --to {req.to_re!r} (topics: {shown})")
    ex_t, ex_c, excluded = _exclusions(db, ctx, req.exclude)
    edges, deps_report, deps_callbacks, deps_unseen = _deps_edges(db, req.deps)
    options = _core.SearchOptions(
        is_input=is_in, is_output=is_out, implicit=req.implicit, fallback=req.fallback, exact_links=req.exact_links,
        max_flows_per_output=req.max_flows_per_output, max_flows=req.max_flows, all_paths=req.all_paths,
        all_steps=req.all_steps, excluded_topics=ex_t, excluded_callbacks=ex_c, deps=edges,
        deps_callbacks=deps_callbacks, deps_unseen=deps_unseen, drop_uncertain=req.uncertain == "drop")
    return SearchSetup(options, is_in, is_out, ex_t, ex_c, excluded, deps_report)


def _search(db: Database, req: FlowRequest, ctx: FlowContext | None) -> DataFlows:
    """`data_flows` of `req`."""
    per_slice = req.slice_publications
    in_slices = ctx is None and per_slice is not None and sliced(db, per_slice)
    if in_slices:
        ctx = FlowContext(slice_model(db, 0, 0, 0, 0))  # callbacks and topics only
    ctx = ctx or context(db)
    topics = ctx.topics
    setup = search_setup(db, ctx, req)
    options, is_in, is_out, ex_t, ex_c = setup.options, setup.is_in, setup.is_out, setup.ex_t, setup.ex_c
    excluded, deps_report = setup.excluded, setup.deps_report
    meter = _core.Meter()
    _show_progress(db, req, topics, is_in, is_out, ex_t, ex_c, meter)
    with Appender(db, FLOW_TABLES, req.store) as out:
        def sink(name: str, table: _core.ArrowTable) -> None:
            out.append(name, table)  # DuckDB reads the core's Arrow stream: no pyarrow

        search = _core.FlowSearch(ctx.model, options, facts(db) if in_slices else None, meter=meter)
        if req.implicit != "none":  # races matter on intra-node edges only
            add_overlaps(db, search)
        if in_slices:
            slices = search.run_slices(Reads(db), sink, per_slice, req.reach_ns)
        else:
            search.run(ctx.model, sink)
            slices = dict(ONE_SLICE)
        # Segments found again after a slice forgot them: maybe twice in the table.
        slices["segments_found_again"] = unsure = search.segments_unsure
        paths, stats = search.finish(sink)
        if unsure:
            _dedupe_segments(db, out.target("data_flow_segments"))
        rest_from = slices.pop("rest_from", None)
        if rest_from is not None:  # stopped at a cap before the last slice: the outputs not searched, counted
            stats["outputs_total"] += _outputs_from(db, rest_from, topics, is_out, ex_t, ex_c)
        out.append("paths", paths)
    summary = _summary(req, stats, paths.num_rows, topics, is_in, is_out, excluded, deps_report, slices)
    summary["warnings"] = _flow_warnings(db, summary, is_in, is_out, ctx)
    return DataFlows(summary, out.results)


#: A search whose estimate (from the pace of its first outputs) exceeds this many
#: seconds is said to be huge while it runs, with how to narrow it.
HUGE_SEARCH_S = 120


def _show_progress(db: Database, req: FlowRequest, topics: list[str], is_in, is_out, ex_t, ex_c, meter) -> None:
    """The search's phase in the current progress (`roscope.progress`): output
    messages searched of all those on the --to topics, flows so far; and a watcher
    that says, in the search's first seconds, when its pace makes it huge."""
    prog = progress.current()
    total = _outputs_from(db, -(2**62), topics, is_out, ex_t, ex_c)
    prog.phase("data-flow search", total=total, unit="output messages", meter=meter, found="flows")
    if not total:
        return
    counts = dict(db.con.execute("SELECT topic, count(*) FROM publications_info WHERE topic IS NOT NULL "
                                 "GROUP BY topic").fetchall())
    to = sorted(((counts.get(t, 0), t) for t, m in zip(topics, is_out) if m), reverse=True)
    others = {t for t, i, o in zip(topics, is_in, is_out) if not i and not o}
    busy = sorted(((n, t) for t, n in counts.items() if t in others), reverse=True)[:3]
    prog.watch(lambda s: huge_search_warning(s, req, to, busy))


def huge_search_warning(s: progress.State, req: FlowRequest, to: list[tuple[int, str]], busy: list[tuple[int, str]]) -> str | None:
    """The warning of a search whose pace so far makes it huge (`HUGE_SEARCH_S`), or None."""
    if s.phase != "data-flow search" or not s.total or s.done >= s.total or s.elapsed < 1.0:
        return None
    if s.done == 0:
        if s.elapsed < 3.0:
            return None
        left = s.elapsed * s.total  # not one output in 3 s: at least this
    else:
        left = s.elapsed * (s.total - s.done) / s.done
    if left < HUGE_SEARCH_S:
        return None
    per = f"{s.work / s.done:,.0f} candidate flows per output message so far" if s.done else "no output message done yet"
    tos = ", ".join(f"{t} ({n:,})" for n, t in to[:4]) + (", ..." if len(to) > 4 else "")
    narrow = ("--exclude RE for topics or nodes no flow should pass through" +
              (f" (the busiest others: {', '.join(t for _n, t in busy)})" if busy else ""))
    cap = f"now {req.max_flows:,}" if req.max_flows else "now no cap"
    return (f"this search looks huge: {s.total:,} output messages on the --to topics {tos}, {per}; at this pace it "
            f"takes {'more than ' if s.done == 0 else 'about '}{progress.duration(left)}. Narrow it: a narrower --to "
            f"(e.g. '^{to[0][1]}$'), {narrow}, or --max-flows N to stop after N candidate flows ({cap})")


def _summary(req: FlowRequest, stats: dict, n_paths: int, topics: list[str], is_in: list[bool], is_out: list[bool],
             excluded: dict, deps_report: dict | None, slices: dict) -> dict:
    """The summary of a search (`DataFlows.summary`) from the core's statistics."""
    compute_ns = int(stats["seconds"] * 1e9)
    flows = stats["flows"]
    return {
        "outputs": stats["outputs"], "outputs_total": stats["outputs_total"], "flows": flows, "paths": n_paths,
        "compute_ns": compute_ns, "ns_per_flow": compute_ns / flows if flows else None,
        "trees_cached": stats["trees_cached"], "cache_hits": stats["cache_hits"], "cache_evicted": stats["cache_evicted"],
        "topics_from": [t for t, m in zip(topics, is_in) if m], "topics_to": [t for t, m in zip(topics, is_out) if m],
        "implicit": req.implicit, "fallback_rule": req.fallback, "one_flow_per_pair": not req.all_paths,
        "candidates": stats["candidates"], "duplicates_dropped": stats["duplicates_dropped"],
        "flows_on_fallback": stats["flows_on_fallback"],
        "fallback_share": stats["flows_on_fallback"] / flows if flows else None,
        "flows_from_publications": stats["flows_from_publications"],
        "uncertain": req.uncertain, "flows_uncertain": stats["flows_uncertain"],
        "uncertain_dropped": stats["uncertain_dropped"],
        "caps": {"max_flows_per_output": req.max_flows_per_output, "max_flows": req.max_flows,
                 "outputs_capped": stats["outputs_capped"], "capped_examples": stats["capped_examples"],
                 "stopped_at_publication_id": stats["stopped_at"]},
        "excluded": excluded, "deps": deps_report, "slices": slices,
    }


def _outputs_from(db: Database, t: int, topics: list[str], is_out: list[bool], ex_t, ex_c) -> int:
    """The output publications from time `t` on (on the --to topics, neither they nor
    the callback that made them excluded), as the search counts them."""
    out = [name for i, name in enumerate(topics) if is_out[i] and not (ex_t and ex_t[i])]
    excluded_cbs = [i for i, x in enumerate(ex_c or []) if x]
    return db.con.execute(f"""
        SELECT count(*) FROM publications p JOIN publishers u USING (publisher_id)
        LEFT JOIN callback_runs r ON r.run_id = p.run_id
        WHERE list_contains($topics, u.name) AND {pub_ts("p.")} >= $t
          AND (r.callback_id IS NULL OR NOT list_contains($cbs, r.callback_id))""",
                          {"topics": out, "t": t, "cbs": excluded_cbs}).fetchall()[0][0]


def _dedupe_segments(db: Database, table: str) -> None:
    """Keeps the first row of each segment of `table` (the SQL name of the table
    behind `data_flow_segments`: a sliced search may find a segment again after it
    forgot it)."""
    db.con.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "
                   "QUALIFY row_number() OVER (PARTITION BY kind, a, b ORDER BY rowid) > 1)")


def _pub_where(db: Database, pub: int) -> str:
    row = (db.con.execute("SELECT topic, publish_ts FROM publications_info WHERE publication_id = ?", [pub]).fetchall() or [None])[0]
    return f"publication {pub} on {row[0]} at {row[1]} ns" if row else f"publication {pub}"


def _flow_warnings(db: Database, s: dict, is_in, is_out, ctx: FlowContext) -> list[str]:
    """What the user must know to read the result: caps reached, fallback edges,
    uncertain flows (races), the dependency file's match, and why a selection
    yields nothing."""
    w = []
    caps = s["caps"]
    if caps["outputs_capped"]:
        ex = ", ".join(_pub_where(db, p) for p in caps["capped_examples"][:3])
        w.append(f"{caps['outputs_capped']:,} of {s['outputs']:,} output messages reached the cap of "
                 f"{caps['max_flows_per_output']:,} candidate flows each (e.g. {ex}): their flows are incomplete and "
                 "path statistics depend on search order; raise --max-flows-per-output, or narrow with --exclude")
    if caps["stopped_at_publication_id"] is not None:
        not_searched = s["outputs_total"] - s["outputs"]
        w.append(f"stopped at the cap of {caps['max_flows']:,} candidate flows, at "
                 f"{_pub_where(db, caps['stopped_at_publication_id'])}: "
                 f"{not_searched:,} of {s['outputs_total']:,} output messages were not searched, and the statistics cover "
                 "only the outputs before it; raise --max-flows, or narrow with --from/--to/--exclude")
    if s["flows_on_fallback"]:
        w.append(f"{s['flows_on_fallback']:,} of {s['flows']:,} flows ({s['fallback_share']:.1%}) rest on fallback "
                 "intra-node edges (nodes without annotations or a dependency file: every callback pair is assumed to "
                 "depend); such a flow may not exist. `roscope deps` finds the real ones from the sources (--deps)")
    w += _uncertain_warnings(s)
    w += deps_warnings(s["deps"])
    if s["flows"] == 0:
        w.append("no data flow: " + _why_none(db, s, is_in, is_out, ctx))
    return w


def _uncertain_warnings(s: dict) -> list[str]:
    """Flows that a race makes uncertain (`roscope.overlaps`), kept or dropped."""
    if s["flows_uncertain"]:
        return [f"{s['flows_uncertain']:,} of {s['flows']:,} flows are uncertain (flagged in data_flows.uncertain): "
                "a run of a callback they depend on overlapped, on another thread, the run that depends on it (a "
                "multi-threaded executor or spinner), so whether its write came before the read is not known from "
                "the trace; --uncertain drop leaves them out"]
    if s["uncertain_dropped"]:
        return [f"{s['uncertain_dropped']:,} uncertain flows (races: runs that overlapped on two threads) were left "
                "out (--uncertain drop)"]
    return []


def _why_none(db: Database, s: dict, is_in, is_out, ctx: FlowContext) -> str:
    """Why a selection yields no flow, from the cheapest facts first."""
    if s["outputs_total"] == 0:
        return f"no message was published on the --to topics ({', '.join(s['topics_to'][:5])})"
    ins = [t for t, m in zip(ctx.topics, is_in) if m]
    n_in = db.con.execute("SELECT count(*) FROM publications_info WHERE list_contains(?, topic)", [ins]).fetchall()[0][0]
    if n_in == 0:
        return f"no message was published on the --from topics ({', '.join(ins[:5])})"
    excl = s["excluded"]
    if excl["topics"] or excl["callbacks"]:
        return ("no chain of callbacks and topics links the --from topics to the --to topics outside what --exclude "
                "removed, or every such chain passes through an excluded topic or callback")
    return ("no chain of callback runs and messages links a --from message to a --to message: the output messages' "
            "dependencies (their publishing callbacks, those callbacks' inputs and intra-node dependencies under "
            f"--implicit {s['implicit']}) never reach a message on the --from topics before it")
