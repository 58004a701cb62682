//! The class operations of the fair run queue, walking the group hierarchy as
//! Linux's `enqueue_task_fair`, `dequeue_task_fair`, `pick_next_task_fair`,
//! `put_prev_task_fair`, `set_next_task_fair`, `task_tick_fair`,
//! `check_preempt_wakeup_fair` and `yield_task_fair` do.
//!
//! ```text
//!   enqueue: task ─► its group's run queue; while the group entity is not
//!            queued, enqueue it in the parent's run queue; above that, only
//!            refresh the group entities' weights and h_nr_running.
//!   dequeue: the mirror image, stopping where a run queue keeps other entities.
//!   pick:    from the root, pick an entity; a group entity leads into its run
//!            queue; the first task reached runs.
//! ```

use super::Pick;
use super::entity::{Entity, EntityKind, FairPolicy};
use super::timeline::NIL;
use super::{FairRunQueue, PickPolicy};
use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::pelt::update::UpdateFlags;
use crate::task::{CUSTOM_SLICE_RANGE, GroupId, Nanoseconds, ParamError, TaskId, TaskParams};
use crate::weight::calc_delta_fair;

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// `put_prev_task` of a context switch (§1.3 "Switching within a
    /// hierarchy"): only the task's own level is put back now. Its group
    /// entities stay running while the pick walks down, as Linux's
    /// `pick_next_task_fair` leaves them, and `set_next_task`
    /// ([`Self::settle_levels`]) puts back only the levels below the one the
    /// next task shares, so that a switch between two tasks of one group
    /// touches no group entity, under the CFS and the EEVDF pick alike. With
    /// bandwidth control in use every level is put back at once (a throttle
    /// pass follows the put).
    #[inline(always)]
    fn put_prev_level_for_switch(&mut self, task: TaskId, now: Nanoseconds) {
        let e = self.task_se(task);
        if self.entities[e as usize].queue == GroupId::ROOT || self.bandwidth_used() {
            SchedClass::put_prev_task(self, task, now);
            return;
        }
        self.advance_clock(now);
        let q = self.entities[e as usize].queue;
        if self.queues[q.index()].curr == e {
            self.put_prev_entity(q, e, now);
        }
        self.switching_out = e;
    }

    /// Puts back the group entities [`Self::put_prev_level_for_switch`] left
    /// running, up to (not including) the level shared with `next`, whose
    /// own walk (`set_next_task`) switches that level; every level when
    /// the CPU runs no fair task next (`next` is `None`).
    #[inline(always)]
    fn settle_levels(&mut self, next: Option<u32>, now: Nanoseconds) {
        if self.switching_out != NIL {
            self.settle_levels_after_group_task(next, now);
        }
    }

    /// [`Self::settle_levels`] after a task of a group left the CPU (out of
    /// line: a root task's switch pays one test). Two tasks of one run queue
    /// share every level above it (`find_matching_se` would return the
    /// previous task itself): nothing to put back, in a function small
    /// enough to save few registers.
    #[inline(never)]
    fn settle_levels_after_group_task(&mut self, next: Option<u32>, now: Nanoseconds) {
        let previous = self.switching_out;
        if let Some(next) = next
            && self.entities[next as usize].queue == self.entities[previous as usize].queue
        {
            self.switching_out = NIL;
            return;
        }
        self.settle_levels_of_group_task(next, now);
    }

    /// [`Self::settle_levels`] after a task of a group left the CPU, for a
    /// next task in another run queue or none.
    #[inline(never)]
    fn settle_levels_of_group_task(&mut self, next: Option<u32>, now: Nanoseconds) {
        let previous = core::mem::replace(&mut self.switching_out, NIL);
        let stop = next.map_or(NIL, |next| self.find_matching_entities(previous, next).0);
        if stop == previous {
            return;
        }
        let mut level = self.parent_entity(previous);
        while let Some(se) = level {
            if se == stop {
                break;
            }
            let q = self.entities[se as usize].queue;
            if self.queues[q.index()].curr == se {
                self.put_prev_entity(q, se, now);
            }
            level = self.parent_entity(se);
        }
    }

    /// Whether every group entity above `e` is its run queue's running
    /// entity (the chain [`SchedClass::set_next_task`] relies on).
    fn levels_above_run(&self, e: u32) -> bool {
        let mut level = self.parent_entity(e);
        while let Some(se) = level {
            if self.queues[self.entities[se as usize].queue.index()].curr != se {
                return false;
            }
            level = self.parent_entity(se);
        }
        true
    }

    fn depth(&self, e: u32) -> u32 {
        self.groups[self.entities[e as usize].queue.index()].depth
    }

    /// `find_matching_se()`: lift both entities to the run queue they share.
    fn find_matching_entities(&self, mut se: u32, mut pse: u32) -> (u32, u32) {
        while self.depth(se) > self.depth(pse) {
            se = self.parent_entity(se).unwrap_or(se);
        }
        while self.depth(pse) > self.depth(se) {
            pse = self.parent_entity(pse).unwrap_or(pse);
        }
        while self.entities[se as usize].queue != self.entities[pse as usize].queue {
            match (self.parent_entity(se), self.parent_entity(pse)) {
                (Some(a), Some(b)) => (se, pse) = (a, b),
                _ => break,
            }
        }
        (se, pse)
    }

    /// The entity to run next on `q` under the configured pick. A run queue
    /// with one entity (each level of a chain of groups) gives it without a
    /// call: `pick_eevdf`'s first rule, and what `pick_cfs` finds too (the
    /// leftmost of one, no second entity for a skip buddy).
    fn pick_next_entity(&self, q: GroupId) -> Option<u32> {
        let queue = &self.queues[q.index()];
        if queue.nr_queued == 1 {
            return self.queued_curr(q).or_else(|| queue.timeline.first());
        }
        match self.pick.policy() {
            PickPolicy::Cfs(tunables) => self.pick_cfs(q, &tunables),
            PickPolicy::Eevdf(tunables) => self.pick_eevdf(q, tunables),
        }
    }

    /// One level of the pick's walk down a chain of groups: when run queue
    /// `q` holds one queued entity, its running group entity (each level
    /// below a group entity the previous task's group shares), the pick of
    /// `q` is that entity (`pick_eevdf`'s first rule; the leftmost of one for
    /// `pick_cfs`), charged by `update_curr` as at every level, and the walk
    /// goes on into the run queue it owns, returned. `None`, with nothing
    /// charged, for any other run queue: the general step decides there.
    /// The same decisions as the general step, with the run queue and the
    /// entity each looked up once.
    #[inline(always)]
    fn pick_running_group(&mut self, q: GroupId, now: Nanoseconds) -> Option<GroupId> {
        let queue = &self.queues[q.index()];
        if queue.nr_queued != 1 {
            return None;
        }
        let entity = self.entities.get(queue.curr as usize)?;
        let EntityKind::Group(group) = entity.kind else {
            return None;
        };
        if !entity.on_rq || entity.delayed {
            return None;
        }
        self.update_curr(q, now);
        Some(group)
    }

    /// From run queue `q`, reached through a group entity at a pick, the
    /// levels [`Self::pick_running_group`] takes; returns the first run queue
    /// the general step has to pick from. Out of line: a pick at the root
    /// does not reach it.
    #[inline(never)]
    fn pick_down_running_groups(&mut self, mut q: GroupId, now: Nanoseconds) -> GroupId {
        while let Some(group) = self.pick_running_group(q, now) {
            q = group;
        }
        q
    }

    fn task_policy(&self, e: u32) -> Option<FairPolicy> {
        match self.entities[e as usize].kind {
            EntityKind::Task(policy) => Some(policy),
            EntityKind::Group(_) => None,
        }
    }

    fn known_task(&self, task: TaskId) -> bool {
        task.index() < self.max_tasks && self.entities[self.task_se(task) as usize].known
    }
}

