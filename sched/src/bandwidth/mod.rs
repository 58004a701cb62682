//! CFS bandwidth control (cgroup v2's `cpu.max` and `cpu.max.burst`): each task
//! group with a quota may run at most `quota` (plus what its burst carried
//! over) per `period`, summed over every CPU (docs/linux-sched-reference.md §4).
//!
//! The logic is pure data, like the rest of this crate. Each piece has an owner:
//! - [`Bandwidth`]: the settings of one group, checked as Linux's
//!   `tg_set_cfs_bandwidth` checks them (§4.1), and the cgroup v2 rule for
//!   the effective ratio down the hierarchy ([`hierarchical_ratio`], §4.4).
//! - [`pool::CfsBandwidth`]: the group's global pool, shared by every CPU
//!   (Linux's `struct cfs_bandwidth`): refill with burst, slices handed out,
//!   the FIFO of throttled run queues, the period and slack timers' decisions,
//!   and the statistics of `cpu.stat` (§4.2, §4.3).
//! - [`runtime::CfsRqRuntime`]: one CPU's side of one group (the `cfs_rq`
//!   fields): the local runtime charged by `update_curr`, throttling state and
//!   the clocks that keep throttled time out of PELT and into the statistics.
//!
//! The mechanism owns one pool per limited group (the kernel behind a lock,
//! the simulator as plain data) and carries out the timer requests; the
//! timers are the kernel's hrtimers and the simulator's events.

pub mod pool;
pub mod pools;
pub mod runtime;
#[cfg(test)]
mod tests;

use crate::task::Nanoseconds;

/// One millisecond in ns.
const MS: Nanoseconds = 1_000_000;

/// `default_cfs_period()`: 100 ms.
pub const DEFAULT_PERIOD: Nanoseconds = 100 * MS;
/// `min_cfs_quota_period`: the smallest period, and the smallest finite quota.
pub const MIN_PERIOD: Nanoseconds = MS;
/// `max_cfs_quota_period`: the largest period.
pub const MAX_PERIOD: Nanoseconds = 1_000 * MS;
/// `BW_SHIFT`: the fixed-point shift of bandwidth ratios.
pub const BW_SHIFT: u32 = 20;
/// `MAX_BW`: the largest ratio numerator, `2^(64 - BW_SHIFT) - 1`.
pub const MAX_BW: u64 = (1 << (64 - BW_SHIFT)) - 1;
/// `max_cfs_runtime`: `MAX_BW` µs in ns, the largest quota (and quota + burst).
pub const MAX_RUNTIME: Nanoseconds = MAX_BW * 1_000;
/// `sysctl_sched_cfs_bandwidth_slice`: what a CPU takes from the pool at once.
pub const SLICE: Nanoseconds = 5 * MS;
/// `min_cfs_rq_runtime`: what a CPU's run queue keeps when it goes idle.
pub const MIN_CFS_RQ_RUNTIME: Nanoseconds = MS;
/// `min_bandwidth_expiration`: no slack distribution this close to a refill.
pub const MIN_EXPIRATION: Nanoseconds = 2 * MS;
/// `cfs_bandwidth_slack_period`: how long returned runtime waits to be
/// distributed.
pub const SLACK_PERIOD: Nanoseconds = 5 * MS;

/// A group's bandwidth settings: `cpu.max` ("quota period", quota `max` for
/// no limit) and `cpu.max.burst`, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bandwidth {
    /// The length of a period.
    pub period: Nanoseconds,
    /// The runtime per period summed over CPUs; `None`: no limit (`max`).
    pub quota: Option<Nanoseconds>,
    /// Unused quota a period may carry into the next, at most.
    pub burst: Nanoseconds,
}

impl Bandwidth {
    /// No limit, the default period, no burst (`cpu.max = "max 100000"`).
    pub const UNLIMITED: Bandwidth = Bandwidth {
        period: DEFAULT_PERIOD,
        quota: None,
        burst: 0,
    };

