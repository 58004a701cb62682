//! The PELT vectors of `docs/linux-sched-reference.md` §2.8 / Appendix A, reproduced exactly.
//!
//! Every expected number below is copied from the reference (the output of
//! the independent `pelt_vectors.py`), with the section cited. The set-up is
//! the appendix's: a nice-0 task (weight 1024) alone on a CPU, starting at
//! PELT time 0 aligned on a period boundary with all sums 0.

use fairway_sched::pelt::SchedAvg;
use fairway_sched::pelt::attach::{
    attach_entity_load_avg, init_entity_runnable_average, post_init_entity_util_avg,
};
use fairway_sched::pelt::average::update_entity_load_avg;

const MS: u64 = 1_000_000;
const NICE_0_WEIGHT: u64 = 1024;

/// One update of an always-running nice-0 task (queued, runnable, running).
fn run_until(avg: &mut SchedAvg, now: u64) {
    update_entity_load_avg(avg, now, NICE_0_WEIGHT, true, 1, true);
}

/// One update of a sleeping (dequeued) task.
fn sleep_until(avg: &mut SchedAvg, now: u64) {
    update_entity_load_avg(avg, now, NICE_0_WEIGHT, false, 0, false);
}

/// Always running with an update at every `tick_ms` strictly before `t_ms`,
/// then one at `t_ms` (a tick period of 0 means a single update).
fn always_running(t_ms: u64, tick_ms: u64) -> SchedAvg {
    let mut avg = SchedAvg::default();
    if tick_ms > 0 {
        let mut tick = tick_ms;
        while tick < t_ms {
            run_until(&mut avg, tick * MS);
            tick += tick_ms;
        }
    }
    run_until(&mut avg, t_ms * MS);
    avg
}

/// Appendix A §1 (and the §2.8 table): util_avg at t ms for (a) a single
/// update, (b) HZ=1000 ticks, (c) HZ=250 ticks.
#[test]
fn always_running_series() {
    #[rustfmt::skip]
    let rows: [(u64, u64, u64, u64); 19] = [
        (1, 0, 0, 0), (2, 41, 41, 41), (4, 81, 81, 81), (8, 156, 156, 156),
        (10, 191, 191, 191), (16, 288, 288, 288), (20, 346, 346, 346), (32, 495, 495, 495),
        (50, 659, 659, 659), (64, 751, 751, 751), (100, 894, 894, 894), (128, 951, 951, 951),
        (200, 1007, 1008, 1007), (256, 1018, 1019, 1018), (300, 1021, 1022, 1021),
        (345, 1023, 1023, 1023), (400, 1023, 1024, 1023), (500, 1023, 1024, 1023),
        (1000, 1024, 1024, 1024),
    ];
    for (t, single, hz1000, hz250) in rows {
        assert_eq!(always_running(t, 0).util_avg, single, "(a) t={t} ms");
        assert_eq!(always_running(t, 1).util_avg, hz1000, "(b) t={t} ms");
        assert_eq!(always_running(t, 4).util_avg, hz250, "(c) t={t} ms");
    }
}

/// Appendix A §1, "t measured in whole PELT periods": the sums and all
/// three averages after a single update at N * 1,048,576 ns.
#[test]
fn always_running_whole_periods() {
    #[rustfmt::skip]
    let rows: [(u64, u64, u64); 12] = [
        (1, 1_026_048, 21), (2, 2_028_544, 43), (4, 3_971_072, 85), (8, 7_611_392, 162),
        (16, 14_012_416, 299), (32, 23_919_616, 512), (64, 35_879_936, 768),
        (96, 41_860_096, 896), (128, 44_850_176, 960), (200, 47_211_520, 1010),
        (345, 47_812_608, 1023), (512, 47_839_232, 1024),
    ];
    for (n, util_sum, util) in rows {
        let mut avg = SchedAvg::default();
        run_until(&mut avg, n * 1024 * 1024);
        assert_eq!(avg.util_sum, util_sum, "N={n}");
        assert_eq!(avg.period_contrib, 0, "N={n}");
        assert_eq!(avg.util_avg, util, "N={n} util_avg");
        assert_eq!(avg.load_avg, util, "N={n} load_avg");
        assert_eq!(avg.runnable_avg, util, "N={n} runnable_avg");
    }
}

