//! `cargo xtask bandwidth-experiment KERNEL [--quick | --energy]`: the bandwidth timer
//! interleaving experiment of docs/linux-sched-reference.md §4.6 (the 2023
//! RFC), on Fairway.
//!
//! G ∈ {1, 2} groups, each with `cpu.max` = 25 % of the machine
//! (N × 25 ms per 100 ms) and N CPU-bound tasks (`stress-ng --cpu N`), on
//! N ∈ {1, 2, 4, 8} CPUs, with the period grids started `aligned`, `period10`
//! or `random` (seeds 1, 2, 3). Each point runs in the kernel under QEMU icount
//! (with its context-switch trace) and in the simulator with the same
//! settings (its tick grid placed where the kernel's fell), and gives:
//!
//! - work done per second: the groups' tasks' runtime over the run, in
//!   CPU-seconds per second and as a share of the quota sum, and its change
//!   against `aligned` (the RFC's figure);
//! - the mean CPU idle residency (`report: cpu`), the groups' `nr_throttled`,
//!   and from the switch trace the time every CPU is idle at once (a
//!   package-idle proxy);
//! - the work and the all-idle time again over the steady-state window `[period, duration -
//!   period)` of whole periods, which the start offsets cannot tilt (over
//!   whole periods every group is refilled once a period, whatever its
//!   offset, while over the run a grid that does not start at 0 fits one
//!   more refill in than the aligned one, see docs/bandwidth-experiment.md),
//!   with, for two groups, the time both run on CPUs at the same instant and
//!   the time both are in a run phase (not throttled, gaps under 10 ms
//!   bridged).
//!
//! The Markdown tables go to stdout; a full run (not `--quick`) also writes
//! them into docs/bandwidth-experiment.md, between the markers there. Each
//! kernel transcript (with its `trace: switch` lines) is kept in
//! target/bandwidth-experiment/.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fairway_sched::bandwidth::PeriodTimerStart;
use fairway_sched::run_queue::CpuCapacity;
use fairway_sim::{Config, Simulation, policy_kind};

use crate::run::board::{Board, workspace_root};
use crate::run::qemu::{self, QemuConfig};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;
/// The groups' period, as the RFC's.
const PERIOD_US: u64 = 100_000;
const PERIOD: u64 = PERIOD_US * 1000;
/// HZ=250, the kernel's default (`fairway_sched::boot_options::DEFAULT_HZ`).
const TICK: u64 = 4 * MS;
/// The kernel's context-switch trace buffer (`MAX_TRACE_SWITCHES`).
const TRACE_SWITCHES: usize = fairway_sched::boot_options::MAX_TRACE_SWITCHES as usize;
/// The seeds of `bw_timer=random`.
const SEEDS: [u64; 3] = [1, 2, 3];
/// The generated part of the document lies between these lines.
const BEGIN: &str = "<!-- bandwidth-experiment: generated, begin -->";
const END: &str = "<!-- bandwidth-experiment: generated, end -->";
const DOC: &str = "docs/bandwidth-experiment.md";

/// Where the groups' period grids start: `bw_timer=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Aligned,
    Period10,
    Random,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Aligned => "aligned",
            Mode::Period10 => "period10",
            Mode::Random => "random",
        }
    }

    fn start(self, seed: u64) -> PeriodTimerStart {
        match self {
            Mode::Aligned => PeriodTimerStart::Aligned,
            Mode::Period10 => PeriodTimerStart::Period10,
            Mode::Random => PeriodTimerStart::Random { seed },
        }
    }

    /// The kernel's boot options for it.
    fn append(self, seed: u64) -> String {
        match self {
            Mode::Random => format!("bw_timer=random bw_seed={seed}"),
            other => format!("bw_timer={}", other.name()),
        }
    }
}

/// One run: G groups on N CPUs with one start of the grids.
#[derive(Clone, Copy, Debug)]
struct Point {
    groups: usize,
    cpus: usize,
    mode: Mode,
    seed: u64,
    duration_s: u64,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "G={} N={} {}",
            self.groups,
            self.cpus,
            self.mode.append(self.seed)
        )
    }
}

impl Point {
    fn duration_ns(&self) -> u64 {
        self.duration_s * SECOND
    }

    /// Each group's quota: 25 % of the machine, in µs per period.
    fn quota_us(&self) -> u64 {
        self.cpus as u64 * PERIOD_US / 4
    }

    /// The quota sum, in CPU-seconds per second.
    fn quota_sum(&self) -> f64 {
        (self.groups as u64 * self.quota_us()) as f64 / PERIOD_US as f64
    }

