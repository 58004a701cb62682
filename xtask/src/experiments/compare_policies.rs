//! Policies side by side on one scenario: `cargo xtask compare-policies`.
//!
//! ```text
//!  scenario ─┬─ variant 1 (`sched=eevdf`) ──► simulator, kernel under icount ─┐
//!            ├─ variant 2 (`sched=cfs`)   ──► simulator, kernel under icount ─┼─► one table
//!            └─ variant 3 (`sched=eevdf sched_feat=NO_RUN_TO_PARITY`) ...    ─┘
//! ```
//!
//! A variant is a set of scheduler options (`sched=`, `sched_feat=`, `hz=`,
//! ...: the words the kernel's command line and the simulator's flags share),
//! so a policy of the policy folder, a Linux pick and a variant of it by its
//! feature switches are compared the same way. Per task: its share of all the
//! tasks' CPU time, its wait, its wake-up latency's 99th percentile and its
//! missed periods; per performance domain (on a board with an energy model),
//! its energy. Each variant has two columns, the simulator's (exact, virtual
//! time) and the kernel's (under QEMU icount); `--sim-only` leaves the kernel
//! out. Where the two columns of a variant differ, `cargo xtask compare`
//! shows why (docs/agreement.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fairway_sched::boot_options::SchedConfig;

use super::compare::{run_under_icount, simulate};
use crate::run::board::Board;
use crate::run::qemu::QemuConfig;

const USAGE: &str = "usage: cargo xtask compare-policies SCENARIO.json [--variant \"ARGS\"]... \
                     [--board NAME] [--cpus N] [--timeout S] [--kernel FILE] [--sim-only]";

/// The variants compared when none is given: Linux's two picks.
const DEFAULT_VARIANTS: [&str; 2] = ["sched=eevdf", "sched=cfs"];

/// One run's figures, by row name (`TASK share`, `pd0 energy`, ...), in the
/// order of the scenario's tasks, then the domains.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// `(row, unit, value)`.
    pub rows: Vec<(String, &'static str, f64)>,
}

/// A task's figures as both runs give them.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskFigures {
    /// Its name (rt-app's instance name).
    pub name: String,
    /// CPU time, ns.
    pub runtime_ns: u64,
    /// Time runnable and not running, ns.
    pub wait_ns: u64,
    /// Wake-up latency's 99th percentile (nearest rank), ns.
    pub latency_p99_ns: u64,
    /// Periods whose work did not finish in time.
    pub missed_periods: u64,
}

impl Figures {
    /// The rows of `tasks` and of the domains' `energy_nj`: each task's
    /// share of all the tasks' CPU time in percent, its wait and latency
    /// p99 in ms, its missed periods; each domain's energy in mJ.
    pub fn of(tasks: &[TaskFigures], energy_nj: &[u64]) -> Figures {
        let total: u64 = tasks.iter().map(|t| t.runtime_ns).sum();
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut rows = Vec::new();
        for task in tasks {
            let share = if total == 0 {
                0.0
            } else {
                100.0 * task.runtime_ns as f64 / total as f64
            };
            rows.push((format!("{} share", task.name), "%", share));
            rows.push((format!("{} wait", task.name), "ms", ms(task.wait_ns)));
            rows.push((
                format!("{} latency p99", task.name),
                "ms",
                ms(task.latency_p99_ns),
            ));
            rows.push((
                format!("{} missed periods", task.name),
                "",
                task.missed_periods as f64,
            ));
        }
        for (index, nj) in energy_nj.iter().enumerate() {
            rows.push((format!("pd{index} energy"), "mJ", *nj as f64 / 1e6));
        }
        Figures { rows }
    }
}

/// The table: a row per figure, two columns per variant (simulator, and the
/// kernel unless `kernel` is empty), a variant's label over its columns.
pub fn table(labels: &[String], simulator: &[Figures], kernel: &[Figures]) -> String {
    let columns_per = if kernel.is_empty() { 1 } else { 2 };
    // Each variant's columns are wide enough for its label over them.
    let widths: Vec<usize> = labels
        .iter()
        .map(|label| 12.max((label.len() + 2).div_ceil(columns_per)))
        .collect();
    let mut out = format!("{:<30}", "");
    for (label, width) in labels.iter().zip(&widths) {
        let span = width * columns_per;
        out.push_str(&format!("{label:>span$}"));
    }
    out.push('\n');
    out.push_str(&format!("{:<30}", ""));
    for width in &widths {
        out.push_str(&format!("{:>width$}", "simulator"));
        if !kernel.is_empty() {
            out.push_str(&format!("{:>width$}", "kernel"));
        }
    }
    out.push('\n');
    // The rows of every run, in the first run's order, then any a later run
    // adds (a task only one policy finishes is still a row of every run).
    let mut names: Vec<(String, &'static str)> = Vec::new();
    for figures in simulator.iter().chain(kernel) {
        for (name, unit, _) in &figures.rows {
            if !names.iter().any(|(n, _)| n == name) {
                names.push((name.clone(), unit));
            }
        }
    }
    let value = |figures: &Figures, name: &str| {
        figures
            .rows
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, _, v)| *v)
    };
    for (name, unit) in &names {
        let label = if unit.is_empty() {
            name.clone()
        } else {
            format!("{name} ({unit})")
        };
        out.push_str(&format!("{label:<30}"));
        for (index, width) in widths.iter().enumerate() {
            let runs = std::iter::once(simulator.get(index))
                .chain((!kernel.is_empty()).then(|| kernel.get(index)));
            for run in runs {
                // Times to the µs, shares and energy to a tenth, counts whole.
                let precision = match *unit {
                    "ms" => 3,
                    "" => 0,
                    _ => 1,
                };
                match run.and_then(|f| value(f, name)) {
                    Some(v) => out.push_str(&format!("{v:>width$.precision$}")),
                    None => out.push_str(&format!("{:>width$}", "-")),
                }
            }
        }
        out.push('\n');
    }
    out
}

