//! Printing a run's results as `report:` lines (`docs/report-format.md`), with
//! the writers of `fairway_contract::report`; the host turns them into a
//! summary and a JSON report.

use core::fmt::Write;
use core::sync::atomic::Ordering;

use fairway_contract::report::{
    ClockLine, CostLine, CpuLine, CpuScope, EndLine, GroupLine, HistogramLine, HistogramOwner,
    MetricLine, RunLine, TaskLine,
};
use fairway_sched::stats::{Log2Histogram, Summary, merged_summary};
use fairway_sched::task::CpuId;
use heapless::String;

use crate::boot_options;
use crate::observe::costs::{self, OPS};
use crate::platform::percpu;
use crate::tasks::{TaskId, idle_task_id, task};

fn print_line(record: impl core::fmt::Display) {
    let mut line: String<2048> = String::new();
    if write!(line, "{record}").is_ok() {
        defmt::println!("{=str}", line.as_str());
    } else {
        defmt::error!("report: line longer than 2048 bytes dropped");
    }
}

/// The extra figures of a run, e.g. `("ops_per_second", n)`, and the
/// missed periods of each task where the workload counts them.
pub struct RunResults<'a> {
    /// Benchmark name.
    pub name: &'a str,
    /// Configuration label.
    pub config: &'a str,
    /// Length of the run in ns.
    pub wall_ns: u64,
    /// The tasks to report, with their missed periods.
    pub tasks: &'a [(TaskId, u64)],
    /// Figures of merit.
    pub metrics: &'a [(&'a str, u64)],
    /// The limited task groups' `cpu.max` and `cpu.stat` (§4.3), by path.
    pub groups: &'a [(
        alloc::string::String,
        crate::scheduling::bandwidth::GroupStats,
    )],
    /// The counters at the run's start and end, when the workload took them: the
    /// figures then cover the run alone, not the boot before it or the printing
    /// after it. `None`: counted from boot to the printing.
    pub window: Option<&'a RunWindow>,
}

/// A task's counters at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskCounters {
    /// `sum_exec_runtime`.
    pub runtime_ns: u64,
    /// Time spent runnable, waiting for the CPU.
    pub wait_ns: u64,
    /// Migrations.
    pub migrations: u64,
    /// Switches in.
    pub switches: u64,
    /// Wake-ups made but not yet run (0 or 1; `docs/report-format.md`).
    pub pending_wakeups: u64,
}

impl TaskCounters {
    /// Task `id`'s counters at `now`, each stretch under way counted to `now`: the
    /// runtime of a running task, and the wait of a runnable one, as the simulator
    /// counts them at a run's end (a starved task's wait is most of its run).
    fn of(id: TaskId, now: u64) -> Self {
        let slot = task(id);
        let cpu = slot.cpu();
        let current = percpu::of(cpu).current_task.load(Ordering::Relaxed) == id.0;
        // Woken (by `activate`) and not yet switched in; or on another CPU's
        // wake list, woken but not yet activated.
        let woken = slot.woken_at.load(Ordering::Relaxed) != 0;
        let on_wake_list = slot.state() == crate::tasks::TaskState::Running
            && !slot.on_rq.load(Ordering::Relaxed)
            && !current;
        let waiting = slot.on_rq.load(Ordering::Relaxed) && !current;
        let wait_under_way = if waiting {
            now.saturating_sub(slot.wait_start.load(Ordering::Relaxed))
        } else {
            0
        };
        TaskCounters {
            runtime_ns: crate::tasks::runtime_ns_on(id, cpu, now),
            wait_ns: slot.wait_total.load(Ordering::Relaxed) + wait_under_way,
            migrations: slot.migrations.load(Ordering::Relaxed),
            switches: slot.switches_in.load(Ordering::Relaxed),
            pending_wakeups: u64::from(woken || on_wake_list),
        }
    }
}

/// Each CPU's idle time and switch count at one instant.
#[derive(Clone, Debug)]
pub struct CpuCounters {
    /// When.
    pub at_ns: u64,
    /// `(idle_ns, context_switches)` per online CPU.
    pub cpus: alloc::vec::Vec<(u64, u64)>,
}

