//! Shared helpers of the fair class's tests: a deterministic PRNG, task
//! parameters, enqueue flags and a tick-driven CPU-bound workload.

use alloc::vec;
use alloc::vec::Vec;

use super::entity::{CfsTunables, EevdfTunables};
use super::{FairRunQueue, PickPolicy};
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::task::{GroupId, Nanoseconds, Policy, TaskParams};

pub use super::test_rng::Rng;

pub const MS: u64 = 1_000_000;

pub fn cfs() -> PickPolicy {
    PickPolicy::Cfs(CfsTunables::for_cpus(1))
}

pub fn eevdf(tick: Nanoseconds) -> PickPolicy {
    PickPolicy::Eevdf(EevdfTunables::for_cpus(1, tick))
}

pub fn nice(n: i8) -> TaskParams {
    TaskParams {
        policy: Policy::Normal { nice: n },
        ..TaskParams::default()
    }
}

pub fn in_group(n: i8, group: GroupId) -> TaskParams {
    TaskParams { group, ..nice(n) }
}

pub const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};
pub const INITIAL: EnqueueFlags = EnqueueFlags {
    wakeup: false,
    migrated: false,
    initial: true,
};
pub const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

/// Runs a CPU-bound workload: `tick` ns ticks until `end`, rescheduling when the
/// class asks; returns the run time of each task as the driver observed it.
pub fn drive(fair: &mut FairRunQueue, tasks: usize, tick: u64, start: u64, end: u64) -> Vec<u64> {
    let mut runtime = vec![0u64; tasks];
    let mut now = start;
    let mut curr = fair.pick_next_task(now).expect("runnable");
    fair.set_next_task(curr, now);
    while now < end {
        now += tick;
        runtime[curr.index()] += tick;
        if fair.task_tick(curr, now).is_needed() {
            fair.put_prev_task(curr, now);
            curr = fair.pick_next_task(now).expect("runnable");
            fair.set_next_task(curr, now);
        }
    }
    fair.put_prev_task(curr, now);
    runtime
}

pub fn assert_shares(runtime: &[u64], expected: &[f64], what: &str) {
    let total: u64 = runtime.iter().sum();
    for (i, (&r, &e)) in runtime.iter().zip(expected).enumerate() {
        let share = r as f64 / total as f64;
        let error = (share - e).abs() / e;
        assert!(
            error < 0.005,
            "{what}: task {i} got {share:.5}, expected {e:.5} (runtimes {runtime:?})"
        );
    }
}
