//! The test command: lints, host tests, then kernel images booted under QEMU in
//! a matrix of configurations, each with the outcome and output it must show.
//!
//! `--gaps` runs instead the cases of what Fairway does not achieve yet
//! (`cases::known_gaps`), to show how far off it is; `--groups-sweep`
//! runs the equal-share groups check in all its tick configurations
//! (`areas::groups::groups_sweep`, half of which the default command runs).
//!
//! Every case names what it expects (exit 0, a failing exit, or the runner's
//! timeout) and lines its output must contain. `--sabotage` inverts the first
//! selected case's expectation, to show that a failing case makes the command
//! fail (CI runs it and requires the failure).
//!
//! ```text
//! mod.rs       the command: its options, phases and tally
//! case.rs      a case and its types (`Case`, `Expect`, checks, agreement)
//! harness.rs   a case's QEMU run and verdict, the cases side by side
//! cases.rs     every case: the images' files, then the areas'
//! images/      one file per kernel test image `tests/NAME.rs`: its cases
//! areas/       the `fairway` kernel's cases by area, and the checks that
//!              are not QEMU cases (traces, rt-app's logs, board runner, labs)
//! checks.rs    output readers the case files share; dts.rs: device tree edits
//! ```

pub(crate) mod areas;
pub(crate) mod case;
pub(crate) mod cases;
pub(crate) mod checks;
pub(crate) mod dts;
pub(crate) mod harness;
pub(crate) mod images;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use crate::run::board::workspace_root;
use crate::run::build::cargo;
use crate::run::tools;

pub(crate) use case::{Case, DtsEdit, Expect, OutputCheck};

/// Runs the host tests, returning (passed, failed) from libtest's summaries, and
/// shows the fuzz targets' report lines (`fuzz: TARGET: N cases in T s ...`, printed
/// by `fairway_fuzzing::run` and shown by libtest's `--show-output`).
fn host_tests() -> Result<(u64, u64), String> {
    eprintln!("xtask: host tests (sched, contract, rtapp, sim, trace, devicetree, fuzzing, xtask)");
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "test",
            // Every test binary runs, whatever fails first: a failure must not hide
            // how many others pass or fail.
            "--no-fail-fast",
            "--target",
            "host-tuple",
        ])
        .args(crate::run::build::HOST_PACKAGES)
        .args([
            // The xtask binary's own target directory: the host tests share
            // its dependencies (same profile, same panic strategy) instead of
            // building them a second time in ./target.
            "--target-dir",
            "target/xtask",
            "--",
            "--show-output",
        ])
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (mut passed, mut failed) = (0, 0);
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("test result: ") {
            let number = |word: &str| {
                rest.split(';')
                    .find_map(|part| {
                        part.trim()
                            .strip_suffix(word)?
                            .trim()
                            .rsplit(' ')
                            .next()?
                            .parse::<u64>()
                            .ok()
                    })
                    .unwrap_or(0)
            };
            passed += number("passed");
            failed += number("failed");
        }
        if line.contains("FAILED") || line.contains("panicked") || line.starts_with("fuzz: ") {
            eprintln!("{line}");
        }
    }
    if !output.status.success() && failed == 0 {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        failed += 1;
    }
    eprintln!("xtask: host tests: {passed} passed, {failed} failed");
    Ok((passed, failed))
}

