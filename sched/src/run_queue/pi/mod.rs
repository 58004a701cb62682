//! Priority inheritance on one run queue: Linux's `rt_mutex_setprio`
//! (`docs/priority-inheritance.md`). The lock model
//! (`fairway_contract::scenario::resources`) decides who is boosted to what;
//! this carries a boost out on the owner's CPU.
//!
//! ```text
//!   queued?  dequeue_task            running?  put_prev_task
//!   fair -> RT   fair state out (kept here), RT class at the boost
//!   RT -> RT     new priority list (head when lowered)
//!   RT -> fair   RT class left, fair state back in (as a migration: PELT attached)
//!   queued?  enqueue_task            running?  set_next_task
//! ```

use super::{ClassKind, FairClass, RunQueueOf, TaskId};
use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::rt::rt_priority;
use crate::task::{Nanoseconds, ParamError, Policy};

impl<F: FairClass> RunQueueOf<F> {
    /// The RT priority priority inheritance lends `task` now, if any.
    pub fn pi_priority(&self, task: TaskId) -> Option<u8> {
        self.tasks
            .get(task.index())
            .and_then(|info| info.pi_priority)
    }

    /// `rt_mutex_setprio`: `task` runs as an RT task of `pi_priority` while it
    /// holds a mutex a stronger task waits for, and at its own policy again
    /// with `None`. A boost no stronger than the task's own RT priority is
    /// none. `current` is the task running on this CPU (`None`: idle).
    ///
    /// A fair task's state (vruntime lag, PELT signals) leaves the fair class
    /// for the boost and comes back after it as a migrated task's does; Linux
    /// detaches and re-attaches it the same way (`switched_from_fair`,
    /// `switched_to_fair`). The answer is Linux's: a raised queued task
    /// preempts as a wake-up would; the running task reschedules when it
    /// leaves the RT class, or is lowered below a queued RT task.
    pub fn rt_mutex_setprio(
        &mut self,
        task: TaskId,
        pi_priority: Option<u8>,
        now: Nanoseconds,
        current: Option<TaskId>,
    ) -> Result<Resched, ParamError> {
        let info = match self.tasks.get(task.index()) {
            Some(info) if info.known => *info,
            _ => return Err(ParamError::UnknownTask { task: task.0 }),
        };
        let own = rt_priority(info.params.policy);
        let boost = pi_priority.filter(|&p| own.is_none_or(|own| p > own));
        if boost == info.pi_priority {
            return Ok(Resched::Keep);
        }
        let old = info.pi_priority.or(own);
        let new = boost.or(own);
        let running = current == Some(task);
        match (old, new) {
            (Some(_), Some(priority)) => self.stack.set_rt_priority(task, priority),
            (None, Some(priority)) => {
                self.switch_to_rt(task, info.params.policy, priority, now, running)?
            }
            (Some(_), None) => self.switch_to_fair(task, now, running)?,
            (None, None) => {}
        }
        self.tasks[task.index()].pi_priority = boost;
        let raised = match (old, new) {
            (Some(old), Some(new)) => new > old,
            (old, new) => old.is_none() && new.is_some(),
        };
        Ok(if running {
            match new {
                _ if raised => Resched::Keep,
                // `prio_changed_rt`: lowered while running, it gives way only
                // to a stronger queued RT task.
                Some(priority)
                    if self
                        .stack
                        .rt()
                        .highest_queued_priority()
                        .is_none_or(|highest| highest <= priority) =>
                {
                    Resched::Keep
                }
                // `switched_to_fair` of the running task, or a stronger one waits.
                _ => Resched::Reschedule,
            }
        } else if info.queued && raised {
            match current {
                Some(current) => self.stack.wakeup_preempt(current, task, now),
                None => Resched::Reschedule,
            }
        } else {
            Resched::Keep
        })
    }

    /// Takes `task` off its class for a class change, and says how to put it
    /// back: (queued, running).
    fn take_off(&mut self, task: TaskId, now: Nanoseconds, running: bool) -> (bool, bool) {
        let queued = self.tasks[task.index()].queued;
        if queued {
            self.stack.dequeue_task(task, now, DequeueFlags::default());
        }
        if running {
            self.stack.put_prev_task(task, now);
        }
        (queued, running)
    }

    fn put_back(
        &mut self,
        task: TaskId,
        now: Nanoseconds,
        flags: EnqueueFlags,
        place: (bool, bool),
    ) {
        let (queued, running) = place;
        if queued {
            self.stack.enqueue_task(task, now, flags);
        }
        if running {
            self.stack.set_next_task(task, now);
        }
    }

    fn switch_to_rt(
        &mut self,
        task: TaskId,
        policy: Policy,
        priority: u8,
        now: Nanoseconds,
        running: bool,
    ) -> Result<(), ParamError> {
        let place = self.take_off(task, now, running);
        // A boosted SCHED_NORMAL task runs as SCHED_FIFO would (`task_tick_rt`
        // gives a slice to SCHED_RR only); a boosted SCHED_RR keeps its slice.
        let rt_policy = match policy {
            Policy::RoundRobin { .. } => Policy::RoundRobin { priority },
            _ => Policy::Fifo { priority },
        };
        match F::IS_FAIR.then(|| self.stack.fair_mut().migrate_task_out(task)) {
            Some(state) => {
                let state = state.ok_or(ParamError::UnknownTask { task: task.0 })?;
                self.pi_saved.push((task, state));
            }
            None => self.stack.fair_mut().task_dead(task),
        }
        self.stack.set_pi_class(task, Some(rt_policy), now)?;
        debug_assert_eq!(self.stack.task_class(task), Some(ClassKind::Realtime));
        self.put_back(task, now, EnqueueFlags::default(), place);
        Ok(())
    }

    fn switch_to_fair(
        &mut self,
        task: TaskId,
        now: Nanoseconds,
        running: bool,
    ) -> Result<(), ParamError> {
        let place = self.take_off(task, now, running);
        let params = self.tasks[task.index()].params;
        self.stack.set_pi_class(task, None, now)?;
        let saved = self
            .pi_saved
            .iter()
            .position(|(id, _)| *id == task)
            .map(|index| self.pi_saved.swap_remove(index).1);
        match saved {
            Some(state) if F::IS_FAIR => {
                self.stack.fair_mut().migrate_task_in(task, &state, now)?
            }
            _ => self.stack.fair_mut().task_new(task, &params, now)?,
        }
        let flags = EnqueueFlags {
            migrated: true,
            ..EnqueueFlags::default()
        };
        self.put_back(task, now, flags, place);
        Ok(())
    }

    /// A boosted task leaving this CPU: its fair state, kept aside during the
    /// boost, goes with it.
    pub(super) fn take_pi_saved(&mut self, task: TaskId) -> Option<crate::fair::FairMigration> {
        let index = self.pi_saved.iter().position(|(id, _)| *id == task)?;
        Some(self.pi_saved.swap_remove(index).1)
    }
}

#[cfg(test)]
mod tests;