    /// The rt-app scenario: groups `/g0`…, each with N CPU-bound tasks.
    fn scenario(&self) -> String {
        let groups: Vec<String> = (0..self.groups)
            .map(|g| {
                format!(
                    r#""/g{g}": {{"cpu.max": "{} {PERIOD_US}"}}"#,
                    self.quota_us()
                )
            })
            .collect();
        // 100 s of work: CPU-bound for the whole run.
        let tasks: Vec<String> = (0..self.groups)
            .map(|g| {
                format!(
                    r#""g{g}": {{"instance": {}, "taskgroup": "/g{g}", "run": 100000000}}"#,
                    self.cpus
                )
            })
            .collect();
        format!(
            "{{\"global\": {{\"duration\": {}, \"calibration\": 1000,\n  \"taskgroups\": {{{}}}}},\n \
             \"tasks\": {{{}}}}}\n",
            self.duration_s,
            groups.join(", "),
            tasks.join(", ")
        )
    }
}

/// What a CPU is doing, for the phase measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Idle,
    /// A task of group `/g<n>`.
    Group(usize),
    /// Anything else (the kernel's harness tasks).
    Other,
}

/// One switch of a trace.
#[derive(Clone, Copy, Debug)]
struct Event {
    time_ns: u64,
    cpu: usize,
    previous: Class,
    next: Class,
}

/// What the switch trace gives: over the whole run `[0, end)`, and over the
/// steady-state window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Phase {
    /// Every CPU idle at once, over the run.
    all_idle_ns: u64,
    /// Every CPU idle at once, in the window.
    steady_all_idle_ns: u64,
    /// A task of `/g0` and one of `/g1` on CPUs at the same instant, in the
    /// window.
    steady_overlap_ns: u64,
    /// Both groups in a run phase at once, in the window: a group's run phase
    /// is the union of its tasks' running time with gaps shorter than
    /// [`BRIDGE`] filled (a group waiting its turn on the CPUs is in its run
    /// phase; a throttled one is out of it for at least the rest of the
    /// period).
    steady_active_ns: u64,
    /// The groups' running time (summed over CPUs) in the window.
    steady_work_ns: u64,
}

/// Gaps in a group's running time shorter than this are waits for the CPUs,
/// not throttling (a throttled group of these points waits at least half a
/// period).
const BRIDGE: u64 = 10 * MS;

