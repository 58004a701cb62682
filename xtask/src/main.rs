//! Fairway's host tooling.
//!
//! ```text
//! cargo xtask runner KERNEL [options]   boot an image under QEMU (cargo's runner for `cargo run`)
//! cargo xtask test [--only NAME] [--sabotage] [--no-lint]
//!                                       lints, host tests, then the QEMU test matrix
//! cargo xtask lint                      section citations resolve, the kernel's floors, rustfmt, clippy
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

mod agree;
mod bandwidth_cases;
mod bandwidth_experiment;
mod bench;
mod board;
mod board_cases;
mod citations;
mod compare;
mod cpufreq_experiment;
mod eas_cases;
mod eas_experiment;
mod experiment;
mod floors;
mod hil;
mod hil_cases;
mod icount_warnings;
mod judge_phases;
mod kernel_trace;
mod lab_keys;
mod plot;
mod progress;
mod qemu;
mod replay;
mod report;
mod rtapp_log_cases;
mod rtapp_logs;
mod test;
mod tools;
mod trace_cases;
mod workload_cases;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use board::Board;
use qemu::QemuConfig;

fn usage() -> String {
    "usage: cargo xtask <runner KERNEL [--board NAME] [--cpus N] [--gic 2|3] [--el 1|2] [--icount] [--image] \
     [--timeout S] [--append ARGS] [--dtb FILE] [--scenario FILE.json] [--report FILE.json] [--trace FILE] [--explain N] [--rtapp-logs DIR] [--verbose] [--qemu-log FILE] \
     | compare SCENARIO.json [--board NAME] [--cpus N] [--append ARGS] [--timeout S] [--kernel FILE] [--phases N] [--check] | judge-phases [--board NAME]... [--shape NAME]... [--seeds N] [--kernel FILE] [--sim-only] | report TRANSCRIPT [--json FILE] | agree TRANSCRIPT SCENARIO.json POLICY [--limit N] [--sim FILE.csv] | replay TRANSCRIPT | bandwidth-experiment KERNEL [--quick | --energy] | cpufreq-experiment KERNEL | eas-experiment KERNEL [--runs N] [--quick] | bench [--check | --check-targets] [--kernel FILE] | test [--only NAME] [--sabotage] [--no-lint] [--gaps | --groups-sweep] | hil KERNEL --console PATH (--tftp DIR | --serial-load) [...] (docs/hil.md) | lint | ensure-tools | board-blobs | trace-checks | labs [--only NAME] [--checks-only] | rtapp-log-checks | plot TRACE OUT_DIR [--from T] [--to T]>"
        .into()
}

/// Parses the runner options that follow the kernel path.
fn parse_runner_options(args: &[String]) -> Result<QemuConfig, String> {
    let value = |i: usize, flag: &str| {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    let number = |text: String, flag: &str| {
        text.parse::<u32>()
            .map_err(|_| format!("{flag} {text}: not a number"))
    };
    let board_name = args
        .iter()
        .position(|a| a == "--board")
        .map(|i| value(i, "--board"))
        .transpose()?
        .or_else(|| std::env::var("FAIRWAY_BOARD").ok())
        .unwrap_or_else(|| "qemu-virt".into());
    let mut config = QemuConfig::for_board(Board::load(&board_name)?);
    let mut seen: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag != "--append" && seen.contains(&flag) {
            return Err(format!("{flag} is given twice"));
        }
        seen.push(flag);
        match flag {
            "--board" => i += 1,
            "--cpus" => {
                config.cpus = number(value(i, flag)?, flag)?;
                i += 1;
            }
            "--gic" => {
                config.gic = number(value(i, flag)?, flag)?;
                i += 1;
            }
            "--el" => {
                config.el = number(value(i, flag)?, flag)?;
                i += 1;
            }
            "--icount" => config.icount = true,
            "--verbose" => config.verbose = true,
            "--image" => config.as_image = true,
            "--timeout" => {
                let seconds = number(value(i, flag)?, flag)?;
                if seconds == 0 {
                    return Err("--timeout 0: the limit must be at least 1 second".into());
                }
                config.timeout = Duration::from_secs(u64::from(seconds));
                i += 1;
            }
            "--append" => {
                if !config.append.is_empty() {
                    config.append.push(' ');
                }
                config.append.push_str(&value(i, flag)?);
                i += 1;
            }
            "--scenario" => {
                config.scenario = Some(PathBuf::from(value(i, flag)?));
                i += 1;
            }
            "--dtb" => {
                config.dtb = Some(PathBuf::from(value(i, flag)?));
                i += 1;
            }
            "--qemu-log" => {
                // Every executed translation block and its instructions, for
                // docs/measurements/profile.py (slow: use few loops).
                let file = value(i, flag)?;
                config.extra_arguments.extend([
                    "-d".into(),
                    "in_asm,exec,nochain".into(),
                    "-D".into(),
                    file,
                ]);
                i += 1;
            }
            other => return Err(format!("unknown option '{other}'\n{}", usage())),
        }
        i += 1;
    }
    config.validate()?;
    config.check_dtb()?;
    if config.dtb.is_none() {
        config.use_board_device_tree()?;
    }
    config.load_scenario()?;
    config.check_command_line()?;
    Ok(config)
}

