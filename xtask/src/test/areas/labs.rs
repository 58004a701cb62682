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

use regex::RegexBuilder;
use serde_json::Value;

/// One check of an answer key.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The check's label; its first word names the question (`Q1`, `kernel`).
    pub label: String,
    /// Where the value is read.
    pub source: Source,
    /// The value divided by this before it is compared (1 when none is given).
    pub divisor: f64,
    /// What the value must be.
    pub expected: Expected,
    /// The source as the key writes it, for the failure's message.
    pub source_text: String,
}

/// Where a check reads its value.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A JSON file's value at a path, less the value at another if given.
    Json {
        file: String,
        path: String,
        minus: Option<String>,
    },
    /// An aggregate of a CSV column over the rows a filter keeps.
    Csv {
        file: String,
        aggregate: Aggregate,
        column: String,
        filter: Vec<Condition>,
    },
    /// The first capture group of a regex's first match in a text file.
    Text { file: String, pattern: String },
    /// How many lines of a text file match a regex.
    Count { file: String, pattern: String },
}

impl Source {
    /// The file the value is read from, relative to the repository's root.
    pub fn file(&self) -> &str {
        match self {
            Source::Json { file, .. }
            | Source::Csv { file, .. }
            | Source::Text { file, .. }
            | Source::Count { file, .. } => file,
        }
    }
}

/// How a CSV column's values over the kept rows become one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Exactly one row is kept: its value.
    Value,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
    /// The values' mean.
    Mean,
    /// The largest value less the smallest.
    Spread,
    /// How many rows are kept.
    Count,
}

/// One condition of a CSV filter: `column=value`, `column!=value`,
/// `column>=value` or `column<=value` (numbers compare as numbers, other
/// values as text).
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The column's name in the header line.
    pub column: String,
    /// How the row's field compares with `value`.
    pub relation: Relation,
    /// The value written in the filter.
    pub value: String,
}

/// A filter's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// `=`.
    Equal,
    /// `!=`.
    NotEqual,
    /// `>=`, numbers only.
    AtLeast,
    /// `<=`, numbers only.
    AtMost,
}

/// What a checked value must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    /// Within `tolerance` of `value`.
    Near { value: f64, tolerance: f64 },
    /// Within `percent` % of `value`.
    NearPercent { value: f64, percent: f64 },
    /// In `low..=high`.
    Range { low: f64, high: f64 },
}

impl Expected {
    /// Whether `found` is what was expected.
    pub fn holds(&self, found: f64) -> bool {
        let (low, high) = self.bounds();
        // A margin of rounding: the keys' values are decimals.
        let margin = 1e-9 * (low.abs().max(high.abs()).max(1.0));
        found >= low - margin && found <= high + margin
    }

    /// The smallest and largest value allowed.
    pub fn bounds(&self) -> (f64, f64) {
        match *self {
            Expected::Near { value, tolerance } => (value - tolerance, value + tolerance),
            Expected::NearPercent { value, percent } => {
                let tolerance = value.abs() * percent / 100.0;
                (value - tolerance, value + tolerance)
            }
            Expected::Range { low, high } => (low, high),
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Near { value, tolerance } => write!(f, "{value} ± {tolerance}"),
            Expected::NearPercent { value, percent } => write!(f, "{value} ± {percent}%"),
            Expected::Range { low, high } => write!(f, "{low}..{high}"),
        }
    }
}

/// An answer key read: its checks and its commands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Key {
    /// The lines of its `check` blocks, in order.
    pub checks: Vec<Check>,
    /// The key's `sh` blocks, one script.
    pub commands: String,
}

/// A number as the keys write them: `604.1`, `1e6`, `100_000_000`.
fn number(text: &str) -> Result<f64, String> {
    let cleaned: String = text.trim().chars().filter(|c| *c != '_').collect();
    cleaned
        .parse::<f64>()
        .map_err(|_| format!("`{text}` is not a number"))
}

/// Reads `X ± T`, `X ± P%`, `X +- T` or `A..B`.
pub fn parse_expected(text: &str) -> Result<Expected, String> {
    let text = text.trim();
    if let Some((low, high)) = text.split_once("..") {
        let (low, high) = (number(low)?, number(high)?);
        if low > high {
            return Err(format!("the range `{text}` is empty"));
        }
        return Ok(Expected::Range { low, high });
    }
    let (value, tolerance) = text
        .split_once('±')
        .or_else(|| text.split_once("+-"))
        .ok_or_else(|| format!("`{text}` is neither `X ± T` nor `A..B`"))?;
    let value = number(value)?;
    let tolerance = tolerance.trim();
    let expected = match tolerance.strip_suffix('%') {
        Some(percent) => Expected::NearPercent {
            value,
            percent: number(percent)?,
        },
        None => Expected::Near {
            value,
            tolerance: number(tolerance)?,
        },
    };
    Ok(expected)
}

