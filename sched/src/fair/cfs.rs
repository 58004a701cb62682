//! The CFS rules (Linux v2.6.23 … v6.5, §1.4): the period and slice, placement
//! with the start debit and the gentle sleeper credit, tick preemption, wake-up
//! preemption with the wake-up granularity, and the leftmost pick.
//!
//! ```text
//!   place (wakeup):  vruntime = max(vruntime, min_vruntime - latency/2)
//!   place (fork):    vruntime = max(vruntime, min_vruntime + vslice)
//!   tick:            ran > slice  or  (ran ≥ min_gran and curr - leftmost > slice)
//!   wakeup:          curr.vruntime - woken.vruntime > calc_delta_fair(wakeup_gran, woken)
//! ```

use super::FairRunQueue;
use super::Pick;
use super::entity::CfsTunables;
use super::timeline::NIL;
use super::timeline::TimelineStore;
use crate::task::{GroupId, Nanoseconds};
use crate::weight::{
    LoadWeight, NICE_0_LOAD, calc_delta, calc_delta_fair, vtime_before, vtime_delta,
};

/// How long a sleep must be for the sleeper's old vruntime to be forgotten:
/// about 2^63 / NICE_0_LOAD ns, 104 days (§1.4 step 4).
const LONG_SLEEPER_NS: u64 = (1u64 << 63) / NICE_0_LOAD;

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// `__sched_period(nr)` (§1.4).
    fn sched_period(nr: u64, tunables: &CfsTunables) -> u64 {
        if nr > tunables.nr_latency() {
            nr * tunables.min_granularity
        } else {
            tunables.latency
        }
    }

    /// `sched_slice(cfs_rq, se)` with `ALT_PERIOD` and `BASE_SLICE` (§1.4): the
    /// period over the CPU's runnable tasks, scaled by the weight share at every
    /// level, floored at the minimum granularity.
    pub(super) fn sched_slice(&self, e: u32, tunables: &CfsTunables) -> u64 {
        let root = &self.queues[GroupId::ROOT.index()];
        let on_rq = self.entities[e as usize].on_rq;
        let nr = u64::from(root.h_nr_running) + u64::from(!on_rq);
        let mut slice = Self::sched_period(nr, tunables);
        let mut at = Some(e);
        while let Some(level) = at {
            let entity = &self.entities[level as usize];
            let queue = &self.queues[entity.queue.index()];
            let mut load = queue.load;
            if !entity.on_rq {
                load += entity.load.weight;
            }
            slice = calc_delta(slice, entity.load.weight, LoadWeight::from_scaled(load));
            at = self.parent_entity(level);
        }
        let floor = if self.entities[e as usize].is_idle_policy() {
            tunables.idle_min_granularity
        } else {
            tunables.min_granularity
        };
        slice.max(floor)
    }

    /// `place_entity` for CFS (§1.4): start debit at fork, halved sleeper credit
    /// at wake-up, never gaining time by sleeping (except after ~104 days).
    pub(super) fn place_entity_cfs(
        &mut self,
        q: GroupId,
        e: u32,
        initial: bool,
        now: Nanoseconds,
        tunables: CfsTunables,
    ) {
        let mut vruntime = self.queues[q.index()].min_vruntime;
        if initial {
            let vslice = calc_delta_fair(
                self.sched_slice(e, &tunables),
                self.entities[e as usize].load,
            );
            vruntime = vruntime.wrapping_add(vslice);
        } else {
            let thresh = if self.entities[e as usize].is_idle_policy() {
                tunables.min_granularity
            } else {
                tunables.latency
            };
            vruntime = vruntime.wrapping_sub(thresh >> 1);
        }
        let entity = &mut self.entities[e as usize];
        let long_sleeper = !initial && now.wrapping_sub(entity.exec_start) > LONG_SLEEPER_NS;
        if long_sleeper || vtime_before(entity.vruntime, vruntime) {
            entity.vruntime = vruntime;
        }
    }

    /// `wakeup_preempt_entity(curr, se)` (§1.4): 1 if `se` should preempt `curr`,
    /// 0 if within the granularity, -1 if `se` is not ahead.
    pub(super) fn wakeup_preempt_entity(&self, curr: u32, se: u32, tunables: &CfsTunables) -> i32 {
        let curr_v = self.entities[curr as usize].vruntime;
        let se_entity = &self.entities[se as usize];
        let vdiff = vtime_delta(curr_v, se_entity.vruntime);
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(tunables.wakeup_granularity, se_entity.load);
        if vdiff as u64 > gran { 1 } else { 0 }
    }

    /// `check_preempt_tick` (§1.4) for the running entity of `q`.
    pub(super) fn check_preempt_tick(&self, q: GroupId, curr: u32, tunables: &CfsTunables) -> bool {
        let ideal = self.sched_slice(curr, tunables);
        let entity = &self.entities[curr as usize];
        let ran = entity.sum_exec_runtime - entity.prev_sum_exec_runtime;
        if ran > ideal {
            return true;
        }
        if ran < tunables.min_granularity {
            return false;
        }
        let Some(left) = self.queues[q.index()].timeline.first() else {
            return false;
        };
        let delta = vtime_delta(entity.vruntime, self.nodes.key(left));
        delta > 0 && delta as u64 > ideal
    }

    /// `pick_next_entity` for CFS (§1.4): the smaller of the leftmost and the
    /// running entity; a yielding (skip) entity gives way to the next one when
    /// that is within the wake-up granularity.
    pub(super) fn pick_cfs(&self, q: GroupId, tunables: &CfsTunables) -> Option<u32> {
        let queue = &self.queues[q.index()];
        let curr = self.queued_curr(q);
        let first = queue.timeline.first();
        let left = match (first, curr) {
            (None, None) => return None,
            (None, Some(c)) => c,
            (Some(l), None) => l,
            (Some(l), Some(c)) => {
                if vtime_before(self.entities[c as usize].vruntime, self.nodes.key(l)) {
                    c
                } else {
                    l
                }
            }
        };
        if queue.skip == NIL || queue.skip != left {
            return Some(left);
        }
        let mut second = if Some(left) == curr {
            first
        } else {
            self.nodes.next(left)
        };
        if let Some(c) = curr
            && c != left
            && second
                .is_none_or(|s| vtime_before(self.entities[c as usize].vruntime, self.nodes.key(s)))
        {
            second = Some(c);
        }
        match second {
            Some(s) if self.wakeup_preempt_entity(s, left, tunables) < 1 => Some(s),
            _ => Some(left),
        }
    }
}
