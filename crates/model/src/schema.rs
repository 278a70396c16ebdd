//! The schema of the execution database, declared once: every table (the
//! model's, the one `roscope load` adds, and the analyses' outputs), its
//! columns with their types and meaning, and every code table (the values a
//! text column takes, with their integer codes and meaning).
//!
//! The model builder makes its tables from these specs (`Table::new`);
//! `to_json()` hands them to Python (`roscope._core.schema()`), and
//! `markdown()` is the generated part of docs/model.md (a test keeps the two
//! equal).

/// A column's type, as DuckDB stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    /// 64-bit signed integer (ids, timestamps in ns, counts, flags).
    BigInt,
    /// 64-bit unsigned integer (handles and addresses, as in the trace).
    UBigInt,
    /// 64-bit float.
    Double,
    /// UTF-8 text.
    Varchar,
    /// 128-bit signed integer (DuckDB's type of some sums).
    HugeInt,
}

impl ColType {
    pub const fn sql(self) -> &'static str {
        match self {
            ColType::BigInt => "BIGINT",
            ColType::UBigInt => "UBIGINT",
            ColType::Double => "DOUBLE",
            ColType::Varchar => "VARCHAR",
            ColType::HugeInt => "HUGEINT",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub ty: ColType,
    pub doc: &'static str,
}

/// Who makes a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The model builder (this crate), from the trace.
    Model,
    /// `roscope load`, beside the model's tables.
    Load,
    /// An analysis (python/roscope/flow.py over crates/flow), when asked to store its results.
    Analysis,
}

impl Origin {
    pub const fn name(self) -> &'static str {
        match self {
            Origin::Model => "model",
            Origin::Load => "load",
            Origin::Analysis => "analysis",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct TableSpec {
    pub name: &'static str,
    pub origin: Origin,
    pub doc: &'static str,
    pub columns: &'static [ColumnSpec],
}

impl TableSpec {
    pub fn column(&self, name: &str) -> Option<&ColumnSpec> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// One value of a code table.
#[derive(Clone, Copy, Debug)]
pub struct Code {
    pub code: i64,
    pub name: &'static str,
    pub doc: &'static str,
}

/// The values a text column takes (`used_in`: `table.column`), with the
/// integer code each has where the Rust core and Python exchange it.
#[derive(Clone, Copy, Debug)]
pub struct CodeTable {
    pub name: &'static str,
    pub doc: &'static str,
    pub used_in: &'static [&'static str],
    pub values: &'static [Code],
}

macro_rules! codes {
    ($(#[$m:meta])* pub enum $ty:ident = $table:literal, $doc:literal, used in [$($used:literal),*] {
        $( $variant:ident = $code:literal, $name:literal, $vdoc:literal; )*
    }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $ty {
            $( $variant = $code, )*
        }

        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),*];
            pub const TABLE: CodeTable = CodeTable {
                name: $table,
                doc: $doc,
                used_in: &[$($used),*],
                values: &[$(Code { code: $code, name: $name, doc: $vdoc }),*],
            };
            /// The value as stored in the database.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $ty::$variant => $name, )*
                }
            }
            /// The integer code exchanged between the Rust core and Python.
            pub const fn code(self) -> i64 {
                self as i64
            }
        }
    };
}

codes! {
    /// What a callback belongs to.
    pub enum CallbackKind = "callback_kind", "What a callback belongs to.", used in ["callbacks.kind", "callback_group_members.kind"] {
        Timer = 0, "timer", "a timer's callback (`owner_id` is a `timers` row)";
        Subscription = 1, "subscription", "a subscription's callback (`owner_id` is a `subscriptions` row)";
        Service = 2, "service", "a service's callback (`owner_id` is a `services` row)";
        Client = 3, "client", "a client's callback (`owner_id` is a `clients` row)";
        Unknown = 4, "unknown", "seen only at run time: its registration was not recorded";
    }
}

