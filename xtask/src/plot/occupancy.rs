//! The occupancy chart: which task ran on each CPU when, one row per CPU
//! (marked with its class, LITTLE, mid or big, where the CPUs differ), one
//! colour per task for the tasks that ran longest and grey for the rest.

use std::path::{Path, PathBuf};

use fairway_trace::{CounterTrack, CpuSignal, Event, Trace};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::draw::{LegendEntry, Mark, SIZE, draw_legend, error, layout};
use super::series::{OTHERS, Stretch, TaskColors, Tracks, runtimes, x_range};
use super::window::{Window, seconds};

/// A gap between two stretches of one task on one CPU narrower than this
/// share of the window is not drawn: it is under a pixel of the plot (under
/// 1,000 pixels wide), and a dense run's thousands of switches would
/// otherwise be as many boxes in the SVG.
const MERGED_GAP: u64 = 1000;

/// Consecutive stretches of the same task on the same CPU as one, where
/// the gap between them (a switch to itself, or an idle stretch) is narrower
/// than `gap_ns`. `stretches` are in order per CPU.
pub fn merge(stretches: &[Stretch], gap_ns: u64) -> Vec<Stretch> {
    let mut merged: Vec<Stretch> = Vec::with_capacity(stretches.len());
    for &stretch in stretches {
        match merged.last_mut() {
            Some(last)
                if last.cpu == stretch.cpu
                    && last.task == stretch.task
                    && stretch.from.saturating_sub(last.to) <= gap_ns =>
            {
                last.to = last.to.max(stretch.to);
            }
            _ => merged.push(stretch),
        }
    }
    merged
}

/// Each CPU's capacity as the trace shows it, `None` for a CPU it has none
/// for. The trace records a CPU's capacity at its current frequency
/// (`capacity_orig × frequency / max frequency`), not `capacity_orig`, so
/// each sample is scaled back up by the highest frequency the CPU was seen
/// at over the frequency it had then: that is `capacity_orig` (give or take
/// the scale's rounding) when the CPU reached its top operating point
/// during the run, and less by that ratio when it did not. Samples taken at
/// an instant the frequency changed are left out: whether they saw the old
/// frequency or the new one, the trace does not tell.
pub fn capacities(trace: &Trace, tracks: &Tracks) -> Vec<Option<u64>> {
    let mut frequencies: Vec<Vec<(u64, u64)>> = vec![Vec::new(); trace.nr_cpus];
    for record in &trace.records {
        if let (Event::CpuFrequency { khz }, Some(changes)) =
            (&record.event, frequencies.get_mut(record.cpu))
        {
            changes.push((record.time_ns, *khz));
        }
    }
    (0..trace.nr_cpus)
        .map(|cpu| {
            let changes = &frequencies[cpu];
            let top = changes.iter().map(|c| c.1).max();
            tracks
                .samples(CounterTrack::Cpu(cpu, CpuSignal::Capacity))
                .iter()
                .filter_map(|sample| {
                    let value = sample.value.max(0) as u64;
                    let Some(top) = top else {
                        return Some(value);
                    };
                    // At an instant the frequency changed, a sample may have
                    // been taken before the change or after it: left out.
                    let after = changes.partition_point(|c| c.0 < sample.time_ns);
                    if changes.get(after).is_some_and(|c| c.0 == sample.time_ns) {
                        return None;
                    }
                    let khz = after.checked_sub(1).map(|i| changes[i].1)?;
                    (khz > 0).then(|| (value as f64 * top as f64 / khz as f64).round() as u64)
                })
                .max()
        })
        .collect()
}

