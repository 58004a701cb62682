//! Readers of a run's output lines that the case files share, and the
//! check of how a run ends.

/// The text after `key=` in the first line containing `needle`, with the line.
pub(crate) fn field_in<'a>(
    lines: &'a [String],
    needle: &str,
    key: &str,
) -> Result<(&'a str, &'a str), String> {
    let line = lines
        .iter()
        .find(|l| l.contains(needle))
        .ok_or_else(|| format!("no line contains '{needle}'"))?;
    let value = line_field(line, key).ok_or_else(|| format!("no {key}= in: {line}"))?;
    Ok((value, line))
}

/// The value of `key=` in one report line.
pub(crate) fn line_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

/// The value of `key=` in the first line containing `needle`.
pub(crate) fn value_in(lines: &[String], needle: &str, key: &str) -> Result<u64, String> {
    let (value, line) = field_in(lines, needle, key)?;
    value
        .parse()
        .map_err(|_| format!("no number {key}= in: {line}"))
}

/// The kernel's last lines end with `expected` (a line may carry a timestamp
/// and level before the text): nothing is printed after the verdict. The
/// runner's own `TIMEOUT:` note is not the kernel's.
pub(crate) fn last_exit_lines(lines: &[String], expected: &[&str]) -> Result<(), String> {
    let kernel: Vec<&String> = lines
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("TIMEOUT:"))
        .collect();
    let tail = &kernel[kernel.len().saturating_sub(expected.len())..];
    if tail.len() == expected.len() && tail.iter().zip(expected).all(|(l, e)| l.ends_with(e)) {
        Ok(())
    } else {
        Err(format!(
            "the last lines are {tail:?}, not ending with {expected:?}"
        ))
    }
}
