//! One CPU's side of a limited group (the bandwidth fields of Linux's
//! `cfs_rq`, docs/linux-sched-reference.md §4.1, §4.2): the local runtime
//! that `update_curr` charges, throttling, and the clocks that keep the
//! throttled time out of the run queue's PELT and into `cpu.stat`.
//!
//! A run queue reaches its group's pool through [`PoolAccess`]: the shared
//! pool itself ([`CfsBandwidth`], live), or, in a replay, the answers the
//! pool gave in the recorded run ([`PoolAnswer`]), so that a replay never
//! needs the order in which the CPUs reached the pool (docs/core-driver.md,
//! "Replay").

use super::SLICE;
use super::pool::CfsBandwidth;
use crate::task::{GroupId, Nanoseconds};

/// What a CPU's run queue asks of its group's pool: the five calls of
/// [`CfsRqRuntime`]. Two have an answer that depends on every CPU's use of
/// the pool ([`assign`](PoolAccess::assign), [`return_slack`](PoolAccess::return_slack)):
/// a recording keeps those answers; the other three change only the pool.
pub trait PoolAccess {
    /// See [`CfsBandwidth::assign`]: the runtime granted towards `target`,
    /// and the period timer to arm.
    fn assign(
        &mut self,
        runtime_remaining: i64,
        target: Nanoseconds,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>);
    /// See [`CfsBandwidth::throttle`].
    fn throttle(&mut self, cpu: u16, runtime_remaining: i64);
    /// See [`CfsBandwidth::return_slack`]: the runtime returned, and the
    /// slack timer to arm.
    fn return_slack(
        &mut self,
        runtime_remaining: i64,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>);
    /// See [`CfsBandwidth::add_throttled_time`].
    fn add_throttled_time(&mut self, throttled_ns: Nanoseconds);
    /// See [`CfsBandwidth::unthrottled`].
    fn unthrottled(&mut self, cpu: u16, throttled_ns: Nanoseconds);
}

impl PoolAccess for CfsBandwidth {
    #[inline]
    fn assign(
        &mut self,
        runtime_remaining: i64,
        target: Nanoseconds,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        CfsBandwidth::assign(self, runtime_remaining, target, now)
    }
    #[inline]
    fn throttle(&mut self, cpu: u16, runtime_remaining: i64) {
        CfsBandwidth::throttle(self, cpu, runtime_remaining)
    }
    #[inline]
    fn return_slack(
        &mut self,
        runtime_remaining: i64,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        CfsBandwidth::return_slack(self, runtime_remaining, now)
    }
    #[inline]
    fn add_throttled_time(&mut self, throttled_ns: Nanoseconds) {
        CfsBandwidth::add_throttled_time(self, throttled_ns)
    }
    #[inline]
    fn unthrottled(&mut self, cpu: u16, throttled_ns: Nanoseconds) {
        CfsBandwidth::unthrottled(self, cpu, throttled_ns)
    }
}

/// Which question a recorded [`PoolAnswer`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolCall {
    /// [`PoolAccess::assign`]: `amount` granted.
    Assign,
    /// [`PoolAccess::return_slack`]: `amount` returned.
    ReturnSlack,
    /// The group had no pool when the run queue reached for it (its limit
    /// was lifted on the pools and this CPU was not told yet): the run
    /// queue's step did nothing.
    NoPool,
}

/// One answer of a group's pool to one CPU's run queue, as a recording
/// keeps it and a replay gives it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolAnswer {
    /// The group whose pool answered.
    pub group: GroupId,
    /// The question.
    pub call: PoolCall,
    /// The runtime granted or returned (0 for [`PoolCall::NoPool`]).
    pub amount: Nanoseconds,
    /// The timer the pool asked to arm (the period timer for an assign, the
    /// slack timer for a return).
    pub timer: Option<Nanoseconds>,
}

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
    /// The largest debt this run queue carried into a throttle or out of it
    /// (`-runtime_remaining` when throttled and when a grant reached it; not
    /// a Linux field). What a group's tasks run in one period differs from
    /// the quota by the debts at its two ends (docs/bandwidth.md, "The
    /// period's bound"): tests bound a period by this.
    pub max_debt: Nanoseconds,
}

impl CfsRqRuntime {
    /// `__account_cfs_rq_runtime`: `delta` ns ran; when the local runtime is
    /// used up, a slice is asked of `pool`.
    pub fn charge(
        &mut self,
        delta: Nanoseconds,
        pool: &mut (impl PoolAccess + ?Sized),
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
        pool: &mut (impl PoolAccess + ?Sized),
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
        self.note_debt();
        self.throttled = true;
        self.throttled_clock = now;
        self.throttled_clock_self = now;
        (true, timer)
    }

    /// Keeps the largest debt seen ([`CfsRqRuntime::max_debt`]).
    fn note_debt(&mut self) {
        let debt = self.runtime_remaining.min(0).unsigned_abs();
        self.max_debt = self.max_debt.max(debt);
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
        pool: &mut (impl PoolAccess + ?Sized),
        now: Nanoseconds,
    ) -> bool {
        // Charges that reached it while throttled (the running task had not
        // left yet) add to the debt recorded at the throttle.
        self.note_debt();
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
        pool: &mut (impl PoolAccess + ?Sized),
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
