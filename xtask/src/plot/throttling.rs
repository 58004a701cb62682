//! The throttling chart: with CFS bandwidth control, when each group's run
//! queue was throttled on each CPU (bars), above each group's pool
//! `runtime` (ms).

use std::path::{Path, PathBuf};

use fairway_trace::{CounterTrack, GroupCpuSignal, Trace};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::draw::{LegendEntry, SIZE, draw_legend, error, layout, line_legend};
use super::series::{Line, Tracks, color, x_range};
use super::window::{Window, seconds};

/// A row of the throttling chart: its label and its throttled intervals (ns).
struct ThrottledRow {
    label: String,
    intervals: Vec<(u64, u64)>,
}

/// What the throttling chart draws.
struct Throttling<'a> {
    rows: Vec<ThrottledRow>,
    runtime: Vec<Line>,
    legend: Vec<LegendEntry>,
    window: &'a Window,
    caption: String,
}

/// When each group's run queue was throttled on each CPU, from its
/// `throttled` track (an interval still open at the end runs to the end), and
/// each group's pool `runtime` in ms, within the window: `OUT/throttling.png`
/// and `.svg`; skipped when the trace has no bandwidth tracks.
pub fn chart(
    out: &Path,
    trace: &Trace,
    tracks: &Tracks,
    end: u64,
    window: &Window,
    window_note: &str,
) -> Result<Vec<PathBuf>, String> {
    let mut rows = Vec::new();
    // A group the trace named (a damaged group index leaves the ones below
    // it without a path, and without rows).
    for (group, path) in trace.groups.iter().enumerate() {
        if path.is_empty() {
            continue;
        }
        for cpu in 0..trace.nr_cpus {
            let track = CounterTrack::GroupCpu(group, cpu, GroupCpuSignal::Throttled);
            let mut intervals = Vec::new();
            let mut since = None;
            for sample in tracks.samples(track) {
                match (sample.value, since) {
                    (1, None) => since = Some(sample.time_ns),
                    (0, Some(from)) => {
                        intervals.push((from, sample.time_ns));
                        since = None;
                    }
                    _ => {}
                }
            }
            intervals.extend(since.map(|from| (from, end)));
            rows.push(ThrottledRow {
                label: format!("{path} cpu{cpu}"),
                intervals: intervals
                    .into_iter()
                    .filter_map(|(from, to)| window.clip(from, to))
                    .collect(),
            });
        }
    }
    if rows.is_empty() {
        eprintln!(
            "xtask: plot: no bandwidth tracks in this trace; the throttling chart is skipped"
        );
        return Ok(Vec::new());
    }
    let runtime: Vec<Line> = trace
        .groups
        .iter()
        .enumerate()
        .filter(|(_, path)| !path.is_empty())
        .map(|(group, path)| {
            // Steps: the pool holds its value until the next change (a
            // refill is instant), so no line between samples.
            let changes: Vec<(u64, f64)> = tracks
                .samples(CounterTrack::GroupRuntime(group))
                .iter()
                .map(|c| (c.time_ns, c.value as f64 / 1e6))
                .collect();
            Line {
                label: vec![format!("{path} runtime")],
                points: window.steps(&changes),
                dashed: false,
                color: color(group),
            }
        })
        .collect();
    // The bars are named on their axis; the legend names the pools' lines.
    let legend = line_legend(&runtime);
    let chart = Throttling {
        rows,
        runtime,
        legend,
        window,
        caption: format!("Throttled intervals per group and CPU (cfs_rq throttled){window_note}"),
    };
    let png = out.join("throttling.png");
    let svg = out.join("throttling.svg");
    chart.draw(BitMapBackend::new(&png, SIZE).into_drawing_area())?;
    chart.draw(SVGBackend::new(&svg, SIZE).into_drawing_area())?;
    Ok(vec![png, svg])
}

impl Throttling<'_> {
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String> {
        let (plot, legend) = layout(&root, &self.caption, &self.legend)?;
        let (upper, lower) = plot.split_vertically(plot.dim_in_pixel().1 * 55 / 100);
        let rows = &self.rows;
        let mut bars = ChartBuilder::on(&upper)
            .margin(16)
            .x_label_area_size(30)
            .y_label_area_size(110)
            .build_cartesian_2d(x_range(self.window), 0.0..rows.len() as f64)
            .map_err(error)?;
        bars.configure_mesh()
            .y_labels(rows.len() * 2 + 1)
            .y_label_formatter(&|y: &f64| {
                // Each row's label at its middle.
                let row = y.floor() as usize;
                if (y - y.floor() - 0.5).abs() < 1e-6 && row < rows.len() {
                    rows[row].label.clone()
                } else {
                    String::new()
                }
            })
            .disable_y_mesh()
            // No line every hundredth of the window across the bars.
            .light_line_style(WHITE)
            .draw()
            .map_err(error)?;
        for (row, data) in rows.iter().enumerate() {
            let fill = color(row).filled();
            bars.draw_series(data.intervals.iter().map(|&(from, to)| {
                Rectangle::new(
                    [
                        (seconds(from), row as f64 + 0.15),
                        (seconds(to), row as f64 + 0.85),
                    ],
                    fill,
                )
            }))
            .map_err(error)?;
        }
        let y_max = self
            .runtime
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(1e-3f64, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(&lower)
            .caption(
                "Runtime left in each group's pool (cfs_bandwidth runtime, ms)",
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(110)
            .build_cartesian_2d(x_range(self.window), 0.0..y_max)
            .map_err(error)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("ms")
            .draw()
            .map_err(error)?;
        for line in &self.runtime {
            chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    line.color.stroke_width(2),
                ))
                .map_err(error)?;
        }
        draw_legend(&legend, &self.legend)?;
        root.present().map_err(error)
    }
}
