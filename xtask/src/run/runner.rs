//! The runner (`cargo xtask runner KERNEL [options]`, cargo's runner for
//! `cargo run`): parses the options, boots the image under QEMU with the
//! progress line, and writes what was asked of the run (report, trace,
//! explanations, rt-app's logs).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};
use crate::run::{icount_warnings, kernel_trace, progress, report, rtapp_logs, tools};

/// Parses the runner options that follow the kernel path; an unknown option
/// is refused with `usage`, the command line's usage.
fn parse_runner_options(args: &[String], usage: fn() -> String) -> Result<QemuConfig, String> {
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

/// `cargo xtask runner KERNEL [options]`; an error names `usage`, the
/// command line's usage.
pub fn command(args: &[String], usage: fn() -> String) -> Result<ExitCode, String> {
    let (kernel, options) = args
        .split_first()
        .ok_or_else(|| format!("runner needs the kernel image\n{}", usage()))?;
    tools::ensure()?;
    let mut options = options.to_vec();
    let outputs = Outputs::take(&mut options)?;
    let mut config = parse_runner_options(&options, usage)?;
    outputs.check(kernel)?;
    outputs.ask_the_kernel(&mut config)?;
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
    let progress = start_progress(kernel, &mut config);
    let outcome = qemu::run(&PathBuf::from(kernel), &config);
    drop(progress);
    let outcome = outcome?;
    print_ending(&outcome);
    icount_warnings::print(&outcome.lines, config.icount);
    let written = outputs.write(&outcome.lines);
    Ok(exit_status(outcome.status, written))
}

/// What the runner writes from a run besides its console (`--report`,
/// `--trace`, `--explain`, `--rtapp-logs`): options of the runner, not of
/// QEMU, taken out of the command line before the rest is parsed.
struct Outputs {
    report_json: Option<PathBuf>,
    trace_file: Option<PathBuf>,
    explain: Option<u64>,
    rtapp_logs: Option<PathBuf>,
}

impl Outputs {
    /// The output options, removed from `options`.
    fn take(options: &mut Vec<String>) -> Result<Self, String> {
        let report_json = take_option(options, "--report", "a file name")?.map(PathBuf::from);
        let trace_file = take_option(options, "--trace", "a file name")?.map(PathBuf::from);
        let explain = take_option(options, "--explain", "the number of decisions to explain")?
            .map(|count| {
                count.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    format!("--explain {count}: the number of decisions to explain, at least 1")
                })
            })
            .transpose()?;
        let rtapp_logs = take_option(options, "--rtapp-logs", "a directory")?.map(PathBuf::from);
        Ok(Outputs {
            report_json,
            trace_file,
            explain,
            rtapp_logs,
        })
    }

    /// The outputs are checked before QEMU starts: an unwritable path must
    /// not lose a run of many minutes, nor a trace asked of a kernel built
    /// without trace events.
    fn check(&self, kernel: &str) -> Result<(), String> {
        for (option, path) in [
            ("--report", &self.report_json),
            ("--trace", &self.trace_file),
        ] {
            if let Some(path) = path {
                check_output_file(path).map_err(|e| format!("{option} {}: {e}", path.display()))?;
            }
        }
        if let Some(dir) = &self.rtapp_logs {
            fairway_sim::cli::check_folder(dir)
                .map_err(|e| format!("--rtapp-logs {}: {e}", dir.display()))?;
        }
        if (self.trace_file.is_some() || self.explain.is_some())
            && !kernel_has_trace_events(std::path::Path::new(kernel))?
        {
            let option = if self.trace_file.is_some() {
                "--trace"
            } else {
                "--explain"
            };
            return Err(format!(
                "{option}: {kernel} was built without trace events; build and run it with them: \
                 cargo run --release --features trace -- {option} ..."
            ));
        }
        Ok(())
    }

    /// The kernel's options the outputs need on its command line
    /// (`explain=`, `trace_records=`, `rtapp_log_rows=`, unless given).
    fn ask_the_kernel(&self, config: &mut QemuConfig) -> Result<(), String> {
        if let Some(count) = self.explain {
            config.append.push_str(&format!(" explain={count}"));
            config.append = config.append.trim_start().to_string();
        }
        if (self.trace_file.is_some() || self.explain.is_some())
            && !config.append.contains("trace_records=")
        {
            if !config.append.is_empty() {
                config.append.push(' ');
            }
            config
                .append
                .push_str(&format!("trace_records={DEFAULT_TRACE_RECORDS}"));
        }
        if self.rtapp_logs.is_some() {
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
        Ok(())
    }

    /// Writes each output asked for from the run's `lines`, in order, until
    /// one fails. A bad report (or trace) fails a clean run, but never hides
    /// a failing exit status ([`exit_status`]).
    fn write(&self, lines: &[String]) -> Result<(), String> {
        let mut written = report::emit(lines, self.report_json.as_deref());
        if let (Ok(()), Some(path)) = (&written, &self.trace_file) {
            written = write_trace(lines, path);
        }
        if let (Ok(()), Some(_)) = (&written, self.explain) {
            written = kernel_trace::explained(lines).and_then(|explained| {
                let explained = explained.ok_or("--explain: the kernel printed no records")?;
                for line in explained.lines() {
                    println!("{line}");
                }
                Ok(())
            });
        }
        if let (Ok(()), Some(dir)) = (&written, &self.rtapp_logs) {
            written = rtapp_logs::write(lines, dir);
        }
        written
    }
}

/// Removes `flag` and its value from `options`: the value, `None` without
/// the flag, or an error saying the flag `needs` a value when none follows.
fn take_option(
    options: &mut Vec<String>,
    flag: &str,
    needs: &str,
) -> Result<Option<String>, String> {
    match options.iter().position(|a| a == flag) {
        Some(i) if i + 1 < options.len() => {
            let value = options.remove(i + 1);
            options.remove(i);
            Ok(Some(value))
        }
        Some(_) => Err(format!("{flag} needs {needs}")),
        None => Ok(None),
    }
}

/// The progress line, on a terminal: QEMU's monitor on a socket of this
/// run's own, read by the line's thread (progress.rs).
fn start_progress(kernel: &str, config: &mut QemuConfig) -> Option<progress::ProgressLine> {
    progress::wanted()
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
        })
}

/// How the run ended: the kernel's exit status (or QEMU's, when the kernel
/// printed nothing) and the wall time.
fn print_ending(outcome: &qemu::Outcome) {
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

/// Whether the kernel image was built with trace events: it holds the marker
/// `FEATURE_MARKER` of `src/arch/aarch64/mod.rs`.
fn kernel_has_trace_events(kernel: &std::path::Path) -> Result<bool, String> {
    const MARKER: &[u8] = b"fairway-features: trace\0";
    let image = std::fs::read(kernel).map_err(|e| format!("{}: {e}", kernel.display()))?;
    Ok(image.windows(MARKER.len()).any(|window| window == MARKER))
}

/// Records per CPU the runner asks for with `--trace` when `--append` does
/// not set `trace_records=` (24 bytes each).
const DEFAULT_TRACE_RECORDS: u64 = 200_000;

/// `--trace FILE`: the kernel's trace records as a Perfetto trace.
fn write_trace(lines: &[String], path: &std::path::Path) -> Result<(), String> {
    let trace = kernel_trace::from_lines(lines)?
        .ok_or("--trace: the kernel printed no trace records (only rt-app runs record them)")?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
