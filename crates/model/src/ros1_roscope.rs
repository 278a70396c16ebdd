//! ROS 1 events of roscope's own tracer (`roscope_ros1:*`,
//! docs/ros1-tracer.md): logical nodes, endpoints, timers and services with
//! their callbacks, and the path of each message: published, serialized
//! into a buffer, written on a TCP connection, read on the other side,
//! queued for a callback, and taken by the callback run. A received message
//! is matched to its publication exactly: the publisher side of the same
//! connection (by its addresses) wrote it at the same position.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::builder::{Builder, Event, Handler};
use crate::events::roscope_ros1::*;
use crate::events::Ev;
use crate::objects::{Obj, Take};
use crate::registry::HandleMap;
use crate::schema::{CallbackKind, LinkMethod};

/// roscope's ROS 1 tracer's events.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::R1NodeInit, Builder::r1_node_init),
    (Ev::R1PubInit, Builder::r1_publisher_init),
    (Ev::R1SubInit, Builder::r1_subscription_init),
    (Ev::R1TimerInit, Builder::r1_timer_init),
    (Ev::R1SrvInit, Builder::r1_service_init),
    (Ev::R1CbRegister, Builder::r1_callback_register),
    (Ev::R1LinkTxInit, Builder::r1_link_init),
    (Ev::R1LinkRxInit, Builder::r1_link_init),
    (Ev::R1Publish, Builder::r1_publish),
    (Ev::R1PublishBuffer, Builder::r1_publish_buffer),
    (Ev::R1LinkTxWrite, Builder::r1_link_tx_write),
    (Ev::R1LinkRxMessage, Builder::r1_link_rx_message),
    (Ev::R1MessageQueue, Builder::r1_message_queue),
    (Ev::R1CallbackStart, Builder::r1_callback_start),
    (Ev::R1CallbackEnd, Builder::r1_callback_end),
];

/// Where a ROS 1 message came from, before connections are resolved.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    Publication(usize),
    /// Index into `RoscopeState::rx`.
    Rx(usize),
}

#[derive(Default)]
pub struct RoscopeState {
    /// Logical nodes by (process, name).
    node_of: FxHashMap<(usize, String), usize>,
    /// Connections: link -> (local, remote) addresses, per side.
    tx_link: HandleMap<(String, String)>,
    rx_link: HandleMap<(String, String)>,
    /// Publisher-side link by (local, remote) addresses: (process, link), latest.
    tx_by_addr: FxHashMap<(String, String), (usize, u64)>,
    /// The publications written on each publisher-side link, in order from
    /// position `.0` (None: a write whose message is unknown, which still
    /// takes its place). Writes that carry their position (`index`) go there,
    /// so a link whose first writes came before the session still matches.
    /// Streaming, the writes of publications forgotten leave from the front
    /// (`prune`) and `.0` moves on.
    tx_writes: HandleMap<(u64, VecDeque<Option<usize>>)>,
    pub_by_id: HandleMap<usize>,
    /// The latest source of a buffer in a process.
    buf: HandleMap<Source>,
    /// The publication of a message object (no-copy, in-process delivery).
    obj: HandleMap<usize>,
    /// The latest message queued by a deserializer: (source, queue time).
    queued: HandleMap<(Source, u64)>,
    /// Received messages: (receiving process, link, position on the link,
    /// time in the merged order); `rx[0]` is message `rx_base` (`Source::Rx`).
    rx: VecDeque<(usize, u64, u64, i64)>,
    rx_base: usize,
    /// The publications, in order: (time in the merged order, process,
    /// message id, message object, id), what `prune` forgets them by.
    published: VecDeque<(i64, usize, Option<u64>, u64, usize)>,
}

