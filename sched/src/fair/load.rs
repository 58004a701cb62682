//! PELT wiring of the fair run queue: the CPU's PELT clock, `update_load_avg`
//! for entities and group run queues at the points Linux calls it, util_est,
//! group propagation and blocked-load decay (§2.2–§2.7; the maths is in
//! [`crate::pelt`]).
//!
//! ```text
//!   every operation at `now`:  clock.update(now + EPOCH, idle, capacity)
//!   enqueue_entity             update_load_avg(q, se, UPDATE_TG | DO_ATTACH)
//!   dequeue_entity, tick,      update_load_avg(q, se, UPDATE_TG)
//!   set_next, ancestors
//!   put_prev                   update_load_avg(q, se, 0)
//!   group entity               + propagate its group run queue's change
//! ```
//!
//! The PELT clock starts one PELT period (2^20 ns) after time 0, so that period
//! boundaries stay where they are and no attached signal has the PELT time 0,
//! which means "not attached" (§2.6).

use super::Pick;
use super::entity::Entity;
use super::group::GroupQueue;
use super::timeline::NIL;
use super::{FairRunQueue, GroupId};
use crate::pelt::attach::{post_init_entity_util_avg, reweight_entity_load_avg};
use crate::pelt::propagate::GroupRunQueue;
use crate::pelt::update::{
    EntityState, RunQueueState, UpdateFlags, remove_entity_load_avg, update_cfs_rq_load_avg,
    update_load_avg,
};
use crate::pelt::util_est::{util_est_dequeue, util_est_enqueue, util_est_update};
use crate::run_queue::CpuCapacity;
use crate::task::Nanoseconds;
use crate::weight::scale_load_down;

