"""Causal links between messages and one message's flow graph (docs/analyses.md).

- `causal_links(db)`: every causal link (direct, periodic asynchronous, partial
  synchronous, inferred) of the model in memory, as a pyarrow Table;
- `causal_link_table(db)`: the same as a `results.Result` (shown to SQL as
  `causal_links`), never held whole: over slices of the model on a long trace;
- `message_graph(db, publication_id)`: one message's flow, forward and backward
  (over the database, by its causal links, on a long trace).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope import _core, progress
from roscope.errors import InputError
from roscope.flow.request import SEARCH_MEMORY, SLICE_PUBLICATIONS, SLICE_REACH_NS
from roscope.flow.slices import ONE_SLICE, FlowContext, Reads, context, sliced
from roscope.memory import at_most
from roscope.results import Appender, publish
from roscope.trace import table_from_core

if TYPE_CHECKING:
    from roscope.database import Database


def causal_links(db: Database, ctx: FlowContext | None = None, infer: bool = True, *, store: bool = False):
    """Every causal link: a pyarrow Table (in_publication_id, in_run_id,
    out_publication_id, kind), also shown to SQL as `causal_links`. The table is
    in memory whole: on a long trace, `causal_link_table` keeps it in the database."""
    ctx = ctx or context(db)
    t = table_from_core(ctx.model.causal_links(infer))
    publish(db, {"causal_links": t}, store)
    return t


def causal_link_table(db: Database, infer: bool = True, *, store: bool = False,
                      slice_publications: int | None = SLICE_PUBLICATIONS, reach_ns: int = SLICE_REACH_NS) -> dict:
    """Every causal link, a `results.Result` (a table of the scratch file,
    `results.Appender`, or a stored table with `store`), shown to SQL as
    `causal_links`, and never held whole: over slices
    of the model on a database with more than `slice_publications` publications (as
    `data_flows`, and like it with DuckDB's budget at most `SEARCH_MEMORY`: it reads
    slices and appends, what it would keep beyond is a cache of blocks; at 136M events
    it filled flow's whole budget, the peak of `flow`). Returns {"links": count,
    "slices": what the slicing did, "result": the Result}."""
    with at_most(db.con, SEARCH_MEMORY):
        return _causal_link_table(db, infer, store, slice_publications, reach_ns)


def _causal_link_table(db: Database, infer: bool, store: bool, slice_publications: int | None, reach_ns: int) -> dict:
    in_slices = slice_publications is not None and sliced(db, slice_publications)
    prog = progress.current()
    prog.phase("causal links", unit="slices")
    with Appender(db, ["causal_links"], store) as out:
        search = _core.CausalSearch(infer)

        def sink(name: str, links: _core.ArrowTable) -> None:  # one table per slice
            out.append(name, links)
            prog.step()

        if in_slices:
            slices = search.run_slices(Reads(db), sink, slice_publications, reach_ns)
            slices.pop("rest_from")
        else:
            search.run(context(db).model, sink)
            slices = dict(ONE_SLICE)
    links = out.results["causal_links"]
    return {"links": links.count(), "slices": slices, "result": links}


def message_graph(db: Database, publication_id: int, ctx: FlowContext | None = None, forward=True, backward=True, *,
                  slice_publications: int | None = SLICE_PUBLICATIONS) -> dict:
    """One message's flow graph: publications and callback runs reached from
    `publication_id` forward and backward, the edges between them ("p<id>" /
    "r<id>"), and what each node is. With `ctx`, or on a database of at most
    `slice_publications` publications, over the flow's model in memory; else
    over the database (the causal links made over slices, `causal_link_table`,
    then the graph walked in SQL, `_graph_in_database`): the same graph in
    memory that does not grow with the trace."""
    n_pubs = db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0]
    if not 0 <= int(publication_id) < n_pubs:
        raise InputError(f"--message {publication_id}: no publication {publication_id}")
    if ctx is None and slice_publications is not None and sliced(db, slice_publications):
        links = causal_link_table(db, slice_publications=slice_publications)["result"]
        pubs, runs, edges = _graph_in_database(db, links.sql, int(publication_id), forward, backward)
    else:
        ctx = ctx or context(db)
        try:
            pubs, runs, edges = ctx.model.message_graph(int(publication_id), forward, backward)
        except ValueError as exc:
            raise InputError(f"--message {publication_id}: {exc}") from None
    info = {}
    for r in db.records("SELECT publication_id, topic, publish_ts FROM publications_info "
                        "WHERE publication_id IN (SELECT unnest(?::BIGINT[]))", [pubs]):
        info[f"p{r['publication_id']}"] = r
    for r in db.records("SELECT r.run_id, r.start_ts, r.end_ts, c.node, c.kind, c.topic FROM callback_runs r "
                        "JOIN callbacks_info c USING (callback_id) WHERE r.run_id IN (SELECT unnest(?::BIGINT[]))", [runs]):
        info[f"r{r['run_id']}"] = r
    return {"publication_id": publication_id, "publications": pubs, "runs": runs,
            "edges": [{"from": f"{a}{x}", "to": f"{b}{y}", "kind": k} for a, x, b, y, k in edges],
            "nodes": info}


#: SQL of `_graph_in_database`, over the publications `$f` of a walk's frontier
#: (`{links}`: the SQL name of the causal links' table, filled in there).
#: A node's own reception of its message is not a flow segment (crates/flow
#: graph.rs): `_OTHER_NODE` keeps a run unless its node is known and is the
#: publication's.
_FRONTIER = """
    WITH f AS (SELECT p.publication_id AS p, p.run_id AS run_of_p, u.node_id AS node
               FROM publications p LEFT JOIN publishers u USING (publisher_id)
               WHERE p.publication_id IN (SELECT unnest($f::BIGINT[])))"""
_NODE_OF_RUN = "(SELECT c.node_id FROM callback_runs cr JOIN callbacks c USING (callback_id) WHERE cr.run_id = {run})"
_OTHER_NODE = "NOT coalesce({run_node} = {pub_node}, false)"
_GRAPH_SQL = {
    # forward: the runs that took a frontier message, and the messages it caused
    "transport": _FRONTIER + f"""
        SELECT DISTINCT f.p, l.run_id FROM f JOIN links l ON l.publication_id = f.p
        WHERE l.run_id IS NOT NULL AND {_OTHER_NODE.format(run_node=_NODE_OF_RUN.format(run="l.run_id"),
                                                             pub_node="f.node")}""",
    "caused": _FRONTIER + f"""
        SELECT DISTINCT cl.in_run_id, cl.out_publication_id, cl.kind FROM f
        JOIN {{links}} cl ON cl.in_publication_id = f.p
        WHERE {_OTHER_NODE.format(run_node=_NODE_OF_RUN.format(run="cl.in_run_id"), pub_node="f.node")}""",
    # backward: the run that published a frontier message, and the messages that caused it
    "published_in": _FRONTIER + """
        SELECT f.run_of_p, f.p FROM f WHERE f.run_of_p IS NOT NULL""",
    "causes": _FRONTIER + f"""
        SELECT DISTINCT cl.in_publication_id, cl.in_run_id, cl.out_publication_id, cl.kind FROM f
        JOIN {{links}} cl ON cl.out_publication_id = f.p
        LEFT JOIN publications ip ON ip.publication_id = cl.in_publication_id
        LEFT JOIN publishers iu ON iu.publisher_id = ip.publisher_id
        WHERE {_OTHER_NODE.format(run_node=_NODE_OF_RUN.format(run="cl.in_run_id"), pub_node="iu.node_id")}""",
}


def _graph_in_database(db: Database, links: str, start: int, forward: bool, backward: bool) -> tuple[list, list, list]:
    """`_core.FlowModel.message_graph` walked over the database, frontier by
    frontier, with the causal links of table `links` (a result's SQL name):
    (publications, runs, edges as (from_kind, from, to_kind, to, kind)), each sorted."""
    def rows(name: str, frontier) -> list:
        return db.con.execute(_GRAPH_SQL[name].format(links=links), {"f": sorted(frontier)}).fetchall()

    seen_p, seen_r, edges = {start}, set(), set()
    if forward:
        frontier = {start}
        while frontier:
            for p, r in rows("transport", frontier):
                edges.add(("p", p, "r", r, "transport"))
                seen_r.add(r)
            new = set()
            for r, out, kind in rows("caused", frontier):
                edges.add(("r", r, "p", out, kind))
                seen_r.add(r)
                if out not in seen_p:
                    seen_p.add(out)
                    new.add(out)
            frontier = new
    if backward:
        frontier, seen_b = {start}, {start}
        while frontier:
            for r, p in rows("published_in", frontier):
                edges.add(("r", r, "p", p, "published_in"))
                seen_r.add(r)
            new = set()
            for inp, r, out, kind in rows("causes", frontier):
                edges.add(("r", r, "p", out, kind))
                edges.add(("p", inp, "r", r, "transport"))
                seen_r.add(r)
                seen_p.add(inp)
                if inp not in seen_b:
                    seen_b.add(inp)
                    new.add(inp)
            frontier = new
    return sorted(seen_p), sorted(seen_r), sorted(edges)
