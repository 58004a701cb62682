//! rt-app's own per-task logs (`--rtapp-logs DIR`): one row per loop of a
//! phase, with the fields rt-app writes and LISA reads
//! (docs/tracing.md, "rt-app's logs"): `idx` (the thread's index), `perf`,
//! `run`, `period`, `start`, `end`, `rel_st`, `slack`, `c_duration`,
//! `c_period`, `wu_lat`, times in µs, whitespace separated, under a
//! `#`-header naming them.

use std::io::{self, Write};

/// One loop of one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtappLogRow {
    /// The phase's index (rt-app's `idx` column is the thread's index
    /// instead; [`write_log`] writes that).
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

/// The loop a task is in, and its events in flight.
#[derive(Clone, Debug, Default)]
pub(crate) struct RtappLog {
    /// The loop in progress.
    open: Option<RtappLogRow>,
    /// The run event in progress: when it started and its work, µs.
    run: Option<(u64, u64)>,
    /// The expiry the task sleeps until, after a timer event.
    expiry: Option<u64>,
    /// The loops completed.
    pub(crate) rows: Vec<RtappLogRow>,
}

impl RtappLog {
    /// A loop of `phase` starts at `now`; the one before, if any, ends.
    pub(crate) fn loop_start(&mut self, phase: usize, now: u64) {
        self.finish(now);
        self.open = Some(RtappLogRow {
            phase,
            start_ns: now,
            rel_st_ns: now,
            ..RtappLogRow::default()
        });
    }

    /// The task's program ended (or the loop in progress closes) at `now`.
    pub(crate) fn finish(&mut self, now: u64) {
        if let Some(mut row) = self.open.take() {
            row.end_ns = now;
            self.rows.push(row);
        }
    }

    /// A run event of `us` µs starts.
    pub(crate) fn run_start(&mut self, us: u64, now: u64) {
        if let Some(row) = &mut self.open {
            row.c_duration_us += us;
        }
        self.run = Some((now, us));
    }

    /// The run event in progress ends.
    pub(crate) fn run_end(&mut self, now: u64) {
        if let (Some((started, us)), Some(row)) = (self.run.take(), &mut self.open) {
            row.run_ns += now - started;
            row.perf += us;
        }
    }

    /// A timer event at `now` with `period_us`, expiring at `expiry` (maybe
    /// already passed).
    pub(crate) fn timer(&mut self, period_us: u64, expiry: u64, now: u64) {
        if let Some(row) = &mut self.open {
            row.c_period_us += period_us;
            row.slack_ns = expiry as i64 - now as i64;
            row.wu_lat_ns = 0;
        }
        self.expiry = (expiry > now).then_some(expiry);
    }

    /// The task runs again at `now` (a switch in).
    pub(crate) fn running(&mut self, now: u64) {
        if let (Some(expiry), Some(row)) = (self.expiry.take(), &mut self.open) {
            row.wu_lat_ns = now.saturating_sub(expiry);
        }
    }
}

/// rt-app's header line.
pub const HEADER: &str = "#idx\t    perf\t     run\t  period\t           start\t             end\t          rel_st\t     slack\tc_duration\t  c_period\t    wu_lat";

/// Writes `rows` as rt-app's log of the task of index `thread`.
pub fn write_log(out: &mut dyn Write, thread: usize, rows: &[RtappLogRow]) -> io::Result<()> {
    writeln!(out, "{HEADER}")?;
    let us = |ns: u64| ns / 1000;
    for row in rows {
        writeln!(
            out,
            "{}\t{:8}\t{:8}\t{:8}\t{:16}\t{:16}\t{:16}\t{:10}\t{:10}\t{:10}\t{:10}",
            thread,
            row.perf,
            us(row.run_ns),
            us(row.end_ns - row.start_ns),
            us(row.start_ns),
            us(row.end_ns),
            us(row.rel_st_ns),
            row.slack_ns / 1000,
            row.c_duration_us,
            row.c_period_us,
            us(row.wu_lat_ns),
        )?;
    }
    Ok(())
}
