//! The trace checks (issue 16): simulator runs written as Perfetto traces
//! (`fairway-sim --trace`), each decoded by Perfetto's own Python bindings
//! and held against the run's results by `tests/perfetto/check_trace.py`
//! (what it checks is written there and in docs/tracing.md), and each run's
//! results compared with the same run's untraced; then the kernel's traces
//! (a kernel built with `--features trace`, its records turned into a trace
//! as the runner's `--trace` does) held against its report the same way,
//! and the instructions a trace record costs.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::run::board::workspace_root;

mod explain;
mod explain_policy;
mod kernel;

use explain::{EXPLAIN_CASES, kernel_explain};
use kernel::{KERNEL_CASES, build_trace_kernel, kernel_case, progress_reads, record_cost};
pub(crate) use kernel::{boot, icount_config};

/// One traced run: a name, the scenario, the simulator's options.
struct TraceCase {
    name: &'static str,
    scenario: &'static str,
    options: &'static [&'static str],
    /// Counts the scenario's arithmetic gives, checked in the results.
    counts: &'static [Counts],
}

/// A task's wake-ups and missed periods as a scenario's arithmetic gives
/// them (docs/report-format.md, "Overruns"), not as a run printed them.
struct Counts {
    task: &'static str,
    wakeups: u64,
    missed_periods: u64,
}

/// `tests/scenarios/overrun-12-10.json`: ten timer events 2 ms after their
/// expiry (12 ms of work, 10 ms period), missed and not slept, then ten
/// 4 ms loops that sleep 6 ms each and are woken.
const OVERRUN_COUNTS: [Counts; 1] = [Counts {
    task: "late",
    wakeups: 10,
    missed_periods: 10,
}];

/// Each of `expected` against a run's `(name, wakeups, pending_wakeups,
/// missed_periods)`.
fn check_counts(
    expected: &[Counts],
    tasks: &[(String, u64, u64, u64)],
) -> Result<Option<String>, String> {
    if expected.is_empty() {
        return Ok(None);
    }
    let mut shown = Vec::new();
    for want in expected {
        let &(_, wakeups, pending, missed) = tasks
            .iter()
            .find(|t| t.0 == want.task)
            .ok_or_else(|| format!("no task {} in the results", want.task))?;
        if (wakeups, pending, missed) != (want.wakeups, 0, want.missed_periods) {
            return Err(format!(
                "{}: {wakeups} wake-ups, {pending} pending, {missed} missed periods; \
                 the scenario gives {}, 0 and {}",
                want.task, want.wakeups, want.missed_periods
            ));
        }
        shown.push(format!(
            "{}: {wakeups} wake-ups and {missed} missed periods, as the scenario gives",
            want.task
        ));
    }
    Ok(Some(shown.join("; ")))
}

