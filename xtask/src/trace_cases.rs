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
    eprintln!("xtask: trace checks: {passed} passed, {failed} failed");
    Ok((passed, failed))
}
