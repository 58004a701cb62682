//! Every limited group's pool, shared by the cores of all CPUs (Linux keeps
//! one `struct cfs_bandwidth` per task group, behind `cfs_b->lock`,
//! docs/linux-sched-reference.md §4.2).
//!
//! A core takes a pool's lock while it holds its own run-queue lock (a slice,
//! the last 1 ns attempt, a throttle, a slack return), and the period and
//! slack timers take it alone; no code takes a run-queue lock while it holds a
//! pool's, so the order run queue → pool never inverts. The simulator uses the
//! same type from one thread, where the locks are never contended.

use alloc::vec::Vec;

use super::Bandwidth;
use super::pool::{BandwidthStats, CfsBandwidth};
use crate::task::{GroupId, Nanoseconds};

/// Which of a group's timers a request or an expiry is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BandwidthTimerKind {
    /// The period timer: refill and pay the throttled run queues.
    Period,
    /// The slack timer: pay returned runtime out before the refill.
    Slack,
}

/// A request to arm one of a group's timers, raised by the CPU whose run
/// queue started it; the mechanism arms it on that CPU (Linux pins both
/// hrtimers to the CPU that starts them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BandwidthTimer {
    /// The group.
    pub group: GroupId,
    /// Which timer.
    pub kind: BandwidthTimerKind,
    /// When it fires.
    pub expires: Nanoseconds,
}

/// One pool per group slot; `None` for a group without a quota.
#[derive(Debug)]
pub struct BandwidthPools {
    pools: Vec<spin::Mutex<Option<CfsBandwidth>>>,
}

impl BandwidthPools {
    /// Room for `max_groups` groups (the root's slot stays empty: the root
    /// group has no limit in cgroup v2).
    pub fn new(max_groups: usize) -> Self {
        BandwidthPools {
            pools: (0..max_groups).map(|_| spin::Mutex::new(None)).collect(),
        }
    }

    /// `tg_set_cfs_bandwidth` for the pool: `settings` (validated) replace the
    /// group's, the pool starts full, and its period grid starts at `offset`.
    /// An unlimited setting removes the pool. Each CPU's core is told next
    /// (`CpuCore::set_group_bandwidth`), which unthrottles its run queue.
    pub fn set(&self, group: GroupId, settings: Bandwidth, offset: Nanoseconds, max_cpus: usize) {
        let Some(slot) = self.pools.get(group.index()) else {
            return;
        };
        *slot.lock() = settings
            .quota
            .is_some()
            .then(|| CfsBandwidth::new(settings, offset, max_cpus));
    }

    /// Runs `f` on the group's pool under its lock; `None`: no pool.
    pub fn with<R>(&self, group: GroupId, f: impl FnOnce(&mut CfsBandwidth) -> R) -> Option<R> {
        self.pools.get(group.index())?.lock().as_mut().map(f)
    }

    /// The group's `cpu.stat` counters, if it has a pool.
    pub fn stats(&self, group: GroupId) -> Option<BandwidthStats> {
        self.with(group, |pool| pool.stats())
    }

    /// The settings in force (they double when the period is too short).
    pub fn settings(&self, group: GroupId) -> Option<Bandwidth> {
        self.with(group, |pool| pool.settings())
    }
}
