//! rclcpp executor events: each thread's executor state (waiting for work,
//! selecting what is ready, executing an entity), from one event to the next,
//! with `executing` bounded by the callbacks it runs.
//!
//! `executing` starts at `rclcpp_executor_execute`, or at the start of an
//! outermost callback run while the thread is in another state (a waitable,
//! such as an intra-process subscription, runs without an execute event), and
//! ends at the thread's last event inside it: the end of its last outermost
//! callback run, or, for an execute that ran no callback (a take that found
//! nothing), that take. From there to the thread's next executor event the
//! thread is `waiting`: the threads of a multi-threaded executor share one wait
//! (rclcpp's `wait_mutex_`), so that gap is spent waiting for the other
//! thread's wait, not executing. An execute with no event after it executes
//! until the next executor event.

use crate::builder::{Builder, Event, Handler};
use crate::events::ros2::rclcpp_executor_execute;
use crate::events::Ev;
use crate::objects::ExecState;
use crate::schema::ExecutorState;

/// rclcpp's executor events.
pub(crate) const HANDLERS: &[(Ev, Handler)] =
    &[(Ev::ExecWait, Builder::executor_event), (Ev::ExecGetNext, Builder::executor_event), (Ev::ExecExecute, Builder::executor_event)];

impl Builder {
    /// Ends the thread's state in progress and starts the one this event tells.
    pub(crate) fn executor_event(&mut self, e: &Event) {
        let (state, handle) = match e.ev {
            Ev::ExecWait => (ExecutorState::Waiting, None),
            Ev::ExecGetNext => (ExecutorState::Selecting, None),
            _ => (ExecutorState::Executing, e.u(rclcpp_executor_execute::HANDLE)),
        };
        self.end_exec_state(e.th, e.ts);
        self.threads[e.th].exec = Some((state, e.ts, handle));
    }

    /// An outermost callback run starts on thread `th` at `ts`: an executor
    /// thread in another state starts executing (a waitable), one executing
    /// goes on (another callback of the same execute).
    pub(crate) fn exec_run_start(&mut self, th: usize, ts: u64) {
        let t = &mut self.threads[th];
        match t.exec {
            None => {}
            Some((ExecutorState::Executing, ..)) => t.exec_done = None,
            Some(_) => {
                self.end_exec_state(th, ts);
                self.threads[th].exec = Some((ExecutorState::Executing, ts, None));
            }
        }
    }

    /// An event other than an executor event on thread `th` at `ts`, outside
    /// callback runs (a callback's end, a take): while executing, the thread
    /// executed at least until then.
    pub(crate) fn exec_note(&mut self, th: usize, ts: u64) {
        let t = &mut self.threads[th];
        if t.stack.is_empty() && matches!(t.exec, Some((ExecutorState::Executing, ..))) {
            t.exec_done = Some(ts);
        }
    }

    /// Records the thread's state in progress as ending at `ts` (executing
    /// ends at its last event, then the thread waits until `ts`).
    pub(crate) fn end_exec_state(&mut self, th: usize, ts: u64) {
        let t = &mut self.threads[th];
        let done = t.exec_done.take();
        let Some((state, start, handle)) = t.exec.take() else { return };
        match done {
            Some(end) if end >= start && end < ts => {
                self.exec_states.push(ExecState { thread: th, state, start, end, handle });
                self.exec_states.push(ExecState { thread: th, state: ExecutorState::Waiting, start: end, end: ts, handle: None });
            }
            _ => self.exec_states.push(ExecState { thread: th, state, start, end: ts, handle }),
        }
    }
}
