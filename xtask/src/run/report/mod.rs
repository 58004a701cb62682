//! The end-of-run report: the kernel's `report:` lines parsed into a [`Report`],
//! written as JSON (`--report FILE.json`) and as a terminal summary.
//!
//! # Protocol (full reference: `docs/report-format.md`)
//!
//! The kernel prints one defmt `println!` per record; the host sees decoded
//! text, possibly after a timestamp and level. A report line is any line that
//! contains `report: ` at its start or after a space; everything before the
//! marker is ignored, and lines without the marker are ordinary log lines.
//!
//! ```text
//! line   = [prefix " "] "report: " kind *(" " key "=" value)
//! kind   = "run" | "clock" | "cost" | "hist" | "task" | "cpu" | "group" | "metric" | "end"
//! key    = 1*( "a".."z" | "0".."9" | "_" )
//! value  = 1*( any printable ASCII character except space )
//! u64    = 1*DIGIT                      (decimal, no sign, fits in 64 bits)
//! bool   = "0" | "1"
//! cpu    = u64 | "all"
//! name   = 1*( "A".."Z" | "a".."z" | "0".."9" | "_" | "-" | "." | "/" | ":" | "+" )
//! ```
//!
//! | kind     | keys (all required, any order, each once)                          |
//! |----------|--------------------------------------------------------------------|
//! | `run`    | `name` `config` (name), `cpus` (u64), `icount` (bool), `wall_ns`   |
//! | `clock`  | `timer` (name), `timer_hz` (u64), `cycle_counter` (name); at most once per section |
//! | `cost`   | `cpu` (cpu), `op` (name), `count` `min` `p50` `p99` `max` `sum` `overhead` |
//! | `hist`   | (`cpu` (cpu) or `task` (u64)), `op` (name), `buckets`              |
//! | `task`   | `id`, `name`, `cpu`, `runtime_ns`, `wait_ns`, `wakeups`, `lat_p50_ns`, `lat_p99_ns`, `lat_max_ns`, `missed_periods`, `pending_wakeups`, `migrations`, `switches` |
//! | `cpu`    | `id`, `busy_ns`, `idle_ns`, `switches`                             |
//! | `group`  | `path` (name), `quota_us` (u64 or `max`), `period_us`, `burst_us`, `nr_periods`, `nr_throttled`, `throttled_usec`, `nr_bursts`, `burst_usec`, `local_throttled_usec` (comma list, one per CPU) |
//! | `metric` | `name` (name), `value` (u64)                                       |
//! | `end`    | none                                                               |
//!
//! `buckets` is `-` (empty) or comma-separated `index:count` pairs with
//! strictly increasing indices below 64; bucket `k` counts values in
//! `[2^k, 2^(k+1))`, and bucket 0 also holds 0 (`fairway_sched::stats`).
//! A report is one or more sections `run ... end`; every other record belongs
//! to the open section. A `hist` follows the `cost` (same `cpu`, `op`) or
//! `task` (same id, `op=wakeup_latency`) it belongs to, and its counts must add
//! up to that record's `count` (cost) or `wakeups` (task).
//!
//! Cost figures are counter ticks (instructions under icount, cycles
//! otherwise) with the bracket `overhead` already subtracted; quantiles are
//! nearest-rank (`fairway_sched::stats::sampler`).
//!
//! The JSON is built from structs whose field order is fixed and from vectors in
//! line order, so the same transcript always gives byte-identical JSON.

mod json;
mod parse;
#[cfg(test)]
mod round_trip_tests;
mod summary;
#[cfg(test)]
mod tests;

pub use parse::{Group, parse_report};

use std::path::Path;
use std::process::ExitCode;

/// The JSON document's `format` field.
pub const FORMAT: &str = "fairway-report";
/// The version of the line protocol and of the JSON layout.
pub const VERSION: u32 = 1;
/// Log2 histogram buckets, as in `fairway_sched::stats::LOG2_BUCKETS`.
pub const BUCKETS: usize = 64;

/// Every section of a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// The `run ... end` sections, in transcript order.
    pub runs: Vec<Run>,
}

/// One `run ... end` section: one configuration of one benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Benchmark name (`sched-pipe`, `hackbench`, a scenario name).
    pub name: String,
    /// Configuration label (e.g. `depth2-uclamp-on-eevdf`).
    pub config: String,
    /// CPUs booted.
    pub cpus: u64,
    /// QEMU icount mode: the counter reads instructions, figures are deterministic.
    pub icount: bool,
    /// Run time in ns (virtual time under icount).
    pub wall_ns: u64,
    /// The `clock` record: which clocks the figures come from (`None` in
    /// transcripts from before the record existed).
    pub clock: Option<Clock>,
    /// `cost` records with their histograms, in line order.
    pub costs: Vec<Cost>,
    /// `cpu` records, in line order.
    pub cpu_records: Vec<CpuRecord>,
    /// `task` records, in line order.
    pub tasks: Vec<TaskRecord>,
    /// `metric` records, in line order.
    pub metrics: Vec<Metric>,
    /// `group` records, in line order.
    pub groups: Vec<Group>,
}

