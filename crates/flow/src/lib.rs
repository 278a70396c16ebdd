//! roscope-flow: message flows and end-to-end latency over the execution model.
//!
//! - `Model::from_tables`: the flow's input, read from the model's tables
//!   (`roscope_model::table::Table`, as built or read back from a database).
//! - `causal_links`: which published messages caused which (message-flow paper IV-B):
//!   direct (published during the subscription callback run that received the input),
//!   periodic asynchronous and partial synchronous (from user annotations), and
//!   inferred (no annotation: the data-flow paper's implicit intra-node edges, under the
//!   policy of `Policy`).
//! - `message_graph`: one message's flow, forward and backward (message-flow paper IV-C).
//! - `data_flows`: dependency trees built backward from output publications (data-flow
//!   paper, Algorithm 1: newest inputs, visited set, at most two consecutive callbacks,
//!   subtree caching), paths grouped by their callback/topic sequence, each flow's
//!   latency split into communication, idle and computation.
//! - `tables`: the results as tables, kinds as text; `search`: a search slice by
//!   slice of the model (`FlowSearch`); `slices`: the slice driver, which plans the
//!   slices and hands them to a search (`over_slices`, over a `SliceSource`).
//!
//! Ids are row positions of the model's tables; `NONE` (-1) is "none".

pub mod causal;
pub mod dataflow;
pub mod graph;
pub mod implicit;
pub mod index;
pub mod input;
pub mod model;
pub mod options;
pub mod races;
pub mod search;
pub mod slices;
pub mod tables;

#[cfg(test)]
mod tests;

pub use causal::{causal_links, causal_links_in, CausalLink, CausalLinkKind, CausalState, Policy};
pub use dataflow::{
    data_flows, each_data_flow, path_key, segments, DataFlow, EdgeSource, FlowOptions, FlowResult, IdMap, ImplicitEdges, Need, Segment,
    SegmentKind, SegmentSet, Window,
};
pub use graph::{message_graph, Graph};
pub use implicit::{implicit_edges, implicit_edges_from, implicit_edges_with, Deps, Facts, FallbackRule, Implicit};
pub use index::Index;
pub use input::{InputError, INPUTS};
pub use model::{Annotation, AnnotationKind, CallbackKind, Kind, Model, Part, NONE};
pub use options::{search_options, SearchSpec};
pub use races::OverlapSweep;
pub use search::{data_flow_tables, stream_data_flow_tables, FlowSearch, CHUNK_ROWS};
pub use slices::{
    causal_links_of_slice, over_slices, Beyond, BlockRows, Blocks, Counts, History, Ranges, SliceError, SliceSearch, SliceSource,
    SliceStats, SlicedFlowSearch,
};
pub use tables::{causal_links_table, path_label, FlowTables};
