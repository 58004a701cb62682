//! The measures of a run: its switches swept into phases (every CPU idle,
//! both groups on CPUs, both in a run phase), and the figures of a run,
//! kernel or simulator ([`Measure`]), from its report and its trace.

use super::{MS, PERIOD, Point, TRACE_SWITCHES};

/// What a CPU is doing, for the phase measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Idle,
    /// A task of group `/g<n>`.
    Group(usize),
    /// Anything else (the kernel's harness tasks).
    Other,
}

/// One switch of a trace.
#[derive(Clone, Copy, Debug)]
pub(super) struct Event {
    pub(super) time_ns: u64,
    pub(super) cpu: usize,
    pub(super) previous: Class,
    pub(super) next: Class,
}

/// What the switch trace gives: over the whole run `[0, end)`, and over the
/// steady-state window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Phase {
    /// Every CPU idle at once, over the run.
    pub(super) all_idle_ns: u64,
    /// Every CPU idle at once, in the window.
    pub(super) steady_all_idle_ns: u64,
    /// A task of `/g0` and one of `/g1` on CPUs at the same instant, in the
    /// window.
    pub(super) steady_overlap_ns: u64,
    /// Both groups in a run phase at once, in the window: a group's run phase
    /// is the union of its tasks' running time with gaps shorter than
    /// [`BRIDGE`] filled (a group waiting its turn on the CPUs is in its run
    /// phase; a throttled one is out of it for at least the rest of the
    /// period).
    pub(super) steady_active_ns: u64,
    /// The groups' running time (summed over CPUs) in the window.
    pub(super) steady_work_ns: u64,
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
pub(super) fn phase(cpus: usize, mut events: Vec<Event>, end: u64, steady: (u64, u64)) -> Phase {
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
pub(super) struct Measure {
    /// The groups' tasks' runtime per second of the run (CPU-s/s).
    pub(super) work: f64,
    /// The same in the steady-state window, per second of it.
    pub(super) steady_work: f64,
    /// Mean idle share of the CPUs over the run (%).
    pub(super) idle_pct: f64,
    /// Summed over the groups.
    pub(super) nr_throttled: u64,
    /// Every CPU idle at once (% of the run).
    pub(super) all_idle_pct: f64,
    /// Every CPU idle at once (% of the window).
    pub(super) steady_all_idle_pct: f64,
    /// Both groups on CPUs at the same instant (% of the window).
    pub(super) steady_overlap_pct: f64,
    /// Both groups in a run phase (% of the window).
    pub(super) steady_active_pct: f64,
    /// The longest a running task went uncharged on any CPU, in ms (the
    /// kernel's `max_uncharged_ns`; `None` in the simulator, whose ticks
    /// fall exactly on time).
    pub(super) max_uncharged_ms: Option<f64>,
}

impl Measure {
    /// From the groups' runtime, the CPUs' idle and total time, the groups'
    /// `nr_throttled` and the trace's phase (all in ns).
    pub(super) fn new(
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

pub(super) fn group_of(name: &str, groups: usize) -> Class {
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
pub(super) fn steady_window(point: &Point) -> (u64, u64) {
    (PERIOD, point.duration_ns() - PERIOD)
}

/// The kernel's trace: its origin (ns since boot) and its switches.
pub(super) fn kernel_trace(lines: &[String], point: &Point) -> Result<(u64, Vec<Event>), String> {
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
