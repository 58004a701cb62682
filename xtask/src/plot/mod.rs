//! `cargo xtask plot TRACE OUT_DIR [--from T] [--to T]`: charts of a
//! traced run, as PNG and SVG (docs/tracing.md, "Plots"), drawn with plotters
//! from the trace read back (`fairway_trace::Trace::from_perfetto`):
//!
//! - `util`: each task's util_avg (solid) and util_est (dashed) over time;
//! - `frequency`: each performance domain's frequency over time, with its
//!   time at each operating point (OPP residency) in the legend;
//! - `energy`: each performance domain's energy since the start;
//! - `occupancy`: which task ran on each CPU when (one colour per task);
//! - `throttling`: with CFS bandwidth control, when each group's run queue
//!   was throttled on each CPU (bars), above each group's pool `runtime`.
//!
//! Each legend stands right of its plot, never over the data. `--from` and
//! `--to` cut every chart to a stretch of the run (`window.rs`). Charts a
//! run has nothing for (no frequency changes without a board) are skipped
//! and named.

mod draw;
mod occupancy;
mod series;
mod throttling;
mod window;

#[cfg(test)]
mod against_results;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fairway_trace::Trace;
use plotters::style::FontStyle;

use draw::{LegendEntry, line_legend, lines_chart};
use series::{OTHERS, TaskColors, Tracks};
use window::Window;

/// The TrueType fonts tried for the charts' text, in order (Debian's
/// `fonts-dejavu-core` and `fonts-liberation`).
pub const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// The command line, read.
struct Arguments {
    trace: String,
    out: PathBuf,
    from: Option<String>,
    to: Option<String>,
}

/// Reads `TRACE OUT_DIR [--from T] [--to T]`, options anywhere.
fn arguments(args: &[String]) -> Result<Arguments, String> {
    let usage = "usage: cargo xtask plot TRACE OUT_DIR [--from T] [--to T]";
    let mut paths = Vec::new();
    let (mut from, mut to) = (None, None);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let slot = match arg.as_str() {
            "--from" => &mut from,
            "--to" => &mut to,
            option if option.starts_with("--") => {
                return Err(format!("plot: unknown option {option} ({usage})"));
            }
            _ => {
                paths.push(arg.clone());
                continue;
            }
        };
        let value = rest.next().ok_or_else(|| {
            format!("{arg} needs a time: seconds (1.5) or with a unit (1500ms, 250us)")
        })?;
        *slot = Some(value.clone());
    }
    let [trace, out] = <[String; 2]>::try_from(paths).map_err(|_| usage.to_string())?;
    Ok(Arguments {
        trace,
        out: PathBuf::from(out),
        from,
        to,
    })
}

/// `cargo xtask plot TRACE OUT_DIR [--from T] [--to T]`.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let arguments = arguments(args)?;
    let path = &arguments.trace;
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let trace = Trace::from_perfetto(&bytes).map_err(|e| format!("{path}: {e}"))?;
    let end = series::end_ns(&trace);
    let window = Window::from_options(arguments.from.as_deref(), arguments.to.as_deref(), end)?;
    register_font()?;
    let out = &arguments.out;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for path in charts(&trace, end, &window, out)? {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Draws every chart `trace` has data for within `window` into `out`, and
/// gives the files written.
fn charts(trace: &Trace, end: u64, window: &Window, out: &Path) -> Result<Vec<PathBuf>, String> {
    let tracks = Tracks::of(trace);
    // The tasks that ran longest in the window get colours of their own, the
    // same in the util and occupancy charts.
    let stretches = series::stretches(trace, end, window);
    let colors = TaskColors::by_runtime(&series::runtimes(trace, &stretches));
    let window_note = if window.is_whole(end) {
        String::new()
    } else {
        format!(", {}", window.scope())
    };
    let mut written = Vec::new();

    let util = series::util_lines(trace, &tracks, window, &colors);
    // The last line drawn lies on top: the legend starts with it.
    let mut legend = line_legend(&util);
    legend.reverse();
    let greyed = colors.others(0..trace.tasks.len());
    // The grey lines' names would fill the legend: one entry says what they are.
    legend.retain(|entry| entry.color != OTHERS);
    if greyed > 0 {
        legend.push(LegendEntry {
            color: OTHERS,
            mark: Some(draw::Mark::Line),
            text: vec![format!("{greyed} other tasks")],
        });
    }
    written.extend(lines_chart(
        out,
        "util",
        &format!("Task utilization (util_avg solid, util_est dashed){window_note}"),
        "utilization",
        &util,
        &legend,
        window,
    )?);

    let frequency = series::frequency_lines(trace, window);
    written.extend(lines_chart(
        out,
        "frequency",
        &format!("CPU frequency (MHz) and time at each operating point{window_note}"),
        "MHz",
        &frequency,
        &line_legend(&frequency),
        window,
    )?);

    let energy = series::energy_lines(&tracks, window);
    let legend = line_legend(&energy);
    written.extend(lines_chart(
        out,
        "energy",
        &format!("Energy per performance domain since the start (mJ){window_note}"),
        "mJ",
        &energy,
        &legend,
        window,
    )?);

    written.extend(occupancy::chart(
        out,
        trace,
        &tracks,
        &stretches,
        &colors,
        window,
        &window_note,
    )?);
    written.extend(throttling::chart(
        out,
        trace,
        &tracks,
        end,
        window,
        &window_note,
    )?);
    Ok(written)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_may_stand_anywhere_and_need_a_value() {
        let args = |line: &str| {
            line.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let read = arguments(&args("--from 1.5 t.pftrace --to 2s out")).unwrap();
        assert_eq!(
            (read.trace.as_str(), read.out, read.from, read.to),
            (
                "t.pftrace",
                PathBuf::from("out"),
                Some("1.5".to_string()),
                Some("2s".to_string())
            )
        );
        assert!(
            arguments(&args("t.pftrace out --from"))
                .err()
                .unwrap()
                .starts_with("--from needs a time")
        );
        assert!(
            arguments(&args("t.pftrace out --since 1"))
                .err()
                .unwrap()
                .starts_with("plot: unknown option --since")
        );
        assert!(arguments(&args("t.pftrace")).is_err());
    }
}
