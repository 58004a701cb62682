//! The kernel beside the simulator on one scenario: `cargo xtask compare`.
//!
//! ```text
//!  scenario ──fairway_sim (cli::prepare, as `fairway-sim` runs it)──► per task, per domain ─┐
//!                                                                                         ├─► table
//!  scenario ──kernel under QEMU icount (report, `trace: switch` lines)──► per task, per domain ─┘
//! ```
//!
//! The simulator is the reference for the rules; the kernel adds real
//! concurrency, locks, interrupts and instruction costs. A kernel figure that
//! emulation shaped (docs/icount.md) shows here as a row outside the bounds:
//! per task, runtime within 2 %, wait within 2 % of the run's length or 2 ms,
//! missed periods equal, and the share of its runtime on each CPU class
//! (LITTLE, mid, big: the board's distinct capacities) within 2 points; per
//! performance domain, energy within 2 %. The agreement cases of the test
//! command (`agree-*`) hold every row inside them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fairway_sched::boot_options::SchedConfig;

use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};

/// Runtime may differ by this fraction of the simulator's.
pub const RUNTIME_FRACTION: f64 = 0.02;
/// Wait may differ by this fraction of the run's length, or by
/// [`WAIT_FLOOR_NS`], whichever is larger.
pub const WAIT_FRACTION: f64 = 0.02;
/// See [`WAIT_FRACTION`].
pub const WAIT_FLOOR_NS: u64 = 2_000_000;
/// A task's share of its runtime on a CPU class may differ by this many
/// percentage points.
pub const SHARE_POINTS: f64 = 2.0;
/// A performance domain's energy may differ by this fraction.
pub const ENERGY_FRACTION: f64 = 0.02;

/// Switches the kernel traces for the class shares (its largest buffer).
const TRACE_SWITCHES: u64 = fairway_sched::boot_options::MAX_TRACE_SWITCHES;

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What the row is (`ui runtime`, `pd1 energy`, ...).
    pub what: String,
    /// The unit its values are printed in.
    pub unit: &'static str,
    /// The simulator's value.
    pub simulator: f64,
    /// The kernel's value.
    pub kernel: f64,
    /// The largest difference allowed.
    pub bound: f64,
}

impl Row {
    /// Kernel minus simulator.
    pub fn difference(&self) -> f64 {
        self.kernel - self.simulator
    }

    /// Whether the difference is within the bound.
    pub fn agrees(&self) -> bool {
        self.difference().abs() <= self.bound
    }
}

/// The comparison of one scenario's two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The rows: per task (runtime, wait, missed periods, shares), then per
    /// performance domain.
    pub rows: Vec<Row>,
    /// With `--phases N`: per row, the least and the greatest of the
    /// simulator's values over tick phases 0 to N−1 (`tick_seed`); empty
    /// otherwise. Shown beside the table, never part of its verdict.
    pub spread: Vec<(f64, f64)>,
}

impl Comparison {
    /// The rows outside their bounds.
    pub fn disagreements(&self) -> Vec<&Row> {
        self.rows.iter().filter(|row| !row.agrees()).collect()
    }

    /// Records the simulator's values of `others`, the same scenario at
    /// other tick phases (rows in the same order), as each row's spread.
    pub fn set_spread(&mut self, others: &[Comparison]) {
        self.spread = self
            .rows
            .iter()
            .enumerate()
            .map(|(index, row)| {
                others
                    .iter()
                    .filter_map(|other| other.rows.get(index))
                    .fold((row.simulator, row.simulator), |(low, high), other| {
                        (low.min(other.simulator), high.max(other.simulator))
                    })
            })
            .collect();
    }

    /// Whether row `index`'s kernel value lies within the simulator's
    /// spread over tick phases, widened by the row's bound.
    fn within_spread(&self, index: usize) -> bool {
        self.spread.get(index).is_some_and(|&(low, high)| {
            let row = &self.rows[index];
            row.kernel >= low - row.bound && row.kernel <= high + row.bound
        })
    }