/// A variant's label: its words, `sched=` and `sched_feat=` shown by value.
fn label_of(variant: &str) -> String {
    variant
        .split_whitespace()
        .map(|word| {
            word.strip_prefix("sched=")
                .or_else(|| word.strip_prefix("sched_feat="))
                .unwrap_or(word)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The simulator's figures of `scenario` under `variant`.
fn simulator_figures(
    scenario: &Path,
    board: Option<&str>,
    cpus: u32,
    variant: &str,
) -> Result<Figures, String> {
    let (results, _) = simulate(scenario, board, cpus, variant)?;
    let tasks: Vec<TaskFigures> = results
        .tasks
        .iter()
        .map(|task| TaskFigures {
            name: task.name.clone(),
            runtime_ns: task.runtime_ns,
            wait_ns: task.wait_ns,
            latency_p99_ns: task.wakeup_latency.p99,
            missed_periods: task.missed_periods,
        })
        .collect();
    let energy: Vec<u64> = results.energy.iter().map(|d| d.energy_nj).collect();
    Ok(Figures::of(&tasks, &energy))
}

/// The kernel's figures from its run's decoded `lines`, the tasks in
/// `order` (the simulator's, so that rows line up).
fn kernel_figures(lines: &[String], order: &Figures) -> Result<Figures, String> {
    let report = crate::run::report::parse_report(lines).map_err(|e| format!("report: {e}"))?;
    let run = report
        .runs
        .first()
        .ok_or("the kernel printed no report (did the run end?)")?;
    let by_name: BTreeMap<&str, _> = run.tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut tasks = Vec::new();
    for (row, _, _) in &order.rows {
        let Some(name) = row.strip_suffix(" share") else {
            continue;
        };
        let task = by_name
            .get(name)
            .ok_or_else(|| format!("the kernel's report has no task {name}"))?;
        tasks.push(TaskFigures {
            name: name.to_string(),
            runtime_ns: task.runtime_ns,
            wait_ns: task.wait_ns,
            latency_p99_ns: task.lat_p99_ns,
            missed_periods: task.missed_periods,
        });
    }
    let mut energy = Vec::new();
    while let Some(metric) = run
        .metrics
        .iter()
        .find(|m| m.name == format!("energy_nj.pd{}", energy.len()))
    {
        energy.push(metric.value);
    }
    Ok(Figures::of(&tasks, &energy))
}

/// `cargo xtask compare-policies SCENARIO [--variant ARGS]... [--board B]
/// [--cpus N] [--timeout S] [--kernel FILE] [--sim-only]`.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let mut scenario = None;
    let mut variants: Vec<String> = Vec::new();
    let mut board = "qemu-virt".to_string();
    let mut cpus = None;
    let mut timeout = 600;
    let mut kernel = None;
    let mut sim_only = false;
    let mut i = 0;
    while i < args.len() {
        let value = || {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value\n{USAGE}", args[i]))
        };
        match args[i].as_str() {
            "--variant" => variants.push(value()?),
            "--board" => board = value()?,
            "--cpus" => {
                let text = value()?;
                cpus = Some(
                    text.parse::<u32>()
                        .map_err(|_| format!("--cpus {text}: not a number"))?,
                );
            }
            "--timeout" => {
                let text = value()?;
                timeout = text
                    .parse::<u64>()
                    .ok()
                    .filter(|&s| s >= 1)
                    .ok_or_else(|| format!("--timeout {text}: not a number of seconds >= 1"))?;
            }
            "--kernel" => kernel = Some(PathBuf::from(value()?)),
            "--sim-only" => {
                sim_only = true;
                i += 1;
                continue;
            }
            other if other.starts_with("--") => {
                return Err(format!(
                    "compare-policies: unknown option '{other}'\n{USAGE}"
                ));
            }
            other if scenario.is_none() => {
                scenario = Some(PathBuf::from(other));
                i += 1;
                continue;
            }
            other => {
                return Err(format!(
                    "compare-policies: a second scenario '{other}'\n{USAGE}"
                ));
            }
        }
        i += 2;
    }
    let scenario = scenario.ok_or_else(|| format!("compare-policies: no scenario\n{USAGE}"))?;
    if variants.is_empty() {
        variants = DEFAULT_VARIANTS.iter().map(|v| v.to_string()).collect();
    }
    // Each variant is scheduler options only, read as the kernel reads them:
    // a bad one stops here, naming its word, before any run.
    for variant in &variants {
        if let Some(word) = variant
            .split_whitespace()
            .find(|w| !SchedConfig::KEYS.contains(&w.split('=').next().unwrap_or(w)))
        {
            return Err(format!(
                "compare-policies: --variant \"{variant}\": {word} is not a scheduler option \
                 (one of {})",
                SchedConfig::KEYS.join(", ")
            ));
        }
        SchedConfig::parse(variant)
            .map_err(|e| format!("compare-policies: --variant \"{variant}\": {e}"))?;
    }
    let loaded = Board::load(&board)?;
    let cpus = cpus.unwrap_or(loaded.cpus);
    let sim_board = (board != "qemu-virt").then_some(board.as_str());
    let mut simulator = Vec::new();
    for variant in &variants {
        simulator.push(simulator_figures(&scenario, sim_board, cpus, variant)?);
    }
    let mut kernels = Vec::new();
    if !sim_only {
        crate::run::tools::ensure()?;
        let kernel = match kernel {
            Some(path) => path,
            None => crate::run::build::release_kernel()?,
        };
        for (variant, order) in variants.iter().zip(&simulator) {
            let mut config = QemuConfig::for_board(loaded.clone());
            config.cpus = cpus;
            config.append = variant.clone();
            config.timeout = Duration::from_secs(timeout);
            config.scenario = Some(scenario.clone());
            eprintln!(
                "xtask: compare-policies: {} under {variant} on {board} ({cpus} CPUs), \
                 the kernel under icount",
                scenario.display()
            );
            let lines = run_under_icount(&kernel, config, "compare-policies: the kernel's run")?;
            kernels.push(kernel_figures(&lines, order)?);
        }
    }
    let labels: Vec<String> = variants.iter().map(|v| label_of(v)).collect();
    println!(
        "{} on {board} ({cpus} CPUs): each task's share of the tasks' CPU time, wait, \
         wake-up latency p99, missed periods; each domain's energy",
        scenario.display()
    );
    print!("{}", table(&labels, &simulator, &kernels));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, runtime_ms: u64) -> TaskFigures {
        TaskFigures {
            name: name.into(),
            runtime_ns: runtime_ms * 1_000_000,
            wait_ns: 2_000_000,
            latency_p99_ns: 500_000,
            missed_periods: 1,
        }
    }

    /// A task's share is its part of all the tasks' CPU time: 3:1 is 75 %
    /// and 25 %.
    #[test]
    fn shares_are_parts_of_the_tasks_cpu_time() {
        let figures = Figures::of(&[task("a", 300), task("b", 100)], &[1_500_000]);
        let get = |name: &str| {
            figures
                .rows
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, _, v)| *v)
                .unwrap()
        };
        assert_eq!(get("a share"), 75.0);
        assert_eq!(get("b share"), 25.0);
        assert_eq!(get("a wait"), 2.0);
        assert_eq!(get("a latency p99"), 0.5);
        assert_eq!(get("b missed periods"), 1.0);
        assert_eq!(get("pd0 energy"), 1.5);
    }

    #[test]
    fn the_table_has_a_column_per_variant_and_run() {
        let one = Figures::of(&[task("a", 300), task("b", 100)], &[]);
        let two = Figures::of(&[task("a", 200), task("b", 200)], &[]);
        let labels = vec!["eevdf".to_string(), "cfs".to_string()];
        let table = table(&labels, &[one.clone(), two.clone()], &[one, two]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("eevdf") && lines[0].contains("cfs"));
        assert_eq!(lines[1].matches("simulator").count(), 2);
        assert_eq!(lines[1].matches("kernel").count(), 2);
        let share = lines.iter().find(|l| l.starts_with("a share (%)")).unwrap();
        let values: Vec<&str> = share.split_whitespace().skip(3).collect();
        assert_eq!(values, vec!["75.0", "75.0", "50.0", "50.0"]);
        let wait = lines.iter().find(|l| l.starts_with("a wait (ms)")).unwrap();
        assert!(wait.ends_with("2.000"), "{wait}");
    }

    #[test]
    fn labels_show_the_policy_and_its_features() {
        assert_eq!(
            label_of("sched=eevdf sched_feat=NO_RUN_TO_PARITY"),
            "eevdf NO_RUN_TO_PARITY"
        );
        assert_eq!(label_of("sched=cfs hz=1000"), "cfs hz=1000");
    }
}
