//! Runs the QEMU cases: each case's QEMU configuration and device tree, its
//! run and its verdict, the agreement check, and the cases side by side (real
//! time cases alone first, then those under icount N at a time).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::run::board::{Board, workspace_root};
use crate::run::qemu::{self, QemuConfig};
use crate::test::case::{AGREE_SWITCHES, Agree, Case, DtsEdit, Expect};

/// Where edited device trees are loaded for the `device_tree` image: free RAM
/// between QEMU's own device tree (first MiB of RAM) and the kernel (at +2 MiB).
const LOADED_BLOB_ADDRESS: u64 = crate::run::qemu::BLOB_ADDRESS;

fn prepare_dtb(case: &Case, config: &QemuConfig, edit: DtsEdit) -> Result<PathBuf, String> {
    let folder = workspace_root().join("target").join("xtask-dtb");
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    let original = folder.join(format!("{}-qemu.dtb", case.name));
    let _ = std::fs::remove_file(&original);
    qemu::dump_dtb(config, &original)?;
    let dts = run_dtc(&["-I", "dtb", "-O", "dts", "-q"], &original)?;
    let edited = edit(&dts).map_err(|e| format!("{}: {e}", case.name))?;
    let source = folder.join(format!("{}.dts", case.name));
    std::fs::write(&source, edited).map_err(|e| e.to_string())?;
    let target = folder.join(format!("{}.dtb", case.name));
    qemu::compile_dts(&source, &target)?;
    Ok(target)
}