codes! {
    /// How a transport link was found, in order of preference.
    pub enum LinkMethod = "link_method", "How a transport link was found (see Transport links).", used in ["links.method"] {
        RmwTimestamp = 0, "rmw_timestamp",
            "`rmw_publish.timestamp` = `rmw_take.source_timestamp`, within a topic (Jazzy on)";
        CaretSourceStamp = 1, "caret_source_stamp",
            "a source stamp from CARET on either side: `dds_bind_addr_to_stamp.source_stamp` (publisher's thread, after the publish) \
             or `dispatch_subscription_callback.source_stamp`, equal to the other side's stamp, within a topic";
        IntraRingBuffer = 2, "intra_ring_buffer",
            "`rclcpp_intra_publish` -> `ring_buffer_enqueue(buffer, index)` -> `ring_buffer_dequeue(buffer, index)` (Iron on)";
        IntraMessage = 3, "intra_message",
            "`rclcpp_intra_publish.message` = `dispatch_intra_process_subscription_callback.message`, in one process (CARET, Galactic)";
        Ros1Roscope = 4, "ros1_roscope",
            "roscope's ROS 1 tracer: the publication written at the same position of the same TCP connection \
             (`link_tx_write` / `link_rx_message`, matched by the connection's addresses), or in-process (no-copy) delivery";
        HeuristicWallClock = 5, "heuristic_wall_clock",
            "no stamp on the publish side: the publication on the topic, on the same host, whose `rmw_ts` + clock offset is \
             nearest the take's `source_timestamp`, within 5 ms; `heuristic` = 1";
        DdsWriteStamp = 6, "dds_write_stamp",
            "the DDS layer's `dds:write.timestamp` on the publisher's thread (its `data`, or Fast DDS's `write_pre.data`, is \
             the published message; the message-flow paper's DDS instrumentation) = `rmw_take.source_timestamp`, within a topic";
        ServiceGid = 7, "service_gid_sequence",
            "a service request or response (`service_calls`): the client's GID and the sequence number, from \
             `rmw_send_request` / `rmw_take_request` and `rmw_send_response` / `rmw_take_response` (Kilted's rmw); a response \
             goes with its request's call";
        ServiceSequence = 8, "service_sequence",
            "a service request or response with no client GID on the server's side (roscope's rclpy hook on Jazzy): the \
             service name and sequence number, sent by one client only";
        ServiceNearest = 9, "service_sequence_nearest",
            "as `service_sequence`, but several clients sent that sequence number to that service: the latest request sent \
             before the take; `heuristic` = 1";
    }
}

codes! {
    /// Why a message caused another (crates/flow).
    pub enum CausalLinkKind = "causal_link_kind", "Why an input message caused an output message.", used in ["causal_links.kind"] {
        Direct = 0, "direct", "published by the subscription callback run that received the input";
        PeriodicAsync = 1, "periodic_async",
            "annotated periodic asynchronous link: a timer callback publishes from the latest inputs its node's subscriptions cached";
        PartialSync = 2, "partial_sync",
            "annotated partial synchronous link: published once every input of a group arrived";
        Inferred = 3, "inferred",
            "not annotated: a timer callback's publication, caused by the latest completed run of each subscription callback of its node";
    }
}

codes! {
    /// The parts an end-to-end latency is split into (crates/flow).
    pub enum SegmentKind = "segment_kind", "The parts a data flow's latency is split into.", used in ["data_flow_segments.kind"] {
        Communication = 0, "communication", "from a publication to the start of the callback run it fed";
        Computation = 1, "computation", "from the start of a run to a publication made in it, or the run's duration";
        Idle = 2, "idle", "from the end of a run to the start of the next run of its node on the flow (an implicit dependency)";
    }
}

codes! {
    /// Causal-link annotations (instrument/annotations).
    pub enum AnnotationKind = "annotation_kind", "The kind of a causal-link annotation.", used in ["annotations.kind"] {
        PeriodicAsync = 0, "periodic_async", "`message_link_periodic_async(subs, pubs)`: the publishers publish periodically from the subscriptions' latest messages";
        PartialSync = 1, "partial_sync", "`message_link_partial_sync(subs, pubs)`: the publishers publish once each subscription received a message";
    }
}

codes! {
    /// The role of an annotation member.
    pub enum AnnotationRole = "annotation_role", "What an annotation member is.", used in ["annotation_members.role"] {
        Subscription = 0, "subscription", "an input (`subs` of the annotation)";
        Publisher = 1, "publisher", "an output (`pubs` of the annotation)";
    }
}

codes! {
    /// What an executor thread is doing (rclcpp executor events).
    pub enum ExecutorState = "executor_state", "What an executor thread is doing.", used in ["executor_states.state"] {
        Waiting = 0, "waiting", "from `rclcpp_executor_wait_for_work`, or from the end of an execution to the next executor event (a multi-threaded executor's threads share one wait): waiting for work";
        Selecting = 1, "selecting", "from `rclcpp_executor_get_next_ready`: choosing what to execute";
        Executing = 2, "executing", "from `rclcpp_executor_execute` (or an outermost callback's start in another state: a waitable) to the thread's last event inside it (its callback's end): executing the entity `handle`";
    }
}

codes! {
    /// A thread's scheduling state (kernel sched events, python/roscope/kernel.py).
    pub enum ThreadState = "thread_state", "A thread's scheduling state, from the kernel's sched events.", used in ["thread_states.state"] {
        Running = 0, "running", "on a CPU (`cpu`), from being switched in to being switched out";
        Runnable = 1, "runnable", "ready but not on a CPU: preempted (switched out while runnable) or woken, until switched in; `cpu` is the CPU it then ran on";
        Blocked = 2, "blocked", "switched out while not runnable (sleeping, waiting for I/O or a lock) until woken";
    }
}

