//! RT throttling: the per-CPU limit on RT run time per period
//! (`sched_rt_runtime_us` / `sched_rt_period_us`, Linux's
//! `Documentation/scheduler/sched-rt-group.rst`, system-wide settings only).
//!
//! ```text
//!  period:   |<────────────── 1 s ──────────────>|<──── ...
//!  RT runs:  |████████████████████████████▌      |█████...
//!                               rt_time > runtime (0.95 s): throttled, fair runs
//!  period timer: rt_time -= min(rt_time, overruns * runtime); unthrottle when
//!                rt_time < runtime
//! ```
//!
//! The period timer is the mechanism's: it asks [`RtThrottle::deadline`] when
//! to fire and calls back at that time.

use crate::task::{Nanoseconds, ParamError};

const NS_PER_US: u64 = 1_000;

/// The RT bandwidth settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtBandwidth {
    period: Nanoseconds,
    /// `None` is `RUNTIME_INF` (`sched_rt_runtime_us = -1`): no limit.
    runtime: Option<Nanoseconds>,
}

impl RtBandwidth {
    /// No limit (`sched_rt_runtime_us = -1`). [`super::RtClass::new`] uses it.
    pub const UNLIMITED: RtBandwidth = RtBandwidth {
        period: 1_000_000_000,
        runtime: None,
    };

    /// Linux's defaults: 950 ms of RT per 1 s period (`sched-rt-group.rst` section 2.2).
    pub const LINUX_DEFAULT: RtBandwidth = RtBandwidth {
        period: 1_000_000_000,
        runtime: Some(950_000_000),
    };

    /// Settings from the sysctls, validated as Linux does: the period in
    /// `1..=i32::MAX` us, the runtime in `-1..=period` us (-1: no limit).
    pub fn new(period_us: i64, runtime_us: i64) -> Result<Self, ParamError> {
        if !(1..=i64::from(i32::MAX)).contains(&period_us) {
            return Err(ParamError::OutOfRange {
                field: "sched_rt_period_us",
                value: period_us,
                min: 1,
                max: i64::from(i32::MAX),
            });
        }
        if !(-1..=period_us).contains(&runtime_us) {
            return Err(ParamError::OutOfRange {
                field: "sched_rt_runtime_us",
                value: runtime_us,
                min: -1,
                max: period_us,
            });
        }
        Ok(RtBandwidth {
            period: period_us as u64 * NS_PER_US,
            runtime: u64::try_from(runtime_us)
                .ok()
                .map(|runtime_us| runtime_us * NS_PER_US),
        })
    }

    /// The period.
    pub const fn period(&self) -> Nanoseconds {
        self.period
    }

    /// The RT run time allowed per period, `None` for no limit.
    pub const fn runtime(&self) -> Option<Nanoseconds> {
        self.runtime
    }

    /// The runtime when it limits anything (a runtime of a whole period does not).
    const fn limit(&self) -> Option<Nanoseconds> {
        match self.runtime {
            Some(runtime) if runtime < self.period => Some(runtime),
            _ => None,
        }
    }
}

/// One CPU's RT throttling state (`rt_rq->rt_time`, `rt_throttled`, and the
/// period timer of `rt_bandwidth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RtThrottle {
    bandwidth: RtBandwidth,
    rt_time: Nanoseconds,
    throttled: bool,
    /// When the period timer fires next; `None` while it is stopped.
    period_end: Option<Nanoseconds>,
}

impl RtThrottle {
    pub(crate) const fn new(bandwidth: RtBandwidth) -> Self {
        RtThrottle {
            bandwidth,
            rt_time: 0,
            throttled: false,
            period_end: None,
        }
    }

    pub(crate) const fn bandwidth(&self) -> RtBandwidth {
        self.bandwidth
    }

    pub(crate) const fn is_throttled(&self) -> bool {
        self.throttled
    }

    pub(crate) const fn rt_time(&self) -> Nanoseconds {
        self.rt_time
    }

    pub(crate) const fn deadline(&self) -> Option<Nanoseconds> {
        self.period_end
    }

    /// `start_rt_bandwidth`: an RT task is enqueued; the timer starts if it
    /// was stopped and there is a limit.
    pub(crate) fn start(&mut self, now: Nanoseconds) {
        if self.period_end.is_none() && self.bandwidth.limit().is_some() {
            self.period_end = Some(now + self.bandwidth.period);
        }
    }

    /// Charges `delta` of RT run time; true when that exceeds the runtime and
    /// the RT class becomes throttled (`sched_rt_runtime_exceeded`).
    pub(crate) fn charge(&mut self, delta: Nanoseconds) -> bool {
        let Some(runtime) = self.bandwidth.limit() else {
            return false;
        };
        self.rt_time += delta;
        if !self.throttled && self.rt_time > runtime {
            self.throttled = true;
            return true;
        }
        false
    }

    /// The period timer at `now` (`do_sched_rt_period_timer`): pays back one
    /// runtime per elapsed period and unthrottles when under the runtime.
    /// Returns true when it unthrottled. The timer stops when idle
    /// (`rt_time` 0 and `rt_queued` false).
    pub(crate) fn period_timer(&mut self, now: Nanoseconds, rt_queued: bool) -> bool {
        let (Some(end), Some(runtime)) = (self.period_end, self.bandwidth.limit()) else {
            return false;
        };
        if now < end {
            return false;
        }
        let overruns = (now - end) / self.bandwidth.period + 1;
        self.rt_time = self
            .rt_time
            .saturating_sub(overruns.saturating_mul(runtime));
        let unthrottled = self.throttled && self.rt_time < runtime;
        if unthrottled {
            self.throttled = false;
        }
        self.period_end = if self.rt_time == 0 && !rt_queued && !self.throttled {
            None
        } else {
            Some(end + overruns * self.bandwidth.period)
        };
        unthrottled
    }
}