impl<P: Pick, const BW: bool> SchedClass for FairRunQueue<P, BW> {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        params.validate()?;
        if task.index() >= self.max_tasks {
            return Err(ParamError::TooManyTasks {
                task: task.0,
                capacity: self.max_tasks,
            });
        }
        let group = params.group;
        if !self.groups.get(group.index()).is_some_and(|g| g.exists) {
            return Err(ParamError::OutOfRange {
                field: "group",
                value: i64::from(group.0),
                min: 0,
                max: self.groups.len() as i64 - 1,
            });
        }
        let e = self.task_se(task);
        debug_assert!(
            !self.entities[e as usize].on_rq,
            "task_new of a queued task"
        );
        if self.known_task(task) {
            self.task_dead(task);
        }
        self.advance_clock(now);
        let (policy, load) = FairPolicy::of(params.policy);
        let custom_slice = params
            .custom_slice
            .map(|s| s.clamp(CUSTOM_SLICE_RANGE.0, CUSTOM_SLICE_RANGE.1));
        let slice = match self.pick.policy() {
            PickPolicy::Cfs(_) => 0,
            PickPolicy::Eevdf(tunables) => custom_slice.unwrap_or(tunables.base_slice),
        };
        self.entities[e as usize] = Entity::new(EntityKind::Task(policy), load, group, slice);
        if matches!(self.pick.policy(), PickPolicy::Eevdf(_)) {
            self.entities[e as usize].custom_slice =
                custom_slice.and_then(core::num::NonZeroU64::new);
        }
        self.groups[group.index()].tasks += 1;
        if let PickPolicy::Cfs(tunables) = self.pick.policy() {
            // task_fork_fair (§1.4): start from the running entity (or the
            // queue's base), add the start debit, keep it relative until enqueue.
            self.update_curr(group, now);
            let base = match self.queued_curr(group) {
                Some(curr) => self.entities[curr as usize].vruntime,
                None => self.queues[group.index()].min_vruntime,
            };
            self.entities[e as usize].vruntime = base;
            self.place_entity_cfs(group, e, true, now, tunables);
            let min = self.queues[group.index()].min_vruntime;
            let entity = &mut self.entities[e as usize];
            entity.vruntime = entity.vruntime.wrapping_sub(min);
            entity.relative = true;
        }
        Ok(())
    }

    fn task_dead(&mut self, task: TaskId) {
        if !self.known_task(task) {
            return;
        }
        self.complete_delayed_task(self.task_se(task));
        let e = self.task_se(task) as usize;
        let entity = &mut self.entities[e];
        debug_assert!(!entity.on_rq, "task_dead of a queued task");
        entity.known = false;
        let group = entity.queue;
        self.groups[group.index()].tasks -= 1;
    }

    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        debug_assert!(self.known_task(task), "enqueue of unknown {task:?}");
        self.advance_clock(now);
        if flags.initial {
            self.post_init_task_load(self.task_se(task));
        }
        self.util_est_enqueue_task(self.task_se(task));
        let e = self.task_se(task);
        if self.entities[e as usize].delayed {
            // Woken before its delayed dequeue completed (§1.5).
            self.requeue_delayed_entity(e, now);
            return;
        }
        let mut flags = flags;
        let mut level = Some(e);
        let mut queued_levels = 0;
        let mut stopped = false;
        while let Some(se) = level {
            if self.entities[se as usize].on_rq {
                if self.entities[se as usize].delayed {
                    self.requeue_delayed_entity(se, now);
                }
                break;
            }
            let q = self.entities[se as usize].queue;
            self.enqueue_entity(q, se, flags, now);
            self.queues[q.index()].h_nr_running += 1;
            queued_levels += 1;
            if self.queue_throttled(q) {
                // Its tasks count from the throttled level down only (§4.2).
                stopped = true;
                break;
            }
            flags = EnqueueFlags {
                wakeup: true,
                ..EnqueueFlags::default()
            };
            level = self.queue_parent(q);
        }
        while !stopped && let Some(se) = level {
            level = self.update_group_level(se, 1, now);
        }
        if self.bandwidth_used() {
            // Last, so that the walks above keep what they hold in registers.
            self.enqueue_throttle_pass(e, queued_levels, now);
        }
    }

    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        debug_assert!(
            self.entities[self.task_se(task) as usize].on_rq,
            "dequeue of {task:?}"
        );
        self.advance_clock(now);
        self.util_est_dequeue_task(self.task_se(task), flags.sleep);
        if flags.migrating {
            // `dequeue_entity` of a migrating task updates its load with
            // `DO_DETACH` (§2.6 `update_load_avg` flags): its signals leave this
            // CPU's run queues now, and the walk below propagates the change to
            // the root, instead of staying there as removed load until the next
            // update (`remove_entity_load_avg` is for blocked tasks). Otherwise
            // the source CPU still shows the task's load after the destination
            // has taken it on, other CPUs balance against the double count and
            // pull back (issue 4: a task pulled onto the CPU of a lone group's
            // task 2.5 ms after a migration elsewhere).
            self.detach_task_load(self.task_se(task), now);
        }
        self.dequeue_entities(self.task_se(task), flags.sleep, false, now);
    }

    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.advance_clock(now);
        let mut q = GroupId::ROOT;
        loop {
            if self.queued_curr(q).is_some() {
                self.update_curr(q, now);
            }
            let Some(se) = self.pick_next_entity(q) else {
                // (A group entity a switch left running, with nothing
                // queued under it any more, does not count.)
                if q == GroupId::ROOT && self.queued_curr(q).is_none() {
                    // Nothing to run: the CPU goes idle (§2.3 lost idle time).
                    self.clock_enter_idle();
                }
                return None;
            };
            if self.entities[se as usize].delayed {
                // A delayed entity reached at a pick leaves now; pick again.
                self.dequeue_entities(se, true, true, now);
                q = GroupId::ROOT;
                continue;
            }
            match self.owned_queue(se) {
                Some(group) => q = self.pick_down_running_groups(group, now),
                None => return Some(self.se_task(se)),
            }
        }
    }

    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.advance_clock(now);
        let mut level = Some(self.task_se(task));
        while let Some(se) = level {
            let q = self.entities[se as usize].queue;
            if self.queues[q.index()].curr == se {
                self.put_prev_entity(q, se, now);
            }
            level = self.queue_parent(q);
        }
        if self.bandwidth_used() {
            self.put_prev_throttle_pass(self.task_se(task), now);
        }
    }

    fn put_prev_task_for_switch(&mut self, task: TaskId, now: Nanoseconds) {
        self.put_prev_level_for_switch(task, now);
    }

    fn settle_switch(&mut self, now: Nanoseconds) {
        self.settle_levels(None, now);
    }

    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.advance_clock(now);
        self.settle_levels(Some(self.task_se(task)), now);
        self.need_resched = false;
        let mut level = Some(self.task_se(task));
        while let Some(se) = level {
            let q = self.entities[se as usize].queue;
            let curr = self.queues[q.index()].curr;
            if curr != se {
                if curr != NIL {
                    // Not handed back by the mechanism: do it here.
                    self.put_prev_entity(q, curr, now);
                }
                self.set_next_entity(q, se, now);
            } else if se < self.task_base {
                // A group entity that runs already: so do the levels above
                // it. A level is set only by this walk, which goes on to the
                // root, and put back only from below (a switch's put and
                // settle, `put_prev_task`): a CPU's running entities form one
                // chain from the root.
                debug_assert!(self.levels_above_run(se), "a gap above entity {se}");
                break;
            }
            level = self.queue_parent(q);
        }
    }

    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        self.advance_clock(now);
        let mut resched = false;
        let mut level = Some(self.task_se(task));
        while let Some(se) = level {
            let q = self.entities[se as usize].queue;
            if self.queues[q.index()].curr == se {
                self.update_curr(q, now);
                self.update_entity_load(q, se, UpdateFlags::UPDATE_TG, now);
                self.update_group_entity_weight(se, now);
                if let PickPolicy::Cfs(tunables) = self.pick.policy()
                    && self.queues[q.index()].nr_queued > 1
                {
                    resched |= self.check_preempt_tick(q, se, &tunables);
                }
            }
            level = self.queue_parent(q);
        }
        resched |= core::mem::take(&mut self.need_resched);
        if resched {
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        if current == woken
            || !self.entities[self.task_se(woken) as usize].on_rq
            || (self.bandwidth_used() && self.task_throttled(woken))
        {
            return Resched::Keep;
        }
        self.advance_clock(now);
        if core::mem::take(&mut self.need_resched) {
            return Resched::Reschedule;
        }
        let idle = |fair: &Self, e: u32| fair.task_policy(e) == Some(FairPolicy::Idle);
        let (curr_se, woken_se) = (self.task_se(current), self.task_se(woken));
        // Each task's policy is read once.
        let (curr_policy, woken_policy) = (self.task_policy(curr_se), self.task_policy(woken_se));
        let (curr_task_idle, woken_task_idle) = (
            curr_policy == Some(FairPolicy::Idle),
            woken_policy == Some(FairPolicy::Idle),
        );
        // An idle-policy task is preempted by any non-idle task (§1.4, §1.5).
        if curr_task_idle && !woken_task_idle {
            self.cancel_protect_slice(curr_se);
            return Resched::Reschedule;
        }
        // Two tasks of one run queue are their own matching entities
        // (`find_matching_se` returns them unchanged), with the idleness
        // read above.
        let ((se, pse), (curr_idle, woken_idle)) =
            if self.entities[curr_se as usize].queue == self.entities[woken_se as usize].queue {
                ((curr_se, woken_se), (curr_task_idle, woken_task_idle))
            } else {
                let (se, pse) = self.find_matching_entities(curr_se, woken_se);
                ((se, pse), (idle(self, se), idle(self, pse)))
            };
        if curr_idle && !woken_idle {
            self.cancel_protect_slice(se);
            return Resched::Reschedule;
        }
        if curr_idle != woken_idle || woken_policy != Some(FairPolicy::Normal) {
            return Resched::Keep;
        }
        let q = self.entities[se as usize].queue;
        self.update_curr(q, now);
        let preempt = match self.pick.policy() {
            PickPolicy::Cfs(tunables) => self.wakeup_preempt_entity(se, pse, &tunables) == 1,
            PickPolicy::Eevdf(tunables) => {
                if self.do_preempt_short(q, pse, se, tunables) {
                    self.cancel_protect_slice(se);
                }
                self.pick_eevdf(q, tunables) == Some(pse)
            }
        };
        if preempt || core::mem::take(&mut self.need_resched) {
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        if self.queues[GroupId::ROOT.index()].h_nr_running <= 1 {
            return;
        }
        self.advance_clock(now);
        let e = self.task_se(task);
        let q = self.entities[e as usize].queue;
        self.update_curr(q, now);
        match self.pick.policy() {
            PickPolicy::Cfs(_) => {
                // set_skip_buddy at every level (§1.4 buddies).
                let mut level = Some(e);
                while let Some(se) = level {
                    let q = self.entities[se as usize].queue;
                    self.queues[q.index()].skip = se;
                    level = self.parent_entity(se);
                }
            }
            PickPolicy::Eevdf(_) => {
                // §1.5 "Yield": push the deadline out by one slice.
                let entity = &mut self.entities[e as usize];
                entity.deadline = entity
                    .deadline
                    .wrapping_add(calc_delta_fair(entity.slice, entity.load));
            }
        }
    }

    fn nr_running(&self) -> usize {
        self.queues[GroupId::ROOT.index()].h_nr_running as usize
    }

    fn reserve_tasks(&mut self, count: usize) {
        self.reserve_task_entities(count);
    }

    fn task_storage_bytes(&self) -> usize {
        self.task_entity_bytes()
    }

    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        self.fair_slice_remaining(task, now)
    }
}
