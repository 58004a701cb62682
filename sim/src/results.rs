//! Per-task and per-CPU results of a run, the context-switch trace, and their JSON/CSV forms.

use std::io::{self, Write};

use serde_json::{Value, json};

/// One context switch on one CPU (`prev`/`next` are task indices; `None` is the idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// Virtual time in ns.
    pub time_ns: u64,
    /// The CPU.
    pub cpu: usize,
    /// The task switched out.
    pub previous: Option<usize>,
    /// The task switched in.
    pub next: Option<usize>,
}

/// Wake-up latency percentiles (nearest-rank) over all wake-ups of a task, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    /// How many wake-ups (the first start included) were measured.
    pub count: usize,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Maximum.
    pub max: u64,
}

/// The nearest-rank percentile `p` (0 < p <= 100) of sorted `values`.
pub fn nearest_rank(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p as usize * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// What one task did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskResult {
    /// The task's name (`name-i` for instance i of a multi-instance task).
    pub name: String,
    /// Time on a CPU, in ns.
    pub runtime_ns: u64,
    /// Time runnable but waiting for its CPU, in ns.
    pub wait_ns: u64,
    /// Each wake-up's latency, from the wake-up to the switch-in (a start is
    /// no wake-up, nor is a timer event reached after its expiry: docs/report-format.md,
    /// "Overruns").
    pub wakeup_latency: Latency,
    /// Timer events reached after their period boundary (rt-app's negative slack).
    pub missed_periods: u64,
    /// Wake-ups made but not yet run when the run ended (0 or 1): woken, waiting
    /// for a CPU; in neither the latencies nor `missed_periods`
    /// (docs/report-format.md, `pending_wakeups`).
    pub pending_wakeups: u64,
    /// Changes of CPU.
    pub migrations: u64,
    /// The CPUs it ran on, one bit each (CPU n is bit n; at most 64 CPUs).
    pub cpus_run_on: u64,
    /// Switches out because it slept or exited (Linux's `nvcsw`).
    pub voluntary_switches: u64,
    /// Switches out while still runnable (Linux's `nivcsw`).
    pub involuntary_switches: u64,
    /// Whether its program ended before the run did.
    pub finished: bool,
    /// When its program ended, in ns (`None`: it had not when the run ended).
    pub finished_at_ns: Option<u64>,
    /// Its task group (path, shares) as the scenario gives it (its first phase's).
    pub taskgroup: Option<(String, i64)>,
}

impl TaskResult {
    /// Fills [`TaskResult::wakeup_latency`] from the measured latencies.
    pub fn set_latencies(&mut self, latencies: &mut [u64]) {
        latencies.sort_unstable();
        self.wakeup_latency = Latency {
            count: latencies.len(),
            p50: nearest_rank(latencies, 50),
            p99: nearest_rank(latencies, 99),
            max: latencies.last().copied().unwrap_or(0),
        };
    }

    /// The CPUs it ran on, in order.
    pub fn cpus(&self) -> Vec<usize> {
        (0..64)
            .filter(|cpu| self.cpus_run_on & (1 << cpu) != 0)
            .collect()
    }

    /// The CPUs it ran on as a list with ranges (`0,3-5`; `-` if none).
    pub fn cpu_list(&self) -> String {
        let cpus = self.cpus();
        let mut parts: Vec<String> = Vec::new();
        let mut index = 0;
        while index < cpus.len() {
            let first = cpus[index];
            let mut last = first;
            while index + 1 < cpus.len() && cpus[index + 1] == last + 1 {
                index += 1;
                last = cpus[index];
            }
            parts.push(if first == last {
                first.to_string()
            } else {
                format!("{first}-{last}")
            });
            index += 1;
        }
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join(",")
        }
    }

    /// Voluntary plus involuntary switches.
    pub fn context_switches(&self) -> u64 {
        self.voluntary_switches + self.involuntary_switches
    }
}

/// What one CPU did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuResult {
    /// The CPU's number.
    pub cpu: usize,
    /// Its `capacity_orig`.
    pub capacity_orig: u32,
    /// Its frequency scale.
    pub frequency_scale: u32,
    /// Time running a task, in ns.
    pub busy_ns: u64,
    /// Time idle, in ns.
    pub idle_ns: u64,
    /// Switches to a different task (idle included), as Linux's `nr_switches`.
    pub context_switches: u64,
}

/// A limited task group's `cpu.max` and `cpu.stat` (§4.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupResult {
    /// The group's path.
    pub path: String,
    /// Its quota per period at the end (`None`: no limit), in ns.
    pub quota_ns: Option<u64>,
    /// Its period at the end (it doubles when too short), in ns.
    pub period_ns: u64,
    /// Its burst, in ns.
    pub burst_ns: u64,
    /// `nr_periods`, `nr_throttled`, `throttled_usec`, `nr_bursts`, `burst_usec`.
    pub stats: fairway_sched::bandwidth::pool::BandwidthStats,
    /// `cpu.stat.local`'s `throttled_usec` per CPU, in ns.
    pub local_throttled_ns: Vec<u64>,
    /// When its period timer fired, in ns: the refills (for checks; not in
    /// the JSON).
    pub period_timer_ns: Vec<u64>,
}

