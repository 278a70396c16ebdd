//! The flow's results as tables (the same `Table` type as the model's), with kinds
//! as readable text: `causal_links`, `data_flows`, `data_flow_steps`,
//! `data_flow_segments` and `paths` (docs/analyses.md).

use std::collections::HashMap;

use roscope_model::table::{Col, Data, Table};

use crate::causal::CausalLink;
use crate::dataflow::{each_data_flow, path_key, DataFlow, FlowOptions, FlowResult, SegmentSet};
use crate::index::Index;
use crate::model::{Model, NONE};

fn col(name: &'static str, v: Vec<i64>) -> Col {
    Col { name, data: Data::I64(v), valid: Vec::new(), any_null: false }
}

/// An int64 column where `NONE` is null.
fn col_opt(name: &'static str, v: Vec<i64>) -> Col {
    let any_null = v.contains(&NONE);
    let valid = if any_null { v.iter().map(|&x| (x != NONE) as u8).collect() } else { Vec::new() };
    Col { name, data: Data::I64(v), valid, any_null }
}

fn col_text<'a>(name: &'static str, v: impl Iterator<Item = &'a str>) -> Col {
    let (mut bytes, mut offs) = (Vec::new(), vec![0i64]);
    for s in v {
        bytes.extend_from_slice(s.as_bytes());
        offs.push(bytes.len() as i64);
    }
    Col { name, data: Data::Str(bytes, offs), valid: Vec::new(), any_null: false }
}

fn table(name: &'static str, cols: Vec<Col>) -> Table {
    let rows = match cols.first().map(|c| &c.data) {
        Some(Data::I64(v)) => v.len(),
        Some(Data::Str(_, o)) => o.len() - 1,
        _ => 0,
    };
    Table { name, cols, rows }
}

/// `causal_links`: in_publication_id, in_run_id, out_publication_id, kind.
pub fn causal_links_table(links: &[CausalLink]) -> Table {
    table(
        "causal_links",
        vec![
            col("in_publication_id", links.iter().map(|l| l.in_pub).collect()),
            col("in_run_id", links.iter().map(|l| l.in_run).collect()),
            col("out_publication_id", links.iter().map(|l| l.out_pub).collect()),
            col_text("kind", links.iter().map(|l| l.kind.name())),
        ],
    )
}

/// The data flows of a search, as tables.
pub struct FlowTables {
    /// One row per flow: flow_id, path_id, output_publication_id,
    /// input_publication_id, first_run_id, start_ts, end_ts, latency_ns,
    /// communication_ns, idle_ns, computation_ns.
    pub flows: Table,
    /// flow_id, step, is_run (1: a callback run, 0: a publication), id: the steps of
    /// the first flow of each path (or of every flow).
    pub steps: Table,
    /// kind (communication, computation, idle), a, b, duration_ns: each distinct
    /// segment of all flows once.
    pub segments: Table,
    /// path_id, flows, path: each path's callback/topic sequence, readable.
    pub paths: Table,
}

/// Collects flows into columns as they are found.
#[derive(Default)]
struct Collector {
    flows: [Vec<i64>; 11],
    steps: [Vec<i64>; 4],
    segments: SegmentSet,
    path_of: HashMap<Vec<(char, i64)>, i64>,
    /// Per path id: its key and flow count.
    paths: Vec<(Vec<(char, i64)>, i64)>,
}

impl Collector {
    fn add(&mut self, m: &Model, f: DataFlow, all_steps: bool) {
        self.segments.add(m, &f);
        let key = path_key(m, &f);
        let next = self.paths.len() as i64;
        let pid = match self.path_of.get(&key) {
            Some(&p) => p,
            None => {
                self.path_of.insert(key.clone(), next);
                self.paths.push((key, 0));
                next
            }
        };
        let first_of_path = pid == next;
        self.paths[pid as usize].1 += 1;
        let k = self.flows[0].len() as i64;
        let first_run = if f.steps[0].0 == 'r' { f.steps[0].1 } else { NONE };
        let input_pub = f.steps.get(1).filter(|s| s.0 == 'p').map_or(NONE, |s| s.1);
        let vals = [
            k,
            pid,
            f.steps.last().map_or(NONE, |s| s.1),
            input_pub,
            first_run,
            f.start,
            f.end,
            f.end - f.start,
            f.communication,
            f.idle,
            f.computation,
        ];
        for (c, v) in self.flows.iter_mut().zip(vals) {
            c.push(v);
        }
        if all_steps || first_of_path {
            for (j, &(kind, id)) in f.steps.iter().enumerate() {
                for (c, v) in self.steps.iter_mut().zip([k, j as i64, (kind == 'r') as i64, id]) {
                    c.push(v);
                }
            }
        }
    }

    fn finish(self, m: &Model) -> FlowTables {
        let [flow_id, path_id, out_pub, in_pub, first_run, start, end, latency, com, idle, calc] = self.flows;
        let flows = table(
            "data_flows",
            vec![
                col("flow_id", flow_id),
                col("path_id", path_id),
                col("output_publication_id", out_pub),
                col_opt("input_publication_id", in_pub),
                col_opt("first_run_id", first_run),
                col("start_ts", start),
                col("end_ts", end),
                col("latency_ns", latency),
                col("communication_ns", com),
                col("idle_ns", idle),
                col("computation_ns", calc),
            ],
        );
        let [s_flow, s_step, s_is_run, s_id] = self.steps;
        let steps = table("data_flow_steps", vec![col("flow_id", s_flow), col("step", s_step), col("is_run", s_is_run), col("id", s_id)]);
        let segs = self.segments.segments;
        let segments = table(
            "data_flow_segments",
            vec![
                col_text("kind", segs.iter().map(|s| s.kind.name())),
                col("a", segs.iter().map(|s| s.a).collect()),
                col_opt("b", segs.iter().map(|s| s.b).collect()),
                col("duration_ns", segs.iter().map(|s| s.duration).collect()),
            ],
        );
        let labels: Vec<String> = self.paths.iter().map(|(key, _)| path_label(m, key)).collect();
        let paths = table(
            "paths",
            vec![
                col("path_id", (0..self.paths.len() as i64).collect()),
                col("flows", self.paths.iter().map(|p| p.1).collect()),
                col_text("path", labels.iter().map(|s| s.as_str())),
            ],
        );
        FlowTables { flows, steps, segments, paths }
    }
}

/// A path's readable name: `node kind(topic) -> [topic] -> ...`.
pub fn path_label(m: &Model, key: &[(char, i64)]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|&(k, id)| match k {
            'c' if id >= 0 => m.cb_label[id as usize].clone(),
            'c' => "?".to_string(),
            _ => format!("[{}]", m.topic_name(id)),
        })
        .collect();
    parts.join(" -> ")
}

/// Every data flow of the search as tables (see `FlowTables`); with `all_steps`,
/// the steps of every flow, else of the first flow of each path.
pub fn data_flow_tables(ix: &Index, o: &FlowOptions, all_steps: bool) -> (FlowTables, FlowResult) {
    let mut c = Collector::default();
    let res = each_data_flow(ix, o, |f| c.add(ix.m, f, all_steps));
    (c.finish(ix.m), res)
}
