//! Periodic tasks, util_est and invariance (`docs/linux-sched-reference.md`, Appendix A §3).
//!
//! The simulation follows the appendix's set-up: one nice-0 task alone on a
//! CPU, HZ=1000 ticks at absolute 1 ms multiples of wall (task-clock) time.
//! Activation `k` wakes at `k * period`, runs `run` ms of wall time (ticks in
//! between update it as running), and is dequeued for sleep at
//! `k * period + run`. The PELT clock is scaled by capacity and frequency
//! while the task runs and catches up while the CPU is idle (§2.3). At the
//! dequeue, util_est samples `util_avg` before the dequeue's own PELT update
//! ("pre-dequeue"); "post" is `util_avg` after it. Expected rows are copied
//! from Appendix A §3, the steady ranges from §2.8.

use fairway_sched::pelt::SchedAvg;
use fairway_sched::pelt::average::update_entity_load_avg;
use fairway_sched::pelt::clock::PeltClock;
use fairway_sched::pelt::util_est::{UtilEstOutcome, util_est_update};
use fairway_sched::run_queue::CpuCapacity;

const MS: u64 = 1_000_000;
const NICE_0_WEIGHT: u64 = 1024;

/// One activation as Appendix A §3 prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Activation {
    wake: u64,
    pre_dequeue: u64,
    post: u64,
    util_est: u64,
    label: &'static str,
}

fn label(outcome: UtilEstOutcome) -> &'static str {
    match outcome {
        UtilEstOutcome::ResetUp => "reset-up",
        UtilEstOutcome::WithinMargin => "within-margin",
        UtilEstOutcome::Ewma => "ewma",
        UtilEstOutcome::Waiting => "waiting",
        UtilEstOutcome::Saturated => "saturated",
        UtilEstOutcome::Unchanged => "unchanged",
        UtilEstOutcome::NotSleeping => "not-sleeping",
    }
}

fn simulate(
    period_ms: u64,
    run_ms: u64,
    capacity: CpuCapacity,
    activations: usize,
) -> Vec<Activation> {
    let mut clock = PeltClock::new(0);
    let mut task = SchedAvg::default();
    let mut out = Vec::with_capacity(activations);
    for k in 0..activations as u64 {
        let wake = k * period_ms * MS;
        // The CPU was idle: its PELT clock catches up, then the sleeping
        // task is aged (it is not yet queued, §2.6 enqueue order).
        clock.update(wake, true, capacity);
        update_entity_load_avg(&mut task, clock.now(), NICE_0_WEIGHT, false, 0, false);
        let wake_util = task.util_avg;
        for tick in 1..run_ms {
            clock.update(wake + tick * MS, false, capacity);
            update_entity_load_avg(&mut task, clock.now(), NICE_0_WEIGHT, true, 1, true);
        }
        let dequeue = wake + run_ms * MS;
        clock.update(dequeue, false, capacity);
        let pre_dequeue = task.util_avg;
        let outcome = util_est_update(
            &mut task.util_est,
            task.util_avg,
            task.runnable_avg,
            u64::from(capacity.capacity_orig),
            true,
        );
        update_entity_load_avg(&mut task, clock.now(), NICE_0_WEIGHT, true, 1, true);
        // Alone and at most half busy, the CPU is never "always running".
        clock.enter_idle(task.util_sum);
        out.push(Activation {
            wake: wake_util,
            pre_dequeue,
            post: task.util_avg,
            util_est: task.util_est.ewma,
            label: label(outcome),
        });
    }
    out
}

fn row(wake: u64, pre_dequeue: u64, post: u64, util_est: u64, label: &'static str) -> Activation {
    Activation {
        wake,
        pre_dequeue,
        post,
        util_est,
        label,
    }
}

/// Checks acts 0-2 and 117-119 (the rows the appendix prints) and the
/// steady range over the last 20 activations.
fn check(acts: &[Activation], first: [Activation; 3], last: [Activation; 3], steady: (u64, u64)) {
    assert_eq!(acts.len(), 120);
    assert_eq!(acts[..3], first, "acts 0-2");
    assert_eq!(acts[117..], last, "acts 117-119");
    let tail = &acts[100..];
    let min_wake = tail.iter().map(|a| a.wake).min();
    let max_post = tail.iter().map(|a| a.post).max();
    assert_eq!(
        (min_wake, max_post),
        (Some(steady.0), Some(steady.1)),
        "steady range"
    );
}

const FULL: CpuCapacity = CpuCapacity {
    capacity_orig: 1024,
    frequency_scale: 1024,
};

/// Appendix A §3 "25% duty, 16 ms period"; §2.8 steady range 225 … 288, util_est 273.
#[test]
fn duty_25_period_16() {
    check(
        &simulate(16, 4, FULL, 120),
        [
            row(0, 61, 81, 61, "reset-up"),
            row(63, 121, 139, 121, "reset-up"),
            row(108, 163, 181, 163, "reset-up"),
        ],
        [row(225, 273, 288, 273, "reset-up"); 3],
        (225, 288),
    );
}

