//! ROS 2 services (and actions, whose goal, cancel and result are services):
//! requests and responses as messages.
//!
//! A service is, in DDS, two topics. The model gives each client and service
//! pseudo-endpoints on the pseudo-topics `<service>:request` and
//! `<service>:response` (rows of `publishers` and `subscriptions`; `:` is in
//! no ROS name): a request is a publication of its client's request writer
//! and a take of the service's request reader, fed into the service callback
//! run that handles it; the response is a publication made for that run
//! (sent right after it, on its thread) and a take of the client's response
//! reader. Transport links join them, so flows, input waits and statistics
//! see a call like any message; `service_calls` pairs each request with its
//! response.
//!
//! Matching across processes (`rmw_send_request` / `rmw_take_request`,
//! `rmw_send_response` / `rmw_take_response`: Kilted's rmw, or roscope's
//! tracer library on Jazzy, from rmw's own calls, as `roscope_ros2:*` with the
//! same layouts):
//! - the client's GID (its `rmw_client_init`) and the sequence number
//!   (`service_gid_sequence`);
//! - without a GID on the server's side (Jazzy): the service's name and the
//!   sequence number, the latest such request sent before the take
//!   (`service_sequence`; `service_sequence_nearest` when several clients
//!   sent it);
//! - a response goes with its request's call (client, sequence number).
//!
//! Either side may come first in the merged order (a hook's event follows the
//! call it reports): a take that finds no request yet waits for it, and so does
//! a response the client took before its request's send event was read (on a
//! busy host the server answers before the client's thread emits it): a call is
//! its (client, sequence number), whatever order its four events come in.
//!
//! A run in another task than its take (rclpy: a done callback of a request's
//! future, an action's execute callback) is told by `roscope_ros2:callback_input`
//! (callback, rmw handle, sequence number): the take it names becomes the
//! pending take of the run about to start (a copy of it, when another run
//! already took it: the goal request feeds both the goal callback and the
//! execute callback).

use rustc_hash::FxHashMap;

use crate::builder::{Builder, Event, Handler};
use crate::events::{roscope_ros2, services, Ev};
use crate::objects::{Obj, Publication, Take};
use crate::registry::Layer;
use crate::schema::{CallbackKind, LinkMethod};

/// Service requests and responses (Kilted's rmw, roscope's hook and tracer)
/// and clients' response callbacks.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::SendRequest, Builder::send_request),
    (Ev::TakeRequest, Builder::take_request),
    (Ev::SendResponse, Builder::send_response),
    (Ev::TakeResponse, Builder::take_response),
    (Ev::R2ClientCbAdded, Builder::client_callback_added),
    (Ev::R2CallbackInput, Builder::callback_input),
    (Ev::R2ServiceCopy, Builder::service_copy),
];

/// One request and its response.
#[derive(Clone, Copy, Default)]
pub struct Call {
    pub client: Option<usize>,
    pub service: Option<usize>,
    pub seq: i64,
    pub request_pub: Option<usize>,
    pub request_take: Option<usize>,
    pub response_pub: Option<usize>,
    pub response_take: Option<usize>,
    pub method: Option<LinkMethod>,
}

/// A request taken before its sending was read (merged order): its call, its
/// take, and its key in `ServiceState::taken`.
struct Orphan {
    call: usize,
    take: usize,
    key: TakenKey,
}

/// (service, client GID if known, sequence number).
type TakenKey = (usize, Option<String>, i64);

#[derive(Default)]
pub struct ServiceState {
    /// Client -> (its request publisher, its response subscription).
    client_ep: FxHashMap<usize, (usize, usize)>,
    /// Service -> (its request subscription, its response publisher).
    service_ep: FxHashMap<usize, (usize, usize)>,
    /// Requests sent, by (client GID, sequence number).
    sent_by_gid: FxHashMap<(String, i64), usize>,
    /// Requests sent, by (service name, sequence number): (time in the merged order, call).
    sent_by_name: FxHashMap<(String, i64), Vec<(i64, usize)>>,
    /// Requests taken before their sending, by the same keys.
    orphan_by_gid: FxHashMap<(String, i64), Orphan>,
    orphan_by_name: FxHashMap<(String, i64), Vec<Orphan>>,
    /// Requests taken, by (service, client GID if known, sequence number) -> call.
    taken: FxHashMap<TakenKey, usize>,
    /// Calls by (client, sequence number): the latest one.
    by_client: FxHashMap<(usize, i64), usize>,
    /// Takes by (service or client, is client, sequence number), for `callback_input`.
    take_of: FxHashMap<(usize, bool, i64), usize>,
    /// Response takes made before their response was read: (client, seq) -> take.
    early_response: FxHashMap<(usize, i64), usize>,
    /// Response takes read before their request's sending: (client, seq) -> take. The
    /// client took the answer before its thread emitted the send event (roscope's
    /// tracer emits it after the DDS write for a client's first request, or one whose
    /// number it could not predict): `send_request` pairs them.
    response_before_send: FxHashMap<(usize, i64), usize>,
    /// The copies `callback_input` made of a take (for another run), by the take.
    copies: FxHashMap<usize, Vec<usize>>,
    pub calls: Vec<Call>,
}

