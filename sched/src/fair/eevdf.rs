//! The EEVDF rules (Linux ≥ v6.6, §1.5): the weighted average vruntime V, the
//! eligibility test, virtual deadlines, lag kept across sleep and migration,
//! placement, `pick_eevdf` with slice protection, and the short-slice rule.
//!
//! ```text
//!   key(se) = vruntime - min_vruntime          V = min_vruntime + Σkey·w / Σw
//!   eligible(se)  ⇔  Σkey·w ≥ key(se)·Σw      (lag = V - vruntime ≥ 0)
//!   deadline      = vruntime + slice·NICE_0_LOAD / weight
//!   place:          vruntime = V - vlag·(W + w)/W   (lag survives joining)
//! ```

use super::FairRunQueue;
use super::Pick;
use super::entity::{EevdfTunables, Entity};
use super::timeline::NIL;
use super::timeline::TimelineStore;
use crate::task::GroupId;
use crate::weight::{calc_delta_fair, vtime_before, vtime_delta};

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// Σkey·w and Σw over the queue, the running entity included (§1.5).
    pub(super) fn eevdf_sums(&self, q: GroupId) -> (i64, i64) {
        self.eevdf_sums_with(q, self.queued_curr(q))
    }

    /// [`Self::eevdf_sums`] with the queue's running entity, if queued, already
    /// known (`queued_curr`).
    #[inline(always)]
    fn eevdf_sums_with(&self, q: GroupId, queued_curr: Option<u32>) -> (i64, i64) {
        let queue = &self.queues[q.index()];
        let mut avg = queue.avg_vruntime;
        let mut load = queue.avg_load as i64;
        if let Some(curr) = queued_curr {
            let entity = &self.entities[curr as usize];
            let weight = entity.weight() as i64;
            avg = avg.wrapping_add(
                vtime_delta(entity.vruntime, queue.min_vruntime).wrapping_mul(weight),
            );
            load += weight;
        }
        (avg, load)
    }

    /// `avg_vruntime()`: V, the zero-lag point, rounded toward −∞ (§1.5).
    pub fn avg_vruntime(&self, q: GroupId) -> u64 {
        self.avg_vruntime_of(q, self.eevdf_sums(q))
    }

    /// [`Self::avg_vruntime`] from the sums ([`Self::eevdf_sums`]) made already.
    #[inline(always)]
    fn avg_vruntime_of(&self, q: GroupId, (mut avg, load): (i64, i64)) -> u64 {
        if load > 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.queues[q.index()].min_vruntime.wrapping_add(avg as u64)
    }

    /// `vruntime_eligible()`: whether an entity at `vruntime` has lag ≥ 0, in
    /// the division-free form `Σkey·w ≥ (v - v0)·Σw` (§1.5). One test costs
    /// less this way; `pick_eevdf`'s search, which tests one entity per tree
    /// level, divides once instead (the same predicate).
    pub(super) fn vruntime_eligible(&self, q: GroupId, vruntime: u64) -> bool {
        self.vruntime_eligible_of(q, vruntime, self.eevdf_sums(q))
    }

    /// [`Self::vruntime_eligible`] with the sums ([`Self::eevdf_sums`]) made
    /// already.
    #[inline(always)]
    pub(super) fn vruntime_eligible_of(
        &self,
        q: GroupId,
        vruntime: u64,
        (avg, load): (i64, i64),
    ) -> bool {
        let key = vtime_delta(vruntime, self.queues[q.index()].min_vruntime);
        i128::from(avg) >= i128::from(key) * i128::from(load)
    }

    /// Whether entity `e` (queued on `q`) is eligible.
    #[inline(always)]
    pub(super) fn entity_eligible(&self, q: GroupId, e: u32) -> bool {
        self.vruntime_eligible(q, self.entities[e as usize].vruntime)
    }

    /// `update_deadline()` (§1.5): once vruntime reaches the deadline, a new
    /// request of one slice starts; true when that happened. It takes the
    /// entity in hand (the running one, which `update_curr` holds).
    #[inline(always)]
    pub(super) fn update_deadline(entity: &mut Entity, tunables: EevdfTunables) -> bool {
        if vtime_before(entity.vruntime, entity.deadline) {
            return false;
        }
        entity.slice = entity
            .custom_slice
            .map_or(tunables.base_slice, core::num::NonZeroU64::get);
        entity.deadline = entity
            .vruntime
            .wrapping_add(calc_delta_fair(entity.slice, entity.load));
        true
    }

    /// Whether `e`'s slice is protected (RUN_TO_PARITY, §1.5).
    fn slice_protected(&self, e: u32) -> bool {
        self.entities[e as usize].slice_protected()
    }

    /// `cancel_protect_slice()`.
    pub(super) fn cancel_protect_slice(&mut self, e: u32) {
        let entity = &mut self.entities[e as usize];
        entity.protected_deadline = entity.deadline.wrapping_add(1);
    }

    /// `did_preempt_short()` (§1.5): the protection was cancelled and the
    /// running entity is no longer eligible. `protected`: whether `curr`'s
    /// slice is protected, read by the caller from the entity it holds.
    #[inline(always)]
    pub(super) fn did_preempt_short(
        &self,
        q: GroupId,
        curr: u32,
        protected: bool,
        tunables: EevdfTunables,
    ) -> bool {
        tunables.preempt_short && !protected && !self.entity_eligible(q, curr)
    }

    /// `do_preempt_short()` (§1.5): a woken entity with a shorter slice that is
    /// eligible and either due earlier or facing an ineligible `curr`.
    #[inline(always)]
    pub(super) fn do_preempt_short(
        &self,
        q: GroupId,
        woken: u32,
        curr: u32,
        tunables: EevdfTunables,
    ) -> bool {
        let (w, c) = (
            &self.entities[woken as usize],
            &self.entities[curr as usize],
        );
        tunables.preempt_short
            && w.slice < c.slice
            && self.entity_eligible(q, woken)
            && (vtime_before(w.deadline, c.deadline) || !self.entity_eligible(q, curr))
    }

    /// `update_entity_lag()` (§1.5): `vlag = V - vruntime`, clamped to
    /// `±calc_delta_fair(max(2·slice, TICK_NSEC))`.
    #[inline(always)]
    pub(super) fn update_entity_lag(&mut self, q: GroupId, e: u32, tunables: EevdfTunables) {
        self.update_entity_lag_of(q, e, tunables, self.eevdf_sums(q));
    }

    /// [`Self::update_entity_lag`] with the sums ([`Self::eevdf_sums`]) made
    /// already.
    #[inline(always)]
    pub(super) fn update_entity_lag_of(
        &mut self,
        q: GroupId,
        e: u32,
        tunables: EevdfTunables,
        sums: (i64, i64),
    ) {
        let avg = self.avg_vruntime_of(q, sums);
        let entity = &mut self.entities[e as usize];
        let lag = vtime_delta(avg, entity.vruntime);
        let limit = calc_delta_fair((2 * entity.slice).max(tunables.tick), entity.load) as i64;
        entity.vlag = lag.clamp(-limit, limit);
    }

    /// `place_entity()` for EEVDF (§1.5): restore the saved lag, inflated so it
    /// survives joining the queue, and set the deadline (half a slice at fork).
    #[inline(always)]
    pub(super) fn place_entity_eevdf(&mut self, q: GroupId, e: u32, initial: bool) {
        let avg = self.avg_vruntime(q);
        let entity = &self.entities[e as usize];
        let mut vslice = calc_delta_fair(entity.slice, entity.load);
        let mut lag = 0i64;
        let queue = &self.queues[q.index()];
        if queue.nr_queued > 0 && entity.vlag != 0 {
            let mut load = queue.avg_load as i64;
            let curr = queue.curr;
            if curr != NIL && curr != e && self.entities[curr as usize].on_rq {
                load += self.entities[curr as usize].weight() as i64;
            }
            let joined = i128::from(load) + i128::from(entity.weight());
            let divisor = i128::from(load.max(1));
            lag = crate::weight::div_wide(i128::from(entity.vlag) * joined, divisor) as i64;
        }
        let entity = &mut self.entities[e as usize];
        entity.vruntime = avg.wrapping_sub(lag as u64);
        if entity.rel_deadline {
            entity.deadline = entity.deadline.wrapping_add(entity.vruntime);
            entity.rel_deadline = false;
            return;
        }
        if initial {
            vslice /= 2;
        }
        entity.deadline = entity.vruntime.wrapping_add(vslice);
    }

    /// `pick_eevdf()` (§1.5): the eligible entity with the earliest deadline,
    /// keeping a protected running entity (RUN_TO_PARITY).
    pub(super) fn pick_eevdf(&self, q: GroupId, tunables: EevdfTunables) -> Option<u32> {
        let queue = &self.queues[q.index()];
        let queued_curr = self.queued_curr(q);
        if queue.nr_queued == 1 {
            return queued_curr.or_else(|| queue.timeline.first());
        }
        // The sums are made once, for the running entity's test and the search.
        let (avg, load) = self.eevdf_sums_with(q, queued_curr);
        let base = queue.min_vruntime;
        let curr = queued_curr.filter(|&c| {
            self.vruntime_eligible_of(q, self.entities[c as usize].vruntime, (avg, load))
        });
        if let Some(c) = curr
            && tunables.run_to_parity
            && self.slice_protected(c)
        {
            return Some(c);
        }
        // The sums are fixed during the search: `Σkey·w ≥ key·Σw` is, for
        // integers and Σw > 0, `key ≤ ⌊Σkey·w / Σw⌋`, so one division replaces
        // a 128-bit product at every level of the search.
        // (With Σw = 0 the test is `Σkey·w ≥ 0` for every entity alike.)
        let limit = match load {
            0 if avg < 0 => None,
            0 => Some(i64::MAX),
            _ => Some(avg.div_euclid(load)),
        };
        let best = limit.and_then(|limit| {
            self.nodes
                .first_eligible(&queue.timeline, |v| vtime_delta(v, base) <= limit)
        });
        match (best, curr) {
            (None, None) => queue.timeline.first().or(queued_curr),
            (None, Some(c)) => Some(c),
            (Some(b), None) => Some(b),
            (Some(b), Some(c)) => {
                if vtime_before(self.entities[c as usize].deadline, self.nodes.key(b)) {
                    Some(c)
                } else {
                    Some(b)
                }
            }
        }
    }
}