fn runner(args: &[String]) -> Result<ExitCode, String> {
    let (kernel, options) = args
        .split_first()
        .ok_or_else(|| format!("runner needs the kernel image\n{}", usage()))?;
    tools::ensure()?;
    let mut options = options.to_vec();
    let report_json = match options.iter().position(|a| a == "--report") {
        Some(i) if i + 1 < options.len() => {
            let path = PathBuf::from(options.remove(i + 1));
            options.remove(i);
            Some(path)
        }
        Some(_) => return Err("--report needs a file name".into()),
        None => None,
    };
    let trace_file = match options.iter().position(|a| a == "--trace") {
        Some(i) if i + 1 < options.len() => {
            let path = PathBuf::from(options.remove(i + 1));
            options.remove(i);
            Some(path)
        }
        Some(_) => return Err("--trace needs a file name".into()),
        None => None,
    };
    let explain = match options.iter().position(|a| a == "--explain") {
        Some(i) if i + 1 < options.len() => {
            let count = options.remove(i + 1);
            options.remove(i);
            Some(
                count
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        format!("--explain {count}: the number of decisions to explain, at least 1")
                    })?,
            )
        }
        Some(_) => return Err("--explain needs the number of decisions to explain".into()),
        None => None,
    };
    let rtapp_logs = match options.iter().position(|a| a == "--rtapp-logs") {
        Some(i) if i + 1 < options.len() => {
            let path = PathBuf::from(options.remove(i + 1));
            options.remove(i);
            Some(path)
        }
        Some(_) => return Err("--rtapp-logs needs a directory".into()),
        None => None,
    };
    let mut config = parse_runner_options(&options)?;
    // The outputs are checked before QEMU starts: an unwritable path must not
    // lose a run of many minutes.
    for (option, path) in [("--report", &report_json), ("--trace", &trace_file)] {
        if let Some(path) = path {
            check_output_file(path).map_err(|e| format!("{option} {}: {e}", path.display()))?;
        }
    }
    if let Some(dir) = &rtapp_logs {
        fairway_sim::cli::check_folder(dir)
            .map_err(|e| format!("--rtapp-logs {}: {e}", dir.display()))?;
    }
    if (trace_file.is_some() || explain.is_some())
        && !kernel_has_tracepoints(std::path::Path::new(kernel))?
    {
        let option = if trace_file.is_some() {
            "--trace"
        } else {
            "--explain"
        };
        return Err(format!(
            "{option}: {kernel} was built without tracepoints; build and run it with them: \
             cargo run --release --features trace -- {option} ..."
        ));
    }
    if let Some(count) = explain {
        config.append.push_str(&format!(" explain={count}"));
        config.append = config.append.trim_start().to_string();
    }
    if (trace_file.is_some() || explain.is_some()) && !config.append.contains("trace_records=") {
        if !config.append.is_empty() {
            config.append.push(' ');
        }
        config
            .append
            .push_str(&format!("trace_records={DEFAULT_TRACE_RECORDS}"));
    }
    if rtapp_logs.is_some() {
        if config.scenario.is_none() {
            return Err(
                "--rtapp-logs needs --scenario FILE.json: only rt-app runs keep rt-app's logs"
                    .into(),
            );
        }
        if !config.append.contains("rtapp_log_rows=") {
            if !config.append.is_empty() {
                config.append.push(' ');
            }
            config
                .append
                .push_str(&format!("rtapp_log_rows={}", rtapp_logs::DEFAULT_ROWS));
        }
    }
    eprintln!(
        "xtask: booting {} on {} ({}; {} CPUs, GICv{}, EL{}{})",
        kernel,
        config.board.name,
        config.board.description,
        config.cpus,
        config.gic,
        config.el,
        if config.icount { ", icount" } else { "" }
    );
    // The progress line, on a terminal: QEMU's monitor on a socket of this
    // run's own, read by the line's thread (progress.rs).
    let progress = progress::wanted()
        .then(|| std::fs::read(kernel).ok())
        .flatten()
        .and_then(|elf| progress::tick_time_address(&elf))
        .map(|address| {
            let socket =
                std::env::temp_dir().join(format!("fairway-qmp-{}.sock", std::process::id()));
            config.extra_arguments.extend([
                "-qmp".into(),
                format!("unix:{},server=on,wait=off", socket.display()),
            ]);
            progress::ProgressLine::start(socket, address, config.scenario_duration_ns)
        });
    let outcome = qemu::run(&PathBuf::from(kernel), &config);
    drop(progress);
    let outcome = outcome?;
    let kernel_spoke = outcome.lines.iter().any(|l| !l.starts_with("qemu: "));
    eprintln!(
        "xtask: {} with {} after {:.2} s",
        if kernel_spoke {
            "kernel exited"
        } else {
            "QEMU stopped before the kernel printed anything; it exited"
        },
        match outcome.status {
            Some(code) => format!("status {code}"),
            None => "no status (timeout)".into(),
        },
        outcome.wall.as_secs_f64()
    );
    icount_warnings::print(&outcome.lines, config.icount);
    // A bad report (or trace) fails a clean run, but never hides a failing
    // exit status.
    let mut written = report::emit(&outcome.lines, report_json.as_deref());
    if let (Ok(()), Some(path)) = (&written, &trace_file) {
        written = write_trace(&outcome.lines, path);
    }
    if let (Ok(()), Some(_)) = (&written, explain) {
        written = kernel_trace::explained(&outcome.lines).and_then(|explained| {
            let explained = explained.ok_or("--explain: the kernel printed no records")?;
            for line in explained.lines() {
                println!("{line}");
            }
            Ok(())
        });
    }
    if let (Ok(()), Some(dir)) = (&written, &rtapp_logs) {
        written = rtapp_logs::write(&outcome.lines, dir);
    }
    Ok(exit_status(outcome.status, written))
}

