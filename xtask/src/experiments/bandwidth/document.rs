//! The experiment's Markdown tables, and the document they are written
//! into (docs/bandwidth-experiment.md, between its markers).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use super::measure::Measure;
use super::{BEGIN, DOC, END, MS, Mode, PERIOD, Row, SEEDS};
use crate::run::board::workspace_root;

/// A mean over seeds, with the sample standard deviation when there are
/// several.
#[derive(Clone, Copy, Debug)]
struct Stat {
    mean: f64,
    sd: Option<f64>,
}

fn stat(values: &[f64]) -> Stat {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.len() > 1)
        .then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    Stat { mean, sd }
}

fn show(stat: Stat, decimals: usize, sign: bool) -> String {
    let mean = if sign {
        format!("{:+.*}", decimals, stat.mean)
    } else {
        format!("{:.*}", decimals, stat.mean)
    };
    match stat.sd {
        Some(sd) => format!("{mean} ± {sd:.decimals$}"),
        None => mean,
    }
}

/// The Markdown table of one side (`kernel` or not: the simulator).
pub(super) fn table(rows: &[Row], kernel: bool) -> String {
    fn side(row: &Row, kernel: bool) -> &[Measure] {
        if kernel { &row.kernel } else { &row.sim }
    }
    let mut out = String::from(
        "| G | N | start | work (CPU-s/s) | % of quota | Δ vs aligned | idle % | nr_throttled | \
         all CPUs idle % | steady: % of quota | steady: all CPUs idle % | \
         steady: both groups run % | steady: both groups active % | max uncharged (ms) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let p = &row.point;
        let runs = side(row, kernel);
        let aligned = rows
            .iter()
            .find(|r| {
                r.point.groups == p.groups
                    && r.point.cpus == p.cpus
                    && r.point.mode == Mode::Aligned
            })
            .map(|r| side(r, kernel)[0].work)
            .unwrap_or(f64::NAN);
        let pick = |f: &dyn Fn(&Measure) -> f64| stat(&runs.iter().map(f).collect::<Vec<_>>());
        let quota = p.quota_sum();
        let start = match p.mode {
            Mode::Random => format!(
                "random (seed{} {})",
                if runs.len() > 1 { "s" } else { "" },
                SEEDS[..runs.len()]
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.name().to_string(),
        };
        let delta = if p.mode == Mode::Aligned {
            "0".to_string()
        } else {
            show(pick(&|m| (m.work / aligned - 1.0) * 100.0), 2, true) + " %"
        };
        let pair = |f: &dyn Fn(&Measure) -> f64| {
            if p.groups > 1 {
                show(pick(f), 2, false)
            } else {
                "-".to_string()
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {start} | {} | {} | {delta} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.groups,
            p.cpus,
            show(pick(&|m| m.work), 4, false),
            show(pick(&|m| m.work / quota * 100.0), 2, false),
            show(pick(&|m| m.idle_pct), 2, false),
            show(
                pick(&|m| m.nr_throttled as f64),
                usize::from(runs.len() > 1),
                false
            ),
            show(pick(&|m| m.all_idle_pct), 2, false),
            show(pick(&|m| m.steady_work / quota * 100.0), 2, false),
            show(pick(&|m| m.steady_all_idle_pct), 2, false),
            pair(&|m| m.steady_overlap_pct),
            pair(&|m| m.steady_active_pct),
            if runs.iter().all(|m| m.max_uncharged_ms.is_some()) {
                show(pick(&|m| m.max_uncharged_ms.unwrap_or(f64::NAN)), 1, false)
            } else {
                "-".to_string()
            },
        );
    }
    out
}

/// The document as first written, when docs/bandwidth-experiment.md does not
/// exist: the explanation, then the generated part.
const TEMPLATE: &str = "# The bandwidth timer interleaving experiment

`cargo xtask bandwidth-experiment KERNEL` (xtask/src/experiments/bandwidth/)
writes the part of this page between the markers below; the rest is kept.

";

/// What `git` prints for `args` in the workspace, trimmed (`None` on failure).
fn git(args: &[&str]) -> Option<String> {
    std::process::Command::new("git")
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The generated part of the document.
pub(super) fn generated(command: &str, wall: Duration, tables: &str) -> String {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let changed = git(&["diff", "--name-only", "HEAD"]).map_or("unknown".into(), |files| {
        if files.is_empty() {
            "none".to_string()
        } else {
            files.lines().collect::<Vec<_>>().join(", ")
        }
    });
    let host = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{BEGIN}\n\nProduced by `{command}` at commit {commit} (tracked files changed since: \
         {changed}) in {:.0} s of wall time ({} min {:.0} s) on a host with {host} CPUs.\n\n\
         {tables}{END}\n",
        wall.as_secs_f64(),
        wall.as_secs() / 60,
        wall.as_secs_f64() % 60.0
    )
}

/// Where each start puts the groups' grids: `PeriodTimerStart::offset` for
/// the ids the kernel and the simulator give `/g0` and `/g1` (1 and 2: the
/// scenario's groups in order, after the root).
pub(super) fn offsets(seeds: &[u64]) -> String {
    let mut starts = vec![("aligned".to_string(), Mode::Aligned.start(0))];
    starts.push(("period10".to_string(), Mode::Period10.start(0)));
    for &seed in seeds {
        starts.push((format!("random, bw_seed={seed}"), Mode::Random.start(seed)));
    }
    let shown: Vec<String> = starts
        .iter()
        .map(|(name, start)| {
            let ms = |group| start.offset(group, PERIOD) as f64 / MS as f64;
            format!("{name}: {:.3} ms, {:.3} ms", ms(1), ms(2))
        })
        .collect();
    format!(
        "Grid offsets of /g0 and /g1 (group ids 1 and 2): {}.\n",
        shown.join("; ")
    )
}

/// `text` with `part` in place of what lies between the markers (both
/// included), the rest kept.
pub(super) fn replace_generated(text: &str, part: &str) -> Result<String, String> {
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!(
            "no '{BEGIN}' and '{END}' lines to write the table between"
        ));
    };
    if end < begin {
        return Err("the markers are out of order".into());
    }
    Ok(format!(
        "{}{}{}",
        &text[..begin],
        part,
        text[end + END.len()..].trim_start_matches('\n')
    ))
}

/// Puts `part` between the markers of the document (the template if the file
/// does not exist).
pub(super) fn write_document(part: &str) -> Result<PathBuf, String> {
    let path = workspace_root().join(DOC);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("{TEMPLATE}{BEGIN}\n{END}\n"),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let text = replace_generated(&text, part).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}