/// Appendix A §3 "25% duty, 100 ms period"; §2.8 steady range 100 … 473, util_est 461.
#[test]
fn duty_25_period_100() {
    check(
        &simulate(100, 25, FULL, 120),
        [
            row(0, 400, 413, 400, "reset-up"),
            row(87, 453, 465, 453, "reset-up"),
            row(98, 460, 472, 460, "reset-up"),
        ],
        [row(100, 461, 473, 461, "reset-up"); 3],
        (100, 473),
    );
}

/// Appendix A §3 "50% duty, 16 ms period"; §2.8 steady range 469 … 554, util_est 544.
#[test]
fn duty_50_period_16() {
    check(
        &simulate(16, 8, FULL, 120),
        [
            row(0, 137, 156, 137, "reset-up"),
            row(132, 252, 268, 252, "reset-up"),
            row(227, 334, 348, 334, "reset-up"),
        ],
        [
            row(470, 534, 554, 541, "ewma"),
            row(470, 544, 554, 544, "reset-up"),
            row(469, 544, 554, 544, "reset-up"),
        ],
        (469, 554),
    );
}

/// Appendix A §3 "10% duty, 10 ms period"; §2.8 steady range 93 … 112, util_est 93.
#[test]
fn duty_10_period_10() {
    check(
        &simulate(10, 1, FULL, 120),
        [
            row(0, 0, 0, 0, "reset-up"),
            row(17, 17, 37, 17, "reset-up"),
            row(31, 31, 51, 31, "reset-up"),
        ],
        [row(93, 93, 112, 93, "reset-up"); 3],
        (93, 112),
    );
}

/// The rows Appendix A §3 prints for both invariance cases: 50 % wall duty
/// on a cap-512 CPU at fmax, and on a cap-1024 CPU at half frequency.
/// §2.3/§2.8: invariant util 225 … 288, the same as 25 % at fmax on cap 1024; util_est 281.
fn check_invariant(capacity: CpuCapacity) {
    check(
        &simulate(16, 8, capacity, 120),
        [
            row(0, 71, 71, 71, "reset-up"),
            row(63, 121, 139, 121, "reset-up"),
            row(108, 163, 181, 163, "reset-up"),
        ],
        [
            row(225, 273, 288, 281, "within-margin"),
            row(225, 273, 288, 281, "within-margin"),
            row(225, 280, 280, 281, "within-margin"),
        ],
        (225, 288),
    );
}

/// Appendix A §3 "50% wall duty on a cap-512 CPU at fmax".
#[test]
fn invariance_half_capacity() {
    check_invariant(CpuCapacity {
        capacity_orig: 512,
        frequency_scale: 1024,
    });
}

/// Appendix A §3 "50% wall duty on cap-1024 CPU at half freq".
#[test]
fn invariance_half_frequency() {
    check_invariant(CpuCapacity {
        capacity_orig: 1024,
        frequency_scale: 512,
    });
}

/// §2.3 lost idle time: a task that ran all the time on a cap-512 CPU has
/// its util at the maximum although the PELT clock ran at half speed. When
/// the CPU then idles, the PELT clock would jump forward to the task clock
/// and decay the signal by the gap; counting the gap as lost idle time
/// prevents that. Without the rule (a run queue that was not always running)
/// the jump happens.
#[test]
fn lost_idle_time_keeps_an_always_running_signal() {
    let half = CpuCapacity {
        capacity_orig: 512,
        frequency_scale: 1024,
    };
    let run = |always_running: bool| {
        let mut clock = PeltClock::new(0);
        let mut task = SchedAvg::default();
        for t in 1..=1000 {
            clock.update(t * MS, false, half);
            update_entity_load_avg(&mut task, clock.now(), NICE_0_WEIGHT, true, 1, true);
        }
        assert_eq!(clock.now(), 500 * MS, "PELT time runs at half speed");
        assert_eq!(task.util_avg, 1024, "§2.8: 500 ms of PELT time running");
        // The run queue's util_sum is the task's here (one task, §2.2 table).
        let util_sum = if always_running { task.util_sum } else { 0 };
        clock.enter_idle(util_sum);
        // Woken 1 ms later.
        clock.update(1001 * MS, true, half);
        update_entity_load_avg(&mut task, clock.now(), NICE_0_WEIGHT, false, 0, false);
        task.util_avg
    };
    // Appendix A §2: 1 ms of sleep from 1024 gives ~1003.
    let kept = run(true);
    assert!((1000..=1006).contains(&kept), "{kept}");
    // Appendix A §2: 500 ms of sleep decays to 0.
    assert_eq!(run(false), 0);
}