/// Every code table.
pub const CODE_TABLES: &[CodeTable] = &[
    CallbackKind::TABLE,
    LinkMethod::TABLE,
    CausalLinkKind::TABLE,
    SegmentKind::TABLE,
    AnnotationKind::TABLE,
    AnnotationRole::TABLE,
    ExecutorState::TABLE,
    ThreadState::TABLE,
];

macro_rules! table {
    ($id:ident = $name:literal, $origin:ident, $doc:expr, [ $( $col:literal : $ty:ident = $cdoc:expr ),* $(,)? ]) => {
        pub const $id: TableSpec = TableSpec {
            name: $name,
            origin: Origin::$origin,
            doc: $doc,
            columns: &[ $( ColumnSpec { name: $col, ty: ColType::$ty, doc: $cdoc } ),* ],
        };
    };
}

table!(HOSTS = "hosts", Model, "One row per host, told apart by the trace's `hostname`.", [
    "host_id": BigInt = "row id",
    "hostname": Varchar = "the `hostname` of the trace's metadata (`unknown` when absent)",
]);

table!(TRACES = "traces", Model, "One row per trace directory (one per `metadata` file).", [
    "trace_id": BigInt = "row id",
    "host_id": BigInt = "the host it was recorded on",
    "path": Varchar = "the trace directory",
    "rel": Varchar = "its path relative to the input it was found under",
    "domain": Varchar = "the tracer domain of the metadata (`ust`, `kernel`)",
    "clock_offset_ns": BigInt = "offset of the trace clock's origin to the Unix epoch: `ts + clock_offset_ns` is Unix time in ns",
    "events_discarded": BigInt = "events the tracer reported discarded (sum over its streams)",
    "packets_lost": BigInt = "packets missing from the packet sequence numbers (sum over its streams)",
]);

table!(LOST = "lost", Model, "One row per discard report of the tracer: a counter increase between two packets of a stream.", [
    "trace_id": BigInt = "the trace",
    "stream": Varchar = "the stream file",
    "begin_ts": BigInt = "start of the interval the events were lost in",
    "end_ts": BigInt = "end of that interval",
    "events": BigInt = "events lost",
]);

table!(PROCESSES = "processes", Model, "One row per process instance, keyed by (host, pid): a reused pid is a new instance (see Identity and lifetimes).", [
    "proc_id": BigInt = "row id",
    "host_id": BigInt = "its host",
    "trace_id": BigInt = "the trace of its first event",
    "pid": BigInt = "`vpid` context",
    "procname": Varchar = "the name of its main thread (tid = pid), else of the first thread seen",
    "first_ts": BigInt = "its first event",
    "last_ts": BigInt = "its last event",
    "events": BigInt = "its events",
]);

table!(THREADS = "threads", Model, "One row per thread of a process instance.", [
    "thread_id": BigInt = "row id",
    "proc_id": BigInt = "its process instance",
    "tid": BigInt = "`vtid` context",
    "first_ts": BigInt = "its first event",
    "last_ts": BigInt = "its last event",
    "events": BigInt = "its events",
]);

/// The columns the object tables share, after their id column and `proc_id`.
macro_rules! object_table {
    ($id:ident = $name:literal, $doc:expr, $id_col:literal, $node_col:literal, $node_doc:expr, $name_doc:expr) => {
        table!($id = $name, Model, $doc, [
            $id_col: BigInt = "row id",
            "proc_id": BigInt = "its process instance",
            $node_col: BigInt = $node_doc,
            "handle": UBigInt = "its rcl handle, as in the trace (ROS 1: the address the tracer gives for it)",
            "rmw_handle": UBigInt = "its rmw handle",
            "rclcpp_handle": UBigInt = "the rclcpp subscription object (subscriptions only)",
            "name": Varchar = $name_doc,
            "namespace": Varchar = "the node's namespace (nodes only)",
            "queue_depth": BigInt = "the history depth; ROS 1: the queue size (publishers and subscriptions)",
            "gid": Varchar = "the DDS GID in hex, from the rmw init event (publishers and subscriptions)",
            "period_ns": BigInt = "the period (timers only)",
            "init_ts": BigInt = "its init event (or the first event that named it)",
            "known": BigInt = "1 when its init event was recorded; 0 when only runtime events name it",
            "dumped": BigInt = "1 when only a state dump named it (the process ran before the session started; docs/ros1-tracer.md, Attaching)",
        ]);
    };
}

