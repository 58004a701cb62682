//! `cargo xtask bandwidth-experiment KERNEL [--quick | --energy]`: the bandwidth timer
//! interleaving experiment of docs/linux-sched-reference.md §4.6 (the 2023
//! RFC), on Fairway.
//!
//! G ∈ {1, 2} groups, each with `cpu.max` = 25 % of the machine
//! (N × 25 ms per 100 ms) and N CPU-bound tasks (`stress-ng --cpu N`), on
//! N ∈ {1, 2, 4, 8} CPUs, with the period grids started `aligned`, `period10`
//! or `random` (seeds 1, 2, 3). Each point runs in the kernel under QEMU icount
//! (with its context-switch trace) and in the simulator with the same
//! settings (its tick grid placed where the kernel's fell), and gives:
//!
//! - work done per second: the groups' tasks' runtime over the run, in
//!   CPU-seconds per second and as a share of the quota sum, and its change
//!   against `aligned` (the RFC's figure);
//! - the mean CPU idle residency (`report: cpu`), the groups' `nr_throttled`,
//!   and from the switch trace the time every CPU is idle at once (a
//!   package-idle proxy);
//! - the work and the all-idle time again over the steady-state window `[period, duration -
//!   period)` of whole periods, which the start offsets cannot tilt (over
//!   whole periods every group is refilled once a period, whatever its
//!   offset, while over the run a grid that does not start at 0 fits one
//!   more refill in than the aligned one, see docs/bandwidth-experiment.md),
//!   with, for two groups, the time both run on CPUs at the same instant and
//!   the time both are in a run phase (not throttled, gaps under 10 ms
//!   bridged).
//!
//! The Markdown tables go to stdout; a full run (not `--quick`) also writes
//! them into docs/bandwidth-experiment.md, between the markers there. Each
//! kernel transcript (with its `trace: switch` lines) is kept in
//! target/bandwidth-experiment/.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use fairway_sched::bandwidth::PeriodTimerStart;

use crate::run::board::workspace_root;

mod document;
mod energy;
mod measure;
mod runs;

use document::{generated, offsets, table, write_document};
use energy::energy_command;
use measure::Measure;
use runs::{run_kernel, run_simulator};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;
/// The groups' period, as the RFC's.
const PERIOD_US: u64 = 100_000;
const PERIOD: u64 = PERIOD_US * 1000;
/// HZ=250, the kernel's default (`fairway_sched::boot_options::DEFAULT_HZ`).
const TICK: u64 = 4 * MS;
/// The kernel's context-switch trace buffer (`MAX_TRACE_SWITCHES`).
const TRACE_SWITCHES: usize = fairway_sched::boot_options::MAX_TRACE_SWITCHES as usize;
/// The seeds of `bw_timer=random`.
const SEEDS: [u64; 3] = [1, 2, 3];
/// The generated part of the document lies between these lines.
const BEGIN: &str = "<!-- bandwidth-experiment: generated, begin -->";
const END: &str = "<!-- bandwidth-experiment: generated, end -->";
const DOC: &str = "docs/bandwidth-experiment.md";

/// Where the groups' period grids start: `bw_timer=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Aligned,
    Period10,
    Random,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Aligned => "aligned",
            Mode::Period10 => "period10",
            Mode::Random => "random",
        }
    }

    fn start(self, seed: u64) -> PeriodTimerStart {
        match self {
            Mode::Aligned => PeriodTimerStart::Aligned,
            Mode::Period10 => PeriodTimerStart::Period10,
            Mode::Random => PeriodTimerStart::Random { seed },
        }
    }

    /// The kernel's boot options for it.
    fn append(self, seed: u64) -> String {
        match self {
            Mode::Random => format!("bw_timer=random bw_seed={seed}"),
            other => format!("bw_timer={}", other.name()),
        }
    }
}

/// One run: G groups on N CPUs with one start of the grids.
#[derive(Clone, Copy, Debug)]
struct Point {
    groups: usize,
    cpus: usize,
    mode: Mode,
    seed: u64,
    duration_s: u64,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "G={} N={} {}",
            self.groups,
            self.cpus,
            self.mode.append(self.seed)
        )
    }
}

impl Point {
    fn duration_ns(&self) -> u64 {
        self.duration_s * SECOND
    }

    /// Each group's quota: 25 % of the machine, in µs per period.
    fn quota_us(&self) -> u64 {
        self.cpus as u64 * PERIOD_US / 4
    }

    /// The quota sum, in CPU-seconds per second.
    fn quota_sum(&self) -> f64 {
        (self.groups as u64 * self.quota_us()) as f64 / PERIOD_US as f64
    }

