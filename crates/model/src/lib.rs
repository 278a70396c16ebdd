//! roscope-model: one pass over the merged events of a trace set builds the
//! execution model of docs/model.md: objects (hosts, processes, threads,
//! nodes, publishers, subscriptions, timers, services, clients, callbacks)
//! and instances (callback runs, publications, takes, transport links,
//! executor states, annotations, lost-event gaps).
//!
//! Where things are:
//! - `schema`: every table, column and code table of the database, once;
//! - `events`: the trace events the model reads, and their fields by name;
//! - `builder`: the pass over the events (processes and threads with pid
//!   reuse, callback run stacks, progress), dispatching each event to its
//!   family: `ros2`, `services` (ROS 2 services and actions), `caret`,
//!   `executor`, `groups` (CARET's executors and callback groups),
//!   `annotations`, `ros1_bosch`, `ros1_roscope`;
//! - `registry`: handle lookups per process instance, with lifetimes;
//! - `objects`: the records kept while reading;
//! - `link`: transport links (publication -> take / callback run);
//! - `tables` (emitting them) and `table` (column builders).
//!
//! Objects are keyed by (process instance, handle) with lifetimes: an init
//! event for a handle that is already known starts a new object (the address
//! was reused after the old object died); process instances are keyed by
//! (host, pid) and split when the pid is reused.

mod annotations;
mod builder;
mod caret;
pub mod clock;
mod emit;
pub mod events;
mod executor;
mod groups;
pub mod kernel;
pub mod link;
mod objects;
mod registry;
mod ros1_bosch;
mod ros1_roscope;
mod ros2;
pub mod rows;
pub mod schema;
mod services;
mod state_dump;
pub mod stats;
mod sync;
pub mod table;

pub use builder::{build, build_streaming, Builder};
pub use roscope_ctf::meter::Meter;
pub use sync::{build_streaming_synced, clock_pass, needs_clock_pass, Synced};
use table::Table;

#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Make heuristic links (flagged) where no exact method applies.
    pub heuristics: bool,
    /// Show progress on stderr (for terminals).
    pub progress: bool,
    /// Synchronize the clocks of several hosts from the messages between them
    /// (`sync.rs`); off: every host keeps its raw clock.
    pub sync: bool,
    /// Streaming build (`build_streaming`): records older than this (ns of
    /// trace time) that nothing will change leave memory as table chunks.
    pub window_ns: Option<u64>,
    /// Streaming build: emit every this many events (0: the default, 2^16).
    pub flush_every: u64,
}

/// Which processes of a trace belong to the recording: `roscope record` names
/// its recording, and each process it traces says so in
/// `roscope_ros1:process_init(record_id)`. An LTTng session records every
/// instrumented process of the machine, so with record ids given, processes
/// that announce another recording (or an empty one) are left out, and so are
/// processes that emit `roscope_ros1` events without a `process_init` in the
/// trace (they started before the recording's session, so it did not start
/// them); processes without roscope's tracer (no `roscope_ros1` events) stay.
/// Both are counted in the stats and in one warning per reason.
///
/// `attach` (a recording of a running system, `roscope record --attach`): a
/// process whose `process_init` comes in a state dump (it was running when the
/// session started) belongs to the recording whatever record id it names, as
/// does one that names none; only processes that name another recording's
/// id are left out, and a `roscope_ros1` event before a process's
/// `process_init` does not leave it out (its dump may come a moment later).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub record_ids: Vec<String>,
    pub attach: bool,
}

pub struct Model {
    pub tables: Vec<Table>,
    pub stats: Vec<(String, i64)>,
    /// What the reader should know about the model, e.g. processes left out
    /// of the recording (`Scope`); shown like the trace's warnings.
    pub warnings: Vec<String>,
}

impl Model {
    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}
