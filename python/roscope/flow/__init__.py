"""Message flows and end-to-end latency over the execution database (docs/analyses.md).

- `FlowRequest`: what one data-flow analysis is asked for (`request.py`);
- `analyse(db, request)`: everything `roscope flow` shows, the steps in order
  (`analysis.py`);
- `causal_links(db)`, `causal_link_table(db)`: direct, annotated (periodic
  asynchronous, partial synchronous) and inferred causal links between messages;
  `message_graph(db, publication_id)`: one message's flow, forward and backward
  (`links.py`);
- `data_flows(db, request)`: data flows from input to output topics (data-flow
  paper, Algorithm 1), grouped into paths, with the latency of each split into
  communication, idle and computation (`search.py`);
- `path_stats(flows)` and `component_stats(flows)` summarize them (`stats.py`);
- the flow's model, whole (`context`) or slice by slice on a long trace
  (`slices.py`).

The algorithms run in Rust (`crates/flow`), fed with the model's tables as Arrow
data. Each analysis returns its results as values (`roscope.results.Result`; a
search's are held by its `DataFlows`), which later analyses do not change; they are
also shown to SQL on the database's connection under their table names
(`causal_links`, `data_flows`, `data_flow_steps`, `data_flow_segments`, `paths`)
without writing into the database; with `store=True` they are stored as tables in
it (the database must be open for writing: `roscope.open(path, read_only=False)`).
"""
from roscope.flow.analysis import analyse
from roscope.flow.links import causal_link_table, causal_links, message_graph
from roscope.flow.request import (
    FALLBACK_RULE,
    FALLBACK_RULES,
    FLOW_MEMORY,
    IMPLICIT_MODES,
    MAX_FLOWS,
    MAX_FLOWS_PER_OUTPUT,
    SLICE_PUBLICATIONS,
    SLICE_REACH_NS,
    UNCERTAIN_MODES,
    FlowRequest,
)
from roscope.flow.search import FLOW_TABLES, DataFlows, data_flows
from roscope.flow.slices import FlowContext, context, sliced
from roscope.flow.stats import COMPONENT_SOURCES, COMPONENTS, PATH_SOURCE, component_stats, path_stats, sources

__all__ = [
    "COMPONENTS", "COMPONENT_SOURCES", "FALLBACK_RULE", "FALLBACK_RULES", "FLOW_MEMORY", "FLOW_TABLES", "IMPLICIT_MODES",
    "MAX_FLOWS", "MAX_FLOWS_PER_OUTPUT", "PATH_SOURCE", "SLICE_PUBLICATIONS", "SLICE_REACH_NS", "UNCERTAIN_MODES", "DataFlows",
    "FlowContext", "FlowRequest", "analyse", "causal_link_table", "causal_links", "component_stats", "context",
    "data_flows", "message_graph", "path_stats", "sliced", "sources",
]
