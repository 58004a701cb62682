//! [`PolicyClass`]: a registered [`Policy`] in the fair slot of the class
//! stack. It does, once for every policy, the bookkeeping Linux's
//! `sched_class` leaves to each class: which tasks are queued, which one
//! runs, when its slice started, the running task handed back to the
//! policy when it stops, a pick asked twice answered once; and it accepts
//! task groups and ignores them, as round robin does, so that scenarios
//! with groups still run.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{CandidateNote, EnqueueReason, Policy, PolicyContext, PolicyId};
use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::task::{Nanoseconds, ParamError, TaskId, TaskParams};

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    known: bool,
    queued: bool,
    /// Among the policy's waiting tasks (queued and not running).
    waiting: bool,
}

/// One CPU's run queue of a registered policy.
pub struct PolicyClass {
    policy: Box<dyn Policy>,
    id: PolicyId,
    context: PolicyContext,
    slots: Vec<Slot>,
    current: Option<TaskId>,
    nr_running: usize,
    nr_waiting: usize,
    /// When the running task's slice started (see `set_next_task`).
    slice_start: Nanoseconds,
    /// When the running task was switched in: what it is charged from.
    switched_in: Nanoseconds,
    /// When the tick found the last slice spent: the next slice starts
    /// there, as round robin's does (`RoundRobin::set_next_task`).
    slice_ended_at: Option<Nanoseconds>,
    /// The policy's answer to a pick not yet followed by a change: asked
    /// again, the mechanism gets it again (a lottery draws once).
    pending_pick: Option<TaskId>,
    /// Task groups handed out so far, the root included.
    groups: usize,
    max_groups: usize,
}

impl core::fmt::Debug for PolicyClass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PolicyClass")
            .field("policy", &self.id.name())
            .field("current", &self.current)
            .field("nr_running", &self.nr_running)
            .field("nr_waiting", &self.nr_waiting)
            .finish()
    }
}

impl PolicyClass {
    /// The registered policy `id` for task ids below `context.max_tasks`,
    /// handing out at most `max_groups` group ids (the root included).
    pub fn new(id: PolicyId, context: PolicyContext, max_groups: usize) -> Self {
        PolicyClass {
            policy: (id.registered().build)(&context),
            id,
            context,
            slots: alloc::vec![Slot::default(); context.max_tasks],
            current: None,
            nr_running: 0,
            nr_waiting: 0,
            slice_start: 0,
            switched_in: 0,
            slice_ended_at: None,
            pending_pick: None,
            groups: 1,
            max_groups: max_groups.max(1),
        }
    }

    /// Which registered policy it runs.
    pub fn id(&self) -> PolicyId {
        self.id
    }

    /// What the policy was told of its run queue when it was built.
    pub fn context(&self) -> &PolicyContext {
        &self.context
    }

    /// The task running from this queue, if any.
    pub fn current(&self) -> Option<TaskId> {
        self.current
    }

    /// The tasks waiting for the CPU, by task id.
    pub fn waiting(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.waiting)
            .map(|(index, _)| TaskId(index as u16))
    }

    /// Explain mode, right after a pick chose `picked` (now running): the
    /// policy's notes on it and on the tasks still waiting
    /// ([`Policy::explain_pick`]).
    pub fn explain_pick(&self, picked: TaskId) -> Vec<CandidateNote> {
        let candidates: Vec<TaskId> = core::iter::once(picked)
            .chain(self.waiting().filter(|&task| task != picked))
            .collect();
        let mut notes = Vec::with_capacity(candidates.len());
        self.policy
            .explain_pick(&candidates, picked, &mut |note| notes.push(note));
        notes
    }

    fn join(&mut self, task: TaskId, now: Nanoseconds, reason: EnqueueReason) {
        let slot = &mut self.slots[task.index()];
        debug_assert!(!slot.waiting, "{task:?} waits twice");
        slot.waiting = true;
        self.nr_waiting += 1;
        self.pending_pick = None;
        self.policy.enqueue(task, now, reason);
    }

    fn leave(&mut self, task: TaskId, now: Nanoseconds) {
        let slot = &mut self.slots[task.index()];
        if slot.waiting {
            slot.waiting = false;
            self.nr_waiting -= 1;
            self.pending_pick = None;
            self.policy.dequeue(task, now);
        }
    }
}

impl SchedClass for PolicyClass {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        _now: Nanoseconds,
    ) -> Result<(), ParamError> {
        params.validate()?;
        let capacity = self.slots.len();
        let slot = self
            .slots
            .get_mut(task.index())
            .ok_or(ParamError::TooManyTasks {
                task: task.0,
                capacity,
            })?;
        *slot = Slot {
            known: true,
            ..Slot::default()
        };
        self.policy.task_new(task, params);
        Ok(())
    }

    fn task_dead(&mut self, task: TaskId) {
        debug_assert!(!self.slots[task.index()].queued);
        self.slots[task.index()].known = false;
        self.policy.task_dead(task);
    }

    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        let slot = &mut self.slots[task.index()];
        debug_assert!(slot.known && !slot.queued, "enqueue of {task:?}");
        slot.queued = true;
        self.nr_running += 1;
        if self.current != Some(task) {
            let reason = if flags.initial {
                EnqueueReason::New
            } else if flags.migrated {
                EnqueueReason::Migrated
            } else {
                EnqueueReason::Wakeup
            };
            self.join(task, now, reason);
        }
    }

    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, _flags: DequeueFlags) {
        debug_assert!(self.slots[task.index()].queued, "dequeue of {task:?}");
        self.slots[task.index()].queued = false;
        self.nr_running -= 1;
        self.leave(task, now);
    }

    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        if self.nr_waiting == 0 {
            return None;
        }
        if self.pending_pick.is_none() {
            self.pending_pick = self.policy.pick(now);
        }
        self.pending_pick
    }

    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        debug_assert_eq!(self.current, Some(task));
        self.current = None;
        self.policy
            .put_prev(task, now.saturating_sub(self.switched_in), now);
        if self.slots[task.index()].queued {
            self.join(task, now, EnqueueReason::Requeued);
        }
    }

    /// The slice starts where the tick found the last one spent, when that
    /// was less than a slice ago: slices follow each other back to back
    /// whatever the switch costs (see `RoundRobin::set_next_task`).
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.leave(task, now);
        let start = self
            .slice_ended_at
            .take()
            .filter(|&at| at <= now && now - at < self.context.slice_ns);
        self.slice_start = start.unwrap_or(now);
        self.switched_in = now;
        self.current = Some(task);
        self.pending_pick = None;
        self.policy.set_next(task, now);
    }

    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        let ran = now.saturating_sub(self.slice_start);
        if self.policy.tick(task, ran, &self.context) && self.nr_waiting > 0 {
            self.slice_ended_at = Some(now);
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        if self.policy.wakeup_preempt(current, woken, now) {
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.yield_task(task, now);
    }

    fn nr_running(&self) -> usize {
        self.nr_running
    }

    fn reserve_tasks(&mut self, count: usize) {
        crate::task::grow_table(&mut self.slots, count, Slot::default());
        self.policy.reserve_tasks(count);
    }

    fn task_storage_bytes(&self) -> usize {
        crate::task::table_bytes(&self.slots)
    }
}

// No fair state: groups are handed out and ignored, as under round robin.
crate::run_queue::fair_class_without_groups!(PolicyClass);
