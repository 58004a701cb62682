//! Joining and leaving a run queue's signals: new tasks, attach, detach, removed load, reweight (§2.5, §2.6).
//!
//! A run queue's sums carry its queued entities' history. When an entity
//! arrives (new task, migration in, group move) its averages are added; when it
//! leaves they are taken out. Sums are rebuilt from averages with the run
//! queue's divider, so that both stay consistent.
//!
//! The values returned as `i64` are the load-sum change to hand to
//! [`super::propagate::add_tg_cfs_propagate`] on the run queue (§2.7).

use super::accumulate::pelt_divider;
use super::{PELT_MIN_DIVIDER, SCHED_CAPACITY_SHIFT, SchedAvg, signed_difference, sub_positive};

/// `init_entity_runnable_average` (§2.5): a new task looks fully loaded
/// (`load_avg` = its weight); a group entity starts at 0. Everything else is 0,
/// so the entity is not attached (`last_update_time == 0`).
#[must_use]
pub fn init_entity_runnable_average(weight: u64, is_task: bool) -> SchedAvg {
    SchedAvg {
        load_avg: if is_task { weight } else { 0 },
        ..SchedAvg::default()
    }
}

/// `post_init_entity_util_avg` (§2.5), at `wake_up_new_task`: a new task's
/// util starts at half the capacity the CPU has left, or its weight's share of
/// the run queue's util if that is smaller.
///
/// - `run_queue`: the signals of the fair run queue it starts on.
/// - `cpu_capacity`: `arch_scale_cpu_capacity` of that CPU.
/// - `weight`: the task's load weight (`se_weight`).
/// - `fair_class`: false for a task of another class; it then only takes the
///   run queue's PELT time `now` as its `last_update_time` and is attached
///   later, when it switches to fair (step 5).
pub fn post_init_entity_util_avg(
    entity: &mut SchedAvg,
    run_queue: &SchedAvg,
    cpu_capacity: u64,
    weight: u64,
    fair_class: bool,
    now: u64,
) {
    let cap = signed_difference(cpu_capacity, run_queue.util_avg) / 2;
    if cap > 0 {
        let cap = cap as u64;
        entity.util_avg = if run_queue.util_avg != 0 {
            let share =
                (run_queue.util_avg as u128 * weight as u128) / (run_queue.load_avg as u128 + 1);
            (share as u64).min(cap)
        } else {
            cap
        };
    }
    entity.runnable_avg = entity.util_avg;
    if !fair_class {
        entity.last_update_time = now;
    }
}

/// `enqueue_load_avg`: adds the entity's load to the run queue's (used by
/// attach and by reweight). The run queue's `load_sum` is weighted.
pub fn enqueue_load_avg(run_queue: &mut SchedAvg, entity: &SchedAvg, weight: u64) {
    run_queue.load_avg = run_queue.load_avg.saturating_add(entity.load_avg);
    run_queue.load_sum = run_queue
        .load_sum
        .saturating_add(weight.saturating_mul(entity.load_sum));
}

/// `dequeue_load_avg`: removes the entity's load, clamped at 0, keeping
/// `load_sum >= load_avg * PELT_MIN_DIVIDER` (§2.6).
pub fn dequeue_load_avg(run_queue: &mut SchedAvg, entity: &SchedAvg, weight: u64) {
    run_queue.load_avg = sub_positive(run_queue.load_avg, entity.load_avg);
    run_queue.load_sum = sub_positive(run_queue.load_sum, weight.saturating_mul(entity.load_sum));
    run_queue.load_sum = run_queue
        .load_sum
        .max(run_queue.load_avg.saturating_mul(PELT_MIN_DIVIDER));
}

/// `attach_entity_load_avg` (§2.6): aligns the entity on the run queue's
/// PELT time and open period, rebuilds its sums from its averages with the
/// run queue's divider, and adds it to the run queue. Returns the load sum to
/// propagate to the parent group (`add_tg_cfs_propagate(cfs_rq, load_sum)`).
pub fn attach_entity_load_avg(run_queue: &mut SchedAvg, entity: &mut SchedAvg, weight: u64) -> i64 {
    let divider = pelt_divider(run_queue);
    entity.last_update_time = run_queue.last_update_time;
    entity.period_contrib = run_queue.period_contrib;
    entity.util_sum = entity.util_avg.saturating_mul(divider);
    entity.runnable_sum = entity.runnable_avg.saturating_mul(divider);
    let load_sum = entity.load_avg.saturating_mul(divider);
    entity.load_sum = load_sum.checked_div(weight).unwrap_or(load_sum);
    enqueue_load_avg(run_queue, entity, weight);
    run_queue.util_avg = run_queue.util_avg.saturating_add(entity.util_avg);
    run_queue.util_sum = run_queue.util_sum.saturating_add(entity.util_sum);
    run_queue.runnable_avg = run_queue.runnable_avg.saturating_add(entity.runnable_avg);
    run_queue.runnable_sum = run_queue.runnable_sum.saturating_add(entity.runnable_sum);
    entity.load_sum.min(i64::MAX as u64) as i64
}

