//! EEVDF delayed dequeue (`DELAY_DEQUEUE`, `DELAY_ZERO`, Linux v6.12+, §1.5)
//! and the hierarchical dequeue it shapes.
//!
//! An entity that goes to sleep while not eligible (negative lag) is not taken
//! off its run queue: it stays queued but not runnable (`delayed`), so its
//! negative lag burns off as the others run. Its dequeue completes when a pick
//! reaches it (it is eligible then); with `DELAY_ZERO` its lag is then reset
//! to 0. Woken before that, it simply becomes runnable again where it is.
//!
//! ```text
//!   h_nr_running (runnable tasks)   -1 at the delay, +1 at a wake-up
//!   nr_queued / load / tree          unchanged until the dequeue completes
//! ```

use super::FairRunQueue;
use super::Pick;
use crate::pelt::update::UpdateFlags;
use crate::task::Nanoseconds;

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// `set_delayed`: a delayed task is no longer runnable at any level.
    pub(super) fn set_delayed(&mut self, e: u32) {
        self.entities[e as usize].delayed = true;
        self.change_runnable_tasks(e, false);
    }

    /// `clear_delayed` for a delayed dequeue that completes: the task was
    /// already counted out.
    pub(super) fn finish_delayed_dequeue(&mut self, e: u32) {
        self.entities[e as usize].delayed = false;
        if let super::PickPolicy::Eevdf(tunables) = self.pick.policy()
            && tunables.delay_zero
        {
            let entity = &mut self.entities[e as usize];
            entity.vlag = entity.vlag.min(0);
        }
    }

    /// Adds or removes one runnable task at every level above task `e`.
    fn change_runnable_tasks(&mut self, e: u32, add: bool) {
        if self.owned_queue(e).is_some() {
            // A delayed group entity's run queue holds no runnable task.
            return;
        }
        let mut level = Some(e);
        while let Some(se) = level {
            let queue = &mut self.queues[self.entities[se as usize].queue.index()];
            if add {
                queue.h_nr_running += 1;
            } else {
                queue.h_nr_running -= 1;
            }
            if queue.runtime.throttled {
                // The levels above do not count a throttled queue's tasks.
                return;
            }
            level = self.parent_entity(se);
        }
    }

    /// `requeue_delayed_entity`: a delayed entity wakes up where it is; with
    /// `DELAY_ZERO` a lag that has become positive is reset to 0 and the entity
    /// placed again (§1.5, "A delayed task woken early"). The lag is taken
    /// against `V` as it stands: the running entity is not charged first (the
    /// wake-up preemption check does that), as Linux's requeue does not call
    /// `update_curr`.
    pub(super) fn requeue_delayed_entity(&mut self, e: u32, now: Nanoseconds) {
        let q = self.entities[e as usize].queue;
        if let super::PickPolicy::Eevdf(tunables) = self.pick.policy()
            && tunables.delay_zero
        {
            self.update_entity_lag(q, e, tunables);
            if self.entities[e as usize].vlag > 0 {
                let is_curr = self.queues[q.index()].curr == e;
                if !is_curr {
                    self.timeline_remove(q, e);
                }
                self.queues[q.index()].nr_queued -= 1;
                let entity = &mut self.entities[e as usize];
                entity.vlag = 0;
                // Placed into the queue without itself, also when running.
                entity.on_rq = false;
                self.place_entity_eevdf(q, e, false);
                self.entities[e as usize].on_rq = true;
                self.queues[q.index()].nr_queued += 1;
                if !is_curr {
                    self.timeline_insert(q, e);
                }
            }
        }
        self.update_entity_load(q, e, UpdateFlags::NONE, now);
        self.entities[e as usize].delayed = false;
        self.change_runnable_tasks(e, true);
    }

    /// Completes the delayed dequeue of task `e`, if it is delayed, at the last
    /// time this run queue saw; afterwards the task is simply asleep.
    pub(super) fn complete_delayed_task(&mut self, e: u32) {
        if self.entities[e as usize].delayed {
            let now = self.last_now;
            self.dequeue_entities(e, true, true, now);
        }
    }

    /// `dequeue_entities`: takes `start` (a task, or a delayed entity reached at
    /// a pick when `delayed`) off its run queue and, while run queues become
    /// empty, its group entities off theirs; above that only weights, loads
    /// and runnable counts change. An entity may be delayed instead (§1.5).
    pub(super) fn dequeue_entities(
        &mut self,
        start: u32,
        sleep: bool,
        delayed: bool,
        now: Nanoseconds,
    ) {
        // A task counts as runnable unless it was already counted out.
        let runnable = u32::from(self.owned_queue(start).is_none() && !delayed);
        let mut sleep = sleep;
        let mut delayed = delayed;
        let mut level = Some(start);
        'walk: {
            while let Some(se) = level {
                let q = self.entities[se as usize].queue;
                if !self.dequeue_entity(q, se, sleep, delayed, now) {
                    if se == start {
                        // The task itself was delayed: counts are already adjusted.
                        return;
                    }
                    // A group entity was delayed: it stays; the levels from it up
                    // only lose the runnable task.
                    break;
                }
                self.queues[q.index()].h_nr_running -= runnable;
                if self.queue_throttled(q) {
                    break 'walk;
                }
                level = self.parent_entity(se);
                if self.queues[q.index()].load != 0 {
                    break;
                }
                sleep = true;
                delayed = false;
            }
            while let Some(se) = level {
                level = self.update_group_level(se, -(runnable as i32), now);
            }
        }
        if self.bandwidth_used() {
            // Last, so that the walks above keep what they hold in registers.
            self.return_slack_pass(start, now);
        }
    }
}
