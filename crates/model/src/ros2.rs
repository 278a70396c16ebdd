//! ROS 2 core events (ros2_tracing, `ros2:*`): nodes, endpoints, timers,
//! services and their handles; callback runs; publications through the
//! rclcpp, rcl and rmw layers; takes; intra-process delivery through ring
//! buffers (Iron on).

use rustc_hash::FxHashMap;

use crate::builder::{Builder, Event, Handler};
use crate::events::ros2::*;
use crate::events::Ev;
use crate::objects::{Obj, Publication, Run, StampSource, Take};
use crate::registry::{HandleMap, Layer, Registry};
use crate::schema::{CallbackKind, LinkMethod};

/// The core ROS 2 events (rcl, rclcpp, rmw) and roscope's callback frames.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::NodeInit, Builder::node_init),
    (Ev::RmwPubInit, Builder::rmw_endpoint_init),
    (Ev::RmwSubInit, Builder::rmw_endpoint_init),
    (Ev::RmwClientInit, Builder::rmw_endpoint_init),
    (Ev::PubInit, Builder::endpoint_init),
    (Ev::SubInit, Builder::endpoint_init),
    (Ev::RclcppSubInit, Builder::rclcpp_subscription_init),
    (Ev::SubCbAdded, Builder::subscription_callback_added),
    (Ev::SrvInit, Builder::service_or_client_init),
    (Ev::ClientInit, Builder::service_or_client_init),
    (Ev::SrvCbAdded, Builder::service_callback_added),
    (Ev::TimerInit, Builder::timer_init),
    (Ev::TimerCbAdded, Builder::timer_callback_added),
    (Ev::TimerLinkNode, Builder::timer_link_node),
    (Ev::CbRegister, Builder::callback_register),
    (Ev::IpbToSub, Builder::ipb_to_subscription),
    (Ev::BufferToIpb, Builder::buffer_to_ipb),
    (Ev::CallbackStart, Builder::callback_start),
    (Ev::CallbackEnd, Builder::callback_end),
    (Ev::RclcppPublish, Builder::publish),
    (Ev::RclPublish, Builder::publish),
    (Ev::RmwPublish, Builder::publish),
    (Ev::RclcppIntraPublish, Builder::publish),
    (Ev::RingEnqueue, Builder::ring_buffer_enqueue),
    (Ev::RingDequeue, Builder::ring_buffer_dequeue),
    (Ev::RmwTake, Builder::rmw_take),
    (Ev::RclTake, Builder::upper_take),
    (Ev::RclcppTake, Builder::upper_take),
    (Ev::R2CallbackFrame, Builder::callback_frame),
];

/// What only ROS 2 intra-process matching needs.
#[derive(Default)]
pub struct Ros2State {
    /// Intra-process buffer (ipb) -> the subscription it delivers to.
    ipb_sub: HandleMap<usize>,
    /// Ring buffer -> its ipb.
    buffer_ipb: HandleMap<u64>,
    /// The latest enqueue into (process, buffer, index): its publication.
    rb_slot: FxHashMap<(usize, u64, u64), usize>,
    /// Per thread, the takes since its last callback start (at most `RECENT_TAKES`):
    /// an executor may take several messages before it runs their callbacks (rclpy's
    /// action client takes its feedback, then its status).
    recent: FxHashMap<usize, Vec<usize>>,
}

/// How many takes per thread `Ros2State::recent` keeps.
const RECENT_TAKES: usize = 16;

/// The fields of an rcl publisher or subscription init event.
struct Endpoint {
    handle: u64,
    node: Option<u64>,
    rmw: Option<u64>,
    topic: Option<String>,
    depth: Option<i64>,
}

/// An init event for an rcl handle not seen yet, whose rmw handle already names an
/// object known only by it (runtime events came first: a state dump comes after the
/// session started): that object is the one being named, not a new one.
fn adopt_unknown(list: &mut Registry<Obj>, p: usize, handle: u64, rmw: Option<u64>) {
    let Some(r) = rmw else { return };
    if list.find(Layer::Rcl, p, handle).is_some() {
        return;
    }
    if let Some(i) = list.find(Layer::Rmw, p, r) {
        if !list[i].known {
            list.name(Layer::Rcl, p, handle, i);
        }
    }
}

