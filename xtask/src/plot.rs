//! `cargo xtask plot TRACE.pftrace OUT_DIR`: charts of a traced run, as PNG
//! and SVG (docs/tracing.md, "Plots"), drawn with plotters from the trace
//! read back (`fairway_trace::Trace::from_perfetto`):
//!
//! - `util`: each task's util_avg (solid) and util_est (dashed) over time;
//! - `frequency`: each CPU's frequency over time, with its time at each
//!   operating point (OPP residency) in the legend;
//! - `energy`: each performance domain's energy since the start;
//! - `occupancy`: which task ran on each CPU when (one colour per task);
//! - `throttling`: with CFS bandwidth control, when each group's run queue
//!   was throttled on each CPU (bars), above each group's pool `runtime`.
//!
//! Charts a run has nothing for (no frequency changes without a board) are
//! skipped and named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fairway_trace::{CounterSample, CounterTrack, Event, GroupCpuSignal, TaskSignal, Trace};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// The TrueType fonts tried for the charts' text, in order (Debian's
/// `fonts-dejavu-core` and `fonts-liberation`).
pub const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Width and height of every chart, in pixels.
const SIZE: (u32, u32) = (1200, 700);

/// One line of a chart: its name, points (seconds, value), dashed or not.
struct Line {
    name: String,
    points: Points,
    dashed: bool,
}

/// A line's points, (seconds, value).
type Points = Vec<(f64, f64)>;