/// A GID field as hex, None when absent or all zeros (not known to the tracer).
fn gid(e: &Event, f: crate::events::Field) -> Option<String> {
    e.hex(f).filter(|g| g.bytes().any(|b| b != b'0'))
}

impl Builder {
    fn client_of_rmw(&mut self, p: usize, h: u64) -> usize {
        self.objs.clients.find_or_unknown(Layer::Rmw, p, h, |o| o.rmw_handle = Some(h))
    }

    fn service_of_rmw(&mut self, p: usize, h: u64) -> usize {
        self.objs.services.find_or_unknown(Layer::Rmw, p, h, |o| o.rmw_handle = Some(h))
    }

    /// A pseudo-endpoint of a client or service on `<name>:<what>`.
    fn pseudo(o: &Obj, what: &str) -> Obj {
        Obj {
            proc: o.proc,
            node: o.node,
            handle: o.handle,
            rmw_handle: o.rmw_handle,
            name: Some(format!("{}:{}", o.name.as_deref().unwrap_or("?"), what)),
            gid: o.gid.clone(),
            ts: o.ts,
            known: o.known,
            dumped: o.dumped,
            ..Default::default()
        }
    }

    /// Endpoints made while their client or service was known only by a handle take its
    /// names once its init event came (e.g. in a state dump).
    fn refresh_pseudo(&mut self, o: &Obj, ep: (usize, usize), client: bool) {
        let (pubw, subw) = if client { ("request", "response") } else { ("response", "request") };
        let (pb, sb) = if client { (ep.0, ep.1) } else { (ep.1, ep.0) };
        self.objs.pubs[pb] = Self::pseudo(o, pubw);
        self.objs.subs[sb] = Self::pseudo(o, subw);
    }

    /// (request publisher, response subscription) of client `c`, made on first use.
    fn client_endpoints(&mut self, c: usize) -> (usize, usize) {
        if let Some(&ep) = self.svc.client_ep.get(&c) {
            if self.objs.clients[c].known && !(self.objs.pubs[ep.0].known && self.objs.subs[ep.1].known) {
                let o = self.objs.clients[c].clone();
                self.refresh_pseudo(&o, ep, true);
            }
            return ep;
        }
        let o = self.objs.clients[c].clone();
        let ep = (self.objs.pubs.push(Self::pseudo(&o, "request")), self.objs.subs.push(Self::pseudo(&o, "response")));
        self.svc.client_ep.insert(c, ep);
        ep
    }

    /// (request subscription, response publisher) of service `s`, made on first use.
    fn service_endpoints(&mut self, s: usize) -> (usize, usize) {
        if let Some(&ep) = self.svc.service_ep.get(&s) {
            if self.objs.services[s].known && !(self.objs.subs[ep.0].known && self.objs.pubs[ep.1].known) {
                let o = self.objs.services[s].clone();
                self.refresh_pseudo(&o, ep, false);
            }
            return ep;
        }
        let o = self.objs.services[s].clone();
        let ep = (self.objs.subs.push(Self::pseudo(&o, "request")), self.objs.pubs.push(Self::pseudo(&o, "response")));
        self.svc.service_ep.insert(s, ep);
        ep
    }

    /// The subscription whose takes feed callback `c`: a subscription's own, a
    /// service's request reader, a client's response reader, once request or
    /// response events made them (None for others: any take).
    pub(crate) fn input_endpoint(&self, c: usize) -> Option<usize> {
        let cb = &self.objs.cbs[c];
        match (cb.kind, cb.owner) {
            (CallbackKind::Subscription, o) => o,
            (CallbackKind::Service, Some(s)) => self.svc.service_ep.get(&s).map(|e| e.0),
            (CallbackKind::Client, Some(c)) => self.svc.client_ep.get(&c).map(|e| e.1),
            _ => None,
        }
    }