object_table!(
    NODES = "nodes",
    "One row per node.",
    "node_id",
    "node_id_1",
    "always NULL (the object tables share one layout, whose owning-node column is named `node_id`; in `nodes` it follows \
     the row id of the same name, so the database renames it)",
    "the node's name"
);
object_table!(PUBLISHERS = "publishers", "One row per publisher.", "publisher_id", "node_id", "its node", "the topic");
object_table!(SUBSCRIPTIONS = "subscriptions", "One row per subscription.", "subscription_id", "node_id", "its node", "the topic");
object_table!(TIMERS = "timers", "One row per timer.", "timer_id", "node_id", "its node", "NULL");
object_table!(SERVICES = "services", "One row per service.", "service_id", "node_id", "its node", "the service name");
object_table!(CLIENTS = "clients", "One row per service client.", "client_id", "node_id", "its node", "the service name");

table!(CALLBACKS = "callbacks", Model, "One row per callback.", [
    "callback_id": BigInt = "row id",
    "proc_id": BigInt = "its process instance",
    "handle": UBigInt = "the callback's address, as in the trace",
    "symbol": Varchar = "the callback's function (demangled), when registered",
    "kind": Varchar = "what it belongs to (code table `callback_kind`)",
    "owner_id": BigInt = "the row of its owner in the table its kind names",
    "node_id": BigInt = "its owner's node",
    "init_ts": BigInt = "its registration (or first run)",
    "known": BigInt = "1 when its registration was recorded",
    "dumped": BigInt = "1 when only a state dump registered it (see the object tables' `dumped`)",
]);

table!(CALLBACK_RUNS = "callback_runs", Model, "One row per callback run (see Callback runs).", [
    "run_id": BigInt = "row id",
    "callback_id": BigInt = "the callback",
    "thread_id": BigInt = "the thread it ran on",
    "start_ts": BigInt = "its start",
    "end_ts": BigInt = "its end; NULL when the end was not recorded",
    "duration_ns": BigInt = "`end_ts - start_ts`",
    "is_intra": BigInt = "1 when it took an intra-process message (`callback_start.is_intra_process`)",
    "depth": BigInt = "nesting on its thread: 0 for a run no other run encloses",
    "parent_run_id": BigInt = "the run that encloses it on its thread",
]);

table!(PUBLICATIONS = "publications", Model, "One row per message published; its layers' events (rclcpp, rcl, rmw) on one thread are one publication.", [
    "publication_id": BigInt = "row id",
    "publisher_id": BigInt = "the publisher",
    "thread_id": BigInt = "the thread it was published from",
    "run_id": BigInt = "the callback run it was published from, if any",
    "ts": BigInt = "its first event",
    "rclcpp_ts": BigInt = "`rclcpp_publish` (or `rclcpp_intra_publish`; ROS 1: the publish)",
    "rcl_ts": BigInt = "`rcl_publish`",
    "rmw_ts": BigInt = "`rmw_publish` (ROS 1, roscope's tracer: the serialization into a buffer)",
    "message": UBigInt = "the message's address",
    "source_ts": BigInt = "the DDS source stamp: `rmw_publish.timestamp`, or CARET's `dds_bind_addr_to_stamp.source_stamp`",
    "is_intra": BigInt = "1 for an intra-process publication (also when rclcpp then published the same message to other processes' subscriptions: its `rcl_ts`, `rmw_ts`)",
]);

table!(TAKES = "takes", Model, "One row per message taken by a subscription.", [
    "take_id": BigInt = "row id",
    "subscription_id": BigInt = "the subscription",
    "thread_id": BigInt = "the thread that took it",
    "run_id": BigInt = "the callback run it fed",
    "ts": BigInt = "the take (ROS 1, roscope's tracer: when the message was queued for its callback)",
    "rmw_ts": BigInt = "`rmw_take`",
    "rcl_ts": BigInt = "`rcl_take`",
    "rclcpp_ts": BigInt = "`rclcpp_take`",
    "message": UBigInt = "the message's address",
    "source_ts": BigInt = "the DDS source stamp (`rmw_take.source_timestamp`, CARET's `dispatch_subscription_callback.source_stamp`)",
    "taken": BigInt = "0 when `rmw_take` found no message",
    "is_intra": BigInt = "1 for an intra-process take",
]);

table!(LINKS = "links", Model, "One row per transport link: a publication to one take / callback run it fed (see Transport links).", [
    "publication_id": BigInt = "the publication",
    "take_id": BigInt = "the take",
    "run_id": BigInt = "the callback run the take fed",
    "method": Varchar = "how the link was found (code table `link_method`)",
    "heuristic": BigInt = "1 for a heuristic link (`roscope load --no-heuristics` leaves them out)",
]);

