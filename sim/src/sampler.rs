//! The CSV of scheduler signals, sampled every `--sample-interval` of virtual time.
//!
//! Columns: `time_ns,task,cpu,state,vruntime,util_avg,load_avg,runnable_avg,util_est`.
//! One row per started, unfinished task (signals from `RunQueue::task_signals` of its CPU),
//! then one row per CPU (`task` = `cpuN`, `state` = `busy`/`idle`, `vruntime` empty,
//! signals from `RunQueue::signals`).

use std::io::{self, Write};

use fairway_contract::scenario::Scenario;

use fairway_sched::task::TaskId;

use crate::engine::{Cpu, SimTask, TaskState};

/// The CSV header line.
pub const HEADER: &str = "time_ns,task,cpu,state,vruntime,util_avg,load_avg,runnable_avg,util_est";

/// The largest CSV a run writes: 10,000 tasks sampled every millisecond would
/// fill a disk, silently. A run sure to pass it is refused before it starts
/// ([`least_csv_bytes`]); one that reaches it anyway ends the file on the last
/// whole sample ([`Sampler::cut_at`]) and still writes its other outputs.
pub const MAX_CSV_BYTES: u64 = 1 << 30;

/// The decimal digits of `value`.
fn digits(value: u64) -> u64 {
    value.checked_ilog10().map_or(1, |log| u64::from(log) + 1)
}

/// Σ digits(k × interval) for k in `first..=last`: each power of ten a value
/// reaches adds one digit, so count the values at or above each power.
fn digit_sum(first: u64, last: u64, interval: u64) -> u64 {
    if first > last {
        return 0;
    }
    let mut sum = last - first + 1;
    let mut power: u64 = 10;
    loop {
        // The first k with k × interval ≥ power.
        let from = power.div_ceil(interval).max(first);
        if from > last {
            break;
        }
        sum += last - from + 1;
        match power.checked_mul(10) {
            Some(next) => power = next,
            None => break,
        }
    }
    sum
}

/// A lower bound on the signals CSV of a run that ends at `end_ns`, sampled every
/// `interval_ns` on `nr_cpus` CPUs: the header, a row per CPU at every sample, and
/// a row per instance of a task that never ends (`loop` -1) at every sample after
/// its start, each row at its least width (every number one digit, the shortest
/// state). A bound, not a guess: a run refused on it could never have fit.
pub fn least_csv_bytes(scenario: &Scenario, nr_cpus: usize, end_ns: u64, interval_ns: u64) -> u64 {
    if end_ns == 0 || interval_ns == 0 {
        return HEADER.len() as u64 + 1;
    }
    // Samples at k × interval for k in 0..=last (a sample at the end is not taken).
    let last = (end_ns - 1) / interval_ns;
    let samples = last + 1;
    let all_times = digit_sum(0, last, interval_ns);
    let mut bytes = HEADER.len() as u64 + 1;
    // `now,cpuI,I,idle,,u,l,r,e\n`: eight commas, a newline, "cpu", a four-letter
    // state and four one-digit signals.
    for cpu in 0..nr_cpus as u64 {
        bytes += all_times + samples * (8 + 1 + 3 + 2 * digits(cpu) + 4 + 4);
    }
    // `now,name,c,running,v,u,l,r,e\n`: eight commas, a newline, a one-digit CPU,
    // a seven-letter state (`running`) and five one-digit numbers.
    for task in scenario.tasks.iter().filter(|t| t.loop_count == -1) {
        let start_ns = u64::try_from(task.delay_us)
            .unwrap_or(0)
            .saturating_mul(1_000);
        // Samples strictly after the start (one at the start may come first).
        let first = start_ns / interval_ns + 1;
        if first > last {
            continue;
        }
        let times = digit_sum(first, last, interval_ns);
        let rows = last - first + 1;
        for index in 0..task.instances {
            let name = Scenario::instance_name(task, index).len() as u64;
            bytes += times + rows * (8 + 1 + 1 + 7 + 5 + name);
        }
    }
    bytes
}

/// Writes sample rows to `out`, whole samples only, at most a limit of bytes.
pub struct Sampler<'w> {
    out: &'w mut dyn Write,
    limit: u64,
    written: u64,
    /// One sample's rows, written only whole.
    buffer: Vec<u8>,
    /// The time of the first sample left out at the limit.
    cut_at: Option<u64>,
}

impl<'w> Sampler<'w> {
    /// A sampler writing to `out`, at most [`MAX_CSV_BYTES`].
    pub fn new(out: &'w mut dyn Write) -> Self {
        Self::with_limit(out, MAX_CSV_BYTES)
    }

    /// A sampler writing at most `limit` bytes to `out`.
    pub fn with_limit(out: &'w mut dyn Write, limit: u64) -> Self {
        Sampler {
            out,
            limit,
            written: 0,
            buffer: Vec::new(),
            cut_at: None,
        }
    }

    /// The time of the first sample the limit left out: the file ends on the whole
    /// sample before it. `None` when every sample was written.
    pub fn cut_at(&self) -> Option<u64> {
        self.cut_at
    }

    /// Bytes written.
    pub fn written(&self) -> u64 {
        self.written
    }

    pub(crate) fn sample(&mut self, now: u64, tasks: &[SimTask], cpus: &[Cpu]) -> io::Result<()> {
        if self.cut_at.is_some() {
            return Ok(());
        }
        let buffer = &mut self.buffer;
        buffer.clear();
        if self.written == 0 {
            writeln!(buffer, "{HEADER}")?;
        }
        for (index, task) in tasks.iter().enumerate() {
            if matches!(task.state, TaskState::NotStarted | TaskState::Done) {
                continue;
            }
            let Some(cpu) = task.cpu else { continue };
            let s = cpus[cpu]
                .core
                .run_queue()
                .task_signals(TaskId(index as u16));
            writeln!(
                buffer,
                "{now},{},{cpu},{},{},{},{},{},{}",
                crate::csv_field(&task.name),
                task.state.name(),
                s.vruntime,
                s.util_avg,
                s.load_avg,
                s.runnable_avg,
                s.util_est
            )?;
        }
        for (index, cpu) in cpus.iter().enumerate() {
            let s = cpu.core.run_queue().signals();
            let busy = cpu.current.is_some_and(|t| {
                tasks[t].state == TaskState::Running && tasks[t].cpu == Some(index)
            });
            writeln!(
                buffer,
                "{now},cpu{index},{index},{},,{},{},{},{}",
                if busy { "busy" } else { "idle" },
                s.util_avg,
                s.load_avg,
                s.runnable_avg,
                s.util_est
            )?;
        }
        if self.written + self.buffer.len() as u64 > self.limit {
            self.cut_at = Some(now);
            return Ok(());
        }
        self.out.write_all(&self.buffer)?;
        self.written += self.buffer.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_sums_match_a_count_of_every_value() {
        for interval in [1, 3, 7, 10, 333, 1_000_000] {
            for (first, last) in [(0, 0), (0, 40), (3, 2000), (17, 17), (5, 4)] {
                let brute: u64 = (first..=last).map(|k| digits(k * interval)).sum();
                assert_eq!(
                    digit_sum(first, last, interval),
                    brute,
                    "{interval} {first}..={last}"
                );
            }
        }
        assert_eq!(digit_sum(0, 0, 5), 1, "0 is one digit");
    }
}