    pub(crate) fn client_callback_added(&mut self, e: &Event) {
        use roscope_ros2::client_callback_added::*;
        let c = self.objs.clients.get(e.p, e.u(CLIENT_HANDLE).unwrap_or(0));
        self.cb_added(e, e.u(CALLBACK).unwrap_or(0), CallbackKind::Client, c, e.ts);
    }

    pub(crate) fn send_request(&mut self, e: &Event) {
        use services::rmw_send_request::*;
        self.runtime_seen(e.p);
        let c = self.client_of_rmw(e.p, e.u(RMW_CLIENT_HANDLE).unwrap_or(0));
        let seq = e.i(SEQUENCE_NUMBER).unwrap_or(0);
        let (req_pub, _) = self.client_endpoints(c);
        let run = self.current_run(e.th);
        let message = e.u(REQUEST).unwrap_or(0);
        let pi = self.publications.push(Publication {
            publisher: Some(req_pub),
            thread: e.th,
            run,
            ts: e.ts,
            rmw_ts: Some(e.ts),
            message,
            ..Default::default()
        });
        let call = self.svc.calls.len();
        self.svc.calls.push(Call { client: Some(c), seq, request_pub: Some(pi), ..Default::default() });
        self.svc.by_client.insert((c, seq), call);
        let when = self.merged_ts(e.ts, e.th);
        let gid = self.objs.clients[c].gid.clone();
        let name = self.objs.clients[c].name.clone().unwrap_or_default();
        // A take already read for this request (its event came first).
        let orphan = match &gid {
            Some(g) => self.svc.orphan_by_gid.remove(&(g.clone(), seq)),
            None => None,
        }
        .or_else(|| {
            let v = self.svc.orphan_by_name.get_mut(&(name.clone(), seq))?;
            (!v.is_empty()).then(|| v.remove(0))
        });
        if let Some(g) = gid {
            self.svc.sent_by_gid.insert((g, seq), call);
        }
        self.svc.sent_by_name.entry((name, seq)).or_default().push((when, call));
        if let Some(o) = orphan {
            self.join_request(call, o);
        }
        // Its response, already taken (read before this event): the call's by identity.
        if let Some(k) = self.svc.response_before_send.remove(&(c, seq)) {
            self.svc.calls[call].response_take = Some(k);
            match self.svc.calls[call].response_pub {
                Some(pi) => {
                    let method = self.svc.calls[call].method;
                    if let Some(t) = self.takes.get_mut(k) {
                        t.method = method;
                    }
                    self.set_take_publication(k, Some(pi));
                }
                None => {
                    self.svc.early_response.insert((c, seq), k);
                }
            }
        }
    }

    /// The take of an orphan call is request `sent`: one call.
    fn join_request(&mut self, sent: usize, o: Orphan) {
        let t = self.svc.calls[o.call];
        let s = &mut self.svc.calls[sent];
        s.service = t.service;
        s.request_take = Some(o.take);
        s.method = t.method;
        // The server may even have responded before the sending was read.
        s.response_pub = s.response_pub.or(t.response_pub);
        let pi = s.request_pub;
        self.set_take_publication(o.take, pi);
        self.svc.calls[o.call] = Call::default();
        if let Some(v) = self.svc.taken.get_mut(&o.key) {
            if *v == o.call {
                *v = sent;
            }
        }
    }

    /// The request a service took: by client GID, else by service name (the
    /// latest sent before the take).
    fn find_request(&self, gid: &Option<String>, name: &str, seq: i64, when: i64) -> Option<(usize, LinkMethod)> {
        if let Some(g) = gid {
            return self.svc.sent_by_gid.get(&(g.clone(), seq)).map(|&c| (c, LinkMethod::ServiceGid));
        }
        let v = self.svc.sent_by_name.get(&(name.to_string(), seq))?;
        let best = v.iter().filter(|(t, _)| *t <= when).max_by_key(|(t, _)| *t)?;
        let clients = v.iter().filter_map(|(_, c)| self.svc.calls[*c].client).collect::<rustc_hash::FxHashSet<_>>();
        let method = if clients.len() > 1 { LinkMethod::ServiceNearest } else { LinkMethod::ServiceSequence };
        Some((best.1, method))
    }