table!(SERVICE_CALLS = "service_calls", Model, "One row per service request (an action's goal, cancel and result requests too): the request and its response, each a publication on, and a take from, the service's pseudo-topics `<service>:request` and `<service>:response` (rows of `publishers` and `subscriptions` made for the clients and services; see Services).", [
    "call_id": BigInt = "row id",
    "client_id": BigInt = "the client that sent it (NULL: its sending was not recorded)",
    "service_id": BigInt = "the service that took it (NULL: not taken in the trace)",
    "sequence_number": BigInt = "the client's sequence number of the request",
    "request_publication_id": BigInt = "the request sent (`rmw_send_request`)",
    "request_take_id": BigInt = "the request taken by the service (`rmw_take_request`)",
    "response_publication_id": BigInt = "the response sent (`rmw_send_response`); its `run_id` is the callback run that handled the request",
    "response_take_id": BigInt = "the response taken by the client (`rmw_take_response`)",
    "method": Varchar = "how request and response were matched across processes (code table `link_method`)",
]);

table!(ANNOTATIONS = "annotations", Model, "One row per causal-link annotation event (instrument/annotations).", [
    "annotation_id": BigInt = "row id",
    "proc_id": BigInt = "the process that emitted it",
    "kind": Varchar = "code table `annotation_kind`",
    "ts": BigInt = "the annotation event",
]);

table!(ANNOTATION_MEMBERS = "annotation_members", Model, "One row per subscription or publisher an annotation names.", [
    "annotation_id": BigInt = "the annotation",
    "role": Varchar = "code table `annotation_role`",
    "handle": UBigInt = "the handle the annotation gives",
    "subscription_id": BigInt = "the subscription with that handle (rcl or rclcpp), for the role `subscription`",
    "publisher_id": BigInt = "the publisher with that handle, for the role `publisher`",
]);

table!(EXECUTOR_STATES = "executor_states", Model, "One row per interval of an executor thread's state, from one executor event to the next on its thread (the last one ends with the thread's last event); `executing` ends at the thread's last event inside it (its outermost callback's end), the rest until the next executor event is `waiting`.", [
    "thread_id": BigInt = "the executor thread",
    "state": Varchar = "code table `executor_state`",
    "start_ts": BigInt = "its start",
    "end_ts": BigInt = "its end",
    "handle": UBigInt = "`executing`: the rcl handle executed",
]);

table!(EXECUTORS = "executors", Model, "One row per executor, from CARET's executor structure events (`ros2_caret:construct_executor`, `construct_static_executor`; ros2_tracing has none); empty without them. A repeated event for the same address and type (CARET re-emits its init events when tracing starts after the application) is the same executor.", [
    "executor_id": BigInt = "row id",
    "proc_id": BigInt = "its process instance",
    "handle": UBigInt = "the executor's address (`executor_addr`)",
    "collector_handle": UBigInt = "its entities collector's address (`entities_collector_addr`: static executors; Jazzy's `executor_entity_collector_to_executor`)",
    "type": Varchar = "the type CARET names (`executor_type_name`): `single_threaded_executor`, `multi_threaded_executor`, `static_single_threaded_executor`, ...",
    "init_ts": BigInt = "its construct event",
]);

table!(CALLBACK_GROUPS = "callback_groups", Model, "One row per callback group added to an executor (`ros2_caret:add_callback_group`, `add_callback_group_static_executor`, Jazzy's `callback_group_to_executor_entity_collector`), or named only by a `callback_group_add_*` event; empty without CARET's executor structure events.", [
    "group_id": BigInt = "row id",
    "proc_id": BigInt = "its process instance",
    "executor_id": BigInt = "the executor it was added to (NULL: not known)",
    "handle": UBigInt = "the group's address (`callback_group_addr`)",
    "type": Varchar = "the type CARET names (`group_type_name`): `mutually_exclusive` or `reentrant` (NULL: not known)",
    "init_ts": BigInt = "the first event that named it",
]);

table!(CALLBACK_GROUP_MEMBERS = "callback_group_members", Model, "One row per timer, subscription, service or client a callback group holds (`ros2_caret:callback_group_add_timer`, `_subscription`, `_service`, `_client`), each once.", [
    "group_id": BigInt = "the callback group",
    "kind": Varchar = "code table `callback_kind` (`timer`, `subscription`, `service`, `client`)",
    "handle": UBigInt = "the member's rcl handle, as the event gives it",
    "owner_id": BigInt = "the `timers`, `subscriptions`, `services` or `clients` row with that handle (NULL: its init event is not in the trace)",
    "callback_id": BigInt = "the member's callback (`callbacks` row whose `owner_id` is it; NULL: none recorded)",
    "ts": BigInt = "the event",
]);