impl Builder {
    pub(crate) fn node_init(&mut self, e: &Event) {
        use rcl_node_init::*;
        let o = Obj {
            proc: e.p,
            handle: e.u(NODE_HANDLE).unwrap_or(0),
            rmw_handle: e.u(RMW_HANDLE),
            name: e.text(NODE_NAME),
            ns: e.text(NAMESPACE),
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        self.objs.nodes.init(o, e.caret);
    }

    /// The GID of an rmw publisher, subscription or client.
    pub(crate) fn rmw_endpoint_init(&mut self, e: &Event) {
        let (h, gid) = match e.ev {
            Ev::RmwPubInit => (e.u(rmw_publisher_init::RMW_PUBLISHER_HANDLE), e.hex(rmw_publisher_init::GID)),
            Ev::RmwSubInit => (e.u(rmw_subscription_init::RMW_SUBSCRIPTION_HANDLE), e.hex(rmw_subscription_init::GID)),
            _ => (e.u(rmw_client_init::RMW_CLIENT_HANDLE), e.hex(rmw_client_init::GID)),
        };
        let (h, Some(gid)) = (h.unwrap_or(0), gid) else { return };
        let objs = &mut self.objs;
        let list = match e.ev {
            Ev::RmwPubInit => Some(&mut objs.pubs),
            Ev::RmwSubInit => Some(&mut objs.subs),
            _ => None,
        };
        if let Some(list) = list {
            if let Some(i) = list.find(Layer::Rmw, e.p, h) {
                list[i].gid = Some(gid.clone());
            }
        }
        objs.gids.insert(e.p, h, gid);
    }

    /// An rcl publisher or subscription: a new object, named by its rcl and
    /// rmw handles, with the GID its rmw init event gave.
    pub(crate) fn endpoint_init(&mut self, e: &Event) {
        let f = if e.ev == Ev::PubInit {
            use rcl_publisher_init::*;
            Endpoint {
                handle: e.u(PUBLISHER_HANDLE).unwrap_or(0),
                node: e.u(NODE_HANDLE),
                rmw: e.u(RMW_PUBLISHER_HANDLE),
                topic: e.text(TOPIC_NAME),
                depth: e.i(QUEUE_DEPTH),
            }
        } else {
            use rcl_subscription_init::*;
            Endpoint {
                handle: e.u(SUBSCRIPTION_HANDLE).unwrap_or(0),
                node: e.u(NODE_HANDLE),
                rmw: e.u(RMW_SUBSCRIPTION_HANDLE),
                topic: e.text(TOPIC_NAME),
                depth: e.i(QUEUE_DEPTH),
            }
        };
        let p = e.p;
        let node = f.node.map(|n| self.objs.nodes.get(p, n));
        let gid = f.rmw.and_then(|r| self.objs.gids.get(p, r).cloned());
        let o = Obj {
            proc: p,
            node,
            handle: f.handle,
            rmw_handle: f.rmw,
            name: f.topic,
            depth: f.depth,
            gid,
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        let list = if e.ev == Ev::PubInit { &mut self.objs.pubs } else { &mut self.objs.subs };
        adopt_unknown(list, p, f.handle, f.rmw);
        let i = list.init(o, e.caret);
        if let Some(r) = f.rmw {
            list.name(Layer::Rmw, p, r, i);
        }
    }

    /// The subscription an rclcpp subscription object belongs to (a new
    /// unknown one when its rcl init was not recorded).
    fn sub_of_rclcpp(&mut self, p: usize, x: u64) -> usize {
        self.objs.subs.find_or_unknown(Layer::Rclcpp, p, x, |o| o.extra = Some(x))
    }

    pub(crate) fn rclcpp_subscription_init(&mut self, e: &Event) {
        use rclcpp_subscription_init::*;
        let subs = &mut self.objs.subs;
        let i = subs.get(e.p, e.u(SUBSCRIPTION_HANDLE).unwrap_or(0));
        if let Some(x) = e.u(SUBSCRIPTION) {
            // rclcpp's intra-process subscription adds its callback and its buffer before this
            // event names it: the stand-in they made is this subscription.
            let early = subs.find(Layer::Rclcpp, e.p, x).filter(|&u| u != i && !subs[u].known && subs[u].rmw_handle.is_none());
            subs[i].extra = Some(x);
            subs.name(Layer::Rclcpp, e.p, x, i);
            if let Some(u) = early {
                self.absorb_subscription(u, i);
            }
        }
    }

    /// Stand-in subscription `u` is subscription `i`: its callbacks and intra-process buffers
    /// become `i`'s, and `u` goes (it is the newest object, made moments ago by the same
    /// constructor: row ids stay dense); if another came after it, it stays as an empty row.
    fn absorb_subscription(&mut self, u: usize, i: usize) {
        self.objs.subs[u].absorbed = true;
        for cb in self.objs.cbs.iter_mut() {
            if cb.kind == CallbackKind::Subscription && cb.owner == Some(u) {
                cb.owner = Some(i);
            }
        }
        for s in self.ros2.ipb_sub.values_mut() {
            if *s == u {
                *s = i;
            }
        }
        self.objs.subs.remove_newest(u);
    }

    pub(crate) fn subscription_callback_added(&mut self, e: &Event) {
        use rclcpp_subscription_callback_added::*;
        let sub = self.sub_of_rclcpp(e.p, e.u(SUBSCRIPTION).unwrap_or(0));
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Subscription, sub, e.ts);
    }

    pub(crate) fn service_or_client_init(&mut self, e: &Event) {
        let (handle, node, rmw, name) = if e.ev == Ev::SrvInit {
            use rcl_service_init::*;
            (e.u(SERVICE_HANDLE), e.u(NODE_HANDLE), e.u(RMW_SERVICE_HANDLE), e.text(SERVICE_NAME))
        } else {
            use rcl_client_init::*;
            (e.u(CLIENT_HANDLE), e.u(NODE_HANDLE), e.u(RMW_CLIENT_HANDLE), e.text(SERVICE_NAME))
        };
        let p = e.p;
        let node = node.map(|n| self.objs.nodes.get(p, n));
        let gid = rmw.and_then(|r| self.objs.gids.get(p, r).cloned());
        let o = Obj {
            proc: p,
            node,
            handle: handle.unwrap_or(0),
            rmw_handle: rmw,
            name,
            gid,
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        let list = if e.ev == Ev::SrvInit { &mut self.objs.services } else { &mut self.objs.clients };
        adopt_unknown(list, p, handle.unwrap_or(0), rmw);
        let i = list.init(o, e.caret);
        if let Some(r) = rmw {
            list.name(Layer::Rmw, p, r, i);
        }
    }

    pub(crate) fn service_callback_added(&mut self, e: &Event) {
        use rclcpp_service_callback_added::*;
        let sv = self.objs.services.get(e.p, e.u(SERVICE_HANDLE).unwrap_or(0));
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Service, sv, e.ts);
    }

    pub(crate) fn timer_init(&mut self, e: &Event) {
        use rcl_timer_init::*;
        let o = Obj {
            proc: e.p,
            handle: e.u(TIMER_HANDLE).unwrap_or(0),
            period: e.i(PERIOD),
            ts: Some(e.ts),
            dumped: e.dump,
            ..Default::default()
        };
        self.objs.timers.init(o, e.caret);
    }

    pub(crate) fn timer_callback_added(&mut self, e: &Event) {
        use rclcpp_timer_callback_added::*;
        let t = self.objs.timers.get(e.p, e.u(TIMER_HANDLE).unwrap_or(0));
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Timer, t, e.ts);
    }

