//! The values the charts draw, read from a trace and cut to a window: kept
//! apart from the drawing so that a test can hold them against a run's
//! results (`against_results.rs`).

use std::collections::BTreeMap;

use fairway_trace::{CounterSample, CounterTrack, Event, TaskSignal, Trace};
use plotters::style::RGBColor;

use super::window::{Points, Window, seconds};

/// One line of a chart.
pub struct Line {
    /// The legend's text: a name, then lines of detail.
    pub label: Vec<String>,
    /// (seconds, value).
    pub points: Points,
    /// Drawn dashed.
    pub dashed: bool,
    /// Its colour.
    pub color: RGBColor,
}

/// Ten colours far enough apart to be told apart in a legend, and the grey of
/// everything past them. A chart with more series than colours shows the
/// first ones in colour and the rest together in grey as "others".
pub const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
];

/// The colour of everything past [`COLORS`].
pub const OTHERS: RGBColor = RGBColor(170, 170, 170);

/// The `index`-th colour, grey past the palette.
pub fn color(index: usize) -> RGBColor {
    COLORS.get(index).copied().unwrap_or(OTHERS)
}

/// The last instant the trace records (an event's or a counter's).
pub fn end_ns(trace: &Trace) -> u64 {
    trace
        .records
        .iter()
        .map(|r| r.time_ns)
        .chain(trace.counters.iter().map(|c| c.time_ns))
        .max()
        .unwrap_or(0)
}

/// Each counter's samples, in time order, found once: the charts look tracks
/// up by task, CPU and group, whose numbers a damaged trace can make large
/// (up to fairway_trace's limits), so no chart scans every sample per task.
pub struct Tracks<'a>(BTreeMap<CounterTrack, Vec<&'a CounterSample>>);

impl<'a> Tracks<'a> {
    /// The trace's counters, by track.
    pub fn of(trace: &'a Trace) -> Tracks<'a> {
        let mut by_track: BTreeMap<CounterTrack, Vec<&CounterSample>> = BTreeMap::new();
        for sample in &trace.counters {
            by_track.entry(sample.track).or_default().push(sample);
        }
        Tracks(by_track)
    }

    /// `track`'s samples, in time order.
    pub fn samples(&self, track: CounterTrack) -> &[&'a CounterSample] {
        self.0.get(&track).map_or(&[], Vec::as_slice)
    }

    /// The tracks there are, in order.
    pub fn tracks(&self) -> impl Iterator<Item = CounterTrack> + '_ {
        self.0.keys().copied()
    }
}

/// A stretch of time a task ran on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stretch {
    /// The CPU.
    pub cpu: usize,
    /// From, ns.
    pub from: u64,
    /// To, ns.
    pub to: u64,
    /// The task, by index.
    pub task: usize,
}

/// Which task ran on each CPU when, from the switches, cut to the window (a
/// task still running at the end runs to `end`), in order per CPU.
pub fn stretches(trace: &Trace, end: u64, window: &Window) -> Vec<Stretch> {
    let mut running: Vec<Option<(u64, usize)>> = vec![None; trace.nr_cpus];
    let mut ran = Vec::new();
    for record in &trace.records {
        let Event::Switch { next, .. } = record.event else {
            continue;
        };
        let Some(slot) = running.get_mut(record.cpu) else {
            continue;
        };
        if let Some((from, task)) = slot.take() {
            ran.push((record.cpu, from, record.time_ns, task));
        }
        *slot = next.map(|task| (record.time_ns, task));
    }
    for (cpu, slot) in running.iter().enumerate() {
        if let Some((from, task)) = *slot {
            ran.push((cpu, from, end, task));
        }
    }
    let mut cut: Vec<Stretch> = ran
        .into_iter()
        .filter_map(|(cpu, from, to, task)| {
            let (from, to) = window.clip(from, to)?;
            Some(Stretch {
                cpu,
                from,
                to,
                task,
            })
        })
        .collect();
    cut.sort_by_key(|s| (s.cpu, s.from));
    cut
}

/// Each task's time on a CPU within `stretches`, ns, by task index.
pub fn runtimes(trace: &Trace, stretches: &[Stretch]) -> Vec<u64> {
    let mut runtime = vec![0; trace.tasks.len()];
    for stretch in stretches {
        if let Some(total) = runtime.get_mut(stretch.task) {
            *total += stretch.to - stretch.from;
        }
    }
    runtime
}

/// The tasks given a colour of their own: the [`COLORS`]`.len()` that ran
/// longest in the window (then by index), most first; the others share grey.
pub struct TaskColors {
    /// The highlighted tasks, most runtime first.
    pub shown: Vec<usize>,
    /// Each task's place in `shown`, by task index.
    place: Vec<Option<usize>>,
}

impl TaskColors {
    /// The colours of a window whose tasks ran `runtime` ns each.
    pub fn by_runtime(runtime: &[u64]) -> TaskColors {
        let mut ranked: Vec<usize> = (0..runtime.len()).filter(|&t| runtime[t] > 0).collect();
        ranked.sort_by_key(|&t| (std::cmp::Reverse(runtime[t]), t));
        ranked.truncate(COLORS.len());
        let mut place = vec![None; runtime.len()];
        for (index, &task) in ranked.iter().enumerate() {
            place[task] = Some(index);
        }
        TaskColors {
            shown: ranked,
            place,
        }
    }