/// The class of each CPU by its capacity: `LITTLE` and `big` where there
/// are two capacities, `LITTLE`, `mid` and `big` where there are three,
/// none where all are alike (or four or more, which have no common
/// names). Capacities within 2 % are alike (the scaling's rounding).
pub fn classes(capacities: &[Option<u64>]) -> Vec<Option<&'static str>> {
    let mut levels: Vec<u64> = Vec::new();
    let mut sorted: Vec<u64> = capacities.iter().flatten().copied().collect();
    sorted.sort_unstable();
    for capacity in sorted {
        match levels.last() {
            Some(&level) if capacity * 100 <= level * 102 => {}
            _ => levels.push(capacity),
        }
    }
    let names: &[&str] = match levels.len() {
        2 => &["LITTLE", "big"],
        3 => &["LITTLE", "mid", "big"],
        _ => &[],
    };
    capacities
        .iter()
        .map(|capacity| {
            let capacity = (*capacity)?;
            let level = levels.iter().rposition(|&l| l <= capacity)?;
            names.get(level).copied()
        })
        .collect()
}

/// What the occupancy chart draws.
struct Occupancy<'a> {
    trace: &'a Trace,
    /// Merged stretches.
    stretches: Vec<Stretch>,
    colors: &'a TaskColors,
    /// Each CPU's row label.
    rows: Vec<String>,
    legend: Vec<LegendEntry>,
    window: &'a Window,
    caption: String,
}

/// Draws `OUT/occupancy.png` and `.svg` from `stretches` (cut to the window),
/// the tasks coloured by `colors`.
pub fn chart(
    out: &Path,
    trace: &Trace,
    tracks: &Tracks,
    stretches: &[Stretch],
    colors: &TaskColors,
    window: &Window,
    window_note: &str,
) -> Result<Vec<PathBuf>, String> {
    if stretches.is_empty() {
        eprintln!(
            "xtask: plot: no task ran in this trace (window); the occupancy chart is skipped"
        );
        return Ok(Vec::new());
    }
    let runtime = runtimes(trace, stretches);
    let capacities = capacities(trace, tracks);
    let classes = classes(&capacities);
    let rows = (0..trace.nr_cpus)
        .map(|cpu| match classes[cpu] {
            Some(class) => format!("{cpu} {class}"),
            None => cpu.to_string(),
        })
        .collect();
    let mut legend: Vec<LegendEntry> = colors
        .shown
        .iter()
        .map(|&task| LegendEntry {
            color: colors.of(task),
            mark: Some(Mark::Box),
            text: vec![format!(
                "{} {:.3} s",
                trace.tasks[task].name,
                seconds(runtime[task])
            )],
        })
        .collect();
    let others: Vec<usize> = (0..trace.tasks.len())
        .filter(|&t| runtime[t] > 0 && !colors.shown.contains(&t))
        .collect();
    if !others.is_empty() {
        legend.push(LegendEntry {
            color: OTHERS,
            mark: Some(Mark::Box),
            text: vec![format!(
                "{} others {:.3} s",
                others.len(),
                seconds(others.iter().map(|&t| runtime[t]).sum())
            )],
        });
    }
    legend.extend(class_notes(&capacities, &classes));
    let chart = Occupancy {
        trace,
        stretches: merge(stretches, (window.to_ns - window.from_ns) / MERGED_GAP),
        colors,
        rows,
        legend,
        window,
        caption: format!("CPU occupancy (one colour per task){window_note}"),
    };
    let png = out.join("occupancy.png");
    let svg = out.join("occupancy.svg");
    chart.draw(BitMapBackend::new(&png, SIZE).into_drawing_area())?;
    chart.draw(SVGBackend::new(&svg, SIZE).into_drawing_area())?;
    Ok(vec![png, svg])
}

