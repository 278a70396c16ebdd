//! Events as columns: one table per event class, built in Rust and handed to
//! Python as raw Arrow-layout buffers (no per-event objects).
//!
//! Columns of a table: `ts` (u64 ns, trace clock), `stream` (u32 index of the
//! stream file in the trace set), the packet-context fields that tell streams
//! apart (e.g. `cpu_id`), then the context fields and the payload fields.
//! Structures are flattened (`a.b`); arrays and sequences of numbers become
//! list columns; text becomes strings; variants and anything more nested
//! become JSON text.

use std::collections::HashMap;

use crate::json::{text_at, write_value};
use crate::reader::TraceSet;
use crate::stream::{skip, StreamReader, Val};
use crate::types::Ty;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    I64,
    U64,
    F64,
    Str,
    ListI64,
    ListU64,
    ListF64,
    Json,
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::I64 => "int64",
            Kind::U64 => "uint64",
            Kind::F64 => "float64",
            Kind::Str => "string",
            Kind::ListI64 => "list<int64>",
            Kind::ListU64 => "list<uint64>",
            Kind::ListF64 => "list<float64>",
            Kind::Json => "json",
        }
    }
}

/// One finished column: values (8 bytes each for numbers; UTF-8 bytes for
/// text), offsets (i64, for text and lists), validity (one byte per row, 1 =
/// valid; empty when all are valid).
pub struct Column {
    pub name: String,
    pub kind: Kind,
    pub values: Vec<u8>,
    pub offsets: Vec<i64>,
    pub validity: Vec<u8>,
}

pub struct Batch {
    pub trace: usize,
    pub event: String,
    pub rows: usize,
    pub columns: Vec<Column>,
}

/// How to fill one column from an event's tape.
#[derive(Clone)]
enum Src {
    /// A scalar or list at a position found by walking `path` of field indexes
    /// within a scope; resolved per event by walking the tape.
    Field {
        scope: u8,
        path: Vec<usize>,
    },
    Packet(usize),
}

struct ColBuilder {
    name: String,
    kind: Kind,
    src: Src,
    values: Vec<u8>,
    offsets: Vec<i64>,
    validity: Vec<u8>,
    any_null: bool,
}

impl ColBuilder {
    fn new(name: String, kind: Kind, src: Src) -> Self {
        let offsets = match kind {
            Kind::Str | Kind::Json | Kind::ListI64 | Kind::ListU64 | Kind::ListF64 => vec![0],
            _ => Vec::new(),
        };
        ColBuilder { name, kind, src, values: Vec::new(), offsets, validity: Vec::new(), any_null: false }
    }
    fn push_null(&mut self) {
        match self.kind {
            Kind::I64 | Kind::U64 | Kind::F64 => self.values.extend_from_slice(&0u64.to_le_bytes()),
            _ => {
                let last = *self.offsets.last().unwrap_or(&0);
                self.offsets.push(last);
            }
        }
        self.validity.push(0);
        self.any_null = true;
    }
    fn valid(&mut self) {
        self.validity.push(1);
    }
    fn finish(&mut self) -> Column {
        let validity = if self.any_null { std::mem::take(&mut self.validity) } else { Vec::new() };
        self.validity.clear();
        self.any_null = false;
        let reset_offsets = match self.kind {
            Kind::Str | Kind::Json | Kind::ListI64 | Kind::ListU64 | Kind::ListF64 => vec![0],
            _ => Vec::new(),
        };
        Column {
            name: self.name.clone(),
            kind: self.kind,
            values: std::mem::take(&mut self.values),
            offsets: std::mem::replace(&mut self.offsets, reset_offsets),
            validity,
        }
    }
}

struct Table {
    trace: usize,
    event: String,
    cols: Vec<ColBuilder>,
    rows: usize,
}

fn scalar_kind(ty: &Ty) -> Option<Kind> {
    match ty {
        Ty::Int(i) => Some(if i.signed { Kind::I64 } else { Kind::U64 }),
        Ty::Enum(e) => Some(if e.int.signed { Kind::I64 } else { Kind::U64 }),
        Ty::Float(_) => Some(Kind::F64),
        Ty::Str => Some(Kind::Str),
        Ty::Array { text: true, .. } | Ty::Seq { text: true, .. } => Some(Kind::Str),
        _ => None,
    }
}