impl CpuCounters {
    /// The counters now.
    pub fn now() -> Self {
        Self::at(crate::now_ns())
    }

    /// The counters at `now` (a CPU's stretch under way counted to `now`).
    pub fn at(now: u64) -> Self {
        CpuCounters {
            at_ns: now,
            cpus: (0..percpu::nr_online())
                .map(|cpu| {
                    (
                        crate::tasks::runtime_ns_on(idle_task_id(cpu), cpu, now),
                        percpu::of(cpu).context_switches.load(Ordering::Relaxed),
                    )
                })
                .collect(),
        }
    }
}

/// A task's wake-up latency statistics, taken out of its slot.
type Latencies = Option<alloc::boxed::Box<fairway_sched::stats::LatencyStats>>;

/// The counters a run's figures are taken between.
#[derive(Debug)]
pub struct RunWindow {
    /// At the start.
    pub start: CpuCounters,
    /// At the end.
    pub end: CpuCounters,
    /// The reported tasks' counters at the end (they started at the start, at 0),
    /// in the order of [`RunResults::tasks`].
    pub tasks: alloc::vec::Vec<TaskCounters>,
    /// The reported tasks' wake-up latencies, taken out of their slots at the
    /// end, in the same order: a task switched in after the end (its wake-up was
    /// pending, `pending_wakeups`) records nothing more, so `wakeups` and the
    /// latencies cover the run, as the simulator's do.
    latencies: spin::Mutex<alloc::vec::Vec<Latencies>>,
}

impl RunWindow {
    /// Ends the window at `now`, the run's end: the CPUs' and `tasks'`
    /// counters, each stretch under way counted to `now`, so that the
    /// figures cover the run's time (`wall_ns`) and a trace's switches up to
    /// `now` account for them.
    pub fn close(start: CpuCounters, tasks: &[(TaskId, u64)], now: u64) -> Self {
        let end = CpuCounters::at(now);
        RunWindow {
            tasks: tasks
                .iter()
                .map(|&(id, _)| TaskCounters::of(id, end.at_ns))
                .collect(),
            latencies: spin::Mutex::new(
                tasks
                    .iter()
                    .map(|&(id, _)| task(id).latency.lock().take())
                    .collect(),
            ),
            end,
            start,
        }
    }
}

/// A configuration label from the boot options: scheduler, HZ, uclamp, and
/// `extra` (e.g. `depth2`).
pub fn config_label(extra: &str) -> String<96> {
    let system = crate::system();
    let mut label = String::new();
    let _ = write!(
        label,
        "{}-hz{}-uclamp{}",
        system.options.sched.policy.name(),
        system.options.sched.hz,
        if crate::scheduling::uclamp_enabled() {
            "on"
        } else {
            "off"
        }
    );
    if !extra.is_empty() {
        let _ = write!(label, "-{extra}");
    }
    label
}

