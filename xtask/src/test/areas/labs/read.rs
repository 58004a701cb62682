//! Reading what a check names (a JSON path, a CSV column's aggregate, a
//! regex's capture or count) and judging it against the key.

use std::path::Path;

use regex::RegexBuilder;
use serde_json::Value;

use super::key::{Aggregate, Condition, Key, Relation, Source, number};

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