/// Builds the kernel (release profile) and its QEMU test images, and returns
/// image name -> path.
///
/// The test images are built with the `test-images` profile (release without
/// whole-program LTO, Cargo.toml): each fat-LTO link took 25-30 s, a dozen of
/// them about a third of the command's compiling. `timeline_bench`, whose
/// instruction counts have a budget, is built in `release` like the kernel,
/// after the others, so its release image is the one kept.
fn build_images() -> Result<BTreeMap<String, PathBuf>, String> {
    eprintln!("xtask: building kernel images (release; test images: test-images profile)");
    let mut images = BTreeMap::new();
    for args in [
        &[
            "build",
            "--release",
            "--package",
            "fairway",
            "--bins",
            "--message-format=json",
        ][..],
        &[
            "test",
            "--profile",
            "test-images",
            "--package",
            "fairway",
            "--no-run",
            "--message-format=json",
        ][..],
        &[
            "test",
            "--release",
            "--package",
            "fairway",
            "--test",
            "timeline_bench",
            "--no-run",
            "--message-format=json",
        ][..],
    ] {
        let stdout = cargo(args)?;
        for line in stdout.lines() {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if message["reason"] != "compiler-artifact" {
                continue;
            }
            if let (Some(name), Some(executable)) = (
                message["target"]["name"].as_str(),
                message["executable"].as_str(),
            ) {
                images.insert(name.to_string(), PathBuf::from(executable));
            }
        }
    }
    Ok(images)
}

/// The test command's options (its usage is `main.rs`'s).
struct Options {
    only: Option<String>,
    sabotage: bool,
    with_lint: bool,
    with_host: bool,
    gaps: bool,
    sweep: bool,
    jobs: Option<usize>,
}

impl Options {
    /// Reads the command line; an unknown option is refused.
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Options {
            only: None,
            sabotage: false,
            with_lint: true,
            with_host: true,
            gaps: false,
            sweep: false,
            jobs: None,
        };
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--only" => {
                    options.only = Some(args.get(i + 1).cloned().ok_or("--only needs a name")?);
                    i += 1;
                }
                "--sabotage" => options.sabotage = true,
                "--gaps" => options.gaps = true,
                "--groups-sweep" => options.sweep = true,
                "--no-lint" => options.with_lint = false,
                "--jobs" => {
                    let value = args.get(i + 1).ok_or("--jobs needs a number")?;
                    options.jobs = Some(
                        value
                            .parse::<usize>()
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or_else(|| format!("--jobs {value}: a number above 0"))?,
                    );
                    i += 1;
                }
                "--qemu-only" => {
                    options.with_lint = false;
                    options.with_host = false;
                }
                other => return Err(format!("test: unknown option '{other}'")),
            }
            i += 1;
        }
        Ok(options)
    }
}

/// Each phase's wall time, printed at the end: where the command's time goes.
struct Phases {
    done: Vec<(&'static str, f64)>,
    start: Instant,
}

impl Phases {
    /// The first phase starts now.
    fn start() -> Self {
        Phases {
            done: Vec::new(),
            start: Instant::now(),
        }
    }

    /// Phase `name` ends now; the next one starts.
    fn done(&mut self, name: &'static str) {
        self.done.push((name, self.start.elapsed().as_secs_f64()));
        self.start = Instant::now();
    }

