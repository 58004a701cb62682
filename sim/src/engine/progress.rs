//! A progress line for long runs on a terminal: after 2 s of wall time,
//! the virtual time reached and the share of the scenario's duration, on
//! standard error, rewritten in place about five times a second and erased
//! at the end. Never in CI logs or pipes (the caller decides: a terminal,
//! and no `CI` in the environment).

use std::io::Write;
use std::time::{Duration, Instant};

/// How long a run goes before the line appears.
const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often it is rewritten.
const EVERY: Duration = Duration::from_millis(200);

/// The line's state.
#[derive(Debug)]
pub(super) struct Progress {
    start: Instant,
    last: Option<Instant>,
}

impl Progress {
    pub(super) fn new() -> Self {
        Progress {
            start: Instant::now(),
            last: None,
        }
    }

    /// Shows `now` (of `end`, when the run has a duration) if it is time to.
    pub(super) fn show(&mut self, now: u64, end: Option<u64>) {
        let wall = Instant::now();
        if wall.duration_since(self.start) < QUIET_FOR
            || self
                .last
                .is_some_and(|last| wall.duration_since(last) < EVERY)
        {
            return;
        }
        self.last = Some(wall);
        let seconds = |ns: u64| ns as f64 / 1e9;
        let line = match end {
            Some(end) if end > 0 => format!(
                "fairway-sim: {:.2} s of {:.2} s simulated ({:.0} %)",
                seconds(now),
                seconds(end),
                100.0 * now as f64 / end as f64
            ),
            _ => format!("fairway-sim: {:.2} s simulated", seconds(now)),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
    }
}

impl Drop for Progress {
    /// Erases the line, if it was shown, when the run ends (or fails).
    fn drop(&mut self) {
        if self.last.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}
