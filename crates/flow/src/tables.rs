//! The flow's results as tables of the schema (`roscope_model::schema`: names and
//! types of `causal_links`, `data_flows`, `data_flow_steps`, `data_flow_segments`
//! and `paths`), with kinds as the text of the schema's code tables
//! (docs/analyses.md). `NONE` (-1) stands for a missing id.

use std::collections::HashMap;

use roscope_model::schema::{self, ColType, TableSpec};
use roscope_model::table::{Col, Data, Table};

use crate::causal::CausalLink;
use crate::dataflow::{path_key, DataFlow, IdMap, SegmentSet};
use crate::model::{Kind, Model, Part, NONE};

fn text<'a>(v: impl Iterator<Item = &'a str>) -> Data {
    let (mut bytes, mut offs) = (Vec::new(), vec![0i64]);
    for s in v {
        bytes.extend_from_slice(s.as_bytes());
        offs.push(bytes.len() as i64);
    }
    Data::Str(bytes, offs)
}

/// A table of the schema (`roscope_model::schema`) from its columns' data, in the
/// schema's order; the names come from the schema, the types are checked against it.
fn table(spec: &'static TableSpec, data: Vec<Data>) -> Table {
    assert_eq!(spec.columns.len(), data.len(), "table {}: {} columns for {} in the schema", spec.name, data.len(), spec.columns.len());
    let mut rows = None;
    let cols = spec
        .columns
        .iter()
        .zip(data)
        .map(|(c, d)| {
            let n = match (&d, c.ty) {
                (Data::I64(v), ColType::BigInt) => v.len(),
                (Data::Str(_, o), ColType::Varchar) => o.len() - 1,
                _ => panic!("{}.{}: the data is not of the schema's type {}", spec.name, c.name, c.ty.sql()),
            };
            let first = *rows.get_or_insert(n);
            assert_eq!(first, n, "{}.{}: {} rows, not {}", spec.name, c.name, n, first);
            Col { name: c.name, data: d, valid: Vec::new(), any_null: false }
        })
        .collect();
    Table { name: spec.name, cols, rows: rows.unwrap_or(0) }
}

/// `causal_links`: in_publication_id, in_run_id, out_publication_id, kind.
pub fn causal_links_table(links: &[CausalLink]) -> Table {
    table(
        &schema::CAUSAL_LINKS,
        vec![
            Data::I64(links.iter().map(|l| l.in_pub).collect()),
            Data::I64(links.iter().map(|l| l.in_run).collect()),
            Data::I64(links.iter().map(|l| l.out_pub).collect()),
            text(links.iter().map(|l| l.kind.name())),
        ],
    )
}

/// The data flows of a search, as tables.
pub struct FlowTables {
    /// One row per flow (`schema::DATA_FLOWS`): flow_id, path_id,
    /// output_publication_id, input_publication_id, first_run_id, start_ts, end_ts,
    /// latency_ns, communication_ns, idle_ns, computation_ns, fallback_edges, uncertain
    /// (in this order).
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

/// A path of the flows: its callback/topic sequence (`path_key`), flow count and
/// fallback edges.
struct PathEntry(Vec<(Part, i64)>, i64, i64);

/// Collects flows into columns as they are found.
pub(crate) struct Collector {
    pub(crate) flows: [Vec<i64>; 13],
    steps: [Vec<i64>; 4],
    step_edges: Vec<&'static str>,
    next_flow: i64,
    pub(crate) segments: SegmentSet,
    path_of: HashMap<Vec<(Part, i64)>, i64>,
    /// Per path id: its key, flow count and fallback edges.
    paths: Vec<PathEntry>,
    /// What turns the ids of the slice being searched into the model's.
    pub(crate) ids: IdMap,
}

impl Default for Collector {
    fn default() -> Self {
        Collector {
            flows: Default::default(),
            steps: Default::default(),
            step_edges: Vec::new(),
            next_flow: 0,
            segments: SegmentSet::default(),
            path_of: HashMap::new(),
            paths: Vec::new(),
            ids: IdMap::identity(),
        }
    }
}

impl Collector {
    pub(crate) fn add(&mut self, m: &Model, f: DataFlow, all_steps: bool) {
        self.segments.add_mapped(m, &f, &self.ids);
        let ids = &self.ids;
        let key = path_key(m, &f);
        let next = self.paths.len() as i64;
        let pid = match self.path_of.get(&key) {
            Some(&p) => p,
            None => {
                self.path_of.insert(key.clone(), next);
                self.paths.push(PathEntry(key, 0, f.fallback_edges as i64));
                next
            }
        };
        let first_of_path = pid == next;
        self.paths[pid as usize].1 += 1;
        let k = self.next_flow;
        self.next_flow += 1;
        let first_run = if f.steps[0].0 == Kind::Run { ids.run(f.steps[0].1) } else { NONE };
        let vals = [
            k,
            pid,
            ids.publication(f.output()),
            ids.publication(f.input()),
            first_run,
            f.start,
            f.end,
            f.end - f.start,
            f.communication,
            f.idle,
            f.computation,
            f.fallback_edges as i64,
            f.uncertain as i64,
        ];
        for (c, v) in self.flows.iter_mut().zip(vals) {
            c.push(v);
        }
        if all_steps || first_of_path {
            for (j, &(kind, id)) in f.steps.iter().enumerate() {
                let id = if kind == Kind::Run { ids.run(id) } else { ids.publication(id) };
                for (c, v) in self.steps.iter_mut().zip([k, j as i64, (kind == Kind::Run) as i64, id]) {
                    c.push(v);
                }
                self.step_edges.push(f.edges[j]);
            }
        }
    }

    /// The flows, steps and segments collected since the last chunk, as tables.
    pub(crate) fn chunk(&mut self) -> [Table; 3] {
        let flows = table(&schema::DATA_FLOWS, self.flows.iter_mut().map(|c| Data::I64(std::mem::take(c))).collect());
        let mut cols: Vec<Data> = self.steps.iter_mut().map(|c| Data::I64(std::mem::take(c))).collect();
        cols.push(text(std::mem::take(&mut self.step_edges).into_iter()));
        let steps = table(&schema::DATA_FLOW_STEPS, cols);
        let segs = std::mem::take(&mut self.segments.segments);
        let segments = table(
            &schema::DATA_FLOW_SEGMENTS,
            vec![
                text(segs.iter().map(|s| s.kind.name())),
                Data::I64(segs.iter().map(|s| s.a).collect()),
                Data::I64(segs.iter().map(|s| s.b).collect()),
                Data::I64(segs.iter().map(|s| s.duration).collect()),
            ],
        );
        [flows, steps, segments]
    }

    /// The paths table.
    pub(crate) fn paths(&self, m: &Model) -> Table {
        let labels: Vec<String> = self.paths.iter().map(|p| path_label(m, &p.0)).collect();
        table(
            &schema::PATHS,
            vec![
                Data::I64((0..self.paths.len() as i64).collect()),
                Data::I64(self.paths.iter().map(|p| p.1).collect()),
                text(labels.iter().map(|s| s.as_str())),
                Data::I64(self.paths.iter().map(|p| p.2).collect()),
            ],
        )
    }
}

/// A path's readable name: `node kind(topic) -> [topic] -> ...`.
pub fn path_label(m: &Model, key: &[(Part, i64)]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|&(k, id)| match k {
            Part::Callback if id >= 0 => m.cb_label[id as usize].clone(),
            Part::Callback => "?".to_string(),
            _ => format!("[{}]", m.topic_name(id)),
        })
        .collect();
    parts.join(" -> ")
}
