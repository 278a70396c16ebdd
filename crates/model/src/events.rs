//! The trace events the model understands, declared once each: the event's
//! name, the providers that emit it, and the payload fields the model reads.
//!
//! The `events!` declaration generates, for every event:
//! - a variant of `Ev` (what `classify` makes of an event class's name);
//! - a module named after the event (e.g. `ros2::rcl_node_init`) with one
//!   constant per field read (`rcl_node_init::NODE_HANDLE`), and `NAMES`, the
//!   fields' names in the trace, in the constants' order.
//!
//! Fields are found by name once per event class, when the metadata is read
//! (`Builder::new`), so every distro's layout works; per event, a field is an
//! index into the decoded values (`Event::u(rcl_node_init::NODE_HANDLE)`). A
//! `Field` knows its event: reading it from another event is a bug, caught
//! by a debug assertion.

/// A payload field of one event: the event, and the field's position in the
/// event's `NAMES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub ev: Ev,
    pub ix: u8,
}

/// Providers whose `ros2` events the model reads (CARET re-emits init events
/// as `ros2_caret:*` and adds its own there).
const ROS2: &[&str] = &["ros2", "ros2_caret"];
/// Bosch's ros1_tracetools (ROS 1).
const ROSCPP: &[&str] = &["roscpp"];
/// roscope's own ROS 1 tracer (docs/ros1-tracer.md).
const ROSCOPE_ROS1: &[&str] = &["roscope_ros1"];
/// The DDS layer's instrumentation of the message-flow paper (Cyclone DDS and
/// Fast DDS builds with LTTng tracepoints).
const DDS: &[&str] = &["dds"];
/// Causal-link annotations (instrument/annotations), emitted under the
/// provider of the ROS 1 tracer or of ROS 2.
const ANNOTATION: &[&str] = &["ros2", "ros2_caret", "roscope_ros1"];
/// Service requests and responses: Kilted's rmw tracepoints (`ros2`), and the
/// same layouts from roscope's rclpy hook where the rmw has none (Jazzy).
const SERVICE_EVENTS: &[&str] = &["ros2", "roscope_ros2"];
/// roscope's own ROS 2 events (instrument/ros2: its tracer library and rclpy hook).
const ROSCOPE_ROS2: &[&str] = &["roscope_ros2"];
/// CARET's own events (its hook library, caret_trace): the executor structure.
const CARET: &[&str] = &["ros2_caret"];

const fn max_len(lens: &[usize]) -> usize {
    let mut m = 0;
    let mut i = 0;
    while i < lens.len() {
        if lens[i] > m {
            m = lens[i];
        }
        i += 1;
    }
    m
}

macro_rules! field_consts {
    ($ev:expr, $k:expr, ) => {};
    ($ev:expr, $k:expr, $first:ident $($rest:ident)*) => {
        pub const $first: Field = Field { ev: $ev, ix: $k };
        field_consts!($ev, $k + 1, $($rest)*);
    };
}

