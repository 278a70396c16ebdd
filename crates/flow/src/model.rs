//! The part of the execution model that the flow algorithms read, as columns.
//! Kinds are the schema's code tables (`roscope_model::schema`).
//!
//! Ids are row positions of the model's tables (`callback_id`, `run_id`, ...);
//! `NONE` (-1) stands for a missing reference. `Model::from_tables` (input.rs)
//! builds it from the model's tables.

/// A missing reference.
pub const NONE: i64 = -1;

pub use roscope_model::schema::{AnnotationKind, CallbackKind};

/// What a node of a flow is: a publication or a callback run (a step is
/// `(Kind, id)`; publications order before runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Pub,
    Run,
}

impl Kind {
    /// Its letter where nodes are named as text (`p<id>`, `r<id>`).
    pub fn letter(self) -> char {
        match self {
            Kind::Pub => 'p',
            Kind::Run => 'r',
        }
    }
}

/// What a part of a path's key is: a callback or a topic (`(Part, id)`; the
/// key of a data flow's path, `dataflow::path_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    Callback,
    Topic,
}

/// Whether a callback's runs are fed by a message (a transport link): a
/// subscription's, a service's (its requests) and a client's (its responses).
pub fn takes_input(kind: CallbackKind) -> bool {
    matches!(kind, CallbackKind::Subscription | CallbackKind::Service | CallbackKind::Client)
}

/// The value of a code table whose name is `s` (kinds are text in the model's tables).
pub fn parse_code<T: Copy>(all: &[T], name: fn(T) -> &'static str, s: &str) -> Option<T> {
    all.iter().copied().find(|&k| name(k) == s)
}

/// One causal-link annotation: its inputs (subscriptions) and outputs (publishers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub kind: AnnotationKind,
    pub subs: Vec<i64>,
    pub pubs: Vec<i64>,
}

/// The model, as columns.
#[derive(Default, Clone, Debug)]
pub struct Model {
    // callbacks
    pub cb_node: Vec<i64>,
    pub cb_kind: Vec<CallbackKind>,
    /// Subscription id of a subscription callback.
    pub cb_sub: Vec<i64>,
    /// Readable name of each callback: `node kind(topic)`, as in `paths.path`.
    pub cb_label: Vec<String>,
    // subscriptions
    pub sub_topic: Vec<i64>,
    pub sub_node: Vec<i64>,
    // publishers
    pub pub_topic: Vec<i64>,
    pub pub_node: Vec<i64>,
    // callback runs (any order)
    pub run_cb: Vec<i64>,
    pub run_start: Vec<i64>,
    pub run_end: Vec<i64>,
    // publications: time is the earliest publish layer's
    pub pb_publisher: Vec<i64>,
    pub pb_run: Vec<i64>,
    pub pb_ts: Vec<i64>,
    // transport links: publication -> callback run
    pub tl_pub: Vec<i64>,
    pub tl_run: Vec<i64>,
    pub annotations: Vec<Annotation>,
    /// Topic names; a topic's id is its position (names in byte order).
    pub topics: Vec<String>,
}

impl Model {
    /// The model without its instances (runs, publications, transport links): what
    /// names callbacks and topics, the same in every slice of a model.
    pub fn statics(&self) -> Model {
        Model {
            cb_node: self.cb_node.clone(),
            cb_kind: self.cb_kind.clone(),
            cb_sub: self.cb_sub.clone(),
            cb_label: self.cb_label.clone(),
            sub_topic: self.sub_topic.clone(),
            sub_node: self.sub_node.clone(),
            pub_topic: self.pub_topic.clone(),
            pub_node: self.pub_node.clone(),
            annotations: self.annotations.clone(),
            topics: self.topics.clone(),
            ..Model::default()
        }
    }

    pub fn n_topics(&self) -> usize {
        self.topics.len()
    }

    /// The topic of publication `p`, or `NONE`.
    pub fn topic_of_pub(&self, p: i64) -> i64 {
        let pu = self.pb_publisher[p as usize];
        if pu >= 0 {
            self.pub_topic[pu as usize]
        } else {
            NONE
        }
    }

    /// The node of publication `p`'s publisher, or `NONE`.
    pub fn node_of_pub(&self, p: i64) -> i64 {
        let pu = self.pb_publisher[p as usize];
        if pu >= 0 {
            self.pub_node[pu as usize]
        } else {
            NONE
        }
    }

    /// The node of run `r`'s callback, or `NONE`.
    pub fn node_of_run(&self, r: i64) -> i64 {
        let c = self.run_cb[r as usize];
        if c >= 0 {
            self.cb_node[c as usize]
        } else {
            NONE
        }
    }

    /// Time of a step: a publication's publish time, a run's start.
    pub fn time_of(&self, step: (Kind, i64)) -> i64 {
        if step.0 == Kind::Pub {
            self.pb_ts[step.1 as usize]
        } else {
            self.run_start[step.1 as usize]
        }
    }

    /// The readable name of a topic id (`?` for none).
    pub fn topic_name(&self, t: i64) -> &str {
        if t >= 0 {
            &self.topics[t as usize]
        } else {
            "?"
        }
    }
}