/// Prints one `run ... end` section.
pub fn print(results: &RunResults<'_>) {
    let cpus = percpu::nr_online();
    print_line(RunLine {
        name: results.name,
        config: results.config,
        cpus: cpus as u16,
        icount: boot_options().icount,
        wall_ns: results.wall_ns,
    });
    print_line(ClockLine {
        timer: "cntpct",
        timer_hz: crate::arch::timer::frequency(),
        cycle_counter: if crate::arch::pmu::cycle_counter_available() {
            "pmccntr"
        } else {
            "none"
        },
    });
    if costs::ENABLED {
        print_costs(cpus);
    }
    let end = results
        .window
        .map_or_else(CpuCounters::now, |window| window.end.clone());
    let start = results.window.map(|window| &window.start);
    for cpu in 0..cpus {
        let (idle_end, switches_end) = end.cpus.get(cpu).copied().unwrap_or_default();
        let (since, idle_start, switches_start) = match start {
            Some(start) => {
                let (idle, switches) = start.cpus.get(cpu).copied().unwrap_or_default();
                (start.at_ns, idle, switches)
            }
            None => (0, 0, 0),
        };
        let idle = idle_end.saturating_sub(idle_start);
        print_line(CpuLine {
            id: CpuId(cpu as u16),
            busy_ns: end.at_ns.saturating_sub(since).saturating_sub(idle),
            idle_ns: idle,
            switches: switches_end.saturating_sub(switches_start),
        });
    }
    for (index, &(id, missed_periods)) in results.tasks.iter().enumerate() {
        let slot = task(id);
        let counters = results
            .window
            .and_then(|window| window.tasks.get(index).copied())
            .unwrap_or_else(|| TaskCounters::of(id, crate::now_ns()));
        // The window's latencies when it took them; else the slot's, now.
        let mut window_latencies = results.window.map(|window| window.latencies.lock());
        let mut slot_latency = slot.latency.lock();
        let latency = match window_latencies.as_mut() {
            Some(latencies) => latencies.get_mut(index).and_then(Option::as_mut),
            None => slot_latency.as_mut(),
        };
        let Some(stats) = latency else {
            continue;
        };
        let summary = stats.summary();
        print_line(TaskLine {
            id,
            name: slot.name().as_str(),
            cpu: CpuId(slot.cpu() as u16),
            runtime_ns: counters.runtime_ns,
            wait_ns: counters.wait_ns,
            latency: &summary,
            missed_periods,
            pending_wakeups: counters.pending_wakeups,
            migrations: counters.migrations,
            switches: counters.switches,
        });
        if summary.count > 0 {
            print_line(HistogramLine {
                owner: HistogramOwner::Task(id),
                op: "wakeup_latency",
                histogram: &stats.histogram,
            });
        }
    }
    for (path, group) in results.groups {
        let local: alloc::vec::Vec<u64> = group
            .local_throttled_ns
            .iter()
            .map(|ns| ns / 1000)
            .collect();
        print_line(GroupLine {
            path: path.as_str(),
            quota_us: group.settings.quota.map(|quota| quota / 1000),
            period_us: group.settings.period / 1000,
            burst_us: group.settings.burst / 1000,
            nr_periods: group.stats.nr_periods,
            nr_throttled: group.stats.nr_throttled,
            throttled_usec: group.stats.throttled_time / 1000,
            nr_bursts: group.stats.nr_bursts,
            burst_usec: group.stats.burst_time / 1000,
            local_throttled_usec: &local,
        });
    }
    for &(name, value) in results.metrics {
        print_line(MetricLine { name, value });
    }
    print_line(EndLine);
}

fn print_costs(cpus: usize) {
    for (index, op) in OPS.iter().enumerate() {
        // One consistent snapshot per CPU (the other CPUs keep scheduling).
        let mut snapshots = alloc::vec::Vec::new();
        for cpu in 0..cpus {
            costs::with_costs(cpu, |costs| {
                let stats = &costs.ops[index];
                snapshots.push((
                    cpu,
                    costs.overhead_of(*op),
                    stats.histogram.clone(),
                    stats.sampler.clone(),
                ));
            });
        }
        let mut merged = Log2Histogram::new();
        let mut overhead = u64::MAX;
        for (cpu, own_overhead, histogram, sampler) in snapshots.iter_mut() {
            let summary: Summary = sampler.summary();
            if summary.count == 0 {
                continue;
            }
            overhead = overhead.min(*own_overhead);
            merged.merge(histogram);
            let scope = CpuScope::Cpu(CpuId(*cpu as u16));
            print_line(CostLine {
                cpu: scope,
                op: op.name(),
                summary: &summary,
                overhead: *own_overhead,
            });
            print_line(HistogramLine {
                owner: HistogramOwner::Cost(scope),
                op: op.name(),
                histogram,
            });
        }
        if merged.total() == 0 {
            continue;
        }
        let references: alloc::vec::Vec<_> = snapshots.iter().map(|s| &s.3).collect();
        let summary = merged_summary(&references);
        print_line(CostLine {
            cpu: CpuScope::All,
            op: op.name(),
            summary: &summary,
            overhead,
        });
        print_line(HistogramLine {
            owner: HistogramOwner::Cost(CpuScope::All),
            op: op.name(),
            histogram: &merged,
        });
    }
}
