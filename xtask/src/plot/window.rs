//! `--from T --to T`: the stretch of the run the charts show. Every chart is
//! cut to it, and shows over it what the whole run's chart shows there, with
//! what came before carried in: a frequency (or a pool's runtime) set before
//! `--from` holds at `--from`, a task running at `--from` is drawn from
//! there, and a line drawn straight between two samples (a util, an energy)
//! starts where it crosses `--from`, not at its next sample.

/// A line's points, (seconds, value).
pub type Points = Vec<(f64, f64)>;

/// The shown stretch of the run, in ns of virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The first instant shown.
    pub from_ns: u64,
    /// The last instant shown.
    pub to_ns: u64,
}

/// `ns` in seconds, for the charts' x axis.
pub fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// `ns` as an error message shows it: `2.0 s`, `0.25 s`.
fn shown(ns: u64) -> String {
    format!("{:?} s", seconds(ns))
}

/// A time on the command line: seconds (`1.5`, `1.5s`) or a number with a
/// unit (`1500ms`, `250us`, `100ns`), in ns. `None` when it is none of them.
pub fn parse_time(text: &str) -> Option<u64> {
    let (number, ns_per_unit) = [("ms", 1e6), ("us", 1e3), ("ns", 1.0), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|number| (number, *scale)))
        .unwrap_or((text, 1e9));
    // Digits and one point only: no sign, exponent, `inf` or `NaN`.
    let plain = !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.matches('.').count() <= 1
        && number != ".";
    let value: f64 = number.parse().ok().filter(|_| plain)?;
    let ns = (value * ns_per_unit).round();
    (ns < u64::MAX as f64).then_some(ns as u64)
}

impl Window {
    /// The whole run, from 0 to `end_ns`.
    pub fn whole(end_ns: u64) -> Window {
        Window {
            from_ns: 0,
            to_ns: end_ns,
        }
    }

    /// The window `--from` and `--to` ask for, in a run that ends at
    /// `end_ns` (each defaults to its end of the run). A time the run does not
    /// reach, or a `--from` not before `--to`, is refused with the option
    /// and the value as given.
    pub fn from_options(
        from: Option<&str>,
        to: Option<&str>,
        end_ns: u64,
    ) -> Result<Window, String> {
        let parse = |option: &str, text: &str| {
            parse_time(text).ok_or_else(|| {
                format!("{option} {text}: not a time (seconds, or a number with ms, us or ns)")
            })
        };
        let from_ns = from.map(|t| parse("--from", t)).transpose()?.unwrap_or(0);
        let to_ns = to.map(|t| parse("--to", t)).transpose()?.unwrap_or(end_ns);
        if let (Some(text), true) = (from, from_ns >= end_ns) {
            return Err(format!(
                "--from {text}: at or after the trace's end ({})",
                shown(end_ns)
            ));
        }
        if let (Some(text), true) = (to, to_ns > end_ns) {
            return Err(format!(
                "--to {text}: after the trace's end ({})",
                shown(end_ns)
            ));
        }
        if from_ns >= to_ns {
            return Err(format!(
                "--from {} is not before --to {}: the window would be empty",
                from.unwrap_or("0"),
                to.unwrap_or("the end")
            ));
        }
        Ok(Window { from_ns, to_ns })
    }

    /// Whether the window is the whole of a run that ends at `end_ns`.
    pub fn is_whole(&self, end_ns: u64) -> bool {
        *self == Window::whole(end_ns)
    }

    /// The window as a note names it: `0.3 to 0.35 s`.
    pub fn scope(&self) -> String {
        format!("{:?} to {:?} s", seconds(self.from_ns), seconds(self.to_ns))
    }

    /// The interval `[from, to)` cut to the window, `None` when none of it
    /// is inside.
    pub fn clip(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let (from, to) = (from.max(self.from_ns), to.min(self.to_ns));
        (from < to).then_some((from, to))
    }

    /// A counter's samples `(ns, value)`, in time order, as the points of a
    /// line drawn straight from sample to sample (a task's util, a domain's
    /// energy), cut to the window: the samples inside it, and where the line
    /// crosses `--from` and `--to` (between a sample before and one after),
    /// a point there on that straight line, so that the window shows what
    /// the whole run's chart shows over the same stretch. A line that ends
    /// before `--from` or starts after `--to` has no points.
    pub fn cut(&self, samples: impl IntoIterator<Item = (u64, f64)>) -> Points {
        let (from, to) = (self.from_ns, self.to_ns);
        let crossing = |(t0, v0): (u64, f64), (t1, v1): (u64, f64), at: u64| {
            let share = (at - t0) as f64 / (t1 - t0) as f64;
            (seconds(at), v0 + (v1 - v0) * share)
        };
        let mut points = Vec::new();
        let mut before: Option<(u64, f64)> = None;
        for (ns, value) in samples {
            if let Some(previous) = before.filter(|p| p.0 < from && from < ns) {
                points.push(crossing(previous, (ns, value), from));
            }
            if let Some(previous) = before.filter(|p| p.0 < to && to < ns) {
                points.push(crossing(previous, (ns, value), to));
            }
            if (from..=to).contains(&ns) {
                points.push((seconds(ns), value));
            }
            before = Some((ns, value));
        }
        points
    }

