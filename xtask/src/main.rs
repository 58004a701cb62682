//! Fairway's host tooling.
//!
//! ```text
//! cargo xtask runner KERNEL [options]   boot an image under QEMU (cargo's runner for `cargo run`)
//! cargo xtask test [--only NAME] [--sabotage] [--no-lint]
//!                                       lints, host tests, then the QEMU test matrix
//! cargo xtask lint                      section citations resolve, the kernel's floors, sizes, rustfmt, clippy
//! cargo xtask hil KERNEL --console PATH (--tftp DIR | --serial-load) [options]
//!                                       boot on a board through U-Boot (docs/hil.md)
//! cargo xtask ensure-tools              install QEMU, dtc and U-Boot for QEMU if missing
//! cargo xtask trace-checks              traced simulator runs decoded by Perfetto's bindings
//! cargo xtask rtapp-log-checks          rt-app's logs of a kernel run against the scenario and the simulator
//! cargo xtask plot TRACE OUT_DIR [--from T] [--to T]
//!                                       PNG and SVG charts of a traced run (docs/tracing.md)
//! cargo xtask experiment KERNEL [LOOPS] the uclamp and group-depth sched-pipe table
//! cargo xtask bandwidth-experiment KERNEL [--quick | --energy]
//!                                       the bandwidth timer interleaving table (bw_timer=);
//!                                       --energy: on juno-r2 with schedutil, with energy
//! cargo xtask cpufreq-experiment KERNEL schedutil's call sites (cpufreq_update=) on juno-r2
//! cargo xtask eas-experiment KERNEL [--runs N] [--quick]
//!                                       EAS while overutilized (eas_overutilized=) on pixel6
//! cargo xtask agree TRANSCRIPT SCENARIO.json rr|cfs|eevdf [--limit N] [--sim FILE.csv]
//!                                       compare a saved kernel trace with the simulator
//! cargo xtask compare SCENARIO.json [--board NAME] [--cpus N] [--append "ARGS"]
//!                                       the kernel under icount beside the simulator, one table
//! cargo xtask compare-policies SCENARIO.json [--variant "ARGS"]... [--sim-only]
//!                                       policies and feature sets side by side, simulator and kernel
//! cargo xtask judge-phases [--board NAME]... [--shape NAME]... [--seeds N] [--sim-only]
//!                                       the EAS placement judge across tick phases (tick_seed),
//!                                       the kernel under icount beside the simulator
//! cargo xtask report TRANSCRIPT [--json FILE]
//!                                       summarise a saved transcript's report records
//! ```
//! Runner options: `--board NAME` (default qemu-virt), `--cpus N`, `--gic 2|3`,
//! `--scenario FILE.json` (run an rt-app scenario), `--el 1|2`, `--icount`,
//! `--image` (boot a flat arm64 Image, device tree in x0), `--timeout SECONDS`,
//! `--append "ARGS"`, `--dtb FILE`, `--report FILE.json` (write the end-of-run
//! report; see `docs/report-format.md`), `--trace FILE` (a Perfetto trace of an
//! rt-app run, from a kernel built with `--features trace`; see
//! `docs/tracing.md`), `--explain N` (why the first N decisions were made, as
//! the simulator prints it; the same kernel), `--rtapp-logs DIR` (rt-app's
//! per-task logs of an rt-app run, `DIR/rt-app-TASK-N.log`, as the simulator
//! writes them), `--verbose` (notes on what a scenario sets that has no effect
//! here).
//!
//! # Layers
//!
//! This file is the dispatch only; each command lives in a folder by
//! concern, and a folder imports only the folders below it (an arrow is
//! "may import"), so no two import each other:
//!
//! ```text
//! main.rs       the dispatch: may import every folder
//! test/         the test command: case, harness, images/, areas/
//!   ├─► lint/         cargo xtask lint: citations, layers, floors, sizes, rustfmt, clippy
//!   ├─► experiments/  the experiments, benchmarks, comparisons with the simulator
//!   ├─► hil/          the board runner (U-Boot over a serial console)
//!   └─► run/ and plot/
//! lint/, experiments/, hil/ ─► run/     nothing else, and not each other
//! run/          the runner: QEMU, boards, progress, report, decoders, tools
//!   └─► plot/     charts of a traced run; imports nothing of the crate
//! ```
//!
//! `cargo xtask lint` checks it (`lint/layers.rs`, whose `ALLOWED` is this
//! table): an import of `crate::X` (or `super::` up to here) against it
//! fails, naming the file and line.

mod experiments;
mod hil;
mod lint;
mod plot;
mod run;
mod test;

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> String {
    "usage: cargo xtask <runner KERNEL [--board NAME] [--cpus N] [--gic 2|3] [--el 1|2] [--icount] [--image] \
     [--timeout S] [--append ARGS] [--dtb FILE] [--scenario FILE.json] [--report FILE.json] [--trace FILE] [--explain N] [--rtapp-logs DIR] [--verbose] [--qemu-log FILE] \
     | compare SCENARIO.json [--board NAME] [--cpus N] [--append ARGS] [--timeout S] [--kernel FILE] [--phases N] [--check] | compare-policies SCENARIO.json [--variant ARGS]... [--board NAME] [--cpus N] [--timeout S] [--kernel FILE] [--sim-only] | policy-check NAME [--seconds S] | judge-phases [--board NAME]... [--shape NAME]... [--seeds N] [--kernel FILE] [--sim-only] | report TRANSCRIPT [--json FILE] | agree TRANSCRIPT SCENARIO.json POLICY [--limit N] [--sim FILE.csv] | replay TRANSCRIPT | bandwidth-experiment KERNEL [--quick | --energy] | cpufreq-experiment KERNEL | eas-experiment KERNEL [--runs N] [--quick] | bench [--check | --check-targets] [--kernel FILE] | test [--only NAME] [--sabotage] [--no-lint] [--gaps | --groups-sweep] | hil KERNEL --console PATH (--tftp DIR | --serial-load) [...] (docs/hil.md) | lint | ensure-tools | board-blobs | trace-checks [--only NAME] | labs [--only NAME] [--checks-only] | rtapp-log-checks | plot TRACE OUT_DIR [--from T] [--to T]>"
        .into()
}

