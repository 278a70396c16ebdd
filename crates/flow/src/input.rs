//! `Model::from_tables`: the flow's input, read from the execution model's tables
//! (docs/model.md) by table and column name.
//!
//! The tables may come straight from the model builder or back from a database:
//! rows may be in any order (they are put in id order), nulls stand for missing
//! references, and every reference is checked against the table it points into.

use std::collections::HashMap;
use std::fmt;

use roscope_model::schema::node_name;
use roscope_model::table::{Col, Data, Table};

use crate::model::{parse_code, Annotation, AnnotationKind, CallbackKind, Model, NONE};

/// The tables and columns the flow reads: a caller holding a database only needs
/// to hand over these.
pub const INPUTS: &[(&str, &[&str])] = &[
    ("callbacks", &["callback_id", "kind", "owner_id", "node_id"]),
    ("subscriptions", &["subscription_id", "node_id", "name"]),
    ("publishers", &["publisher_id", "node_id", "name"]),
    ("services", &["service_id", "name"]),
    ("clients", &["client_id", "name"]),
    ("nodes", &["node_id", "name", "namespace"]),
    ("callback_runs", &["run_id", "callback_id", "start_ts", "end_ts"]),
    ("publications", &["publication_id", "publisher_id", "run_id", "ts", "rclcpp_ts", "rcl_ts", "rmw_ts"]),
    ("links", &["publication_id", "run_id"]),
    ("annotations", &["annotation_id", "kind"]),
    ("annotation_members", &["annotation_id", "subscription_id", "publisher_id"]),
];

/// The model's tables do not hold what the flow needs (a table or column is
/// missing or of another type, an id is out of range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

type Result<T> = std::result::Result<T, InputError>;

fn bad<T>(msg: String) -> Result<T> {
    Err(InputError(msg))
}

/// A table with its rows in id order.
struct Tab<'a> {
    t: &'a Table,
    /// Row of each id, when rows are not already in id order.
    order: Option<Vec<usize>>,
}

impl<'a> Tab<'a> {
    fn new(tables: &'a [Table], name: &str, id: &str) -> Result<Self> {
        let Some(t) = tables.iter().find(|t| t.name == name) else {
            return bad(format!("the model has no table {}", name));
        };
        let mut tab = Tab { t, order: None };
        let ids = tab.raw_ints(id)?;
        if ids.iter().enumerate().all(|(i, &x)| x == i as i64) {
            return Ok(tab);
        }
        let mut order = vec![usize::MAX; ids.len()];
        for (row, &x) in ids.iter().enumerate() {
            if x < 0 || x as usize >= ids.len() || order[x as usize] != usize::MAX {
                return bad(format!("{}.{}: ids are not 0..{} each once (found {})", name, id, ids.len(), x));
            }
            order[x as usize] = row;
        }
        tab.order = Some(order);
        Ok(tab)
    }

    fn len(&self) -> usize {
        self.t.rows
    }