/// Everything a run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Results {
    /// The policy name.
    pub policy: String,
    /// The tick period in ns.
    pub tick_ns: u64,
    /// When the run ended (duration reached or every task finished), in ns.
    pub end_ns: u64,
    /// Per CPU, by number.
    pub cpus: Vec<CpuResult>,
    /// Per task, in scenario order.
    pub tasks: Vec<TaskResult>,
    /// Per limited task group, by path.
    pub groups: Vec<GroupResult>,
    /// Every context switch, in order.
    pub switches: Vec<Switch>,
    /// Per performance domain, with a board (`--board`): the energy meter.
    pub energy: Vec<crate::engine::DomainEnergy>,
    /// The recorded events, with `--trace`.
    pub trace: Option<fairway_trace::Trace>,
    /// rt-app's log rows, by task, with `--rtapp-logs`.
    pub rtapp_logs: Option<Vec<Vec<crate::rtapp_log::RtappLogRow>>>,
    /// The picks `--explain` explained: the candidates and the task chosen.
    pub explained_picks: Vec<crate::engine::explain::ExplainedPick>,
    /// The round-robin picks `--explain` explained: the candidates in FIFO
    /// order and the task chosen.
    pub explained_rr_picks: Vec<crate::engine::explain::ExplainedRrPick>,
    /// The picks of a registered policy `--explain` explained: the
    /// policy's notes on its candidates and the task chosen.
    pub explained_policy_picks: Vec<crate::engine::explain::ExplainedPolicyPick>,
    /// The wake-ups `--explain` explained under EAS, with the energy
    /// estimates `find_energy_efficient_cpu` made.
    pub explained_wakes: Vec<crate::engine::explain::ExplainedWake>,
    /// The throttles and unthrottles `--explain` explained, with when.
    pub explained_throttles: Vec<(u64, fairway_trace::explain::ThrottleView)>,
}

impl Results {
    fn task_name(&self, task: Option<usize>) -> &str {
        task.map_or("idle", |t| self.tasks[t].name.as_str())
    }

    /// Every switch as `(time_ns, cpu, next task's name)` (`None`: idle),
    /// the form `judge::stretches` reads, as the kernel's trace gives it.
    pub fn named_switches(&self) -> Vec<(u64, usize, Option<String>)> {
        self.switches
            .iter()
            .map(|s| (s.time_ns, s.cpu, s.next.map(|t| self.tasks[t].name.clone())))
            .collect()
    }

