"""The whole of `roscope flow --from --to` as one library call: `analyse(db,
request)` orders the steps (causal links, the data-flow search, path and component
statistics, response times) and gives DuckDB's memory back between them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope import progress, response_time
from roscope.flow.links import causal_link_table
from roscope.flow.request import FlowRequest
from roscope.flow.search import data_flows
from roscope.flow.stats import component_stats, path_stats
from roscope.memory import give_back

if TYPE_CHECKING:
    from roscope.database import Database


def analyse(db: Database, request: FlowRequest, window: tuple[int, int] | None = None) -> dict:
    """What `roscope flow` shows for `request`: {summary, causal_links (their count),
    paths (`path_stats`), components (`component_stats`), warnings (the database's,
    then the search's), losses, and with `request.definition` response_times}.
    Durations in ns. `window` (start, end) ns: the paths' statistics over the flows
    that end in it (`path_stats`).

    The causal links and the search both run over slices of the model on a long
    trace (docs/analyses.md, "Slices"). After each step that inserts many rows, the
    database takes a new connection (`Database.renew`): DuckDB gives back the memory
    those inserts left outside its buffers only when its instance closes; and after
    the search, C's malloc gives back what the search freed (`memory.give_back`)."""
    links = causal_link_table(db, store=request.store, slice_publications=request.slice_publications)
    db.renew()
    flows = data_flows(db, request)
    summary = dict(flows)
    db.renew()
    give_back()
    flow_warnings = summary.pop("warnings")
    prog = progress.current()
    prog.phase("path statistics")
    paths = path_stats(flows, window)
    prog.phase("component statistics")
    out = {"summary": summary, "causal_links": links["links"], "paths": paths,
           "components": component_stats(flows), "warnings": db.warnings + flow_warnings, "losses": db.losses}
    if request.definition:
        prog.phase("response times")
        out["response_times"] = response_time.response_times(db, request.definition, request.end, store=request.store,
                                                             flows=flows)
    return out