    /// The table, one row a line, rows outside the bounds marked `<<`.
    pub fn table(&self) -> String {
        let phases = !self.spread.is_empty();
        let mut out = format!(
            "{:<32} {:>14} {:>14} {:>12} {:>10}{}\n",
            "",
            "simulator",
            "kernel",
            "difference",
            "bound",
            if phases {
                "   simulator over the tick phases"
            } else {
                ""
            }
        );
        for (index, row) in self.rows.iter().enumerate() {
            let mark = if row.agrees() { "" } else { "  <<" };
            let spread = match self.spread.get(index) {
                Some((low, high)) => format!(
                    "   {low:>9.1}..{high:<9.1}{}",
                    if self.within_spread(index) {
                        ""
                    } else {
                        " outside"
                    }
                ),
                None => String::new(),
            };
            out.push_str(&format!(
                "{:<32} {:>11.1} {:<2} {:>11.1} {:<2} {:>+9.1} {:<2} {:>7.1} {:<2}{mark}{spread}\n",
                row.what,
                row.simulator,
                row.unit,
                row.kernel,
                row.unit,
                row.difference(),
                row.unit,
                row.bound,
                row.unit,
            ));
        }
        if phases {
            let outside = (0..self.rows.len())
                .filter(|&index| !self.within_spread(index))
                .count();
            out.push_str(&format!(
                "{outside} of {} rows outside the simulator's spread over the tick phases, \
                 widened by their bounds (informative: the verdict is phase 0's)\n",
                self.rows.len()
            ));
        }
        let outside = self.disagreements().len();
        if outside == 0 {
            out.push_str(&format!(
                "all {} rows within their bounds\n",
                self.rows.len()
            ));
        } else {
            out.push_str(&format!(
                "{outside} of {} rows outside their bounds (<<)\n",
                self.rows.len()
            ));
        }
        out
    }

    /// Ok when every row is within its bound; otherwise the table.
    pub fn check(&self) -> Result<(), String> {
        if self.disagreements().is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the kernel and the simulator disagree:\n{}",
                self.table()
            ))
        }
    }
}

/// The CPU classes of `capacities`: their distinct values, ascending, named
/// LITTLE, (mid,) big; `all` when the CPUs are alike.
pub fn classes(capacities: &[u32]) -> Vec<(String, u32)> {
    let mut distinct: Vec<u32> = capacities.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let names: Vec<String> = match distinct.len() {
        1 => vec!["all".into()],
        2 => vec!["LITTLE".into(), "big".into()],
        3 => vec!["LITTLE".into(), "mid".into(), "big".into()],
        n => (0..n).map(|i| format!("class{i}")).collect(),
    };
    names.into_iter().zip(distinct).collect()
}

/// Per task name, the percentage of its time on each class, from the
/// stretches between context switches `(time_ns, cpu, next)`.
fn class_shares(
    switches: &[(u64, usize, Option<String>)],
    end_ns: u64,
    capacities: &[u32],
    classes: &[(String, u32)],
) -> std::collections::BTreeMap<String, Vec<f64>> {
    let mut time: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for stretch in fairway_sim::judge::stretches(switches, end_ns) {
        let capacity = capacities.get(stretch.cpu).copied().unwrap_or(0);
        let Some(class) = classes.iter().position(|(_, c)| *c == capacity) else {
            continue;
        };
        let slots = time
            .entry(stretch.task.clone())
            .or_insert_with(|| vec![0; classes.len()]);
        slots[class] += stretch.end.saturating_sub(stretch.start);
    }
    time.into_iter()
        .map(|(task, slots)| {
            let total: u64 = slots.iter().sum();
            let shares = slots
                .iter()
                .map(|&t| {
                    if total == 0 {
                        0.0
                    } else {
                        100.0 * t as f64 / total as f64
                    }
                })
                .collect();
            (task, shares)
        })
        .collect()
}

/// The simulator's run of `scenario` on `board` (`None`: QEMU virt's alike
/// CPUs, `cpus` of them) with the scheduler options among `append`'s words.
pub(crate) fn simulate(
    scenario: &Path,
    board: Option<&str>,
    cpus: u32,
    append: &str,
) -> Result<(fairway_sim::Results, Vec<u32>), String> {
    let mut args = vec![scenario.display().to_string(), "--quiet".into()];
    match board {
        Some(board) => args.extend(["--board".into(), board.to_string()]),
        None => args.extend(["--cpus".into(), cpus.to_string()]),
    }
    for word in append.split_whitespace() {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| format!("--append {word}: not key=value"))?;
        if SchedConfig::KEYS.contains(&key) {
            args.extend([format!("--{key}"), value.to_string()]);
        }
    }
    let prepared = fairway_sim::cli::prepare_args(&args).map_err(|e| format!("simulator: {e}"))?;
    let capacities = prepared
        .capacities
        .iter()
        .map(|c| c.capacity_orig)
        .collect();
    let results = prepared
        .simulate(|s| s)
        .map_err(|e| format!("simulator: {e}"))?;
    Ok((results, capacities))
}

