//! A task group's global runtime pool (Linux's `struct cfs_bandwidth`,
//! docs/linux-sched-reference.md §4.1-§4.3): refilled every period, handed
//! to the CPUs in slices, paid back to throttled CPUs in FIFO order, with the
//! decisions of its period and slack timers and the statistics of `cpu.stat`.
//!
//! One pool serves every CPU: the kernel keeps it behind a lock, the
//! simulator as plain data. The pool never reads a clock: each call takes
//! `now`, and the timers are requests the mechanism carries out.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::{Bandwidth, MAX_PERIOD, MIN_EXPIRATION, SLACK_PERIOD, SLICE};
use crate::task::Nanoseconds;

/// A CPU's run queue of this group, throttled, waiting in the pool's FIFO
/// with its debt (`runtime_remaining`, ≤ 0: it does not change while the run
/// queue is throttled, since nothing of the group runs there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttled {
    /// The CPU.
    pub cpu: u16,
    /// Its `runtime_remaining`.
    pub runtime_remaining: i64,
}

/// Runtime handed to a throttled CPU's run queue (`distribute_cfs_runtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The CPU.
    pub cpu: u16,
    /// The runtime added to its `runtime_remaining`.
    pub amount: Nanoseconds,
    /// Its run queue now has runtime: unthrottle it (on that CPU: Linux sends
    /// a CSD to a remote CPU rather than taking its lock from afar).
    pub unthrottle: bool,
}

/// The statistics of `cpu.stat` (§4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BandwidthStats {
    /// Periods in which the group was active (`nr_periods`).
    pub nr_periods: u64,
    /// Those in which a run queue was throttled at the refill (`nr_throttled`).
    pub nr_throttled: u64,
    /// Time throttled, summed over CPUs, in ns (`throttled_usec` × 1000).
    pub throttled_time: Nanoseconds,
    /// Periods that used burst (`nr_bursts`).
    pub nr_bursts: u64,
    /// Burst used, in ns (`burst_usec` × 1000).
    pub burst_time: Nanoseconds,
}

/// What the period timer's callback decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeriodOutcome {
    /// When it fires next (`None`: it goes idle: the group had a fully idle
    /// period with nothing throttled, or has no limit).
    pub rearm: Option<Nanoseconds>,
    /// Runtime paid to throttled CPUs, in FIFO order.
    pub grants: Vec<Grant>,
    /// The period was too short for the callback (more than three overruns
    /// in one call) and was doubled, with the quota and burst.
    pub scaled_up: bool,
}

/// One group's pool.
#[derive(Clone, Debug)]
pub struct CfsBandwidth {
    settings: Bandwidth,
    /// The runtime left in this period (`cfs_b->runtime`).
    runtime: Nanoseconds,
    /// The pool right after the last refill (`runtime_snap`).
    runtime_snap: Nanoseconds,
    /// Nothing of the group asked for runtime since the last refill.
    idle: bool,
    /// The period timer is armed.
    period_active: bool,
    /// When the period timer fires (its grid: `offset + k × period`).
    period_expires: Nanoseconds,
    /// The slack timer is armed.
    slack_started: bool,
    /// When the slack timer fires, while armed.
    slack_expires: Nanoseconds,
    throttled: VecDeque<Throttled>,
    stats: BandwidthStats,
}

impl CfsBandwidth {
    /// The pool of a group set to `settings` (already validated), with its
    /// period grid at `offset + k × period`: 0 for Linux before 6.4 (every
    /// group refills at the same instants), a random offset in `[0, period)`
    /// since 6.4 (§4.6). The pool starts full (`tg_set_cfs_bandwidth` refills).
    pub fn new(settings: Bandwidth, offset: Nanoseconds, max_cpus: usize) -> Self {
        let mut pool = CfsBandwidth {
            settings,
            runtime: 0,
            runtime_snap: 0,
            idle: false,
            period_active: false,
            period_expires: offset,
            slack_started: false,
            slack_expires: 0,
            throttled: VecDeque::with_capacity(max_cpus),
            stats: BandwidthStats::default(),
        };
        pool.refill();
        pool
    }

    /// The settings in force (they double when the period is too short).
    pub fn settings(&self) -> Bandwidth {
        self.settings
    }

    /// The runtime left in the pool.
    pub fn runtime(&self) -> Nanoseconds {
        self.runtime
    }

    /// The statistics so far.
    pub fn stats(&self) -> BandwidthStats {
        self.stats
    }