/// Reads a regex written between backticks at the start of `text`; the
/// regex and what follows it.
fn backticked(text: &str) -> Result<(String, &str), String> {
    let rest = text
        .trim_start()
        .strip_prefix('`')
        .ok_or_else(|| format!("`{text}`: the regex goes between backticks"))?;
    let end = rest
        .find('`')
        .ok_or_else(|| format!("`{text}`: the regex's closing backtick is missing"))?;
    Ok((rest[..end].to_string(), &rest[end + 1..]))
}

/// Splits a trailing `/ DIVISOR` off a source.
fn divisor(text: &str) -> Result<(&str, f64), String> {
    match text.rsplit_once(" / ") {
        Some((head, tail)) if !tail.contains('`') => {
            let divisor = number(tail)?;
            if divisor == 0.0 {
                return Err("a divisor of 0".into());
            }
            Ok((head, divisor))
        }
        _ => Ok((text, 1.0)),
    }
}

/// Reads a CSV filter: conditions apart by commas.
fn parse_filter(text: &str) -> Result<Vec<Condition>, String> {
    text.split(',')
        .map(|condition| {
            let condition = condition.trim();
            let (column, relation, value) = if let Some((c, v)) = condition.split_once(">=") {
                (c, Relation::AtLeast, v)
            } else if let Some((c, v)) = condition.split_once("<=") {
                (c, Relation::AtMost, v)
            } else if let Some((c, v)) = condition.split_once("!=") {
                (c, Relation::NotEqual, v)
            } else if let Some((c, v)) = condition.split_once('=') {
                (c, Relation::Equal, v)
            } else {
                return Err(format!("the condition `{condition}` is not `column=value`"));
            };
            if matches!(relation, Relation::AtLeast | Relation::AtMost) {
                number(value)?;
            }
            Ok(Condition {
                column: column.trim().to_string(),
                relation,
                value: value.trim().to_string(),
            })
        })
        .collect()
}

/// Reads where a check's value is (the middle field of its line).
pub fn parse_source(text: &str) -> Result<(Source, f64), String> {
    let text = text.trim();
    let (kind, rest) = text
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("`{text}`: a source is `KIND FILE ...`"))?;
    let rest = rest.trim_start();
    let (file, rest) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("`{text}`: the file is followed by what to read in it"))?;
    let file = file.to_string();
    match kind {
        "json" => {
            let (paths, divisor) = divisor(rest)?;
            let (path, minus) = match paths.split_once(" - ") {
                Some((path, minus)) => (path.trim(), Some(minus.trim().to_string())),
                None => (paths.trim(), None),
            };
            if path.is_empty() || path.contains(char::is_whitespace) {
                return Err(format!("`{text}`: the JSON path `{path}` is not one word"));
            }
            Ok((
                Source::Json {
                    file,
                    path: path.to_string(),
                    minus,
                },
                divisor,
            ))
        }
        "csv" => {
            let (rest, divisor) = divisor(rest)?;
            let (head, filter) = match rest.split_once(" where ") {
                Some((head, filter)) => (head, parse_filter(filter)?),
                None => (rest, Vec::new()),
            };
            let words: Vec<&str> = head.split_whitespace().collect();
            let [aggregate, column] = words[..] else {
                return Err(format!(
                    "`{text}`: a CSV source is `csv FILE AGGREGATE COLUMN`"
                ));
            };
            let aggregate = match aggregate {
                "value" => Aggregate::Value,
                "min" => Aggregate::Min,
                "max" => Aggregate::Max,
                "mean" => Aggregate::Mean,
                "spread" => Aggregate::Spread,
                "count" => Aggregate::Count,
                other => {
                    return Err(format!(
                        "`{other}` is not value, min, max, mean, spread or count"
                    ));
                }
            };
            Ok((
                Source::Csv {
                    file,
                    aggregate,
                    column: column.to_string(),
                    filter,
                },
                divisor,
            ))
        }
        "text" | "count" => {
            let (pattern, tail) = backticked(rest)?;
            let divisor = match tail.trim().strip_prefix('/') {
                Some(value) => number(value)?,
                None if tail.trim().is_empty() => 1.0,
                None => return Err(format!("`{text}`: `{}` after the regex", tail.trim())),
            };
            RegexBuilder::new(&pattern)
                .build()
                .map_err(|e| format!("the regex `{pattern}`: {e}"))?;
            let source = if kind == "text" {
                Source::Text { file, pattern }
            } else {
                Source::Count { file, pattern }
            };
            Ok((source, divisor))
        }
        other => Err(format!("`{other}` is not json, csv, text or count")),
    }
}