/// Compares a kernel run of `scenario` (its decoded `lines`, booted with
/// `trace_switches` and the same `append`) with the simulator's.
pub fn compare_lines(
    scenario: &Path,
    board: Option<&str>,
    cpus: u32,
    append: &str,
    lines: &[String],
) -> Result<Comparison, String> {
    let (results, capacities) = simulate(scenario, board, cpus, append)?;
    let report = crate::run::report::parse_report(lines).map_err(|e| format!("report: {e}"))?;
    let run = report
        .runs
        .first()
        .ok_or("the kernel printed no report (did the run end?)")?;
    let classes = classes(&capacities);
    let switches = kernel_switches(lines)?;
    if switches.len() as u64 >= TRACE_SWITCHES {
        return Err(format!(
            "the kernel's trace is full ({TRACE_SWITCHES} switches): the class shares would be cut"
        ));
    }
    let kernel_shares = class_shares(&switches, run.wall_ns, &capacities, &classes);
    let simulator_shares = class_shares(
        &results.named_switches(),
        results.end_ns,
        &capacities,
        &classes,
    );
    let run_ns = results.end_ns.max(1);
    let mut rows = Vec::new();
    for task in &results.tasks {
        let kernel = run
            .tasks
            .iter()
            .find(|t| t.name == task.name)
            .ok_or_else(|| format!("the kernel's report has no task {}", task.name))?;
        let ms = |ns: u64| ns as f64 / 1e6;
        rows.push(Row {
            what: format!("{} runtime", task.name),
            unit: "ms",
            simulator: ms(task.runtime_ns),
            kernel: ms(kernel.runtime_ns),
            bound: ms(task.runtime_ns) * RUNTIME_FRACTION,
        });
        rows.push(Row {
            what: format!("{} wait", task.name),
            unit: "ms",
            simulator: ms(task.wait_ns),
            kernel: ms(kernel.wait_ns),
            bound: ms(((run_ns as f64 * WAIT_FRACTION) as u64).max(WAIT_FLOOR_NS)),
        });
        rows.push(Row {
            what: format!("{} missed periods", task.name),
            unit: "",
            simulator: task.missed_periods as f64,
            kernel: kernel.missed_periods as f64,
            bound: 0.0,
        });
        if classes.len() > 1 {
            let none = vec![0.0; classes.len()];
            let simulator = simulator_shares.get(&task.name).unwrap_or(&none);
            let kernel = kernel_shares.get(&task.name).unwrap_or(&none);
            for (index, (class, _)) in classes.iter().enumerate() {
                rows.push(Row {
                    what: format!("{} on {class}", task.name),
                    unit: "%",
                    simulator: simulator[index],
                    kernel: kernel[index],
                    bound: SHARE_POINTS,
                });
            }
        }
    }
    for (index, domain) in results.energy.iter().enumerate() {
        let name = format!("energy_nj.pd{index}");
        let kernel = run
            .metrics
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| format!("the kernel's report has no metric {name}"))?;
        let mj = |nj: u64| nj as f64 / 1e6;
        rows.push(Row {
            what: format!("pd{index} energy (cpus {:?})", domain.cpus),
            unit: "mJ",
            simulator: mj(domain.energy_nj),
            kernel: mj(kernel.value),
            bound: mj(domain.energy_nj) * ENERGY_FRACTION,
        });
    }
    Ok(Comparison {
        rows,
        spread: Vec::new(),
    })
}

/// The kernel's boot options for a comparison: `append` and the switch trace.
pub fn kernel_append(append: &str) -> String {
    format!("{append} trace_switches={TRACE_SWITCHES}")
        .trim()
        .to_string()
}

const USAGE: &str = "usage: cargo xtask compare SCENARIO.json [--board NAME] [--cpus N] \
                     [--append \"ARGS\"] [--timeout S] [--kernel FILE] [--phases N] [--check]";