/// The usage of `command` (its alternative of [`usage`]), or all of it.
fn usage_of(command: Option<&str>) -> String {
    let all = usage();
    let body = all
        .trim_start_matches("usage: cargo xtask <")
        .trim_end_matches('>');
    match command.and_then(|c| {
        alternatives(body)
            .into_iter()
            .find(|alternative| alternative.split_whitespace().next() == Some(c))
    }) {
        Some(alternative) => format!("usage: cargo xtask {alternative}"),
        None => all,
    }
}

/// The commands of `body`, split at its ` | ` outside brackets (an option's
/// own alternatives, `[--gaps | --groups-sweep]`, stay whole).
fn alternatives(body: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (index, c) in body.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            '|' if depth == 0 => {
                parts.push(body[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(body[start..].trim());
    parts
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every command takes -h and --help, wherever on its line.
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{}", usage_of(args.first().map(String::as_str)));
        return ExitCode::SUCCESS;
    }
    let result = match args.first().map(String::as_str) {
        Some("runner") => run::runner::command(&args[1..], usage),
        Some("test") => test::run(&args[1..]),
        Some("lint") => lint::run().map(|()| ExitCode::SUCCESS),
        Some("experiment") => match args.get(1) {
            Some(kernel) => experiments::uclamp_depth::run(
                &PathBuf::from(kernel),
                args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000),
            ),
            None => Err("experiment needs the kernel image (target/aarch64-unknown-none-softfloat/release/fairway)".into()),
        },
        Some("bandwidth-experiment") => experiments::bandwidth::command(&args[1..]),
        Some("cpufreq-experiment") => experiments::cpufreq::command(&args[1..]),
        Some("eas-experiment") => experiments::eas::command(&args[1..]),
        Some("bench") => experiments::bench::command(&args[1..]),
        // A rig needs no QEMU: only the toolchain (the Image is made with llvm-objcopy).
        // The console's settings survive a Ctrl-C (`stop_on_signals`).
        Some("hil") => hil::console::stop_on_signals().and_then(|()| hil::command(&args[1..])),
        Some("ensure-tools") => run::tools::ensure().map(|()| ExitCode::SUCCESS),
        Some("plot") => plot::command(&args[1..]),
        Some("trace-checks") => run::tools::ensure()
            .and_then(|()| match &args[1..] {
                [] => test::areas::trace_checks::run(None),
                [flag, name] if flag == "--only" => test::areas::trace_checks::run(Some(name)),
                _ => Err(usage()),
            })
            .map(|(_, failed)| {
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }),
        Some("labs") => test::areas::labs::command(&args[1..]),
        Some("rtapp-log-checks") => run::tools::ensure()
            .and_then(|()| test::areas::rtapp_log_checks::run())
            .map(|(_, failed)| {
                if failed == 0 {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }),
        Some("report") => run::report::command(&args[1..]),
        Some("agree") => experiments::agree::command(&args[1..]),
        Some("compare") => experiments::compare::command(&args[1..]),
        Some("compare-policies") => experiments::compare_policies::command(&args[1..]),
        Some("policy-check") => experiments::policy_check::command(&args[1..]),
        Some("judge-phases") => experiments::judge_phases::command(&args[1..]),
        Some("replay") => experiments::replay::command(&args[1..]),
        Some("board-blobs") => run::board::board_blobs(),
        _ => Err(usage()),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_has_its_usage_for_dash_h() {
        assert_eq!(
            usage_of(Some("replay")),
            "usage: cargo xtask replay TRANSCRIPT"
        );
        assert_eq!(
            usage_of(Some("plot")),
            "usage: cargo xtask plot TRACE OUT_DIR [--from T] [--to T]"
        );
        assert!(
            usage_of(Some("runner")).starts_with("usage: cargo xtask runner KERNEL [--board NAME]")
        );
        assert_eq!(
            usage_of(Some("labs")),
            "usage: cargo xtask labs [--only NAME] [--checks-only]"
        );
        assert_eq!(usage_of(None), usage());
        assert_eq!(usage_of(Some("nonsense")), usage());
    }
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    /// A command's usage keeps its options' own alternatives.
    #[test]
    fn a_commands_usage_is_whole() {
        assert_eq!(
            usage_of(Some("test")),
            "usage: cargo xtask test [--only NAME] [--sabotage] [--no-lint] [--gaps | --groups-sweep]"
        );
        assert_eq!(
            usage_of(Some("bench")),
            "usage: cargo xtask bench [--check | --check-targets] [--kernel FILE]"
        );
        assert!(usage_of(Some("hil")).ends_with("(docs/hil.md)"));
        assert_eq!(
            usage_of(Some("policy-check")),
            "usage: cargo xtask policy-check NAME [--seconds S]"
        );
    }
}