table!(CLOCK_SYNC = "clock_sync", Model, "One row per host but the reference host of a trace of several hosts: its clock's map onto the reference host's clock, estimated from the messages between them (a message is never received before it is sent; convex hulls, after Trace Compass). Every timestamp of the host's rows in the model is mapped (`t_ref = ref_at_x0_ns + slope * (t_raw - x0_ns)`, so raw times are `x0_ns + (t - ref_at_x0_ns) / slope`); empty with one host.", [
    "host_id": BigInt = "the host",
    "reference_host_id": BigInt = "the host whose clock the model's times are in",
    "method": Varchar = "`convex_hull` (messages both ways: offset and drift), `offset_lower_bound` / `offset_upper_bound` (one way: offset only, bounded on one side), or `metadata_offset` (`--no-sync`, no message with the reference host, or no map fits them: the traces' metadata clock offsets, each trace's wall-clock anchor)",
    "messages_to_host": BigInt = "messages from the reference host to this host",
    "messages_from_host": BigInt = "messages from this host to the reference host",
    "x0_ns": BigInt = "a time on the host's raw clock",
    "ref_at_x0_ns": BigInt = "the same instant on the reference clock",
    "slope": Double = "reference clock ns per host clock ns",
    "drift_ppm": Double = "how much faster the host's clock runs than the reference's, in parts per million (`(1/slope - 1) * 1e6`)",
    "offset_ns": Double = "host clock minus reference clock at `x0_ns`",
    "bound_ns": Double = "the map's error bound over the messages' span (half the distance between the extreme maps that fit); null when bounded on one side only",
]);

table!(META = "meta", Load, "Key/value facts about the database (values are JSON): `schema_version`, `roscope_version`, `sources`, `created`, `host`, `heuristic_links`, `stats` (the model builder's counters, e.g. `unmatched_callback_ends`), `warnings`, `losses`.", [
    "key": Varchar = "the fact",
    "value": Varchar = "its value, as JSON",
]);

table!(CODES = "codes", Load, "Every code table of this schema as rows, for joins and for reading a database without the docs: one row per enumerated value.", [
    "code_table": Varchar = "the code table's name (e.g. `link_method`)",
    "code": BigInt = "the value's integer code",
    "name": Varchar = "the value as it stands in the text columns that use the code table",
    "doc": Varchar = "what the value means",
]);

table!(CAUSAL_LINKS = "causal_links", Analysis, "One row per causal link: an input message that caused an output message (`flow.causal_links`).", [
    "in_publication_id": BigInt = "the input publication",
    "in_run_id": BigInt = "the subscription callback run that received it",
    "out_publication_id": BigInt = "the output publication",
    "kind": Varchar = "code table `causal_link_kind`",
]);

table!(DATA_FLOWS = "data_flows", Analysis, "One row per data flow from an input topic to an output topic (`flow.data_flows`).", [
    "flow_id": BigInt = "row id",
    "path_id": BigInt = "its path (`paths`): flows through the same callbacks and topics share one",
    "output_publication_id": BigInt = "the publication on the output topic that ends it",
    "input_publication_id": BigInt = "the publication on the input topic (-1: none)",
    "first_run_id": BigInt = "the callback run that published the input (-1: the input was published outside any callback run, by a driver or simulator thread, and the flow starts at its publication)",
    "start_ts": BigInt = "the start of its first run (or the input's publication)",
    "end_ts": BigInt = "the output publication",
    "latency_ns": BigInt = "`end_ts - start_ts`",
    "communication_ns": BigInt = "the part of the latency spent in communication (segment kind `communication`)",
    "idle_ns": BigInt = "the part spent between the runs of a node (segment kind `idle`)",
    "computation_ns": BigInt = "the part spent in callback runs (segment kind `computation`)",
    "fallback_edges": BigInt = "how many of its intra-node dependencies are fallback edges (nothing known: every callback pair of a node), which may not exist; 0: it rests only on transport links, annotations and source analysis",
    "uncertain": BigInt = "1: one of its intra-node dependencies may not hold, a race: a run of the callback it depends on overlapped, on another thread, the run that depends on it (a multi-threaded executor or spinner), so whether that run's write reached the read is not known from the trace; 0: certain",
]);

table!(DATA_FLOW_STEPS = "data_flow_steps", Analysis, "The steps of one flow per path (of every flow when asked), alternating runs and publications forward in time.", [
    "flow_id": BigInt = "the flow",
    "step": BigInt = "position in the flow, from 0",
    "is_run": BigInt = "1: `id` is a `run_id`; 0: a `publication_id`",
    "id": BigInt = "the run or publication",
    "edge": Varchar = "how this step follows from the previous one: `published` (the run published it), `transport` (its transport link fed the run), `newest_publication` (no link: the newest publication on the run's topic), or an intra-node dependency and where it comes from: `annotation` (a causal-link annotation in the trace), `source_analysis` (`roscope deps`), `fallback` (nothing known); empty for the first step",
]);

table!(DATA_FLOW_SEGMENTS = "data_flow_segments", Analysis, "The distinct segments of all data flows, each once.", [
    "kind": Varchar = "code table `segment_kind`",
    "a": BigInt = "`communication`: the publication; `computation`, `idle`: the run",
    "b": BigInt = "`communication`: the run; `computation`: the publication (-1: the run's own duration); `idle`: the next run",
    "duration_ns": BigInt = "its duration",
]);