impl RoscopeState {
    /// The publication a received message came from: its connection's
    /// publisher side, by addresses, and the write at the same position.
    pub fn resolve(&self, rx: usize) -> Option<usize> {
        let &(p, l, k, _) = self.rx.get(rx.checked_sub(self.rx_base)?)?;
        let (local, remote) = self.rx_link.get(p, l)?;
        let &(tp, tl) = self.tx_by_addr.get(&(remote.clone(), local.clone()))?;
        let (base, w) = self.tx_writes.get(tp, tl)?;
        *w.get(k.checked_sub(*base)? as usize)?
    }

    /// Streaming: forgets the publications older than `before` (merged
    /// order; the linker forgets its own at the same time), their writes on
    /// the connections, and the messages received before it: a take that
    /// matches a message by them is emitted earlier. Without it, these grow
    /// with every message of the run (a live session's memory grew by ~17 KiB
    /// a second with the ROS 1 example).
    pub fn prune(&mut self, before: i64) {
        let mut first_kept = None;
        while self.published.front().is_some_and(|x| x.0 < before) {
            let Some((_, p, id, msg, pi)) = self.published.pop_front() else { break };
            if let Some(id) = id {
                if self.pub_by_id.get(p, id) == Some(&pi) {
                    self.pub_by_id.remove(p, id);
                }
            }
            if msg != 0 && self.obj.get(p, msg) == Some(&pi) {
                self.obj.remove(p, msg);
            }
            first_kept = Some(pi + 1);
        }
        if let Some(min) = first_kept {
            for (base, w) in self.tx_writes.values_mut() {
                while w.front().is_some_and(|x| x.is_none_or(|pi| pi < min)) {
                    w.pop_front();
                    *base += 1;
                }
            }
        }
        while self.rx.front().is_some_and(|x| x.3 < before) {
            self.rx.pop_front();
            self.rx_base += 1;
        }
    }

    /// Entries held (the test of `prune`): publications, received messages,
    /// writes on connections, message ids and objects.
    pub fn held(&self) -> usize {
        self.published.len()
            + self.rx.len()
            + self.tx_writes.values().map(|(_, w)| w.len()).sum::<usize>()
            + self.pub_by_id.len()
            + self.obj.len()
    }
}

/// The fields that name an endpoint's node: its NodeHandle namespace, else
/// the process's node name.
fn node_name(ns: Option<String>, name: Option<String>) -> Option<String> {
    if ns.as_deref().is_none_or(|x| x.is_empty() || x == "/") {
        name
    } else {
        ns
    }
}

impl Builder {
    /// A logical node (NodeHandle namespace, or the process's node name).
    fn r1_node(&mut self, p: usize, name: String, ts: u64) -> usize {
        if let Some(&n) = self.r1.node_of.get(&(p, name.clone())) {
            return n;
        }
        let dumped = self.dumping(p);
        let n = self.objs.nodes.push(Obj { proc: p, name: Some(name.clone()), ts: Some(ts), known: true, dumped, ..Default::default() });
        self.r1.node_of.insert((p, name), n);
        n
    }

    pub(crate) fn r1_node_init(&mut self, e: &Event) {
        self.r1_node(e.p, e.text(node_init::NODE_NAME).unwrap_or_default(), e.ts);
    }

