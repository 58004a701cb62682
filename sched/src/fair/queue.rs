//! Per-level operations on one group run queue, common to CFS and EEVDF:
//! charging the running entity (`update_curr`, §1.3), `min_vruntime`, putting
//! entities into and out of the timeline, enqueue/dequeue of one entity,
//! set_next/put_prev, reweighting and the group-entity weight (§2.7).

use super::Pick;
use super::timeline::NIL;
use super::timeline::TimelineStore;
use super::{FairRunQueue, PickPolicy};
use crate::class::EnqueueFlags;
use crate::pelt::update::UpdateFlags;
use crate::task::{GroupId, Nanoseconds};
use crate::weight::{
    LoadWeight, calc_delta_fair, div_wide, scale_load_down, vtime_before, vtime_delta,
};

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// The key `e` is ordered by: vruntime (CFS) or deadline (EEVDF).
    fn timeline_key(&self, e: u32) -> u64 {
        let entity = &self.entities[e as usize];
        match self.pick.policy() {
            PickPolicy::Cfs(_) => entity.vruntime,
            PickPolicy::Eevdf(_) => entity.deadline,
        }
    }

    /// `__enqueue_entity`: into the tree and the EEVDF sums.
    pub(super) fn timeline_insert(&mut self, q: GroupId, e: u32) {
        let key = self.timeline_key(e);
        let entity = &self.entities[e as usize];
        let (vruntime, weight) = (entity.vruntime, entity.weight());
        let queue = &mut self.queues[q.index()];
        let offset = vtime_delta(vruntime, queue.min_vruntime);
        queue.avg_vruntime = queue
            .avg_vruntime
            .wrapping_add(offset.wrapping_mul(weight as i64));
        queue.avg_load += weight;
        self.nodes.insert(&mut queue.timeline, e, key, vruntime);
    }

    /// `__dequeue_entity`: out of the tree and the EEVDF sums.
    pub(super) fn timeline_remove(&mut self, q: GroupId, e: u32) {
        let entity = &self.entities[e as usize];
        let (vruntime, weight) = (entity.vruntime, entity.weight());
        let queue = &mut self.queues[q.index()];
        let offset = vtime_delta(vruntime, queue.min_vruntime);
        queue.avg_vruntime = queue
            .avg_vruntime
            .wrapping_sub(offset.wrapping_mul(weight as i64));
        queue.avg_load -= weight;
        self.nodes.remove(&mut queue.timeline, e);
    }

    /// The running entity of `q` if it is still queued.
    ///
    /// `NIL` (`u32::MAX`) is past the end of any entity table, so one bounds
    /// test answers both "is there a current entity" and "is it in the table".
    #[inline(always)]
    pub(super) fn queued_curr(&self, q: GroupId) -> Option<u32> {
        let curr = self.queues[q.index()].curr;
        self.entities
            .get(curr as usize)
            .is_some_and(|entity| entity.on_rq)
            .then_some(curr)
    }

    /// `update_min_vruntime` (§1.3): advance to min(curr, leftmost) but never
    /// back; the EEVDF sums are rebased by `avg_load * delta`.
    pub(super) fn update_min_vruntime(&mut self, q: GroupId) {
        self.update_min_vruntime_with(q, self.queued_curr(q));
    }

    /// [`Self::update_min_vruntime`] with the queue's running entity, if
    /// queued, already known (`queued_curr`).
    #[inline(always)]
    fn update_min_vruntime_with(&mut self, q: GroupId, curr: Option<u32>) {
        let queue = &self.queues[q.index()];
        let mut candidate = queue.min_vruntime;
        if let Some(curr) = curr {
            candidate = self.entities[curr as usize].vruntime;
        }
        let tree_min = match self.pick.policy() {
            PickPolicy::Cfs(_) => queue.timeline.first().map(|id| self.nodes.key(id)),
            PickPolicy::Eevdf(_) => self.nodes.min_vruntime(&queue.timeline),
        };
        if let Some(tree_min) = tree_min
            && (curr.is_none() || vtime_before(tree_min, candidate))
        {
            candidate = tree_min;
        }
        let queue = &mut self.queues[q.index()];
        let delta = vtime_delta(candidate, queue.min_vruntime);
        if delta > 0 {
            queue.avg_vruntime = queue
                .avg_vruntime
                .wrapping_sub((queue.avg_load as i64).wrapping_mul(delta));
            queue.min_vruntime = candidate;
        }
    }

    /// `update_curr` (§1.3): charge the running entity of `q` for the time since
    /// it was last charged. Under EEVDF a passed deadline asks for a reschedule
    /// when others are queued (§1.5), recorded in `need_resched`.
    #[inline(always)]
    pub(super) fn update_curr(&mut self, q: GroupId, now: Nanoseconds) {
        let curr = self.queues[q.index()].curr;
        if curr == NIL {
            return;
        }
        let entity = &mut self.entities[curr as usize];
        let delta = now.wrapping_sub(entity.exec_start) as i64;
        if delta <= 0 {
            return;
        }
        // `queued_curr`, read from the entity in hand (nothing below moves it).
        let queued_curr = entity.on_rq.then_some(curr);
        let delta = delta as u64;
        entity.exec_start = now;
        entity.sum_exec_runtime += delta;
        entity.vruntime = entity
            .vruntime
            .wrapping_add(calc_delta_fair(delta, entity.load));
        if let PickPolicy::Eevdf(tunables) = self.pick.policy() {
            // The deadline and the protection read from the entity in hand.
            let deadline_passed = Self::update_deadline(entity, tunables);
            let protected = entity.slice_protected();
            if self.queues[q.index()].nr_queued > 1
                && (deadline_passed || self.did_preempt_short(q, curr, protected, tunables))
            {
                self.need_resched = true;
            }
        }
        self.update_min_vruntime_with(q, queued_curr);
        // Last, as Linux's update_curr: nothing above is reloaded after it.
        if self.bandwidth_used() {
            self.account_cfs_rq_runtime(q, delta, now);
        }
    }

    /// `enqueue_entity` for one level.
    #[inline(always)]
    pub(super) fn enqueue_entity(
        &mut self,
        q: GroupId,
        e: u32,
        flags: EnqueueFlags,
        now: Nanoseconds,
    ) {
        let is_curr = self.queues[q.index()].curr == e;
        match self.pick.policy() {
            PickPolicy::Cfs(tunables) => {
                // §1.4 step 5: a relative vruntime gets this queue's base back.
                if is_curr {
                    self.renormalise(q, e);
                }
                self.update_curr(q, now);
                if !is_curr {
                    self.renormalise(q, e);
                }
                self.update_entity_load(q, e, UpdateFlags::ENQUEUE, now);
                self.update_group_entity_weight(e, now);
                self.account_enqueue(q, e);
                if flags.wakeup {
                    self.place_entity_cfs(q, e, false, now, tunables);
                }
            }
            PickPolicy::Eevdf(_) => {
                if is_curr {
                    self.place_entity_eevdf(q, e, flags.initial);
                }
                self.update_curr(q, now);
                self.update_entity_load(q, e, UpdateFlags::ENQUEUE, now);
                self.update_group_entity_weight(e, now);
                if !is_curr {
                    self.place_entity_eevdf(q, e, flags.initial);
                }
                self.account_enqueue(q, e);
            }
        }
        if !is_curr {
            self.timeline_insert(q, e);
        }
        self.entities[e as usize].on_rq = true;
    }

    fn renormalise(&mut self, q: GroupId, e: u32) {
        let base = self.queues[q.index()].min_vruntime;
        let entity = &mut self.entities[e as usize];
        if entity.relative {
            entity.vruntime = entity.vruntime.wrapping_add(base);
            entity.relative = false;
        }
    }

    fn account_enqueue(&mut self, q: GroupId, e: u32) {
        let weight = self.entities[e as usize].load.weight;
        let queue = &mut self.queues[q.index()];
        queue.load += weight;
        queue.nr_queued += 1;
    }

    /// `dequeue_entity` for one level; `sleep` is `DEQUEUE_SLEEP`, `delayed`
    /// completes a delayed dequeue (`DEQUEUE_DELAYED`). Returns false when the
    /// entity is kept queued as delayed instead (EEVDF `DELAY_DEQUEUE`, §1.5).
    pub(super) fn dequeue_entity(
        &mut self,
        q: GroupId,
        e: u32,
        sleep: bool,
        delayed: bool,
        now: Nanoseconds,
    ) -> bool {
        self.dequeue_entity_inner(q, e, sleep, delayed, true, now)
    }

    /// `dequeue_entity` with `DEQUEUE_SPECIAL` (a throttle): the entity leaves
    /// even when not eligible; `delayed`: it was delayed and completes.
    pub(super) fn dequeue_entity_special(
        &mut self,
        q: GroupId,
        e: u32,
        delayed: bool,
        now: Nanoseconds,
    ) {
        self.dequeue_entity_inner(q, e, true, delayed, false, now);
    }

    #[inline(always)]
    fn dequeue_entity_inner(
        &mut self,
        q: GroupId,
        e: u32,
        sleep: bool,
        delayed: bool,
        may_delay: bool,
        now: Nanoseconds,
    ) -> bool {
        self.update_curr(q, now);
        if let PickPolicy::Eevdf(tunables) = self.pick.policy() {
            // The sums are made once, for the delay's eligibility test and the
            // lag: the PELT update between them changes no vruntime, weight or
            // queue membership.
            let sums = self.eevdf_sums(q);
            if tunables.delay_dequeue
                && may_delay
                && sleep
                && !delayed
                && !self.vruntime_eligible_of(q, self.entities[e as usize].vruntime, sums)
            {
                self.update_entity_load(q, e, UpdateFlags::NONE, now);
                self.set_delayed(e);
                return false;
            }
            self.update_entity_load(q, e, UpdateFlags::UPDATE_TG, now);
            self.update_entity_lag_of(q, e, tunables, sums);
            if !sleep {
                // PLACE_REL_DEADLINE (§1.5): keep the deadline relative.
                let entity = &mut self.entities[e as usize];
                entity.deadline = entity.deadline.wrapping_sub(entity.vruntime);
                entity.rel_deadline = true;
            }
        } else {
            self.update_entity_load(q, e, UpdateFlags::UPDATE_TG, now);
        }
        let queue = &mut self.queues[q.index()];
        if queue.skip == e {
            queue.skip = NIL;
        }
        if queue.curr != e {
            self.timeline_remove(q, e);
        }
        let weight = self.entities[e as usize].load.weight;
        let queue = &mut self.queues[q.index()];
        queue.load -= weight;
        queue.nr_queued -= 1;
        self.entities[e as usize].on_rq = false;
        if matches!(self.pick.policy(), PickPolicy::Cfs(_)) && !sleep {
            // §1.4 step 5: leave relative to this queue's min_vruntime.
            let base = self.queues[q.index()].min_vruntime;
            let entity = &mut self.entities[e as usize];
            entity.vruntime = entity.vruntime.wrapping_sub(base);
            entity.relative = true;
        }
        self.update_group_entity_weight(e, now);
        self.update_min_vruntime(q);
        if delayed {
            self.finish_delayed_dequeue(e);
        }
        true
    }

    /// `set_next_entity`: `e` (queued on `q`) starts running at this level.
    pub(super) fn set_next_entity(&mut self, q: GroupId, e: u32, now: Nanoseconds) {
        if self.entities[e as usize].on_rq {
            self.timeline_remove(q, e);
            self.update_entity_load(q, e, UpdateFlags::UPDATE_TG, now);
        }
        let queue = &mut self.queues[q.index()];
        queue.curr = e;
        if queue.skip == e {
            queue.skip = NIL;
        }
        let entity = &mut self.entities[e as usize];
        entity.exec_start = now;
        entity.prev_sum_exec_runtime = entity.sum_exec_runtime;
        if let PickPolicy::Eevdf(tunables) = self.pick.policy() {
            // RUN_TO_PARITY (§1.5): protect the slice until the deadline moves.
            entity.protected_deadline = entity
                .deadline
                .wrapping_add(u64::from(!tunables.run_to_parity));
        }
    }

    /// `put_prev_entity`: `e` stops running at this level.
    #[inline(always)]
    pub(super) fn put_prev_entity(&mut self, q: GroupId, e: u32, now: Nanoseconds) {
        debug_assert_eq!(self.queues[q.index()].curr, e);
        if self.entities[e as usize].on_rq {
            self.update_curr(q, now);
            self.timeline_insert(q, e);
            self.update_entity_load(q, e, UpdateFlags::NONE, now);
        }
        self.queues[q.index()].curr = NIL;
    }

    /// `reweight_entity`: give `e` (on `q`) the scaled weight `weight`. Under
    /// EEVDF the lag and a relative deadline scale by `old / new` and the entity
    /// is placed again (§1.5 "Reweight").
    pub(super) fn reweight_entity(&mut self, q: GroupId, e: u32, weight: u64, now: Nanoseconds) {
        let on_rq = self.entities[e as usize].on_rq;
        let is_curr = self.queues[q.index()].curr == e;
        let old_weight = self.entities[e as usize].weight();
        if on_rq {
            if is_curr {
                self.update_curr(q, now);
            }
            if let PickPolicy::Eevdf(tunables) = self.pick.policy() {
                self.update_entity_lag(q, e, tunables);
                let entity = &mut self.entities[e as usize];
                entity.deadline = entity.deadline.wrapping_sub(entity.vruntime);
                entity.rel_deadline = true;
            }
            if !is_curr {
                self.timeline_remove(q, e);
            }
            let queue = &mut self.queues[q.index()];
            queue.load -= self.entities[e as usize].load.weight;
            queue.nr_queued -= 1;
        }
        self.reweight_entity_load(q, e, old_weight, scale_load_down(weight));
        let entity = &mut self.entities[e as usize];
        entity.load = LoadWeight::from_scaled(weight);
        let new_weight = entity.weight().max(1);
        if matches!(self.pick.policy(), PickPolicy::Eevdf(_)) {
            let (old_weight, new_weight) = (i128::from(old_weight), i128::from(new_weight));
            entity.vlag = div_wide(i128::from(entity.vlag) * old_weight, new_weight) as i64;
            if entity.rel_deadline {
                let relative = entity.deadline as i64;
                entity.deadline =
                    div_wide(i128::from(relative) * old_weight, new_weight) as i64 as u64;
            }
        }
        if on_rq {
            if matches!(self.pick.policy(), PickPolicy::Eevdf(_)) {
                // Placed into the queue without itself (also when running).
                self.entities[e as usize].on_rq = false;
                self.place_entity_eevdf(q, e, false);
                self.entities[e as usize].on_rq = true;
            }
            let queue = &mut self.queues[q.index()];
            queue.load += self.entities[e as usize].load.weight;
            queue.nr_queued += 1;
            if !is_curr {
                self.timeline_insert(q, e);
            }
            self.update_min_vruntime(q);
        }
    }

    /// `update_cfs_group(se)` (§2.7): a group entity's weight follows its group's
    /// share of the group-wide load. Tasks are left alone, tested here inline:
    /// most calls are for tasks, and a call to find nothing to do paid a
    /// prologue and epilogue.
    #[inline(always)]
    pub(super) fn update_group_entity_weight(&mut self, e: u32, now: Nanoseconds) {
        if self.owned_queue(e).is_some() {
            self.update_group_entity_weight_of(e, now);
        }
    }

    /// [`Self::update_group_entity_weight`] for a group entity, out of line:
    /// the walks that know they hold a group entity call
    /// [`Self::update_group_shares`] themselves.
    fn update_group_entity_weight_of(&mut self, e: u32, now: Nanoseconds) {
        if let Some(group) = self.owned_queue(e) {
            self.update_group_shares(e, group, now);
        }
    }

    /// [`Self::update_group_entity_weight`] of group entity `e`, owning `group`.
    #[inline(always)]
    pub(super) fn update_group_shares(&mut self, e: u32, group: GroupId, now: Nanoseconds) {
        let shares = self.queues[group.index()].group_shares(self.groups[group.index()].shares);
        if shares != self.entities[e as usize].load.weight {
            let parent_queue = self.entities[e as usize].queue;
            self.reweight_entity(parent_queue, e, shares, now);
        }
    }
}