/// Checks that output file `path` can be written, without emptying a file
/// that is already there (it is replaced after the run).
fn check_output_file(path: &std::path::Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(|_| ())
}

/// The command's exit status from the kernel's (`None`: no verdict, 124 as
/// `timeout` gives) and whether the report (or trace) could be written: a
/// bad report fails a clean run, but never hides a failing exit status.
pub(crate) fn exit_status(status: Option<i32>, written: Result<(), String>) -> ExitCode {
    if let Err(message) = written {
        eprintln!("xtask: {message}");
        if status == Some(0) {
            return ExitCode::FAILURE;
        }
    }
    match status {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(code.clamp(1, 255) as u8),
        None => ExitCode::from(124),
    }
}

/// Whether the kernel image was built with tracepoints: it holds the marker
/// `FEATURE_MARKER` of `src/arch/aarch64/mod.rs`.
fn kernel_has_tracepoints(kernel: &std::path::Path) -> Result<bool, String> {
    const MARKER: &[u8] = b"fairway-features: trace\0";
    let image = std::fs::read(kernel).map_err(|e| format!("{}: {e}", kernel.display()))?;
    Ok(image.windows(MARKER.len()).any(|window| window == MARKER))
}

/// Records per CPU the runner asks for with `--trace` when `--append` does
/// not set `trace_records=` (24 bytes each).
const DEFAULT_TRACE_RECORDS: u64 = 200_000;

/// `--trace FILE`: the kernel's tracepoint records as a Perfetto trace.
fn write_trace(lines: &[String], path: &std::path::Path) -> Result<(), String> {
    let trace = kernel_trace::from_lines(lines)?.ok_or(
        "--trace: the kernel printed no tracepoint records (only rt-app runs record them)",
    )?;
    std::fs::write(path, trace.to_perfetto()).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!(
        "xtask: trace: {} events and {} counter values of {} tasks on {} CPUs in {}",
        trace.records.len(),
        trace.counters.len(),
        trace.tasks.len(),
        trace.nr_cpus,
        path.display()
    );
    Ok(())
}