table!(PATHS = "paths", Analysis, "One row per path: the callback and topic sequence its flows share.", [
    "path_id": BigInt = "the path",
    "flows": BigInt = "its flows",
    "path": Varchar = "its steps, readable: `node kind(topic) -> [topic] -> ...`",
    "fallback_edges": BigInt = "how many of its intra-node dependencies are fallback edges (see `data_flows.fallback_edges`)",
]);

table!(RUN_INPUT_WAITS = "run_input_waits", Analysis, "One row per transport link into a callback run: how long the input waited (`flow.executor`).", [
    "run_id": BigInt = "the callback run",
    "publication_id": BigInt = "its input publication",
    "callback_id": BigInt = "the run's callback",
    "thread_id": BigInt = "the run's thread",
    "publish_ts": BigInt = "the publication (earliest layer)",
    "start_ts": BigInt = "the run's start",
    "wait_ns": BigInt = "`start_ts - publish_ts`",
    "executor_busy_ns": HugeInt = "the part of the wait the run's thread spent running other top-level callbacks",
]);

table!(KERNEL_THREADS = "kernel_threads", Load, "One row per thread the kernel sched events name (perf.data beside the trace, written by `roscope record --kernel`, or an LTTng kernel trace with `sched_switch`); empty without kernel data. Threads are kernel tids: they equal the model's `threads.tid` when the traced processes share the recorder's pid namespace.", [
    "host_id": BigInt = "the host of the trace the kernel data belongs to",
    "tid": BigInt = "the thread (kernel tid)",
    "pid": BigInt = "its process (perf: the sample's pid; LTTng: the UST threads' process, else NULL)",
    "name": Varchar = "its last name (`comm`); the name in force at a time is `thread_states.name`",
    "procname": Varchar = "the name of its process's main thread (tid = pid), else its own",
]);

table!(THREAD_STATES = "thread_states", Load, "One row per interval of a thread's scheduling state (code table `thread_state`), from one sched event changing it to the next; a thread has none before its first switch, and its last one ends with its source's last event.", [
    "host_id": BigInt = "the host",
    "tid": BigInt = "the thread (kernel tid)",
    "pid": BigInt = "its process (`kernel_threads.pid`)",
    "state": Varchar = "code table `thread_state`",
    "name": Varchar = "the thread's name (`comm`) in force: the one the event that started the interval reported; a rename (exec, prctl(PR_SET_NAME)) starts a new interval",
    "cpu": BigInt = "`running`: the CPU; `runnable`: the CPU it then ran on (NULL if it did not run again); `blocked`: NULL",
    "start_ts": BigInt = "its start (ns of CLOCK_MONOTONIC, the UST events' clock)",
    "end_ts": BigInt = "its end",
]);

table!(PREEMPTIONS = "preemptions", Load, "One row per preemption: a thread switched out while still runnable, and the thread switched in instead.", [
    "host_id": BigInt = "the host",
    "ts": BigInt = "the switch",
    "cpu": BigInt = "the CPU",
    "tid": BigInt = "the preempted thread",
    "pid": BigInt = "its process",
    "by_tid": BigInt = "the thread that got the CPU",
    "by_pid": BigInt = "its process",
]);

table!(MIGRATIONS = "migrations", Load, "One row per CPU migration: a thread's running interval on another CPU than its previous one.", [
    "host_id": BigInt = "the host",
    "ts": BigInt = "the start of its first running interval on the new CPU",
    "tid": BigInt = "the thread",
    "pid": BigInt = "its process",
    "from_cpu": BigInt = "the CPU it ran on before",
    "to_cpu": BigInt = "the CPU it runs on now",
]);

/// Every table, in the order the model builder emits its own.
pub const TABLES: &[TableSpec] = &[
    HOSTS,
    TRACES,
    LOST,
    PROCESSES,
    THREADS,
    NODES,
    PUBLISHERS,
    SUBSCRIPTIONS,
    TIMERS,
    SERVICES,
    CLIENTS,
    CALLBACKS,
    CALLBACK_RUNS,
    PUBLICATIONS,
    TAKES,
    LINKS,
    SERVICE_CALLS,
    ANNOTATIONS,
    ANNOTATION_MEMBERS,
    EXECUTOR_STATES,
    EXECUTORS,
    CALLBACK_GROUPS,
    CALLBACK_GROUP_MEMBERS,
    CLOCK_SYNC,
    META,
    CODES,
    CAUSAL_LINKS,
    DATA_FLOWS,
    DATA_FLOW_STEPS,
    DATA_FLOW_SEGMENTS,
    PATHS,
    RUN_INPUT_WAITS,
    KERNEL_THREADS,
    THREAD_STATES,
    PREEMPTIONS,
    MIGRATIONS,
];