/// The legend's lines under the tasks: each class's capacity and CPUs, or
/// why no CPU is marked.
fn class_notes(capacities: &[Option<u64>], classes: &[Option<&str>]) -> Vec<LegendEntry> {
    let mut text = vec![String::new(), "CPU capacity (trace):".to_string()];
    let mut named: Vec<(&str, u64, Vec<String>)> = Vec::new();
    for (cpu, (capacity, class)) in capacities.iter().zip(classes).enumerate() {
        if let (Some(capacity), Some(class)) = (capacity, class) {
            match named.iter_mut().find(|(name, _, _)| name == class) {
                Some((_, top, cpus)) => {
                    *top = (*top).max(*capacity);
                    cpus.push(cpu.to_string());
                }
                None => named.push((class, *capacity, vec![cpu.to_string()])),
            }
        }
    }
    if named.is_empty() {
        let seen: Vec<u64> = capacities.iter().flatten().copied().collect();
        text.push(match (seen.iter().min(), seen.iter().max()) {
            (Some(low), Some(high)) if low == high => format!("  all {low}: none marked"),
            (Some(_), Some(_)) => "  no two or three classes: none marked".into(),
            _ => "  not in this trace: none marked".into(),
        });
    }
    for (class, capacity, cpus) in named {
        text.push(format!("  {class} {capacity}: cpus {}", cpus.join(",")));
    }
    vec![LegendEntry {
        color: BLACK,
        mark: None,
        text,
    }]
}

impl Occupancy<'_> {
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String> {
        let (plot, legend) = layout(&root, &self.caption, &self.legend)?;
        let nr_cpus = self.trace.nr_cpus;
        let mut chart = ChartBuilder::on(&plot)
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(100)
            .build_cartesian_2d(x_range(self.window), 0.0..nr_cpus as f64)
            .map_err(error)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("CPU")
            // No line every hundredth of the window across the rows.
            .light_line_style(WHITE)
            // One row per CPU (CPU n's is n..n+1), its label at its middle
            // only: the axis's key points fall on every half.
            .y_labels(nr_cpus * 2 + 1)
            .y_label_formatter(&|y: &f64| {
                let row = y.floor() as usize;
                match self.rows.get(row) {
                    Some(label) if (y - y.floor() - 0.5).abs() < 1e-6 => label.clone(),
                    _ => String::new(),
                }
            })
            .disable_y_mesh()
            .draw()
            .map_err(error)?;
        chart
            .draw_series(self.stretches.iter().map(|s| {
                Rectangle::new(
                    [
                        (seconds(s.from), s.cpu as f64 + 0.1),
                        (seconds(s.to), s.cpu as f64 + 0.9),
                    ],
                    self.colors.of(s.task).filled(),
                )
            }))
            .map_err(error)?;
        draw_legend(&legend, &self.legend)?;
        root.present().map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stretch(cpu: usize, from: u64, to: u64, task: usize) -> Stretch {
        Stretch {
            cpu,
            from,
            to,
            task,
        }
    }

    #[test]
    fn a_task_run_again_after_a_narrow_gap_is_one_stretch() {
        let ran = [
            stretch(0, 0, 10, 1),
            stretch(0, 10, 20, 1),
            stretch(0, 22, 30, 1),
            stretch(0, 40, 50, 1),
            stretch(0, 50, 60, 2),
            stretch(1, 60, 70, 2),
        ];
        assert_eq!(
            merge(&ran, 2),
            vec![
                stretch(0, 0, 30, 1),
                stretch(0, 40, 50, 1),
                stretch(0, 50, 60, 2),
                stretch(1, 60, 70, 2),
            ]
        );
    }

    /// juno-r2's capacities (docs/linux-sched-reference.md §7.3): 383 for
    /// the Cortex-A53s, 1024 for the A72s; three levels, as gs101's A55,
    /// A76 and X1 (§7.4), make a mid class.
    #[test]
    fn two_capacities_are_little_and_big_three_add_mid() {
        let juno = [383, 1024, 1024, 383, 383, 383].map(Some);
        assert_eq!(
            classes(&juno),
            ["LITTLE", "big", "big", "LITTLE", "LITTLE", "LITTLE"].map(Some)
        );
        // Within 2 % is the same level (1022 and 1024); a CPU without a
        // capacity in the trace has no class.
        let three = [Some(160), Some(498), Some(1024), Some(1022), None];
        assert_eq!(
            classes(&three),
            [Some("LITTLE"), Some("mid"), Some("big"), Some("big"), None]
        );
        assert_eq!(classes(&[Some(1024); 4]), [None; 4]);
    }
}