    pub(crate) fn timer_link_node(&mut self, e: &Event) {
        use rclcpp_timer_link_node::*;
        let t = self.objs.timers.get(e.p, e.u(TIMER_HANDLE).unwrap_or(0));
        let n = e.u(NODE_HANDLE).map(|n| self.objs.nodes.get(e.p, n));
        self.objs.timers[t].node = n;
    }

    pub(crate) fn callback_register(&mut self, e: &Event) {
        use rclcpp_callback_register::*;
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let cb = &mut self.objs.cbs[c];
        cb.dumped |= e.dump && !cb.known;
        cb.symbol = e.text(SYMBOL);
        cb.known = true;
        cb.ts.get_or_insert(e.ts);
    }

    pub(crate) fn ipb_to_subscription(&mut self, e: &Event) {
        use rclcpp_ipb_to_subscription::*;
        if let (Some(ipb), Some(x)) = (e.u(IPB), e.u(SUBSCRIPTION)) {
            let sub = self.sub_of_rclcpp(e.p, x);
            self.ros2.ipb_sub.insert(e.p, ipb, sub);
        }
    }

    pub(crate) fn buffer_to_ipb(&mut self, e: &Event) {
        use rclcpp_buffer_to_ipb::*;
        if let (Some(b), Some(ipb)) = (e.u(BUFFER), e.u(IPB)) {
            self.ros2.buffer_ipb.insert(e.p, b, ipb);
        }
    }