/// `detach_entity_load_avg` (§2.6): removes the entity's signals from the
/// run queue, clamped at 0, keeping each `sum >= avg * PELT_MIN_DIVIDER`.
/// Returns the (negative) load sum to propagate to the parent group.
pub fn detach_entity_load_avg(run_queue: &mut SchedAvg, entity: &SchedAvg, weight: u64) -> i64 {
    dequeue_load_avg(run_queue, entity, weight);
    run_queue.util_avg = sub_positive(run_queue.util_avg, entity.util_avg);
    run_queue.util_sum = sub_positive(run_queue.util_sum, entity.util_sum);
    run_queue.util_sum = run_queue
        .util_sum
        .max(run_queue.util_avg.saturating_mul(PELT_MIN_DIVIDER));
    run_queue.runnable_avg = sub_positive(run_queue.runnable_avg, entity.runnable_avg);
    run_queue.runnable_sum = sub_positive(run_queue.runnable_sum, entity.runnable_sum);
    run_queue.runnable_sum = run_queue
        .runnable_sum
        .max(run_queue.runnable_avg.saturating_mul(PELT_MIN_DIVIDER));
    -(entity.load_sum.min(i64::MAX as u64) as i64)
}

/// `reweight_entity`'s PELT part: an entity whose weight changes takes its
/// old load out of the run queue (if queued), recomputes `load_avg` from its
/// `load_sum` with the new weight, and puts the new load back.
pub fn reweight_entity_load_avg(
    run_queue: &mut SchedAvg,
    entity: &mut SchedAvg,
    old_weight: u64,
    new_weight: u64,
    on_run_queue: bool,
) {
    if on_run_queue {
        dequeue_load_avg(run_queue, entity, old_weight);
    }
    let divider = pelt_divider(entity);
    entity.load_avg = ((new_weight as u128 * entity.load_sum as u128) / divider as u128) as u64;
    if on_run_queue {
        enqueue_load_avg(run_queue, entity, new_weight);
    }
}

/// `cfs_rq->removed` (§2.6): signals of entities that left this run queue
/// while its lock was not held (migration, death), subtracted at its next
/// update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemovedLoad {
    /// Entities recorded since the last apply.
    pub nr: u32,
    /// Their summed `load_avg`.
    pub load_avg: u64,
    /// Their summed `util_avg`.
    pub util_avg: u64,
    /// Their summed `runnable_avg`.
    pub runnable_avg: u64,
}

impl RemovedLoad {
    /// `remove_entity_load_avg` (§2.6): records an entity's averages
    /// (already synchronised to the run queue's `last_update_time` by the caller).
    pub fn record(&mut self, entity: &SchedAvg) {
        self.nr = self.nr.saturating_add(1);
        self.load_avg = self.load_avg.saturating_add(entity.load_avg);
        self.util_avg = self.util_avg.saturating_add(entity.util_avg);
        self.runnable_avg = self.runnable_avg.saturating_add(entity.runnable_avg);
    }