    /// The phases' line.
    fn print(&self) {
        let phases: Vec<String> = self
            .done
            .iter()
            .map(|(name, seconds)| format!("{name} {seconds:.0} s"))
            .collect();
        eprintln!("xtask: phases: {}", phases.join(", "));
    }
}

/// `cargo xtask test`.
pub fn run(args: &[String]) -> Result<ExitCode, String> {
    let Options {
        only,
        sabotage,
        mut with_lint,
        mut with_host,
        gaps,
        sweep,
        jobs,
    } = Options::parse(args)?;
    let start = Instant::now();
    tools::ensure()?;
    if gaps && sweep {
        return Err("test: --gaps and --groups-sweep select different cases; give one".into());
    }
    if only.is_some() || gaps || sweep {
        with_lint = false;
        with_host = false;
    }
    let mut phases = Phases::start();
    if with_lint {
        crate::lint::run()?;
        phases.done("lint");
    }
    let (mut passed, mut failed) = if with_host {
        host_checks(&mut phases)?
    } else {
        (0, 0)
    };
    let images = build_images()?;
    phases.done("kernel images");
    let all = if gaps {
        cases::known_gaps()
    } else if sweep {
        areas::groups::groups_sweep()
    } else {
        cases::cases()
    };
    let bench_only = only.as_deref() == Some("bench");
    let selected: Vec<Case> = all
        .into_iter()
        .filter(|c| !bench_only && only.as_ref().is_none_or(|o| c.name.contains(o.as_str())))
        .collect();
    // The benchmark figures (issue 15, `crate::experiments::bench`): with the whole suite
    // against their ceilings, with `--gaps` against issue 15's targets, alone
    // with `--only bench`.
    let with_bench = !sweep && (only.is_none() || bench_only);
    let with_hil = !gaps && !sweep && !bench_only;
    let hil_selected = with_hil && only.as_deref().is_none_or(areas::board_runner::matches);
    if selected.is_empty() && !bench_only && !hil_selected {
        return Err("no QEMU case matches --only".into());
    }
    let (mut qemu_passed, mut qemu_failed) =
        harness::run_qemu_cases(&selected, &images, sabotage, jobs)?;
    phases.done("QEMU cases");
    if hil_selected && only.is_none() {
        // The board runner's own kernels and the benchmarks' build side by
        // side: each ends in a link that runs on one core.
        areas::board_runner::build_kernels_beside(|| {
            if with_bench {
                let _ = crate::experiments::bench::build_kernel();
            }
        });
        phases.done("kernels of the board runner and benchmarks");
    }
    if hil_selected {
        // The board runner against its rehearsal board (QEMU with U-Boot).
        let (hil_passed, hil_failed) = areas::board_runner::run(only.as_deref(), &images);
        qemu_passed += hil_passed;
        qemu_failed += hil_failed;
        phases.done("board runner");
    }
    eprintln!("xtask: QEMU tests: {qemu_passed} passed, {qemu_failed} failed");
    passed += qemu_passed;
    failed += qemu_failed;
    if with_bench {
        let (bench_passed, bench_failed) = bench_checks(gaps)?;
        passed += bench_passed;
        failed += bench_failed;
        phases.done("benchmarks");
    }
    phases.print();
    eprintln!(
        "xtask: whole test command took {:.1} s",
        start.elapsed().as_secs_f64()
    );
    println!("fairway: {passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The host's checks: the host crates' tests, the traced runs and lab
/// sheets, rt-app's logs; passed and failed, each phase timed.
fn host_checks(phases: &mut Phases) -> Result<(u64, u64), String> {
    let (mut passed, mut failed) = host_tests()?;
    phases.done("host tests");
    let (trace_passed, trace_failed) = areas::trace_checks::run(None)?;
    passed += trace_passed;
    failed += trace_failed;
    phases.done("trace and lab checks");
    let (log_passed, log_failed) = areas::rtapp_log_checks::run()?;
    passed += log_passed;
    failed += log_failed;
    phases.done("rt-app log checks");
    Ok((passed, failed))
}

/// The benchmark figures measured and each checked against its ceiling (or,
/// with `gaps`, issue 15's target): passed and failed.
fn bench_checks(gaps: bool) -> Result<(u64, u64), String> {
    let (mut passed, mut failed) = (0, 0);
    let kernel = crate::experiments::bench::build_kernel()?;
    let figures = crate::experiments::bench::measure(&kernel)?;
    crate::experiments::bench::print_table(&figures);
    crate::experiments::bench::print_scheduler_only(&figures);
    for figure in &figures {
        let (ok, bound, what) = if gaps {
            (figure.within_target(), figure.target, "issue 15's target")
        } else {
            (figure.within_ceiling(), figure.ceiling, "its ceiling")
        };
        if ok {
            passed += 1;
            eprintln!("bench {:<70} ok", figure.what);
        } else {
            failed += 1;
            eprintln!(
                "bench {:<70} FAILED\n    {:.3} is above {what} {bound} by more than 2 %",
                figure.what, figure.value
            );
        }
    }
    Ok((passed, failed))
}
