//! An answer key's grammar (the module doc of [`super`]): its checks, where
//! each reads its value and what the value must be, and its `sh` blocks.

use regex::RegexBuilder;

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
pub(super) fn number(text: &str) -> Result<f64, String> {
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
pub(super) fn parse_filter(text: &str) -> Result<Vec<Condition>, String> {
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