/// `cargo xtask plot TRACE OUT_DIR`.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let [trace_path, out] = args else {
        return Err("usage: cargo xtask plot TRACE.pftrace OUT_DIR".into());
    };
    register_font()?;
    let bytes = std::fs::read(trace_path).map_err(|e| format!("{trace_path}: {e}"))?;
    let trace = Trace::from_perfetto(&bytes).map_err(|e| format!("{trace_path}: {e}"))?;
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let end = trace
        .records
        .iter()
        .map(|r| r.time_ns)
        .chain(trace.counters.iter().map(|c| c.time_ns))
        .max()
        .unwrap_or(0);
    let seconds = |ns: u64| ns as f64 / 1e9;
    let mut written = Vec::new();

    // Each counter's samples, found once: the charts below look tracks up
    // by task, CPU and group, whose numbers a damaged trace can make large
    // (up to fairway_trace's limits), so no chart scans every sample per
    // task or per group.
    let mut by_track: BTreeMap<CounterTrack, Vec<&CounterSample>> = BTreeMap::new();
    for sample in &trace.counters {
        by_track.entry(sample.track).or_default().push(sample);
    }
    let samples = |track: CounterTrack| by_track.get(&track).map_or(&[][..], Vec::as_slice);
    let mut util = Vec::new();
    for (task, info) in trace.tasks.iter().enumerate() {
        for (signal, suffix, dashed) in [
            (TaskSignal::UtilAvg, "util_avg", false),
            (TaskSignal::UtilEst, "util_est", true),
        ] {
            let points: Vec<(f64, f64)> = samples(CounterTrack::Task(task, signal))
                .iter()
                .map(|c| (seconds(c.time_ns), c.value as f64))
                .collect();
            if !points.is_empty() {
                util.push(Line {
                    name: format!("{} {suffix}", info.name),
                    points,
                    dashed,
                });
            }
        }
    }
    written.extend(lines_chart(
        &out,
        "util",
        "Task utilization (util_avg solid, util_est dashed)",
        "utilization",
        &util,
        seconds(end),
    )?);

    // One line per performance domain: the CPUs of a domain change frequency
    // together, so their lines are the same and were drawn over each other (four
    // of juno-r2's six invisible). CPUs with the same changes share one line.
    let mut frequency: Vec<(Vec<usize>, Points, String)> = Vec::new();
    for cpu in 0..trace.nr_cpus {
        let changes: Vec<(u64, u64)> = trace
            .records
            .iter()
            .filter(|r| r.cpu == cpu)
            .filter_map(|r| match r.event {
                Event::CpuFrequency { khz } => Some((r.time_ns, khz)),
                _ => None,
            })
            .collect();
        if changes.is_empty() {
            continue;
        }
        let mut residency: BTreeMap<u64, u64> = BTreeMap::new();
        let mut points = Vec::new();
        for (i, &(at, khz)) in changes.iter().enumerate() {
            let until = changes.get(i + 1).map_or(end, |next| next.0);
            *residency.entry(khz).or_default() += until - at;
            points.push((seconds(at), khz as f64 / 1000.0));
            points.push((seconds(until), khz as f64 / 1000.0));
        }
        let total: u64 = residency.values().sum::<u64>().max(1);
        let shares: Vec<String> = residency
            .iter()
            .map(|(khz, ns)| {
                format!(
                    "{} MHz {:.0} %",
                    khz / 1000,
                    100.0 * *ns as f64 / total as f64
                )
            })
            .collect();
        match frequency.iter_mut().find(|(_, same, _)| *same == points) {
            Some((cpus, _, _)) => cpus.push(cpu),
            None => frequency.push((vec![cpu], points, shares.join(", "))),
        }
    }
    let frequency: Vec<Line> = frequency
        .into_iter()
        .map(|(cpus, points, shares)| {
            let cpus: Vec<String> = cpus.iter().map(usize::to_string).collect();
            let label = if cpus.len() == 1 { "cpu" } else { "cpus" };
            Line {
                name: format!("{label} {} ({shares})", cpus.join(",")),
                points,
                dashed: false,
            }
        })
        .collect();
    written.extend(lines_chart(
        &out,
        "frequency",
        "CPU frequency (MHz) and time at each operating point",
        "MHz",
        &frequency,
        seconds(end),
    )?);

    let mut energy = Vec::new();
    let domains: Vec<usize> = trace
        .counters
        .iter()
        .filter_map(|c| match c.track {
            CounterTrack::DomainEnergy(domain) => Some(domain),
            _ => None,
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for domain in domains {
        let points = trace
            .counters
            .iter()
            .filter(|c| c.track == CounterTrack::DomainEnergy(domain))
            .map(|c| (seconds(c.time_ns), c.value as f64 / 1e6))
            .collect();
        energy.push(Line {
            name: format!("perf domain {domain}"),
            points,
            dashed: false,
        });
    }
    written.extend(lines_chart(
        &out,
        "energy",
        "Energy per performance domain (mJ, at each frequency change and at the end)",
        "mJ",
        &energy,
        seconds(end),
    )?);

    written.extend(occupancy_chart(&out, &trace, end)?);
    written.extend(throttling_chart(&out, &trace, end)?);
    for path in &written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Registers the first system font found as plotters' `sans-serif`.
fn register_font() -> Result<(), String> {
    for path in FONTS {
        if let Ok(bytes) = std::fs::read(path) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{path}: not a TrueType font plotters can read"));
        }
    }
    Err(format!(
        "plot needs a TrueType font for its text, one of {} (Debian: apt-get install fonts-dejavu-core)",
        FONTS.join(", ")
    ))
}

/// Draws `lines` as `OUT/NAME.png` and `OUT/NAME.svg`; nothing (with a note)
/// when there are none.
fn lines_chart(
    out: &Path,
    name: &str,
    caption: &str,
    y_label: &str,
    lines: &[Line],
    end_s: f64,
) -> Result<Vec<PathBuf>, String> {
    if lines.is_empty() {
        eprintln!("xtask: plot: no data for the {name} chart in this trace; skipped");
        return Ok(Vec::new());
    }
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.05;
    let png = out.join(format!("{name}.png"));
    let svg = out.join(format!("{name}.svg"));
    draw_lines(
        BitMapBackend::new(&png, SIZE).into_drawing_area(),
        caption,
        y_label,
        lines,
        end_s,
        y_max,
    )?;
    draw_lines(
        SVGBackend::new(&svg, SIZE).into_drawing_area(),
        caption,
        y_label,
        lines,
        end_s,
        y_max,
    )?;
    Ok(vec![png, svg])
}

fn draw_lines<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    caption: &str,
    y_label: &str,
    lines: &[Line],
    end_s: f64,
    y_max: f64,
) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("plot: {e:?}");
    root.fill(&WHITE).map_err(error)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end_s.max(1e-9), 0.0..y_max)
        .map_err(error)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(y_label)
        .draw()
        .map_err(error)?;
    for (index, line) in lines.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        let series = if line.dashed {
            // Every other segment: a dashed look that PNG and SVG share.
            let dashes = line.points.windows(2).step_by(2);
            let style = color.stroke_width(1);
            chart
                .draw_series(dashes.map(|pair| PathElement::new(pair.to_vec(), style)))
                .map_err(error)?
        } else {
            chart
                .draw_series(LineSeries::new(line.points.clone(), color.stroke_width(2)))
                .map_err(error)?
        };
        series.label(line.name.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
        });
    }
    finish(chart, &root)
}

/// The legend, then the file written.
fn finish<'a, DB: DrawingBackend + 'a>(
    mut chart: ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("plot: {e:?}");
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(error)?;
    root.present().map_err(error)?;
    Ok(())
}

/// Which task ran on each CPU when: `OUT/occupancy.png` and `.svg`.
fn occupancy_chart(out: &Path, trace: &Trace, end: u64) -> Result<Vec<PathBuf>, String> {
    // Stretches (cpu, from, to, task) from the switches, in order per CPU.
    let mut stretches = Vec::new();
    for cpu in 0..trace.nr_cpus {
        let mut running: Option<(u64, usize)> = None;
        for record in trace.records.iter().filter(|r| r.cpu == cpu) {
            if let Event::Switch { next, .. } = record.event {
                if let Some((from, task)) = running.take() {
                    stretches.push((cpu, from, record.time_ns, task));
                }
                running = next.map(|task| (record.time_ns, task));
            }
        }
        if let Some((from, task)) = running {
            stretches.push((cpu, from, end, task));
        }
    }
    if stretches.is_empty() {
        eprintln!("xtask: plot: no switches in this trace; the occupancy chart is skipped");
        return Ok(Vec::new());
    }
    let png = out.join("occupancy.png");
    let svg = out.join("occupancy.svg");
    draw_occupancy(
        BitMapBackend::new(&png, SIZE).into_drawing_area(),
        trace,
        &stretches,
        end,
    )?;
    draw_occupancy(
        SVGBackend::new(&svg, SIZE).into_drawing_area(),
        trace,
        &stretches,
        end,
    )?;
    Ok(vec![png, svg])
}

