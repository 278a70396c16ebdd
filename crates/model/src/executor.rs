//! rclcpp executor events: each thread's executor state (waiting for work,
//! selecting what is ready, executing an entity), from one event to the next.

use crate::builder::{Builder, Event};
use crate::events::ros2::rclcpp_executor_execute;
use crate::events::Ev;
use crate::objects::ExecState;
use crate::schema::ExecutorState;

impl Builder {
    /// Ends the thread's state in progress and starts the one this event tells.
    pub(crate) fn executor_event(&mut self, e: &Event) {
        let (state, handle) = match e.ev {
            Ev::ExecWait => (ExecutorState::Waiting, None),
            Ev::ExecGetNext => (ExecutorState::Selecting, None),
            _ => (ExecutorState::Executing, e.u(rclcpp_executor_execute::HANDLE)),
        };
        let th = e.th;
        if let Some((prev, start, h)) = self.threads[th].exec.take() {
            self.exec_states.push(ExecState { thread: th, state: prev, start, end: e.ts, handle: h });
        }
        self.threads[th].exec = Some((state, e.ts, handle));
    }
}