    /// The rt-app scenario: groups `/g0`…, each with N CPU-bound tasks.
    fn scenario(&self) -> String {
        let groups: Vec<String> = (0..self.groups)
            .map(|g| {
                format!(
                    r#""/g{g}": {{"cpu.max": "{} {PERIOD_US}"}}"#,
                    self.quota_us()
                )
            })
            .collect();
        // 100 s of work: CPU-bound for the whole run.
        let tasks: Vec<String> = (0..self.groups)
            .map(|g| {
                format!(
                    r#""g{g}": {{"instance": {}, "taskgroup": "/g{g}", "run": 100000000}}"#,
                    self.cpus
                )
            })
            .collect();
        format!(
            "{{\"global\": {{\"duration\": {}, \"calibration\": 1000,\n  \"taskgroups\": {{{}}}}},\n \
             \"tasks\": {{{}}}}}\n",
            self.duration_s,
            groups.join(", "),
            tasks.join(", ")
        )
    }
}

/// One row: a G × N × mode, its runs (one per seed for `random`).
struct Row {
    point: Point,
    kernel: Vec<Measure>,
    sim: Vec<Measure>,
}

/// `cargo xtask bandwidth-experiment KERNEL [--quick]`.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let usage = "bandwidth-experiment needs the kernel image: cargo xtask bandwidth-experiment \
                 target/aarch64-unknown-none-softfloat/release/fairway [--quick | --energy]";
    let mut kernel = None;
    let mut quick = false;
    let mut energy = false;
    for arg in args {
        match arg.as_str() {
            "--quick" => quick = true,
            "--energy" => energy = true,
            other if other.starts_with("--") => {
                return Err(format!("bandwidth-experiment: unknown option '{other}'"));
            }
            other if kernel.is_none() => kernel = Some(PathBuf::from(other)),
            other => return Err(format!("bandwidth-experiment: unexpected '{other}'")),
        }
    }
    let kernel = kernel.ok_or(usage)?;
    if !kernel.is_file() {
        return Err(format!("{}: no such kernel image", kernel.display()));
    }
    crate::run::tools::ensure()?;
    if energy {
        return energy_command(&kernel);
    }
    let started = Instant::now();
    let (cpu_counts, seeds, duration_s): (&[usize], &[u64], u64) = if quick {
        (&[1, 2], &SEEDS[..1], 1)
    } else {
        (&[1, 2, 4, 8], &SEEDS, 2)
    };
    let folder = workspace_root().join("target").join("bandwidth-experiment");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let mut rows = Vec::new();
    for groups in [1, 2] {
        for &cpus in cpu_counts {
            for mode in [Mode::Aligned, Mode::Period10, Mode::Random] {
                let seeds = if mode == Mode::Random {
                    seeds
                } else {
                    &[0][..]
                };
                let mut row = Row {
                    point: Point {
                        groups,
                        cpus,
                        mode,
                        seed: seeds[0],
                        duration_s,
                    },
                    kernel: Vec::new(),
                    sim: Vec::new(),
                };
                for &seed in seeds {
                    let point = Point { seed, ..row.point };
                    let boot = Instant::now();
                    let (kernel, origin) = run_kernel(&kernel, &point, &folder)
                        .map_err(|e| format!("{point}: {e}"))?;
                    let sim = run_simulator(&point, origin).map_err(|e| format!("{point}: {e}"))?;
                    eprintln!(
                        "xtask: {point}: kernel {:.4} CPU-s/s, {:.2} % all idle; simulator {:.4} \
                         CPU-s/s, {:.2} % all idle ({:.1} s)",
                        kernel.work,
                        kernel.all_idle_pct,
                        sim.work,
                        sim.all_idle_pct,
                        boot.elapsed().as_secs_f64()
                    );
                    row.kernel.push(kernel);
                    row.sim.push(sim);
                }
                rows.push(row);
            }
        }
    }
    let wall = started.elapsed();
    let tables = format!(
        "### Kernel (QEMU icount, `sched=eevdf`, HZ=250, {duration_s} s per run)\n\n{}\n\
         ### Simulator (same scenario and settings, ticks where the kernel's fell)\n\n{}\n{}\n",
        table(&rows, true),
        table(&rows, false),
        offsets(seeds)
    );
    println!("{tables}");
    let shown = kernel.display();
    let command = format!(
        "cargo xtask bandwidth-experiment {shown}{}",
        if quick { " --quick" } else { "" }
    );
    eprintln!("xtask: {command}: {:.1} s of wall time", wall.as_secs_f64());
    if quick {
        eprintln!("xtask: --quick: {DOC} keeps the full run's table");
    } else {
        let path = write_document(&generated(&command, wall, &tables))?;
        eprintln!("xtask: wrote the tables into {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;