/// `cargo xtask compare SCENARIO [--board B] [--cpus N] [--append ARGS]
/// [--timeout S] [--kernel FILE] [--phases N] [--check]`: runs the scenario
/// in the simulator and in the kernel under icount and prints one table;
/// with `--check` it fails when a row is outside its bound. `--phases N`
/// also runs the simulator at `tick_seed` 1 to N−1 and shows each row's
/// spread over those tick phases: where the simulator's own value moves by
/// more than the bound when only the ticks move, one phase's difference
/// says little (docs/agreement.md).
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let mut scenario = None;
    let mut board = "qemu-virt".to_string();
    let mut cpus = None;
    let mut append = String::new();
    let mut timeout = 600;
    let mut kernel = None;
    let mut check = false;
    let mut phases = 1;
    let mut i = 0;
    while i < args.len() {
        let value = || {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value\n{USAGE}", args[i]))
        };
        match args[i].as_str() {
            "--board" => board = value()?,
            "--cpus" => {
                let text = value()?;
                cpus = Some(
                    text.parse::<u32>()
                        .map_err(|_| format!("--cpus {text}: not a number"))?,
                );
            }
            "--append" => append = format!("{append} {}", value()?).trim().to_string(),
            "--timeout" => {
                let text = value()?;
                timeout = text
                    .parse::<u64>()
                    .ok()
                    .filter(|&s| s >= 1)
                    .ok_or_else(|| format!("--timeout {text}: not a number of seconds >= 1"))?;
            }
            "--kernel" => kernel = Some(PathBuf::from(value()?)),
            "--phases" => {
                let text = value()?;
                phases = text
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=256).contains(n))
                    .ok_or_else(|| format!("--phases {text}: not a number in 1..=256"))?;
            }
            "--check" => {
                check = true;
                i += 1;
                continue;
            }
            other if other.starts_with("--") => {
                return Err(format!("compare: unknown option '{other}'\n{USAGE}"));
            }
            other if scenario.is_none() => {
                scenario = Some(PathBuf::from(other));
                i += 1;
                continue;
            }
            other => return Err(format!("compare: a second scenario '{other}'\n{USAGE}")),
        }
        i += 2;
    }
    let scenario = scenario.ok_or_else(|| format!("compare: no scenario\n{USAGE}"))?;
    let loaded = Board::load(&board)?;
    let cpus = cpus.unwrap_or(loaded.cpus);
    crate::run::tools::ensure()?;
    let kernel = match kernel {
        Some(path) => path,
        None => crate::run::build::release_kernel()?,
    };
    let mut config = QemuConfig::for_board(loaded);
    config.cpus = cpus;
    config.append = kernel_append(&append);
    config.timeout = Duration::from_secs(timeout);
    config.scenario = Some(scenario.clone());
    eprintln!(
        "xtask: compare: {} on {board} ({cpus} CPUs), kernel under icount and simulator",
        scenario.display()
    );
    let lines = run_under_icount(&kernel, config, "compare: the kernel's run")?;
    let sim_board = (board != "qemu-virt").then_some(board.as_str());
    let mut comparison = compare_lines(&scenario, sim_board, cpus, &append, &lines)?;
    if phases > 1 {
        if append
            .split_whitespace()
            .any(|w| w.starts_with("tick_seed="))
        {
            return Err("compare: --phases sets tick_seed itself; drop it from --append".into());
        }
        let mut others = Vec::new();
        for seed in 1..phases {
            let seeded = format!("{append} tick_seed={seed}");
            others.push(compare_lines(&scenario, sim_board, cpus, &seeded, &lines)?);
        }
        comparison.set_spread(&others);
    }
    print!("{}", comparison.table());
    crate::run::icount_warnings::print(&lines, true);
    Ok(if check && !comparison.disagreements().is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Boots `kernel` with `config` (its board, CPUs, command line and scenario
/// set) under icount, without echoing, and returns its output lines; a
/// timeout or a failing exit status is an error naming `what`, with the
/// run's last 20 lines. `compare` and `judge-phases` boot this way.
pub(crate) fn run_under_icount(
    kernel: &Path,
    mut config: QemuConfig,
    what: &str,
) -> Result<Vec<String>, String> {
    config.icount = true;
    config.echo = false;
    config.load_scenario()?;
    config.use_board_device_tree()?;
    let outcome = qemu::run(kernel, &config)?;
    if outcome.timed_out || outcome.status != Some(0) {
        let tail: Vec<&String> = outcome.lines.iter().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().map(String::as_str).collect();
        return Err(format!(
            "{what} failed ({}):\n{}",
            if outcome.timed_out {
                "timeout".to_string()
            } else {
                format!("status {:?}", outcome.status)
            },
            tail.join("\n")
        ));
    }
    Ok(outcome.lines)
}

/// `(time_ns, cpu, next)` of every `trace: switch` line, times since the
/// scenario's start.
pub fn kernel_switches(lines: &[String]) -> Result<Vec<(u64, usize, Option<String>)>, String> {
    let mut out = Vec::new();
    for line in lines {
        let Some(at) = line.find("trace: switch ") else {
            continue;
        };
        let rest = &line[at..];
        let field = |key: &str| {
            rest.split_whitespace()
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
                .ok_or_else(|| format!("no {key}= in: {line}"))
        };
        let number = |key: &str| -> Result<u64, String> {
            field(key)?
                .parse()
                .map_err(|_| format!("no number {key}= in: {line}"))
        };
        out.push((
            number("time_ns")?,
            number("cpu")? as usize,
            Some(field("next")?.to_string()),
        ));
    }
    if out.is_empty() {
        return Err("no 'trace: switch' line (trace_switches=N?)".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_capacity() {
        assert_eq!(classes(&[1024, 1024]), vec![("all".to_string(), 1024)]);
        assert_eq!(
            classes(&[446, 1024, 1024, 446]),
            vec![("LITTLE".to_string(), 446), ("big".to_string(), 1024)]
        );
        let pixel = classes(&[160, 160, 160, 160, 498, 498, 1024, 1024]);
        assert_eq!(pixel[1], ("mid".to_string(), 498));
    }

    #[test]
    fn shares_from_stretches() {
        // a: 3 ms on CPU 0 (LITTLE), 1 ms on CPU 1 (big); b: 2 ms on CPU 1.
        let switches = vec![
            (0, 0, Some("a".to_string())),
            (0, 1, Some("b".to_string())),
            (2_000_000, 1, Some("a".to_string())),
            (3_000_000, 0, None),
            (3_000_000, 1, Some("idle".to_string())),
        ];
        let classes = classes(&[446, 1024]);
        let shares = class_shares(&switches, 10_000_000, &[446, 1024], &classes);
        assert_eq!(shares["a"], vec![75.0, 25.0]);
        assert_eq!(shares["b"], vec![0.0, 100.0]);
    }

    #[test]
    fn bounds_mark_rows() {
        let row = |simulator: f64, kernel: f64, bound: f64| Row {
            what: "x".into(),
            unit: "ms",
            simulator,
            kernel,
            bound,
        };
        let comparison = Comparison {
            rows: vec![row(305.0, 308.7, 6.1), row(305.0, 808.6, 6.1)],
            spread: Vec::new(),
        };
        assert_eq!(comparison.disagreements().len(), 1);
        assert!(comparison.check().is_err());
        assert!(comparison.table().contains("<<"));
        assert!(comparison.table().contains("1 of 2 rows outside"));
    }

    /// The spread over tick phases is each row's least and greatest
    /// simulator value; a kernel value within it, widened by the bound, is
    /// not marked `outside`, and the verdict stays phase 0's.
    #[test]
    fn the_spread_over_tick_phases_is_shown_not_judged() {
        let row = |simulator: f64, kernel: f64| Row {
            what: "small runtime".into(),
            unit: "ms",
            simulator,
            kernel,
            bound: simulator * RUNTIME_FRACTION,
        };
        let mut comparison = Comparison {
            rows: vec![row(1184.0, 1387.8), row(100.0, 150.0)],
            spread: Vec::new(),
        };
        let other = |a: f64, b: f64| Comparison {
            rows: vec![row(a, 0.0), row(b, 0.0)],
            spread: Vec::new(),
        };
        comparison.set_spread(&[other(1407.0, 101.0), other(1149.0, 99.0)]);
        assert_eq!(comparison.spread, vec![(1149.0, 1407.0), (99.0, 101.0)]);
        assert!(comparison.within_spread(0));
        assert!(!comparison.within_spread(1));
        let table = comparison.table();
        assert!(
            table.contains("1 of 2 rows outside the simulator's spread"),
            "{table}"
        );
        assert_eq!(comparison.disagreements().len(), 2, "phase 0 decides");
    }
}
