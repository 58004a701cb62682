//! rt-app's own per-task logs: the state machine that turns a task's
//! program, as it runs, into one row per loop of a phase, with the fields
//! rt-app writes and LISA reads (docs/tracing.md, "rt-app's logs"). The
//! simulator (`fairway_sim::rtapp_log`, which writes the files) and the
//! kernel's rt-app executor (`src/workload/rtapp.rs`) both feed it the same
//! events, so their rows mean the same thing by construction.
//!
//! rt-app's semantics kept here: `slack` and `wu_lat` are the loop's last
//! timer's; `wu_lat` is 0 after an overrun (rt-app resets it); `mem` and
//! `iorun` are not part of `perf`, `run` or `c_duration` (the caller only
//! reports `run` and `runtime` events); a loop is logged when it ends, so the
//! loop in progress when the run stops is not.

use alloc::vec::Vec;

/// One loop of one phase. Times are ns since the run's start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtappLogRow {
    /// The phase's index (rt-app's `idx` column is the thread's index
    /// instead; the log writer writes that).
    pub phase: usize,
    /// Work done: the loop's `run` and `runtime` events (not `mem` or
    /// `iorun`, as rt-app), in µs of the
    /// reference CPU at full speed (rt-app counts calibrated busy loops;
    /// Fairway's work is defined in µs, so this is its unit).
    pub perf: u64,
    /// Time from each run event's start to its end, summed (preemption
    /// included), ns.
    pub run_ns: u64,
    /// When the loop started and ended, ns since the run's start.
    pub start_ns: u64,
    /// See [`RtappLogRow::start_ns`].
    pub end_ns: u64,
    /// `start` less the run's start (rt-app's `t_start − main_app_start`):
    /// with the run starting at 0, `start` itself, ns.
    pub rel_st_ns: u64,
    /// The loop's last timer event: time from the event to the timer's
    /// expiry, negative for an expiry already passed (an overrun), ns.
    /// (rt-app sums it over the loop's timers with `cumulative_slack`,
    /// which Fairway does not model.)
    pub slack_ns: i64,
    /// The run events' configured durations, summed, µs.
    pub c_duration_us: u64,
    /// The timer events' periods, summed, µs.
    pub c_period_us: u64,
    /// The loop's last timer event: from the expiry to the task running
    /// again; 0 after an overrun (as rt-app resets it), ns.
    pub wu_lat_ns: u64,
}

/// The loop a task is in, its events in flight, and the loops completed.
#[derive(Clone, Debug)]
pub struct RtappLog {
    /// The loop in progress.
    open: Option<RtappLogRow>,
    /// The run event in progress: when it started and its work, µs.
    run: Option<(u64, u64)>,
    /// The expiry the task sleeps until, after a timer event.
    expiry: Option<u64>,
    /// The loops completed.
    rows: Vec<RtappLogRow>,
    /// The most rows kept ([`RtappLog::bounded`]); `usize::MAX` unbounded.
    limit: usize,
    /// Loops completed past `limit`, not kept.
    dropped: u64,
}

impl Default for RtappLog {
    /// An unbounded log (the simulator's: its rows grow with the run).
    fn default() -> Self {
        RtappLog {
            open: None,
            run: None,
            expiry: None,
            rows: Vec::new(),
            limit: usize::MAX,
            dropped: 0,
        }
    }
}

impl RtappLog {
    /// A log that keeps at most `rows` rows, all allocated now (`None` when
    /// they cannot be), so that recording never allocates: the kernel
    /// records from its tasks while they run (`rtapp_log_rows=N`). Rows past
    /// the bound are counted ([`RtappLog::dropped`]).
    pub fn bounded(rows: usize) -> Option<Self> {
        let mut buffer = Vec::new();
        buffer.try_reserve_exact(rows).ok()?;
        Some(RtappLog {
            rows: buffer,
            limit: rows,
            ..RtappLog::default()
        })
    }

    /// The loops completed (and kept).
    pub fn rows(&self) -> &[RtappLogRow] {
        &self.rows
    }

    /// The loops completed, kept.
    pub fn into_rows(self) -> Vec<RtappLogRow> {
        self.rows
    }

    /// Loops completed that a bounded log had no room for.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// A loop of `phase` starts at `now`; the one before, if any, ends.
    pub fn loop_start(&mut self, phase: usize, now: u64) {
        self.finish(now);
        self.open = Some(RtappLogRow {
            phase,
            start_ns: now,
            rel_st_ns: now,
            ..RtappLogRow::default()
        });
    }

    /// The task's program ended (or the loop in progress closes) at `now`.
    pub fn finish(&mut self, now: u64) {
        if let Some(mut row) = self.open.take() {
            row.end_ns = now;
            if self.rows.len() < self.limit {
                self.rows.push(row);
            } else {
                self.dropped += 1;
            }
        }
    }

    /// A run event of `us` µs starts (`run` or `runtime`; not `mem` or
    /// `iorun`, which rt-app leaves out of its logs).
    pub fn run_start(&mut self, us: u64, now: u64) {
        if let Some(row) = &mut self.open {
            row.c_duration_us += us;
        }
        self.run = Some((now, us));
    }

    /// The run event in progress ends.
    pub fn run_end(&mut self, now: u64) {
        if let (Some((started, us)), Some(row)) = (self.run.take(), &mut self.open) {
            row.run_ns += now - started;
            row.perf += us;
        }
    }

    /// A timer event at `now` with `period_us`, expiring at `expiry` (maybe
    /// already passed).
    pub fn timer(&mut self, period_us: u64, expiry: u64, now: u64) {
        if let Some(row) = &mut self.open {
            row.c_period_us += period_us;
            row.slack_ns = expiry as i64 - now as i64;
            row.wu_lat_ns = 0;
        }
        self.expiry = (expiry > now).then_some(expiry);
    }

    /// The task runs again at `now` (a switch in).
    pub fn running(&mut self, now: u64) {
        if let (Some(expiry), Some(row)) = (self.expiry.take(), &mut self.open) {
            row.wu_lat_ns = now.saturating_sub(expiry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_log_keeps_its_rows_and_counts_the_rest() {
        // Three 10 ns loops into room for two: the third is counted, not kept.
        let mut log = RtappLog::bounded(2).unwrap();
        for k in 0..4 {
            log.loop_start(0, k * 10);
        }
        let starts: Vec<u64> = log.rows().iter().map(|r| r.start_ns).collect();
        assert_eq!(starts, [0, 10]);
        assert_eq!(log.dropped(), 1);
    }
}
