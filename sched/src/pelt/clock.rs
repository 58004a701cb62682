//! The PELT clock: task time scaled by CPU capacity and frequency, so signals measure invariant work (§2.3).
//!
//! ```text
//!   clock_task:  ----|=========== running ===========|..... idle .....|===
//!   clock_pelt:  ----|====== x capacity x freq ======|  (frozen)  catch up
//!                     advances capacity/1024 * freq/1024      to clock_task
//! ```
//! A task that runs for 8 ms on a capacity-512 CPU advances the PELT clock by
//! 4 ms, the time the same work takes on the biggest CPU at max frequency, so
//! its util is the same on both. While the CPU is idle the PELT clock catches
//! up with real time, so blocked signals decay at the real rate.

use super::{LOAD_AVG_MAX, PERIOD_UNITS, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT, cap_scale};
use crate::run_queue::CpuCapacity;

/// `((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX` =
/// 47,791,490: a run queue whose summed `util_sum` reaches this was running
/// all the time (§2.3, lost idle time).
pub const ALWAYS_RUNNING_UTIL_SUM: u64 =
    ((LOAD_AVG_MAX - PERIOD_UNITS) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX;

/// One CPU's clocks for PELT (the `clock_task`, `clock_pelt`,
/// `lost_idle_time`, `clock_idle` and `clock_pelt_idle` fields of Linux's `rq`, §2.3).
/// All in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeltClock {
    /// The task clock last seen (`rq_clock_task`).
    pub clock_task: u64,
    /// The scaled clock (`rq->clock_pelt`).
    pub clock_pelt: u64,
    /// Time credited back to an always-running CPU (§2.3).
    pub lost_idle_time: u64,
    /// `clock_task` when the CPU last synchronised while idle.
    pub clock_idle: u64,
    /// `clock_pelt - lost_idle_time` at the same moment.
    pub clock_pelt_idle: u64,
}

impl PeltClock {
    /// A clock that starts at task time `now`, with the PELT clock equal to it.
    #[must_use]
    pub const fn new(now: u64) -> Self {
        PeltClock {
            clock_task: now,
            clock_pelt: now,
            lost_idle_time: 0,
            clock_idle: now,
            clock_pelt_idle: now,
        }
    }

    /// `update_rq_clock_pelt` (§2.3): moves to task time `clock_task`.
    ///
    /// - `idle`: the CPU is running its idle task. The PELT clock then catches
    ///   up with the task clock (`_update_idle_rq_clock_pelt`).
    /// - Otherwise the elapsed task time is scaled by the CPU's capacity, then
    ///   by its frequency scale, and added.
    ///
    /// A task clock that went backwards adds nothing (the clock only moves forward).
    #[inline(always)]
    pub fn update(&mut self, clock_task: u64, idle: bool, capacity: CpuCapacity) {
        // A clock that has not moved while a task runs changes nothing (an
        // operation updates it several times at one `now`; Linux updates the
        // run queue's clock once per operation).
        if !idle && clock_task <= self.clock_task {
            return;
        }
        let delta = clock_task.saturating_sub(self.clock_task);
        self.clock_task = self.clock_task.max(clock_task);
        if idle {
            self.sync_idle();
            return;
        }
        // Scaling by 1024 (the biggest CPU, the maximum frequency) is the
        // identity, `delta * 1024 >> 10 = delta` (§2.3), so it is skipped:
        // the same clock for less work on a CPU at full capacity and speed.
        let mut delta = delta;
        if u64::from(capacity.capacity_orig) != SCHED_CAPACITY_SCALE {
            delta = cap_scale(delta, u64::from(capacity.capacity_orig));
        }
        if u64::from(capacity.frequency_scale) != SCHED_CAPACITY_SCALE {
            delta = cap_scale(delta, u64::from(capacity.frequency_scale));
        }
        self.clock_pelt = self.clock_pelt.saturating_add(delta);
    }

    /// `update_idle_rq_clock_pelt` (§2.3), called when the CPU goes idle.
    /// `util_sum_total` is `cfs.util_sum + rt.util_sum + dl.util_sum`. A CPU
    /// that was always running had no idle time in which its PELT clock could
    /// catch up, so the gap is counted as lost idle time and its util can still
    /// reach the maximum. The clock then synchronises as when idle.
    pub fn enter_idle(&mut self, util_sum_total: u64) {
        if util_sum_total >= ALWAYS_RUNNING_UTIL_SUM {
            self.lost_idle_time = self
                .lost_idle_time
                .saturating_add(self.clock_task.saturating_sub(self.clock_pelt));
        }
        self.sync_idle();
    }

