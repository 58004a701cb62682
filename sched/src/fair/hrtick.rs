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
//!            remaining = min T ≥ 1: calc_delta_fair(T, se) ≥ deadline - vruntime,
//!            T counted from the entity's last charge, less the time since then
//! ```
//!
//! The EEVDF charge counts at least 1 ns: `update_curr` returns before
//! `update_deadline` when it has nothing to charge (Linux's `delta_exec <= 0`),
//! so a deadline already reached is only acted on by a tick that charges some
//! run time. An entity can hold such a zero-length request (`deadline ==
//! vruntime`): `reweight_entity` scales the relative deadline by `old / new`
//! weight and truncates, as Linux's does, so a group entity left one virtual ns
//! short of its deadline and then made heavier has none left. Reporting 0 ns
//! for it right after a pick or a charge named an instant at which the tick
//! keeps the task, and a mechanism that re-arms its timer for what is left
//! stood still there. Linux never asks this question: `hrtick_start_fair` looks
//! at the task's own slice only, and `hrtick_start` keeps every expiry at least
//! 10 µs ahead, a guard against timer interrupt storms rather than a
//! scheduling rule.
//!
//! [`SchedClass::slice_remaining`]: crate::class::SchedClass::slice_remaining

use super::Pick;
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

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// `slice_remaining` of the fair class: `None` unless `task` runs here and
    /// competes at some level.
    pub(super) fn fair_slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<u64> {
        self.task_entity(task)?;
        let mut remaining: Option<u64> = None;
        let mut level = Some(self.task_se(task));
        while let Some(se) = level {
            let entity = &self.entities[se as usize];
            let queue = &self.queues[entity.queue.index()];
            if queue.curr != se || !entity.on_rq {
                break;
            }
            if queue.nr_queued > 1 {
                let since_charge = now.saturating_sub(entity.exec_start);
                let left = match self.pick.policy() {
                    PickPolicy::Cfs(tunables) => {
                        let ran =
                            entity.sum_exec_runtime - entity.prev_sum_exec_runtime + since_charge;
                        (self.sched_slice(se, &tunables) + 1).saturating_sub(ran)
                    }
                    PickPolicy::Eevdf(_) => {
                        // The tick's update_curr looks at the deadline only
                        // when it charges something: at least 1 ns in all.
                        let to_deadline = vtime_delta(entity.deadline, entity.vruntime);
                        let wall = wall_time_for(to_deadline.max(0) as u64, entity.load).max(1);
                        wall.saturating_sub(since_charge)
                    }
                };
                // A group entity a switch inside its group left running
                // keeps its slice's start (Linux sets it only at
                // `set_next_entity`): one whose CFS slice is used up is the
                // tick's to preempt (`check_preempt_tick`), not a timer's at
                // this very instant, which would fire for ever.
                if left > 0 || se == self.task_se(task) {
                    remaining = Some(remaining.map_or(left, |r| r.min(left)));
                }
            }
            level = self.parent_entity(se);
        }
        remaining
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::{Resched, SchedClass};
    use crate::fair::test_rng::Rng;
    use crate::fair::test_support::{INITIAL, MS, eevdf, in_group, nice};
    use crate::task::GroupId;

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

    /// The state the simulator hung in (`--sched eevdf --cpus 3 --hrtick 1`,
    /// 375.2 ms): a group entity running with `deadline == vruntime`.
    ///
    /// A task of `/background` runs against a root task; another CPU holds as
    /// much of the group's load, so its group entity weighs about half a nice-0
    /// task (`calc_group_shares`, §2.7). A tick charges the group entity to one
    /// virtual ns short of its deadline (in the run, a slice charged in two
    /// parts lost that ns to the rounding of §1.2), so `update_deadline` does
    /// not fire; the other CPU's load has meanwhile gone, and the same tick
    /// reweights the group entity to the full shares: the relative deadline
    /// becomes ⌊1 · old / new⌋ = 0 (§1.5 "Reweight"). Nothing more is charged
    /// at that instant, so the tick there keeps the task; 1 ns later the charge
    /// finds vruntime ≥ deadline with the root task queued, and reschedules.
    #[test]
    fn a_zero_length_request_ends_after_one_charged_nanosecond() {
        let mut fair = FairRunQueue::new(eevdf(4 * MS), 2, 2);
        let background = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let (indexer, ui) = (TaskId(0), TaskId(1));
        fair.task_new(indexer, &in_group(0, background), 0).unwrap();
        fair.task_new(ui, &nice(0), 0).unwrap();
        fair.set_group_load_sum(background, 1024);
        fair.enqueue_task(indexer, 0, INITIAL);
        assert_eq!(fair.pick_next_task(0), Some(indexer));
        fair.set_next_task(indexer, 0);
        fair.enqueue_task(ui, 0, INITIAL);
        let se = fair.group_entity(background) as usize;
        let old_weight = fair.entities[se].weight();
        assert!(old_weight < 1024, "half-weight group entity: {old_weight}");

        // Deadline one virtual ns past what the tick at `t` charges, its slice
        // protected (RUN_TO_PARITY) as a fresh one is.
        let t = 100_000;
        let entity = &mut fair.entities[se];
        let charge = calc_delta_fair(t - entity.exec_start, entity.load);
        entity.deadline = entity.vruntime.wrapping_add(charge + 1);
        entity.protected_deadline = entity.deadline;
        let contribution = fair.group_load_contribution(background);
        fair.set_group_load_sum(background, contribution);
        assert_eq!(fair.task_tick(indexer, t), Resched::Keep);
        let entity = &fair.entities[se];
        assert!(
            entity.weight() > old_weight,
            "reweighted to the full shares"
        );
        assert_eq!(entity.deadline, entity.vruntime, "zero-length request");

        // The tick at `t` charges nothing, so the earliest slice end is t + 1.
        assert_eq!(fair.slice_remaining(indexer, t), Some(1));
        assert_eq!(fair.task_tick(indexer, t), Resched::Keep);
        assert_eq!(fair.task_tick(indexer, t + 1), Resched::Reschedule);
    }

    /// The mechanism's contract (`update_hrtick`): after `slice_remaining(now)`
    /// is `Some(r)`, the tick at `now + r` reschedules, so a slice-end timer
    /// never has to be re-armed for the instant it fired at. Driven only by
    /// that timer, over a configuration like the one that hung: a root task and
    /// a group of two tasks whose group entity is reweighted at every tick by a
    /// remote load that changes between arming and firing (§2.7). After a pick
    /// nothing has been charged, so every slice end lies at least 1 ns ahead.
    #[test]
    fn the_tick_at_the_reported_slice_end_reschedules() {
        let mut rng = Rng::new(5);
        let mut fair = FairRunQueue::new(eevdf(4 * MS), 3, 2);
        let background = fair.create_group(GroupId::ROOT, 1024).unwrap();
        fair.task_new(TaskId(0), &nice(0), 0).unwrap();
        for t in 1..3 {
            fair.task_new(TaskId(t), &in_group(0, background), 0)
                .unwrap();
        }
        for t in 0..3 {
            fair.enqueue_task(TaskId(t), 0, INITIAL);
        }
        let mut now = 0;
        let mut curr = fair.pick_next_task(now).unwrap();
        fair.set_next_task(curr, now);
        for step in 0..20_000 {
            let remaining = fair
                .slice_remaining(curr, now)
                .expect("three runnable tasks: every level competes");
            assert!(remaining > 0, "step {step}: time stands still at {now}");
            let remote = rng.below(2048);
            let contribution = fair.group_load_contribution(background);
            fair.set_group_load_sum(background, contribution + remote);
            now += remaining;
            assert_eq!(
                fair.task_tick(curr, now),
                Resched::Reschedule,
                "step {step}: {curr:?}'s slice end at {now} ({remaining} ns)"
            );
            fair.put_prev_task(curr, now);
            curr = fair.pick_next_task(now).unwrap();
            fair.set_next_task(curr, now);
        }
    }
}
