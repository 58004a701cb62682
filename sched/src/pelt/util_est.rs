//! util_est: the utilization a task showed when it last went to sleep, smoothed (§2.4).
//!
//! PELT forgets a sleeping task's utilization; a periodic task that wakes up
//! looks smaller than it is. util_est remembers: at each dequeue-for-sleep the
//! task's `util_avg` is folded into an exponentially weighted moving average,
//! and the run queue keeps the sum of the queued tasks' estimates, which
//! schedutil and EAS read.
//!
//! This follows the v6.8+ rules ("Simplify util_est"): one estimate per task,
//! reset upward at once, lowered with weight 1/4 only outside a margin of 10.

use super::SCHED_CAPACITY_SCALE;

/// `UTIL_EST_WEIGHT_SHIFT`: the new sample weighs 1/4 (§2.4, §9).
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;
/// `UTIL_EST_MARGIN = SCHED_CAPACITY_SCALE / 100` = 10 (§2.4, §9).
pub const UTIL_EST_MARGIN: u64 = SCHED_CAPACITY_SCALE / 100;

/// The utilization estimate carried in [`super::SchedAvg`] (§2.4).
///
/// - For a task: `ewma` is the estimate (`util_est & ~UTIL_AVG_UNCHANGED` in
///   v6.8+), `enqueued` is the `util_avg` sampled at the last dequeue for
///   sleep (informational, as the pre-v6.8 `enqueued` field), and
///   `util_avg_unchanged` is the `UTIL_AVG_UNCHANGED` flag: set when a sample
///   is taken, cleared when `util_avg` is next recomputed.
/// - For a run queue: `enqueued` is the sum of the queued tasks' `ewma`
///   ([`util_est_enqueue`] / [`util_est_dequeue`]); the other fields are unused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UtilEst {
    /// Task: last sample; run queue: sum of the queued tasks' estimates.
    pub enqueued: u64,
    /// Task: the estimate.
    pub ewma: u64,
    /// `UTIL_AVG_UNCHANGED`: no new `util_avg` since the last sample.
    pub util_avg_unchanged: bool,
}

/// What [`util_est_update`] did, named after the steps of §2.4 (and the
/// labels of the reference output in Appendix A §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum UtilEstOutcome {
    /// Not a dequeue for sleep: nothing to learn.
    NotSleeping,
    /// Step 1: `util_avg` has not changed since the last sample.
    Unchanged,
    /// Step 3: the sample is at or above the estimate; the estimate jumps up to it.
    ResetUp,
    /// Step 4: the sample is less than the margin below; the estimate is kept.
    WithinMargin,
    /// Step 5: the sample exceeds the CPU's capacity (saturated); no update.
    Saturated,
    /// Step 6: the task waited a lot (runnable well above util); not lowered.
    Waiting,
    /// Step 7: lowered by the 1/4-weight moving average.
    Ewma,
}

/// `task_util_est(p) = max(util_avg, util_est)` (§2.4).
#[must_use]
pub fn task_util_est(util_avg: u64, estimate: &UtilEst) -> u64 {
    util_avg.max(estimate.ewma)
}

/// `util_est_enqueue`: adds the task's estimate to the run queue's sum (§2.4).
pub fn util_est_enqueue(run_queue: &mut UtilEst, task: &UtilEst) {
    run_queue.enqueued = run_queue.enqueued.saturating_add(task.ewma);
}

/// `util_est_dequeue`: removes the task's estimate from the run queue's sum,
/// floored at 0 (§2.4).
pub fn util_est_dequeue(run_queue: &mut UtilEst, task: &UtilEst) {
    run_queue.enqueued = run_queue.enqueued.saturating_sub(task.ewma);
}