/// Reads one check line: `LABEL | SOURCE | EXPECTED` (the source may hold
/// ` | ` in its regex: the label ends at the first, the expectation begins
/// after the last).
pub fn parse_check(line: &str) -> Result<Check, String> {
    let (label, rest) = line
        .split_once(" | ")
        .ok_or_else(|| format!("`{line}` is not `LABEL | SOURCE | EXPECTED`"))?;
    let (source_text, expected) = rest
        .rsplit_once(" | ")
        .ok_or_else(|| format!("`{line}` is not `LABEL | SOURCE | EXPECTED`"))?;
    let label = label.trim().to_string();
    if label.is_empty() {
        return Err(format!("`{line}` has no label"));
    }
    let (source, divisor) = parse_source(source_text)?;
    Ok(Check {
        label,
        source,
        divisor,
        expected: parse_expected(expected)?,
        source_text: source_text.trim().to_string(),
    })
}

/// Reads a key: its `check` blocks' lines (blank lines and lines beginning
/// with `#` aside) and its `sh` blocks.
pub fn parse_key(text: &str) -> Result<Key, String> {
    let mut key = Key::default();
    let mut block: Option<&str> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_end();
        match (block, trimmed) {
            (None, "```check") => block = Some("check"),
            (None, "```sh") => block = Some("sh"),
            (Some(_), "```") => block = None,
            (Some("check"), line) => {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let check = parse_check(line).map_err(|e| format!("line {}: {e}", number + 1))?;
                key.checks.push(check);
            }
            (Some(_), _) => {
                key.commands.push_str(line);
                key.commands.push('\n');
            }
            (None, _) => {}
        }
    }
    if block.is_some() {
        return Err("a block is not closed".into());
    }
    Ok(key)
}

/// The value at a JSON path: keys apart by dots, each followed by any
/// number of `[index]` or `[field=value]` (the element whose field prints
/// as `value`).
pub fn json_at(root: &Value, path: &str) -> Result<f64, String> {
    let mut value = root;
    for segment in path.split('.') {
        let (name, mut selectors) = match segment.find('[') {
            Some(at) => (&segment[..at], &segment[at..]),
            None => (segment, ""),
        };
        if !name.is_empty() {
            value = value
                .get(name)
                .ok_or_else(|| format!("no `{name}` at `{path}`"))?;
        }
        while let Some(rest) = selectors.strip_prefix('[') {
            let end = rest
                .find(']')
                .ok_or_else(|| format!("`{path}`: an unclosed `[`"))?;
            let selector = &rest[..end];
            selectors = &rest[end + 1..];
            let items = value
                .as_array()
                .ok_or_else(|| format!("`{path}`: `[{selector}]` on what is not a list"))?;
            value = match selector.split_once('=') {
                Some((field, wanted)) => items
                    .iter()
                    .find(|item| item.get(field).is_some_and(|v| printed(v) == wanted))
                    .ok_or_else(|| format!("`{path}`: no element with {field} = {wanted}"))?,
                None => {
                    let index: usize = selector
                        .parse()
                        .map_err(|_| format!("`{path}`: `[{selector}]` is not an index"))?;
                    items.get(index).ok_or_else(|| {
                        format!("`{path}`: index {index} of a list of {}", items.len())
                    })?
                }
            };
        }
        if !selectors.is_empty() {
            return Err(format!("`{path}`: `{selectors}` after a selector"));
        }
    }
    value
        .as_f64()
        .or_else(|| value.as_bool().map(|b| f64::from(u8::from(b))))
        .ok_or_else(|| format!("`{path}` is {value}, not a number"))
}