    /// The removed-load step at the start of `update_cfs_rq_load_avg` (§2.6):
    /// subtracts the recorded averages, and the sums they stand for
    /// (`avg * divider`), from the run queue, clamped as detach does, and
    /// clears the record. Returns `None` if nothing was recorded, else the load
    /// sum to propagate to the parent group (`-(runnable * divider) >> 10`);
    /// either way the caller then ages the run queue, and counts this as
    /// "decayed" when `Some`.
    pub fn apply(&mut self, run_queue: &mut SchedAvg) -> Option<i64> {
        if self.nr == 0 {
            return None;
        }
        let removed = core::mem::take(self);
        let divider = pelt_divider(run_queue);

        run_queue.load_avg = sub_positive(run_queue.load_avg, removed.load_avg);
        run_queue.load_sum =
            sub_positive(run_queue.load_sum, removed.load_avg.saturating_mul(divider));
        run_queue.load_sum = run_queue
            .load_sum
            .max(run_queue.load_avg.saturating_mul(PELT_MIN_DIVIDER));

        run_queue.util_avg = sub_positive(run_queue.util_avg, removed.util_avg);
        run_queue.util_sum =
            sub_positive(run_queue.util_sum, removed.util_avg.saturating_mul(divider));
        run_queue.util_sum = run_queue
            .util_sum
            .max(run_queue.util_avg.saturating_mul(PELT_MIN_DIVIDER));

        run_queue.runnable_avg = sub_positive(run_queue.runnable_avg, removed.runnable_avg);
        run_queue.runnable_sum = sub_positive(
            run_queue.runnable_sum,
            removed.runnable_avg.saturating_mul(divider),
        );
        run_queue.runnable_sum = run_queue
            .runnable_sum
            .max(run_queue.runnable_avg.saturating_mul(PELT_MIN_DIVIDER));

        // The removed runnable time, back in unweighted load-sum units
        // (an arithmetic shift of the negative value, i.e. rounded down).
        let removed_sum = removed
            .runnable_avg
            .saturating_mul(divider)
            .min(i64::MAX as u64) as i64;
        Some(-removed_sum >> SCHED_CAPACITY_SHIFT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pelt::average::{update_entity_load_avg, update_run_queue_load_avg};

    const MS: u64 = 1_000_000;

    /// A run queue that has run one nice-0 task for 50 ms, and that task.
    fn busy_run_queue() -> (SchedAvg, SchedAvg) {
        let mut run_queue = SchedAvg::default();
        let mut task = SchedAvg::default();
        for t in 1..=50 {
            update_run_queue_load_avg(&mut run_queue, t * MS + 300, 1024, 1, true);
            update_entity_load_avg(&mut task, t * MS + 300, 1024, true, 1, true);
        }
        (run_queue, task)
    }

    fn migrated_task(load_avg: u64, util_avg: u64, runnable_avg: u64) -> SchedAvg {
        SchedAvg {
            load_avg,
            util_avg,
            runnable_avg,
            ..SchedAvg::default()
        }
    }

    /// §2.6: attach aligns the entity and rebuilds its sums from its
    /// averages with the run queue's divider; detach right after restores
    /// the run queue exactly, and the two propagated sums cancel.
    #[test]
    fn attach_then_detach_restores() {
        let (before, _) = busy_run_queue();
        let mut run_queue = before;
        let mut entity = migrated_task(700, 300, 400);
        let added = attach_entity_load_avg(&mut run_queue, &mut entity, 1024);
        let divider = pelt_divider(&before);
        assert_eq!(entity.last_update_time, before.last_update_time);
        assert_eq!(entity.period_contrib, before.period_contrib);
        assert_eq!(entity.util_sum, 300 * divider);
        assert_eq!(entity.runnable_sum, 400 * divider);
        assert_eq!(entity.load_sum, 700 * divider / 1024);
        assert_eq!(added, entity.load_sum as i64);
        assert_eq!(run_queue.util_avg, before.util_avg + 300);
        assert_eq!(run_queue.load_avg, before.load_avg + 700);
        assert_eq!(run_queue.runnable_avg, before.runnable_avg + 400);
        assert_eq!(run_queue.load_sum, before.load_sum + 1024 * entity.load_sum);
        let removed = detach_entity_load_avg(&mut run_queue, &entity, 1024);
        assert_eq!(removed, -added);
        assert_eq!(run_queue, before);
    }

    /// §2.6: removed load (migration away) applied at the next update
    /// subtracts what detach would have, in averages and sums.
    #[test]
    fn removed_load_matches_detach() {
        let (before, _) = busy_run_queue();
        let mut attached = before;
        let mut entity = migrated_task(700, 300, 400);
        let _ = attach_entity_load_avg(&mut attached, &mut entity, 1024);
        let mut removed = RemovedLoad::default();
        assert_eq!(
            removed.apply(&mut attached.clone()),
            None,
            "nothing recorded"
        );
        removed.record(&entity);
        let mut via_removed = attached;
        let propagate = removed.apply(&mut via_removed);
        assert_eq!(removed, RemovedLoad::default(), "the record is cleared");
        assert_eq!(via_removed.load_avg, before.load_avg);
        assert_eq!(via_removed.util_avg, before.util_avg);
        assert_eq!(via_removed.runnable_avg, before.runnable_avg);
        assert_eq!(via_removed.util_sum, before.util_sum);
        assert_eq!(via_removed.runnable_sum, before.runnable_sum);
        // The load sum loses avg * divider, detach loses weight * (avg * divider / weight):
        // equal up to the division's floor (less than one weight).
        assert!(via_removed.load_sum.abs_diff(before.load_sum) < 1024);
        let divider = pelt_divider(&before) as i64;
        assert_eq!(propagate, Some((-400 * divider) >> 10));
    }

    /// §2.6/§2.7: subtracting more than is there clamps at 0, and each sum
    /// stays at least `avg * PELT_MIN_DIVIDER`.
    #[test]
    fn detach_clamps() {
        let mut run_queue = migrated_task(100, 100, 100);
        run_queue.util_sum = 10;
        let entity = SchedAvg {
            load_avg: 50,
            util_avg: 50,
            runnable_avg: 500,
            util_sum: 1_000_000,
            runnable_sum: 1,
            load_sum: 1,
            ..SchedAvg::default()
        };
        let _ = detach_entity_load_avg(&mut run_queue, &entity, 1024);
        assert_eq!(run_queue.util_avg, 50);
        assert_eq!(run_queue.util_sum, 50 * PELT_MIN_DIVIDER);
        assert_eq!(run_queue.runnable_avg, 0);
        assert_eq!(run_queue.runnable_sum, 0);
        assert_eq!(run_queue.load_avg, 50);
        assert_eq!(run_queue.load_sum, 50 * PELT_MIN_DIVIDER);
        let mut removed = RemovedLoad::default();
        removed.record(&entity);
        removed.record(&entity);
        let _ = removed.apply(&mut run_queue);
        assert_eq!((run_queue.load_avg, run_queue.util_avg), (0, 0));
    }

    /// Consistency: blocked entities attached to an otherwise idle run queue
    /// decay with it; the run queue's util stays the sum of theirs, up to one
    /// unit of floor per entity.
    #[test]
    fn attached_blocked_entities_decay_with_run_queue() {
        let mut run_queue = SchedAvg {
            last_update_time: 10 * MS,
            ..SchedAvg::default()
        };
        let mut entities = [
            migrated_task(300, 300, 300),
            migrated_task(200, 100, 150),
            migrated_task(1024, 700, 900),
        ];
        for entity in &mut entities {
            let _ = attach_entity_load_avg(&mut run_queue, entity, 1024);
        }
        for t in [11, 15, 40, 100, 400] {
            update_run_queue_load_avg(&mut run_queue, t * MS, 0, 0, false);
            let mut util = 0;
            let mut load = 0;
            for entity in &mut entities {
                update_entity_load_avg(entity, t * MS, 1024, false, 0, false);
                util += entity.util_avg;
                load += entity.load_avg;
            }
            assert!(
                run_queue.util_avg.abs_diff(util) <= 3,
                "t={t}: {} vs {util}",
                run_queue.util_avg
            );
            assert!(
                run_queue.load_avg.abs_diff(load) <= 3,
                "t={t}: {} vs {load}",
                run_queue.load_avg
            );
        }
    }

    /// §2.5: a new task on a CPU already fuller than its capacity keeps util 0;
    /// a non-fair task takes the PELT time and is not attached.
    #[test]
    fn post_init_edge_cases() {
        let full = migrated_task(2048, 1100, 1100);
        let mut task = init_entity_runnable_average(1024, true);
        post_init_entity_util_avg(&mut task, &full, 1024, 1024, true, 0);
        assert_eq!((task.util_avg, task.runnable_avg), (0, 0));
        // cap = (1024 - 1023) / 2 = 0: not > 0, no util.
        let nearly = migrated_task(1024, 1023, 1023);
        post_init_entity_util_avg(&mut task, &nearly, 1024, 1024, true, 0);
        assert_eq!(task.util_avg, 0);
        let mut rt_task = init_entity_runnable_average(1024, true);
        post_init_entity_util_avg(
            &mut rt_task,
            &SchedAvg::default(),
            512,
            1024,
            false,
            77 * MS,
        );
        assert_eq!(rt_task.util_avg, 256, "half of an idle cap-512 CPU");
        assert_eq!(rt_task.last_update_time, 77 * MS);
        assert_eq!(
            init_entity_runnable_average(1024, false).load_avg,
            0,
            "group entities start at 0"
        );
    }

    /// Reweight: load_avg follows the new weight (analytic: proportional),
    /// and the run queue swaps the old load for the new.
    #[test]
    fn reweight() {
        let (mut run_queue, mut task) = busy_run_queue();
        let attached_load = run_queue.load_avg;
        let old = task.load_avg;
        reweight_entity_load_avg(&mut run_queue, &mut task, 1024, 2048, true);
        assert!(task.load_avg.abs_diff(2 * old) <= 1);
        assert_eq!(run_queue.load_avg, attached_load - old + task.load_avg);
    }
}