    fn col(&self, name: &str) -> Result<&'a Col> {
        match self.t.cols.iter().find(|c| c.name == name) {
            Some(c) => Ok(c),
            None => bad(format!("table {} has no column {}", self.t.name, name)),
        }
    }

    fn row(&self, i: usize) -> usize {
        self.order.as_ref().map_or(i, |o| o[i])
    }

    /// An int64 column in row order, nulls as `NONE`.
    fn raw_ints(&self, name: &str) -> Result<Vec<i64>> {
        let c = self.col(name)?;
        let Data::I64(v) = &c.data else {
            return bad(format!("{}.{} is not int64", self.t.name, name));
        };
        if v.len() != self.t.rows {
            return bad(format!("{}.{} has {} values for {} rows", self.t.name, name, v.len(), self.t.rows));
        }
        let mut out = v.clone();
        if c.any_null {
            for (x, &ok) in out.iter_mut().zip(&c.valid) {
                if ok == 0 {
                    *x = NONE;
                }
            }
        }
        Ok(out)
    }

    /// An int64 column in id order, nulls as `NONE`.
    fn ints(&self, name: &str) -> Result<Vec<i64>> {
        let v = self.raw_ints(name)?;
        Ok(match &self.order {
            None => v,
            Some(o) => o.iter().map(|&r| v[r]).collect(),
        })
    }

    /// References into a table of `n` rows: `NONE` or a valid id.
    fn refs(&self, name: &str, n: usize, target: &str) -> Result<Vec<i64>> {
        let v = self.ints(name)?;
        if let Some(&x) = v.iter().find(|&&x| x != NONE && (x < 0 || x as usize >= n)) {
            return bad(format!("{}.{} = {} is not a row of {} ({} rows)", self.t.name, name, x, target, n));
        }
        Ok(v)
    }

    /// Replaces values of `into` (id order) by the column's where it is not null.
    fn overlay(&self, name: &str, into: &mut [i64]) -> Result<()> {
        let c = self.col(name)?;
        let Data::I64(v) = &c.data else {
            return bad(format!("{}.{} is not int64", self.t.name, name));
        };
        for (i, x) in into.iter_mut().enumerate() {
            let r = self.row(i);
            if !c.any_null || c.valid[r] != 0 {
                *x = v[r];
            }
        }
        Ok(())
    }

    /// A text column in id order.
    fn strs(&self, name: &str) -> Result<Vec<Option<&'a str>>> {
        let c = self.col(name)?;
        let Data::Str(bytes, offs) = &c.data else {
            return bad(format!("{}.{} is not text", self.t.name, name));
        };
        if offs.len() != self.t.rows + 1 {
            return bad(format!("{}.{} has {} values for {} rows", self.t.name, name, offs.len().saturating_sub(1), self.t.rows));
        }
        (0..self.t.rows)
            .map(|i| {
                let r = self.row(i);
                if c.any_null && c.valid[r] == 0 {
                    return Ok(None);
                }
                let (a, b) = (offs[r] as usize, offs[r + 1] as usize);
                match bytes.get(a..b).map(std::str::from_utf8) {
                    Some(Ok(s)) => Ok(Some(s)),
                    _ => bad(format!("{}.{}: row {} is not UTF-8 text", self.t.name, name, r)),
                }
            })
            .collect()
    }
}

impl Model {
    /// The flow's input from the model's tables (see `INPUTS`).
    pub fn from_tables(tables: &[Table]) -> Result<Model> {
        let nodes = Tab::new(tables, "nodes", "node_id")?;
        let subs = Tab::new(tables, "subscriptions", "subscription_id")?;
        let pubs = Tab::new(tables, "publishers", "publisher_id")?;
        let services = Tab::new(tables, "services", "service_id")?;
        let cbs = Tab::new(tables, "callbacks", "callback_id")?;
        let runs = Tab::new(tables, "callback_runs", "run_id")?;
        let pbs = Tab::new(tables, "publications", "publication_id")?;
        let mut m = Model::default();

        // Topics: every name a publisher or a subscription gives, in byte order.
        let (sub_names, pub_names) = (subs.strs("name")?, pubs.strs("name")?);
        let mut topics: Vec<&str> = sub_names.iter().chain(&pub_names).flatten().copied().collect();
        topics.sort_unstable();
        topics.dedup();
        let tid: HashMap<&str, i64> = topics.iter().enumerate().map(|(i, &t)| (t, i as i64)).collect();
        let topic_ids = |names: &[Option<&str>]| names.iter().map(|n| n.map_or(NONE, |n| tid[n])).collect::<Vec<i64>>();
        m.sub_topic = topic_ids(&sub_names);
        m.pub_topic = topic_ids(&pub_names);
        m.topics = topics.iter().map(|t| t.to_string()).collect();
        m.sub_node = subs.refs("node_id", nodes.len(), "nodes")?;
        m.pub_node = pubs.refs("node_id", nodes.len(), "nodes")?;

        // Clients name their callbacks' services (a model without the table: unnamed).
        let clients = if tables.iter().any(|t| t.name == "clients") { Some(Tab::new(tables, "clients", "client_id")?) } else { None };
        callbacks(&mut m, &cbs, &nodes, &sub_names, &services, clients.as_ref())?;

        m.run_cb = runs.refs("callback_id", cbs.len(), "callbacks")?;
        m.run_start = runs.ints("start_ts")?;
        m.run_end = runs.ints("end_ts")?;

        m.pb_publisher = pbs.refs("publisher_id", pubs.len(), "publishers")?;
        m.pb_run = pbs.refs("run_id", runs.len(), "callback_runs")?;
        // A publication's time is its earliest layer's: rclcpp, rcl, rmw, else the first event's.
        m.pb_ts = pbs.ints("ts")?;
        for layer in ["rmw_ts", "rcl_ts", "rclcpp_ts"] {
            pbs.overlay(layer, &mut m.pb_ts)?;
        }

        transport_links(&mut m, tables, pbs.len(), runs.len())?;
        m.annotations = annotations(tables, subs.len(), pubs.len())?;
        Ok(m)
    }
}

