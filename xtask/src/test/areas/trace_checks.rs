//! The trace checks (issue 16): simulator runs written as Perfetto traces
//! (`fairway-sim --trace`), each decoded by Perfetto's own Python bindings
//! and held against the run's results by `tests/perfetto/check_trace.py`
//! (what it checks is written there and in docs/tracing.md), and each run's
//! results compared with the same run's untraced; then the kernel's traces
//! (a kernel built with `--features trace`, its records turned into a trace
//! as the runner's `--trace` does) held against its report the same way,
//! and the instructions a trace record costs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};

use crate::run::board::workspace_root;

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

/// Runs the trace checks; returns (passed, failed).
pub fn run() -> Result<(u64, u64), String> {
    let python = crate::run::tools::perfetto_python()?;
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
    match build_trace_kernel() {
        Ok(kernel) => {
            for case in &KERNEL_CASES {
                let outcome = kernel_case(&kernel, case, &out, &python);
                tally(&mut passed, &mut failed, case.name, outcome);
            }
            let outcome = record_cost(&kernel);
            tally(&mut passed, &mut failed, "kernel-record-cost", outcome);
            let outcome = progress_reads(&kernel);
            tally(&mut passed, &mut failed, "kernel-progress-line", outcome);
            for case in &EXPLAIN_CASES {
                let outcome = kernel_explain(&kernel, case);
                tally(&mut passed, &mut failed, case.name, outcome);
            }
        }
        Err(error) => tally(&mut passed, &mut failed, "kernel-build", Err(error)),
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

/// One traced kernel run: a name, the board, CPUs, the scenario and the
/// command line.
struct KernelCase {
    name: &'static str,
    board: &'static str,
    cpus: u32,
    scenario: &'static str,
    append: &'static str,
    /// Counts the scenario's arithmetic gives, checked in the report.
    counts: &'static [Counts],
}

/// The juno-r2 EAS run of the simulator's cases, task groups balanced
/// over 4 CPUs, and a group with CFS bandwidth control over 2 CPUs, on the
/// kernel under icount; and the periodic task that overruns, alone on a CPU.
const KERNEL_CASES: [KernelCase; 4] = [
    KernelCase {
        name: "kernel-juno-r2-eas-workload-a",
        board: "juno-r2",
        cpus: 6,
        scenario: "tests/scenarios/eas-workload-a.json",
        append: "trace_records=100000 explain=2000",
        counts: &[],
    },
    KernelCase {
        name: "kernel-rtapp-events-chain-4cpus",
        board: "qemu-virt",
        cpus: 4,
        scenario: "tests/scenarios/rtapp-events-chain-4cpus.json",
        append: "trace_records=100000",
        counts: &[],
    },
    KernelCase {
        name: "kernel-bandwidth-150-100-2cpus",
        board: "qemu-virt",
        cpus: 2,
        scenario: "tests/scenarios/bandwidth-150-100-2cpus.json",
        append: "trace_records=100000 explain=1000",
        counts: &[],
    },
    KernelCase {
        name: "kernel-overrun-12-10",
        board: "qemu-virt",
        cpus: 1,
        scenario: "tests/scenarios/overrun-12-10.json",
        append: "trace_records=100000",
        counts: &OVERRUN_COUNTS,
    },
];

/// The kernel with trace events and without the cycle-counter brackets
/// (`--no-default-features --features trace`), in its own target directory.
fn build_trace_kernel() -> Result<PathBuf, String> {
    let root = workspace_root();
    let target_dir = root.join("target").join("trace-kernel");
    eprintln!("xtask: trace checks: building the kernel with trace events");
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--no-default-features",
            "--features",
            "trace",
        ])
        .args(["--package", "fairway", "--bin", "fairway", "--target-dir"])
        .arg(&target_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the kernel with trace events did not build: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(target_dir.join("aarch64-unknown-none-softfloat/release/fairway"))
}

/// A quiet icount boot of `board` with `cpus` CPUs and the command line
/// `append` (10 minutes at most).
pub(crate) fn icount_config(board: &str, cpus: u32, append: &str) -> Result<QemuConfig, String> {
    let mut config = QemuConfig::for_board(Board::load(board)?);
    config.cpus = cpus;
    config.icount = true;
    config.echo = false;
    config.timeout = Duration::from_secs(600);
    config.append = append.to_string();
    Ok(config)
}

/// Boots `kernel` under icount; the decoded lines of a clean exit.
pub(crate) fn boot(kernel: &Path, config: &QemuConfig) -> Result<Vec<String>, String> {
    config.check_command_line()?;
    let outcome = qemu::run(kernel, config)?;
    if outcome.status != Some(0) {
        return Err(format!(
            "the kernel failed ({}): {}",
            config.append,
            outcome.lines.last().map_or("", String::as_str)
        ));
    }
    Ok(outcome.lines)
}

/// A traced kernel run: its report and trace written as the runner's
/// `--report` and `--trace` write them, the trace checked against the report.
fn kernel_case(
    kernel: &Path,
    case: &KernelCase,
    out: &Path,
    python: &Path,
) -> Result<String, String> {
    let mut config = icount_config(case.board, case.cpus, case.append)?;
    config.scenario = Some(workspace_root().join(case.scenario));
    config.use_board_device_tree()?;
    config.load_scenario()?;
    let lines = boot(kernel, &config)?;
    let results = out.join(format!("{}.json", case.name));
    let report = crate::run::report::parse_report(&lines).map_err(|e| format!("report: {e}"))?;
    std::fs::write(&results, report.to_json())
        .map_err(|e| format!("{}: {e}", results.display()))?;
    let trace = crate::run::kernel_trace::from_lines(&lines)?
        .ok_or("the kernel printed no trace records")?;
    let path = out.join(format!("{}.pftrace", case.name));
    std::fs::write(&path, trace.to_perfetto()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut summary = check_trace(python, &path, &results)?;
    let tasks: Vec<(String, u64, u64, u64)> = report
        .runs
        .iter()
        .flat_map(|run| &run.tasks)
        .map(|t| {
            (
                t.name.clone(),
                t.wakeups,
                t.pending_wakeups,
                t.missed_periods,
            )
        })
        .collect();
    if let Some(counts) = check_counts(case.counts, &tasks)? {
        summary = format!("{summary}\n    {counts}");
    }
    if !case.append.contains("explain=") {
        return Ok(summary);
    }
    let explained = crate::run::kernel_trace::explained(&lines)?
        .ok_or("the kernel printed no explain records")?;
    let detail = if case.board == "juno-r2" {
        check_energy_estimates(&explained)?
    } else {
        check_throttle_explains(&explained, &trace)?
    };
    Ok(format!("{summary}\n    {detail}"))
}

/// Explain at a throttle on the kernel: every throttle and unthrottle it
/// explains follows CFS bandwidth control's rule (docs/linux-sched-reference.md
/// §4.2), from the printed numbers alone: a run queue is throttled with its
/// runtime spent (`runtime_remaining <= 0`) and an empty pool, and comes
/// back holding runtime (`> 0`); and the explained transitions are, one for
/// one and to the nanosecond, the changes of the trace's `throttled` tracks
/// (the simulator's test of the rule is `sim/tests/explain_throttle.rs`).
fn check_throttle_explains(
    explained: &crate::run::kernel_trace::Explained,
    trace: &fairway_trace::Trace,
) -> Result<String, String> {
    use crate::run::kernel_trace::Decision;
    use fairway_trace::{CounterTrack, GroupCpuSignal};
    let mut explains = Vec::new();
    for decision in &explained.decisions {
        let Decision::Throttle { time_ns, view } = decision else {
            continue;
        };
        let at = format!("{time_ns} ns, {} on cpu{}", view.group, view.cpu);
        let limit = view.quota.ok_or_else(|| format!("{at}: no quota"))?;
        if view.throttled && (view.runtime_remaining > 0 || view.pool_runtime != Some(0)) {
            return Err(format!("{at}: throttled with runtime left: {view:?}"));
        }
        if !view.throttled && (view.runtime_remaining <= 0 || view.runtime_remaining > limit as i64)
        {
            return Err(format!("{at}: unthrottled without runtime: {view:?}"));
        }
        explains.push((*time_ns, view.cpu, view.throttled));
    }
    // The tracks' changes (each track's first value is its state at the start).
    let mut last = std::collections::BTreeMap::new();
    let mut changes = Vec::new();
    for sample in &trace.counters {
        if let CounterTrack::GroupCpu(group, cpu, GroupCpuSignal::Throttled) = sample.track
            && let Some(before) = last.insert((group, cpu), sample.value)
            && before != sample.value
        {
            changes.push((sample.time_ns, cpu, sample.value == 1));
        }
    }
    let throttles = explains.iter().filter(|e| e.2).count();
    if explains != changes || throttles == 0 || throttles == explains.len() {
        return Err(format!(
            "{} explained throttles and unthrottles, the tracks change {} times: {explains:?} against {changes:?}",
            explains.len(),
            changes.len()
        ));
    }
    Ok(format!(
        "{throttles} explained throttles and {} unthrottles follow the rule and are the tracks' changes",
        explains.len() - throttles
    ))
}

/// A performance domain's CPUs, `dynamic-power-coefficient` and OPPs (MHz,
/// mV).
type EnergyModel = (&'static [usize], u64, [(u64, u64); 3]);

/// juno-r2's energy model as its device tree gives it
/// (`boards/juno-r2/cpus.dtsi`): per performance domain its CPUs, the
/// `dynamic-power-coefficient` and the OPPs (MHz, mV).
const JUNO_R2_DOMAINS: [EnergyModel; 2] = [
    (&[0, 3, 4, 5], 140, [(450, 820), (800, 900), (950, 1000)]),
    (&[1, 2], 450, [(600, 820), (1000, 900), (1200, 1000)]),
];

/// `em_cpu_energy` worked from the device tree's numbers by
/// docs/linux-sched-reference.md §5.1 and §5.2, not through the kernel's
/// energy model: a state's power is `C × mV² × MHz / 10^6` µW, its
/// performance `cpu_cap × f / fmax`, its cost `power × 10 / performance`; a
/// state costing at least as much as a faster one is inefficient; the
/// energy is the cost of the lowest efficient state covering `max_util`
/// (capped at `cpu_cap`), else the highest's, times `sum_util`.
fn em_cpu_energy(domain: usize, cpu_cap: u64, max_util: u64, sum_util: u64) -> u64 {
    if sum_util == 0 {
        return 0;
    }
    let (_, coefficient, opps) = JUNO_R2_DOMAINS[domain];
    let fmax = opps[2].0;
    let states: Vec<(u64, u64)> = opps
        .iter()
        .map(|&(mhz, mv)| {
            let power = coefficient * mv * mv * mhz / 1_000_000;
            let performance = cpu_cap * mhz / fmax;
            (performance, power * 10 / performance)
        })
        .collect();
    let efficient = |i: usize| states[i + 1..].iter().all(|s| s.1 > states[i].1);
    let max_util = max_util.min(cpu_cap);
    let cost = (0..states.len())
        .find(|&i| states[i].0 >= max_util && efficient(i))
        .map_or(states[states.len() - 1].1, |i| states[i].1);
    cost * sum_util
}

/// Each energy estimate the kernel's explain mode printed for a juno-r2
/// wake-up is `em_cpu_energy` of its `max_util` and `sum_util`, and with
/// the task placed `sum_util` is the base's plus `task_util_est`, at most
/// the domain's capacity (`compute_energy`, §5.4). `sim/tests/explain_eas.rs`
/// checks the simulator's the same way.
fn check_energy_estimates(
    explained: &crate::run::kernel_trace::Explained,
) -> Result<String, String> {
    use crate::run::kernel_trace::Decision;
    let mut checked = 0;
    for decision in &explained.decisions {
        let Decision::Wake {
            time_ns,
            energy: Some((task_util_est, estimates)),
            ..
        } = decision
        else {
            continue;
        };
        let mut base = None;
        for e in estimates {
            let (domain_cpus, _, _) = JUNO_R2_DOMAINS[e.domain];
            let cpu_cap = e.cpu_cap;
            let expected = em_cpu_energy(e.domain, cpu_cap, e.max_util, e.sum_util);
            if e.energy != expected {
                return Err(format!(
                    "at {time_ns} ns: {e:?}, em_cpu_energy gives {expected}"
                ));
            }
            match e.dst {
                None => base = Some(e.sum_util),
                Some(cpu) => {
                    let base = base.ok_or("a placed estimate before its domain's base")?;
                    let pd_cap = cpu_cap * domain_cpus.len() as u64;
                    let sum = (base + task_util_est).min(pd_cap);
                    if !domain_cpus.contains(&cpu) || e.sum_util != sum {
                        return Err(format!("at {time_ns} ns: {e:?}, sum_util should be {sum}"));
                    }
                }
            }
            checked += 1;
        }
    }
    if checked < 60 {
        return Err(format!("only {checked} energy estimates explained"));
    }
    Ok(format!(
        "{checked} explained energy estimates are em_cpu_energy of juno-r2's device tree"
    ))
}

/// The largest cost of one trace record, in instructions: a record is
/// a 24-byte copy under this CPU's buffer lock; more means the path grew.
const RECORD_COST_BUDGET: f64 = 100.0;

/// Round trips of the record-cost measurement (18 records each).
const COST_LOOPS: u64 = 2_000;

/// What a record costs: pinned sched-pipe under icount with trace events
/// compiled in, off (`trace_records=0`) and on; the instructions the run
/// gained over the records it made (every record kind of a switch and a
/// wake-up: `sched_switch`, `sched_waking`, `sched_wakeup`, and the
/// counters of the CPU with those of the task switched out and of the task
/// switched in).
fn record_cost(kernel: &Path) -> Result<String, String> {
    let run = |records: u64| -> Result<(u64, u64), String> {
        let config = icount_config(
            "qemu-virt",
            2,
            &format!("workload=sched-pipe loops={COST_LOOPS} pinned=1 trace_records={records}"),
        )?;
        let lines = boot(kernel, &config)?;
        let report = crate::run::report::parse_report(&lines)?;
        let wall_ns = report.runs.first().map(|r| r.wall_ns).ok_or("no report")?;
        let count = |field: &str| -> u64 {
            lines
                .iter()
                .filter_map(|l| l.split("trace-cpu: ").nth(1))
                .filter_map(|rest| rest.split_whitespace().find_map(|w| w.strip_prefix(field)))
                .filter_map(|n| n.parse::<u64>().ok())
                .sum()
        };
        // A dropped record costs its trace event's work but is not counted:
        // the buffer must hold every record for the figure to mean anything.
        let dropped = count("dropped=");
        if dropped > 0 {
            return Err(format!(
                "{dropped} records dropped (trace_records={records} per CPU is too few)"
            ));
        }
        Ok((wall_ns, count("records=")))
    };
    let (off, none) = run(0)?;
    // Pinned, both tasks run on one CPU: about 32 records per round trip.
    let (on, records) = run(COST_LOOPS * 50)?;
    if none != 0 || records == 0 {
        return Err(format!("{none} records made off, {records} on"));
    }
    let per_record = (on as f64 - off as f64) / records as f64;
    let summary = format!(
        "pinned sched-pipe: {:.1} instructions per round trip off, {:.1} on, {:.1} records \
         per round trip: {per_record:.1} instructions per record (budget {RECORD_COST_BUDGET})",
        off as f64 / COST_LOOPS as f64,
        on as f64 / COST_LOOPS as f64,
        records as f64 / COST_LOOPS as f64
    );
    if per_record > RECORD_COST_BUDGET {
        return Err(summary);
    }
    Ok(summary)
}

/// A kernel run whose explained picks are held to EEVDF's rule.
struct ExplainCase {
    /// The check's name.
    name: &'static str,
    /// The scenario, under `tests/scenarios/`.
    scenario: &'static str,
    /// CPUs.
    cpus: u32,
    /// Its task groups: picks descend through them.
    groups: bool,
    /// Round robin (`sched=rr`) instead of the default EEVDF.
    round_robin: bool,
}

/// The explain-mode runs (`explain=N`, the runner's `--explain`). Each is
/// also a simulator test in `sim/tests/explain.rs`:
/// `explain-eevdf-2cpus.json`, four pinned hogs of different nice values
/// and two periodic tasks free to move, one queue per CPU;
/// `explain-groups-eevdf.json`, one CPU with a hog beside groups /a (with
/// /a/b inside) and /c of different shares, and a periodic task waking
/// into /a/b; and `explain-rr-1cpu.json` under round robin
/// (`sim/tests/explain_rr.rs`), three tasks that never sleep on one CPU.
const EXPLAIN_CASES: [ExplainCase; 3] = [
    ExplainCase {
        name: "kernel-explain-eevdf",
        scenario: "explain-eevdf-2cpus.json",
        cpus: 2,
        groups: false,
        round_robin: false,
    },
    ExplainCase {
        name: "kernel-explain-groups",
        scenario: "explain-groups-eevdf.json",
        cpus: 1,
        groups: true,
        round_robin: false,
    },
    ExplainCase {
        name: "kernel-explain-rr",
        scenario: "explain-rr-1cpu.json",
        cpus: 1,
        groups: false,
        round_robin: true,
    },
];

/// Every pick the kernel explains follows the rule its header states,
/// checked level by level from the candidates' numbers alone
/// (`fairway_trace::explain_rule`, §1.5): at each level from the CPU's
/// queue down to the task, the running entity while it is eligible and
/// RUN_TO_PARITY protects its slice, else the eligible candidate with the
/// earliest virtual deadline. Enough picks must be explained that both
/// branches were taken and, with groups, that picks reached the deepest
/// group.
fn kernel_explain(kernel: &Path, case: &ExplainCase) -> Result<String, String> {
    use crate::run::kernel_trace::Decision;
    use fairway_trace::explain_rule::check_eevdf_pick;
    let append = if case.round_robin {
        "trace_records=200000 explain=3000 sched=rr"
    } else {
        "trace_records=200000 explain=3000"
    };
    let mut config = icount_config("qemu-virt", case.cpus, append)?;
    config.scenario = Some(workspace_root().join("tests/scenarios").join(case.scenario));
    config.load_scenario()?;
    let lines = boot(kernel, &config)?;
    let explained = crate::run::kernel_trace::explained(&lines)?
        .ok_or("the kernel printed no explain records")?;
    if case.round_robin {
        return kernel_explain_rr(&explained);
    }
    let (mut picks, mut levels_checked, mut kept, mut wakes) = (0, 0, 0, 0);
    let (mut deepest, mut deep) = (0, 0);
    for decision in &explained.decisions {
        match decision {
            Decision::Pick {
                time_ns,
                eevdf,
                candidates,
                chosen,
                ..
            } => {
                picks += 1;
                let at = format!("the pick at {time_ns} ns");
                if !eevdf {
                    return Err(format!("{at} is not EEVDF's"));
                }
                if !case.groups && candidates.iter().any(|c| c.queue.is_some()) {
                    return Err(format!("{at} has a group's candidate without groups"));
                }
                let found = check_eevdf_pick(candidates, *chosen)
                    .map_err(|error| format!("{at} breaks its rule: {error}"))?;
                kept += found.kept;
                levels_checked += found.levels;
                if found.levels > deepest {
                    (deepest, deep) = (found.levels, 0);
                }
                deep += usize::from(found.levels == deepest);
            }
            Decision::Wake { cpus, .. } => {
                wakes += 1;
                if cpus.len() != case.cpus as usize {
                    return Err(format!(
                        "a wake-up shows {} CPUs of {}",
                        cpus.len(),
                        case.cpus
                    ));
                }
            }
            Decision::Frequency { .. } => return Err("a frequency change on qemu-virt".into()),
            Decision::Throttle { .. } => return Err("a throttle without cpu.max".into()),
            Decision::RrPick { .. } => return Err("a round-robin pick under EEVDF".into()),
        }
    }
    // About 500 picks are explained in each run; /a/b is three levels
    // below the CPU's queue; a wake-up has a placement to explain only
    // with more than one CPU.
    let levels = if case.groups { 3 } else { 1 };
    if picks < 250
        || kept == 0
        || kept == levels_checked
        || (wakes == 0 && case.cpus > 1)
        || deepest != levels
    {
        return Err(format!(
            "{picks} picks ({kept} of {levels_checked} levels kept by RUN_TO_PARITY), \
             {wakes} wake-ups, {deepest} levels at most"
        ));
    }
    Ok(format!(
        "{picks} explained EEVDF picks follow the rule at each of their levels \
         ({deep} down {levels} levels; {kept} of {levels_checked} levels kept by RUN_TO_PARITY), {wakes} wake-ups, \
         {} lines as the simulator prints them",
        explained.lines().len()
    ))
}

/// Every round-robin pick the kernel explains follows round robin's rule,
/// from the printed numbers alone (`fairway_trace::explain_rule`): the task
/// chosen is the FIFO's head, the task that was running is at the tail
/// having spent its slice (the scenario's tasks never sleep, and the
/// kernel's own tasks sleep rather than being rotated), and between two
/// rotations among the same tasks the FIFO turns by one. The scenario's
/// three tasks share the CPU for 1 s: a rotation at most every 4 ms slice,
/// at least every second tick (a slice that starts just after a tick ends
/// at the tick after next).
fn kernel_explain_rr(explained: &crate::run::kernel_trace::Explained) -> Result<String, String> {
    use crate::run::kernel_trace::Decision;
    use fairway_trace::explain_rule::{check_rr_pick, check_rr_rotation};
    let mut rotations: Vec<&[fairway_trace::explain::RrCandidate]> = Vec::new();
    let (mut picks, mut turns) = (0, 0);
    for decision in &explained.decisions {
        let Decision::RrPick {
            time_ns,
            slice,
            candidates,
            chosen,
            ..
        } = decision
        else {
            return Err(format!(
                "a decision other than a round-robin pick: {decision:?}"
            ));
        };
        picks += 1;
        if *slice != fairway_sched::round_robin::DEFAULT_SLICE_NS {
            return Err(format!("the pick at {time_ns} ns has a {slice} ns slice"));
        }
        if check_rr_pick(candidates, *chosen, *slice, true)
            .map_err(|e| format!("the pick at {time_ns} ns: {e}"))?
        {
            let same_tasks = |c: &[fairway_trace::explain::RrCandidate]| {
                let mut tasks: Vec<usize> = c.iter().map(|c| c.task).collect();
                tasks.sort_unstable();
                tasks
            };
            if let Some(before) = rotations.last()
                && same_tasks(before) == same_tasks(candidates)
            {
                check_rr_rotation(before, candidates)
                    .map_err(|e| format!("the pick at {time_ns} ns: {e}"))?;
                turns += 1;
            }
            rotations.push(candidates);
        }
    }
    // 1 s of 4 ms ticks: between 125 (every second tick) and 250 rotations.
    if !(120..=250).contains(&rotations.len()) || turns < 100 {
        return Err(format!(
            "{picks} picks explained, {} rotations, {turns} turns of the FIFO by one",
            rotations.len()
        ));
    }
    Ok(format!(
        "{picks} explained round-robin picks took the FIFO's head; {} rotated a task whose slice \
         had expired, {turns} turned the FIFO by one; {} lines as the simulator prints them",
        rotations.len(),
        explained.lines().len()
    ))
}

/// Round trips of the progress-line check: about 3 s of wall time.
const PROGRESS_LOOPS: u64 = 200_000;

/// The runner's progress line reads the kernel's time through QEMU's
/// monitor (xtask/src/run/progress.rs) without changing the run: sched-pipe
/// under icount with the reader attached (reading from the start, printing
/// nothing) reports what the same run reports without it, byte for byte,
/// and the reader saw the kernel's time advance.
fn progress_reads(kernel: &Path) -> Result<String, String> {
    let elf = std::fs::read(kernel).map_err(|e| format!("{}: {e}", kernel.display()))?;
    let address = crate::run::progress::tick_time_address(&elf)
        .ok_or("the kernel image has no PROGRESS_NS pointer")?;
    let config = || -> Result<QemuConfig, String> {
        icount_config(
            "qemu-virt",
            2,
            &format!("workload=sched-pipe loops={PROGRESS_LOOPS} pinned=1"),
        )
    };
    let report = |lines: &[String]| -> Result<String, String> {
        Ok(crate::run::report::parse_report(lines)?.to_json())
    };
    let plain = report(&boot(kernel, &config()?)?)?;
    let socket = std::env::temp_dir().join(format!("fairway-qmp-test-{}.sock", std::process::id()));
    let mut watched = config()?;
    watched.extra_arguments.extend([
        "-qmp".into(),
        format!("unix:{},server=on,wait=off", socket.display()),
    ]);
    let line = crate::run::progress::ProgressLine::start_with(
        socket,
        address,
        None,
        Duration::ZERO,
        false,
    );
    let lines = boot(kernel, &watched);
    let readings = std::sync::Arc::clone(&line.readings);
    drop(line);
    let reads = readings.count.load(std::sync::atomic::Ordering::Relaxed);
    let last = readings.last_ns.load(std::sync::atomic::Ordering::Relaxed);
    if report(&lines?)? != plain {
        return Err("the run read by the progress line reports differently".into());
    }
    if reads < 2 || last == 0 {
        return Err(format!(
            "{reads} reads of the kernel's time, the last {last} ns"
        ));
    }
    Ok(format!(
        "{reads} reads of the kernel's time through QMP (last {:.3} s); the report is \
         byte-identical to the unread run's",
        last as f64 / 1e9
    ))
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