    pub(crate) fn r1_publisher_init(&mut self, e: &Event) {
        use publisher_init::*;
        let node = node_name(e.text(NH_NAMESPACE), e.text(NODE_NAME)).map(|n| self.r1_node(e.p, n, e.ts));
        let handle = e.u(PUBLISHER).unwrap_or(0);
        let o = Obj {
            proc: e.p,
            node,
            handle,
            name: e.text(TOPIC),
            depth: e.i(QUEUE_SIZE),
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        self.objs.pubs.init(o, false);
    }

    pub(crate) fn r1_subscription_init(&mut self, e: &Event) {
        use subscription_init::*;
        let node = node_name(e.text(NH_NAMESPACE), e.text(NODE_NAME)).map(|n| self.r1_node(e.p, n, e.ts));
        let handle = e.u(SUBSCRIPTION).unwrap_or(0);
        let o = Obj {
            proc: e.p,
            node,
            handle,
            name: e.text(TOPIC),
            depth: e.i(QUEUE_SIZE),
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        let sub = self.objs.subs.init(o, false);
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Subscription, sub, e.ts);
    }

    pub(crate) fn r1_timer_init(&mut self, e: &Event) {
        use timer_init::*;
        let node = node_name(e.text(NH_NAMESPACE), e.text(NODE_NAME)).map(|n| self.r1_node(e.p, n, e.ts));
        let o = Obj {
            proc: e.p,
            node,
            handle: e.u(TIMER).unwrap_or(0),
            period: e.i(PERIOD),
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        let t = self.objs.timers.init(o, false);
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Timer, t, e.ts);
    }

    pub(crate) fn r1_service_init(&mut self, e: &Event) {
        use service_init::*;
        let node = node_name(e.text(NH_NAMESPACE), e.text(NODE_NAME)).map(|n| self.r1_node(e.p, n, e.ts));
        let o = Obj {
            proc: e.p,
            node,
            handle: e.u(SERVICE).unwrap_or(0),
            name: e.text(SERVICE_NAME),
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        let sv = self.objs.services.init(o, false);
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Service, sv, e.ts);
    }

    pub(crate) fn r1_callback_register(&mut self, e: &Event) {
        use callback_register::*;
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let cb = &mut self.objs.cbs[c];
        cb.dumped |= e.dump && !cb.known;
        cb.symbol = e.text(SYMBOL);
        cb.known = true;
    }

    /// One side of a TCP connection, with its addresses.
    pub(crate) fn r1_link_init(&mut self, e: &Event) {
        let tx = e.ev == crate::events::Ev::R1LinkTxInit;
        let (l, local, remote) = if tx {
            use link_tx_init::*;
            (e.u(LINK), e.text(LOCAL_ADDR), e.text(REMOTE_ADDR))
        } else {
            use link_rx_init::*;
            (e.u(LINK), e.text(LOCAL_ADDR), e.text(REMOTE_ADDR))
        };
        let (Some(l), Some(local), Some(remote)) = (l, local, remote) else { return };
        if tx {
            self.r1.tx_link.insert(e.p, l, (local.clone(), remote.clone()));
            self.r1.tx_by_addr.insert((local, remote), (e.p, l));
            if !(e.dump && self.r1.tx_writes.contains(e.p, l)) {
                self.r1.tx_writes.insert(e.p, l, (0, VecDeque::new()));
            }
        } else {
            self.r1.rx_link.insert(e.p, l, (local, remote));
        }
    }

    pub(crate) fn r1_publish(&mut self, e: &Event) {
        use publish::*;
        self.runtime_seen(e.p);
        let publisher = e.u(PUBLISHER).map(|h| self.objs.pubs.get(e.p, h));
        let msg = e.u(MESSAGE).unwrap_or(0);
        let pi = self.push_ros1_publication(e, publisher, msg);
        let id = e.u(MESSAGE_ID);
        if let Some(id) = id {
            self.r1.pub_by_id.insert(e.p, id, pi);
        }
        if msg != 0 {
            self.r1.obj.insert(e.p, msg, pi);
        }
        let ts = self.merged_ts(e.ts, e.th);
        self.r1.published.push_back((ts, e.p, id, msg, pi));
        self.threads[e.th].pending_pub = Some(pi);
    }

    /// A publication serialized into a buffer.
    pub(crate) fn r1_publish_buffer(&mut self, e: &Event) {
        use publish_buffer::*;
        let (Some(id), Some(b)) = (e.u(MESSAGE_ID), e.u(BUFFER)) else { return };
        if let Some(&pi) = self.r1.pub_by_id.get(e.p, id) {
            match self.publications.get_mut(pi) {
                Some(pb) => pb.rmw_ts = Some(e.ts),
                None => self.counts.late_updates += 1,
            }
            self.r1.buf.insert(e.p, b, Source::Publication(pi));
        }
    }

    /// A buffer written on a publisher-side connection: the next position.
    pub(crate) fn r1_link_tx_write(&mut self, e: &Event) {
        use link_tx_write::*;
        let (Some(l), Some(b)) = (e.u(LINK), e.u(BUFFER)) else { return };
        let src = match self.r1.buf.get(e.p, b) {
            Some(Source::Publication(pi)) => Some(*pi),
            _ => None,
        };
        let index = e.u(INDEX);
        if index == Some(u64::MAX) {
            return; // the tracer's table of links was full: position unknown
        }
        if index.is_some() && !self.r1.tx_writes.contains(e.p, l) {
            // A link whose init event comes later (in a state dump).
            self.r1.tx_writes.insert(e.p, l, (0, VecDeque::new()));
        }
        if let Some((base, w)) = self.r1.tx_writes.get_mut(e.p, l) {
            match index {
                Some(k) if w.is_empty() => {
                    *base = k;
                    w.push_back(src);
                }
                Some(k) if k >= *base => {
                    let at = (k - *base) as usize;
                    if at >= w.len() {
                        w.resize(at + 1, None);
                    }
                    w[at] = src;
                }
                Some(_) => {}
                None => w.push_back(src),
            }
        }
    }

    /// A message read from a subscriber-side connection, at position `index`.
    pub(crate) fn r1_link_rx_message(&mut self, e: &Event) {
        use link_rx_message::*;
        if let (Some(l), Some(b), Some(k)) = (e.u(LINK), e.u(BUFFER), e.u(INDEX)) {
            let ts = self.merged_ts(e.ts, e.th);
            self.r1.rx.push_back((e.p, l, k, ts));
            let i = self.r1.rx_base + self.r1.rx.len() - 1;
            self.r1.buf.insert(e.p, b, Source::Rx(i));
        }
    }

    /// A message queued for a callback by its deserializer: from a received
    /// buffer, or a message object published in-process.
    pub(crate) fn r1_message_queue(&mut self, e: &Event) {
        use message_queue::*;
        let d = e.u(DESERIALIZER).unwrap_or(0);
        let b = e.u(BUFFER).unwrap_or(0);
        let o = e.u(MESSAGE).unwrap_or(0);
        let src = if b != 0 {
            self.r1.buf.get(e.p, b).copied()
        } else if o != 0 {
            self.r1.obj.get(e.p, o).map(|&pi| Source::Publication(pi))
        } else {
            None
        };
        match src {
            Some(src) => self.r1.queued.insert(e.p, d, (src, e.ts)),
            None => self.r1.queued.remove(e.p, d),
        }
    }

    /// A callback run; with a deserializer, it takes the message queued by it.
    pub(crate) fn r1_callback_start(&mut self, e: &Event) {
        use callback_start::*;
        self.runtime_seen(e.p);
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let r = self.open_run(e.th, c, e.ts, false);
        let d = e.u(DESERIALIZER).unwrap_or(0);
        if d == 0 {
            return;
        }
        let (src, qts) = match self.r1.queued.get(e.p, d) {
            Some(&(s, q)) => (Some(s), q),
            None => (None, e.ts),
        };
        let (publication, rx) = match src {
            Some(Source::Publication(pi)) => (Some(pi), None),
            Some(Source::Rx(i)) => (None, Some(i)),
            None => (None, None),
        };
        self.takes.push(Take {
            sub: self.objs.cbs.subscription_of(c),
            thread: e.th,
            ts: qts,
            message: 0,
            taken: true,
            run: Some(r),
            intra: publication.is_some(),
            publication,
            r1_rx: rx,
            method: Some(LinkMethod::Ros1Roscope),
            ..Default::default()
        });
    }

    pub(crate) fn r1_callback_end(&mut self, e: &Event) {
        let c = self.objs.cbs.get(e.p, e.u(callback_end::CALLBACK).unwrap_or(0));
        self.close_run(e.th, c, e.ts);
    }
}
