//! PELT, per-entity load tracking: Linux's exact integer load, runnable and utilization signals (§2).
//!
//! Each scheduling entity (task or group) and each run queue carries a
//! [`SchedAvg`]. Time is the *PELT clock* ([`clock::PeltClock`]), which runs
//! slower than wall time on a small or slowed-down CPU so that the signals
//! measure invariant work (§2.3). Time is cut into periods of 1024 units of
//! 1024 ns; each period's contribution decays by `y` per period, `y^32 = 1/2`:
//!
//! ```text
//!   util_sum = 1024 * (u_0 + u_1 y + u_2 y^2 + ...)   u_i = running time in period i
//!   util_avg = util_sum / divider                     divider ~ 1024 / (1 - y)
//! ```
//!
//! Everything is integer maths on plain data: the fair class owns the structs,
//! calls these functions with `now` and the entity's state, and no function
//! allocates or reads a clock.
//!
//! Module map:
//! - [`decay`]: the `y^n` table and `decay_load` (§2.1, §2.2).
//! - [`accumulate`]: the three-segment accumulation and the divider (§2.2).
//! - [`average`]: updating an entity's or a run queue's signals (§2.2).
//! - [`clock`]: the capacity- and frequency-invariant PELT clock (§2.3).
//! - [`util_est`]: the utilization estimate kept across sleeps (§2.4).
//! - [`attach`]: new tasks, attach, detach, removed load, reweight (§2.5, §2.6).
//! - [`propagate`]: task-group propagation of the signals and group shares (§2.7).
//! - [`update`]: `update_load_avg` with its flags, the fair class's entry point (§2.6).

pub mod accumulate;
pub mod attach;
pub mod average;
pub mod clock;
pub mod decay;
pub mod propagate;
pub mod update;
pub mod util_est;

pub use util_est::UtilEst;

/// `SCHED_CAPACITY_SHIFT`: capacities and utilizations are fractions of 1024 (§9).
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE` = 1024, the capacity of the biggest CPU at max frequency (§9).
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// Units (of 1024 ns) per PELT period (§2.1).
pub const PERIOD_UNITS: u64 = 1024;
/// `LOAD_AVG_MAX`: the fixed point of the integer series `s = decay_load(s, 1) + 1024` (§2.1).
pub const LOAD_AVG_MAX: u64 = 47742;
/// `PELT_MIN_DIVIDER = LOAD_AVG_MAX - 1024` = 46718 (§2.1).
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - PERIOD_UNITS;

/// `cap_scale(v, s) = v * s >> 10` (§2.3). Computed in 128 bits and saturated,
/// so no input can overflow.
#[must_use]
pub const fn cap_scale(value: u64, scale: u64) -> u64 {
    let scaled = (value as u128 * scale as u128) >> SCHED_CAPACITY_SHIFT;
    if scaled > u64::MAX as u128 {
        u64::MAX
    } else {
        scaled as u64
    }
}

/// Linux's `struct sched_avg`: one entity's or run queue's PELT state (§2.2).
///
/// The sums are decayed histories; the averages are the sums divided by the
/// divider and are recomputed only when a period boundary is crossed.
/// `last_update_time == 0` means "not attached to a run queue" (§2.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// PELT-clock time (ns) the sums are accumulated up to; keeps the
    /// sub-1024-ns remainder out so that no time is lost (§2.2).
    pub last_update_time: u64,
    /// Decayed sum of `load * time` (load is 0/1 for an entity, the queued
    /// weight for a run queue).
    pub load_sum: u64,
    /// Decayed sum of `runnable * time << 10`.
    pub runnable_sum: u64,
    /// Decayed sum of `running * time << 10`.
    pub util_sum: u64,
    /// Units (0..1024) already accumulated in the current, open period.
    pub period_contrib: u32,
    /// `weight * load_sum / divider`; nice-0 task: 0..=1024.
    pub load_avg: u64,
    /// `runnable_sum / divider`; task: 0..=1024, run queue: up to 1024 per runnable task.
    pub runnable_avg: u64,
    /// `util_sum / divider`; 0..=1024.
    pub util_avg: u64,
    /// The utilization estimate (§2.4): the task's own for an entity, the sum
    /// of the queued tasks' for a run queue.
    pub util_est: UtilEst,
}

/// `add_positive(ptr, val)` (§2.7): `value + delta`, or 0 if that would go negative.
#[must_use]
pub const fn add_positive(value: u64, delta: i64) -> u64 {
    let result = value as i128 + delta as i128;
    if result < 0 {
        0
    } else if result > u64::MAX as i128 {
        u64::MAX
    } else {
        result as u64
    }
}

/// `sub_positive(ptr, val)` (§2.7): `value - delta`, or 0 on underflow.
#[must_use]
pub const fn sub_positive(value: u64, delta: u64) -> u64 {
    value.saturating_sub(delta)
}

/// `a - b` as a signed value, clamped to `i64` (the kernel's `long` deltas).
#[must_use]
pub const fn signed_difference(a: u64, b: u64) -> i64 {
    let difference = a as i128 - b as i128;
    if difference > i64::MAX as i128 {
        i64::MAX
    } else if difference < i64::MIN as i128 {
        i64::MIN
    } else {
        difference as i64
    }
}
