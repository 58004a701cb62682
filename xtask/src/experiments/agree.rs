//! Host and kernel agreement: the kernel's context-switch trace (`trace_switches=N`,
//! `trace: switch ...` lines) against the host simulator's switches for the same
//! rt-app scenario on one CPU, compared as sequences of (previous, next) task names.
//!
//! ```text
//!  kernel lines ──parse──► switches ──normalise──┐
//!                                                 ├──► first index where (prev, next) differ
//!  scenario ──fairway_sim (hrtick, kernel's tick phase)──► switches ──┘
//! ```
//!
//! Normalising removes what only the kernel has: its `main` task, which runs the
//! scenario and waits for it, and the starter that creates the instances (their
//! switches before the first scenario task runs are dropped, the first switch is
//! read as from `idle`, and a later `X -> main, main -> Y` pair, as when the last
//! task to finish wakes `main`, becomes `X -> Y`).
//! The idle task is `idle` on both sides.

use std::path::Path;

use fairway_rtapp::parse_and_validate;
use fairway_sim::{Config, Simulation, policy_kind};

/// The kernel's own tasks around a scenario: the task that runs it (`main`) and
/// the SCHED_FIFO task that creates its instances (`src/workload/rtapp.rs`).
pub const HARNESS: [&str; 2] = ["main", "rtapp-start"];

/// One context switch, by task name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// When, in ns since the scenario started.
    pub time_ns: u64,
    /// The task switched away from (`idle` for the idle task).
    pub previous: String,
    /// The task switched to.
    pub next: String,
}

/// The kernel's trace: its origin and tick period, and its switches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTrace {
    /// The scenario's start, in ns since boot (the trace's time zero).
    pub start_boot_ns: u64,
    /// The kernel's tick period.
    pub tick_ns: u64,
    /// Every `trace: switch` line, in order.
    pub switches: Vec<Entry>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

fn number(line: &str, key: &str) -> Result<u64, String> {
    field(line, key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("trace line without a numeric {key}=: {line}"))
}

/// Reads the `trace: start` and `trace: switch` lines of a kernel transcript (the
/// decoder's timestamp prefix, if any, is skipped).
pub fn parse_kernel_trace(lines: &[String]) -> Result<KernelTrace, String> {
    let mut trace = KernelTrace::default();
    let mut started = false;
    for line in lines {
        if let Some(at) = line.find("trace: start ") {
            let rest = &line[at..];
            trace.start_boot_ns = number(rest, "boot_ns")?;
            trace.tick_ns = number(rest, "tick_ns")?;
            started = true;
        } else if let Some(at) = line.find("trace: switch ") {
            let rest = &line[at..];
            let name = |key| {
                field(rest, key)
                    .map(str::to_string)
                    .ok_or_else(|| format!("trace line without {key}=: {line}"))
            };
            trace.switches.push(Entry {
                time_ns: number(rest, "time_ns")?,
                previous: name("prev")?,
                next: name("next")?,
            });
        }
    }
    if !started {
        return Err("the kernel printed no 'trace: start' line (trace_switches=N?)".into());
    }
    Ok(trace)
}

/// The kernel's switches without its `main` task (see the module comment).
pub fn normalise_kernel(switches: &[Entry]) -> Vec<Entry> {
    let is_scenario_task = |name: &str| !HARNESS.contains(&name) && name != "idle";
    let Some(first) = switches.iter().position(|s| is_scenario_task(&s.next)) else {
        return Vec::new();
    };
    let mut out: Vec<Entry> = Vec::new();
    let mut held: Option<Entry> = None;
    for (index, switch) in switches[first..].iter().enumerate() {
        let mut switch = switch.clone();
        if index == 0 {
            switch.previous = "idle".into();
        }
        if HARNESS.contains(&switch.next.as_str()) {
            held = Some(switch);
            continue;
        }
        if HARNESS.contains(&switch.previous.as_str()) {
            match held.take() {
                Some(before) if before.previous != switch.next => out.push(Entry {
                    time_ns: switch.time_ns,
                    previous: before.previous,
                    next: switch.next,
                }),
                Some(_) => {}
                None => out.push(switch),
            }
            continue;
        }
        out.push(switch);
    }
    out
}