/// Appendix A §1 / §2.8: ms of HZ=1000 ticks for an always-running task to
/// reach each util threshold.
#[test]
fn time_to_reach_thresholds() {
    let thresholds = [
        (256, 14),
        (512, 34),
        (768, 68),
        (819, 78),
        (900, 103),
        (1000, 181),
        (1002, 185),
        (1010, 206),
        (1020, 263),
    ];
    let mut avg = SchedAvg::default();
    let mut reached = [0u64; 9];
    for t in 1..=1000u64 {
        run_until(&mut avg, t * MS);
        for (i, &(threshold, _)) in thresholds.iter().enumerate() {
            if reached[i] == 0 && avg.util_avg >= threshold {
                reached[i] = t;
            }
        }
    }
    for (i, &(threshold, ms)) in thresholds.iter().enumerate() {
        assert_eq!(reached[i], ms, "util >= {threshold}");
    }
}

/// Appendix A §1: after 2000 ms of 1 ms ticks.
#[test]
fn always_running_2000_ms() {
    let avg = always_running(2000, 1);
    assert_eq!(avg.util_avg, 1024);
    assert_eq!(avg.util_sum, 48_227_461);
    assert_eq!(avg.period_contrib, 357);
}

/// Appendix A §2 / §2.8: a task that ran 1000 ms (1 ms ticks) sleeps; a
/// single update after each sleep length.
#[test]
fn decay_while_sleeping() {
    let start = always_running(1000, 1);
    assert_eq!(start.util_avg, 1024, "Appendix A §2 start");
    assert_eq!(start.period_contrib, 690, "Appendix A §2 start");
    #[rustfmt::skip]
    let rows: [(u64, u64, u64, u64); 15] = [
        (1, 1003, 1003, 47_528_980), (2, 983, 982, 46_510_532), (4, 943, 942, 44_538_638),
        (8, 868, 867, 40_842_111), (16, 736, 735, 35_096_020), (32, 528, 528, 24_816_634),
        (64, 273, 272, 12_957_680), (100, 129, 129, 6_071_215), (128, 72, 72, 3_456_915),
        (200, 16, 16, 775_519), (300, 2, 2, 99_062), (500, 0, 0, 1581),
        (1000, 0, 0, 0), (2000, 0, 0, 0), (2200, 0, 0, 0),
    ];
    for (slept, util, load, util_sum) in rows {
        let mut avg = start;
        sleep_until(&mut avg, (1000 + slept) * MS);
        assert_eq!(avg.util_avg, util, "slept {slept} ms: util_avg");
        assert_eq!(avg.load_avg, load, "slept {slept} ms: load_avg");
        assert_eq!(avg.util_sum, util_sum, "slept {slept} ms: util_sum");
    }
}

/// Appendix A §4 / §2.5: successive new nice-0 tasks on an otherwise idle
/// capacity-1024 CPU, each attached after its util is initialised.
#[test]
fn post_init_series() {
    let task_util = [512, 256, 128, 64, 32, 16, 8, 4];
    let run_queue_util = [512, 768, 896, 960, 992, 1008, 1016, 1020];
    let mut run_queue = SchedAvg::default();
    for i in 0..8 {
        let mut task = init_entity_runnable_average(NICE_0_WEIGHT, true);
        assert_eq!(task.load_avg, 1024, "§2.5: a new task looks fully loaded");
        post_init_entity_util_avg(&mut task, &run_queue, 1024, NICE_0_WEIGHT, true, 0);
        assert_eq!(task.util_avg, task_util[i], "task {i}");
        assert_eq!(task.runnable_avg, task_util[i], "task {i} runnable = util");
        let _ = attach_entity_load_avg(&mut run_queue, &mut task, NICE_0_WEIGHT);
        assert_eq!(
            run_queue.util_avg, run_queue_util[i],
            "run queue after task {i}"
        );
        assert_eq!(
            run_queue.load_avg,
            1024 * (i as u64 + 1),
            "cfs_load grows by 1024 per task"
        );
    }
}
