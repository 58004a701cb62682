//! Updating one entity's or run queue's signals at time `now` (§2.2).
//!
//! An update has two steps. [`update_load_sum`] ages the sums to `now` with
//! the state that held since the last update; [`update_load_avg`] divides the
//! sums into averages. Linux only divides when a period boundary was crossed
//! (the "decayed" result), so the averages move at most once per ~1 ms; the
//! wrappers below follow that rule exactly.

use super::SchedAvg;
use super::accumulate::{accumulate_sum, pelt_divider};

/// `___update_load_sum(now, sa, load, runnable, running)` (§2.2).
///
/// `now` is on the PELT clock, in ns. `load`, `runnable` and `running`
/// describe the state since the last update. Returns `true` ("decayed") when at
/// least one period boundary was crossed, i.e. when the averages must be
/// recomputed.
///
/// - A clock that went backwards resynchronises `last_update_time` and returns `false`.
/// - Less than 1024 ns since the last update: nothing happens.
/// - Without load, the entity can be neither runnable nor running.
///
/// Inlined, as [`accumulate_sum`] is: about 10 per sched-pipe round trip.
#[inline(always)]
pub fn update_load_sum(
    avg: &mut SchedAvg,
    now: u64,
    load: u64,
    runnable: u64,
    running: bool,
) -> bool {
    let Some(delta_ns) = now.checked_sub(avg.last_update_time) else {
        avg.last_update_time = now;
        return false;
    };
    let delta = delta_ns >> 10;
    if delta == 0 {
        return false;
    }
    avg.last_update_time += delta << 10;
    let (runnable, running) = if load == 0 {
        (0, false)
    } else {
        (runnable, running)
    };
    accumulate_sum(delta, avg, load, runnable, running) != 0
}

/// `___update_load_avg(sa, load)` (§2.2): the averages from the sums.
/// `weight` is the avg weight: the entity's load weight (`se_weight`, 1024
/// for nice 0), or 1 for a run queue, whose `load_sum` already carries weights.
pub fn update_load_avg(avg: &mut SchedAvg, weight: u64) {
    let divider = pelt_divider(avg);
    avg.load_avg =
        crate::weight::div_wide_unsigned(weight as u128 * avg.load_sum as u128, divider as u128)
            as u64;
    avg.runnable_avg = avg.runnable_sum / divider;
    avg.util_avg = avg.util_sum / divider;
}

/// `__update_load_avg_se` (§2.2 table): ages a task or group entity to `now`.
///
/// - `weight`: `se_weight`, the entity's load weight (nice 0: 1024; a group
///   entity: its shares, §2.7).
/// - `on_run_queue`: the entity is queued (`!!se->on_rq`), the running one included.
/// - `runnable`: `se_runnable`: 1 for a queued task; for a group entity the
///   number of runnable tasks below it (`h_nr_runnable`).
/// - `running`: the entity is its run queue's current one.
///
/// Returns `true` when the averages were recomputed; the util_est
/// "util_avg unchanged" flag is then cleared (§2.4).
#[inline(always)]
pub fn update_entity_load_avg(
    avg: &mut SchedAvg,
    now: u64,
    weight: u64,
    on_run_queue: bool,
    runnable: u64,
    running: bool,
) -> bool {
    if update_load_sum(avg, now, u64::from(on_run_queue), runnable, running) {
        update_load_avg(avg, weight);
        avg.util_est.util_avg_unchanged = false;
        true
    } else {
        false
    }
}

/// `__update_load_avg_cfs_rq` (§2.2 table): ages a fair run queue to `now`.
///
/// - `load_weight`: the sum of the queued entities' weights, scaled down
///   (`scale_load_down(cfs_rq->load.weight)`; one nice-0 task: 1024).
/// - `nr_runnable`: runnable tasks below this run queue (`h_nr_runnable`).
/// - `current_running`: the run queue has a current entity (`curr != NULL`).
///
/// Returns `true` when the averages were recomputed.
#[inline(always)]
pub fn update_run_queue_load_avg(
    avg: &mut SchedAvg,
    now: u64,
    load_weight: u64,
    nr_runnable: u64,
    current_running: bool,
) -> bool {
    if update_load_sum(avg, now, load_weight, nr_runnable, current_running) {
        update_load_avg(avg, 1);
        true
    } else {
        false
    }
}

