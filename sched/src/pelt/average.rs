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
    avg.load_avg = ((weight as u128 * avg.load_sum as u128) / divider as u128) as u64;
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