/// `cargo xtask board-blobs`: compiles each board's tree for the simulator
/// (`boards/NAME/sim.dtb`, `fairway_sim::board::compile_merged`) with dtc, so that
/// the simulator reads boards without it.
fn board_blobs() -> Result<ExitCode, String> {
    tools::ensure()?;
    let boards = board::workspace_root().join("boards");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&boards)
        .map_err(|e| format!("{}: {e}", boards.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|dir| dir.join("board.toml").exists())
        .collect();
    folders.sort();
    for dir in folders {
        let path = dir.to_string_lossy().into_owned();
        if let Some(blob) = fairway_sim::board::compile_merged(&path).map_err(|e| e.to_string())? {
            let target = dir.join(fairway_sim::board::SIM_BLOB);
            std::fs::write(&target, &blob).map_err(|e| format!("{}: {e}", target.display()))?;
            println!("{}: {} bytes", target.display(), blob.len());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The usage of `command` (its alternative of [`usage`]), or all of it.
fn usage_of(command: Option<&str>) -> String {
    let all = usage();
    let body = all
        .trim_start_matches("usage: cargo xtask <")
        .trim_end_matches('>');
    match command.and_then(|c| {
        body.split(" | ")
            .find(|alternative| alternative.split_whitespace().next() == Some(c))
    }) {
        Some(alternative) => format!("usage: cargo xtask {alternative}"),
        None => all,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every command takes -h and --help, wherever on its line.
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{}", usage_of(args.first().map(String::as_str)));
        return ExitCode::SUCCESS;
    }
    let result = match args.first().map(String::as_str) {
        Some("runner") => runner(&args[1..]),
        Some("test") => test::run(&args[1..]),
        Some("lint") => test::lint().map(|()| ExitCode::SUCCESS),
        Some("experiment") => match args.get(1) {
            Some(kernel) => experiment::run(
                &PathBuf::from(kernel),
                args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000),
            ),
            None => Err("experiment needs the kernel image (target/aarch64-unknown-none-softfloat/release/fairway)".into()),
        },
        Some("bandwidth-experiment") => bandwidth_experiment::command(&args[1..]),
        Some("cpufreq-experiment") => cpufreq_experiment::command(&args[1..]),
        Some("eas-experiment") => eas_experiment::command(&args[1..]),
        Some("bench") => bench::command(&args[1..]),
        // A rig needs no QEMU: only the toolchain (the Image is made with llvm-objcopy).
        // The console's settings survive a Ctrl-C (`stop_on_signals`).
        Some("hil") => hil::console::stop_on_signals().and_then(|()| hil::command(&args[1..])),
        Some("ensure-tools") => tools::ensure().map(|()| ExitCode::SUCCESS),
        Some("plot") => plot::command(&args[1..]),
        Some("trace-checks") => tools::ensure()
            .and_then(|()| trace_cases::run())
            .map(|(_, failed)| {
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }),
        Some("labs") => lab_keys::command(&args[1..]),
        Some("rtapp-log-checks") => tools::ensure()
            .and_then(|()| rtapp_log_cases::run())
            .map(|(_, failed)| {
                if failed == 0 {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }),
        Some("report") => report::command(&args[1..]),
        Some("agree") => agree::command(&args[1..]),
        Some("compare") => compare::command(&args[1..]),
        Some("judge-phases") => judge_phases::command(&args[1..]),
        Some("replay") => replay::command(&args[1..]),
        Some("board-blobs") => board_blobs(),
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

    /// An output the runner cannot write is refused before QEMU starts; a
    /// file already there is not emptied by the check.
    #[test]
    fn outputs_are_checked_before_the_run() {
        let folder = std::env::temp_dir().join(format!("xtask-outputs-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let kept = folder.join("report.json");
        std::fs::write(&kept, "{}").unwrap();
        assert!(check_output_file(&kept).is_ok());
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "{}");
        assert!(check_output_file(std::path::Path::new("/nonexistent-folder/r.json")).is_err());
        assert!(fairway_sim::cli::check_folder(&folder.join("logs")).is_ok());
        assert!(
            fairway_sim::cli::check_folder(std::path::Path::new("/proc/no-such-folder")).is_err()
        );
        let _ = std::fs::remove_dir_all(&folder);
    }
}