    /// `tg_set_cfs_bandwidth` on a pool that exists (§4.1): the new
    /// settings (validated), then a refill. The period timer, its grid, the
    /// throttled queues and the counters stay.
    pub fn rewrite(&mut self, settings: Bandwidth) {
        self.settings = settings;
        self.refill();
    }

    /// A point of the period grid: the timer's next expiry while it is
    /// armed, else the last one (the grid is this plus whole periods).
    pub fn grid(&self) -> Nanoseconds {
        self.period_expires
    }

    /// The throttled run queues, first to be paid first.
    pub fn throttled(&self) -> impl Iterator<Item = &Throttled> {
        self.throttled.iter()
    }

    /// `__refill_cfs_bandwidth_runtime` (§4.2): a period's quota joins the
    /// pool; what the last period took beyond its quota was burst; the pool
    /// keeps at most `quota + burst`.
    fn refill(&mut self) {
        let Some(quota) = self.settings.quota else {
            return;
        };
        self.runtime += quota;
        if self.runtime_snap > self.runtime {
            self.stats.burst_time += self.runtime_snap - self.runtime;
            self.stats.nr_bursts += 1;
        }
        self.runtime = self.runtime.min(quota + self.settings.burst);
        self.runtime_snap = self.runtime;
    }

    /// `hrtimer_forward_now`: moves the period timer's expiry past `now` by
    /// whole periods; how many.
    fn forward(&mut self, now: Nanoseconds) -> u64 {
        if now < self.period_expires {
            return 0;
        }
        let periods = (now - self.period_expires) / self.settings.period + 1;
        self.period_expires += periods * self.settings.period;
        periods
    }

    /// `__assign_cfs_rq_runtime`: a CPU whose run queue has
    /// `runtime_remaining` asks for enough to reach `target` (a slice, or
    /// 1 ns for the last attempt before throttling). Returns the runtime
    /// granted, and the time to arm the period timer for when it was idle.
    pub fn assign(
        &mut self,
        runtime_remaining: i64,
        target: Nanoseconds,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        let wanted = (target as i64).saturating_sub(runtime_remaining).max(0) as u64;
        if self.settings.quota.is_none() {
            return (wanted, None);
        }
        let timer = self.start_period_timer(now);
        let mut amount = 0;
        if self.runtime > 0 {
            amount = wanted.min(self.runtime);
            self.runtime -= amount;
            self.idle = false;
        }
        (amount, timer)
    }

    /// `start_cfs_bandwidth`: arms the period timer if it is idle (when a
    /// quota is set, and when a CPU asks for runtime); its expiry is the first
    /// point of the group's grid after `now`. `None`: it was armed already.
    pub fn start_period_timer(&mut self, now: Nanoseconds) -> Option<Nanoseconds> {
        if self.period_active || self.settings.quota.is_none() {
            return None;
        }
        self.period_active = true;
        self.forward(now);
        Some(self.period_expires)
    }

    /// A CPU's run queue could get no runtime and is throttled with
    /// `runtime_remaining` (≤ 0): it joins the tail of the FIFO.
    pub fn throttle(&mut self, cpu: u16, runtime_remaining: i64) {
        debug_assert!(self.throttled.iter().all(|t| t.cpu != cpu));
        self.throttled.push_back(Throttled {
            cpu,
            runtime_remaining,
        });
    }

    /// A CPU's run queue left the FIFO without a grant (the limit was lifted,
    /// or the mechanism unthrottled it itself); `throttled_ns`: how long it
    /// was throttled.
    pub fn unthrottled(&mut self, cpu: u16, throttled_ns: Nanoseconds) {
        self.throttled.retain(|t| t.cpu != cpu);
        self.stats.throttled_time += throttled_ns;
    }

    /// A CPU's run queue was throttled for `throttled_ns` before a grant
    /// unthrottled it (`unthrottle_cfs_rq` adds it to `throttled_time`).
    pub fn add_throttled_time(&mut self, throttled_ns: Nanoseconds) {
        self.stats.throttled_time += throttled_ns;
    }

