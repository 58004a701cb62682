//! The lab sheets and their answer keys (`docs/labs/labN-*.md`,
//! `docs/labs/answers/labN-*.md`): each sheet's commands run, then every
//! numeric answer of its key is checked against what the tools printed.
//!
//! A key holds its checks in fenced `check` blocks, one check a line, three
//! fields apart by ` | `:
//!
//! ```text
//! Q1 heavy's runtime, ms | json target/labs/lab2.json tasks[name=heavy].runtime_ns / 1e6 | 603.8 ± 4.8
//! ```
//!
//! The label (its first word names the question), where the value is read,
//! and what it must be: `X ± T`, `X ± P%` or an inclusive range `A..B`.
//! Where a value is read:
//!
//! - `json FILE PATH [- PATH]`: a JSON path (`tasks[name=heavy].runtime_ns`,
//!   `switches[1].time_ns`), or the difference of two;
//! - `csv FILE AGGREGATE COLUMN [where FILTER]`: `value` (exactly one row),
//!   `min`, `max`, `mean`, `spread` (max − min) or `count` of a column over
//!   the rows the filter keeps (`task=plain,time_ns>=800000000`, `task!=cpu0`);
//! - ``text FILE `REGEX` ``: the first capture group of the regex's first
//!   match (`^` and `$` match at lines);
//! - ``count FILE `REGEX` ``: how many lines match the regex.
//!
//! Each may end with `/ DIVISOR` (`/ 1e6`: nanoseconds to milliseconds).
//! Files are relative to the repository's root. A key may also hold `sh`
//! blocks: commands that produce what its checks read beyond the sheet's
//! (the runs a question asks the student to make); they run after the
//! sheet's, in the same script. A key without a check fails, so a key cannot
//! lose its checks unnoticed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

mod key;
mod read;

use key::parse_key;
use read::evaluate;

/// A lab sheet's name, and its outcome: how many checks held, or why not.
pub type LabOutcome = (String, Result<String, String>);

/// The lab sheets (`docs/labs/lab*.md`), those whose name contains `only`.
fn sheets(root: &Path, only: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let dir = root.join("docs/labs");
    let mut sheets: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("lab") && n.ends_with(".md") && only.is_none_or(|o| n.contains(o))
            })
        })
        .collect();
    sheets.sort();
    Ok(sheets)
}

/// One lab: its sheet's ```sh blocks then its key's, in order, run as one
/// `bash -euo pipefail` script from the repository's root (unless
/// `run_commands` is false: the outputs of an earlier run are checked), then
/// every check of its key.
fn lab(root: &Path, sheet: &Path, run_commands: bool) -> Result<String, String> {
    let name = sheet.file_stem().and_then(|n| n.to_str()).unwrap_or("lab");
    let text = std::fs::read_to_string(sheet).map_err(|e| format!("{}: {e}", sheet.display()))?;
    let key_name = format!("answers/{name}.md");
    if !text.contains(&format!("({key_name})")) {
        return Err(format!(
            "the sheet does not link its answer key, {key_name}"
        ));
    }
    let key_path = root.join("docs/labs").join(&key_name);
    let key_text =
        std::fs::read_to_string(&key_path).map_err(|e| format!("{}: {e}", key_path.display()))?;
    let key = parse_key(&key_text).map_err(|e| format!("{key_name}: {e}"))?;
    // A sheet's ```sh blocks are read as a key's are (it has no check blocks).
    let script = parse_key(&text)
        .map_err(|e| format!("{}: {e}", sheet.display()))?
        .commands;
    if script.is_empty() {
        return Err("no ```sh block".to_string());
    }
    if run_commands {
        // What the checks read under target/ is made afresh: a command that
        // stops writing a file must not pass on an earlier run's.
        for check in &key.checks {
            let file = check.source.file();
            if file.starts_with("target/") && !file.contains("..") {
                let _ = std::fs::remove_file(root.join(file));
            }
        }
        let output = Command::new("bash")
            .args([
                "-euo",
                "pipefail",
                "-c",
                &format!("{script}{}", key.commands),
            ])
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("bash: {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            return Err(format!(
                "its commands failed ({}): {}",
                output.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ));
        }
    }
    match evaluate(name, &key, root) {
        Ok(count) => Ok(format!("{count} checks of {key_name} hold")),
        Err(failures) => Err(failures.join("\n    ")),
    }
}

/// Every lab sheet whose name contains `only` (all without it), its
/// commands run and its key checked.
pub fn lab_checks(
    root: &Path,
    only: Option<&str>,
    run_commands: bool,
) -> Result<Vec<LabOutcome>, String> {
    let sheets = sheets(root, only)?;
    if sheets.is_empty() {
        return Err(format!(
            "no lab sheet's name contains {}",
            only.unwrap_or("")
        ));
    }
    Ok(sheets
        .iter()
        .map(|sheet| {
            let name = sheet
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or("lab")
                .to_string();
            (name, lab(root, sheet, run_commands))
        })
        .collect())
}

/// Prints one lab's outcome as the test command does; whether it passed.
pub fn print_outcome((lab, outcome): &LabOutcome) -> bool {
    match outcome {
        Ok(summary) => {
            eprintln!("lab   {lab:<32} ok\n    {summary}");
            true
        }
        Err(report) => {
            eprintln!("lab   {lab:<32} FAILED\n    {report}");
            false
        }
    }
}

/// `cargo xtask labs [--only NAME] [--checks-only]`: the lab checks alone.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let mut only = None;
    let mut run_commands = true;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--only" => {
                only = Some(args.get(i + 1).ok_or("--only needs a name")?.as_str());
                i += 1;
            }
            "--checks-only" => run_commands = false,
            other => return Err(format!("labs: unknown option {other}")),
        }
        i += 1;
    }
    let root = crate::run::board::workspace_root();
    let outcomes = lab_checks(&root, only, run_commands)?;
    let failed = outcomes.iter().filter(|o| !print_outcome(o)).count();
    eprintln!(
        "xtask: lab checks: {} passed, {failed} failed",
        outcomes.len() - failed
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests;
