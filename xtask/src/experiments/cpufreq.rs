//! `cargo xtask cpufreq-experiment KERNEL`: the seed question of issue 13 on
//! schedutil's update rate (docs/linux-sched-reference.md §6.2). Linux calls
//! the governor wherever the root run queue's PELT signals change (about once
//! per 1.024 ms per busy CPU) and at the tick; a 2023 proposal calls it at
//! every context switch and at the tick. Fairway has both
//! (`cpufreq_update=pelt|switch`); this boots Juno r2 under icount with each
//! and prints a Markdown table:
//!
//! - sched-pipe (20,000 round trips between CPU 0, a LITTLE, and CPU 1, an
//!   A72): ops/s, governor calls and frequency changes per second, energy;
//! - a periodic rt-app mix (`sim/scenarios/agree-periodic-mix.json`, three
//!   periodic tasks): energy, missed periods, calls and changes per second.
//!
//! Every figure is deterministic (icount), so one run per point.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::run::board::Board;
use crate::run::board::workspace_root;
use crate::run::qemu::{self, QemuConfig};

/// The figures of one run.
struct Figures {
    seconds: f64,
    ops_per_second: Option<u64>,
    missed_periods: u64,
    governor_calls: u64,
    changes: u64,
    energy_nj: u64,
}

fn run(kernel: &Path, append: &str, scenario: Option<&str>) -> Result<Figures, String> {
    let mut config = QemuConfig::for_board(Board::load("juno-r2")?);
    config.icount = true;
    config.echo = false;
    config.timeout = Duration::from_secs(600);
    config.append = append.to_string();
    if let Some(scenario) = scenario {
        config.scenario = Some(workspace_root().join(scenario));
        config.load_scenario()?;
    }
    config.use_board_device_tree()?;
    config.check_command_line()?;
    let outcome = qemu::run(kernel, &config)?;
    if outcome.status != Some(0) {
        return Err(format!(
            "the kernel failed ({append}): {}",
            outcome.lines.last().map_or("", String::as_str)
        ));
    }
    let report = crate::run::report::parse_report(&outcome.lines)?;
    let [run] = report.runs.as_slice() else {
        return Err(format!(
            "expected one report section, got {}",
            report.runs.len()
        ));
    };
    let sum = |prefix: &str| {
        run.metrics
            .iter()
            .filter(|m| m.name.starts_with(prefix))
            .map(|m| m.value)
            .sum::<u64>()
    };
    let metric = |name: &str| run.metrics.iter().find(|m| m.name == name).map(|m| m.value);
    Ok(Figures {
        seconds: run.wall_ns as f64 / 1e9,
        ops_per_second: metric("ops_per_second"),
        missed_periods: run.tasks.iter().map(|t| t.missed_periods).sum(),
        governor_calls: sum("governor_calls.pd"),
        changes: sum("freq_changes.pd"),
        energy_nj: sum("energy_nj.pd"),
    })
}

/// Runs the experiment and prints its table.
pub(crate) fn command(args: &[String]) -> Result<ExitCode, String> {
    let [kernel] = args else {
        return Err("usage: cargo xtask cpufreq-experiment KERNEL".into());
    };
    let kernel = Path::new(kernel);
    println!(
        "| call sites | sched-pipe ops/s | calls/s | changes/s | energy per round trip | periodic mix: energy | missed periods | calls/s | changes/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (sites, label) in [
        ("pelt", "Linux (`cpufreq_update=pelt`)"),
        ("switch", "2023 proposal (`cpufreq_update=switch`)"),
    ] {
        // Wake-up placement as before EAS (issue 14): the table compares the
        // governor's call sites, and energy-aware placement would move the
        // pipe's tasks and the mix's off the CPUs the comparison is about.
        let pipe = run(
            kernel,
            &format!("workload=sched-pipe loops=20000 cpufreq_update={sites} sched_energy_aware=0"),
            None,
        )?;
        let mix = run(
            kernel,
            &format!("cpufreq_update={sites} sched_energy_aware=0"),
            Some("sim/scenarios/agree-periodic-mix.json"),
        )?;
        println!(
            "| {label} | {} | {:.0} | {:.0} | {:.3} µJ | {:.1} mJ | {} | {:.0} | {:.0} |",
            pipe.ops_per_second.unwrap_or(0),
            pipe.governor_calls as f64 / pipe.seconds,
            pipe.changes as f64 / pipe.seconds,
            pipe.energy_nj as f64 / 20_000.0 / 1000.0,
            mix.energy_nj as f64 / 1e6,
            mix.missed_periods,
            mix.governor_calls as f64 / mix.seconds,
            mix.changes as f64 / mix.seconds,
        );
    }
    Ok(ExitCode::SUCCESS)
}