/// The simulator's switches by name.
pub fn sim_entries(results: &fairway_sim::Results) -> Vec<Entry> {
    let name =
        |task: Option<usize>| task.map_or("idle".to_string(), |t| results.tasks[t].name.clone());
    results
        .switches
        .iter()
        .map(|s| Entry {
            time_ns: s.time_ns,
            previous: name(s.previous),
            next: name(s.next),
        })
        .collect()
}

/// Where two switch sequences first differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// Switches compared: the limit, or the shorter sequence's length.
    pub compared: usize,
    /// The first index (0-based) whose (previous, next) differ, if any.
    pub first_divergence: Option<usize>,
    /// Both neighbourhoods of the divergence (or a one-line summary).
    pub report: String,
}

impl Comparison {
    /// How many switches agree from the start.
    pub fn agreeing(&self) -> usize {
        self.first_divergence.unwrap_or(self.compared)
    }
}

/// Compares the first `limit` switches of `kernel` and `sim` (both normalised).
pub fn compare(kernel: &[Entry], sim: &[Entry], limit: usize) -> Comparison {
    let compared = limit.min(kernel.len()).min(sim.len());
    let same = |a: &Entry, b: &Entry| a.previous == b.previous && a.next == b.next;
    let first_divergence = (0..compared).find(|&i| !same(&kernel[i], &sim[i]));
    // How far apart in time the agreeing switches fell (the kernel's costs).
    let drift = (0..first_divergence.unwrap_or(compared))
        .map(|i| (kernel[i].time_ns.abs_diff(sim[i].time_ns), i))
        .max()
        .map_or(String::new(), |(ns, i)| {
            format!("; times differ by up to {ns} ns (switch {i})")
        });
    let report = match first_divergence {
        None => format!(
            "{compared} switches agree (kernel {}, simulator {}, limit {limit}){drift}",
            kernel.len(),
            sim.len()
        ),
        Some(at) => {
            let mut text = format!(
                "switch {at} differs ({at} of {compared} agree{drift}); index: kernel | simulator\n"
            );
            let show = |entry: Option<&Entry>| {
                entry.map_or("-".to_string(), |e| {
                    format!("{:>12} {} -> {}", e.time_ns, e.previous, e.next)
                })
            };
            for i in at.saturating_sub(5)..(at + 6).min(compared.max(at + 1)) {
                text.push_str(&format!(
                    "  {}{i:>4}: {:<48} | {}\n",
                    if i == at { '>' } else { ' ' },
                    show(kernel.get(i)),
                    show(sim.get(i))
                ));
            }
            text
        }
    };
    Comparison {
        compared,
        first_divergence,
        report,
    }
}

/// Replays `scenario` on one CPU in the simulator as the kernel ran it: slice ends on
/// the high-resolution timer (`hrtick=1`, which the agreement cases give the kernel), and ticks where the
/// kernel's fell. The simulator's time zero is the kernel's first switch to a scenario
/// task (every task is queued by then; the kernel spawns them one by one before).
pub fn simulate_like_kernel(
    scenario: &Path,
    policy: &str,
    trace: &KernelTrace,
) -> Result<Vec<Entry>, String> {
    let text =
        std::fs::read_to_string(scenario).map_err(|e| format!("{}: {e}", scenario.display()))?;
    let parsed =
        parse_and_validate(&text, 1).map_err(|e| format!("{}: {e}", scenario.display()))?;
    let tick_ns = trace.tick_ns.max(1);
    let first = normalise_kernel(&trace.switches)
        .first()
        .map_or(0, |s| s.time_ns);
    let origin = trace.start_boot_ns + first;
    let config = Config {
        policy: policy_kind(
            policy,
            fairway_sched::round_robin::DEFAULT_SLICE_NS,
            1,
            tick_ns,
        )
        .map_err(|e| e.to_string())?,
        policy_name: policy.into(),
        capacities: vec![fairway_sched::run_queue::CpuCapacity::default()],
        tick_ns,
        duration_ns: None,
        sample_interval_ns: 1_000_000,
        hrtick: true,
        tick_phase_ns: (tick_ns - origin % tick_ns) % tick_ns,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        // As the kernel's `uclamp=auto`.
        uclamp: parsed.first_clamp().is_some(),
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    };
    let results = Simulation::new(&parsed, config)
        .and_then(|s| s.run(None))
        .map_err(|e| e.to_string())?;
    Ok(sim_entries(&results)
        .into_iter()
        .map(|mut e| {
            e.time_ns += first;
            e
        })
        .collect())
}