pub(crate) fn run_dtc(args: &[&str], input: &Path) -> Result<String, String> {
    let output = Command::new("dtc")
        .args(args)
        .arg(input)
        .output()
        .map_err(|e| format!("dtc: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "dtc failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn run_case(case: &Case, image: &Path, expect: Expect) -> Result<Vec<String>, String> {
    let mut config = QemuConfig::for_board(Board::load(case.board)?);
    config.cpus = case.cpus;
    config.gic = case.gic;
    config.el = case.el;
    config.icount = case.icount;
    config.append = case.append.clone();
    if let Some(agree) = &case.agree {
        // Room for the harness's own switches (`crate::experiments::agree::HARNESS`). Slices end
        // on the high-resolution timer, as `crate::experiments::agree::simulate_like_kernel` has
        // them end (exact ends; without it both end them at ticks).
        config.append = format!(
            "{} trace_switches={} sched={} hrtick=1",
            config.append,
            AGREE_SWITCHES + 16,
            agree.policy
        )
        .trim()
        .to_string();
        config.scenario = Some(workspace_root().join(agree.scenario));
        config.load_scenario()?;
    }
    config.smp_topology = case.smp_topology.to_string();
    // Every case boots a QEMU that can find no firmware, so a dependence on an
    // optional ROM (a default device's) fails here on any machine.
    config.no_firmware = true;
    config.qemu_defaults = case.qemu_defaults;
    config.timeout = Duration::from_secs(case.timeout_seconds);
    config.echo = false;
    config.as_image = case.as_image;
    if let Some(edit) = case.dts_edit {
        config.dtb = Some(prepare_dtb(case, &config, edit)?);
    } else {
        config.use_board_device_tree()?;
    }
    if let Some(edit) = case.loaded_dts_edit {
        let path = prepare_dtb(case, &config, edit)?;
        let mut blob = std::fs::read(&path).map_err(|e| e.to_string())?;
        if case.corrupt_magic {
            blob[0] ^= 0xff;
            std::fs::write(&path, &blob).map_err(|e| e.to_string())?;
        }
        config.extra_arguments = vec![
            "-device".into(),
            format!(
                "loader,file={},addr={LOADED_BLOB_ADDRESS:#x},force-raw=on",
                path.display()
            ),
        ];
        config.append = format!("dtb={LOADED_BLOB_ADDRESS:#x} dtb_size={}", blob.len());
    }
    if let Some(scenario) = case.scenario {
        config.scenario = Some(workspace_root().join(scenario));
        config.load_scenario()?;
    }
    let outcome = qemu::run(image, &config)?;
    let mut problems = Vec::new();
    for check in &case.checks {
        if let Err(problem) = check(&outcome.lines) {
            problems.push(problem);
        }
    }
    if case.twice_identical {
        let again = qemu::run(image, &config)?;
        let first = crate::run::report::parse_report(&outcome.lines).map(|r| r.to_json());
        let second = crate::run::report::parse_report(&again.lines).map(|r| r.to_json());
        match (first, second) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(a), Ok(b)) => problems.push(format!(
                "the two reports differ ({} and {} bytes)",
                a.len(),
                b.len()
            )),
            (Err(e), _) | (_, Err(e)) => problems.push(format!("report: {e}")),
        }
    }
    let got = match (outcome.timed_out, outcome.status) {
        (true, _) => Expect::Timeout,
        (false, Some(0)) => Expect::Success,
        _ => Expect::Failure,
    };
    if got != expect {
        problems.push(format!(
            "expected {expect:?}, got {got:?} (status {:?})",
            outcome.status
        ));
    }
    for needle in &case.must_contain {
        if outcome.find(needle).is_none() {
            problems.push(format!("output lacks: {needle}"));
        }
    }
    if let Some(agree) = &case.agree
        && problems.is_empty()
        && let Err(problem) = check_agreement(agree, &outcome.lines)
    {
        problems.push(problem);
    }
    if problems.is_empty() {
        Ok(outcome.lines)
    } else {
        let mut report = problems.join("\n    ");
        if case.agree.is_some() && outcome.find("trace: start").is_some() {
            // The comparison shows the neighbourhoods; the transcript is long.
            return Err(report);
        }
        report.push_str("\n    --- output ---\n");
        for line in outcome.lines.iter().rev().take(40).rev() {
            report.push_str("    | ");
            report.push_str(line);
            report.push('\n');
        }
        Err(report)
    }
}

/// Replays the case's scenario in the simulator and compares its switches with
/// the kernel's trace in `lines`.
fn check_agreement(agree: &Agree, lines: &[String]) -> Result<(), String> {
    let trace = crate::experiments::agree::parse_kernel_trace(lines)?;
    let kernel = crate::experiments::agree::normalise_kernel(&trace.switches);
    let sim = crate::experiments::agree::simulate_like_kernel(
        &workspace_root().join(agree.scenario),
        agree.policy,
        &trace,
    )?;
    let limit = AGREE_SWITCHES;
    let comparison = crate::experiments::agree::compare(&kernel, &sim, limit);
    eprintln!(
        "    agree: {} {}: {} of {} switches agree",
        agree.scenario,
        agree.policy,
        comparison.agreeing(),
        comparison.compared
    );
    if comparison.first_divergence.is_some() {
        for line in comparison.report.lines() {
            eprintln!("    {line}");
        }
    }
    // Both sides must have produced enough switches to check the claim.
    let needed = agree.agree_through.unwrap_or(limit).min(limit);
    if comparison.compared < needed {
        return Err(format!(
            "only {} switches to compare (kernel {}, simulator {}), {needed} needed",
            comparison.compared,
            kernel.len(),
            sim.len()
        ));
    }
    match (agree.agree_through, comparison.first_divergence) {
        (_, None) => Ok(()),
        (Some(through), Some(at)) if at >= through => Ok(()),
        (through, Some(at)) => Err(format!(
            "switch {at} differs, {} expected to agree ({}): {}",
            through.map_or("all".to_string(), |n| n.to_string()),
            if agree.why.is_empty() {
                "no known cause"
            } else {
                agree.why
            },
            comparison.report
        )),
    }
}

/// One QEMU case's outcome: whether it passed, and what to print.
fn run_one(case: &Case, images: &BTreeMap<String, PathBuf>, expect: Expect) -> (bool, String) {
    let Some(image) = images.get(case.image) else {
        return (
            false,
            format!(
                "qemu {:<32} FAILED\n    no kernel image '{}' was built",
                case.name, case.image
            ),
        );
    };
    let case_start = Instant::now();
    match run_case(case, image, expect) {
        Ok(lines) => {
            let mut text = format!(
                "qemu {:<32} ok ({:.2} s)",
                case.name,
                case_start.elapsed().as_secs_f64()
            );
            for line in lines.iter().filter(|l| {
                ["timer:", "pipe:", "preempt:", "per-CPU"]
                    .iter()
                    .any(|k| l.contains(k))
            }) {
                text.push_str(&format!("\n    {line}"));
            }
            (true, text)
        }
        Err(report) => (
            false,
            format!("qemu {:<32} FAILED\n    {report}", case.name),
        ),
    }
}

/// Runs the QEMU cases; returns (passed, failed). A case under icount has figures
/// that do not depend on the host's speed (the virtual clock follows the
/// instructions executed), and its QEMU is one host thread: those run `jobs` at a
/// time (default: the host's cores). A case in real time reads the host's clock,
/// and its QEMU runs a thread per CPU: those run alone, one at a time, first.
pub(crate) fn run_qemu_cases(
    selected: &[Case],
    images: &BTreeMap<String, PathBuf>,
    sabotage: bool,
    jobs: Option<usize>,
) -> Result<(u64, u64), String> {
    let expect_of = |index: usize, case: &Case| {
        if sabotage && index == 0 {
            let flipped = if case.expect == Expect::Success {
                Expect::Failure
            } else {
                Expect::Success
            };
            eprintln!(
                "xtask: --sabotage: expecting {flipped:?} from {}",
                case.name
            );
            flipped
        } else {
            case.expect
        }
    };
    let (mut concurrent, serial): (Vec<usize>, Vec<usize>) =
        (0..selected.len()).partition(|&index| selected[index].icount);
    // Longest first, the timeout standing for the length: a long case taken last
    // would run alone at the end while the other jobs sit idle.
    concurrent.sort_by_key(|&index| std::cmp::Reverse(selected[index].timeout_seconds));
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .min(concurrent.len().max(1));
    eprintln!(
        "xtask: QEMU cases: {} in real time, one at a time; then {} under icount, {jobs} at a \
         time (--jobs N)",
        serial.len(),
        concurrent.len()
    );
    // Copied once, before any case runs: every boot uses the same copy.
    qemu::isolated_qemu()?;
    let (mut passed, mut failed) = (0, 0);
    for &index in &serial {
        let case = &selected[index];
        let (ok, text) = run_one(case, images, expect_of(index, case));
        eprintln!("{text}");
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let tally = std::sync::Mutex::new((passed, failed));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let position = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&index) = concurrent.get(position) else {
                        break;
                    };
                    let case = &selected[index];
                    let (ok, text) = run_one(case, images, expect_of(index, case));
                    // One print per case, under the tally's lock: cases' lines never mix.
                    let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
                    eprintln!("{text}");
                    if ok {
                        tally.0 += 1;
                    } else {
                        tally.1 += 1;
                    }
                }
            });
        }
    });
    Ok(tally.into_inner().unwrap_or_else(|e| e.into_inner()))
}