    /// `task`'s colour.
    pub fn of(&self, task: usize) -> RGBColor {
        self.place
            .get(task)
            .copied()
            .flatten()
            .map_or(OTHERS, color)
    }

    /// How many of `tasks` share the grey.
    pub fn others(&self, tasks: impl IntoIterator<Item = usize>) -> usize {
        tasks
            .into_iter()
            .filter(|&t| self.place.get(t).copied().flatten().is_none())
            .count()
    }
}

/// Each task's util_avg (solid) and util_est (dashed), in its colour; the
/// highlighted tasks' lines last, so that the grey ones lie beneath.
pub fn util_lines(
    trace: &Trace,
    tracks: &Tracks,
    window: &Window,
    colors: &TaskColors,
) -> Vec<Line> {
    let mut lines = Vec::new();
    let grey_first = (0..trace.tasks.len())
        .filter(|&t| !colors.shown.contains(&t))
        .chain(colors.shown.iter().rev().copied());
    for task in grey_first {
        for (signal, dashed) in [(TaskSignal::UtilAvg, false), (TaskSignal::UtilEst, true)] {
            let points = window.cut(
                tracks
                    .samples(CounterTrack::Task(task, signal))
                    .iter()
                    .map(|c| (c.time_ns, c.value as f64)),
            );
            if !points.is_empty() {
                lines.push(Line {
                    label: vec![trace.tasks[task].name.clone()],
                    points,
                    dashed,
                    color: colors.of(task),
                });
            }
        }
    }
    lines
}

/// One line per performance domain, in MHz, with its time at each
/// operating point within the window (OPP residency) as the legend's detail.
/// The CPUs of a domain change frequency together, so their lines are the
/// same and would be drawn over each other: CPUs with the same changes share
/// one line.
pub fn frequency_lines(trace: &Trace, window: &Window) -> Vec<Line> {
    let mut changes: Vec<Vec<(u64, f64)>> = vec![Vec::new(); trace.nr_cpus];
    for record in &trace.records {
        if let (Event::CpuFrequency { khz }, Some(cpu)) =
            (record.event.clone(), changes.get_mut(record.cpu))
        {
            cpu.push((record.time_ns, khz as f64 / 1000.0));
        }
    }
    let mut domains: Vec<(Vec<usize>, Points)> = Vec::new();
    for (cpu, cpu_changes) in changes.iter().enumerate() {
        let points = window.steps(cpu_changes);
        if points.is_empty() {
            continue;
        }
        match domains.iter_mut().find(|(_, same)| *same == points) {
            Some((cpus, _)) => cpus.push(cpu),
            None => domains.push((vec![cpu], points)),
        }
    }
    domains
        .into_iter()
        .enumerate()
        .map(|(index, (cpus, points))| {
            let residency = residency(&points);
            let total: f64 = residency.values().sum::<f64>().max(1e-12);
            let names: Vec<String> = cpus.iter().map(usize::to_string).collect();
            let mut label = vec![format!(
                "{} {}",
                if cpus.len() == 1 { "cpu" } else { "cpus" },
                names.join(",")
            )];
            // Three operating points a line: a board with many (gs101's
            // domains have 11 to 17) keeps every domain's in the legend.
            let shares: Vec<String> = residency
                .iter()
                .map(|(mhz, time)| format!("{mhz} MHz {:.0} %", 100.0 * time / total))
                .collect();
            label.extend(
                shares
                    .chunks(3)
                    .map(|line| format!("  {}", line.join(", "))),
            );
            Line {
                label,
                points,
                dashed: false,
                color: color(index),
            }
        })
        .collect()
}

/// The time a step line (`Window::steps`) spends at each level, in seconds,
/// by level (MHz, for a frequency line).
pub fn residency(points: &Points) -> BTreeMap<u64, f64> {
    let mut residency: BTreeMap<u64, f64> = BTreeMap::new();
    // Each step is a pair of points: (from, level), (to, level).
    for step in points.chunks(2) {
        if let [(from, level), (to, _)] = step {
            *residency.entry(*level as u64).or_default() += to - from;
        }
    }
    residency
}

/// Each performance domain's energy since the run's start, in mJ.
pub fn energy_lines(tracks: &Tracks, window: &Window) -> Vec<Line> {
    tracks
        .tracks()
        .filter_map(|track| match track {
            CounterTrack::DomainEnergy(domain) => Some(domain),
            _ => None,
        })
        .enumerate()
        .map(|(index, domain)| Line {
            label: vec![format!("perf domain {domain}")],
            points: window.cut(
                tracks
                    .samples(CounterTrack::DomainEnergy(domain))
                    .iter()
                    .map(|c| (c.time_ns, c.value as f64 / 1e6)),
            ),
            dashed: false,
            color: color(index),
        })
        .filter(|line| !line.points.is_empty())
        .collect()
}

/// The x axis of a window, in seconds.
pub fn x_range(window: &Window) -> std::ops::Range<f64> {
    let (from, to) = (seconds(window.from_ns), seconds(window.to_ns));
    from..to.max(from + 1e-9)
}