/// Offset of the PELT clock from the run-queue clock: one PELT period.
pub const PELT_EPOCH: u64 = 1 << 20;

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// Moves the PELT clock to `now` (§2.3): scaled by capacity and frequency
    /// while a fair task ran, catching up while none did.
    #[inline(always)]
    pub(super) fn advance_clock(&mut self, now: Nanoseconds) {
        self.last_now = now;
        let idle = self.queues[GroupId::ROOT.index()].curr == NIL;
        self.clock
            .update(now.wrapping_add(PELT_EPOCH), idle, self.capacity);
    }

    /// The CPU goes idle (`update_idle_rq_clock_pelt`, §2.3).
    pub(super) fn clock_enter_idle(&mut self) {
        let util_sum = self.queues[GroupId::ROOT.index()].pelt.avg.util_sum;
        self.clock.enter_idle(util_sum);
    }

    /// Sets the capacity and frequency scale the PELT clock runs at from now on.
    pub fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        self.capacity = capacity;
    }

    /// `update_load_avg(cfs_rq, se, flags)` (§2.6) for entity `e` on `q`, with
    /// the states that held since the last update; a group entity also takes
    /// its group run queue's pending change (§2.7).
    #[inline(always)]
    pub(super) fn update_entity_load(
        &mut self,
        q: GroupId,
        e: u32,
        flags: UpdateFlags,
        now: Nanoseconds,
    ) {
        let start = self.probe.start();
        self.update_entity_load_unprobed(q, e, flags, now);
        self.probe.end_pelt(start);
    }

    #[inline(always)]
    fn update_entity_load_unprobed(
        &mut self,
        q: GroupId,
        e: u32,
        flags: UpdateFlags,
        now: Nanoseconds,
    ) {
        if let Some(group) = self.owned_queue(e) {
            self.update_group_entity_load(q, e, group, flags, now);
            return;
        }
        let pelt_now = self.entity_pelt_now(q);
        let queue = &mut self.queues[q.index()];
        let run_queue_state = RunQueueState {
            load_weight: scale_load_down(queue.load),
            nr_runnable: u64::from(queue.h_nr_running),
            current_running: queue.curr != NIL,
        };
        let entity = &mut self.entities[e as usize];
        let entity_state = EntityState {
            weight: entity.weight(),
            on_run_queue: entity.on_rq,
            runnable: u64::from(entity.on_rq && !entity.delayed),
            running: queue.curr == e,
        };
        let result = update_load_avg(
            &mut queue.pelt,
            run_queue_state,
            &mut entity.avg,
            entity_state,
            None,
            pelt_now,
            flags,
        );
        if result.update_tg_load_avg && q != GroupId::ROOT {
            queue.update_tg_load_avg(now);
        }
        if result.util_changed && q == GroupId::ROOT {
            self.util_changed = true;
        }
    }

    /// The PELT clock an update of an entity on `q` reads: the CPU's, or a
    /// throttled subtree's frozen one (§4.2).
    #[inline(always)]
    fn entity_pelt_now(&self, q: GroupId) -> u64 {
        if self.bandwidth_used() {
            self.queue_clock_pelt(q)
        } else {
            self.clock.now()
        }
    }

    /// [`Self::update_entity_load`] of group entity `e` (on `q`, owning
    /// `group`): its group run queue's pending change propagates (§2.7), and
    /// `se_update_runnable` follows.
    #[inline(always)]
    fn update_group_entity_load(
        &mut self,
        q: GroupId,
        e: u32,
        group: GroupId,
        flags: UpdateFlags,
        now: Nanoseconds,
    ) {
        let pelt_now = self.entity_pelt_now(q);
        let Ok([queue, group_queue]) = self.queues.get_disjoint_mut([q.index(), group.index()])
        else {
            return;
        };
        let entity = &mut self.entities[e as usize];
        let mut parts = GroupLevel {
            queue,
            group_queue,
            entity,
        };
        if parts.update_load_avg(q, e, flags, pelt_now, now) {
            self.util_changed = true;
        }
    }

    /// One level of the walk above the run queue a task entered or left
    /// (Linux's `enqueue_task_fair` and `dequeue_task_fair`, §2.7):
    /// `update_load_avg(cfs_rq, se, UPDATE_TG)` and `update_cfs_group(se)`
    /// for the group entity `se`, known to be one (the parent of an entity),
    /// so that neither asks which run queue it owns and both use the entity
    /// and the two run queues borrowed once; then `h_nr_running_delta` is
    /// added to the `h_nr_running` of the run queue `se` is on. Returns the
    /// entity one level up, or `None` at the root or when that run queue is
    /// throttled (the walk stops there, §4.2).
    #[inline(always)]
    pub(super) fn update_group_level(
        &mut self,
        se: u32,
        h_nr_running_delta: i32,
        now: Nanoseconds,
    ) -> Option<u32> {
        // Group g's entity is g - 1 (`group_entity`).
        let group = GroupId((se + 1) as u16);
        debug_assert_eq!(self.owned_queue(se), Some(group));
        let q = self.entities[se as usize].queue;
        let start = self.probe.start();
        let pelt_now = self.entity_pelt_now(q);
        let Ok([queue, group_queue]) = self.queues.get_disjoint_mut([q.index(), group.index()])
        else {
            return None;
        };
        let entity = &mut self.entities[se as usize];
        let mut parts = GroupLevel {
            queue,
            group_queue,
            entity,
        };
        if parts.update_load_avg(q, se, UpdateFlags::UPDATE_TG, pelt_now, now) {
            self.util_changed = true;
        }
        self.probe.end_pelt(start);
        let GroupLevel {
            queue,
            group_queue,
            entity,
        } = parts;
        let shares = group_queue.group_shares(self.groups[group.index()].shares);
        let queue = if shares == entity.load.weight {
            queue
        } else {
            self.reweight_entity(q, se, shares, now);
            &mut self.queues[q.index()]
        };
        queue.h_nr_running = queue.h_nr_running.wrapping_add_signed(h_nr_running_delta);
        let throttled = BW && queue.runtime.throttled;
        (!throttled && q != GroupId::ROOT).then(|| self.group_entity(q))
    }

    /// The PELT part of `reweight_entity`: `load_avg` follows the new weight.
    pub(super) fn reweight_entity_load(&mut self, q: GroupId, e: u32, old: u64, new: u64) {
        let attached = self.entities[e as usize].avg.last_update_time != 0;
        let mut avg = self.entities[e as usize].avg;
        reweight_entity_load_avg(
            &mut self.queues[q.index()].pelt.avg,
            &mut avg,
            old,
            new,
            attached,
        );
        self.entities[e as usize].avg = avg;
    }

    /// `post_init_entity_util_avg` (§2.5) for a new task's first enqueue.
    pub(super) fn post_init_task_load(&mut self, e: u32) {
        let entity = &self.entities[e as usize];
        if entity.avg.last_update_time != 0 {
            return;
        }
        let weight = entity.weight();
        let queue_avg = self.queues[entity.queue.index()].pelt.avg;
        let capacity = u64::from(self.capacity.capacity_orig);
        let pelt_now = self.queue_clock_pelt(entity.queue);
        post_init_entity_util_avg(
            &mut self.entities[e as usize].avg,
            &queue_avg,
            capacity,
            weight,
            true,
            pelt_now,
        );
    }

    /// `util_est_enqueue` of a task on the CPU's root run queue (§2.4).
    pub(super) fn util_est_enqueue_task(&mut self, e: u32) {
        let estimate = self.entities[e as usize].avg.util_est;
        util_est_enqueue(
            &mut self.queues[GroupId::ROOT.index()].pelt.avg.util_est,
            &estimate,
        );
    }

    /// `util_est_dequeue` then `util_est_update` for a task leaving (§2.4), with
    /// its signals from before this dequeue's PELT update.
    pub(super) fn util_est_dequeue_task(&mut self, e: u32, sleep: bool) {
        // In place: a copy of the whole average out and back costs two
        // `memcpy` calls (about 150 instructions) at every dequeue.
        let avg = &mut self.entities[e as usize].avg;
        util_est_dequeue(
            &mut self.queues[GroupId::ROOT.index()].pelt.avg.util_est,
            &avg.util_est,
        );
        let capacity = u64::from(self.capacity.capacity_orig);
        let _ = util_est_update(
            &mut avg.util_est,
            avg.util_avg,
            avg.runnable_avg,
            capacity,
            sleep,
        );
    }

    /// Detaches a task's signals from its run queue (group change, §2.6) and
    /// marks it to be attached again where it goes.
    pub(super) fn detach_task_load(&mut self, e: u32, now: Nanoseconds) {
        let q = self.entities[e as usize].queue;
        if self.entities[e as usize].avg.last_update_time != 0 {
            self.update_entity_load(q, e, UpdateFlags::DETACH, now);
        }
        self.entities[e as usize].avg.last_update_time = 0;
    }

    /// Attaches a task that is not queued to its run queue (group change).
    pub(super) fn attach_task_load(&mut self, e: u32, now: Nanoseconds) {
        let q = self.entities[e as usize].queue;
        self.update_entity_load(q, e, UpdateFlags::ENQUEUE, now);
    }

    /// `remove_entity_load_avg` (§2.6) for a task leaving this CPU.
    pub(super) fn remove_task_load(&mut self, e: u32) {
        let q = self.entities[e as usize].queue;
        let weight = self.entities[e as usize].weight();
        let mut avg = self.entities[e as usize].avg;
        if avg.last_update_time != 0 {
            remove_entity_load_avg(&mut avg, &mut self.queues[q.index()].pelt, weight);
        }
        avg.last_update_time = 0;
        self.entities[e as usize].avg = avg;
    }

    /// `update_blocked_averages` (§2.7 "Blocked averages"): decays the signals of
    /// group run queues that nothing updates, children before parents, and
    /// passes the change up through the group entities. The mechanism calls it
    /// periodically (Linux: at load balance, NOHZ idle: every 32 ms).
    pub fn update_blocked_averages(&mut self, now: Nanoseconds) {
        self.advance_clock(now);
        let pelt_now = self.clock.now();
        let max_depth = self
            .groups
            .iter()
            .filter(|g| g.exists)
            .map(|g| g.depth)
            .max();
        for depth in (1..=max_depth.unwrap_or(0)).rev() {
            for g in 1..self.groups.len() {
                let info = self.groups[g];
                if !info.exists || info.depth != depth {
                    continue;
                }
                // A throttled subtree's clock stands still (§4.2).
                let queue_pelt_now = self.queue_clock_pelt(GroupId(g as u16));
                let queue = &mut self.queues[g];
                let state = RunQueueState {
                    load_weight: scale_load_down(queue.load),
                    nr_runnable: u64::from(queue.h_nr_running),
                    current_running: queue.curr != NIL,
                };
                if update_cfs_rq_load_avg(&mut queue.pelt, queue_pelt_now, state) {
                    queue.update_tg_load_avg(now);
                }
                let group = GroupId(g as u16);
                let entity = self.group_entity(group);
                self.update_entity_load(info.parent, entity, UpdateFlags::UPDATE_TG, now);
            }
        }
        let root = &mut self.queues[GroupId::ROOT.index()];
        let state = RunQueueState {
            load_weight: scale_load_down(root.load),
            nr_runnable: u64::from(root.h_nr_running),
            current_running: root.curr != NIL,
        };
        if update_cfs_rq_load_avg(&mut root.pelt, pelt_now, state) {
            self.util_changed = true;
        }
    }

    /// Whether the CPU's fair utilization changed since the last call (the
    /// `cfs_rq_util_change` hook for the frequency governor, §2.6).
    pub fn take_util_changed(&mut self) -> bool {
        core::mem::take(&mut self.util_changed)
    }
}

