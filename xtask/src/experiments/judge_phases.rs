//! `cargo xtask judge-phases`: the placement judge (`fairway_sim::judge`) on
//! the classic EAS shapes across tick phases, the kernel under icount beside
//! the simulator.
//!
//! Why: one run's verdict is what one phase of the ticks gave. A placement
//! is a chain of one-task-at-a-time choices, each made from PELT signals
//! sampled at a tick, a wake-up or a PELT period boundary, and on some
//! shapes the simulator itself ends on a different CPU class when only the
//! ticks move (docs/eas.md, "Verdicts across tick phases"). A kernel verdict
//! means something beside the simulator's spread over the same phases:
//! `tick_seed=N`, the boot option both read, starts each CPU's tick at a
//! phase drawn from N (0: every CPU at `k/HZ`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fairway_sim::judge::{self, SETTLE_NS};

use crate::run::board::Board;
use crate::run::qemu::QemuConfig;

const USAGE: &str = "usage: cargo xtask judge-phases [--board NAME]... [--shape NAME]... \
                     [--seeds N] [--kernel FILE] [--sim-only]";

/// The boards the judge's shapes run on (heterogeneous, with an energy model).
const BOARDS: [&str; 3] = ["juno-r0", "juno-r2", "pixel6"];

/// One run's verdict: its energy ratio and whether the placement check held.
fn summary(verdict: &judge::Verdict, board: &judge::JudgeBoard) -> (f64, bool) {
    (verdict.ratio(), verdict.check_placement(board).is_ok())
}

/// Formats a verdict as `1.0159 class` (the placement check failed) or
/// `1.0000 ok`.
fn cell((ratio, placed): (f64, bool)) -> String {
    let mark = if ratio > 1.05 {
        "energy"
    } else if placed {
        "ok"
    } else {
        "class"
    };
    format!("{ratio:.4} {mark:6}")
}

/// The kernel's run of `shape` on `board` at `tick_seed` `seed`, judged.
fn kernel_run(kernel: &Path, board: &str, shape: &str, seed: u64) -> Result<(f64, bool), String> {
    let mut config = QemuConfig::for_board(Board::load(board)?);
    config.append = format!("trace_switches=20000 tick_seed={seed}");
    config.timeout = Duration::from_secs(300);
    config.scenario = Some(
        crate::run::board::workspace_root().join(format!("tests/scenarios/eas-shape-{shape}.json")),
    );
    let what = format!("judge-phases: the kernel's run of {shape} on {board} at tick_seed={seed}");
    let lines = crate::experiments::compare::run_under_icount(kernel, config, &what)?;
    let (verdict, judge_board) = kernel_verdict(board, shape, &lines)?;
    Ok(summary(&verdict, &judge_board))
}

/// The kernel's run of classic shape `shape` on `board` from its output
/// `lines` (with `trace_switches=`), judged as the simulator's runs are
/// (`fairway_sim::judge`, 10 periods of settling per window).
pub fn kernel_verdict(
    board: &str,
    shape: &str,
    lines: &[String],
) -> Result<(fairway_sim::judge::Verdict, fairway_sim::judge::JudgeBoard), String> {
    use fairway_sim::judge;
    let shape = judge::classic_shapes()
        .into_iter()
        .find(|s| s.name == shape)
        .ok_or_else(|| format!("no classic shape {shape}"))?;
    let judge_board = judge::load_board(board).map_err(|e| e.to_string())?;
    let switches = crate::experiments::compare::kernel_switches(lines)?;
    let end = switches.last().map_or(0, |s| s.0);
    let verdict = judge::judge(
        &judge_board,
        &shape,
        &judge::stretches(&switches, end),
        judge::SETTLE_NS,
    );
    Ok((verdict, judge_board))
}

/// `cargo xtask judge-phases [--board B]... [--shape S]... [--seeds N]
/// [--kernel FILE] [--sim-only]`: for each board and shape, one row per
/// `tick_seed` 0..N (default 8): the simulator's energy ratio and placement
/// verdict, and the kernel's under icount.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let mut boards = Vec::new();
    let mut shapes = Vec::new();
    let mut seeds = 8;
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
            "--board" => boards.push(value()?),
            "--shape" => shapes.push(value()?),
            "--seeds" => {
                let text = value()?;
                seeds = text
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| (1..=1000).contains(&n))
                    .ok_or_else(|| format!("--seeds {text}: not a number in 1..=1000"))?;
            }
            "--kernel" => kernel = Some(PathBuf::from(value()?)),
            "--sim-only" => {
                sim_only = true;
                i += 1;
                continue;
            }
            other => return Err(format!("judge-phases: unknown argument '{other}'\n{USAGE}")),
        }
        i += 2;
    }
    if boards.is_empty() {
        boards = BOARDS.iter().map(|b| b.to_string()).collect();
    }
    let known: Vec<String> = judge::classic_shapes()
        .into_iter()
        .map(|s| s.name)
        .collect();
    if shapes.is_empty() {
        shapes = known.clone();
    }
    if let Some(bad) = shapes.iter().find(|s| !known.contains(s)) {
        return Err(format!(
            "--shape {bad}: not a classic shape (one of {known:?})"
        ));
    }
    if let Some(bad) = boards.iter().find(|b| !BOARDS.contains(&b.as_str())) {
        return Err(format!("--board {bad}: the judge runs on {BOARDS:?}"));
    }
    let kernel = if sim_only {
        None
    } else {
        crate::run::tools::ensure()?;
        Some(match kernel {
            Some(path) => path,
            None => crate::run::build::release_kernel()?,
        })
    };
    println!("board     shape                 seed  simulator      kernel");
    for board in &boards {
        for shape_name in &shapes {
            let shape = judge::classic_shapes()
                .into_iter()
                .find(|s| &s.name == shape_name)
                .expect("checked above");
            let spread = judge::phase_spread(board, &shape, "", 0..seeds, SETTLE_NS)
                .map_err(|e| e.to_string())?;
            for (index, &seed) in spread.seeds.iter().enumerate() {
                let simulated = (
                    spread.ratios[index],
                    !spread.placement_failures.contains(&seed),
                );
                let kernel_cell = match &kernel {
                    Some(kernel) => cell(kernel_run(kernel, board, shape_name, seed)?),
                    None => "-".to_string(),
                };
                println!(
                    "{board:9} {shape_name:21} {seed:4}  {}  {kernel_cell}",
                    cell(simulated)
                );
            }
        }
    }
    println!(
        "(energy ratio, actual over best; ok: the placement check holds; class: a task ran \
         on a CPU class other than the best placement's; energy: above LISA's 1.05)"
    );
    Ok(ExitCode::SUCCESS)
}