fn plan_fields(ty: Option<&Ty>, scope: u8, prefix: &str, path: &mut Vec<usize>, out: &mut Vec<(String, Kind, Src)>) {
    let Some(Ty::Struct(s)) = ty else { return };
    for (k, f) in s.fields.iter().enumerate() {
        path.push(k);
        let name = if prefix.is_empty() { f.name.clone() } else { format!("{}.{}", prefix, f.name) };
        let kind = scalar_kind(&f.ty).or_else(|| match &f.ty {
            Ty::Array { elem, .. } | Ty::Seq { elem, .. } => match scalar_kind(elem) {
                Some(Kind::I64) => Some(Kind::ListI64),
                Some(Kind::U64) => Some(Kind::ListU64),
                Some(Kind::F64) => Some(Kind::ListF64),
                _ => Some(Kind::Json),
            },
            Ty::Struct(_) => None,
            _ => Some(Kind::Json),
        });
        match kind {
            Some(kind) => out.push((name, kind, Src::Field { scope, path: path.clone() })),
            None => plan_fields(Some(&f.ty), scope, &name, path, out),
        }
        path.pop();
    }
}

/// Builds columnar batches from a trace set, one table per (trace, event class).
pub struct ColumnReader {
    tables: HashMap<(usize, usize), Table>,
    wanted: Option<Vec<String>>,
    pub max_rows: usize,
    pending_rows: usize,
    json_buf: Vec<u8>,
}

impl ColumnReader {
    pub fn new(wanted: Option<Vec<String>>, max_rows: usize) -> Self {
        ColumnReader { tables: HashMap::new(), wanted, max_rows: max_rows.max(1), pending_rows: 0, json_buf: Vec::new() }
    }

    fn plan(set: &TraceSet, s: &StreamReader) -> Table {
        let md = &set.traces[s.trace].md;
        let sc = &md.streams[s.sc];
        let ec = &md.events[s.cur_class];
        let mut specs: Vec<(String, Kind, Src)> = vec![];
        for (k, (name, _)) in s.packet_fields.iter().enumerate() {
            specs.push((name.clone(), Kind::U64, Src::Packet(k)));
        }
        let mut ctx = Vec::new();
        plan_fields(sc.event_context.as_ref(), 0, "", &mut Vec::new(), &mut ctx);
        plan_fields(ec.context.as_ref(), 1, "", &mut Vec::new(), &mut ctx);
        let mut payload = Vec::new();
        plan_fields(ec.payload.as_ref(), 2, "", &mut Vec::new(), &mut payload);
        let taken: std::collections::HashSet<String> =
            payload.iter().map(|(n, _, _)| n.clone()).chain(["ts".to_string(), "stream".to_string()]).collect();
        for (n, k, src) in ctx {
            let n = if taken.contains(&n) { format!("ctx.{}", n) } else { n };
            specs.push((n, k, src));
        }
        specs.extend(payload);
        let mut cols = vec![
            ColBuilder::new("ts".into(), Kind::U64, Src::Packet(usize::MAX)),
            ColBuilder::new("stream".into(), Kind::U64, Src::Packet(usize::MAX - 1)),
        ];
        cols.extend(specs.into_iter().map(|(n, k, s)| ColBuilder::new(n, k, s)));
        Table { trace: s.trace, event: ec.name.clone(), cols, rows: 0 }
    }