/// A group entity with the run queue it is on and the one it owns, borrowed
/// together for one update.
struct GroupLevel<'a> {
    queue: &'a mut GroupQueue,
    group_queue: &'a mut GroupQueue,
    entity: &'a mut Entity,
}

impl GroupLevel<'_> {
    /// `update_load_avg(cfs_rq, se, flags)` (§2.6) of the group entity `e`
    /// on `q`, with its group run queue's pending change (§2.7) and
    /// `se_update_runnable`. Returns whether the CPU's utilization changed
    /// (an entity on the root run queue).
    #[inline(always)]
    fn update_load_avg(
        &mut self,
        q: GroupId,
        e: u32,
        flags: UpdateFlags,
        pelt_now: u64,
        now: Nanoseconds,
    ) -> bool {
        let (queue, group_queue, entity) =
            (&mut *self.queue, &mut *self.group_queue, &mut *self.entity);
        let run_queue_state = RunQueueState {
            load_weight: scale_load_down(queue.load),
            nr_runnable: u64::from(queue.h_nr_running),
            current_running: queue.curr != NIL,
        };
        let entity_state = EntityState {
            weight: entity.weight(),
            on_run_queue: entity.on_rq,
            runnable: u64::from(entity.runnable_weight),
            running: queue.curr == e,
        };
        let result = update_load_avg(
            &mut queue.pelt,
            run_queue_state,
            &mut entity.avg,
            entity_state,
            Some(GroupRunQueue {
                avg: &group_queue.pelt.avg,
                load: group_queue.load,
                propagation: &mut group_queue.pelt.propagation,
            }),
            pelt_now,
            flags,
        );
        // se_update_runnable.
        entity.runnable_weight = group_queue.h_nr_running;
        if result.update_tg_load_avg && q != GroupId::ROOT {
            queue.update_tg_load_avg(now);
        }
        result.util_changed && q == GroupId::ROOT
    }
}
