//! The terminal summary of a [`Report`]: aligned tables per run (costs, CPUs,
//! tasks, task groups, metrics), log2 histogram bar charts, and a cost-by-configuration
//! table when the transcript holds several runs.

use std::fmt::Write;

use super::{CpuScope, Histogram, Report, Run};

/// Width of the longest histogram bar, in characters.
const BAR_WIDTH: u64 = 40;

/// Renders rows under headers; numeric cells (and `-`) align right.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let numeric = |cell: &str| cell == "-" || cell.bytes().all(|b| b.is_ascii_digit());
    let mut text = String::new();
    let mut line = |cells: Vec<&str>, header: bool| {
        let rendered: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &width)| {
                if !header && numeric(cell) {
                    format!("{cell:>width$}")
                } else {
                    format!("{cell:<width$}")
                }
            })
            .collect();
        let _ = writeln!(text, "  {}", rendered.join("  ").trim_end());
    };
    line(headers.to_vec(), true);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), false);
    }
    text
}

fn optional(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn cpu_label(cpu: CpuScope) -> String {
    match cpu {
        CpuScope::Cpu(cpu) => cpu.to_string(),
        CpuScope::All => "all".into(),
    }
}

/// An ASCII bar chart of a log2 histogram, one line per non-empty bucket,
/// bars scaled to the fullest bucket (any non-empty bucket gets one `#`).
fn bars(title: &str, histogram: &Histogram) -> String {
    let mut text = format!("  {title}\n");
    let fullest = histogram.buckets.iter().map(|&(_, c)| c).max().unwrap_or(0);
    let rows: Vec<(String, u64)> = histogram
        .buckets
        .iter()
        .map(|&(index, count)| {
            let (low, high) = Histogram::range(index);
            (format!("[{low}, {high}]"), count)
        })
        .collect();
    let range_width = rows.iter().map(|(r, _)| r.len()).max().unwrap_or(0);
    let count_width = rows
        .iter()
        .map(|(_, c)| c.to_string().len())
        .max()
        .unwrap_or(0);
    for (range, count) in rows {
        let length = if count == 0 {
            0
        } else {
            (u128::from(count) * u128::from(BAR_WIDTH) / u128::from(fullest)).max(1) as usize
        };
        let _ = writeln!(
            text,
            "    {range:<range_width$} {count:>count_width$} {}",
            "#".repeat(length)
        );
    }
    text
}

/// One run's summary: its header line, then each table it has records for.
fn run_summary(run: &Run) -> String {
    let mut text = format!(
        "run {}  config {}  cpus {}  {}  wall {} ns\n",
        run.name,
        run.config,
        run.cpus,
        if run.icount { "icount" } else { "no icount" },
        run.wall_ns
    );
    if !run.costs.is_empty() {
        text.push_str(&costs_summary(run));
    }
    if !run.cpu_records.is_empty() {
        text.push_str(&cpus_summary(run));
    }
    if !run.tasks.is_empty() {
        text.push_str(&tasks_summary(run));
    }
    if !run.groups.is_empty() {
        text.push_str(&groups_summary(run));
    }
    if !run.metrics.is_empty() {
        text.push_str(&metrics_summary(run));
    }
    text
}

/// The cost tables: per operation and CPU, per operation over all CPUs
/// (when there are several), and each operation's histogram.
fn costs_summary(run: &Run) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "\n cost per operation ({}, bracket overhead subtracted; quantiles nearest-rank)",
        run.counter_unit()
    );
    let rows: Vec<Vec<String>> = run
        .costs
        .iter()
        .map(|c| {
            vec![
                cpu_label(c.cpu),
                c.op.clone(),
                c.count.to_string(),
                c.min.to_string(),
                c.p50.to_string(),
                c.p99.to_string(),
                c.max.to_string(),
                c.overhead.to_string(),
            ]
        })
        .collect();
    let headers = ["cpu", "op", "count", "min", "p50", "p99", "max", "overhead"];
    text.push_str(&table(&headers, &rows));
    let by_op = run.cost_by_op();
    let multi_cpu = run.costs.iter().any(|c| c.cpu != CpuScope::Cpu(0));
    if multi_cpu {
        text.push_str("\n cost per operation, all CPUs\n");
        let rows: Vec<Vec<String>> = by_op
            .iter()
            .map(|a| {
                vec![
                    a.op.clone(),
                    a.cpus.to_string(),
                    a.count.to_string(),
                    a.min.to_string(),
                    optional(a.p50),
                    optional(a.p99),
                    a.max.to_string(),
                ]
            })
            .collect();
        let headers = ["op", "cpus", "count", "min", "p50", "p99", "max"];
        text.push_str(&table(&headers, &rows));
    }
    for aggregate in &by_op {
        if let Some(histogram) = aggregate.histogram.as_ref().filter(|h| h.total() > 0) {
            text.push('\n');
            let title = format!("{} ({}, all CPUs)", aggregate.op, run.counter_unit());
            text.push_str(&bars(&title, histogram));
        }
    }
    text
}