    /// A callback run starts; the latest take on its thread, for its
    /// subscription (a service's request reader, a client's response reader:
    /// `input_endpoint`), fed it: the pending one, else the latest of its
    /// subscription since the thread's last callback start.
    pub(crate) fn callback_start(&mut self, e: &Event) {
        use callback_start::*;
        self.runtime_seen(e.p);
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let intra = e.u(IS_INTRA_PROCESS).unwrap_or(0) != 0;
        let r = self.open_run(e.th, c, e.ts, intra);
        let want = self.input_endpoint(c);
        // A timer takes no message; an intra-process run takes an intra-process take, another run
        // another take (rclcpp 28 takes a message its subscription already had intra-process
        // through DDS too, and drops it without a run: that take feeds no run).
        let timer = self.objs.cbs[c].kind == CallbackKind::Timer;
        let free = move |t: &Take| t.run.is_none() && !timer && t.intra == intra;
        let fits = |t: &Take| free(t) && (want.is_none() || t.sub.is_none() || t.sub == want);
        let mut pick = self.pending_take(e.th).is_some_and(|t| fits(t)).then(|| self.threads[e.th].pending_take).flatten();
        if pick.is_none() && want.is_some() {
            let takes = &self.takes;
            pick = self
                .ros2
                .recent
                .get(&e.th)
                .and_then(|v| v.iter().rev().copied().find(|&k| takes.get(k).is_some_and(|t| free(t) && t.sub == want)));
        }
        if let Some(take) = pick.and_then(|k| self.takes.get_mut(k)) {
            take.run = Some(r);
            if take.sub.is_none() {
                take.sub = want;
            }
        }
        self.threads[e.th].pending_take = None;
        if let Some(v) = self.ros2.recent.get_mut(&e.th) {
            v.clear();
        }
    }

    /// A take waiting on its thread for the callback run it feeds (`callback_start`).
    pub(crate) fn push_input_take(&mut self, th: usize, t: Take) -> usize {
        self.push_pending_take(th, t);
        let k = self.takes.created() - 1;
        let v = self.ros2.recent.entry(th).or_default();
        if v.len() == RECENT_TAKES {
            v.remove(0);
        }
        v.push(k);
        k
    }

    pub(crate) fn callback_end(&mut self, e: &Event) {
        let c = self.objs.cbs.get(e.p, e.u(callback_end::CALLBACK).unwrap_or(0));
        self.close_run(e.th, c, e.ts);
    }

