//! One CPU's side of a limited group (the bandwidth fields of Linux's
//! `cfs_rq`, docs/linux-sched-reference.md §4.1, §4.2): the local runtime
//! that `update_curr` charges, throttling, and the clocks that keep the
//! throttled time out of the run queue's PELT and into `cpu.stat`.

use super::SLICE;
use super::pool::CfsBandwidth;
use crate::task::Nanoseconds;

/// What a charge left the run queue to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// Runtime is left: nothing.
    Runs,
    /// It took a slice from the pool and has runtime again; `timer`: arm the
    /// pool's period timer for then.
    Refilled {
        /// The period timer request, when the pool's timer was idle.
        timer: Option<Nanoseconds>,
    },
    /// The pool is empty: the running task must give up the CPU
    /// (`resched_curr`), and the run queue is throttled at the next pick
    /// unless the last attempt finds runtime.
    Exhausted {
        /// The period timer request, when the pool's timer was idle.
        timer: Option<Nanoseconds>,
    },
}

/// One CPU's bandwidth state for one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CfsRqRuntime {
    /// The group has a quota (`runtime_enabled`).
    pub enabled: bool,
    /// The runtime left here; negative after an overrun (`runtime_remaining`).
    pub runtime_remaining: i64,
    /// Throttled here (`throttled`).
    pub throttled: bool,
    /// How many of this group and its ancestors are throttled on this CPU
    /// (`throttle_count`): a run queue with a throttled ancestor is frozen too.
    pub throttle_count: u32,
    /// When it was throttled, by the run queue's clock (`throttled_clock`).
    pub throttled_clock: Nanoseconds,
    /// The PELT clock when the freeze began (`throttled_clock_pelt`).
    pub throttled_clock_pelt: Nanoseconds,
    /// PELT time spent frozen, subtracted from the PELT clock
    /// (`throttled_clock_pelt_time`).
    pub throttled_clock_pelt_time: Nanoseconds,
    /// When this group itself was throttled (`throttled_clock_self`).
    pub throttled_clock_self: Nanoseconds,
    /// Time this group itself was throttled here (`cpu.stat.local`'s
    /// `throttled_usec`, in ns).
    pub throttled_time_self: Nanoseconds,
}

impl CfsRqRuntime {
    /// `__account_cfs_rq_runtime`: `delta` ns ran; when the local runtime is
    /// used up, a slice is asked of `pool`.
    pub fn charge(
        &mut self,
        delta: Nanoseconds,
        pool: &mut CfsBandwidth,
        now: Nanoseconds,
    ) -> Charge {
        if !self.enabled {
            return Charge::Runs;
        }
        self.runtime_remaining -= delta as i64;
        if self.runtime_remaining > 0 || self.throttled {
            return Charge::Runs;
        }
        let (amount, timer) = pool.assign(self.runtime_remaining, SLICE, now);
        self.runtime_remaining += amount as i64;
        if self.runtime_remaining > 0 {
            Charge::Refilled { timer }
        } else {
            Charge::Exhausted { timer }
        }
    }

    /// `check_cfs_rq_runtime` / `throttle_cfs_rq`: out of runtime at a pick or
    /// a put; one last attempt for 1 ns, then throttling. Returns whether it
    /// is throttled now (the caller dequeues the group's entity and freezes
    /// PELT through [`CfsRqRuntime::freeze`] down the subtree), and the period
    /// timer request when the attempt found the pool's timer idle.
    pub fn throttle_if_needed(
        &mut self,
        pool: &mut CfsBandwidth,
        cpu: u16,
        now: Nanoseconds,
    ) -> (bool, Option<Nanoseconds>) {
        if !self.enabled || self.throttled || self.runtime_remaining > 0 {
            return (false, None);
        }
        let (amount, timer) = pool.assign(self.runtime_remaining, 1, now);
        self.runtime_remaining += amount as i64;
        if self.runtime_remaining > 0 {
            return (false, timer);
        }
        pool.throttle(cpu, self.runtime_remaining);
        self.throttled = true;
        self.throttled_clock = now;
        self.throttled_clock_self = now;
        (true, timer)
    }

    /// `tg_throttle_down` for this run queue: a throttle at or above it
    /// freezes its PELT clock at `pelt_now`.
    pub fn freeze(&mut self, pelt_now: Nanoseconds) {
        if self.throttle_count == 0 {
            self.throttled_clock_pelt = pelt_now;
        }
        self.throttle_count += 1;
    }

    /// `tg_unthrottle_up` for this run queue: the PELT clock runs again, the
    /// frozen time left out of it.
    pub fn thaw(&mut self, pelt_now: Nanoseconds) {
        debug_assert!(self.throttle_count > 0);
        self.throttle_count -= 1;
        if self.throttle_count == 0 {
            self.throttled_clock_pelt_time += pelt_now.saturating_sub(self.throttled_clock_pelt);
        }
    }

    /// A grant of the pool reached this run queue (`distribute_cfs_runtime`);
    /// when it has runtime again it is unthrottled (`unthrottle_cfs_rq`): the
    /// time it spent throttled goes to the pool's `throttled_time`. Returns
    /// whether it was unthrottled.
    pub fn grant(
        &mut self,
        amount: Nanoseconds,
        unthrottle: bool,
        pool: &mut CfsBandwidth,
        now: Nanoseconds,
    ) -> bool {
        self.runtime_remaining += amount as i64;
        if !unthrottle || !self.throttled {
            return false;
        }
        self.throttled = false;
        let throttled = now.saturating_sub(self.throttled_clock);
        pool.add_throttled_time(throttled);
        self.throttled_time_self += now.saturating_sub(self.throttled_clock_self);
        true
    }

    /// `return_cfs_rq_runtime`: the run queue emptied; what it holds above
    /// 1 ms goes back to the pool. Returns the slack timer request.
    pub fn return_slack(
        &mut self,
        pool: &mut CfsBandwidth,
        now: Nanoseconds,
    ) -> Option<Nanoseconds> {
        if !self.enabled || self.runtime_remaining <= 0 {
            return None;
        }
        let (returned, timer) = pool.return_slack(self.runtime_remaining, now);
        self.runtime_remaining -= returned as i64;
        timer
    }
}