    /// The results as JSON (keys in a fixed order), with the first `switch_limit` switches.
    pub fn to_json(&self, switch_limit: usize) -> Value {
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "runtime_ns": t.runtime_ns,
                    "wait_ns": t.wait_ns,
                    "wakeup_latency_ns": {
                        "count": t.wakeup_latency.count,
                        "p50": t.wakeup_latency.p50,
                        "p99": t.wakeup_latency.p99,
                        "max": t.wakeup_latency.max,
                    },
                    "missed_periods": t.missed_periods,
                    "pending_wakeups": t.pending_wakeups,
                    "migrations": t.migrations,
                    "cpus": t.cpus(),
                    "context_switches": t.context_switches(),
                    "voluntary_switches": t.voluntary_switches,
                    "involuntary_switches": t.involuntary_switches,
                    "finished": t.finished,
                    "finished_at_ns": t.finished_at_ns,
                    "taskgroup": t.taskgroup.as_ref().map(|(path, shares)| json!({
                        "path": path,
                        "shares": shares,
                    })),
                })
            })
            .collect();
        let cpus: Vec<Value> = self
            .cpus
            .iter()
            .map(|c| {
                json!({
                    "cpu": c.cpu,
                    "capacity_orig": c.capacity_orig,
                    "frequency_scale": c.frequency_scale,
                    "busy_ns": c.busy_ns,
                    "idle_ns": c.idle_ns,
                    "context_switches": c.context_switches,
                })
            })
            .collect();
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|g| {
                let local: Vec<u64> = g.local_throttled_ns.iter().map(|ns| ns / 1000).collect();
                json!({
                    "path": g.path,
                    "quota_us": g.quota_ns.map(|q| q / 1000),
                    "period_us": g.period_ns / 1000,
                    "burst_us": g.burst_ns / 1000,
                    "nr_periods": g.stats.nr_periods,
                    "nr_throttled": g.stats.nr_throttled,
                    "throttled_usec": g.stats.throttled_time / 1000,
                    "nr_bursts": g.stats.nr_bursts,
                    "burst_usec": g.stats.burst_time / 1000,
                    "local_throttled_usec": local,
                })
            })
            .collect();
        let switches: Vec<Value> = self
            .switches
            .iter()
            .take(switch_limit)
            .map(|s| {
                json!({
                    "time_ns": s.time_ns,
                    "cpu": s.cpu,
                    "prev": self.task_name(s.previous),
                    "next": self.task_name(s.next),
                })
            })
            .collect();
        let energy: Vec<Value> = self
            .energy
            .iter()
            .map(|d| {
                json!({
                    "cpus": d.cpus,
                    "energy_nj": d.energy_nj,
                    "governor_calls": d.governor_calls,
                    "freq_changes": d.changes,
                    "freq_spikes": d.spikes,
                    "residency_us": d
                        .residency
                        .iter()
                        .filter(|(_, ns)| *ns > 0)
                        .map(|(khz, ns)| json!({"mhz": khz / 1000, "us": ns / 1000}))
                        .collect::<Vec<Value>>(),
                })
            })
            .collect();
        json!({
            "policy": self.policy,
            "tick_ns": self.tick_ns,
            "end_ns": self.end_ns,
            "tasks": tasks,
            "cpus": cpus,
            "groups": groups,
            "energy": energy,
            "switch_count": self.switches.len(),
            "switches": switches,
        })
    }

    /// Writes the switch trace as CSV: `time_ns,cpu,prev,next`.
    pub fn write_switches(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "time_ns,cpu,prev,next")?;
        for s in &self.switches {
            writeln!(
                out,
                "{},{},{},{}",
                s.time_ns,
                s.cpu,
                crate::csv_field(self.task_name(s.previous)),
                crate::csv_field(self.task_name(s.next))
            )?;
        }
        Ok(())
    }

    /// A short human-readable summary.
    pub fn write_summary(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "policy {}  end {} ns  tick {} ns",
            self.policy, self.end_ns, self.tick_ns
        )?;
        writeln!(
            out,
            "{:<20} {:>14} {:>14} {:>12} {:>12} {:>12} {:>7} {:>7} {:>6} {:>8}  cpus",
            "task",
            "runtime_ns",
            "wait_ns",
            "lat_p50",
            "lat_p99",
            "lat_max",
            "missed",
            "pending",
            "migr",
            "switches"
        )?;
        for t in &self.tasks {
            writeln!(
                out,
                "{:<20} {:>14} {:>14} {:>12} {:>12} {:>12} {:>7} {:>7} {:>6} {:>8}  {}",
                t.name,
                t.runtime_ns,
                t.wait_ns,
                t.wakeup_latency.p50,
                t.wakeup_latency.p99,
                t.wakeup_latency.max,
                t.missed_periods,
                t.pending_wakeups,
                t.migrations,
                t.context_switches(),
                t.cpu_list()
            )?;
        }
        writeln!(
            out,
            "{:<6} {:>8} {:>14} {:>14} {:>8}",
            "cpu", "capacity", "busy_ns", "idle_ns", "switches"
        )?;
        for c in &self.cpus {
            writeln!(
                out,
                "{:<6} {:>8} {:>14} {:>14} {:>8}",
                c.cpu, c.capacity_orig, c.busy_ns, c.idle_ns, c.context_switches
            )?;
        }
        for (index, d) in self.energy.iter().enumerate() {
            let used: Vec<String> = d
                .residency
                .iter()
                .filter(|(_, ns)| *ns > 0)
                .map(|(khz, ns)| format!("{} MHz {} us", khz / 1000, ns / 1000))
                .collect();
            writeln!(
                out,
                "perf domain {index} (cpus {:?}): energy {} nJ, {} governor calls, {} changes; {}",
                d.cpus,
                d.energy_nj,
                d.governor_calls,
                d.changes,
                used.join(", ")
            )?;
        }
        if !self.groups.is_empty() {
            writeln!(
                out,
                "{:<20} {:>14} {:>10} {:>12} {:>16} {:>9} {:>12}",
                "group",
                "cpu.max",
                "nr_periods",
                "nr_throttled",
                "throttled_usec",
                "nr_bursts",
                "burst_usec"
            )?;
            for g in &self.groups {
                let max = match g.quota_ns {
                    Some(quota) => format!("{} {}", quota / 1000, g.period_ns / 1000),
                    None => format!("max {}", g.period_ns / 1000),
                };
                writeln!(
                    out,
                    "{:<20} {:>14} {:>10} {:>12} {:>16} {:>9} {:>12}",
                    g.path,
                    max,
                    g.stats.nr_periods,
                    g.stats.nr_throttled,
                    g.stats.throttled_time / 1000,
                    g.stats.nr_bursts,
                    g.stats.burst_time / 1000
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        // Nearest-rank: the value at rank ceil(p/100 * n).
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&values, 50), 50);
        assert_eq!(nearest_rank(&values, 99), 99);
        assert_eq!(nearest_rank(&values, 100), 100);
        assert_eq!(nearest_rank(&[7], 50), 7);
        assert_eq!(nearest_rank(&[1, 2, 3, 4, 5], 50), 3);
        assert_eq!(nearest_rank(&[], 99), 0);
    }
}
