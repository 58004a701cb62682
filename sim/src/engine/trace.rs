//! `--trace`: the run's scheduler events and signals, recorded where the
//! engine carries each out, for `fairway_trace` to write in Perfetto's
//! format (docs/tracing.md). Recording reads state and changes none, so a
//! traced run is the same run as an untraced one.

use fairway_sched::task::{Policy, TaskId};
use fairway_sched::uclamp::ClampId;
use fairway_trace::{CounterTrack, CpuSignal, Event, TaskInfo, TaskSignal, Trace};

use super::Simulation;

/// Linux's `prio` of a task's policy (`p->prio`): `120 + nice` for the fair
/// policies (`SCHED_IDLE` reports 120 as well), `99 - rt_priority` for RT.
fn prio(policy: Policy) -> i32 {
    match policy {
        Policy::Normal { nice } | Policy::Batch { nice } => 120 + i32::from(nice),
        Policy::Idle => 120,
        Policy::Fifo { priority } | Policy::RoundRobin { priority } => 99 - i32::from(priority),
    }
}

impl Simulation<'_> {
    /// Shows a progress line on standard error during long runs (a
    /// terminal's: the caller checks).
    pub fn with_progress(mut self) -> Self {
        self.progress = Some(super::progress::Progress::new());
        self
    }

    /// Keeps rt-app's per-task logs (`--rtapp-logs`).
    pub fn with_rtapp_logs(mut self) -> Self {
        self.rtapp_logs = Some(Vec::new());
        self
    }

    /// `task`'s rt-app log, when kept.
    pub(super) fn rtapp_log(&mut self, task: usize) -> Option<&mut crate::rtapp_log::RtappLog> {
        let logs = self.rtapp_logs.as_mut()?;
        if logs.len() <= task {
            logs.resize_with(task + 1, Default::default);
        }
        logs.get_mut(task)
    }

    /// Records events from now on (`--trace`).
    pub fn with_trace(mut self) -> Self {
        let mut trace = Trace {
            nr_cpus: self.cpus.len(),
            ..Trace::default()
        };
        // Each CPU's frequency at the start, as Perfetto's frequency track
        // needs a first value.
        if let Some(dvfs) = &self.dvfs {
            for (cpus, domain) in &dvfs.domains {
                for &cpu in cpus {
                    trace.record(
                        0,
                        cpu,
                        Event::CpuFrequency {
                            khz: domain.frequency(),
                        },
                    );
                }
            }
        }
        self.trace = Some(trace);
        // The groups' pools and run queues as the run starts.
        self.trace_bandwidth();
        self
    }

    /// Records `event` on `cpu` now, when tracing.
    pub(super) fn trace_event(&mut self, cpu: usize, event: Event) {
        if self.trace.is_none() {
            return;
        }
        self.trace_tasks_known();
        let now = self.now;
        if let Some(trace) = &mut self.trace {
            trace.record(now, cpu, event);
        }
    }

    /// Tasks forked since the last record join the trace's task list.
    fn trace_tasks_known(&mut self) {
        let Some(trace) = &mut self.trace else { return };
        for task in &self.tasks[trace.tasks.len()..] {
            trace.tasks.push(TaskInfo {
                name: task.name.clone(),
                prio: prio(task.params.policy),
            });
        }
    }

    /// Records the limited groups' bandwidth counters that changed since
    /// they were last recorded (after each event of the run, so a throttle,
    /// an unthrottle, a refill or a grant is recorded at the instant it
    /// happened; values that came and went within one instant leave no
    /// trace, as they lasted no time).
    pub(super) fn trace_bandwidth(&mut self) {
        if self.trace.is_none() {
            return;
        }
        let Some(state) = &self.bandwidth else { return };
        let cores: Vec<&fairway_sched::cpu_core::CpuCore> =
            self.cpus.iter().map(|c| &c.core).collect();
        let counters = state.counters(&cores);
        let now = self.now;
        let Some(trace) = &mut self.trace else { return };
        if trace.groups.is_empty() {
            trace.groups = state.paths();
        }
        for (track, value) in counters {
            if self.traced_bandwidth.insert(track, value) != Some(value) {
                trace.counter(now, track, value);
            }
        }
    }

    /// Records performance domain `domain`'s energy so far, `nanojoules`.
    pub(super) fn trace_energy(&mut self, domain: usize, nanojoules: u64) {
        let now = self.now;
        if let Some(trace) = &mut self.trace {
            trace.counter(now, CounterTrack::DomainEnergy(domain), nanojoules as i64);
        }
    }

    /// Records `cpu`'s signals and those of `task` (on `cpu`) as they were
    /// last updated, as Linux's PELT tracepoints report them at each update.
    pub(super) fn trace_signals(&mut self, cpu: usize, task: Option<usize>) {
        if self.trace.is_none() {
            return;
        }
        self.trace_tasks_known();
        let now = self.now;
        let queue = self.cpus[cpu].core.run_queue();
        let cpu_util = queue.signals().util_avg;
        let capacity = u64::from(self.cpus[cpu].capacity.capacity_orig)
            * u64::from(self.cpus[cpu].capacity.frequency_scale)
            / 1024;
        let task_signals = task.map(|t| (t, queue.task_signals(TaskId(t as u16))));
        let uclamp = [
            queue.uclamp_value(ClampId::Min),
            queue.uclamp_value(ClampId::Max),
        ];
        let overutilized = self.eas.as_ref().map(|eas| eas.overutilized);
        let Some(trace) = &mut self.trace else { return };
        trace.counter(
            now,
            CounterTrack::Cpu(cpu, CpuSignal::UclampMin),
            i64::from(uclamp[0]),
        );
        trace.counter(
            now,
            CounterTrack::Cpu(cpu, CpuSignal::UclampMax),
            i64::from(uclamp[1]),
        );
        if let Some(overutilized) = overutilized {
            trace.counter(now, CounterTrack::Overutilized, i64::from(overutilized));
        }
        trace.counter(
            now,
            CounterTrack::Cpu(cpu, CpuSignal::Util),
            cpu_util as i64,
        );
        trace.counter(
            now,
            CounterTrack::Cpu(cpu, CpuSignal::Capacity),
            capacity as i64,
        );
        if let Some((t, signals)) = task_signals {
            trace.counter(
                now,
                CounterTrack::Task(t, TaskSignal::UtilAvg),
                signals.util_avg as i64,
            );
            trace.counter(
                now,
                CounterTrack::Task(t, TaskSignal::UtilEst),
                signals.util_est as i64,
            );
            trace.counter(
                now,
                CounterTrack::Task(t, TaskSignal::LoadAvg),
                signals.load_avg as i64,
            );
        }
    }
}