/// `cargo xtask agree TRANSCRIPT SCENARIO.json POLICY [--limit N] [--sim FILE.csv]`:
/// compares a saved kernel transcript (run with `trace_switches=N sched=POLICY` on one
/// CPU) with the simulator replaying the scenario as the kernel ran it; `--sim` also
/// writes the simulator's switches (`time_ns,prev,next`, on the kernel's time axis).
pub fn command(args: &[String]) -> Result<std::process::ExitCode, String> {
    let usage = "usage: cargo xtask agree TRANSCRIPT SCENARIO.json rr|cfs|eevdf [--limit N] [--sim FILE.csv]";
    let [transcript, scenario, policy, rest @ ..] = args else {
        return Err(usage.into());
    };
    let mut limit = 1000;
    let mut sim_csv = None;
    let mut options = rest.iter();
    while let Some(option) = options.next() {
        let value = options.next().ok_or(usage)?;
        match option.as_str() {
            "--limit" => limit = value.parse().map_err(|_| format!("--limit {value}"))?,
            "--sim" => sim_csv = Some(value.clone()),
            _ => return Err(usage.into()),
        }
    }
    let text = std::fs::read_to_string(transcript).map_err(|e| format!("{transcript}: {e}"))?;
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let trace = parse_kernel_trace(&lines)?;
    let kernel = normalise_kernel(&trace.switches);
    let sim = simulate_like_kernel(Path::new(scenario), policy, &trace)?;
    if let Some(path) = sim_csv {
        let mut csv = String::from("time_ns,prev,next\n");
        for e in &sim {
            csv.push_str(&format!("{},{},{}\n", e.time_ns, e.previous, e.next));
        }
        std::fs::write(&path, csv).map_err(|e| format!("{path}: {e}"))?;
    }
    let comparison = compare(&kernel, &sim, limit);
    println!("{}", comparison.report);
    Ok(if comparison.first_divergence.is_none() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(time_ns: u64, previous: &str, next: &str) -> Entry {
        Entry {
            time_ns,
            previous: previous.into(),
            next: next.into(),
        }
    }

    #[test]
    fn kernel_lines_are_parsed_with_or_without_a_timestamp() {
        let lines: Vec<String> = [
            "0.1 INFO boot",
            "1.2 trace: start boot_ns=123456 tick_ns=4000000",
            "1.2 trace: switch time_ns=10 cpu=0 prev=main next=a",
            "trace: switch time_ns=20 cpu=0 prev=a next=idle",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let trace = parse_kernel_trace(&lines).unwrap();
        assert_eq!((trace.start_boot_ns, trace.tick_ns), (123_456, 4_000_000));
        assert_eq!(
            trace.switches,
            vec![entry(10, "main", "a"), entry(20, "a", "idle")]
        );
        assert!(parse_kernel_trace(&lines[2..]).is_err());
    }

    #[test]
    fn main_is_removed() {
        let kernel = [
            entry(1, "idle", "main"),
            entry(2, "main", "idle"),
            entry(3, "idle", "main"),
            entry(10, "main", "a"),
            entry(20, "a", "b"),
            entry(30, "b", "main"),
            entry(31, "main", "a"),
            entry(40, "a", "main"),
            entry(41, "main", "a"),
            entry(50, "a", "main"),
            entry(51, "main", "idle"),
        ];
        assert_eq!(
            normalise_kernel(&kernel),
            vec![
                entry(10, "idle", "a"),
                entry(20, "a", "b"),
                entry(31, "b", "a"),
                entry(51, "a", "idle"),
            ]
        );
    }

    #[test]
    fn the_first_difference_is_found() {
        let a = [
            entry(0, "idle", "x"),
            entry(1, "x", "y"),
            entry(2, "y", "x"),
        ];
        let b = [
            entry(0, "idle", "x"),
            entry(1, "x", "y"),
            entry(2, "y", "z"),
        ];
        let same = compare(&a, &a, 1000);
        assert_eq!((same.compared, same.first_divergence), (3, None));
        let differ = compare(&a, &b, 1000);
        assert_eq!(differ.first_divergence, Some(2));
        assert_eq!(differ.agreeing(), 2);
        assert!(differ.report.contains(">   2:"), "{}", differ.report);
        assert_eq!(compare(&a, &b, 2).first_divergence, None);
    }
}