/// `util_est_update(cfs_rq, p, task_sleep)` (§2.4, v6.8+), called on dequeue
/// with the task's `util_avg` and `runnable_avg` *before* the dequeue's own
/// PELT update (as in v6.12+, and as the Appendix A §3 reference does).
///
/// `cpu_capacity` is `arch_scale_cpu_capacity` of the CPU (step 5).
pub fn util_est_update(
    estimate: &mut UtilEst,
    util_avg: u64,
    runnable_avg: u64,
    cpu_capacity: u64,
    task_sleep: bool,
) -> UtilEstOutcome {
    if !task_sleep {
        return UtilEstOutcome::NotSleeping;
    }
    if estimate.util_avg_unchanged {
        return UtilEstOutcome::Unchanged;
    }
    let mut ewma = estimate.ewma;
    let dequeued = util_avg;
    let outcome = if ewma <= dequeued {
        ewma = dequeued;
        UtilEstOutcome::ResetUp
    } else if ewma - dequeued < UTIL_EST_MARGIN {
        UtilEstOutcome::WithinMargin
    } else if dequeued > cpu_capacity {
        return UtilEstOutcome::Saturated;
    } else if dequeued + UTIL_EST_MARGIN < runnable_avg {
        UtilEstOutcome::Waiting
    } else {
        let diff = ewma - dequeued;
        ewma = ((ewma << UTIL_EST_WEIGHT_SHIFT) - diff) >> UTIL_EST_WEIGHT_SHIFT;
        UtilEstOutcome::Ewma
    };
    estimate.ewma = ewma;
    estimate.enqueued = dequeued;
    estimate.util_avg_unchanged = true;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(ewma: u64) -> UtilEst {
        UtilEst {
            enqueued: 0,
            ewma,
            util_avg_unchanged: false,
        }
    }

    /// §2.4 step 3: reset upward at once.
    #[test]
    fn reset_up() {
        let mut e = estimate(100);
        assert_eq!(
            util_est_update(&mut e, 300, 300, 1024, true),
            UtilEstOutcome::ResetUp
        );
        assert_eq!(e.ewma, 300);
        assert!(e.util_avg_unchanged);
        // Equal counts as "at or above" (`ewma <= dequeued`).
        let mut e = estimate(300);
        assert_eq!(
            util_est_update(&mut e, 300, 300, 1024, true),
            UtilEstOutcome::ResetUp
        );
        assert_eq!(e.ewma, 300);
    }

    /// §2.4 step 4: a difference below 10 keeps the estimate; exactly 10 does not.
    #[test]
    fn margin() {
        let mut e = estimate(281);
        assert_eq!(
            util_est_update(&mut e, 273, 273, 1024, true),
            UtilEstOutcome::WithinMargin
        );
        assert_eq!(
            e.ewma, 281,
            "Appendix A §3 cap-512 act 117: 273 against 281 keeps 281"
        );
        let mut e = estimate(310);
        assert_eq!(
            util_est_update(&mut e, 301, 301, 1024, true),
            UtilEstOutcome::WithinMargin
        );
        assert_eq!(e.ewma, 310);
        let mut e = estimate(544);
        assert_eq!(
            util_est_update(&mut e, 534, 534, 1024, true),
            UtilEstOutcome::Ewma
        );
        // Appendix A §3, 50 %/16 ms act 117: 534 against 544 gives 541.
        assert_eq!(e.ewma, 541);
    }

    /// §2.4 step 7: 3/4 old + 1/4 new, floored: (4*800 - 400) / 4 = 700.
    #[test]
    fn ewma_weight_one_quarter() {
        let mut e = estimate(800);
        assert_eq!(
            util_est_update(&mut e, 400, 400, 1024, true),
            UtilEstOutcome::Ewma
        );
        assert_eq!(e.ewma, 700);
        // Repeated samples of 0 approach 0 geometrically: 700 -> 525 -> 393 (floors).
        e.util_avg_unchanged = false;
        assert_eq!(
            util_est_update(&mut e, 0, 0, 1024, true),
            UtilEstOutcome::Ewma
        );
        assert_eq!(e.ewma, 525);
        e.util_avg_unchanged = false;
        assert_eq!(
            util_est_update(&mut e, 0, 0, 1024, true),
            UtilEstOutcome::Ewma
        );
        assert_eq!(e.ewma, 393);
    }

    /// §2.4 step 1: no new util_avg since the last sample: skip.
    #[test]
    fn unchanged_skips() {
        let mut e = estimate(800);
        e.util_avg_unchanged = true;
        assert_eq!(
            util_est_update(&mut e, 100, 100, 1024, true),
            UtilEstOutcome::Unchanged
        );
        assert_eq!(e.ewma, 800);
    }

    /// §2.4: only dequeue for sleep updates.
    #[test]
    fn not_sleeping_skips() {
        let mut e = estimate(800);
        assert_eq!(
            util_est_update(&mut e, 100, 100, 1024, false),
            UtilEstOutcome::NotSleeping
        );
        assert_eq!(e, estimate(800));
    }

    /// §2.4 step 5: a sample above the CPU's capacity is not valid (but only
    /// reached when lowering: a higher sample resets up first, step 3).
    #[test]
    fn saturated_skips() {
        let mut e = estimate(1000);
        assert_eq!(
            util_est_update(&mut e, 600, 600, 512, true),
            UtilEstOutcome::Saturated
        );
        assert_eq!(e.ewma, 1000);
        assert!(!e.util_avg_unchanged);
    }

    /// §2.4 step 6: runnable more than 10 above util: the task waited; keep.
    #[test]
    fn waiting_does_not_lower() {
        let mut e = estimate(800);
        assert_eq!(
            util_est_update(&mut e, 400, 411, 1024, true),
            UtilEstOutcome::Waiting
        );
        assert_eq!(e.ewma, 800);
        let mut e = estimate(800);
        assert_eq!(
            util_est_update(&mut e, 400, 410, 1024, true),
            UtilEstOutcome::Ewma
        );
        assert_eq!(e.ewma, 700);
    }

    /// §2.4: run-queue sum, floored at 0; task_util_est is the max.
    #[test]
    fn run_queue_sum_and_task_util_est() {
        let mut rq = UtilEst::default();
        util_est_enqueue(&mut rq, &estimate(300));
        util_est_enqueue(&mut rq, &estimate(200));
        assert_eq!(rq.enqueued, 500);
        util_est_dequeue(&mut rq, &estimate(300));
        assert_eq!(rq.enqueued, 200);
        util_est_dequeue(&mut rq, &estimate(900));
        assert_eq!(rq.enqueued, 0);
        assert_eq!(task_util_est(100, &estimate(300)), 300);
        assert_eq!(task_util_est(400, &estimate(300)), 400);
    }

    /// §2.4 step 1 in a flow: two dequeues within one PELT period see the
    /// same util_avg; the second sample is skipped. After a period boundary
    /// the entity update clears the flag and sampling resumes.
    #[test]
    fn second_dequeue_in_same_period_is_skipped() {
        use crate::pelt::SchedAvg;
        use crate::pelt::average::update_entity_load_avg;
        let mut task = SchedAvg::default();
        // Ran 40 ms (a boundary was crossed at each 1 ms tick).
        for t in 1..=40u64 {
            update_entity_load_avg(&mut task, t * 1_000_000, 1024, true, 1, true);
        }
        let first = util_est_update(
            &mut task.util_est,
            task.util_avg,
            task.runnable_avg,
            1024,
            true,
        );
        assert_eq!(first, UtilEstOutcome::ResetUp);
        assert_eq!(task.util_est.ewma, task.util_avg);
        // Wakes 100 us later, runs 100 us, sleeps again: same period (40 ms =
        // 39062.5 units, 39062 mod 1024 = 150; +195 units stays below 1024).
        update_entity_load_avg(&mut task, 40_100_000, 1024, false, 0, false);
        update_entity_load_avg(&mut task, 40_200_000, 1024, true, 1, true);
        assert!(task.util_est.util_avg_unchanged);
        let second = util_est_update(&mut task.util_est, 0, 0, 1024, true);
        assert_eq!(second, UtilEstOutcome::Unchanged);
        // Next period: the flag is cleared by the recomputation.
        update_entity_load_avg(&mut task, 45_000_000, 1024, true, 1, true);
        assert!(!task.util_est.util_avg_unchanged);
    }
}