macro_rules! events {
    ($(
        $group:ident ($providers:expr) {
            $( $(#[$doc:meta])* $variant:ident $event:ident { $($field:ident = $fname:literal),* $(,)? } )*
        }
    )*) => {
        /// Every event the model understands.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Ev {
            $($( $(#[$doc])* $variant, )*)*
        }

        impl Ev {
            /// Every event, in declaration order (`Ev as usize` is its index).
            pub const ALL: &'static [Ev] = &[$($( Ev::$variant, )*)*];
            /// How many events there are.
            pub const COUNT: usize = Ev::ALL.len();

            /// The payload fields read from this event, in the order of its constants.
            pub fn fields(self) -> &'static [&'static str] {
                match self {
                    $($( Ev::$variant => $group::$event::NAMES, )*)*
                }
            }
        }

        /// What an event class is, by its full name (`provider:event`).
        pub fn classify(full: &str) -> Option<Ev> {
            let (provider, name) = full.split_once(':')?;
            $($(
                if name == stringify!($event) && $providers.contains(&provider) {
                    return Some(Ev::$variant);
                }
            )*)*
            None
        }

        $(
            pub mod $group {
                $(
                    #[allow(dead_code)]
                    pub mod $event {
                        #[allow(unused_imports)]
                        use crate::events::{Ev, Field};
                        /// The fields' names in the trace, in the constants' order.
                        pub const NAMES: &[&str] = &[$($fname),*];
                        field_consts!(Ev::$variant, 0u8, $($field)*);
                    }
                )*
            }
        )*

        /// The most fields read from one event.
        pub const MAX_FIELDS: usize = max_len(&[$($( $group::$event::NAMES.len(), )*)*]);
    };
}

events! {
    ros2 (ROS2) {
        /// A process initializes ROS 2 (starts a process instance).
        RclInit rcl_init { CONTEXT_HANDLE = "context_handle", VERSION = "version" }
        NodeInit rcl_node_init { NODE_HANDLE = "node_handle", RMW_HANDLE = "rmw_handle", NODE_NAME = "node_name", NAMESPACE = "namespace" }
        RmwPubInit rmw_publisher_init { RMW_PUBLISHER_HANDLE = "rmw_publisher_handle", GID = "gid" }
        RmwSubInit rmw_subscription_init { RMW_SUBSCRIPTION_HANDLE = "rmw_subscription_handle", GID = "gid" }
        RmwClientInit rmw_client_init { RMW_CLIENT_HANDLE = "rmw_client_handle", GID = "gid" }
        PubInit rcl_publisher_init {
            PUBLISHER_HANDLE = "publisher_handle",
            NODE_HANDLE = "node_handle",
            RMW_PUBLISHER_HANDLE = "rmw_publisher_handle",
            TOPIC_NAME = "topic_name",
            QUEUE_DEPTH = "queue_depth",
        }
        SubInit rcl_subscription_init {
            SUBSCRIPTION_HANDLE = "subscription_handle",
            NODE_HANDLE = "node_handle",
            RMW_SUBSCRIPTION_HANDLE = "rmw_subscription_handle",
            TOPIC_NAME = "topic_name",
            QUEUE_DEPTH = "queue_depth",
        }
        RclcppSubInit rclcpp_subscription_init { SUBSCRIPTION_HANDLE = "subscription_handle", SUBSCRIPTION = "subscription" }
        SubCbAdded rclcpp_subscription_callback_added { SUBSCRIPTION = "subscription", CALLBACK = "callback" }
        SrvInit rcl_service_init {
            SERVICE_HANDLE = "service_handle",
            NODE_HANDLE = "node_handle",
            RMW_SERVICE_HANDLE = "rmw_service_handle",
            SERVICE_NAME = "service_name",
        }
        ClientInit rcl_client_init {
            CLIENT_HANDLE = "client_handle",
            NODE_HANDLE = "node_handle",
            RMW_CLIENT_HANDLE = "rmw_client_handle",
            SERVICE_NAME = "service_name",
        }
        SrvCbAdded rclcpp_service_callback_added { SERVICE_HANDLE = "service_handle", CALLBACK = "callback" }
        TimerInit rcl_timer_init { TIMER_HANDLE = "timer_handle", PERIOD = "period" }
        TimerCbAdded rclcpp_timer_callback_added { TIMER_HANDLE = "timer_handle", CALLBACK = "callback" }
        TimerLinkNode rclcpp_timer_link_node { TIMER_HANDLE = "timer_handle", NODE_HANDLE = "node_handle" }
        CbRegister rclcpp_callback_register { CALLBACK = "callback", SYMBOL = "symbol" }
        IpbToSub rclcpp_ipb_to_subscription { IPB = "ipb", SUBSCRIPTION = "subscription" }
        BufferToIpb rclcpp_buffer_to_ipb { BUFFER = "buffer", IPB = "ipb" }
        CallbackStart callback_start { CALLBACK = "callback", IS_INTRA_PROCESS = "is_intra_process" }
        CallbackEnd callback_end { CALLBACK = "callback" }
        RclcppPublish rclcpp_publish { PUBLISHER_HANDLE = "publisher_handle", MESSAGE = "message" }
        RclPublish rcl_publish { PUBLISHER_HANDLE = "publisher_handle", MESSAGE = "message" }
        RmwPublish rmw_publish { RMW_PUBLISHER_HANDLE = "rmw_publisher_handle", MESSAGE = "message", TIMESTAMP = "timestamp" }
        RclcppIntraPublish rclcpp_intra_publish { PUBLISHER_HANDLE = "publisher_handle", MESSAGE = "message" }
        RingEnqueue rclcpp_ring_buffer_enqueue { BUFFER = "buffer", INDEX = "index", SIZE = "size", OVERWRITTEN = "overwritten" }
        RingDequeue rclcpp_ring_buffer_dequeue { BUFFER = "buffer", INDEX = "index", SIZE = "size" }
        RmwTake rmw_take {
            RMW_SUBSCRIPTION_HANDLE = "rmw_subscription_handle",
            MESSAGE = "message",
            SOURCE_TIMESTAMP = "source_timestamp",
            TAKEN = "taken",
        }
        RclTake rcl_take { MESSAGE = "message" }
        RclcppTake rclcpp_take { MESSAGE = "message" }
        /// CARET: the DDS source stamp of the message being published.
        CaretBindStamp dds_bind_addr_to_stamp { ADDR = "addr", SOURCE_STAMP = "source_stamp" }
        /// CARET (Galactic): an intra-process message handed to a callback.
        CaretDispatchIntra dispatch_intra_process_subscription_callback { MESSAGE = "message", CALLBACK = "callback" }
        /// CARET: a message handed to a subscription callback, with its source stamp.
        CaretDispatch dispatch_subscription_callback { MESSAGE = "message", CALLBACK = "callback", SOURCE_STAMP = "source_stamp" }
        ExecWait rclcpp_executor_wait_for_work { TIMEOUT = "timeout" }
        ExecGetNext rclcpp_executor_get_next_ready {}
        ExecExecute rclcpp_executor_execute { HANDLE = "handle" }
    }
    services (SERVICE_EVENTS) {
        /// A client sends request `sequence_number` (services.rs).
        SendRequest rmw_send_request { RMW_CLIENT_HANDLE = "rmw_client_handle", REQUEST = "request", SEQUENCE_NUMBER = "sequence_number" }
        /// A service takes a request: the client's GID (zeros when unknown) and sequence number.
        TakeRequest rmw_take_request {
            RMW_SERVICE_HANDLE = "rmw_service_handle",
            REQUEST = "request",
            CLIENT_GID = "client_gid",
            SEQUENCE_NUMBER = "sequence_number",
            TAKEN = "taken",
        }
        /// A service sends the response to request (client GID, sequence number).
        SendResponse rmw_send_response {
            RMW_SERVICE_HANDLE = "rmw_service_handle",
            RESPONSE = "response",
            CLIENT_GID = "client_gid",
            SEQUENCE_NUMBER = "sequence_number",
        }
        /// A client takes the response to its request `sequence_number`.
        TakeResponse rmw_take_response {
            RMW_CLIENT_HANDLE = "rmw_client_handle",
            RESPONSE = "response",
            SEQUENCE_NUMBER = "sequence_number",
            TAKEN = "taken",
        }
    }
    roscope_ros2 (ROSCOPE_ROS2) {
        /// roscope record's recording name, announced by each process its ROS 2 tracer is in.
        R2ProcessInit process_init { RECORD_ID = "record_id", EXE = "exe" }
        R2StateDumpBegin state_dump_begin { OBJECTS = "objects" }
        R2StateDumpEnd state_dump_end { OBJECTS = "objects" }
        /// A client's response callback (rclpy: a done callback of its request futures).
        R2ClientCbAdded client_callback_added { CLIENT_HANDLE = "client_handle", CALLBACK = "callback" }
        /// The next run of `callback` on this thread handles request/response `sequence_number`
        /// of the rmw service or client `rmw_handle`.
        R2CallbackInput callback_input { CALLBACK = "callback", RMW_HANDLE = "rmw_handle", SEQUENCE_NUMBER = "sequence_number" }
        /// The run of `callback` that just ended on this thread ran from `start` to `end`
        /// (the rclpy hook's clock reads at its frame's start and return).
        R2CallbackFrame callback_frame { CALLBACK = "callback", START = "start", END = "end" }
        /// rclcpp's service `service_handle` is a copy of rcl's `original` (the same
        /// implementation: rclcpp_lifecycle's services).
        R2ServiceCopy service_copy { SERVICE_HANDLE = "service_handle", ORIGINAL = "original" }
    }
    caret_exec (CARET) {
        /// An executor is constructed: its address and type (`single_threaded_executor`, ...).
        ConstructExecutor construct_executor { EXECUTOR = "executor_addr", TYPE = "executor_type_name" }
        /// A static executor is constructed, with its entities collector.
        ConstructStaticExecutor construct_static_executor {
            EXECUTOR = "executor_addr",
            COLLECTOR = "entities_collector_addr",
            TYPE = "executor_type_name",
        }
        /// A callback group is added to an executor: its type (`mutually_exclusive`, `reentrant`).
        AddCbGroup add_callback_group { EXECUTOR = "executor_addr", GROUP = "callback_group_addr", TYPE = "group_type_name" }
        /// A callback group is added to a static executor (through its entities collector).
        AddCbGroupStatic add_callback_group_static_executor {
            COLLECTOR = "entities_collector_addr",
            GROUP = "callback_group_addr",
            TYPE = "group_type_name",
        }
        /// Jazzy: a callback group is added to an executor's entities collector.
        CbGroupToCollector callback_group_to_executor_entity_collector {
            COLLECTOR = "entities_collector_addr",
            GROUP = "callback_group_addr",
            TYPE = "group_type_name",
        }
        /// Jazzy: the executor an entities collector belongs to.
        CollectorToExecutor executor_entity_collector_to_executor { EXECUTOR = "executor_addr", COLLECTOR = "entities_collector_addr" }
        /// A timer (rcl handle) joins a callback group.
        CbGroupAddTimer callback_group_add_timer { GROUP = "callback_group_addr", HANDLE = "timer_handle" }
        /// A subscription (rcl handle) joins a callback group.
        CbGroupAddSub callback_group_add_subscription { GROUP = "callback_group_addr", HANDLE = "subscription_handle" }
        /// A service (rcl handle) joins a callback group.
        CbGroupAddService callback_group_add_service { GROUP = "callback_group_addr", HANDLE = "service_handle" }
        /// A client (rcl handle) joins a callback group.
        CbGroupAddClient callback_group_add_client { GROUP = "callback_group_addr", HANDLE = "client_handle" }
    }
    annotation (ANNOTATION) {
        /// A periodic asynchronous causal link (fields `subs`, `pubs` are read as sequences).
        MsgLinkPeriodic message_link_periodic_async {}
        /// A partial synchronous causal link.
        MsgLinkPartial message_link_partial_sync {}
    }
    roscpp (ROSCPP) {
        Ros1InitNode init_node { NODE_NAME = "node_name" }
        Ros1SubCbAdded subscriber_callback_added {
            QUEUE_REF = "queue_ref",
            CALLBACK_REF = "callback_ref",
            TYPE_INFO = "type_info",
            SOURCE_NAME = "source_name",
            QUEUE_SIZE = "queue_size",
        }
        Ros1TimerAdded timer_added {
            CALLBACK_REF = "callback_ref",
            FUNCTION_NAME = "function_name",
            TYPE_INFO = "type_info",
            PERIOD_SEC = "period_sec",
            PERIOD_NSEC = "period_nsec",
        }
        Ros1PtrNameInfo ptr_name_info { FUNCTION_NAME = "function_name", CALLBACK_REF = "callback_ref" }
        Ros1CallbackStart callback_start { CALLBACK_REF = "callback_ref" }
        Ros1CallbackEnd callback_end { CALLBACK_REF = "callback_ref" }
        Ros1SubCbStart subscriber_callback_start {
            TOPIC = "topic",
            BUFFER_REF = "buffer_ref",
            QUEUE_REF = "queue_ref",
            CALLBACK_REF = "callback_ref",
            MESSAGE_REF = "message_ref",
        }
        Ros1SubCbEnd subscriber_callback_end {
            TOPIC = "topic",
            BUFFER_REF = "buffer_ref",
            QUEUE_REF = "queue_ref",
            CALLBACK_REF = "callback_ref",
            MESSAGE_REF = "message_ref",
        }
        Ros1PubQueued publisher_message_queued { TOPIC = "topic", BUFFER_REF = "buffer_ref" }
        Ros1SubMsgQueued subscription_message_queued {
            TOPIC = "topic",
            BUFFER_REF = "buffer_ref",
            QUEUE_REF = "queue_ref",
            CALLBACK_REF = "callback_ref",
            MESSAGE_REF = "message_ref",
        }
    }
    dds (DDS) {
        /// The DDS write of a message: its writer, (Cyclone DDS) the data handed to
        /// it, and the DDS source timestamp the readers see.
        DdsWrite write { WRITER = "writer", DATA = "data", TIMESTAMP = "timestamp" }
        /// Fast DDS: the data a DDS write is about to send (its `write` follows).
        DdsWritePre write_pre { WRITER = "writer", DATA = "data" }
    }
    roscope_ros1 (ROSCOPE_ROS1) {
        R1NodeInit node_init { NODE_NAME = "node_name" }
        R1PubInit publisher_init {
            PUBLISHER = "publisher",
            NH_NAMESPACE = "nh_namespace",
            TOPIC = "topic",
            QUEUE_SIZE = "queue_size",
            NODE_NAME = "node_name",
        }
        R1SubInit subscription_init {
            SUBSCRIPTION = "subscription",
            CALLBACK = "callback",
            NH_NAMESPACE = "nh_namespace",
            TOPIC = "topic",
            QUEUE_SIZE = "queue_size",
            NODE_NAME = "node_name",
        }
        R1TimerInit timer_init { TIMER = "timer", CALLBACK = "callback", NH_NAMESPACE = "nh_namespace", PERIOD = "period", NODE_NAME = "node_name" }
        R1SrvInit service_init {
            SERVICE = "service",
            CALLBACK = "callback",
            NH_NAMESPACE = "nh_namespace",
            SERVICE_NAME = "service_name",
            NODE_NAME = "node_name",
        }
        R1CbRegister callback_register { CALLBACK = "callback", KIND = "kind", SYMBOL = "symbol" }
        R1LinkTxInit link_tx_init { LINK = "link", TOPIC = "topic", LOCAL_ADDR = "local_addr", REMOTE_ADDR = "remote_addr" }
        R1LinkRxInit link_rx_init { LINK = "link", TOPIC = "topic", LOCAL_ADDR = "local_addr", REMOTE_ADDR = "remote_addr" }
        R1Publish publish { PUBLISHER = "publisher", MESSAGE_ID = "message_id", MESSAGE = "message" }
        R1PublishBuffer publish_buffer { MESSAGE_ID = "message_id", BUFFER = "buffer" }
        R1LinkTxWrite link_tx_write { LINK = "link", BUFFER = "buffer", INDEX = "index" }
        R1LinkRxMessage link_rx_message { LINK = "link", BUFFER = "buffer", SIZE = "size", INDEX = "index" }
        R1MessageQueue message_queue { DESERIALIZER = "deserializer", CALLBACK = "callback", BUFFER = "buffer", MESSAGE = "message" }
        R1CallbackStart callback_start { CALLBACK = "callback", DESERIALIZER = "deserializer" }
        R1CallbackEnd callback_end { CALLBACK = "callback" }
        /// roscope record's recording name, announced by each traced process.
        R1ProcessInit process_init { RECORD_ID = "record_id", EXE = "exe" }
        /// A state dump: the init events of a running process's live objects follow, in this thread.
        R1StateDumpBegin state_dump_begin { OBJECTS = "objects" }
        R1StateDumpEnd state_dump_end { OBJECTS = "objects" }
    }
}

impl Ev {
    /// Events that start a process instance (a pid that already ran
    /// callbacks or published is then a new process).
    pub fn starts_process(self) -> bool {
        matches!(self, Ev::RclInit | Ev::Ros1InitNode | Ev::R1ProcessInit | Ev::R2ProcessInit)
    }

    /// Init events (they name objects; ros2_tracing's dual-session mode keeps them in its
    /// snapshot session), as opposed to runtime events.
    pub fn is_init(self) -> bool {
        use Ev::*;
        matches!(
            self,
            RclInit
                | NodeInit
                | RmwPubInit
                | RmwSubInit
                | RmwClientInit
                | PubInit
                | SubInit
                | RclcppSubInit
                | SubCbAdded
                | SrvInit
                | ClientInit
                | SrvCbAdded
                | TimerInit
                | TimerCbAdded
                | TimerLinkNode
                | CbRegister
                | IpbToSub
                | BufferToIpb
                | R2ProcessInit
                | R2ClientCbAdded
                | R2ServiceCopy
                | R2StateDumpBegin
                | R2StateDumpEnd
                | R1ProcessInit
                | R1NodeInit
                | R1PubInit
                | R1SubInit
                | R1TimerInit
                | R1SrvInit
                | R1CbRegister
                | R1LinkTxInit
                | R1LinkRxInit
                | R1StateDumpBegin
                | R1StateDumpEnd
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_knows_every_provider_of_an_event() {
        assert_eq!(classify("ros2:rcl_init"), Some(Ev::RclInit));
        assert_eq!(classify("ros2_caret:rcl_init"), Some(Ev::RclInit));
        assert_eq!(classify("ros2:callback_start"), Some(Ev::CallbackStart));
        assert_eq!(classify("roscpp:callback_start"), Some(Ev::Ros1CallbackStart));
        assert_eq!(classify("roscope_ros1:callback_start"), Some(Ev::R1CallbackStart));
        assert_eq!(classify("roscope_ros1:message_link_partial_sync"), Some(Ev::MsgLinkPartial));
        assert_eq!(classify("ros2_caret:message_link_periodic_async"), Some(Ev::MsgLinkPeriodic));
        assert_eq!(classify("roscpp:rcl_init"), None);
        assert_eq!(classify("ros2:no_such_event"), None);
        assert_eq!(classify("ros2:rmw_take_request"), Some(Ev::TakeRequest));
        assert_eq!(classify("roscope_ros2:rmw_take_request"), Some(Ev::TakeRequest));
        assert_eq!(classify("roscope_ros2:process_init"), Some(Ev::R2ProcessInit));
        assert_eq!(classify("roscope_ros1:process_init"), Some(Ev::R1ProcessInit));
        assert_eq!(classify("rcl_init"), None);
        assert_eq!(classify("ros2_caret:construct_executor"), Some(Ev::ConstructExecutor));
        assert_eq!(classify("ros2:construct_executor"), None);
        assert_eq!(classify("ros2_caret:callback_group_add_client"), Some(Ev::CbGroupAddClient));
    }

    #[test]
    fn field_constants_index_their_events_names() {
        assert_eq!(ros2::rcl_node_init::NODE_NAME, Field { ev: Ev::NodeInit, ix: 2 });
        assert_eq!(Ev::NodeInit.fields()[ros2::rcl_node_init::NODE_NAME.ix as usize], "node_name");
        assert_eq!(Ev::RmwTake.fields()[ros2::rmw_take::TAKEN.ix as usize], "taken");
        assert_eq!(Ev::R1LinkRxMessage.fields()[roscope_ros1::link_rx_message::INDEX.ix as usize], "index");
        assert_eq!(MAX_FIELDS, 6);
    }
}