/// A JSON value as a filter compares it: strings without their quotes.
fn printed(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// An aggregate of `column` over the rows of `csv` (with a header line)
/// that `filter` keeps.
pub fn csv_aggregate(
    csv: &str,
    aggregate: Aggregate,
    column: &str,
    filter: &[Condition],
) -> Result<f64, String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().ok_or("an empty CSV")?.split(',').collect();
    let index_of = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no column `{name}` (the columns: {})", header.join(",")))
    };
    let wanted = index_of(column)?;
    let conditions = filter
        .iter()
        .map(|c| index_of(&c.column).map(|i| (i, c)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut values = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let keep = conditions.iter().all(|(i, condition)| {
            let field = fields.get(*i).copied().unwrap_or("");
            match condition.relation {
                // Numbers compare as numbers (`100_000_000` keeps `100000000`).
                Relation::Equal | Relation::NotEqual => {
                    let equal = match (number(field), number(&condition.value)) {
                        (Ok(field), Ok(wanted)) => field == wanted,
                        _ => field == condition.value,
                    };
                    equal == (condition.relation == Relation::Equal)
                }
                Relation::AtLeast | Relation::AtMost => {
                    match (number(field), number(&condition.value)) {
                        (Ok(field), Ok(bound)) if condition.relation == Relation::AtLeast => {
                            field >= bound
                        }
                        (Ok(field), Ok(bound)) => field <= bound,
                        _ => false,
                    }
                }
            }
        });
        if keep {
            let field = fields.get(wanted).copied().unwrap_or("");
            values.push(number(field).map_err(|e| format!("column `{column}`: {e}"))?);
        }
    }
    if aggregate == Aggregate::Count {
        return Ok(values.len() as f64);
    }
    if values.is_empty() {
        return Err("the filter keeps no row".into());
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(match aggregate {
        Aggregate::Value if values.len() == 1 => values[0],
        Aggregate::Value => {
            return Err(format!(
                "the filter keeps {} rows, not one (use min, max or mean)",
                values.len()
            ));
        }
        Aggregate::Min => min,
        Aggregate::Max => max,
        Aggregate::Mean => values.iter().sum::<f64>() / values.len() as f64,
        Aggregate::Spread => max - min,
        Aggregate::Count => unreachable!("counted above"),
    })
}

/// The value a source reads, files relative to `root` (before the divisor).
pub fn read_source(source: &Source, root: &Path) -> Result<f64, String> {
    let read =
        |file: &str| std::fs::read_to_string(root.join(file)).map_err(|e| format!("{file}: {e}"));
    let regex = |pattern: &str| {
        RegexBuilder::new(pattern)
            .multi_line(true)
            .build()
            .map_err(|e| format!("the regex `{pattern}`: {e}"))
    };
    match source {
        Source::Json { file, path, minus } => {
            let json: Value =
                serde_json::from_str(&read(file)?).map_err(|e| format!("{file}: {e}"))?;
            let value = json_at(&json, path)?;
            match minus {
                Some(other) => Ok(value - json_at(&json, other)?),
                None => Ok(value),
            }
        }
        Source::Csv {
            file,
            aggregate,
            column,
            filter,
        } => csv_aggregate(&read(file)?, *aggregate, column, filter),
        Source::Text { file, pattern } => {
            let text = read(file)?;
            let captures = regex(pattern)?
                .captures(&text)
                .ok_or_else(|| format!("`{pattern}` matches nothing in {file}"))?;
            let found = captures
                .get(1)
                .ok_or_else(|| format!("`{pattern}` has no capture group"))?;
            number(found.as_str())
        }
        Source::Count { file, pattern } => {
            let regex = regex(pattern)?;
            Ok(read(file)?.lines().filter(|l| regex.is_match(l)).count() as f64)
        }
    }
}

/// Evaluates every check of `key` (files relative to `root`); one line per
/// failure, naming `lab`, the question, what was expected and what was found.
pub fn evaluate(lab: &str, key: &Key, root: &Path) -> Result<usize, Vec<String>> {
    if key.checks.is_empty() {
        return Err(vec![format!(
            "{lab}: its answer key has no check (a ```check block)"
        )]);
    }
    let failures: Vec<String> = key
        .checks
        .iter()
        .filter_map(|check| {
            // The label begins with the question: `lab2-cfs Q1 heavy's runtime, ms`.
            let at = format!("{lab} {}: expected {}", check.label, check.expected);
            match read_source(&check.source, root) {
                Ok(value) => {
                    let found = value / check.divisor;
                    (!check.expected.holds(found))
                        .then(|| format!("{at}, found {found} ({})", check.source_text))
                }
                Err(error) => Some(format!("{at}, found nothing: {error}")),
            }
        })
        .collect();
    if failures.is_empty() {
        Ok(key.checks.len())
    } else {
        Err(failures)
    }
}

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
mod tests {
    use super::*;

    #[test]
    fn a_check_line_is_read() {
        let check = parse_check(
            "Q1 heavy's runtime, ms | json target/labs/lab2.json tasks[name=heavy].runtime_ns / 1e6 | 603.8 ± 4.8",
        )
        .unwrap();
        assert_eq!(check.label, "Q1 heavy's runtime, ms");
        assert_eq!(
            check.source,
            Source::Json {
                file: "target/labs/lab2.json".into(),
                path: "tasks[name=heavy].runtime_ns".into(),
                minus: None,
            }
        );
        assert_eq!(check.divisor, 1e6);
        assert_eq!(
            check.expected,
            Expected::Near {
                value: 603.8,
                tolerance: 4.8
            }
        );
        let csv = parse_check(
            "Q2 spread | csv f.csv spread vruntime where time_ns=100_000_000, task>=1 / 1e6 | 0..4",
        )
        .unwrap();
        assert_eq!(csv.divisor, 1e6);
        let Source::Csv {
            aggregate,
            column,
            filter,
            ..
        } = csv.source
        else {
            panic!("not a CSV source");
        };
        assert_eq!(
            (aggregate, column.as_str()),
            (Aggregate::Spread, "vruntime")
        );
        assert_eq!(filter.len(), 2);
        assert_eq!(filter[0].value, "100_000_000");
        assert_eq!(filter[1].relation, Relation::AtLeast);
        // A regex may hold ` | `: the label ends at the first, the
        // expectation starts after the last.
        let text =
            parse_check("kernel a | text out.txt `^(a|b) | ([0-9.]+)` / 10 | 1 +- 5%").unwrap();
        assert_eq!(
            text.source,
            Source::Text {
                file: "out.txt".into(),
                pattern: "^(a|b) | ([0-9.]+)".into()
            }
        );
        assert_eq!(text.divisor, 10.0);
        assert_eq!(
            text.expected,
            Expected::NearPercent {
                value: 1.0,
                percent: 5.0
            }
        );
        let difference =
            parse_check("Q2b first | json r.json switches[2].time_ns - switches[1].time_ns | 1..2")
                .unwrap();
        assert!(
            matches!(difference.source, Source::Json { minus: Some(ref m), .. } if m == "switches[1].time_ns")
        );
    }

    #[test]
    fn malformed_checks_are_refused_naming_what_is_wrong() {
        for (line, says) in [
            ("Q1 no fields", "LABEL | SOURCE | EXPECTED"),
            ("Q1 | json f.json a.b | 3", "neither"),
            ("Q1 | json f.json a.b | 5..3", "empty"),
            ("Q1 | yaml f.yaml a | 1 ± 1", "not json"),
            ("Q1 | csv f.csv median x | 1 ± 1", "median"),
            ("Q1 | text f.txt ([0-9]+) | 1 ± 1", "backticks"),
            ("Q1 | text f.txt `([0-9]+` | 1 ± 1", "regex"),
            ("Q1 | json f.json a / 0 | 1 ± 1", "divisor of 0"),
            ("  | json f.json a | 1 ± 1", "no label"),
        ] {
            let error = parse_check(line).unwrap_err();
            assert!(error.contains(says), "{line}: {error}");
        }
        assert!(parse_key("```check\nQ1 | json f.json a | 1 ± 1\n").is_err());
    }

    #[test]
    fn a_key_gives_its_checks_and_commands() {
        let key = parse_key(
            "# Key\n\n1. Text.\n\n```check\n# a comment\nQ1 a | json f.json a | 1 ± 0\n\nQ2 b | count f.txt `x` | 0..0\n```\n\n```sh\necho hi > f.txt\n```\n```text\nnot a check\n```\n",
        )
        .unwrap();
        assert_eq!(key.checks.len(), 2);
        assert_eq!(key.checks[1].label, "Q2 b");
        assert_eq!(key.commands, "echo hi > f.txt\n");
    }

    #[test]
    fn json_paths_select_by_index_and_field() {
        let json: Value = serde_json::from_str(
            r#"{"tasks": [{"name": "a", "runtime_ns": 5}, {"name": "b", "runtime_ns": 7}],
                "energy": [{"residency_us": [{"mhz": 450, "us": 9}]}], "finished": true}"#,
        )
        .unwrap();
        assert_eq!(json_at(&json, "tasks[1].runtime_ns"), Ok(7.0));
        assert_eq!(json_at(&json, "tasks[name=a].runtime_ns"), Ok(5.0));
        assert_eq!(
            json_at(&json, "energy[0].residency_us[mhz=450].us"),
            Ok(9.0)
        );
        assert_eq!(json_at(&json, "finished"), Ok(1.0));
        assert!(json_at(&json, "tasks[name=c].runtime_ns").is_err());
        assert!(json_at(&json, "tasks[2]").unwrap_err().contains("index 2"));
        assert!(
            json_at(&json, "tasks")
                .unwrap_err()
                .contains("not a number")
        );
    }

    #[test]
    fn csv_aggregates_over_the_kept_rows() {
        let csv = "time_ns,task,v\n0,a,1\n0,b,4\n10,a,2\n10,b,8\n";
        let at = |time: &str| parse_filter(&format!("time_ns={time}")).unwrap();
        assert_eq!(
            csv_aggregate(csv, Aggregate::Spread, "v", &at("10")),
            Ok(6.0)
        );
        assert_eq!(csv_aggregate(csv, Aggregate::Mean, "v", &at("0")), Ok(2.5));
        let not_a = parse_filter("task!=a").unwrap();
        assert_eq!(csv_aggregate(csv, Aggregate::Min, "v", &not_a), Ok(4.0));
        let late_a = parse_filter("task=a,time_ns>=5").unwrap();
        assert_eq!(csv_aggregate(csv, Aggregate::Value, "v", &late_a), Ok(2.0));
        assert_eq!(csv_aggregate(csv, Aggregate::Max, "v", &[]), Ok(8.0));
        assert_eq!(csv_aggregate(csv, Aggregate::Count, "v", &at("5")), Ok(0.0));
        assert!(csv_aggregate(csv, Aggregate::Value, "v", &at("0")).is_err());
        assert!(csv_aggregate(csv, Aggregate::Min, "w", &[]).is_err());
    }

    /// The checker on files: a right value holds, a wrong one fails naming
    /// the lab, the question, the expectation and the value found; a key
    /// without checks fails.
    #[test]
    fn the_checker_passes_right_values_and_fails_wrong_ones() {
        let dir = std::env::temp_dir().join(format!("xtask-lab-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("r.json"),
            r#"{"tasks": [{"name": "heavy", "runtime_ns": 600000000}]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("t.txt"),
            "                    simulator  kernel\nheavy runtime       600.0 ms   600.0 ms\nlight runtime 1 ms 2 ms  <<\n",
        )
        .unwrap();
        let right = parse_key(
            "```check\nQ1 heavy | json r.json tasks[name=heavy].runtime_ns / 1e6 | 603.8 ± 4.8\n\
             kernel heavy | text t.txt `^heavy runtime +[0-9.]+ ms +([0-9.]+) ms` | 603.8 ± 1%\n\
             kernel marked | count t.txt `<<$` | 1..1\n```\n",
        )
        .unwrap();
        assert_eq!(evaluate("lab2-cfs", &right, &dir), Ok(3));
        let wrong = parse_key(
            "```check\nQ1 heavy | json r.json tasks[name=heavy].runtime_ns / 1e6 | 640 ± 4.8\n\
             Q2 gone | json missing.json a | 1 ± 0\n```\n",
        )
        .unwrap();
        let failures = evaluate("lab2-cfs", &wrong, &dir).unwrap_err();
        assert_eq!(failures.len(), 2);
        assert_eq!(
            failures[0],
            "lab2-cfs Q1 heavy: expected 640 ± 4.8, found 600 \
             (json r.json tasks[name=heavy].runtime_ns / 1e6)"
        );
        assert!(
            failures[1]
                .starts_with("lab2-cfs Q2 gone: expected 1 ± 0, found nothing: missing.json")
        );
        let empty = parse_key("# A key\n\nNo checks.\n").unwrap();
        assert!(evaluate("lab9", &empty, &dir).unwrap_err()[0].contains("no check"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Every key in the repository reads, and has checks.
    #[test]
    fn the_repositorys_keys_read() {
        let root = crate::run::board::workspace_root();
        let sheets = sheets(&root, None).unwrap();
        assert!(sheets.len() >= 5);
        for sheet in sheets {
            let name = sheet.file_stem().unwrap().to_str().unwrap();
            let path = root.join(format!("docs/labs/answers/{name}.md"));
            let key = parse_key(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!key.checks.is_empty(), "{name}");
        }
    }
}
