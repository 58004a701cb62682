//! One CPU's run queue: the single object the mechanism keeps per CPU behind a
//! lock, and the only scheduler type it names.
//!
//! It dispatches the class operations to the policy chosen at boot, so a new
//! policy plugs in here without any change to the mechanism.

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::round_robin::RoundRobin;
use crate::task::{Nanoseconds, ParamError, TaskId, TaskParams};

/// The policy a run queue is built with, chosen at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// [`RoundRobin`] with the given slice.
    RoundRobin {
        /// Time slice in nanoseconds.
        slice: Nanoseconds,
    },
}

/// One CPU's run queue.
#[derive(Debug)]
pub struct RunQueue {
    policy: RoundRobin,
}

impl RunQueue {
    /// A run queue for task ids below `max_tasks`, running `kind`.
    pub fn new(kind: PolicyKind, max_tasks: usize) -> Self {
        match kind {
            PolicyKind::RoundRobin { slice } => RunQueue {
                policy: RoundRobin::new(max_tasks, slice),
            },
        }
    }
}

impl SchedClass for RunQueue {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        self.policy.task_new(task, params, now)
    }
    fn task_dead(&mut self, task: TaskId) {
        self.policy.task_dead(task)
    }
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        self.policy.enqueue_task(task, now, flags)
    }
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        self.policy.dequeue_task(task, now, flags)
    }
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.policy.pick_next_task(now)
    }
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.put_prev_task(task, now)
    }
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.set_next_task(task, now)
    }
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        self.policy.task_tick(task, now)
    }
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        self.policy.wakeup_preempt(current, woken, now)
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.yield_task(task, now)
    }
    fn nr_running(&self) -> usize {
        self.policy.nr_running()
    }
}
