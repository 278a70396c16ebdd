//! ROS 1 events of Bosch's ros1_tracetools (`roscpp:*`): one node per
//! process, subscriptions and publishers known by topic, timers, callback
//! runs, and the messages queued on both sides (no transport links: the
//! events do not identify a message across processes).
//!
//! `callback_start/end` (CallbackQueue::callOneCB) are runs only for
//! callbacks that are not subscription queues (timers): for subscriptions
//! they are the queue-level span around deserialization and the user
//! callback, whose run `subscriber_callback_start/end` gives.

use rustc_hash::FxHashMap;

use crate::builder::{Builder, Event, Handler};
use crate::events::roscpp::*;
use crate::events::Ev;
use crate::objects::{Obj, Take};
use crate::registry::{HandleMap, Layer};
use crate::schema::CallbackKind;

/// Bosch's ros1_tracetools events.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::Ros1InitNode, Builder::bosch_init_node),
    (Ev::Ros1SubCbAdded, Builder::bosch_subscriber_callback_added),
    (Ev::Ros1TimerAdded, Builder::bosch_timer_added),
    (Ev::Ros1PtrNameInfo, Builder::bosch_ptr_name_info),
    (Ev::Ros1CallbackStart, Builder::bosch_callback_start),
    (Ev::Ros1CallbackEnd, Builder::bosch_callback_end),
    (Ev::Ros1SubCbStart, Builder::bosch_subscriber_callback_start),
    (Ev::Ros1SubCbEnd, Builder::bosch_subscriber_callback_end),
    (Ev::Ros1PubQueued, Builder::bosch_publisher_message_queued),
    (Ev::Ros1SubMsgQueued, Builder::bosch_subscription_message_queued),
];

const NS_PER_SEC: i64 = 1_000_000_000;

#[derive(Default)]
pub struct BoschState {
    /// Subscription queues (their callOneCB spans are not runs).
    queues: HandleMap<()>,
    sub_by_topic: FxHashMap<(usize, String), usize>,
    pub_by_topic: FxHashMap<(usize, String), usize>,
}

impl Builder {
    /// The process's node (rcl handle 0: ROS 1 has one node per process).
    fn bosch_node(&self, p: usize) -> Option<usize> {
        self.objs.nodes.find(Layer::Rcl, p, 0)
    }

    pub(crate) fn bosch_init_node(&mut self, e: &Event) {
        let o = Obj { proc: e.p, handle: 0, name: e.text(init_node::NODE_NAME), ts: Some(e.ts), ..Default::default() };
        self.objs.nodes.init(o, true);
    }

    /// A subscription's queue: the subscription of its topic (one per topic
    /// and process), created on first sight.
    pub(crate) fn bosch_subscriber_callback_added(&mut self, e: &Event) {
        use subscriber_callback_added::*;
        let p = e.p;
        if let Some(q) = e.u(QUEUE_REF) {
            self.bosch.queues.insert(p, q, ());
        }
        let topic = e.text(SOURCE_NAME);
        let known = topic.clone().and_then(|t| self.bosch.sub_by_topic.get(&(p, t)).copied());
        let sub = match known {
            Some(i) => i,
            None => {
                let o = Obj {
                    proc: p,
                    name: topic.clone(),
                    depth: e.i(QUEUE_SIZE),
                    ts: Some(e.ts),
                    known: true,
                    handle: e.u(QUEUE_REF).unwrap_or(0),
                    ..Default::default()
                };
                let i = self.objs.subs.push(o);
                if let Some(t) = topic {
                    self.bosch.sub_by_topic.insert((p, t), i);
                }
                i
            }
        };
        self.objs.subs[sub].node = self.bosch_node(p);
    }