    pub(crate) fn take_request(&mut self, e: &Event) {
        use services::rmw_take_request::*;
        self.runtime_seen(e.p);
        if e.u(TAKEN).is_some_and(|t| t == 0) {
            return;
        }
        let s = self.service_of_rmw(e.p, e.u(RMW_SERVICE_HANDLE).unwrap_or(0));
        let seq = e.i(SEQUENCE_NUMBER).unwrap_or(0);
        let g = gid(e, CLIENT_GID);
        let name = self.objs.services[s].name.clone().unwrap_or_default();
        let when = self.merged_ts(e.ts, e.th);
        let found = self.find_request(&g, &name, seq, when);
        let (req_sub, _) = self.service_endpoints(s);
        let method = found.map(|f| f.1).or(Some(if g.is_some() { LinkMethod::ServiceGid } else { LinkMethod::ServiceSequence }));
        let publication = found.and_then(|(c, _)| self.svc.calls[c].request_pub);
        let t = Take {
            sub: Some(req_sub),
            thread: e.th,
            ts: e.ts,
            rmw_ts: Some(e.ts),
            message: e.u(REQUEST).unwrap_or(0),
            taken: true,
            publication,
            method,
            ..Default::default()
        };
        let k = self.push_input_take(e.th, t);
        let call = match found {
            Some((c, _)) => c,
            None => {
                let c = self.svc.calls.len();
                self.svc.calls.push(Call { seq, ..Default::default() });
                let o = Orphan { call: c, take: k, key: (s, g.clone(), seq) };
                match &g {
                    Some(gg) => {
                        self.svc.orphan_by_gid.insert((gg.clone(), seq), o);
                    }
                    None => self.svc.orphan_by_name.entry((name, seq)).or_default().push(o),
                }
                c
            }
        };
        let cl = &mut self.svc.calls[call];
        cl.service = Some(s);
        cl.request_take = Some(k);
        cl.method = method;
        self.svc.taken.insert((s, g, seq), call);
        self.svc.take_of.insert((s, false, seq), k);
    }

    pub(crate) fn send_response(&mut self, e: &Event) {
        use services::rmw_send_response::*;
        self.runtime_seen(e.p);
        let s = self.service_of_rmw(e.p, e.u(RMW_SERVICE_HANDLE).unwrap_or(0));
        let seq = e.i(SEQUENCE_NUMBER).unwrap_or(0);
        let g = gid(e, CLIENT_GID);
        let call = self.svc.taken.get(&(s, g.clone(), seq)).copied();
        let (_, resp_pub) = self.service_endpoints(s);
        // The run that handled the request (the response is sent right after it).
        let run = call
            .and_then(|c| self.svc.calls[c].request_take)
            .and_then(|k| self.takes.get(k))
            .and_then(|t| t.run)
            .or_else(|| self.current_run(e.th));
        let pi = self.publications.push(Publication {
            publisher: Some(resp_pub),
            thread: e.th,
            run,
            ts: e.ts,
            rmw_ts: Some(e.ts),
            message: e.u(RESPONSE).unwrap_or(0),
            ..Default::default()
        });
        let Some(call) = call else { return };
        self.svc.calls[call].response_pub = Some(pi);
        if let Some(c) = self.svc.calls[call].client {
            if let Some(k) = self.svc.early_response.remove(&(c, seq)) {
                let method = self.svc.calls[call].method;
                if let Some(t) = self.takes.get_mut(k) {
                    t.publication = Some(pi);
                    t.method = method;
                }
                self.svc.calls[call].response_take = Some(k);
                self.set_take_publication(k, Some(pi));
            }
        }
    }

    /// A take's publication, found after the take was read: its copies' too.
    fn set_take_publication(&mut self, take: usize, publication: Option<usize>) {
        let copies = self.svc.copies.get(&take).cloned().unwrap_or_default();
        for k in std::iter::once(take).chain(copies) {
            if let Some(t) = self.takes.get_mut(k) {
                t.publication = publication;
            }
        }
    }

