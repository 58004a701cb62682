//! The fair slot of the class stack: the policy chosen at boot (round robin,
//! or the fair class with the CFS or EEVDF pick) behind one [`SchedClass`].
//!
//! Each variant holds a class compiled for its policy alone
//! (`FairRunQueue<CfsPick>`, `FairRunQueue<EevdfPick>`): a class operation
//! dispatches once here, with a `match` on the slot (no `dyn`), and everything
//! below it is static calls into code that knows its pick.

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::fair::entity::Entity;
use crate::fair::group::GroupQueue;
use crate::fair::{CfsPick, EevdfPick, FairRunQueue, Pick};
use crate::round_robin::RoundRobin;
use crate::task::{GroupId, Nanoseconds, ParamError, TaskId, TaskParams};

/// The fair slot of the stack: the policy chosen at boot.
#[derive(Debug)]
pub(super) enum FairSlot {
    RoundRobin {
        queue: RoundRobin,
        /// Groups handed out so far (round robin ignores them).
        groups: usize,
        max_groups: usize,
    },
    Cfs(FairRunQueue<CfsPick>),
    Eevdf(FairRunQueue<EevdfPick>),
}

/// Evaluates `$body` with `$fair` bound to the slot's fair run queue, whichever
/// pick it was built with, or `$otherwise` for round robin.
macro_rules! with_fair {
    ($slot:expr, $fair:ident => $body:expr, _ => $otherwise:expr) => {
        match $slot {
            FairSlot::Cfs($fair) => $body,
            FairSlot::Eevdf($fair) => $body,
            FairSlot::RoundRobin { .. } => $otherwise,
        }
    };
}
pub(super) use with_fair;

/// Evaluates `$body` with `$class` bound to the slot's class.
macro_rules! with_class {
    ($slot:expr, $class:ident => $body:expr) => {
        match $slot {
            FairSlot::RoundRobin { queue: $class, .. } => $body,
            FairSlot::Cfs($class) => $body,
            FairSlot::Eevdf($class) => $body,
        }
    };
}

/// What reports and signals read of a fair run queue, whichever its pick
/// (cold paths only: the class operations never go through it).
pub trait FairView {
    /// See [`FairRunQueue::task_entity`].
    fn task_entity(&self, task: TaskId) -> Option<&Entity>;
    /// See [`FairRunQueue::task_vruntime`].
    fn task_vruntime(&self, task: TaskId) -> u64;
    /// See [`FairRunQueue::group_entity_of`].
    fn group_entity_of(&self, group: GroupId) -> Option<&Entity>;
    /// See [`FairRunQueue::group_queue`].
    fn group_queue(&self, group: GroupId) -> Option<&GroupQueue>;
    /// See [`FairRunQueue::group_load_contribution`].
    fn group_load_contribution(&self, group: GroupId) -> u64;
    /// Checks every invariant of the run queue (tests).
    #[cfg(test)]
    fn check_consistency(&self);
}

impl<P: Pick> FairView for FairRunQueue<P> {
    fn task_entity(&self, task: TaskId) -> Option<&Entity> {
        FairRunQueue::task_entity(self, task)
    }
    fn task_vruntime(&self, task: TaskId) -> u64 {
        FairRunQueue::task_vruntime(self, task)
    }
    fn group_entity_of(&self, group: GroupId) -> Option<&Entity> {
        FairRunQueue::group_entity_of(self, group)
    }
    fn group_queue(&self, group: GroupId) -> Option<&GroupQueue> {
        FairRunQueue::group_queue(self, group)
    }
    fn group_load_contribution(&self, group: GroupId) -> u64 {
        FairRunQueue::group_load_contribution(self, group)
    }
    #[cfg(test)]
    fn check_consistency(&self) {
        FairRunQueue::check_consistency(self)
    }
}

impl SchedClass for FairSlot {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        with_class!(self, class => class.task_new(task, params, now))
    }
    fn task_dead(&mut self, task: TaskId) {
        with_class!(self, class => class.task_dead(task))
    }
    #[inline]
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        with_class!(self, class => class.enqueue_task(task, now, flags))
    }
    #[inline]
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        with_class!(self, class => class.dequeue_task(task, now, flags))
    }
    #[inline]
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        with_class!(self, class => class.pick_next_task(now))
    }
    #[inline]
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        with_class!(self, class => class.put_prev_task(task, now))
    }
    #[inline]
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        with_class!(self, class => class.set_next_task(task, now))
    }
    #[inline]
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        with_class!(self, class => class.task_tick(task, now))
    }
    #[inline]
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        with_class!(self, class => class.wakeup_preempt(current, woken, now))
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        with_class!(self, class => class.yield_task(task, now))
    }
    #[inline]
    fn nr_running(&self) -> usize {
        with_class!(self, class => class.nr_running())
    }
    #[inline]
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        with_class!(self, class => class.slice_remaining(task, now))
    }
}