/// The clocks behind a run's figures (a `clock` record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    /// The time base's counter (`cntpct`: the generic timer's physical count).
    pub timer: String,
    /// Its frequency, CNTFRQ_EL0, in Hz.
    pub timer_hz: u64,
    /// The counter of the cost figures (`pmccntr`, or `none` without a PMU).
    pub cycle_counter: String,
}

/// Which CPU a cost belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CpuScope {
    /// One CPU.
    Cpu(u64),
    /// Every CPU merged (computed by the kernel over the merged samples).
    All,
}

/// The cost of one operation on one CPU (or all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cost {
    /// Which CPU.
    pub cpu: CpuScope,
    /// Operation (`enqueue_task`, `dequeue_task`, `pick_next_task`,
    /// `pelt_update`, `uclamp_update`, `context_switch`, ...).
    pub op: String,
    /// Brackets recorded.
    pub count: u64,
    /// Smallest net cost.
    pub min: u64,
    /// Nearest-rank median.
    pub p50: u64,
    /// Nearest-rank 99th percentile.
    pub p99: u64,
    /// Largest net cost.
    pub max: u64,
    /// Sum of net costs.
    pub sum: u64,
    /// Bracket overhead subtracted from each measurement.
    pub overhead: u64,
    /// Log2 histogram of the net costs, if a `hist` line came.
    pub histogram: Option<Histogram>,
}

/// A log2 histogram: the non-empty buckets, `(index, count)`, ascending.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Histogram {
    /// Non-empty buckets as `(index, count)`.
    pub buckets: Vec<(u32, u64)>,
}

impl Histogram {
    /// The sum of the counts.
    pub fn total(&self) -> u64 {
        self.buckets
            .iter()
            .fold(0u64, |total, &(_, count)| total.saturating_add(count))
    }

    /// The inclusive value range of bucket `index`: `[2^k, 2^(k+1) - 1]`, and
    /// `[0, 1]` for bucket 0.
    pub fn range(index: u32) -> (u64, u64) {
        let low = if index == 0 { 0 } else { 1u64 << index };
        let high = if index >= 63 {
            u64::MAX
        } else {
            (1u64 << (index + 1)) - 1
        };
        (low, high)
    }
}

/// Per-task results of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// Task id.
    pub id: u64,
    /// Task name.
    pub name: String,
    /// The CPU the task last ran on.
    pub cpu: u64,
    /// Time spent running.
    pub runtime_ns: u64,
    /// Time spent runnable but not running.
    pub wait_ns: u64,
    /// Wake-ups (each gives one latency sample).
    pub wakeups: u64,
    /// Wake-up-to-run latency, nearest-rank median.
    pub lat_p50_ns: u64,
    /// Wake-up-to-run latency, nearest-rank 99th percentile.
    pub lat_p99_ns: u64,
    /// Wake-up-to-run latency, maximum.
    pub lat_max_ns: u64,
    /// Periods (of a periodic rt-app task) whose work did not finish in time.
    pub missed_periods: u64,
    /// Wake-ups made but not yet run when the run ended (0 or 1).
    pub pending_wakeups: u64,
    /// Moves to another CPU.
    pub migrations: u64,
    /// Times switched in.
    pub switches: u64,
    /// Wake-up latency histogram, if a `hist` line came.
    pub latency_histogram: Option<Histogram>,
}

/// Per-CPU results of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuRecord {
    /// CPU id.
    pub id: u64,
    /// Time running tasks.
    pub busy_ns: u64,
    /// Time idle.
    pub idle_ns: u64,
    /// Context switches.
    pub switches: u64,
}

/// A named figure of merit (e.g. `ops_per_second`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metric {
    /// Name, with its unit in it (`ops_per_second`, `energy_uj`).
    pub name: String,
    /// Value.
    pub value: u64,
}