    pub(crate) fn take_response(&mut self, e: &Event) {
        use services::rmw_take_response::*;
        self.runtime_seen(e.p);
        if e.u(TAKEN).is_some_and(|t| t == 0) {
            return;
        }
        let c = self.client_of_rmw(e.p, e.u(RMW_CLIENT_HANDLE).unwrap_or(0));
        let seq = e.i(SEQUENCE_NUMBER).unwrap_or(0);
        let (_, resp_sub) = self.client_endpoints(c);
        let call = self.svc.by_client.get(&(c, seq)).copied();
        let (publication, method) = call.map(|k| (self.svc.calls[k].response_pub, self.svc.calls[k].method)).unwrap_or_default();
        // Not pending: the run it feeds is named by `callback_input` (rclpy), or none.
        let k = self.takes.push(Take {
            sub: Some(resp_sub),
            thread: e.th,
            ts: e.ts,
            rmw_ts: Some(e.ts),
            message: e.u(RESPONSE).unwrap_or(0),
            taken: true,
            publication,
            method: publication.and(method),
            ..Default::default()
        });
        self.svc.take_of.insert((c, true, seq), k);
        match call {
            Some(call) => {
                self.svc.calls[call].response_take = Some(k);
                if publication.is_none() {
                    self.svc.early_response.insert((c, seq), k);
                }
            }
            // Its request's send event not read yet (emitted after the write): paired
            // when it comes, by (client, sequence number).
            None => {
                self.svc.response_before_send.insert((c, seq), k);
            }
        }
    }

    /// `roscope_ros2:service_copy`: the handle rclcpp gives a service (its
    /// `rclcpp_service_callback_added`) is a copy of an rcl service's struct (rclcpp_lifecycle
    /// wraps rcl_lifecycle's services so): it names that service too.
    pub(crate) fn service_copy(&mut self, e: &Event) {
        use roscope_ros2::service_copy::*;
        let (Some(copy), Some(original)) = (e.u(SERVICE_HANDLE), e.u(ORIGINAL)) else { return };
        if copy == 0 || original == 0 || self.objs.services.find(Layer::Rcl, e.p, copy).is_some() {
            return;
        }
        let s = self.objs.services.get(e.p, original);
        self.objs.services.name(Layer::Rcl, e.p, copy, s);
    }

    /// `roscope_ros2:callback_input`: the take the next run of the callback handles.
    pub(crate) fn callback_input(&mut self, e: &Event) {
        use roscope_ros2::callback_input::*;
        let (Some(h), Some(seq)) = (e.u(RMW_HANDLE), e.i(SEQUENCE_NUMBER)) else { return };
        let key = if let Some(c) = self.objs.clients.find(Layer::Rmw, e.p, h) {
            (c, true, seq)
        } else if let Some(s) = self.objs.services.find(Layer::Rmw, e.p, h) {
            (s, false, seq)
        } else {
            return;
        };
        let Some(&k) = self.svc.take_of.get(&key) else { return };
        let Some(t) = self.takes.get(k) else { return };
        let k = if t.run.is_none() {
            k
        } else {
            let copy = Take { thread: e.th, ts: e.ts, run: None, ..t.clone() };
            let c = self.takes.push(copy);
            self.svc.copies.entry(k).or_default().push(c);
            c
        };
        self.threads[e.th].pending_take = Some(k);
    }

    /// The service calls, as `service_calls` rows.
    pub(crate) fn service_calls(&self) -> impl Iterator<Item = &Call> {
        self.svc.calls.iter().filter(|c| c.request_pub.is_some() || c.request_take.is_some())
    }

    /// A trace whose clients (their init events name them) sent no request it can see: its
    /// tracer has no request/response events (ros2_tracing has them from Kilted on; Jazzy's
    /// rmw has none, and rclcpp calls a client's response callback without callback_start:
    /// roscope's tracer library adds both), so
    /// "no service calls" would read as a fact about the system.
    pub(crate) fn service_call_warning(&self) -> Option<String> {
        if self.service_calls().next().is_some() {
            return None;
        }
        let named: Vec<&str> = self.objs.clients.iter().filter(|c| c.known).filter_map(|c| c.name.as_deref()).collect();
        (!named.is_empty()).then(|| {
            format!(
                "{} service clients (e.g. {}) but no request or response event: this trace cannot show service calls, \
                 their latencies or the runs of clients' response callbacks (ros2_tracing records them from ROS 2 Kilted \
                 on; before, roscope's ROS 2 tracer adds them: roscope record --ros2)",
                named.len(),
                named[0]
            )
        })
    }
}
