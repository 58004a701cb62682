//! `cargo xtask eas-experiment KERNEL [--runs N] [--quick]`: the seed
//! experiment of issue 14 on energy-aware placement while overutilized
//! (docs/linux-sched-reference.md §5.6; docs/eas.md "The seed experiment").
//!
//! Linux skips `find_energy_efficient_cpu` while the root domain is
//! overutilized; the 2024 RFC keeps calling it (Fairway's
//! `eas_overutilized=1`). This boots the Pixel-6-like board under icount
//! with the option off and on, each point `--runs` times (default 5) with a
//! different `tick_seed=` (each CPU's tick at another phase: icount runs are
//! exact, so the seed is the only thing that differs between the runs of a
//! point), and prints two Markdown tables, mean ± sample standard deviation:
//!
//! - hackbench (pipe mode, Fairway's one mode; hackbench's default 20
//!   senders and 20 receivers per group) in the seed's four loops × groups
//!   shapes with the loops scaled by 1/32, 64,000 messages each (5120×1 →
//!   160×1, 1280×4 → 40×4, 640×8 → 20×8, 320×16 → 10×16): completion time,
//!   and its change with the option;
//! - workloads A and B (`tests/scenarios/eas-workload-{a,b}.json`): energy,
//!   migrations, frequency spikes (changes up to a domain's highest
//!   frequency) and `find_energy_efficient_cpu` calls.
//!
//! The workloads' table also has the simulator's rows (the same core,
//! the same options and seeds; no instruction counts, so no feec figures).
//!
//! Both also give the share of feec's runs in which it placed the task
//! rather than leaving it to the wake-up path (the kernel's `feec_placed`
//! and `feec_declined` metrics).

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::run::board::{Board, workspace_root};
use crate::run::qemu::{self, QemuConfig};
use crate::run::report::{CpuScope, Run};

/// The seed's hackbench shapes (loops, groups), scaled by 1/32.
const HACKBENCH_SHAPES: [(u64, u64, &str); 4] = [
    (160, 1, "5120×1"),
    (40, 4, "1280×4"),
    (20, 8, "640×8"),
    (10, 16, "320×16"),
];

/// The seed's workloads.
const WORKLOADS: [(&str, &str); 2] = [
    ("A", "tests/scenarios/eas-workload-a.json"),
    ("B", "tests/scenarios/eas-workload-b.json"),
];

/// One run's report.
fn run(kernel: &Path, append: &str, scenario: Option<&str>) -> Result<Run, String> {
    let mut config = QemuConfig::for_board(Board::load("pixel6")?);
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
    match <[Run; 1]>::try_from(report.runs) {
        Ok([run]) => Ok(run),
        Err(runs) => Err(format!("expected one report section, got {}", runs.len())),
    }
}

/// The sum of the metrics whose names start with `prefix`.
fn metric_sum(run: &Run, prefix: &str) -> u64 {
    run.metrics
        .iter()
        .filter(|m| m.name.starts_with(prefix))
        .map(|m| m.value)
        .sum()
}

/// How many times `find_energy_efficient_cpu` ran (its cost brackets).
fn feec_calls(run: &Run) -> u64 {
    run.costs
        .iter()
        .find(|c| c.cpu == CpuScope::All && c.op == "find_energy_efficient_cpu")
        .map_or(0, |c| c.count)
}

/// The share of `find_energy_efficient_cpu`'s runs in which it placed the
/// task (the rest it left to the wake-up path), in %.
fn feec_placed_percent(run: &Run) -> f64 {
    let placed = metric_sum(run, "feec_placed") as f64;
    let declined = metric_sum(run, "feec_declined") as f64;
    if placed + declined == 0.0 {
        0.0
    } else {
        placed * 100.0 / (placed + declined)
    }
}

/// Mean and sample standard deviation.
fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance.sqrt())
}

fn show(values: &[f64], decimals: usize) -> String {
    let (mean, sd) = mean_sd(values);
    format!("{mean:.decimals$} ± {sd:.decimals$}")
}