/// The per-CPU table: busy and idle time, switches.
fn cpus_summary(run: &Run) -> String {
    let mut text = String::new();
    text.push_str("\n per CPU\n");
    let rows: Vec<Vec<String>> = run
        .cpu_records
        .iter()
        .map(|c| {
            vec![
                c.id.to_string(),
                c.busy_ns.to_string(),
                c.idle_ns.to_string(),
                c.switches.to_string(),
            ]
        })
        .collect();
    text.push_str(&table(&["cpu", "busy_ns", "idle_ns", "switches"], &rows));
    text
}

/// The per-task table: runtime, waiting, wake-ups and their latency,
/// missed periods, migrations, switches.
fn tasks_summary(run: &Run) -> String {
    let mut text = String::new();
    text.push_str("\n per task (latency = wake-up to run)\n");
    let rows: Vec<Vec<String>> = run
        .tasks
        .iter()
        .map(|t| {
            vec![
                t.id.to_string(),
                t.name.clone(),
                t.cpu.to_string(),
                t.runtime_ns.to_string(),
                t.wait_ns.to_string(),
                t.wakeups.to_string(),
                t.lat_p50_ns.to_string(),
                t.lat_p99_ns.to_string(),
                t.lat_max_ns.to_string(),
                t.missed_periods.to_string(),
                t.pending_wakeups.to_string(),
                t.migrations.to_string(),
                t.switches.to_string(),
            ]
        })
        .collect();
    let headers = [
        "id",
        "name",
        "cpu",
        "runtime_ns",
        "wait_ns",
        "wakeups",
        "lat_p50",
        "lat_p99",
        "lat_max",
        "missed",
        "pending",
        "migr",
        "switches",
    ];
    text.push_str(&table(&headers, &rows));
    text
}

/// The limited groups' table: `cpu.max` and `cpu.stat`.
fn groups_summary(run: &Run) -> String {
    let mut text = String::new();
    text.push_str("\n groups (cpu.max, cpu.stat)\n");
    let rows: Vec<Vec<String>> = run
        .groups
        .iter()
        .map(|g| {
            vec![
                g.path.clone(),
                g.cpu_max(),
                g.nr_periods.to_string(),
                g.nr_throttled.to_string(),
                g.throttled_usec.to_string(),
                g.nr_bursts.to_string(),
                g.burst_usec.to_string(),
            ]
        })
        .collect();
    let headers = [
        "path",
        "cpu.max",
        "nr_periods",
        "nr_throttled",
        "throttled_usec",
        "nr_bursts",
        "burst_usec",
    ];
    text.push_str(&table(&headers, &rows));
    text
}

/// The run's named metrics.
fn metrics_summary(run: &Run) -> String {
    let mut text = String::new();
    text.push_str("\n metrics\n");
    let rows: Vec<Vec<String>> = run
        .metrics
        .iter()
        .map(|m| vec![m.name.clone(), m.value.to_string()])
        .collect();
    text.push_str(&table(&["name", "value"], &rows));
    text
}

impl Report {
    /// A readable summary for the terminal (see the module doc).
    pub fn summary(&self) -> String {
        if self.runs.is_empty() {
            return "no report records in the transcript\n".into();
        }
        let mut text = String::new();
        for (index, run) in self.runs.iter().enumerate() {
            if index > 0 {
                text.push('\n');
            }
            text.push_str(&run_summary(run));
        }
        if self.runs.len() > 1 {
            text.push_str("\ncost by configuration (all CPUs; - where no exact quantile)\n");
            let mut rows = Vec::new();
            for run in &self.runs {
                for a in run.cost_by_op() {
                    rows.push(vec![
                        run.name.clone(),
                        run.config.clone(),
                        a.op,
                        run.counter_unit().to_string(),
                        a.count.to_string(),
                        a.min.to_string(),
                        optional(a.p50),
                        optional(a.p99),
                        a.max.to_string(),
                    ]);
                }
            }
            let headers = [
                "run", "config", "op", "unit", "count", "min", "p50", "p99", "max",
            ];
            text.push_str(&table(&headers, &rows));
        }
        text
    }
}
