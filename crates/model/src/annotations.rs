//! Causal-link annotations (instrument/annotations): a process declares that
//! some publishers publish from the messages of some subscriptions,
//! periodically (`message_link_periodic_async`) or once each input arrived
//! (`message_link_partial_sync`). Members are resolved to rows in `emit.rs`.

use crate::builder::{Builder, Event, Handler};
use crate::events::Ev;
use crate::objects::Annotation;
use crate::schema::AnnotationKind;

/// Causal-link annotations.
pub(crate) const HANDLERS: &[(Ev, Handler)] = &[(Ev::MsgLinkPeriodic, Builder::annotation), (Ev::MsgLinkPartial, Builder::annotation)];

impl Builder {
    pub(crate) fn annotation(&mut self, e: &Event) {
        let kind = if e.ev == Ev::MsgLinkPeriodic { AnnotationKind::PeriodicAsync } else { AnnotationKind::PartialSync };
        self.annotations.push(Annotation { proc: e.p, kind, ts: e.ts, subs: e.seq("subs"), pubs: e.seq("pubs") });
    }
}