/// One operation's cost over every CPU of a run: exact count, min, max and sum;
/// merged histogram; quantiles only where they are exact (a `cpu=all` record,
/// or a single CPU recording the operation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpAggregate {
    /// Operation.
    pub op: String,
    /// CPUs that recorded it.
    pub cpus: u64,
    /// Brackets recorded.
    pub count: u64,
    /// Smallest net cost.
    pub min: u64,
    /// Nearest-rank median, if exact.
    pub p50: Option<u64>,
    /// Nearest-rank 99th percentile, if exact.
    pub p99: Option<u64>,
    /// Largest net cost.
    pub max: u64,
    /// Sum of net costs.
    pub sum: u64,
    /// Merged log2 histogram (`None` if some CPU sent no `hist`).
    pub histogram: Option<Histogram>,
}

impl Run {
    /// The counter unit of the cost figures.
    pub fn counter_unit(&self) -> &'static str {
        if self.icount {
            "instructions"
        } else {
            "cycles"
        }
    }

    /// Per-operation totals over the CPUs, in order of first appearance.
    pub fn cost_by_op(&self) -> Vec<OpAggregate> {
        let mut ops: Vec<&str> = Vec::new();
        for cost in &self.costs {
            if !ops.contains(&cost.op.as_str()) {
                ops.push(&cost.op);
            }
        }
        ops.into_iter()
            .map(|op| {
                let of_op = || self.costs.iter().filter(move |c| c.op == op);
                if let Some(all) = of_op().find(|c| c.cpu == CpuScope::All) {
                    let cpus = of_op().filter(|c| c.cpu != CpuScope::All).count() as u64;
                    return OpAggregate {
                        op: op.to_string(),
                        cpus,
                        count: all.count,
                        min: all.min,
                        p50: Some(all.p50),
                        p99: Some(all.p99),
                        max: all.max,
                        sum: all.sum,
                        histogram: all.histogram.clone(),
                    };
                }
                let recorded: Vec<&Cost> = of_op().filter(|c| c.count > 0).collect();
                let single = (recorded.len() == 1).then(|| recorded[0]);
                let mut merged = [0u64; BUCKETS];
                let mut complete = true;
                for cost in of_op() {
                    match &cost.histogram {
                        Some(histogram) => {
                            for &(index, count) in &histogram.buckets {
                                let slot = &mut merged[index as usize];
                                *slot = slot.saturating_add(count);
                            }
                        }
                        None => complete = false,
                    }
                }
                OpAggregate {
                    op: op.to_string(),
                    cpus: of_op().count() as u64,
                    count: of_op().fold(0u64, |t, c| t.saturating_add(c.count)),
                    min: recorded.iter().map(|c| c.min).min().unwrap_or(0),
                    p50: single.map(|c| c.p50).or(recorded.is_empty().then_some(0)),
                    p99: single.map(|c| c.p99).or(recorded.is_empty().then_some(0)),
                    max: recorded.iter().map(|c| c.max).max().unwrap_or(0),
                    sum: of_op().fold(0u64, |t, c| t.saturating_add(c.sum)),
                    histogram: complete.then(|| Histogram {
                        buckets: (0..BUCKETS as u32)
                            .filter(|&i| merged[i as usize] != 0)
                            .map(|i| (i, merged[i as usize]))
                            .collect(),
                    }),
                }
            })
            .collect()
    }
}

/// After a boot: prints the summary of the transcript's report records (if
/// any) and writes the JSON to `json` when asked. Asking for JSON from a
/// transcript without records is an error, so a broken run cannot leave an
/// empty report behind.
pub fn emit(lines: &[String], json: Option<&Path>) -> Result<(), String> {
    let report = parse_report(lines).map_err(|e| format!("report: {e}"))?;
    if !report.runs.is_empty() {
        print!("{}", report.summary());
    }
    if let Some(path) = json {
        if report.runs.is_empty() {
            return Err(format!(
                "--report {}: the kernel printed no report records",
                path.display()
            ));
        }
        std::fs::write(path, report.to_json())
            .map_err(|e| format!("--report {}: {e}", path.display()))?;
        eprintln!("xtask: report written to {}", path.display());
    }
    Ok(())
}

/// `cargo xtask report TRANSCRIPT [--json FILE]`: re-reads a saved, decoded
/// transcript (e.g. `cargo run > log.txt`), prints the summary and optionally
/// writes the JSON.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let (transcript, rest) = args
        .split_first()
        .ok_or("report needs a transcript file: report TRANSCRIPT [--json FILE]")?;
    let json = match rest {
        [] => None,
        [flag, path] if flag == "--json" => Some(Path::new(path)),
        _ => return Err("usage: report TRANSCRIPT [--json FILE]".into()),
    };
    let text = std::fs::read_to_string(transcript).map_err(|e| format!("{transcript}: {e}"))?;
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    emit(&lines, json)?;
    Ok(ExitCode::SUCCESS)
}