/// Callback columns: node, kind, subscription, readable label.
fn callbacks(m: &mut Model, cbs: &Tab, nodes: &Tab, sub_names: &[Option<&str>], services: &Tab, clients: Option<&Tab>) -> Result<()> {
    let (node_names, node_ns) = (nodes.strs("name")?, nodes.strs("namespace")?);
    let node_label: Vec<Option<String>> = node_names.iter().zip(&node_ns).map(|(n, ns)| node_name(*n, *ns)).collect();
    let service_names = services.strs("name")?;
    let client_names = match clients {
        Some(c) => c.strs("name")?,
        None => Vec::new(),
    };
    let kinds = cbs.strs("kind")?;
    let owners = cbs.ints("owner_id")?;
    m.cb_node = cbs.refs("node_id", nodes.len(), "nodes")?;
    for (c, (&kind, &owner)) in kinds.iter().zip(&owners).enumerate() {
        let kind_s = kind.unwrap_or("?");
        let k = parse_code(CallbackKind::ALL, CallbackKind::name, kind_s).unwrap_or(CallbackKind::Unknown);
        let owned = |names: &[Option<&'_ str>], what: &str| -> Result<i64> {
            if owner != NONE && (owner < 0 || owner as usize >= names.len()) {
                return bad(format!("callbacks.owner_id = {} of callback {} is not a row of {}", owner, c, what));
            }
            Ok(owner)
        };
        let (sub, topic) = match kind_s {
            "subscription" => {
                let s = owned(sub_names, "subscriptions")?;
                (s, if s >= 0 { sub_names[s as usize] } else { None })
            }
            "service" => {
                let s = owned(&service_names, "services")?;
                (NONE, if s >= 0 { service_names[s as usize] } else { None })
            }
            "client" if clients.is_some() => {
                let s = owned(&client_names, "clients")?;
                (NONE, if s >= 0 { client_names[s as usize] } else { None })
            }
            _ => (NONE, None),
        };
        let node = m.cb_node[c];
        let node = if node >= 0 { node_label[node as usize].as_deref() } else { None };
        let mut label = format!("{} {}", node.unwrap_or("?"), kind_s);
        if let Some(t) = topic {
            label.push('(');
            label.push_str(t);
            label.push(')');
        }
        m.cb_kind.push(k);
        m.cb_sub.push(sub);
        m.cb_label.push(label);
    }
    Ok(())
}

/// Transport links that fed a callback run, ordered by (publication, run).
fn transport_links(m: &mut Model, tables: &[Table], npb: usize, nrun: usize) -> Result<()> {
    let Some(t) = tables.iter().find(|t| t.name == "links") else {
        return bad("the model has no table links".into());
    };
    let links = Tab { t, order: None };
    let p = links.refs("publication_id", npb, "publications")?;
    let r = links.refs("run_id", nrun, "callback_runs")?;
    let mut pairs: Vec<(i64, i64)> = p.into_iter().zip(r).filter(|&(p, r)| p >= 0 && r >= 0).collect();
    pairs.sort_unstable();
    (m.tl_pub, m.tl_run) = pairs.into_iter().unzip();
    Ok(())
}

/// Annotations of known kinds, in id order, with their resolved members.
fn annotations(tables: &[Table], nsub: usize, npub: usize) -> Result<Vec<Annotation>> {
    let ann = Tab::new(tables, "annotations", "annotation_id")?;
    let mut slot: Vec<Option<usize>> = Vec::with_capacity(ann.len());
    let mut out: Vec<Annotation> = Vec::new();
    for kind in ann.strs("kind")? {
        slot.push(kind.and_then(|k| parse_code(AnnotationKind::ALL, AnnotationKind::name, k)).map(|kind| {
            out.push(Annotation { kind, subs: Vec::new(), pubs: Vec::new() });
            out.len() - 1
        }));
    }
    let Some(t) = tables.iter().find(|t| t.name == "annotation_members") else {
        return bad("the model has no table annotation_members".into());
    };
    let members = Tab { t, order: None };
    let a = members.refs("annotation_id", ann.len(), "annotations")?;
    let s = members.refs("subscription_id", nsub, "subscriptions")?;
    let p = members.refs("publisher_id", npub, "publishers")?;
    for ((a, s), p) in a.into_iter().zip(s).zip(p) {
        let Some(k) = (if a >= 0 { slot[a as usize] } else { None }) else { continue };
        if s >= 0 {
            out[k].subs.push(s);
        }
        if p >= 0 {
            out[k].pubs.push(p);
        }
    }
    Ok(out)
}