    /// `roscope_ros2:callback_frame` (the rclpy hook, right after a callback_end): the run of
    /// `callback` that ended last on this thread ran from `start` to `end`, the clock read
    /// right before its frame's first instruction and right after its return (CLOCK_MONOTONIC,
    /// the trace's clock). Those become the run's times: what the run spent in the callback,
    /// without callback_start's write after its clock read and callback_end's call up to its
    /// clock read. Only within the run's callback_start and callback_end (else counted, and the
    /// run keeps its events' times: a trace on another clock, say).
    pub(crate) fn callback_frame(&mut self, e: &Event) {
        use crate::events::roscope_ros2::callback_frame::*;
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let last = self.threads[e.th].last_closed.take();
        let fits = |run: &Run, s: u64, t: u64| run.cb == c && run.start <= s && s <= t && run.end.is_some_and(|end| t <= end);
        match (last.and_then(|r| self.runs.get_mut(r)), e.u(START), e.u(END)) {
            (Some(run), Some(s), Some(t)) if fits(run, s, t) => {
                run.start = s;
                run.end = Some(t);
                self.counts.frames += 1;
            }
            _ => self.counts.unmatched_frames += 1,
        }
    }

    /// One layer of a publication (rclcpp, rcl, rmw, or rclcpp intra-process):
    /// it continues the publication in progress on its thread (same message,
    /// a layer below), or starts a new one.
    pub(crate) fn publish(&mut self, e: &Event) {
        self.runtime_seen(e.p);
        let (p, th, ev) = (e.p, e.th, e.ev);
        let (pubh, msg, stamp) = match ev {
            Ev::RclcppPublish => (e.u(rclcpp_publish::PUBLISHER_HANDLE), e.u(rclcpp_publish::MESSAGE), None),
            Ev::RclPublish => (e.u(rcl_publish::PUBLISHER_HANDLE), e.u(rcl_publish::MESSAGE), None),
            Ev::RmwPublish => (e.u(rmw_publish::RMW_PUBLISHER_HANDLE), e.u(rmw_publish::MESSAGE), e.i(rmw_publish::TIMESTAMP)),
            _ => (e.u(rclcpp_intra_publish::PUBLISHER_HANDLE), e.u(rclcpp_intra_publish::MESSAGE), None),
        };
        let msg = msg.unwrap_or(0);
        let pubh = pubh.filter(|&h| h != 0); // rclcpp 28's rclcpp_publish names no publisher (nullptr)
        let cont = self.threads[th].pending_pub.filter(|&pi| {
            let Some(pb) = self.publications.get(pi) else { return false };
            let below = !pb.intra || pb.inter;
            pb.message == msg
                && match ev {
                    Ev::RclcppIntraPublish => false,
                    // rclcpp hands a message to its process's intra-process subscriptions, then the
                    // same message to the others (in other processes): one publication
                    Ev::RclcppPublish => pb.intra && !pb.inter && pb.rcl_ts.is_none() && pb.rmw_ts.is_none(),
                    Ev::RclPublish => below && pb.rcl_ts.is_none() && pb.rmw_ts.is_none(),
                    _ => below && pb.rmw_ts.is_none(),
                }
        });
        // An rmw handle seen first here, below an rcl layer whose publisher is known: the
        // same publisher (its init event may come later, in a state dump).
        let above = cont.and_then(|pi| self.publications.get(pi)).and_then(|pb| pb.publisher);
        let pubs = &mut self.objs.pubs;
        let publisher = pubh.map(|h| match ev {
            Ev::RmwPublish => match (pubs.find(Layer::Rmw, p, h), above) {
                (Some(i), _) => i,
                (None, Some(v)) => {
                    pubs.name(Layer::Rmw, p, h, v);
                    v
                }
                (None, None) => pubs.find_or_unknown(Layer::Rmw, p, h, |o| o.rmw_handle = Some(h)),
            },
            _ => pubs.get(p, h),
        });
        let pi = match cont {
            Some(pi) => pi,
            None => {
                let run = self.current_run(th);
                let intra = ev == Ev::RclcppIntraPublish;
                self.publications.push(Publication { thread: th, run, ts: e.ts, message: msg, intra, ..Default::default() })
            }
        };
        let pb = &mut self.publications[pi];
        match ev {
            Ev::RclcppPublish if pb.intra => pb.inter = true,
            Ev::RclcppPublish | Ev::RclcppIntraPublish => pb.rclcpp_ts = Some(e.ts),
            Ev::RclPublish => pb.rcl_ts = Some(e.ts),
            _ => pb.rmw_ts = Some(e.ts),
        }
        if publisher.is_some() && (pb.publisher.is_none() || ev == Ev::RclPublish) {
            pb.publisher = publisher;
        }
        if stamp.is_some() {
            pb.src_ts = stamp;
            pb.src_from = Some(StampSource::RmwPublish);
        }
        self.threads[th].pending_pub = Some(pi);
        if ev == Ev::RclcppIntraPublish {
            self.caret.intra_msg.insert(p, msg, pi);
        }
    }

