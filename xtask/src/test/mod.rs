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

/// `cargo xtask test`.
pub fn run(args: &[String]) -> Result<ExitCode, String> {
    let mut only: Option<String> = None;
    let mut sabotage = false;
    let mut with_lint = true;
    let mut with_host = true;
    let mut gaps = false;
    let mut sweep = false;
    let mut jobs: Option<usize> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--only" => {
                only = Some(args.get(i + 1).cloned().ok_or("--only needs a name")?);
                i += 1;
            }
            "--sabotage" => sabotage = true,
            "--gaps" => gaps = true,
            "--groups-sweep" => sweep = true,
            "--no-lint" => with_lint = false,
            "--jobs" => {
                let value = args.get(i + 1).ok_or("--jobs needs a number")?;
                jobs = Some(
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("--jobs {value}: a number above 0"))?,
                );
                i += 1;
            }
            "--qemu-only" => {
                with_lint = false;
                with_host = false;
            }
            other => return Err(format!("test: unknown option '{other}'")),
        }
        i += 1;
    }
    let start = Instant::now();
    tools::ensure()?;
    if gaps && sweep {
        return Err("test: --gaps and --groups-sweep select different cases; give one".into());
    }
    if only.is_some() || gaps || sweep {
        with_lint = false;
        with_host = false;
    }
    // Each phase's wall time, printed at the end: where the command's time goes.
    let mut phases: Vec<(&str, f64)> = Vec::new();
    let mut phase_start = Instant::now();
    let mut phase_done = |name: &'static str, phases: &mut Vec<(&str, f64)>| {
        phases.push((name, phase_start.elapsed().as_secs_f64()));
        phase_start = Instant::now();
    };
    if with_lint {
        crate::lint::run()?;
        phase_done("lint", &mut phases);
    }
    let (mut passed, mut failed) = if with_host { host_tests()? } else { (0, 0) };
    if with_host {
        phase_done("host tests", &mut phases);
        let (trace_passed, trace_failed) = areas::trace_checks::run()?;
        passed += trace_passed;
        failed += trace_failed;
        phase_done("trace and lab checks", &mut phases);
        let (log_passed, log_failed) = areas::rtapp_log_checks::run()?;
        passed += log_passed;
        failed += log_failed;
        phase_done("rt-app log checks", &mut phases);
    }
    let images = build_images()?;
    phase_done("kernel images", &mut phases);
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
    phase_done("QEMU cases", &mut phases);
    if hil_selected && only.is_none() {
        // The board runner's own kernels and the benchmarks' build side by
        // side: each ends in a link that runs on one core.
        areas::board_runner::build_kernels_beside(|| {
            if with_bench {
                let _ = crate::experiments::bench::build_kernel();
            }
        });
        phase_done("kernels of the board runner and benchmarks", &mut phases);
    }
    if hil_selected {
        // The board runner against its rehearsal board (QEMU with U-Boot).
        let (hil_passed, hil_failed) = areas::board_runner::run(only.as_deref(), &images);
        qemu_passed += hil_passed;
        qemu_failed += hil_failed;
        phase_done("board runner", &mut phases);
    }
    eprintln!("xtask: QEMU tests: {qemu_passed} passed, {qemu_failed} failed");
    passed += qemu_passed;
    failed += qemu_failed;
    if with_bench {
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
        phase_done("benchmarks", &mut phases);
    }
    let phases: Vec<String> = phases
        .iter()
        .map(|(name, seconds)| format!("{name} {seconds:.0} s"))
        .collect();
    eprintln!("xtask: phases: {}", phases.join(", "));
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
