//! The trace checks (issue 16): simulator runs written as Perfetto traces
//! (`fairway-sim --trace`), each decoded by Perfetto's own Python bindings
//! and held against the run's results by `tests/perfetto/check_trace.py`
//! (what it checks is written there and in docs/tracing.md), and each run's
//! results compared with the same run's untraced.

use std::process::{Command, Stdio};

use crate::board::workspace_root;

/// One traced run: a name, the scenario, the simulator's options.
struct TraceCase {
    name: &'static str,
    scenario: &'static str,
    options: &'static [&'static str],
}

/// A big.LITTLE board with DVFS and EAS (frequencies, idle, migrations), 4
/// CPUs of task groups under load balancing, and rt-app's events (sleeps,
/// wake-ups by other tasks, exits).
const CASES: [TraceCase; 3] = [
    TraceCase {
        name: "juno-r2-eas-workload-a",
        scenario: "tests/scenarios/eas-workload-a.json",
        options: &["--board", "juno-r2"],
    },
    TraceCase {
        name: "groups-4cpus-1s",
        scenario: "tests/scenarios/groups-4-equal-shares-10s.json",
        options: &["--cpus", "4", "--duration", "1s"],
    },
    TraceCase {
        name: "rtapp-events-chain-4cpus",
        scenario: "tests/scenarios/rtapp-events-chain-4cpus.json",
        options: &["--cpus", "4"],
    },
];

/// Runs the trace checks; returns (passed, failed).
pub fn run() -> Result<(u64, u64), String> {
    let python = crate::tools::perfetto_python()?;
    let root = workspace_root();
    let out = root.join("target/trace-checks");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (mut passed, mut failed) = (0, 0);
    for case in &CASES {
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
            .and_then(|()| {
                let output = Command::new(&python)
                    .arg(root.join("tests/perfetto/check_trace.py"))
                    .arg(&trace)
                    .arg(&results)
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
            });
        match outcome {
            Ok(summary) => {
                passed += 1;
                eprintln!("trace {:<32} ok\n    {summary}", case.name);
            }
            Err(report) => {
                failed += 1;
                eprintln!("trace {:<32} FAILED\n    {report}", case.name);
            }
        }
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
    for (lab, outcome) in lab_checks(&root)? {
        match outcome {
            Ok(()) => {
                passed += 1;
                eprintln!("lab   {lab:<32} ok");
            }
            Err(report) => {
                failed += 1;
                eprintln!("lab   {lab:<32} FAILED\n    {report}");
            }
        }
    }
    eprintln!("xtask: trace checks: {passed} passed, {failed} failed");
    Ok((passed, failed))
}

/// `cargo xtask plot` on `trace`: every chart written as PNG (its signature
/// and a 1200 × 700 header) and SVG (an `<svg` root of that size).
fn plot_check(trace: &std::path::Path, charts: &std::path::Path) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(charts);
    crate::plot::command(&[trace.display().to_string(), charts.display().to_string()])?;
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
    Ok(format!("PNG and SVG charts: {}", sizes.join(", ")))
}

/// A lab sheet's name, and whether its commands ran.
type LabOutcome = (String, Result<(), String>);

/// The lab sheets' commands (`docs/labs/lab*.md`): each sheet's ```sh blocks,
/// in order, run as one `bash -euo pipefail` script from the repository's
/// root, so that a sheet whose commands stop working fails the test command.
fn lab_checks(root: &std::path::Path) -> Result<Vec<LabOutcome>, String> {
    let dir = root.join("docs/labs");
    let mut sheets: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("lab") && n.ends_with(".md"))
        })
        .collect();
    sheets.sort();
    let mut outcomes = Vec::new();
    for sheet in sheets {
        let name = sheet
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or("lab")
            .to_string();
        let text =
            std::fs::read_to_string(&sheet).map_err(|e| format!("{}: {e}", sheet.display()))?;
        let mut script = String::new();
        let mut inside = false;
        for line in text.lines() {
            match (inside, line.trim_end()) {
                (false, "```sh") => inside = true,
                (true, "```") => inside = false,
                (true, _) => {
                    script.push_str(line);
                    script.push('\n');
                }
                _ => {}
            }
        }
        let outcome = if script.is_empty() {
            Err("no ```sh block".to_string())
        } else {
            Command::new("bash")
                .args(["-euo", "pipefail", "-c", &script])
                .current_dir(root)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("bash: {e}"))
                .and_then(|output| {
                    if output.status.success() {
                        Ok(())
                    } else {
                        let stderr = String::from_utf8_lossy(&output.stderr);
                        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
                        Err(format!(
                            "its commands failed ({}): {}",
                            output.status,
                            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                        ))
                    }
                })
        };
        outcomes.push((name, outcome));
    }
    Ok(outcomes)
}