/// `update_rt_rq_load_avg` / `update_dl_rq_load_avg` (§2.2 table): the
/// signal of another class, where load, runnable and running are all
/// "this class is running". Returns `true` when the averages were recomputed.
pub fn update_other_class_load_avg(avg: &mut SchedAvg, now: u64, running: bool) -> bool {
    let state = u64::from(running);
    if update_load_sum(avg, now, state, state, running) {
        update_load_avg(avg, 1);
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pelt::LOAD_AVG_MAX;

    const MS: u64 = 1_000_000;

    /// §2.2 step 1: a clock that goes backwards resynchronises and adds nothing.
    #[test]
    fn backwards_clock() {
        let mut avg = SchedAvg::default();
        update_entity_load_avg(&mut avg, 10 * MS, 1024, true, 1, true);
        let before = avg;
        assert!(!update_entity_load_avg(
            &mut avg,
            5 * MS,
            1024,
            true,
            1,
            true
        ));
        assert_eq!(avg.last_update_time, 5 * MS);
        assert_eq!(
            (avg.util_sum, avg.util_avg),
            (before.util_sum, before.util_avg)
        );
    }

    /// §2.2 steps 2-3: less than 1024 ns does nothing, and the sub-1024-ns
    /// remainder is kept for the next update, so no time is lost.
    #[test]
    fn sub_unit_remainder_is_kept() {
        let mut avg = SchedAvg::default();
        assert!(!update_load_sum(&mut avg, 1000, 1, 1, true));
        assert_eq!((avg.last_update_time, avg.load_sum), (0, 0));
        update_load_sum(&mut avg, 1500, 1, 1, true);
        assert_eq!((avg.last_update_time, avg.load_sum), (1024, 1));
        update_load_sum(&mut avg, 2100, 1, 1, true);
        assert_eq!(
            (avg.last_update_time, avg.load_sum),
            (2048, 2),
            "1500 + 600 ns = 2 units"
        );
    }

    /// §2.2 step 4: without load the entity is neither runnable nor running.
    #[test]
    fn no_load_means_not_running() {
        let mut avg = SchedAvg::default();
        update_load_sum(&mut avg, 100 * 1024, 0, 1, true);
        assert_eq!((avg.load_sum, avg.runnable_sum, avg.util_sum), (0, 0, 0));
        assert_eq!(avg.period_contrib, 100);
    }

    /// §2.2: the averages change only when a period boundary is crossed
    /// (the 1 ms row of the §2.8 table is 0 for this reason).
    #[test]
    fn averages_only_on_period_boundary() {
        let mut avg = SchedAvg::default();
        assert!(!update_entity_load_avg(&mut avg, MS, 1024, true, 1, true));
        assert_eq!(avg.util_avg, 0);
        assert_ne!(avg.util_sum, 0);
        assert!(update_entity_load_avg(
            &mut avg,
            1024 * 1024,
            1024,
            true,
            1,
            true
        ));
        assert_eq!(avg.util_avg, 21, "§2.8: N=1 period");
    }

    /// A recomputation clears util_est's "unchanged" flag (§2.4).
    #[test]
    fn recompute_clears_util_est_flag() {
        let mut avg = SchedAvg::default();
        avg.util_est.util_avg_unchanged = true;
        update_entity_load_avg(&mut avg, MS, 1024, true, 1, true);
        assert!(
            avg.util_est.util_avg_unchanged,
            "no boundary: util_avg unchanged"
        );
        update_entity_load_avg(&mut avg, 3 * MS, 1024, true, 1, true);
        assert!(!avg.util_est.util_avg_unchanged);
    }

    /// §2.2 table: a run queue's load carries its weight in the sum; its
    /// runnable counts tasks. Three always-runnable nice-0 tasks for 1 s:
    /// load ~3 * 1024, runnable ~3 * 1024 (analytic), util ~1024.
    #[test]
    fn run_queue_weights_and_counts() {
        let mut avg = SchedAvg::default();
        for t in 1..=1000 {
            update_run_queue_load_avg(&mut avg, t * MS, 3 * 1024, 3, true);
        }
        assert!(avg.load_avg.abs_diff(3072) <= 3, "{}", avg.load_avg);
        assert!(avg.runnable_avg.abs_diff(3072) <= 3, "{}", avg.runnable_avg);
        assert_eq!(avg.util_avg, 1024, "§2.8: 1000 ms");
    }

    /// Another class's signal (rt/dl, §2.2 table) is the always-running
    /// series when it runs.
    #[test]
    fn other_class_signal() {
        let mut avg = SchedAvg::default();
        update_other_class_load_avg(&mut avg, 32 * 1024 * 1024, true);
        assert_eq!(avg.util_avg, 512, "§2.8: 512 after 32 periods");
        // Load 1 with avg weight 1 and no capacity shift: load_sum <= LOAD_AVG_MAX
        // against a divider >= 46718, so the (unused) load_avg is 0 or 1.
        assert_eq!(avg.load_avg, 0);
    }

    /// Extreme inputs saturate or decay instead of overflowing (no panic in
    /// debug builds); a huge gap decays everything (§2.2 cut-off).
    #[test]
    fn extreme_inputs() {
        let mut avg = SchedAvg::default();
        update_run_queue_load_avg(&mut avg, 10 * MS, u64::MAX, u64::MAX, true);
        update_run_queue_load_avg(&mut avg, 20 * MS, u64::MAX, u64::MAX, true);
        assert_eq!(avg.load_sum, u64::MAX);
        let mut avg = SchedAvg::default();
        update_entity_load_avg(&mut avg, 100 * MS, 1024, true, 1, true);
        update_entity_load_avg(&mut avg, u64::MAX, 1024, false, 0, false);
        assert_eq!((avg.util_sum, avg.util_avg, avg.load_avg), (0, 0, 0));
        // Running across a huge gap saturates at the full-period maximum.
        let mut avg = SchedAvg::default();
        update_entity_load_avg(&mut avg, u64::MAX, 1024, true, 1, true);
        assert!(avg.load_sum <= LOAD_AVG_MAX);
        assert!(avg.util_avg >= 1023);
    }

    /// Analytic bound: the update schedule hardly matters. An always-running
    /// task updated at pseudo-random times ends within 3 of a single update
    /// (each update floors each sum by < 4 units of contribution, i.e. < 0.1
    /// of util, and older errors decay by y per period; Appendix A §1 shows
    /// (a) and (b) differ by at most 1).
    #[test]
    fn schedule_independence() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..50 {
            let mut avg = SchedAvg::default();
            let mut now = 0u64;
            let end = 300 * MS;
            loop {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                now += 1 + seed % (3 * MS);
                if now >= end {
                    break;
                }
                update_entity_load_avg(&mut avg, now, 1024, true, 1, true);
            }
            update_entity_load_avg(&mut avg, end, 1024, true, 1, true);
            let mut single = SchedAvg::default();
            update_entity_load_avg(&mut single, end, 1024, true, 1, true);
            assert!(
                avg.util_avg.abs_diff(single.util_avg) <= 3,
                "{} vs {}",
                avg.util_avg,
                single.util_avg
            );
            assert!(avg.util_avg <= 1024);
        }
    }
}