    /// Adds the current event of stream `si`. Returns true when batches should
    /// be taken.
    pub fn add(&mut self, set: &TraceSet, si: usize) -> bool {
        let s = &set.streams[si];
        let key = (s.trace, s.cur_class);
        if !self.tables.contains_key(&key) {
            let md = &set.traces[s.trace].md;
            if let Some(w) = &self.wanted {
                if !w.iter().any(|n| *n == md.events[s.cur_class].name) {
                    return false;
                }
            }
            let t = Self::plan(set, s);
            self.tables.insert(key, t);
        }
        let md = &set.traces[s.trace].md;
        let sc = &md.streams[s.sc];
        let ec = &md.events[s.cur_class];
        let scopes: [(Option<&Ty>, usize); 3] =
            [(sc.event_context.as_ref(), 0), (ec.context.as_ref(), s.ctx_start), (ec.payload.as_ref(), s.payload_start)];
        let data = s.data();
        let tape = &s.tape;
        let json_buf = &mut self.json_buf;
        let t = self.tables.get_mut(&key).unwrap();
        for c in t.cols.iter_mut() {
            match &c.src {
                Src::Packet(k) => {
                    let v = match *k {
                        usize::MAX => Some(s.cur_ts),
                        x if x == usize::MAX - 1 => Some(si as u64),
                        k => s.packet_fields.get(k).map(|(_, v)| *v),
                    };
                    match v {
                        Some(v) => {
                            c.values.extend_from_slice(&v.to_le_bytes());
                            c.valid();
                        }
                        None => c.push_null(),
                    }
                }
                Src::Field { scope, path } => {
                    let (ty, start) = scopes[*scope as usize];
                    match locate(ty, path, tape, start) {
                        Some((fty, i)) => fill(c, fty, tape, i, data, json_buf),
                        None => c.push_null(),
                    }
                }
            }
        }
        t.rows += 1;
        self.pending_rows += 1;
        t.rows >= self.max_rows || self.pending_rows >= self.max_rows * 4
    }

    /// Takes every table with rows as a batch.
    pub fn take(&mut self) -> Vec<Batch> {
        let mut out = Vec::new();
        let mut keys: Vec<(usize, usize)> = self.tables.keys().copied().collect();
        keys.sort();
        for k in keys {
            let t = self.tables.get_mut(&k).unwrap();
            if t.rows == 0 {
                continue;
            }
            out.push(Batch {
                trace: t.trace,
                event: t.event.clone(),
                rows: t.rows,
                columns: t.cols.iter_mut().map(|c| c.finish()).collect(),
            });
            t.rows = 0;
        }
        self.pending_rows = 0;
        out
    }
}

/// Finds the type and tape index of the field at `path` (field indexes, one
/// per struct level) in a scope starting at tape index `start`.
fn locate<'t>(ty: Option<&'t Ty>, path: &[usize], tape: &[Val], start: usize) -> Option<(&'t Ty, usize)> {
    let mut ty = ty?;
    let mut i = start;
    for &k in path {
        let Ty::Struct(s) = ty else { return None };
        for f in &s.fields[..k] {
            skip(&f.ty, tape, &mut i);
        }
        ty = &s.fields[k].ty;
    }
    Some((ty, i))
}

fn fill(c: &mut ColBuilder, ty: &Ty, tape: &[Val], i: usize, data: &[u8], json_buf: &mut Vec<u8>) {
    match c.kind {
        Kind::I64 | Kind::U64 | Kind::F64 => {
            let bits = match tape.get(i) {
                Some(Val::U(v)) => *v,
                Some(Val::I(v)) => *v as u64,
                Some(Val::F(v)) => v.to_bits(),
                _ => return c.push_null(),
            };
            c.values.extend_from_slice(&bits.to_le_bytes());
            c.valid();
        }
        Kind::Str => {
            let j = if matches!(ty, Ty::Seq { .. }) { i + 1 } else { i };
            match tape.get(j) {
                Some(Val::Str(off, len)) => {
                    let s = text_at(data, *off, *len);
                    c.values.extend_from_slice(s.as_bytes());
                    c.offsets.push(c.values.len() as i64);
                    c.valid();
                }
                _ => c.push_null(),
            }
        }
        Kind::ListI64 | Kind::ListU64 | Kind::ListF64 => {
            let (n, first) = match ty {
                Ty::Array { len, .. } => (*len as usize, i),
                Ty::Seq { .. } => match tape.get(i) {
                    Some(Val::Len(n)) => (*n as usize, i + 1),
                    _ => return c.push_null(),
                },
                _ => return c.push_null(),
            };
            for v in &tape[first..first + n] {
                let bits = match v {
                    Val::U(x) => *x,
                    Val::I(x) => *x as u64,
                    Val::F(x) => x.to_bits(),
                    _ => 0,
                };
                c.values.extend_from_slice(&bits.to_le_bytes());
            }
            c.offsets.push((c.values.len() / 8) as i64);
            c.valid();
        }
        Kind::Json => {
            json_buf.clear();
            let mut j = i;
            write_value(json_buf, ty, tape, &mut j, data);
            c.values.extend_from_slice(json_buf);
            c.offsets.push(c.values.len() as i64);
            c.valid();
        }
    }
}