    pub(crate) fn ring_buffer_enqueue(&mut self, e: &Event) {
        use rclcpp_ring_buffer_enqueue::*;
        let (Some(b), Some(idx)) = (e.u(BUFFER), e.u(INDEX)) else { return };
        if let Some(pi) = self.threads[e.th].pending_pub {
            if self.pending_publication(e.th).is_some_and(|pb| pb.intra) {
                self.ros2.rb_slot.insert((e.p, b, idx), pi);
            }
        }
    }

    /// An intra-process take: the publication that enqueued into the same slot.
    pub(crate) fn ring_buffer_dequeue(&mut self, e: &Event) {
        use rclcpp_ring_buffer_dequeue::*;
        let (Some(b), Some(idx)) = (e.u(BUFFER), e.u(INDEX)) else { return };
        let p = e.p;
        let publication = self.ros2.rb_slot.get(&(p, b, idx)).copied();
        let sub = self.ros2.buffer_ipb.get(p, b).and_then(|ipb| self.ros2.ipb_sub.get(p, *ipb)).copied();
        let t = Take {
            sub,
            thread: e.th,
            ts: e.ts,
            message: 0,
            taken: true,
            intra: true,
            publication,
            method: publication.map(|_| LinkMethod::IntraRingBuffer),
            ..Default::default()
        };
        self.push_pending_take(e.th, t);
    }

    pub(crate) fn rmw_take(&mut self, e: &Event) {
        use rmw_take::*;
        self.runtime_seen(e.p);
        let p = e.p;
        let taken = e.u(TAKEN).map(|x| x != 0).unwrap_or(true);
        let sub = e.u(RMW_SUBSCRIPTION_HANDLE).map(|h| self.objs.subs.find_or_unknown(Layer::Rmw, p, h, |o| o.rmw_handle = Some(h)));
        let t = Take {
            sub,
            thread: e.th,
            ts: e.ts,
            rmw_ts: Some(e.ts),
            message: e.u(MESSAGE).unwrap_or(0),
            src_ts: e.i(SOURCE_TIMESTAMP),
            taken,
            method: Some(LinkMethod::RmwTimestamp),
            ..Default::default()
        };
        if taken {
            self.push_input_take(e.th, t);
        } else {
            self.takes.push(t);
        }
    }

    /// `rcl_take` / `rclcpp_take`: the layers above the take in progress.
    pub(crate) fn upper_take(&mut self, e: &Event) {
        let msg = if e.ev == Ev::RclTake { e.u(rcl_take::MESSAGE) } else { e.u(rclcpp_take::MESSAGE) }.unwrap_or(0);
        if let Some(t) = self.pending_take(e.th) {
            if t.message == msg || t.message == 0 {
                if e.ev == Ev::RclTake {
                    t.rcl_ts = Some(e.ts);
                } else {
                    t.rclcpp_ts = Some(e.ts);
                }
            }
        }
    }
}
