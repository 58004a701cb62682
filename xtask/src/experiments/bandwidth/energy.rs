//! `--energy`: the interleaving table re-run on a heterogeneous board with
//! schedutil, with the energy of each period-timer start, in the kernel and
//! in the simulator (run, measured and printed here).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use fairway_sim::{Config, Simulation, policy_kind};

use super::measure::{Class, group_of};
use super::{MS, Mode, Point, TICK};
use crate::run::board::{Board, workspace_root};
use crate::run::qemu::{self, QemuConfig};

/// The board of the energy table (issue 13: the interleaving table re-run on
/// a heterogeneous board with schedutil, with energy per mode).
const ENERGY_BOARD: &str = "juno-r2";

/// One energy run's figures: the groups' CPU time per second and the
/// energy of all performance domains, in J.
#[derive(Clone, Copy, Debug)]
struct EnergyMeasure {
    work: f64,
    energy_j: f64,
}

fn energy_kernel(kernel: &Path, point: &Point, folder: &Path) -> Result<EnergyMeasure, String> {
    let name = format!(
        "bandwidth-energy-g{}-{}",
        point.groups,
        point.mode.append(point.seed)
    )
    .replace([' ', '='], "-");
    let path = folder.join(format!("{name}.json"));
    std::fs::write(&path, point.scenario()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config = QemuConfig::for_board(Board::load(ENERGY_BOARD)?);
    config.icount = true;
    config.echo = false;
    config.timeout = Duration::from_secs(600);
    config.append = format!(
        "sched=eevdf governor=schedutil {}",
        point.mode.append(point.seed)
    );
    config.scenario = Some(path);
    config.use_board_device_tree()?;
    config.load_scenario()?;
    config.check_command_line()?;
    let outcome = qemu::run(kernel, &config)?;
    if outcome.status != Some(0) {
        return Err(format!(
            "the kernel failed: {}",
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
    let runtime: u64 = run
        .tasks
        .iter()
        .filter(|t| matches!(group_of(&t.name, point.groups), Class::Group(_)))
        .map(|t| t.runtime_ns)
        .sum();
    let energy_nj: u64 = run
        .metrics
        .iter()
        .filter(|m| m.name.starts_with("energy_nj.pd"))
        .map(|m| m.value)
        .sum();
    Ok(EnergyMeasure {
        work: runtime as f64 / point.duration_ns() as f64,
        energy_j: energy_nj as f64 / 1e9,
    })
}

fn energy_simulator(point: &Point) -> Result<EnergyMeasure, String> {
    let sched = fairway_sched::boot_options::SchedConfig::parse("governor=schedutil")
        .map_err(|e| e.to_string())?;
    let board = fairway_sim::board::load(
        &workspace_root()
            .join("boards")
            .join(ENERGY_BOARD)
            .display()
            .to_string(),
        &sched,
    )
    .map_err(|e| e.to_string())?;
    let text = point.scenario();
    let scenario = fairway_rtapp::parse_and_validate_for(&text, point.cpus, true)
        .map_err(|e| format!("the scenario: {e}"))?;
    let config = Config {
        policy: policy_kind("eevdf", 4 * MS, point.cpus, TICK).map_err(|e| e.to_string())?,
        policy_name: "eevdf".into(),
        capacities: board.capacities,
        tick_ns: TICK,
        duration_ns: Some(point.duration_ns()),
        sample_interval_ns: MS,
        hrtick: true,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: true,
        // As the kernel's `uclamp=auto`.
        uclamp: scenario.first_clamp().is_some(),
        bandwidth_timer: point.mode.start(point.seed),
        cfs_bandwidth: false,
        dvfs: board.dvfs,
    };
    let results = Simulation::new(&scenario, config)
        .and_then(|s| s.run(None))
        .map_err(|e| format!("the simulator: {e}"))?;
    let runtime: u64 = results
        .tasks
        .iter()
        .filter(|t| t.taskgroup.is_some())
        .map(|t| t.runtime_ns)
        .sum();
    Ok(EnergyMeasure {
        work: runtime as f64 / point.duration_ns() as f64,
        energy_j: results.energy.iter().map(|d| d.energy_nj).sum::<u64>() as f64 / 1e9,
    })
}

/// `--energy`: G ∈ {1, 2} groups of 6 CPU-bound tasks, each `cpu.max` = 25 %
/// of Juno r2's 6 CPUs, 2 s, schedutil, per period-timer start: the groups'
/// CPU time per second and the energy, in the kernel and in the simulator,
/// with their change against `aligned` (the RFC saw power rise by 2 … 13 %
/// with interleaving while throughput rose by 12 … 26 %, §4.6). CPU time on a
/// heterogeneous board is not work: a LITTLE CPU's second does less.
pub(super) fn energy_command(kernel: &Path) -> Result<ExitCode, String> {
    let folder = workspace_root().join("target").join("bandwidth-experiment");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let cpus = 6;
    let mut table = String::from(
        "| G | bw_timer | kernel CPU-s/s | vs aligned | kernel energy | vs aligned | \
         simulator CPU-s/s | vs aligned | simulator energy | vs aligned |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for groups in [1, 2] {
        let mut aligned: Option<(EnergyMeasure, EnergyMeasure)> = None;
        for (mode, seed) in [
            (Mode::Aligned, 0),
            (Mode::Period10, 0),
            (Mode::Random, 1),
            (Mode::Random, 2),
            (Mode::Random, 3),
        ] {
            let point = Point {
                groups,
                cpus,
                mode,
                seed,
                duration_s: 2,
            };
            let kernel =
                energy_kernel(kernel, &point, &folder).map_err(|e| format!("{point}: {e}"))?;
            let sim = energy_simulator(&point).map_err(|e| format!("{point}: {e}"))?;
            let base = *aligned.get_or_insert((kernel, sim));
            let change = |now: f64, then: f64| format!("{:+.1} %", (now / then - 1.0) * 100.0);
            let _ = writeln!(
                table,
                "| {groups} | {} | {:.3} | {} | {:.3} J | {} | {:.3} | {} | {:.3} J | {} |",
                mode.append(seed),
                kernel.work,
                change(kernel.work, base.0.work),
                kernel.energy_j,
                change(kernel.energy_j, base.0.energy_j),
                sim.work,
                change(sim.work, base.1.work),
                sim.energy_j,
                change(sim.energy_j, base.1.energy_j),
            );
            eprintln!("xtask: {point}: kernel {kernel:?}, simulator {sim:?}");
        }
    }
    print!("{table}");
    Ok(ExitCode::SUCCESS)
}