/// Merges sorted intervals that touch or lie closer than `gap`.
fn bridged(intervals: &[(u64, u64)], gap: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(from, to) in intervals {
        match out.last_mut() {
            Some(last) if from <= last.1 + gap => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

/// The length of the intersection of two sorted, disjoint interval lists
/// within `window`.
fn intersection(a: &[(u64, u64)], b: &[(u64, u64)], window: (u64, u64)) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let from = a[i].0.max(b[j].0).max(window.0);
        let to = a[i].1.min(b[j].1).min(window.1);
        total += to.saturating_sub(from);
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// Sweeps `events` (each CPU's in its order) over `[0, end)`. Before its first
/// switch a CPU runs what that switch switches away from.
fn phase(cpus: usize, mut events: Vec<Event>, end: u64, steady: (u64, u64)) -> Phase {
    events.sort_by_key(|e| e.time_ns);
    let mut state: Vec<Class> = (0..cpus)
        .map(|cpu| {
            events
                .iter()
                .find(|e| e.cpu == cpu)
                .map_or(Class::Idle, |e| e.previous)
        })
        .collect();
    let mut result = Phase::default();
    // Each group's running time, as intervals (at most two groups measured).
    let mut running: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
    let mut account = |state: &[Class], from: u64, to: u64| {
        let (from, to) = (from.min(end), to.min(end));
        if to <= from {
            return;
        }
        let (s, e) = (from.max(steady.0), to.min(steady.1));
        let inside = e.saturating_sub(s);
        if state.iter().all(|&c| c == Class::Idle) {
            result.all_idle_ns += to - from;
            result.steady_all_idle_ns += inside;
        }
        if state.contains(&Class::Group(0)) && state.contains(&Class::Group(1)) {
            result.steady_overlap_ns += inside;
        }
        for (g, intervals) in running.iter_mut().enumerate() {
            if state.contains(&Class::Group(g)) {
                match intervals.last_mut() {
                    Some(last) if last.1 == from => last.1 = to,
                    _ => intervals.push((from, to)),
                }
            }
        }
        let busy = state
            .iter()
            .filter(|c| matches!(c, Class::Group(_)))
            .count() as u64;
        result.steady_work_ns += busy * inside;
    };
    let mut now = 0;
    for event in &events {
        account(&state, now, event.time_ns);
        now = now.max(event.time_ns);
        state[event.cpu] = event.next;
    }
    account(&state, now, end);
    result.steady_active_ns = intersection(
        &bridged(&running[0], BRIDGE),
        &bridged(&running[1], BRIDGE),
        steady,
    );
    result
}

/// The figures of one run, kernel or simulator.
#[derive(Clone, Copy, Debug)]
struct Measure {
    /// The groups' tasks' runtime per second of the run (CPU-s/s).
    work: f64,
    /// The same in the steady-state window, per second of it.
    steady_work: f64,
    /// Mean idle share of the CPUs over the run (%).
    idle_pct: f64,
    /// Summed over the groups.
    nr_throttled: u64,
    /// Every CPU idle at once (% of the run).
    all_idle_pct: f64,
    /// Every CPU idle at once (% of the window).
    steady_all_idle_pct: f64,
    /// Both groups on CPUs at the same instant (% of the window).
    steady_overlap_pct: f64,
    /// Both groups in a run phase (% of the window).
    steady_active_pct: f64,
    /// The longest a running task went uncharged on any CPU, in ms (the
    /// kernel's `max_uncharged_ns`; `None` in the simulator, whose ticks
    /// fall exactly on time).
    max_uncharged_ms: Option<f64>,
}

impl Measure {
    /// From the groups' runtime, the CPUs' idle and total time, the groups'
    /// `nr_throttled` and the trace's phase (all in ns).
    fn new(
        point: &Point,
        runtime: u64,
        idle: u64,
        total: u64,
        nr_throttled: u64,
        phase: Phase,
    ) -> Self {
        let end = point.duration_ns() as f64;
        let (from, to) = steady_window(point);
        let window = (to - from) as f64;
        Measure {
            work: runtime as f64 / end,
            steady_work: phase.steady_work_ns as f64 / window,
            idle_pct: 100.0 * idle as f64 / total.max(1) as f64,
            nr_throttled,
            all_idle_pct: 100.0 * phase.all_idle_ns as f64 / end,
            steady_all_idle_pct: 100.0 * phase.steady_all_idle_ns as f64 / window,
            steady_overlap_pct: 100.0 * phase.steady_overlap_ns as f64 / window,
            steady_active_pct: 100.0 * phase.steady_active_ns as f64 / window,
            max_uncharged_ms: None,
        }
    }
}

fn group_of(name: &str, groups: usize) -> Class {
    if name == "idle" {
        return Class::Idle;
    }
    (0..groups)
        .find(|g| {
            // `instance` 1 keeps the bare name.
            let base = format!("g{g}");
            name == base || name.starts_with(&format!("{base}-"))
        })
        .map_or(Class::Other, Class::Group)
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The steady-state window: whole periods after the first and before the last.
fn steady_window(point: &Point) -> (u64, u64) {
    (PERIOD, point.duration_ns() - PERIOD)
}

/// The kernel's trace: its origin (ns since boot) and its switches.
fn kernel_trace(lines: &[String], point: &Point) -> Result<(u64, Vec<Event>), String> {
    let mut origin = None;
    let mut events = Vec::new();
    for line in lines {
        if let Some(at) = line.find("trace: start ") {
            origin = field(&line[at..], "boot_ns").and_then(|v| v.parse().ok());
        } else if let Some(at) = line.find("trace: switch ") {
            let rest = &line[at..];
            let bad = || format!("bad trace line: {line}");
            let number = |key| -> Result<u64, String> {
                field(rest, key)
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(bad)
            };
            let name = |key| field(rest, key).ok_or_else(bad);
            events.push(Event {
                time_ns: number("time_ns")?,
                cpu: number("cpu")? as usize,
                previous: group_of(name("prev")?, point.groups),
                next: group_of(name("next")?, point.groups),
            });
        }
    }
    let origin = origin.ok_or("the kernel printed no 'trace: start' line")?;
    if events.len() >= TRACE_SWITCHES {
        return Err(format!(
            "the kernel's switch trace is full ({TRACE_SWITCHES} switches): the phase \
             measures would miss the end of the run"
        ));
    }
    if events.iter().any(|e| e.cpu >= point.cpus) {
        return Err("a trace line names a CPU beyond --cpus".into());
    }
    Ok((origin, events))
}

/// Boots the kernel on `point` and measures it; also returns where the
/// scenario started (ns since boot), for the simulator's tick grid.
fn run_kernel(kernel: &Path, point: &Point, folder: &Path) -> Result<(Measure, u64), String> {
    let name = format!(
        "bandwidth-experiment-g{}-n{}-{}s",
        point.groups, point.cpus, point.duration_s
    );
    let path = folder.join(format!("{name}.json"));
    std::fs::write(&path, point.scenario()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config = QemuConfig::for_board(Board::load("qemu-virt")?);
    config.cpus = point.cpus as u32;
    config.icount = true;
    config.echo = false;
    config.timeout = Duration::from_secs(600);
    config.append = format!(
        "sched=eevdf {} trace_switches={TRACE_SWITCHES}",
        point.mode.append(point.seed)
    );
    config.scenario = Some(path);
    config.use_board_device_tree()?;
    config.load_scenario()?;
    config.check_command_line()?;
    let outcome = qemu::run(kernel, &config)?;
    // The transcript, for a look at the traces behind the table.
    let log = folder.join(format!(
        "{name}-{}.log",
        point.mode.append(point.seed).replace([' ', '='], "-")
    ));
    let mut text = outcome.lines.join("\n");
    text.push('\n');
    std::fs::write(&log, text).map_err(|e| format!("{}: {e}", log.display()))?;
    if outcome.status != Some(0) {
        let tail: Vec<&str> = outcome
            .lines
            .iter()
            .rev()
            .take(8)
            .rev()
            .map(String::as_str)
            .collect();
        return Err(format!(
            "the kernel {} (QEMU: {}); its last lines:\n{}",
            if outcome.timed_out {
                "timed out"
            } else {
                "failed"
            },
            outcome
                .status
                .map_or("killed".to_string(), |s| format!("exit status {s}")),
            tail.join("\n")
        ));
    }
    let report = crate::run::report::parse_report(&outcome.lines)?;
    let [run] = report.runs.as_slice() else {
        return Err(format!(
            "expected one report section, got {}",
            report.runs.len()
        ));
    };
    let mut runtime = 0;
    let mut tasks = 0;
    for task in &run.tasks {
        if let Class::Group(_) = group_of(&task.name, point.groups) {
            runtime += task.runtime_ns;
            tasks += 1;
        }
    }
    if tasks != point.groups * point.cpus {
        return Err(format!(
            "the report lists {tasks} of the {} tasks",
            point.groups * point.cpus
        ));
    }
    if run.cpu_records.len() != point.cpus {
        return Err(format!(
            "the report lists {} CPUs, not {}",
            run.cpu_records.len(),
            point.cpus
        ));
    }
    let idle: u64 = run.cpu_records.iter().map(|c| c.idle_ns).sum();
    let total: u64 = run.cpu_records.iter().map(|c| c.busy_ns + c.idle_ns).sum();
    let mut nr_throttled = 0;
    for g in 0..point.groups {
        let path = format!("/g{g}");
        let group = run
            .groups
            .iter()
            .find(|r| r.path == path)
            .ok_or_else(|| format!("no report: group line of {path}"))?;
        nr_throttled += group.nr_throttled;
    }
    let (origin, events) = kernel_trace(&outcome.lines, point)?;
    let phase = phase(
        point.cpus,
        events,
        point.duration_ns(),
        steady_window(point),
    );
    let uncharged = (0..point.cpus)
        .map(|cpu| {
            let name = format!("max_uncharged_ns.cpu{cpu}");
            run.metrics
                .iter()
                .find(|m| m.name == name)
                .map(|m| m.value)
                .ok_or_else(|| format!("no metric {name}"))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    let mut measure = Measure::new(point, runtime, idle, total, nr_throttled, phase);
    measure.max_uncharged_ms = uncharged.iter().max().map(|&ns| ns as f64 / MS as f64);
    Ok((measure, origin))
}

/// Runs `point` in the simulator, its ticks where the kernel's fell (the
/// kernel ticks at multiples of the period since boot; the scenario started
/// at `origin`).
fn run_simulator(point: &Point, origin: u64) -> Result<Measure, String> {
    let text = point.scenario();
    let scenario = fairway_rtapp::parse_and_validate_for(&text, point.cpus, true)
        .map_err(|e| format!("the scenario: {e}"))?;
    let config = Config {
        policy: policy_kind("eevdf", 4 * MS, point.cpus, TICK).map_err(|e| e.to_string())?,
        policy_name: "eevdf".into(),
        capacities: vec![CpuCapacity::default(); point.cpus],
        tick_ns: TICK,
        duration_ns: Some(point.duration_ns()),
        sample_interval_ns: MS,
        hrtick: true,
        tick_phase_ns: (TICK - origin % TICK) % TICK,
        skew_tick: false,
        tick_seed: 0,
        balance: true,
        // As the kernel's `uclamp=auto`.
        uclamp: scenario.first_clamp().is_some(),
        bandwidth_timer: point.mode.start(point.seed),
        cfs_bandwidth: false,
        dvfs: None,
    };
    let results = Simulation::new(&scenario, config)
        .and_then(|s| s.run(None))
        .map_err(|e| format!("the simulator: {e}"))?;
    let class_of_task: Vec<Class> = results
        .tasks
        .iter()
        .map(|t| {
            t.taskgroup
                .as_ref()
                .and_then(|(path, _)| path.strip_prefix("/g")?.parse().ok())
                .map_or(Class::Other, Class::Group)
        })
        .collect();
    let class = |task: Option<usize>| task.map_or(Class::Idle, |t| class_of_task[t]);
    let runtime: u64 = results
        .tasks
        .iter()
        .zip(&class_of_task)
        .filter(|(_, c)| matches!(c, Class::Group(_)))
        .map(|(t, _)| t.runtime_ns)
        .sum();
    let idle: u64 = results.cpus.iter().map(|c| c.idle_ns).sum();
    let total: u64 = results.cpus.iter().map(|c| c.busy_ns + c.idle_ns).sum();
    let nr_throttled = results.groups.iter().map(|g| g.stats.nr_throttled).sum();
    let events = results
        .switches
        .iter()
        .map(|s| Event {
            time_ns: s.time_ns,
            cpu: s.cpu,
            previous: class(s.previous),
            next: class(s.next),
        })
        .collect();
    let phase = phase(
        point.cpus,
        events,
        point.duration_ns(),
        steady_window(point),
    );
    Ok(Measure::new(
        point,
        runtime,
        idle,
        total,
        nr_throttled,
        phase,
    ))
}

/// A mean over seeds, with the sample standard deviation when there are
/// several.
#[derive(Clone, Copy, Debug)]
struct Stat {
    mean: f64,
    sd: Option<f64>,
}

fn stat(values: &[f64]) -> Stat {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.len() > 1)
        .then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    Stat { mean, sd }
}

fn show(stat: Stat, decimals: usize, sign: bool) -> String {
    let mean = if sign {
        format!("{:+.*}", decimals, stat.mean)
    } else {
        format!("{:.*}", decimals, stat.mean)
    };
    match stat.sd {
        Some(sd) => format!("{mean} ± {sd:.decimals$}"),
        None => mean,
    }
}

/// One row: a G × N × mode, its runs (one per seed for `random`).
struct Row {
    point: Point,
    kernel: Vec<Measure>,
    sim: Vec<Measure>,
}

/// The Markdown table of one side (`kernel` or not: the simulator).
fn table(rows: &[Row], kernel: bool) -> String {
    fn side(row: &Row, kernel: bool) -> &[Measure] {
        if kernel { &row.kernel } else { &row.sim }
    }
    let mut out = String::from(
        "| G | N | start | work (CPU-s/s) | % of quota | Δ vs aligned | idle % | nr_throttled | \
         all CPUs idle % | steady: % of quota | steady: all CPUs idle % | \
         steady: both groups run % | steady: both groups active % | max uncharged (ms) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let p = &row.point;
        let runs = side(row, kernel);
        let aligned = rows
            .iter()
            .find(|r| {
                r.point.groups == p.groups
                    && r.point.cpus == p.cpus
                    && r.point.mode == Mode::Aligned
            })
            .map(|r| side(r, kernel)[0].work)
            .unwrap_or(f64::NAN);
        let pick = |f: &dyn Fn(&Measure) -> f64| stat(&runs.iter().map(f).collect::<Vec<_>>());
        let quota = p.quota_sum();
        let start = match p.mode {
            Mode::Random => format!(
                "random (seed{} {})",
                if runs.len() > 1 { "s" } else { "" },
                SEEDS[..runs.len()]
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.name().to_string(),
        };
        let delta = if p.mode == Mode::Aligned {
            "0".to_string()
        } else {
            show(pick(&|m| (m.work / aligned - 1.0) * 100.0), 2, true) + " %"
        };
        let pair = |f: &dyn Fn(&Measure) -> f64| {
            if p.groups > 1 {
                show(pick(f), 2, false)
            } else {
                "-".to_string()
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {start} | {} | {} | {delta} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.groups,
            p.cpus,
            show(pick(&|m| m.work), 4, false),
            show(pick(&|m| m.work / quota * 100.0), 2, false),
            show(pick(&|m| m.idle_pct), 2, false),
            show(
                pick(&|m| m.nr_throttled as f64),
                usize::from(runs.len() > 1),
                false
            ),
            show(pick(&|m| m.all_idle_pct), 2, false),
            show(pick(&|m| m.steady_work / quota * 100.0), 2, false),
            show(pick(&|m| m.steady_all_idle_pct), 2, false),
            pair(&|m| m.steady_overlap_pct),
            pair(&|m| m.steady_active_pct),
            if runs.iter().all(|m| m.max_uncharged_ms.is_some()) {
                show(pick(&|m| m.max_uncharged_ms.unwrap_or(f64::NAN)), 1, false)
            } else {
                "-".to_string()
            },
        );
    }
    out
}

/// The document as first written, when docs/bandwidth-experiment.md does not
/// exist: the explanation, then the generated part.
const TEMPLATE: &str = "# The bandwidth timer interleaving experiment

`cargo xtask bandwidth-experiment KERNEL` (xtask/src/experiments/bandwidth.rs)
writes the part of this page between the markers below; the rest is kept.

";

/// What `git` prints for `args` in the workspace, trimmed (`None` on failure).
fn git(args: &[&str]) -> Option<String> {
    std::process::Command::new("git")
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The generated part of the document.
fn generated(command: &str, wall: Duration, tables: &str) -> String {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let changed = git(&["diff", "--name-only", "HEAD"]).map_or("unknown".into(), |files| {
        if files.is_empty() {
            "none".to_string()
        } else {
            files.lines().collect::<Vec<_>>().join(", ")
        }
    });
    let host = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{BEGIN}\n\nProduced by `{command}` at commit {commit} (tracked files changed since: \
         {changed}) in {:.0} s of wall time ({} min {:.0} s) on a host with {host} CPUs.\n\n\
         {tables}{END}\n",
        wall.as_secs_f64(),
        wall.as_secs() / 60,
        wall.as_secs_f64() % 60.0
    )
}

/// Where each start puts the groups' grids: `PeriodTimerStart::offset` for
/// the ids the kernel and the simulator give `/g0` and `/g1` (1 and 2: the
/// scenario's groups in order, after the root).
fn offsets(seeds: &[u64]) -> String {
    let mut starts = vec![("aligned".to_string(), Mode::Aligned.start(0))];
    starts.push(("period10".to_string(), Mode::Period10.start(0)));
    for &seed in seeds {
        starts.push((format!("random, bw_seed={seed}"), Mode::Random.start(seed)));
    }
    let shown: Vec<String> = starts
        .iter()
        .map(|(name, start)| {
            let ms = |group| start.offset(group, PERIOD) as f64 / MS as f64;
            format!("{name}: {:.3} ms, {:.3} ms", ms(1), ms(2))
        })
        .collect();
    format!(
        "Grid offsets of /g0 and /g1 (group ids 1 and 2): {}.\n",
        shown.join("; ")
    )
}

/// `text` with `part` in place of what lies between the markers (both
/// included), the rest kept.
fn replace_generated(text: &str, part: &str) -> Result<String, String> {
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!(
            "no '{BEGIN}' and '{END}' lines to write the table between"
        ));
    };
    if end < begin {
        return Err("the markers are out of order".into());
    }
    Ok(format!(
        "{}{}{}",
        &text[..begin],
        part,
        text[end + END.len()..].trim_start_matches('\n')
    ))
}

/// Puts `part` between the markers of the document (the template if the file
/// does not exist).
fn write_document(part: &str) -> Result<PathBuf, String> {
    let path = workspace_root().join(DOC);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("{TEMPLATE}{BEGIN}\n{END}\n"),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let text = replace_generated(&text, part).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// `cargo xtask bandwidth-experiment KERNEL [--quick]`.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let usage = "bandwidth-experiment needs the kernel image: cargo xtask bandwidth-experiment \
                 target/aarch64-unknown-none-softfloat/release/fairway [--quick | --energy]";
    let mut kernel = None;
    let mut quick = false;
    let mut energy = false;
    for arg in args {
        match arg.as_str() {
            "--quick" => quick = true,
            "--energy" => energy = true,
            other if other.starts_with("--") => {
                return Err(format!("bandwidth-experiment: unknown option '{other}'"));
            }
            other if kernel.is_none() => kernel = Some(PathBuf::from(other)),
            other => return Err(format!("bandwidth-experiment: unexpected '{other}'")),
        }
    }
    let kernel = kernel.ok_or(usage)?;
    if !kernel.is_file() {
        return Err(format!("{}: no such kernel image", kernel.display()));
    }
    crate::run::tools::ensure()?;
    if energy {
        return energy_command(&kernel);
    }
    let started = Instant::now();
    let (cpu_counts, seeds, duration_s): (&[usize], &[u64], u64) = if quick {
        (&[1, 2], &SEEDS[..1], 1)
    } else {
        (&[1, 2, 4, 8], &SEEDS, 2)
    };
    let folder = workspace_root().join("target").join("bandwidth-experiment");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let mut rows = Vec::new();
    for groups in [1, 2] {
        for &cpus in cpu_counts {
            for mode in [Mode::Aligned, Mode::Period10, Mode::Random] {
                let seeds = if mode == Mode::Random {
                    seeds
                } else {
                    &[0][..]
                };
                let mut row = Row {
                    point: Point {
                        groups,
                        cpus,
                        mode,
                        seed: seeds[0],
                        duration_s,
                    },
                    kernel: Vec::new(),
                    sim: Vec::new(),
                };
                for &seed in seeds {
                    let point = Point { seed, ..row.point };
                    let boot = Instant::now();
                    let (kernel, origin) = run_kernel(&kernel, &point, &folder)
                        .map_err(|e| format!("{point}: {e}"))?;
                    let sim = run_simulator(&point, origin).map_err(|e| format!("{point}: {e}"))?;
                    eprintln!(
                        "xtask: {point}: kernel {:.4} CPU-s/s, {:.2} % all idle; simulator {:.4} \
                         CPU-s/s, {:.2} % all idle ({:.1} s)",
                        kernel.work,
                        kernel.all_idle_pct,
                        sim.work,
                        sim.all_idle_pct,
                        boot.elapsed().as_secs_f64()
                    );
                    row.kernel.push(kernel);
                    row.sim.push(sim);
                }
                rows.push(row);
            }
        }
    }
    let wall = started.elapsed();
    let tables = format!(
        "### Kernel (QEMU icount, `sched=eevdf`, HZ=250, {duration_s} s per run)\n\n{}\n\
         ### Simulator (same scenario and settings, ticks where the kernel's fell)\n\n{}\n{}\n",
        table(&rows, true),
        table(&rows, false),
        offsets(seeds)
    );
    println!("{tables}");
    let shown = kernel.display();
    let command = format!(
        "cargo xtask bandwidth-experiment {shown}{}",
        if quick { " --quick" } else { "" }
    );
    eprintln!("xtask: {command}: {:.1} s of wall time", wall.as_secs_f64());
    if quick {
        eprintln!("xtask: --quick: {DOC} keeps the full run's table");
    } else {
        let path = write_document(&generated(&command, wall, &tables))?;
        eprintln!("xtask: wrote the tables into {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time_ns: u64, cpu: usize, previous: Class, next: Class) -> Event {
        Event {
            time_ns,
            cpu,
            previous,
            next,
        }
    }

    #[test]
    fn phase_sweeps_all_idle_and_overlap() {
        use Class::{Group, Idle};
        // cpu0: g0 0-30, idle 30-100; cpu1: idle 0-10, g1 10-50, idle after.
        // All idle 50-100; both groups on CPUs 10-30. Window [20, 80).
        let events = vec![
            event(0, 0, Idle, Group(0)),
            event(30, 0, Group(0), Idle),
            event(10, 1, Idle, Group(1)),
            event(50, 1, Group(1), Idle),
        ];
        let p = phase(2, events, 100, (20, 80));
        assert_eq!(p.all_idle_ns, 50);
        assert_eq!(p.steady_all_idle_ns, 30);
        assert_eq!(p.steady_overlap_ns, 10);
        assert_eq!(p.steady_active_ns, 10);
        // In [20, 80): g0 20-30 and g1 20-50.
        assert_eq!(p.steady_work_ns, 10 + 30);
    }

    #[test]
    fn run_phases_bridge_short_gaps_only() {
        use Class::{Group, Idle};
        // One CPU alternating g0 and g1 every 3 ms for 30 ms, then idle 60 ms,
        // then g0 alone 10 ms: both groups are in their run phase 0-30 (a
        // 3 ms wait is bridged), and g0 is alone in its second.
        let mut events = Vec::new();
        let mut previous = Idle;
        for k in 0..10 {
            let next = Group(k % 2);
            events.push(event(k as u64 * 3 * MS, 0, previous, next));
            previous = next;
        }
        events.push(event(30 * MS, 0, previous, Idle));
        events.push(event(90 * MS, 0, Idle, Group(0)));
        events.push(event(100 * MS, 0, Group(0), Idle));
        let p = phase(1, events, 120 * MS, (0, 120 * MS));
        assert_eq!(p.steady_overlap_ns, 0, "one CPU never runs both");
        // g0 runs 0-27 bridged (its last stretch 24-27), g1 3-30: 3-27.
        assert_eq!(p.steady_active_ns, 24 * MS);
        assert_eq!(p.steady_all_idle_ns, 60 * MS + 20 * MS);
    }

    #[test]
    fn the_scenario_is_valid_and_sized() {
        let point = Point {
            groups: 2,
            cpus: 4,
            mode: Mode::Random,
            seed: 1,
            duration_s: 2,
        };
        let scenario = fairway_rtapp::parse_and_validate(&point.scenario(), 4).unwrap();
        assert_eq!(point.quota_us(), 100_000);
        assert!((point.quota_sum() - 2.0).abs() < 1e-9);
        assert!(format!("{scenario:?}").contains("/g1"));
        assert_eq!(point.to_string(), "G=2 N=4 bw_timer=random bw_seed=1");
    }

    #[test]
    fn offsets_name_each_start() {
        let text = offsets(&[1]);
        assert!(text.contains("aligned: 0.000 ms, 0.000 ms"), "{text}");
        assert!(text.contains("period10: 10.000 ms, 20.000 ms"), "{text}");
        assert!(text.contains("random, bw_seed=1: "), "{text}");
    }

    #[test]
    fn the_document_keeps_what_lies_outside_the_markers() {
        let text = format!("head\n{BEGIN}\nold\n{END}\ntail\n");
        let new = replace_generated(&text, &format!("{BEGIN}\nnew\n{END}\n")).unwrap();
        assert_eq!(new, format!("head\n{BEGIN}\nnew\n{END}\ntail\n"));
        assert!(replace_generated("no markers", "x").is_err());
    }
}

/// The board of the energy table (issue 13: the interleaving table re-run on
/// a heterogeneous board with schedutil, with energy per mode).
const ENERGY_BOARD: &str = "juno-r2";

/// One energy run's figures: the groups' CPU time per second and the
/// energy of all performance domains, in J.
#[derive(Clone, Copy, Debug)]
struct EnergyMeasure {
    work: f64,
    energy_j: f64,
}

fn energy_kernel(kernel: &Path, point: &Point, folder: &Path) -> Result<EnergyMeasure, String> {
    let name = format!(
        "bandwidth-energy-g{}-{}",
        point.groups,
        point.mode.append(point.seed)
    )
    .replace([' ', '='], "-");
    let path = folder.join(format!("{name}.json"));
    std::fs::write(&path, point.scenario()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config = QemuConfig::for_board(Board::load(ENERGY_BOARD)?);
    config.icount = true;
    config.echo = false;
    config.timeout = Duration::from_secs(600);
    config.append = format!(
        "sched=eevdf governor=schedutil {}",
        point.mode.append(point.seed)
    );
    config.scenario = Some(path);
    config.use_board_device_tree()?;
    config.load_scenario()?;
    config.check_command_line()?;
    let outcome = qemu::run(kernel, &config)?;
    if outcome.status != Some(0) {
        return Err(format!(
            "the kernel failed: {}",
            outcome.lines.last().map_or("", String::as_str)
        ));
    }
    let report = crate::run::report::parse_report(&outcome.lines)?;
    let [run] = report.runs.as_slice() else {
        return Err(format!(
            "expected one report section, got {}",
            report.runs.len()
        ));
    };
    let runtime: u64 = run
        .tasks
        .iter()
        .filter(|t| matches!(group_of(&t.name, point.groups), Class::Group(_)))
        .map(|t| t.runtime_ns)
        .sum();
    let energy_nj: u64 = run
        .metrics
        .iter()
        .filter(|m| m.name.starts_with("energy_nj.pd"))
        .map(|m| m.value)
        .sum();
    Ok(EnergyMeasure {
        work: runtime as f64 / point.duration_ns() as f64,
        energy_j: energy_nj as f64 / 1e9,
    })
}

fn energy_simulator(point: &Point) -> Result<EnergyMeasure, String> {
    let sched = fairway_sched::boot_options::SchedConfig::parse("governor=schedutil")
        .map_err(|e| e.to_string())?;
    let board = fairway_sim::board::load(
        &workspace_root()
            .join("boards")
            .join(ENERGY_BOARD)
            .display()
            .to_string(),
        &sched,
    )
    .map_err(|e| e.to_string())?;
    let text = point.scenario();
    let scenario = fairway_rtapp::parse_and_validate_for(&text, point.cpus, true)
        .map_err(|e| format!("the scenario: {e}"))?;
    let config = Config {
        policy: policy_kind("eevdf", 4 * MS, point.cpus, TICK).map_err(|e| e.to_string())?,
        policy_name: "eevdf".into(),
        capacities: board.capacities,
        tick_ns: TICK,
        duration_ns: Some(point.duration_ns()),
        sample_interval_ns: MS,
        hrtick: true,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: true,
        // As the kernel's `uclamp=auto`.
        uclamp: scenario.first_clamp().is_some(),
        bandwidth_timer: point.mode.start(point.seed),
        cfs_bandwidth: false,
        dvfs: board.dvfs,
    };
    let results = Simulation::new(&scenario, config)
        .and_then(|s| s.run(None))
        .map_err(|e| format!("the simulator: {e}"))?;
    let runtime: u64 = results
        .tasks
        .iter()
        .filter(|t| t.taskgroup.is_some())
        .map(|t| t.runtime_ns)
        .sum();
    Ok(EnergyMeasure {
        work: runtime as f64 / point.duration_ns() as f64,
        energy_j: results.energy.iter().map(|d| d.energy_nj).sum::<u64>() as f64 / 1e9,
    })
}

/// `--energy`: G ∈ {1, 2} groups of 6 CPU-bound tasks, each `cpu.max` = 25 %
/// of Juno r2's 6 CPUs, 2 s, schedutil, per period-timer start: the groups'
/// CPU time per second and the energy, in the kernel and in the simulator,
/// with their change against `aligned` (the RFC saw power rise by 2 … 13 %
/// with interleaving while throughput rose by 12 … 26 %, §4.6). CPU time on a
/// heterogeneous board is not work: a LITTLE CPU's second does less.
fn energy_command(kernel: &Path) -> Result<ExitCode, String> {
    let folder = workspace_root().join("target").join("bandwidth-experiment");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let cpus = 6;
    let mut table = String::from(
        "| G | bw_timer | kernel CPU-s/s | vs aligned | kernel energy | vs aligned | \
         simulator CPU-s/s | vs aligned | simulator energy | vs aligned |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for groups in [1, 2] {
        let mut aligned: Option<(EnergyMeasure, EnergyMeasure)> = None;
        for (mode, seed) in [
            (Mode::Aligned, 0),
            (Mode::Period10, 0),
            (Mode::Random, 1),
            (Mode::Random, 2),
            (Mode::Random, 3),
        ] {
            let point = Point {
                groups,
                cpus,
                mode,
                seed,
                duration_s: 2,
            };
            let kernel =
                energy_kernel(kernel, &point, &folder).map_err(|e| format!("{point}: {e}"))?;
            let sim = energy_simulator(&point).map_err(|e| format!("{point}: {e}"))?;
            let base = *aligned.get_or_insert((kernel, sim));
            let change = |now: f64, then: f64| format!("{:+.1} %", (now / then - 1.0) * 100.0);
            let _ = writeln!(
                table,
                "| {groups} | {} | {:.3} | {} | {:.3} J | {} | {:.3} | {} | {:.3} J | {} |",
                mode.append(seed),
                kernel.work,
                change(kernel.work, base.0.work),
                kernel.energy_j,
                change(kernel.energy_j, base.0.energy_j),
                sim.work,
                change(sim.work, base.1.work),
                sim.energy_j,
                change(sim.energy_j, base.1.energy_j),
            );
            eprintln!("xtask: {point}: kernel {kernel:?}, simulator {sim:?}");
        }
    }
    print!("{table}");
    Ok(ExitCode::SUCCESS)
}
