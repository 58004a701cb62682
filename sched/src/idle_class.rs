//! The idle class: the per-CPU idle slot that runs when neither the RT nor
//! the fair class has a queued task (Linux's `idle_sched_class`, last in the
//! class order).
//!
//! It owns no tasks. Its pick is "nothing to run", which tells the mechanism to
//! run its idle loop (wait for an interrupt). SCHED_IDLE *tasks* are not here:
//! as in Linux they belong to the fair class, with the minimum weight.
//! What it keeps is whether the CPU is idle and since when, so the time spent
//! idle can be reported (and, later, used by energy accounting).

use crate::class::Resched;
use crate::task::{Nanoseconds, TaskId};

/// One CPU's idle slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleClass {
    idle_since: Option<Nanoseconds>,
    idle_time: Nanoseconds,
    idle_entries: u64,
}

impl IdleClass {
    /// A CPU that is not idle yet.
    pub const fn new() -> Self {
        IdleClass {
            idle_since: None,
            idle_time: 0,
            idle_entries: 0,
        }
    }

    /// `pick_next_task_idle`: there is never a task to hand out; `None` means
    /// "run the idle loop".
    pub const fn pick_next_task(&self) -> Option<TaskId> {
        None
    }

    /// `wakeup_preempt_idle`: any task that wakes preempts the idle loop.
    pub const fn wakeup_preempt(&self) -> Resched {
        Resched::Reschedule
    }

    /// `set_next_task_idle`: the CPU enters its idle loop at `now`.
    pub fn set_next_idle(&mut self, now: Nanoseconds) {
        if self.idle_since.is_none() {
            self.idle_since = Some(now);
            self.idle_entries += 1;
        }
    }

    /// `put_prev_task_idle`: the CPU leaves its idle loop at `now`.
    pub fn put_prev_idle(&mut self, now: Nanoseconds) {
        if let Some(since) = self.idle_since.take() {
            self.idle_time += now.saturating_sub(since);
        }
    }

    /// Whether the CPU is in its idle loop.
    pub const fn is_idle(&self) -> bool {
        self.idle_since.is_some()
    }

    /// Total time spent idle up to `now`.
    pub fn idle_time(&self, now: Nanoseconds) -> Nanoseconds {
        self.idle_time + self.idle_since.map_or(0, |since| now.saturating_sub(since))
    }

    /// How many times the CPU entered its idle loop.
    pub const fn idle_entries(&self) -> u64 {
        self.idle_entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_picks_nothing_is_preempted_by_anything_and_accounts_time() {
        let mut idle = IdleClass::new();
        assert_eq!(idle.pick_next_task(), None);
        assert_eq!(idle.wakeup_preempt(), Resched::Reschedule);
        assert!(!idle.is_idle());
        idle.set_next_idle(100);
        idle.set_next_idle(150); // already idle: no new entry
        assert!(idle.is_idle());
        assert_eq!(idle.idle_time(160), 60);
        idle.put_prev_idle(200);
        idle.put_prev_idle(300); // not idle: nothing to add
        idle.set_next_idle(400);
        idle.put_prev_idle(450);
        // (200 - 100) + (450 - 400) = 150 over two entries.
        assert_eq!((idle.idle_time(1000), idle.idle_entries()), (150, 2));
    }
}
