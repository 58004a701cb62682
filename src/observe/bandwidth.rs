//! The trace events of CFS bandwidth control (§4.2): for each task group with
//! a quota, each CPU's `throttled` and `runtime_remaining` and the pool's
//! `runtime`, recorded when they change (as the simulator records them after
//! each event), with explain mode's numbers behind each throttle and
//! unthrottle.
//!
//! The values come from the caller (the scheduling floor reads its run
//! queues and pools, only while recording); what is kept here is what was
//! last recorded, to record changes only.

use core::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};

use fairway_sched::bandwidth::Bandwidth;
use fairway_sched::task::GroupId;

use super::explain;
use super::trace::{Kind, record, recording};
use crate::config::{MAX_CPUS, MAX_GROUPS};

/// A limited group's state on one CPU as last recorded.
struct GroupLast {
    /// [`UNKNOWN`] before the first record, else 1 + `throttled`.
    throttled: AtomicU8,
    runtime_remaining: AtomicI64,
}

const UNKNOWN: u8 = 0;

/// Each CPU's row is written only under that CPU's run-queue lock.
static GROUP_LAST: [[GroupLast; MAX_GROUPS]; MAX_CPUS] = [const {
    [const {
        GroupLast {
            throttled: AtomicU8::new(UNKNOWN),
            runtime_remaining: AtomicI64::new(0),
        }
    }; MAX_GROUPS]
}; MAX_CPUS];
/// Each pool's `runtime` as last recorded (`u64::MAX`: not yet).
static POOL_LAST: [AtomicU64; MAX_GROUPS] = [const { AtomicU64::new(u64::MAX) }; MAX_GROUPS];

/// Forgets what was last recorded (before a run starts recording), so that
/// the run's first call records every limited group's state.
pub fn reset() {
    for row in &GROUP_LAST {
        for last in row {
            last.throttled.store(UNKNOWN, Ordering::Relaxed);
        }
    }
    for pool in &POOL_LAST {
        pool.store(u64::MAX, Ordering::Relaxed);
    }
}

/// One limited group's run queue on one CPU, and its pool, as read right
/// after a call into that CPU's core.
#[derive(Clone, Copy, Debug)]
pub struct GroupBandwidth {
    /// The group's index.
    pub group: u16,
    /// Whether its run queue on the CPU is throttled.
    pub throttled: bool,
    /// Its run queue's `runtime_remaining`, ns.
    pub runtime_remaining: i64,
    /// The pool's `runtime`, ns.
    pub pool_runtime: u64,
    /// The group's `cpu.max` and `cpu.max.burst`.
    pub settings: Bandwidth,
}

/// Each of `groups` on `cpu` (whose run queue the caller holds): what
/// changed since the last call is recorded, and a throttle or unthrottle is
/// explained in explain mode. O(groups).
#[inline(never)]
pub fn group_bandwidth(now: u64, cpu: usize, groups: impl Iterator<Item = GroupBandwidth>) {
    for group in groups {
        let GroupBandwidth {
            group: index,
            throttled,
            runtime_remaining: remaining,
            pool_runtime: pool,
            settings,
        } = group;
        let last = &GROUP_LAST[cpu][usize::from(index)];
        let before = last
            .throttled
            .swap(1 + u8::from(throttled), Ordering::Relaxed);
        if before != 1 + u8::from(throttled) {
            record(
                now,
                cpu,
                Kind::GroupThrottled,
                index,
                0,
                u64::from(throttled),
            );
            if before != UNKNOWN && explain::explaining() {
                explain::throttle(now, cpu, index, throttled, remaining, Some(pool), settings);
            }
        }
        if last.runtime_remaining.swap(remaining, Ordering::Relaxed) != remaining
            || before == UNKNOWN
        {
            record(
                now,
                cpu,
                Kind::GroupRuntimeRemaining,
                index,
                0,
                remaining as u64,
            );
        }
        if POOL_LAST[usize::from(index)].swap(pool, Ordering::Relaxed) != pool {
            record(now, cpu, Kind::GroupRuntime, index, 0, pool);
        }
    }
}

/// Group `group`'s pool after its period or slack timer changed it (no
/// run-queue lock: the pool's own value, recorded when it changed).
#[inline(always)]
pub fn pool_runtime(now: u64, group: GroupId, runtime: Option<u64>) {
    if recording()
        && let Some(runtime) = runtime
        && POOL_LAST[group.index()].swap(runtime, Ordering::Relaxed) != runtime
    {
        let cpu = crate::arch::cpu::this_cpu();
        record(now, cpu, Kind::GroupRuntime, group.0, 0, runtime);
    }
}
