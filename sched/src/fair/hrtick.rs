//! The end of the running task's slice, for the mechanism's slice-end timer
//! (Linux's `hrtick_start_fair`, see [`SchedClass::slice_remaining`]).
//!
//! At every level of the hierarchy where the running entity competes
//! (`nr_queued > 1`, the levels where the tick checks it), the time until that
//! level's tick check would ask for a reschedule; the earliest level wins.
//! Linux arms the timer from the task's own level only; with groups the levels
//! above can end the slice first, so all are asked.
//!
//! ```text
//!   CFS:   check_preempt_tick reschedules once ran > sched_slice (§1.4):
//!            remaining = sched_slice(se) + 1 - ran,  ran = time since set_next
//!   EEVDF: update_deadline fires once vruntime ≥ deadline (§1.5):
//!            remaining = min T: calc_delta_fair(T, se) ≥ deadline - vruntime,
//!            T counted from the entity's last charge, less the time since then
//! ```
//!
//! [`SchedClass::slice_remaining`]: crate::class::SchedClass::slice_remaining

use super::{FairRunQueue, PickPolicy};
use crate::task::{Nanoseconds, TaskId};
use crate::weight::{LoadWeight, NICE_0_LOAD, calc_delta, calc_delta_fair, vtime_delta};

/// The smallest wall time `t` with `calc_delta_fair(t, load) ≥ virtual`: the
/// inverse of the weighted clock (§1.2), exact for the fixed-point rounding.
pub(super) fn wall_time_for(virtual_time: u64, load: LoadWeight) -> u64 {
    if load.weight == NICE_0_LOAD || virtual_time == 0 {
        return virtual_time;
    }
    // virtual · w / 1024, exact through the nice-0 inverse (2^22); the
    // fixed-point inverse of `load` is within 2^-12 of 1/w (§1.2).
    let estimate = calc_delta(virtual_time, load.weight, LoadWeight::from_nice(0));
    let margin = estimate / 4096 + 2;
    let mut low = estimate.saturating_sub(margin);
    if calc_delta_fair(low, load) >= virtual_time {
        low = 0;
    }
    let mut high = estimate.saturating_add(margin);
    while calc_delta_fair(high, load) < virtual_time && high < u64::MAX / 2 {
        high *= 2;
    }
    // Invariant: calc(low) < virtual (or low = 0), calc(high) ≥ virtual.
    while low + 1 < high {
        let middle = low + (high - low) / 2;
        if calc_delta_fair(middle, load) >= virtual_time {
            high = middle;
        } else {
            low = middle;
        }
    }
    if calc_delta_fair(low, load) >= virtual_time {
        low
    } else {
        high
    }
}

impl FairRunQueue {
    /// `slice_remaining` of the fair class: `None` unless `task` runs here and
    /// competes at some level.
    pub(super) fn fair_slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<u64> {
        self.task_entity(task)?;
        let mut remaining: Option<u64> = None;
        let mut level = Some(task.0 as u32);
        while let Some(se) = level {
            let entity = &self.entities[se as usize];
            let queue = &self.queues[entity.queue.index()];
            if queue.curr != se || !entity.on_rq {
                break;
            }
            if queue.nr_queued > 1 {
                let since_charge = now.saturating_sub(entity.exec_start);
                let left = match self.pick {
                    PickPolicy::Cfs(tunables) => {
                        let ran =
                            entity.sum_exec_runtime - entity.prev_sum_exec_runtime + since_charge;
                        (self.sched_slice(se, &tunables) + 1).saturating_sub(ran)
                    }
                    PickPolicy::Eevdf(_) => {
                        let to_deadline = vtime_delta(entity.deadline, entity.vruntime);
                        let wall = wall_time_for(to_deadline.max(0) as u64, entity.load);
                        wall.saturating_sub(since_charge)
                    }
                };
                remaining = Some(remaining.map_or(left, |r| r.min(left)));
            }
            level = self.parent_entity(se);
        }
        remaining
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fair::test_rng::Rng;

    /// Brute-force check of the inverse: `t` reaches the virtual time and
    /// `t - 1` does not, for every nice level and random virtual times.
    #[test]
    fn wall_time_for_is_the_least_time_reaching_the_virtual_time() {
        let mut rng = Rng::new(7);
        let weights = (-20..=19)
            .map(LoadWeight::from_nice)
            .chain([LoadWeight::idle(), LoadWeight::from_scaled(12_345 << 10)]);
        for load in weights {
            for _ in 0..200 {
                let virtual_time = rng.below(1 << 36);
                let t = wall_time_for(virtual_time, load);
                assert!(
                    calc_delta_fair(t, load) >= virtual_time,
                    "{load:?} {virtual_time}"
                );
                assert!(
                    t == 0 || calc_delta_fair(t - 1, load) < virtual_time,
                    "{load:?} {virtual_time}: {t} is not the least"
                );
            }
        }
        assert_eq!(wall_time_for(0, LoadWeight::from_nice(5)), 0);
    }
}