    /// `_update_idle_rq_clock_pelt`: the PELT clock catches up with real time.
    fn sync_idle(&mut self) {
        self.clock_pelt = self.clock_task;
        self.clock_idle = self.clock_task;
        self.clock_pelt_idle = self.now();
    }

    /// `rq_clock_pelt = clock_pelt - lost_idle_time`: the `now` to give the
    /// PELT updates of this CPU's entities and run queues (§2.3).
    #[must_use]
    pub const fn now(&self) -> u64 {
        self.clock_pelt.saturating_sub(self.lost_idle_time)
    }
}

/// `cfs_rq_clock_pelt` (§2.3): a throttled-aware fair run queue does not see
/// the PELT time it spent throttled.
#[must_use]
pub const fn run_queue_clock_pelt(clock: &PeltClock, throttled_clock_pelt_time: u64) -> u64 {
    clock.now().saturating_sub(throttled_clock_pelt_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF_CAPACITY: CpuCapacity = CpuCapacity {
        capacity_orig: 512,
        frequency_scale: 1024,
    };

    /// §2.3: the divider for lost idle time is 47,791,490.
    #[test]
    fn always_running_threshold() {
        assert_eq!(ALWAYS_RUNNING_UTIL_SUM, 47_791_490);
    }

    /// §2.3: `cap_scale` by 1024 is the identity, which lets `update` skip it.
    #[test]
    fn cap_scale_by_full_scale_is_identity() {
        for value in [
            0,
            1,
            1023,
            1024,
            1 << 40,
            u64::MAX >> 10,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(cap_scale(value, SCHED_CAPACITY_SCALE), value);
        }
    }

    /// §2.3: at full capacity and frequency the PELT clock is the task clock.
    #[test]
    fn full_capacity_is_identity() {
        let mut clock = PeltClock::new(0);
        clock.update(1_234_567, false, CpuCapacity::default());
        assert_eq!(clock.now(), 1_234_567);
    }

    /// §2.3: capacity then frequency scaling multiply: cap 512 at half
    /// frequency runs the PELT clock at 1/4.
    #[test]
    fn capacity_and_frequency_scale() {
        let mut clock = PeltClock::new(0);
        clock.update(1_000_000, false, HALF_CAPACITY);
        assert_eq!(clock.now(), 500_000);
        let quarter = CpuCapacity {
            capacity_orig: 512,
            frequency_scale: 512,
        };
        clock.update(2_000_000, false, quarter);
        assert_eq!(clock.now(), 750_000);
    }

    /// §2.3: when idle, the PELT clock catches up with the task clock.
    #[test]
    fn idle_catches_up() {
        let mut clock = PeltClock::new(0);
        clock.update(8_000_000, false, HALF_CAPACITY);
        assert_eq!(clock.now(), 4_000_000);
        clock.update(9_000_000, true, HALF_CAPACITY);
        assert_eq!(clock.now(), 9_000_000);
        assert_eq!(clock.clock_idle, 9_000_000);
    }

    /// §2.3: an always-running CPU counts the gap as lost idle time, so its
    /// PELT `now` does not jump; otherwise it catches up.
    #[test]
    fn lost_idle_time() {
        let mut clock = PeltClock::new(0);
        clock.update(10_000_000, false, HALF_CAPACITY);
        clock.enter_idle(ALWAYS_RUNNING_UTIL_SUM);
        assert_eq!(clock.lost_idle_time, 5_000_000);
        assert_eq!(clock.now(), 5_000_000);
        let mut clock = PeltClock::new(0);
        clock.update(10_000_000, false, HALF_CAPACITY);
        clock.enter_idle(ALWAYS_RUNNING_UTIL_SUM - 1);
        assert_eq!(clock.lost_idle_time, 0);
        assert_eq!(clock.now(), 10_000_000);
    }

    /// A task clock that goes backwards never moves the PELT clock back.
    #[test]
    fn backwards_task_clock() {
        let mut clock = PeltClock::new(5_000);
        clock.update(1_000, false, CpuCapacity::default());
        assert_eq!(clock.now(), 5_000);
        clock.update(6_000, false, CpuCapacity::default());
        assert_eq!(clock.now(), 6_000);
        assert_eq!(run_queue_clock_pelt(&clock, 1_000), 5_000);
    }
}
