//! What every chart shares: its size, its title, and its legend, drawn in a
//! column of its own right of the plot so that it never covers the data.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::series::{Line, x_range};
use super::window::Window;

/// Width and height of every chart, in pixels.
pub const SIZE: (u32, u32) = (1200, 700);

/// The legend's text size, and the height of one of its lines.
const LEGEND_FONT: u32 = 15;
const LEGEND_ROW: i32 = 19;
/// The legend column's width bounds: room for a short name, and at most a
/// third of the chart, so the plot keeps two thirds.
const LEGEND_WIDTH: (u32, u32) = (150, SIZE.0 / 3);
/// The swatch's width and the gap before the text.
const SWATCH: i32 = 22;

/// A part of a chart's picture.
pub type Area<DB> = DrawingArea<DB, Shift>;

/// How a legend entry's swatch looks.
#[derive(Clone, Copy)]
pub enum Mark {
    /// A line.
    Line,
    /// A filled box (a bar, a stretch of occupancy).
    Box,
}

/// One entry of a legend: a swatch, then its text, a line each.
pub struct LegendEntry {
    /// The swatch's colour.
    pub color: RGBColor,
    /// Its shape; `None` for text alone (a note).
    pub mark: Option<Mark>,
    /// The text: the first line beside the swatch, the rest below it.
    pub text: Vec<String>,
}

/// A plotters error as the command reports it.
pub fn error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    format!("plot: {e:?}")
}

/// Fills `root` white, writes `caption` across its top, and splits what is
/// below into the plot's area (left) and the legend's (right), the legend as
/// wide as its longest line needs within [`LEGEND_WIDTH`].
pub fn layout<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    caption: &str,
    legend: &[LegendEntry],
) -> Result<(Area<DB>, Area<DB>), String> {
    root.fill(&WHITE).map_err(error)?;
    let body = root.titled(caption, ("sans-serif", 24)).map_err(error)?;
    let style = TextStyle::from(("sans-serif", LEGEND_FONT));
    let mut widest = 0;
    for line in legend.iter().flat_map(|entry| &entry.text) {
        let (width, _) = root.estimate_text_size(line, &style).map_err(error)?;
        widest = widest.max(width);
    }
    let width = (widest + SWATCH as u32 + 30).clamp(LEGEND_WIDTH.0, LEGEND_WIDTH.1);
    let plot_width = body.dim_in_pixel().0.saturating_sub(width);
    Ok(body.split_horizontally(plot_width))
}

/// Draws `entries` down `area`, from the height of the plot's top. Entries
/// that do not fit are counted on a last line instead.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> Result<(), String> {
    let style = TextStyle::from(("sans-serif", LEGEND_FONT)).color(&BLACK);
    let bottom = area.dim_in_pixel().1 as i32 - LEGEND_ROW;
    let mut y = 20;
    for (index, entry) in entries.iter().enumerate() {
        let height = LEGEND_ROW * entry.text.len() as i32;
        if y + height > bottom {
            let left = entries.len() - index;
            area.draw_text(&format!("… {left} more not shown"), &style, (8, y))
                .map_err(error)?;
            break;
        }
        let middle = y + LEGEND_ROW / 2 - 1;
        match entry.mark {
            Some(Mark::Line) => area
                .draw(&PathElement::new(
                    vec![(8, middle), (8 + SWATCH, middle)],
                    entry.color.stroke_width(3),
                ))
                .map_err(error)?,
            Some(Mark::Box) => area
                .draw(&Rectangle::new(
                    [(8, middle - 6), (8 + SWATCH, middle + 6)],
                    entry.color.filled(),
                ))
                .map_err(error)?,
            None => {}
        }
        let x = if entry.mark.is_some() { 14 + SWATCH } else { 8 };
        for (row, text) in entry.text.iter().enumerate() {
            area.draw_text(text, &style, (x, y + LEGEND_ROW * row as i32 + 2))
                .map_err(error)?;
        }
        y += height + 4;
    }
    Ok(())
}

/// A line chart's legend: one entry per line, and per name once (a task's
/// util_avg and util_est lines share theirs).
pub fn line_legend(lines: &[Line]) -> Vec<LegendEntry> {
    let mut entries: Vec<LegendEntry> = Vec::new();
    for line in lines {
        if !entries.iter().any(|e| e.text == line.label) {
            entries.push(LegendEntry {
                color: line.color,
                mark: Some(Mark::Line),
                text: line.label.clone(),
            });
        }
    }
    entries
}

/// Draws `lines` as `OUT/NAME.png` and `OUT/NAME.svg`, with `legend`;
/// nothing (with a note) when there are none.
pub fn lines_chart(
    out: &Path,
    name: &str,
    caption: &str,
    y_label: &str,
    lines: &[Line],
    legend: &[LegendEntry],
    window: &Window,
) -> Result<Vec<PathBuf>, String> {
    if lines.is_empty() {
        eprintln!(
            "xtask: plot: no data for the {name} chart from {}; skipped",
            window.scope()
        );
        return Ok(Vec::new());
    }
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.05;
    let chart = LineChart {
        caption,
        y_label,
        lines,
        legend,
        window,
        y_max,
    };
    let png = out.join(format!("{name}.png"));
    let svg = out.join(format!("{name}.svg"));
    chart.draw(BitMapBackend::new(&png, SIZE).into_drawing_area())?;
    chart.draw(SVGBackend::new(&svg, SIZE).into_drawing_area())?;
    Ok(vec![png, svg])
}

/// What a line chart draws.
struct LineChart<'a> {
    caption: &'a str,
    y_label: &'a str,
    lines: &'a [Line],
    legend: &'a [LegendEntry],
    window: &'a Window,
    y_max: f64,
}

impl LineChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String> {
        let (plot, legend) = layout(&root, self.caption, self.legend)?;
        let mut chart = ChartBuilder::on(&plot)
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range(self.window), 0.0..self.y_max)
            .map_err(error)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(self.y_label)
            .draw()
            .map_err(error)?;
        for line in self.lines {
            if line.dashed {
                // Dashes of 6 pixels, 5 apart, along the line as drawn.
                chart
                    .draw_series(DashedLineSeries::new(
                        line.points.iter().copied(),
                        6,
                        5,
                        line.color.stroke_width(1),
                    ))
                    .map_err(error)?;
            } else {
                chart
                    .draw_series(LineSeries::new(
                        line.points.iter().copied(),
                        line.color.stroke_width(2),
                    ))
                    .map_err(error)?;
            }
        }
        draw_legend(&legend, self.legend)?;
        root.present().map_err(error)
    }
}
