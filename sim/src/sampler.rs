//! The CSV of scheduler signals, sampled every `--sample-interval` of virtual time.
//!
//! Columns: `time_ns,task,cpu,state,vruntime,util_avg,load_avg,runnable_avg,util_est`.
//! One row per started, unfinished task (signals from `RunQueue::task_signals` of its CPU),
//! then one row per CPU (`task` = `cpuN`, `state` = `busy`/`idle`, `vruntime` empty,
//! signals from `RunQueue::signals`).

use std::io::{self, Write};

use fairway_sched::task::TaskId;

use crate::engine::{Cpu, SimTask, TaskState};

/// The CSV header line.
pub const HEADER: &str = "time_ns,task,cpu,state,vruntime,util_avg,load_avg,runnable_avg,util_est";

/// The largest CSV a run writes: 10,000 tasks sampled every millisecond would
/// fill a disk, silently. Past it the run stops with a message that says how to
/// sample less (`--sample-interval`).
pub const MAX_CSV_BYTES: u64 = 1 << 30;

/// Counts what passes to the file, and refuses to go past [`MAX_CSV_BYTES`].
struct Limited<'w> {
    out: &'w mut dyn Write,
    written: u64,
    limit: u64,
}

impl Write for Limited<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.written + bytes.len() as u64 > self.limit {
            return Err(io::Error::other(format!(
                "--csv: the signals CSV would grow past {} bytes (a row per task and per CPU \
                 every --sample-interval); sample less often or simulate fewer tasks",
                self.limit
            )));
        }
        let count = self.out.write(bytes)?;
        self.written += count as u64;
        Ok(count)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes sample rows to `out`.
pub struct Sampler<'w> {
    out: Limited<'w>,
    header_written: bool,
}

impl<'w> Sampler<'w> {
    /// A sampler writing to `out`, at most [`MAX_CSV_BYTES`].
    pub fn new(out: &'w mut dyn Write) -> Self {
        Self::with_limit(out, MAX_CSV_BYTES)
    }

    /// A sampler writing at most `limit` bytes to `out`.
    pub fn with_limit(out: &'w mut dyn Write, limit: u64) -> Self {
        Sampler {
            out: Limited {
                out,
                written: 0,
                limit,
            },
            header_written: false,
        }
    }

    pub(crate) fn sample(&mut self, now: u64, tasks: &[SimTask], cpus: &[Cpu]) -> io::Result<()> {
        if !self.header_written {
            writeln!(self.out, "{HEADER}")?;
            self.header_written = true;
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
                self.out,
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
                self.out,
                "{now},cpu{index},{index},{},,{},{},{},{}",
                if busy { "busy" } else { "idle" },
                s.util_avg,
                s.load_avg,
                s.runnable_avg,
                s.util_est
            )?;
        }
        Ok(())
    }
}
