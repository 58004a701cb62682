//! `cargo xtask experiment`: the uclamp and group-depth experiment of issue 4.
//! sched-pipe (both tasks pinned to CPU 0, one CPU, QEMU icount) at task-group
//! depth 0 to 3, with uclamp's run-queue accounting off and on; prints
//! round trips per second (per second of instructions) and the median
//! instructions of enqueue_task, dequeue_task and the PELT and uclamp updates
//! inside them, as a Markdown table.

use std::path::Path;
use std::process::ExitCode;

use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};

/// The value of `key=` in the first line containing `needle`.
fn value_in(lines: &[String], needle: &str, key: &str) -> Option<u64> {
    let line = lines.iter().find(|l| l.contains(needle))?;
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// Linux on Juno, sched-pipe ops/s from the root group to depth 3 (the issue).
const LINUX_JUNO: [u64; 4] = [50097, 46615, 43806, 41078];

/// Runs the experiment with `kernel` and prints the table.
pub fn run(kernel: &Path, loops: u64) -> Result<ExitCode, String> {
    crate::run::tools::ensure()?;
    let mut rows = Vec::new();
    for uclamp in [false, true] {
        for depth in 0..4 {
            let mut config = QemuConfig::for_board(Board::load("qemu-virt")?);
            config.cpus = 1;
            config.icount = true;
            config.echo = false;
            config.append = format!(
                "workload=sched-pipe pinned=1 loops={loops} depth={depth} uclamp={}",
                u8::from(uclamp)
            );
            let outcome = qemu::run(kernel, &config)?;
            if outcome.status != Some(0) {
                return Err(format!("depth {depth} uclamp {uclamp}: the kernel failed"));
            }
            let lines = &outcome.lines;
            let cost = |op: &str| value_in(lines, &format!("report: cost cpu=all op={op} "), "p50");
            rows.push((
                depth,
                uclamp,
                value_in(lines, "report: metric name=ops_per_second ", "value").unwrap_or(0),
                cost("enqueue_task"),
                cost("dequeue_task"),
                cost("pelt_update"),
                cost("uclamp_update"),
            ));
        }
    }
    println!(
        "| depth | uclamp | ops/s | vs depth 0 | enqueue_task p50 | dequeue_task p50 | PELT p50 | uclamp p50 | Linux/Juno ops/s (uclamp off) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let show = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for &(depth, uclamp, ops, enqueue, dequeue, pelt, clamp) in &rows {
        let base = rows
            .iter()
            .find(|r| r.0 == 0 && r.1 == uclamp)
            .map_or(ops, |r| r.2);
        println!(
            "| {depth} | {} | {ops} | {:+.1} % | {} | {} | {} | {} | {} |",
            if uclamp { "on" } else { "off" },
            (ops as f64 / base as f64 - 1.0) * 100.0,
            show(enqueue),
            show(dequeue),
            show(pelt),
            show(clamp),
            if uclamp {
                "".to_string()
            } else {
                LINUX_JUNO[depth].to_string()
            }
        );
    }
    for depth in 0..4 {
        let off = rows
            .iter()
            .find(|r| r.0 == depth && !r.1)
            .map_or(0, |r| r.2);
        let on = rows.iter().find(|r| r.0 == depth && r.1).map_or(0, |r| r.2);
        println!(
            "depth {depth}: uclamp on costs {:.2} % of ops/s",
            (1.0 - on as f64 / off as f64) * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}