pub fn table(name: &str) -> Option<&'static TableSpec> {
    TABLES.iter().find(|t| t.name == name)
}

pub fn code_table(name: &str) -> Option<&'static CodeTable> {
    CODE_TABLES.iter().find(|t| t.name == name)
}

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `"key": "value"` pairs of one JSON object.
fn json_obj(out: &mut String, pairs: &[(&str, &str)], rest: impl FnOnce(&mut String)) {
    out.push('{');
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        json_str(out, k);
        out.push_str(": ");
        json_str(out, v);
    }
    rest(out);
    out.push('}');
}

/// The schema as JSON: `{"tables": [{"name", "origin", "doc", "columns":
/// [{"name", "type", "doc"}]}], "codes": [{"name", "doc", "used_in": [...],
/// "values": [{"code", "name", "doc"}]}]}`.
pub fn to_json() -> String {
    let mut o = String::from("{\"tables\": [");
    for (i, t) in TABLES.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        json_obj(&mut o, &[("name", t.name), ("origin", t.origin.name()), ("doc", t.doc)], |o| {
            o.push_str(", \"columns\": [");
            for (j, c) in t.columns.iter().enumerate() {
                if j > 0 {
                    o.push_str(", ");
                }
                json_obj(o, &[("name", c.name), ("type", c.ty.sql()), ("doc", c.doc)], |_| {});
            }
            o.push(']');
        });
    }
    o.push_str("], \"codes\": [");
    for (i, t) in CODE_TABLES.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        json_obj(&mut o, &[("name", t.name), ("doc", t.doc)], |o| {
            o.push_str(", \"used_in\": [");
            for (j, u) in t.used_in.iter().enumerate() {
                if j > 0 {
                    o.push_str(", ");
                }
                json_str(o, u);
            }
            o.push_str("], \"values\": [");
            for (j, v) in t.values.iter().enumerate() {
                if j > 0 {
                    o.push_str(", ");
                }
                o.push_str(&format!("{{\"code\": {}, \"name\": ", v.code));
                json_str(o, v.name);
                o.push_str(", \"doc\": ");
                json_str(o, v.doc);
                o.push('}');
            }
            o.push(']');
        });
    }
    o.push_str("]}");
    o
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The tables and code tables as the Markdown of docs/model.md (the part
/// between its `schema:begin` and `schema:end` markers).
pub fn markdown() -> String {
    let mut o = String::new();
    for (origin, title) in [
        (Origin::Model, "Tables of the model"),
        (Origin::Load, "Written by `roscope load`"),
        (Origin::Analysis, "Analysis outputs (stored when asked)"),
    ] {
        o.push_str(&format!("### {}\n\n", title));
        for t in TABLES.iter().filter(|t| t.origin == origin) {
            o.push_str(&format!("#### `{}`\n\n{}\n\n| column | type | meaning |\n|---|---|---|\n", t.name, t.doc));
            for c in t.columns {
                o.push_str(&format!("| `{}` | {} | {} |\n", c.name, c.ty.sql(), md_cell(c.doc)));
            }
            o.push('\n');
        }
    }
    o.push_str("### Code tables\n\n");
    for t in CODE_TABLES {
        let used: Vec<String> = t.used_in.iter().map(|u| format!("`{}`", u)).collect();
        o.push_str(&format!("#### `{}`\n\n{} Used in {}.\n\n| code | value | meaning |\n|---|---|---|\n", t.name, t.doc, used.join(", ")));
        for v in t.values {
            o.push_str(&format!("| {} | `{}` | {} |\n", v.code, v.name, md_cell(v.doc)));
        }
        o.push('\n');
    }
    o
}

/// A node's full name, as the database's views write it (`callbacks_info.node`): none
/// without a name, '/' + the name in the root namespace, else the namespace (without a
/// trailing '/') + '/' + the name. `roscope stats` from the core and the flow's node labels.
pub fn node_name(name: Option<&str>, ns: Option<&str>) -> Option<String> {
    let name = name?;
    Some(match ns {
        None | Some("/") => format!("/{}", name.trim_start_matches('/')),
        Some(ns) => format!("{}/{}", ns.trim_end_matches('/'), name),
    })
}

#[cfg(test)]
mod node_name_tests {
    use super::node_name;

    #[test]
    fn node_names_as_the_views_write_them() {
        assert_eq!(node_name(Some("talker"), Some("/")).as_deref(), Some("/talker"));
        assert_eq!(node_name(Some("/talker"), None).as_deref(), Some("/talker"));
        assert_eq!(node_name(Some("a"), Some("/ns/")).as_deref(), Some("/ns/a"));
        assert_eq!(node_name(None, Some("/ns")), None);
    }
}