    /// Checks the settings as Linux's `tg_set_cfs_bandwidth` does (§4.1);
    /// the error names the field and the value, as `-EINVAL` would be
    /// explained.
    pub fn validate(&self) -> Result<(), BandwidthError> {
        if !(MIN_PERIOD..=MAX_PERIOD).contains(&self.period) {
            return Err(BandwidthError {
                field: "period",
                value: self.period,
                rule: "must lie in 1 ms..=1 s",
            });
        }
        let Some(quota) = self.quota else {
            return Ok(());
        };
        if quota < MIN_PERIOD {
            return Err(BandwidthError {
                field: "quota",
                value: quota,
                rule: "must be at least 1 ms, or max",
            });
        }
        if quota > MAX_RUNTIME {
            return Err(BandwidthError {
                field: "quota",
                value: quota,
                rule: "exceeds max_cfs_runtime",
            });
        }
        if self.burst > quota {
            return Err(BandwidthError {
                field: "burst",
                value: self.burst,
                rule: "must not exceed the quota",
            });
        }
        if quota + self.burst > MAX_RUNTIME {
            return Err(BandwidthError {
                field: "burst",
                value: self.burst,
                rule: "quota + burst exceeds max_cfs_runtime",
            });
        }
        Ok(())
    }

    /// The group's own ratio, `to_ratio(period, quota)` = `(quota << 20) /
    /// period`; `None` without a limit.
    pub fn ratio(&self) -> Option<u64> {
        self.quota
            .map(|quota| ((u128::from(quota) << BW_SHIFT) / u128::from(self.period.max(1))) as u64)
    }
}

/// A setting Linux's `tg_set_cfs_bandwidth` refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandwidthError {
    /// `period`, `quota` or `burst`.
    pub field: &'static str,
    /// The value given, in ns.
    pub value: Nanoseconds,
    /// The rule it breaks.
    pub rule: &'static str,
}

impl core::fmt::Display for BandwidthError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} = {} ns: {}", self.field, self.value, self.rule)
    }
}

/// Where a group's period timer grid starts (§4.6), the variable of the
/// interleaving experiment: every group's pool refills at `offset + k ×
/// period` (see [`pool::CfsBandwidth::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodTimerStart {
    /// Linux before 6.4: every timer starts from 0, so all groups with the same
    /// period refill at the same instants.
    Aligned,
    /// The 2023 RFC v2: an offset that is a multiple of period/10; here the
    /// `n`-th group (by id) starts `(n mod 10) × period/10` in (the RFC's
    /// choice of multiple is not in the reference; this one spreads ten
    /// groups evenly).
    Period10,
    /// Linux 6.4+ (`init_cfs_bandwidth`): a random offset in `[0, period)`,
    /// drawn from `seed` and the group so that runs are reproducible.
    Random {
        /// The seed.
        seed: u64,
    },
}

impl PeriodTimerStart {
    /// The offset of group number `group`'s grid, in `[0, period)`.
    pub fn offset(&self, group: u16, period: Nanoseconds) -> Nanoseconds {
        match *self {
            PeriodTimerStart::Aligned => 0,
            PeriodTimerStart::Period10 => u64::from(group % 10) * (period / 10),
            PeriodTimerStart::Random { seed } => {
                // The seed is mixed before the group joins it: with
                // `seed ^ group`, seeds 1 and 2 gave groups 1 and 2 the same
                // two offsets, swapped.
                splitmix64(splitmix64(seed).wrapping_add(u64::from(group))) % period.max(1)
            }
        }
    }
}

/// SplitMix64's output function: a well-mixed 64-bit value of `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The effective ratio of a group under cgroup v2 (`tg_cfs_schedulable_down`,
/// §4.4): a group without a limit inherits its parent's, one with a limit
/// gets the smaller of its own and its parent's. `None` is no limit (the
/// root's).
pub fn hierarchical_ratio(own: Option<u64>, parent_effective: Option<u64>) -> Option<u64> {
    match (own, parent_effective) {
        (None, parent) => parent,
        (Some(own), None) => Some(own),
        (Some(own), Some(parent)) => Some(own.min(parent)),
    }
}