    pub(crate) fn bosch_timer_added(&mut self, e: &Event) {
        use timer_added::*;
        let p = e.p;
        let handle = e.u(CALLBACK_REF).unwrap_or(0);
        let c = self.objs.cbs.get(p, handle);
        let period = e.i(PERIOD_SEC).unwrap_or(0) * NS_PER_SEC + e.i(PERIOD_NSEC).unwrap_or(0);
        let node = self.bosch_node(p);
        let t =
            self.objs.timers.push(Obj { proc: p, handle, period: Some(period), ts: Some(e.ts), known: true, node, ..Default::default() });
        let cb = &mut self.objs.cbs[c];
        cb.kind = CallbackKind::Timer;
        cb.owner = Some(t);
        cb.known = true;
        cb.symbol = e.text(TYPE_INFO).or_else(|| e.text(FUNCTION_NAME));
        cb.ts.get_or_insert(e.ts);
    }

    pub(crate) fn bosch_ptr_name_info(&mut self, e: &Event) {
        use ptr_name_info::*;
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK_REF).unwrap_or(0));
        if self.objs.cbs[c].symbol.is_none() {
            self.objs.cbs[c].symbol = e.text(FUNCTION_NAME);
        }
    }

    pub(crate) fn bosch_callback_start(&mut self, e: &Event) {
        let r = e.u(callback_start::CALLBACK_REF).unwrap_or(0);
        if self.bosch.queues.contains(e.p, r) {
            self.threads[e.th].queue_depth += 1;
        } else {
            self.runtime_seen(e.p);
            let c = self.objs.cbs.get(e.p, r);
            self.open_run(e.th, c, e.ts, false);
        }
    }

    pub(crate) fn bosch_callback_end(&mut self, e: &Event) {
        let r = e.u(callback_end::CALLBACK_REF).unwrap_or(0);
        if self.bosch.queues.contains(e.p, r) {
            let t = &mut self.threads[e.th];
            t.queue_depth = t.queue_depth.saturating_sub(1);
        } else {
            let c = self.objs.cbs.get(e.p, r);
            self.close_run(e.th, c, e.ts);
        }
    }

    pub(crate) fn bosch_subscriber_callback_start(&mut self, e: &Event) {
        use subscriber_callback_start::*;
        self.runtime_seen(e.p);
        let topic = e.text(TOPIC);
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK_REF).unwrap_or(0));
        if self.objs.cbs[c].kind == CallbackKind::Unknown {
            let owner = topic.and_then(|t| self.bosch.sub_by_topic.get(&(e.p, t)).copied());
            let cb = &mut self.objs.cbs[c];
            cb.kind = CallbackKind::Subscription;
            cb.known = true;
            cb.owner = owner;
        }
        self.open_run(e.th, c, e.ts, false);
    }

    pub(crate) fn bosch_subscriber_callback_end(&mut self, e: &Event) {
        let c = self.objs.cbs.get(e.p, e.u(subscriber_callback_end::CALLBACK_REF).unwrap_or(0));
        self.close_run(e.th, c, e.ts);
    }

    /// A publication: the publisher of its topic (one per topic and process).
    pub(crate) fn bosch_publisher_message_queued(&mut self, e: &Event) {
        use publisher_message_queued::*;
        self.runtime_seen(e.p);
        let p = e.p;
        let publisher = e.text(TOPIC).map(|t| match self.bosch.pub_by_topic.get(&(p, t.clone())) {
            Some(&i) => i,
            None => {
                let node = self.bosch_node(p);
                let i =
                    self.objs.pubs.push(Obj { proc: p, name: Some(t.clone()), known: false, node, ts: Some(e.ts), ..Default::default() });
                self.bosch.pub_by_topic.insert((p, t), i);
                i
            }
        });
        self.push_ros1_publication(e, publisher, e.u(BUFFER_REF).unwrap_or(0));
    }

    /// A message queued for a subscription: a take (no run, no link).
    pub(crate) fn bosch_subscription_message_queued(&mut self, e: &Event) {
        use subscription_message_queued::*;
        let sub = e.text(TOPIC).and_then(|t| self.bosch.sub_by_topic.get(&(e.p, t)).copied());
        self.takes.push(Take { sub, thread: e.th, ts: e.ts, message: e.u(MESSAGE_REF).unwrap_or(0), taken: true, ..Default::default() });
    }
}