/// Runs the experiment and prints its tables.
pub(crate) fn command(args: &[String]) -> Result<ExitCode, String> {
    let usage = "usage: cargo xtask eas-experiment KERNEL [--runs N] [--quick]";
    let mut kernel = None;
    let mut runs = 5u64;
    let mut quick = false;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--runs" => {
                runs = words
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n >= 1)
                    .ok_or("--runs needs a number of at least 1")?;
            }
            "--quick" => quick = true,
            other if other.starts_with("--") => {
                return Err(format!("eas-experiment: unknown option '{other}'\n{usage}"));
            }
            other if kernel.is_none() => kernel = Some(other.to_string()),
            other => return Err(format!("eas-experiment: unexpected '{other}'\n{usage}")),
        }
    }
    let kernel = kernel.ok_or(usage)?;
    let kernel = Path::new(&kernel);
    if !kernel.is_file() {
        return Err(format!("{}: no such kernel image", kernel.display()));
    }
    crate::run::tools::ensure()?;
    let shapes = if quick {
        &HACKBENCH_SHAPES[..1]
    } else {
        &HACKBENCH_SHAPES[..]
    };
    let started = Instant::now();
    let seeds: Vec<u64> = (1..=runs).collect();
    println!(
        "hackbench on pixel6 (icount, {runs} runs per point, tick_seed=1..{runs}): completion time"
    );
    println!();
    println!(
        "| seed shape (loops×groups) | run here | Linux (`eas_overutilized=0`) ms | RFC (`eas_overutilized=1`) ms | delta | feec calls off / on | RFC: feec placed |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &(loops, groups, seed_shape) in shapes {
        let mut times = [Vec::new(), Vec::new()];
        let mut calls = [Vec::new(), Vec::new()];
        let mut placed = [Vec::new(), Vec::new()];
        for option in [0usize, 1] {
            for &seed in &seeds {
                let append = format!(
                    "workload=hackbench groups={groups} fds=20 loops={loops} \
                     eas_overutilized={option} tick_seed={seed}"
                );
                let report = run(kernel, &append, None)?;
                eprintln!(
                    "xtask: {append}: {:.3} ms, {} feec calls ({:.0} s so far)",
                    report.wall_ns as f64 / 1e6,
                    feec_calls(&report),
                    started.elapsed().as_secs_f64()
                );
                times[option].push(report.wall_ns as f64 / 1e6);
                calls[option].push(feec_calls(&report) as f64);
                placed[option].push(feec_placed_percent(&report));
            }
        }
        let (off, _) = mean_sd(&times[0]);
        let (on, _) = mean_sd(&times[1]);
        println!(
            "| {seed_shape} | {loops}×{groups} | {} | {} | {:+.1} % | {:.0} / {:.0} | {:.1} % |",
            show(&times[0], 2),
            show(&times[1], 2),
            (on / off - 1.0) * 100.0,
            mean_sd(&calls[0]).0,
            mean_sd(&calls[1]).0,
            mean_sd(&placed[1]).0,
        );
    }
    println!();
    println!("workloads A and B on pixel6 (icount, {runs} runs per point, tick_seed=1..{runs})");
    println!();
    println!(
        "| workload | option | energy mJ | migrations | frequency spikes | feec calls | feec placed |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, scenario) in WORKLOADS {
        for (option, label) in [
            (0, "Linux (`eas_overutilized=0`)"),
            (1, "RFC (`eas_overutilized=1`)"),
        ] {
            let mut energy = Vec::new();
            let mut migrations = Vec::new();
            let mut spikes = Vec::new();
            let mut calls = Vec::new();
            let mut placed = Vec::new();
            for &seed in &seeds {
                let append = format!("eas_overutilized={option} tick_seed={seed}");
                let report = run(kernel, &append, Some(scenario))?;
                energy.push(metric_sum(&report, "energy_nj.pd") as f64 / 1e6);
                migrations.push(report.tasks.iter().map(|t| t.migrations).sum::<u64>() as f64);
                spikes.push(metric_sum(&report, "freq_spikes.pd") as f64);
                calls.push(feec_calls(&report) as f64);
                placed.push(feec_placed_percent(&report));
                eprintln!(
                    "xtask: workload {name} {append}: {:.1} mJ ({:.0} s so far)",
                    energy.last().copied().unwrap_or(0.0),
                    started.elapsed().as_secs_f64()
                );
            }
            println!(
                "| {name} | {label} | {} | {} | {} | {} | {:.1} % |",
                show(&energy, 1),
                show(&migrations, 1),
                show(&spikes, 1),
                show(&calls, 0),
                mean_sd(&placed).0,
            );
        }
        // The simulator, through the same core, with the same seeds.
        let text = std::fs::read_to_string(workspace_root().join(scenario))
            .map_err(|e| format!("{scenario}: {e}"))?;
        for (option, label) in [(0, "simulator, Linux"), (1, "simulator, RFC")] {
            let mut energy = Vec::new();
            let mut migrations = Vec::new();
            let mut spikes = Vec::new();
            for &seed in &seeds {
                let options = format!("eas_overutilized={option} tick_seed={seed}");
                let results = fairway_sim::judge::simulate_on("pixel6", &text, &options)
                    .map_err(|e| format!("simulator, workload {name}, {options}: {e}"))?;
                energy.push(results.energy.iter().map(|d| d.energy_nj).sum::<u64>() as f64 / 1e6);
                migrations.push(results.tasks.iter().map(|t| t.migrations).sum::<u64>() as f64);
                spikes.push(results.energy.iter().map(|d| d.spikes).sum::<u64>() as f64);
            }
            println!(
                "| {name} | {label} | {} | {} | {} | | |",
                show(&energy, 1),
                show(&migrations, 1),
                show(&spikes, 1),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
