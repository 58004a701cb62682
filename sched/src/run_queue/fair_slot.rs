//! The fair slot of the class stack: the policy chosen at boot (round robin,
//! or the fair class with the CFS or EEVDF pick) behind one [`SchedClass`].

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::fair::FairRunQueue;
use crate::round_robin::RoundRobin;
use crate::task::{Nanoseconds, ParamError, TaskId, TaskParams};

/// The fair slot of the stack: the policy chosen at boot.
#[derive(Debug)]
pub(super) enum FairSlot {
    RoundRobin {
        queue: RoundRobin,
        /// Groups handed out so far (round robin ignores them).
        groups: usize,
        max_groups: usize,
    },
    Fair(FairRunQueue),
}

impl FairSlot {
    fn class(&self) -> &dyn SchedClass {
        match self {
            FairSlot::RoundRobin { queue, .. } => queue,
            FairSlot::Fair(fair) => fair,
        }
    }

    fn class_mut(&mut self) -> &mut dyn SchedClass {
        match self {
            FairSlot::RoundRobin { queue, .. } => queue,
            FairSlot::Fair(fair) => fair,
        }
    }
}

impl SchedClass for FairSlot {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        self.class_mut().task_new(task, params, now)
    }
    fn task_dead(&mut self, task: TaskId) {
        self.class_mut().task_dead(task)
    }
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        self.class_mut().enqueue_task(task, now, flags)
    }
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        self.class_mut().dequeue_task(task, now, flags)
    }
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.class_mut().pick_next_task(now)
    }
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.class_mut().put_prev_task(task, now)
    }
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.class_mut().set_next_task(task, now)
    }
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        self.class_mut().task_tick(task, now)
    }
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        self.class_mut().wakeup_preempt(current, woken, now)
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.class_mut().yield_task(task, now)
    }
    fn nr_running(&self) -> usize {
        self.class().nr_running()
    }
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        self.class().slice_remaining(task, now)
    }
}
