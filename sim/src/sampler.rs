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

/// Writes sample rows to `out`.
pub struct Sampler<'w> {
    out: &'w mut dyn Write,
    header_written: bool,
}

impl<'w> Sampler<'w> {
    /// A sampler writing to `out`.
    pub fn new(out: &'w mut dyn Write) -> Self {
        Sampler {
            out,
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
            let s = cpus[cpu].run_queue.task_signals(TaskId(index as u16));
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
            let s = cpu.run_queue.signals();
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