fn draw_occupancy<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    trace: &Trace,
    stretches: &[(usize, u64, u64, usize)],
    end: u64,
) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("plot: {e:?}");
    root.fill(&WHITE).map_err(error)?;
    let seconds = |ns: u64| ns as f64 / 1e9;
    let nr_cpus = trace.nr_cpus as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption("CPU occupancy (one colour per task)", ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..seconds(end).max(1e-9), 0.0..nr_cpus)
        .map_err(error)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("CPU")
        .y_labels(trace.nr_cpus + 1)
        .disable_y_mesh()
        .draw()
        .map_err(error)?;
    let mut labelled = vec![false; trace.tasks.len()];
    for &(cpu, from, to, task) in stretches {
        let color = Palette99::pick(task).to_rgba();
        let rectangle = Rectangle::new(
            [
                (seconds(from), cpu as f64 + 0.1),
                (seconds(to), cpu as f64 + 0.9),
            ],
            color.filled(),
        );
        let series = chart
            .draw_series(std::iter::once(rectangle))
            .map_err(error)?;
        if !labelled[task] && trace.tasks.len() <= 24 {
            labelled[task] = true;
            series
                .label(trace.tasks[task].name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled())
                });
        }
    }
    finish(chart, &root)
}

/// A row of the throttling chart: its label and its throttled intervals (ns).
struct ThrottledRow {
    label: String,
    intervals: Vec<(u64, u64)>,
}

/// When each group's run queue was throttled on each CPU, from its
/// `throttled` track (an interval still open at the end runs to the end),
/// and each group's pool `runtime` in ms: `OUT/throttling.png` and `.svg`;
/// skipped when the trace has no bandwidth tracks.
fn throttling_chart(out: &Path, trace: &Trace, end: u64) -> Result<Vec<PathBuf>, String> {
    let mut by_track: BTreeMap<CounterTrack, Vec<&CounterSample>> = BTreeMap::new();
    for sample in &trace.counters {
        by_track.entry(sample.track).or_default().push(sample);
    }
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
            for sample in by_track.get(&track).into_iter().flatten() {
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
                intervals,
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
        .map(|(group, path)| Line {
            name: format!("{path} runtime"),
            // Steps: the pool holds its value until the next change (a
            // refill is instant), so no line between samples.
            points: by_track
                .get(&CounterTrack::GroupRuntime(group))
                .into_iter()
                .flatten()
                .map(|c| (c.time_ns as f64 / 1e9, c.value as f64 / 1e6))
                .chain(std::iter::once((end as f64 / 1e9, f64::NAN)))
                .scan(None, |last: &mut Option<f64>, (t, v)| {
                    let step = last.map(|held| (t, held));
                    *last = Some(v);
                    Some(step.into_iter().chain((!v.is_nan()).then_some((t, v))))
                })
                .flatten()
                .collect(),
            dashed: false,
        })
        .collect();
    let png = out.join("throttling.png");
    let svg = out.join("throttling.svg");
    draw_throttling(
        BitMapBackend::new(&png, SIZE).into_drawing_area(),
        &rows,
        &runtime,
        end,
    )?;
    draw_throttling(
        SVGBackend::new(&svg, SIZE).into_drawing_area(),
        &rows,
        &runtime,
        end,
    )?;
    Ok(vec![png, svg])
}

fn draw_throttling<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    rows: &[ThrottledRow],
    runtime: &[Line],
    end: u64,
) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("plot: {e:?}");
    root.fill(&WHITE).map_err(error)?;
    let end_s = (end as f64 / 1e9).max(1e-9);
    let (upper, lower) = root.split_vertically(SIZE.1 * 55 / 100);
    let mut bars = ChartBuilder::on(&upper)
        .caption(
            "Throttled intervals per group and CPU (cfs_rq throttled)",
            ("sans-serif", 24),
        )
        .margin(16)
        .x_label_area_size(30)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..end_s, 0.0..rows.len() as f64)
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
        .draw()
        .map_err(error)?;
    for (row, data) in rows.iter().enumerate() {
        let color = Palette99::pick(row).to_rgba();
        bars.draw_series(data.intervals.iter().map(|&(from, to)| {
            Rectangle::new(
                [
                    (from as f64 / 1e9, row as f64 + 0.15),
                    (to as f64 / 1e9, row as f64 + 0.85),
                ],
                color.filled(),
            )
        }))
        .map_err(error)?;
    }
    let y_max = runtime
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
        .build_cartesian_2d(0.0..end_s, 0.0..y_max)
        .map_err(error)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("ms")
        .draw()
        .map_err(error)?;
    for (index, line) in runtime.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        chart
            .draw_series(LineSeries::new(line.points.clone(), color.stroke_width(2)))
            .map_err(error)?
            .label(line.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    finish(chart, &root)
}
