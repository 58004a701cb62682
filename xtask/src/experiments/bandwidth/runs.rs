//! Running a point: in the kernel under QEMU icount (its transcript kept)
//! and in the simulator with the tick grid where the kernel's fell.

use std::path::Path;
use std::time::Duration;

use fairway_sched::run_queue::CpuCapacity;
use fairway_sim::{Config, Simulation, policy_kind};

use super::measure::{Class, Event, Measure, group_of, kernel_trace, phase, steady_window};
use super::{MS, Point, TICK, TRACE_SWITCHES};
use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};

/// Boots the kernel on `point` and measures it; also returns where the
/// scenario started (ns since boot), for the simulator's tick grid.
pub(super) fn run_kernel(
    kernel: &Path,
    point: &Point,
    folder: &Path,
) -> Result<(Measure, u64), String> {
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
pub(super) fn run_simulator(point: &Point, origin: u64) -> Result<Measure, String> {
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
