//! CARET's events (`ros2_caret:*` and its `ros2:*` hooks): the DDS source
//! stamp of a publication, and the messages handed to subscription
//! callbacks (inter-process with their source stamp, intra-process by
//! message address). Also the DDS layer's own `dds:write` (the message-flow
//! paper's instrumentation), the other source of a publication's DDS stamp. CARET's re-emitted init events are handled in `ros2.rs`
//! (`Event::caret`).

use crate::builder::{Builder, Event, Handler};
use crate::events::ros2::*;
use crate::events::Ev;
use crate::objects::{StampSource, Take};
use crate::registry::HandleMap;
use crate::schema::LinkMethod;

/// CARET's message events and the DDS layer's writes.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[
    (Ev::CaretBindStamp, Builder::caret_bind_stamp),
    (Ev::DdsWrite, Builder::dds_write),
    (Ev::DdsWritePre, Builder::dds_write_pre),
    (Ev::CaretDispatchIntra, Builder::caret_dispatch_intra),
    (Ev::CaretDispatch, Builder::caret_dispatch),
];

/// What only CARET's intra-process matching needs.
#[derive(Default)]
pub struct CaretState {
    /// The latest intra-process publication (`rclcpp_intra_publish`) of a
    /// message address.
    pub intra_msg: HandleMap<usize>,
}

impl Builder {
    /// The source stamp of the publication in progress on this thread (when
    /// its `rmw_publish` gave none).
    pub(crate) fn caret_bind_stamp(&mut self, e: &Event) {
        let stamp = e.i(dds_bind_addr_to_stamp::SOURCE_STAMP);
        if let Some(pb) = self.pending_publication(e.th) {
            if pb.src_ts.is_none() {
                pb.src_ts = stamp;
                if pb.src_ts.is_some() {
                    pb.src_from = Some(StampSource::Caret);
                }
            }
        }
    }

    /// Fast DDS's `dds:write_pre`: the data of the write that follows.
    pub(crate) fn dds_write_pre(&mut self, e: &Event) {
        self.threads[e.th].dds_data = e.u(crate::events::dds::write_pre::DATA);
    }

    /// `dds:write` (the message-flow paper's DDS instrumentation): the DDS source
    /// timestamp of the publication in progress on this thread, when its data is
    /// that publication's message (`write.data` with Cyclone DDS, the preceding
    /// `write_pre.data` with Fast DDS) and no layer above gave a stamp.
    pub(crate) fn dds_write(&mut self, e: &Event) {
        use crate::events::dds::write::*;
        let data = e.u(DATA).or(self.threads[e.th].dds_data.take());
        let stamp = e.i(TIMESTAMP);
        let Some(pb) = self.pending_publication(e.th) else { return };
        if pb.src_ts.is_some() || pb.intra || data.is_some_and(|d| d != pb.message) {
            return;
        }
        pb.src_ts = stamp;
        if pb.src_ts.is_some() {
            pb.src_from = Some(StampSource::DdsWrite);
        }
    }

    /// An intra-process message handed to a callback: the intra-process
    /// publication of the same message address.
    pub(crate) fn caret_dispatch_intra(&mut self, e: &Event) {
        use dispatch_intra_process_subscription_callback::*;
        let msg = e.u(MESSAGE).unwrap_or(0);
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let publication = self.caret.intra_msg.get(e.p, msg).copied();
        let t = Take {
            sub: self.objs.cbs.subscription_of(c),
            thread: e.th,
            ts: e.ts,
            message: msg,
            taken: true,
            intra: true,
            publication,
            method: publication.map(|_| LinkMethod::IntraMessage),
            ..Default::default()
        };
        self.push_pending_take(e.th, t);
    }

    /// A message handed to a subscription callback, with its source stamp.
    pub(crate) fn caret_dispatch(&mut self, e: &Event) {
        use dispatch_subscription_callback::*;
        let c = self.objs.cbs.get(e.p, e.u(CALLBACK).unwrap_or(0));
        let t = Take {
            sub: self.objs.cbs.subscription_of(c),
            thread: e.th,
            ts: e.ts,
            message: e.u(MESSAGE).unwrap_or(0),
            src_ts: e.i(SOURCE_STAMP),
            taken: true,
            method: Some(LinkMethod::CaretSourceStamp),
            ..Default::default()
        };
        self.push_pending_take(e.th, t);
    }
}