    /// `distribute_cfs_runtime`: pays the throttled run queues in FIFO
    /// order, each its debt plus 1 ns (so that it can run), while the pool
    /// lasts. A run queue paid in part stays throttled with a smaller debt.
    fn distribute(&mut self, grants: &mut Vec<Grant>) {
        while self.runtime > 0
            && let Some(first) = self.throttled.front_mut()
        {
            let owed = (1 - first.runtime_remaining) as u64;
            let amount = owed.min(self.runtime);
            self.runtime -= amount;
            first.runtime_remaining += amount as i64;
            let unthrottle = first.runtime_remaining > 0;
            grants.push(Grant {
                cpu: first.cpu,
                amount,
                unthrottle,
            });
            if unthrottle {
                self.throttled.pop_front();
            }
        }
    }

    /// `do_sched_cfs_period_timer` for `overrun` periods: counts them,
    /// refills, and pays the throttled run queues. Returns whether the timer
    /// goes idle.
    fn period(&mut self, overrun: u64, grants: &mut Vec<Grant>) -> bool {
        if self.settings.quota.is_none() {
            return true;
        }
        let throttled = !self.throttled.is_empty();
        self.stats.nr_periods += overrun;
        self.refill();
        if self.idle && !throttled {
            return true;
        }
        if !throttled {
            // A period with no demand from here on stops the timer.
            self.idle = true;
            return false;
        }
        self.stats.nr_throttled += overrun;
        self.distribute(grants);
        self.idle = false;
        false
    }

    /// The period timer fired (`sched_cfs_period_timer`). `clock` reads the
    /// time: the callback forwards the timer past it until no period is
    /// left, and when that takes more than three rounds the period is too
    /// short and doubles, with the quota and burst, up to 1 s (Linux warns
    /// "period too short, scaling up").
    pub fn period_timer(&mut self, mut clock: impl FnMut() -> Nanoseconds) -> PeriodOutcome {
        let mut outcome = PeriodOutcome::default();
        let mut idle = false;
        let mut rounds = 0;
        loop {
            let overrun = self.forward(clock());
            if overrun == 0 {
                break;
            }
            idle = self.period(overrun, &mut outcome.grants);
            rounds += 1;
            if rounds > 3 {
                let doubled = self.settings.period * 2;
                if doubled <= MAX_PERIOD {
                    self.settings.period = doubled;
                    self.settings.quota = self.settings.quota.map(|q| q * 2);
                    self.settings.burst *= 2;
                    outcome.scaled_up = true;
                }
                rounds = 0;
            }
        }
        if idle {
            self.period_active = false;
        } else {
            outcome.rearm = Some(self.period_expires);
        }
        outcome
    }

    /// `runtime_refresh_within`: the period timer refills within
    /// `min_expire` of `now`.
    fn refresh_within(&self, now: Nanoseconds, min_expire: Nanoseconds) -> bool {
        self.period_active && self.period_expires.saturating_sub(now) < min_expire
    }

    /// `__return_cfs_rq_runtime`: a CPU's run queue of this group emptied
    /// with `runtime_remaining` left; what it keeps above `min_cfs_rq_runtime`
    /// (1 ms) returns to the pool. Returns the runtime returned (the CPU
    /// takes it off its `runtime_remaining`), and the time to arm the slack
    /// timer for, when some run queue is throttled and the pool has more
    /// than a slice (`start_cfs_slack_bandwidth`: not within 7 ms of a
    /// refill, and not when it is already armed).
    pub fn return_slack(
        &mut self,
        runtime_remaining: i64,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        let slack = runtime_remaining - super::MIN_CFS_RQ_RUNTIME as i64;
        if slack <= 0 {
            return (0, None);
        }
        let slack = slack as u64;
        if self.settings.quota.is_none() {
            return (slack, None);
        }
        self.runtime += slack;
        let timer = if self.runtime > SLICE
            && !self.throttled.is_empty()
            && !self.refresh_within(now, SLACK_PERIOD + MIN_EXPIRATION)
            && !self.slack_started
        {
            self.slack_started = true;
            self.slack_expires = now + SLACK_PERIOD;
            Some(self.slack_expires)
        } else {
            None
        };
        (slack, timer)
    }

    /// The slack timer fired (`do_sched_cfs_slack_timer`): unless a refill
    /// is within 2 ms, a pool above one slice is paid out to the throttled
    /// run queues.
    pub fn slack_timer(&mut self, now: Nanoseconds) -> Vec<Grant> {
        self.slack_started = false;
        let mut grants = Vec::new();
        if self.refresh_within(now, MIN_EXPIRATION) {
            return grants;
        }
        if self.settings.quota.is_some() && self.runtime > SLICE {
            self.distribute(&mut grants);
        }
        grants
    }
}