    /// A value that holds from each change to the next (a frequency, a
    /// pool's runtime), as the steps of a line within the window: each
    /// change draws its level until the next change or `--to`, and the
    /// level held at `--from` is drawn from there.
    pub fn steps(&self, changes: &[(u64, f64)]) -> Points {
        let mut points = Vec::new();
        for (index, &(at, value)) in changes.iter().enumerate() {
            let until = changes.get(index + 1).map_or(self.to_ns, |next| next.0);
            if let Some((from, to)) = self.clip(at, until) {
                points.push((seconds(from), value));
                points.push((seconds(to), value));
            }
        }
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_in_seconds_or_with_a_unit() {
        assert_eq!(parse_time("1.5"), Some(1_500_000_000));
        assert_eq!(parse_time("2s"), Some(2_000_000_000));
        assert_eq!(parse_time("1500ms"), Some(1_500_000_000));
        assert_eq!(parse_time("250us"), Some(250_000));
        assert_eq!(parse_time("0.1"), Some(100_000_000));
        assert_eq!(parse_time("7ns"), Some(7));
        for wrong in [
            "", "ms", "-1", "1e3", "inf", "NaN", "1.2.3", ".", "1 s", "3min",
        ] {
            assert_eq!(parse_time(wrong), None, "{wrong:?}");
        }
    }

    #[test]
    fn a_window_the_run_does_not_reach_is_refused_by_its_option() {
        let end = 2_000_000_000;
        assert_eq!(
            Window::from_options(Some("3"), None, end),
            Err("--from 3: at or after the trace's end (2.0 s)".into())
        );
        assert_eq!(
            Window::from_options(None, Some("2500ms"), end),
            Err("--to 2500ms: after the trace's end (2.0 s)".into())
        );
        assert_eq!(
            Window::from_options(Some("1"), Some("0.5"), end),
            Err("--from 1 is not before --to 0.5: the window would be empty".into())
        );
        assert_eq!(
            Window::from_options(Some("1"), Some("1000ms"), end),
            Err("--from 1 is not before --to 1000ms: the window would be empty".into())
        );
        assert_eq!(
            Window::from_options(Some("soon"), None, end),
            Err("--from soon: not a time (seconds, or a number with ms, us or ns)".into())
        );
        assert_eq!(
            Window::from_options(Some("0.5"), Some("1500ms"), end),
            Ok(Window {
                from_ns: 500_000_000,
                to_ns: 1_500_000_000
            })
        );
        assert_eq!(
            Window::from_options(None, None, end),
            Ok(Window::whole(end))
        );
    }

    /// A counter sampled at 1, 2 and 3 s (10, 20, 30), seen from 1.5 to
    /// 2.5 s: the straight line between the samples crosses 1.5 s at 15 and
    /// 2.5 s at 25.
    #[test]
    fn a_line_is_cut_where_it_crosses_the_window_edges() {
        let window = Window {
            from_ns: 1_500_000_000,
            to_ns: 2_500_000_000,
        };
        let samples = [
            (1_000_000_000, 10.0),
            (2_000_000_000, 20.0),
            (3_000_000_000, 30.0),
        ];
        assert_eq!(
            window.cut(samples),
            vec![(1.5, 15.0), (2.0, 20.0), (2.5, 25.0)]
        );
        // Samples on the edges are the values there.
        let on_edges = Window {
            from_ns: 1_000_000_000,
            to_ns: 2_000_000_000,
        };
        assert_eq!(on_edges.cut(samples), vec![(1.0, 10.0), (2.0, 20.0)]);
        // Within one stretch between two samples: its two crossings.
        let inside = Window {
            from_ns: 2_250_000_000,
            to_ns: 2_750_000_000,
        };
        assert_eq!(inside.cut(samples), vec![(2.25, 22.5), (2.75, 27.5)]);
        // A line that ended before the window, or starts after it: nothing.
        let after = Window {
            from_ns: 3_500_000_000,
            to_ns: 4_000_000_000,
        };
        assert!(after.cut(samples).is_empty());
        let before = Window {
            from_ns: 0,
            to_ns: 500_000_000,
        };
        assert!(before.cut(samples).is_empty());
    }

    /// Frequency changes at 0, 1 and 3 s, seen from 0.5 to 2 s: the level
    /// set at 0 holds from 0.5 to 1 s, the one set at 1 s to the window's end.
    #[test]
    fn a_held_level_is_drawn_from_the_window_start_to_its_end() {
        let window = Window {
            from_ns: 500_000_000,
            to_ns: 2_000_000_000,
        };
        let changes = [(0, 600.0), (1_000_000_000, 1200.0), (3_000_000_000, 450.0)];
        assert_eq!(
            window.steps(&changes),
            vec![(0.5, 600.0), (1.0, 600.0), (1.0, 1200.0), (2.0, 1200.0)]
        );
        assert_eq!(window.clip(0, 400_000_000), None);
        assert_eq!(
            window.clip(0, 700_000_000),
            Some((500_000_000, 700_000_000))
        );
    }
}