/// The simulator's results JSON as `check_counts` reads it.
fn sim_task_counts(results: &Path) -> Result<Vec<(String, u64, u64, u64)>, String> {
    let text =
        std::fs::read_to_string(results).map_err(|e| format!("{}: {e}", results.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", results.display()))?;
    let number = |v: &serde_json::Value| v.as_u64().unwrap_or(u64::MAX);
    Ok(json["tasks"]
        .as_array()
        .map(|tasks| {
            tasks
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap_or_default().to_string(),
                        number(&t["wakeup_latency_ns"]["count"]),
                        number(&t["pending_wakeups"]),
                        number(&t["missed_periods"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}

/// A big.LITTLE board with DVFS and EAS (frequencies, idle, migrations), 4
/// CPUs of task groups under load balancing, rt-app's events (sleeps,
/// wake-ups by other tasks, exits), and a group throttled by its `cpu.max`
/// on 2 CPUs (the throttling tracks); and a periodic task that overruns
/// (docs/report-format.md, "Overruns": its late timer events are missed
/// periods, not wake-ups, in the results and in the trace).
const CASES: [TraceCase; 5] = [
    TraceCase {
        name: "juno-r2-eas-workload-a",
        scenario: "tests/scenarios/eas-workload-a.json",
        options: &["--board", "juno-r2"],
        counts: &[],
    },
    TraceCase {
        name: "groups-4cpus-1s",
        scenario: "tests/scenarios/groups-4-equal-shares-10s.json",
        options: &["--cpus", "4", "--duration", "1s"],
        counts: &[],
    },
    TraceCase {
        name: "rtapp-events-chain-4cpus",
        scenario: "tests/scenarios/rtapp-events-chain-4cpus.json",
        options: &["--cpus", "4"],
        counts: &[],
    },
    TraceCase {
        name: "bandwidth-150-100-2cpus",
        scenario: "tests/scenarios/bandwidth-150-100-2cpus.json",
        options: &["--cpus", "2"],
        counts: &[],
    },
    TraceCase {
        name: "overrun-12-10",
        scenario: "tests/scenarios/overrun-12-10.json",
        options: &["--cpus", "1"],
        counts: &OVERRUN_COUNTS,
    },
];

/// Runs the trace checks; returns (passed, failed). With `only`, the
/// checks whose names contain it, and no lab sheet (`cargo xtask
/// trace-checks --only NAME`; `cargo xtask labs` runs those).
pub fn run(only: Option<&str>) -> Result<(u64, u64), String> {
    let selected = |name: &str| only.is_none_or(|only| name.contains(only));
    let python = crate::run::tools::perfetto_python()?;
    let root = workspace_root();
    let out = root.join("target/trace-checks");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (mut passed, mut failed) = (0, 0);
    for case in CASES.iter().filter(|case| selected(case.name)) {
        let trace = out.join(format!("{}.pftrace", case.name));
        let results = out.join(format!("{}.json", case.name));
        let mut args: Vec<String> = vec![root.join(case.scenario).display().to_string()];
        args.extend(case.options.iter().map(|s| s.to_string()));
        args.extend([
            "--quiet".into(),
            "--trace".into(),
            trace.display().to_string(),
            "--results".into(),
            results.display().to_string(),
        ]);
        // The same run untraced: recording must change nothing.
        let untraced = out.join(format!("{}-untraced.json", case.name));
        let mut plain: Vec<String> = vec![root.join(case.scenario).display().to_string()];
        plain.extend(case.options.iter().map(|s| s.to_string()));
        plain.extend([
            "--quiet".into(),
            "--results".into(),
            untraced.display().to_string(),
        ]);
        let outcome = fairway_sim::cli::parse_args(&args)
            .and_then(|options| fairway_sim::cli::run(&options))
            .and_then(|()| fairway_sim::cli::parse_args(&plain))
            .and_then(|options| fairway_sim::cli::run(&options))
            .map_err(|e| format!("fairway-sim: {e}"))
            .and_then(|()| {
                let read = |path: &std::path::Path| {
                    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
                };
                if read(&results)? != read(&untraced)? {
                    return Err("the traced run's results differ from the untraced run's".into());
                }
                Ok(())
            })
            .and_then(|()| check_trace(&python, &trace, &results))
            .and_then(|summary| {
                Ok(
                    match check_counts(case.counts, &sim_task_counts(&results)?)? {
                        Some(counts) => format!("{summary}\n    {counts}"),
                        None => summary,
                    },
                )
            });
        tally(&mut passed, &mut failed, case.name, outcome);
    }
    let kernel_names = KERNEL_CASES.iter().map(|case| case.name);
    let explain_names = EXPLAIN_CASES.iter().map(|case| case.name);
    let mut kernel_checks = kernel_names
        .chain(["kernel-record-cost", "kernel-progress-line"])
        .chain(explain_names);
    match kernel_checks.any(selected).then(build_trace_kernel) {
        Some(Ok(kernel)) => {
            for case in KERNEL_CASES.iter().filter(|case| selected(case.name)) {
                let outcome = kernel_case(&kernel, case, &out, &python);
                tally(&mut passed, &mut failed, case.name, outcome);
            }
            if selected("kernel-record-cost") {
                let outcome = record_cost(&kernel);
                tally(&mut passed, &mut failed, "kernel-record-cost", outcome);
            }
            if selected("kernel-progress-line") {
                let outcome = progress_reads(&kernel);
                tally(&mut passed, &mut failed, "kernel-progress-line", outcome);
            }
            for case in EXPLAIN_CASES.iter().filter(|case| selected(case.name)) {
                let outcome = kernel_explain(&kernel, case);
                tally(&mut passed, &mut failed, case.name, outcome);
            }
        }
        Some(Err(error)) => tally(&mut passed, &mut failed, "kernel-build", Err(error)),
        None => {}
    }
    if only.is_some() {
        eprintln!("xtask: trace checks: {passed} passed, {failed} failed");
        return Ok((passed, failed));
    }
    // The charts of the first (the juno-r2 EAS run, which has them all).
    let charts = out.join("plots");
    let trace = out.join(format!("{}.pftrace", CASES[0].name));
    match plot_check(&trace, &charts) {
        Ok(summary) => {
            passed += 1;
            eprintln!(
                "trace {:<32} ok\n    {summary}",
                "plot-juno-r2-eas-workload-a"
            );
        }
        Err(report) => {
            failed += 1;
            eprintln!(
                "trace {:<32} FAILED\n    {report}",
                "plot-juno-r2-eas-workload-a"
            );
        }
    }
    // The lab sheets' commands, and their answer keys' checks.
    for outcome in crate::test::areas::labs::lab_checks(&root, None, true)? {
        if crate::test::areas::labs::print_outcome(&outcome) {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    eprintln!("xtask: trace checks: {passed} passed, {failed} failed");
    Ok((passed, failed))
}

/// Counts and prints one check's outcome.
fn tally(passed: &mut u64, failed: &mut u64, name: &str, outcome: Result<String, String>) {
    match outcome {
        Ok(summary) => {
            *passed += 1;
            eprintln!("trace {name:<32} ok\n    {summary}");
        }
        Err(report) => {
            *failed += 1;
            eprintln!("trace {name:<32} FAILED\n    {report}");
        }
    }
}

/// `tests/perfetto/check_trace.py TRACE RESULTS`: its summary line.
fn check_trace(python: &Path, trace: &Path, results: &Path) -> Result<String, String> {
    let root = workspace_root();
    let output = Command::new(python)
        .arg(root.join("tests/perfetto/check_trace.py"))
        .arg(trace)
        .arg(results)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if output.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "{text}{}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// `cargo xtask plot` on `trace`, over the whole run and over a window: every
/// chart written as PNG (its signature and a 1200 × 700 header) and SVG (an
/// `<svg` root of that size).
fn plot_check(trace: &std::path::Path, charts: &std::path::Path) -> Result<String, String> {
    let mut summary = Vec::new();
    // The whole run, then a window of it (the burst task's start).
    for (folder, window) in [
        ("whole", &[][..]),
        ("window", &["--from", "0.3", "--to", "350ms"][..]),
    ] {
        let charts = charts.join(folder);
        let _ = std::fs::remove_dir_all(&charts);
        let mut args = vec![trace.display().to_string(), charts.display().to_string()];
        args.extend(window.iter().map(|arg| arg.to_string()));
        crate::plot::command(&args)?;
        summary.push(format!("{folder}: {}", chart_files(&charts)?));
    }
    Ok(format!("PNG and SVG charts, {}", summary.join("; ")))
}

/// Each chart of `charts`: a 1200 × 700 PNG and a 1200-wide SVG; their sizes.
fn chart_files(charts: &std::path::Path) -> Result<String, String> {
    let mut sizes = Vec::new();
    for name in ["util", "frequency", "energy", "occupancy"] {
        let png = std::fs::read(charts.join(format!("{name}.png")))
            .map_err(|e| format!("{name}.png: {e}"))?;
        let signature = b"\x89PNG\r\n\x1a\n";
        let width = png
            .get(16..20)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let height = png
            .get(20..24)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if !png.starts_with(signature) || width != Some(1200) || height != Some(700) {
            return Err(format!("{name}.png is not a 1200 x 700 PNG"));
        }
        let svg = std::fs::read_to_string(charts.join(format!("{name}.svg")))
            .map_err(|e| format!("{name}.svg: {e}"))?;
        if !svg.contains("<svg") || !svg.contains("width=\"1200\"") {
            return Err(format!("{name}.svg is not a 1200-wide SVG"));
        }
        sizes.push(format!("{name} {} KB", png.len() / 1024));
    }
    Ok(sizes.join(", "))
}
