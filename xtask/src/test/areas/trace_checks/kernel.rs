//! The kernel's traces: a kernel built with trace events, its traced runs held
//! against its report (and its explained throttles and energy estimates
//! against the numbers behind them), what a record costs, and the progress
//! line's reads.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Counts, OVERRUN_COUNTS, check_counts, check_trace};
use crate::run::board::{Board, workspace_root};
use crate::run::qemu::{self, QemuConfig};

/// One traced kernel run: a name, the board, CPUs, the scenario and the
/// command line.
pub(super) struct KernelCase {
    pub(super) name: &'static str,
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
pub(super) const KERNEL_CASES: [KernelCase; 4] = [
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
pub(super) fn build_trace_kernel() -> Result<PathBuf, String> {
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
pub(super) fn kernel_case(
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
pub(super) fn record_cost(kernel: &Path) -> Result<String, String> {
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

/// Round trips of the progress-line check: about 3 s of wall time.
const PROGRESS_LOOPS: u64 = 200_000;

/// The runner's progress line reads the kernel's time through QEMU's
/// monitor (xtask/src/run/progress.rs) without changing the run: sched-pipe
/// under icount with the reader attached (reading from the start, printing
/// nothing) reports what the same run reports without it, byte for byte,
/// and the reader saw the kernel's time advance.
pub(super) fn progress_reads(kernel: &Path) -> Result<String, String> {
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
