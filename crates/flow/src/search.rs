//! A data-flow search run slice by slice of the model (`FlowSearch`): each slice's
//! flows handed out in chunks of the `tables` layout, what a slice lacked
//! (`Need`) returned to the caller, the paths and counts at the end.

use roscope_model::table::Table;

use crate::dataflow::{each_data_flow, FlowOptions, FlowResult, IdMap, Need};
use crate::index::Index;
use crate::model::{Kind, Model};
use crate::tables::{Collector, FlowTables};

/// Every data flow of the search as tables (see `FlowTables`); with `all_steps`,
/// the steps of every flow, else of the first flow of each path.
pub fn data_flow_tables(ix: &Index, o: &FlowOptions, all_steps: bool) -> (FlowTables, FlowResult) {
    let mut parts: Vec<Table> = Vec::new();
    let (paths, res) = stream_data_flow_tables(ix, o, all_steps, usize::MAX, &mut |t| {
        parts.push(t);
        true
    });
    let [flows, steps, segments] = <[Table; 3]>::try_from(parts).unwrap_or_else(|_| unreachable!("one chunk of each table"));
    (FlowTables { flows, steps, segments, paths }, res)
}

/// Rows of `data_flows` per chunk of `stream_data_flow_tables`.
pub const CHUNK_ROWS: usize = 1 << 16;

/// The data flows of the search as a stream of tables: `emit` receives chunks of
/// `data_flows`, `data_flow_steps` and `data_flow_segments` (about `chunk_rows`
/// flows each, in flow id order) as they are found, and returns false to stop the
/// search (`stopped_at` then says where). Returns the `paths` table, whose size
/// depends on the trace's callbacks, not on the number of flows.
pub fn stream_data_flow_tables(
    ix: &Index,
    o: &FlowOptions,
    all_steps: bool,
    chunk_rows: usize,
    emit: &mut dyn FnMut(Table) -> bool,
) -> (Table, FlowResult) {
    let mut search = FlowSearch::new(all_steps, chunk_rows);
    search.run(ix, o, IdMap::identity(), emit);
    search.finish(ix.m, emit)
}

/// A data-flow search over a model handed over in slices (docs/analyses.md,
/// "Slices"), one after another in output time order: flow and path ids, the
/// distinct segments, caps and counts carry on from slice to slice, so that slices
/// whose outputs follow each other give the tables of one search over the whole
/// model.
pub struct FlowSearch {
    c: Collector,
    all_steps: bool,
    chunk_rows: usize,
    /// The counts so far (ids in the model's terms).
    pub result: FlowResult,
    /// Whether `emit` refused a chunk (the search is over).
    pub refused: bool,
}

impl FlowSearch {
    pub fn new(all_steps: bool, chunk_rows: usize) -> Self {
        FlowSearch { c: Collector::default(), all_steps, chunk_rows: chunk_rows.max(1), result: FlowResult::default(), refused: false }
    }

    /// Searches the outputs of one slice (`o.window`; its ids map to the model's by
    /// `ids`), handing full chunks to `emit`. Returns the output (time, publication id
    /// in the model's terms) where the flows reach beyond the slice, if they do, and
    /// what the slice lacked (`Need`, node ids the model's): the next slice must start
    /// there, with those answered or reaching further back.
    pub fn run(&mut self, ix: &Index, o: &FlowOptions, ids: IdMap, emit: &mut dyn FnMut(Table) -> bool) -> Option<((i64, i64), Vec<Need>)> {
        if self.refused {
            return None;
        }
        let c = &mut self.c;
        c.ids = ids;
        if !o.window.is_all() {
            c.segments.forget_before(o.window.lo);
        }
        let (all_steps, chunk_rows) = (self.all_steps, self.chunk_rows);
        let mut ok = true;
        let res = each_data_flow(ix, o, |f| {
            c.add(ix.m, f, all_steps);
            if c.flows[0].len() >= chunk_rows {
                ok = c.chunk().into_iter().all(&mut *emit);
            }
            ok
        });
        self.refused = !ok;
        let ids = &c.ids;
        let needs = res
            .needs
            .iter()
            .map(|&n| match n {
                Need::Node(Kind::Run, r) => Need::Node(Kind::Run, ids.run(r)),
                Need::Node(k, p) => Need::Node(k, ids.publication(p)),
                other => other,
            })
            .collect();
        let uncertain = res.uncertain_at.map(|(t, p)| ((t, ids.publication(p)), needs));
        self.result.add(res, ids);
        uncertain
    }

    /// Segments found again after they were forgotten: each may be a duplicate row
    /// of `data_flow_segments` (the caller removes them when this is not 0).
    pub fn segments_unsure(&self) -> u64 {
        self.c.segments.unsure
    }

    /// Hands the last chunks to `emit` and returns the `paths` table (`m` names the
    /// callbacks and topics: any slice of the model does) and the counts.
    pub fn finish(mut self, m: &Model, emit: &mut dyn FnMut(Table) -> bool) -> (Table, FlowResult) {
        if !self.refused {
            // A refusal of the last chunk stops nothing more: the search is over.
            let _ = self.c.chunk().into_iter().all(emit);
        }
        (self.c.paths(m), self.result)
    }
}
