//! The citation checks: every section the code and docs cite exists in `docs/`, and
//! every Markdown file they name exists in the repository ([`check_files`]).
//!
//! Doc comments cite Linux's scheduler rules by section of the repository's own
//! reference, `docs/linux-sched-reference.md`: `§2.7` names its heading `2.7`, and
//! `Appendix A §5` (or `§A.5`) its appendix heading `A.5`. This scans every `.rs`
//! and `.md` file of the repository (not `target/`, hidden directories, the
//! reference itself or this file) and reports each citation with no such heading, as
//! `file:line: §N.M`.
//!
//! ```text
//!   "… (§2.7, §9)."        -> 2.7, 9      "### 2.7 Group …"  -> 2.7
//!   "Appendix A §5 …"      -> A.5         "### A.5 Weights …" -> A.5
//!   "§2.3." "§2.8's" "§1.4/§1.5:" "§2.2–§2.7"  -> the numbers, punctuation dropped
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The reference every `§` cites, relative to the workspace root.
pub const REFERENCE: &str = "docs/linux-sched-reference.md";

/// Files not scanned: the reference (its own cross-references are its business)
/// and this file, whose examples and tests cite sections that do not exist.
const NOT_SCANNED: [&str; 2] = [REFERENCE, "xtask/src/lint/citations.rs"];

/// The section numbers of a Markdown file's headings: the first word of each
/// `#` heading outside code fences, without a trailing `.` or `:`, when it is a
/// section number (`2`, `2.7`, `A.5`).
pub fn headings(markdown: &str) -> BTreeSet<String> {
    let mut sections = BTreeSet::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !line.starts_with('#') {
            continue;
        }
        let word = line
            .trim_start_matches('#')
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches(['.', ':']);
        if is_section_number(word) {
            sections.insert(word.to_string());
        }
    }
    sections
}

/// `2`, `2.7`, `5.1.2` or `A.5`: digits separated by single dots, optionally
/// after `A.`.
fn is_section_number(word: &str) -> bool {
    let digits = word.strip_prefix("A.").unwrap_or(word);
    !digits.is_empty()
        && digits
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// The citations of one file's text: (line, section) for each `§`, 1-based
/// lines. A `§` right after `Appendix A ` names the appendix section `A.N`. A `§`
/// with no number after it gives an empty section, which never resolves.
pub fn citations(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices('§') {
            let rest = &line[at + '§'.len_utf8()..];
            let mut number = String::new();
            if let Some(after) = rest.strip_prefix("A.") {
                number.push_str("A.");
                number.push_str(&leading_number(after));
                if number == "A." {
                    number.clear();
                }
            } else {
                number = leading_number(rest);
                if !number.is_empty() && line[..at].ends_with("Appendix A ") {
                    number.insert_str(0, "A.");
                }
            }
            found.push((index + 1, number));
        }
    }
    found
}

/// The longest prefix of `text` of the form `digits(.digits)*`; a dot not
/// followed by a digit (the end of a sentence) is not part of it.
fn leading_number(text: &str) -> String {
    let bytes = text.as_bytes();
    let digits_from = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        at
    };
    let mut end = digits_from(0);
    if end == 0 {
        return String::new();
    }
    while end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit() {
        end = digits_from(end + 1);
    }
    text[..end].to_string()
}

/// Checks `files` (name, text) against the reference's text: returns how many
/// citations were checked, and one `name:line: §N: ...` line per citation that
/// names no heading.
pub fn unresolved(reference: &str, files: &[(String, String)]) -> (usize, Vec<String>) {
    let sections = headings(reference);
    let mut checked = 0;
    let mut missing = Vec::new();
    for (name, text) in files {
        for (line, section) in citations(text) {
            checked += 1;
            if section.is_empty() {
                missing.push(format!(
                    "{name}:{line}: a § with no section number after it"
                ));
            } else if !sections.contains(&section) {
                let shown = match section.strip_prefix("A.") {
                    Some(n) => format!("Appendix A §{n}"),
                    None => format!("§{section}"),
                };
                missing.push(format!(
                    "{name}:{line}: {shown}: no heading {section} in {REFERENCE}"
                ));
            }
        }
    }
    (checked, missing)
}

/// Checks every citation of the repository at `root`: the number checked, or
/// the list of those that do not resolve.
pub fn check(root: &Path) -> Result<usize, String> {
    let reference_path = root.join(REFERENCE);
    let reference = std::fs::read_to_string(&reference_path)
        .map_err(|e| format!("{}: {e}", reference_path.display()))?;
    let files: Vec<(String, String)> = sources(root)?
        .into_iter()
        .filter(|(path, _)| !NOT_SCANNED.iter().any(|skip| *path == root.join(skip)))
        .map(|(path, text)| (shown(root, &path), text))
        .collect();
    let (checked, missing) = unresolved(&reference, &files);
    verdict("§ citations", checked, &missing)
}

/// The `.rs` and `.md` files under `root` (skipping `target` and hidden
/// folders), with their text.
fn sources(root: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    super::files_under(root, &[".rs", ".md"])?
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((path, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect()
}

/// `path` relative to `root`, for messages.
fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The number checked, or the list of `what` that do not resolve.
fn verdict(what: &str, checked: usize, missing: &[String]) -> Result<usize, String> {
    if missing.is_empty() {
        Ok(checked)
    } else {
        Err(format!(
            "{} of {checked} {what} do not resolve:\n{}",
            missing.len(),
            missing.join("\n")
        ))
    }
}

/// The Markdown files a text names (`docs/icount.md`, `README.md`, `[x](eas.md#a)`),
/// with their line numbers: words ending in `.md` made of path characters, not in a
/// URL, without a trailing anchor.
pub fn file_references(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let is_path_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-');
    for (index, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        for (at, _) in line.match_indices(".md") {
            let end = at + 3;
            // `.md` ends the word (not `.mdx`, not `foo.md5`).
            if bytes
                .get(end)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
            {
                continue;
            }
            let mut start = at;
            while start > 0 && is_path_byte(bytes[start - 1]) {
                start -= 1;
            }
            let word = &line[start..end];
            // A URL's path (`https://host/x.md`) or a pattern (`lab*.md`) names no file here.
            let before = &line[..start];
            // A word from `/` is the tail of a path built in code (`concat!(dir, "/x.md")`).
            if word.starts_with('/') || before.ends_with(':') || before.ends_with('*') {
                continue;
            }
            let word = word.trim_start_matches("./");
            if word.len() > 3 && !word.starts_with('.') {
                found.push((index + 1, word.to_string()));
            }
        }
    }
    found
}

/// Checks that every Markdown file the repository's `.rs` and `.md` files name
/// exists, from the workspace root or from the naming file's folder; returns the
/// number checked, or the list of those that do not resolve (`file:line: name`).
pub fn check_files(root: &Path) -> Result<usize, String> {
    let mut checked = 0;
    let mut missing = Vec::new();
    for (path, text) in sources(root)? {
        if path == root.join("xtask/src/lint/citations.rs") {
            continue;
        }
        let folder = path.parent().unwrap_or(root);
        for (line, name) in file_references(&text) {
            checked += 1;
            if !root.join(&name).is_file() && !folder.join(&name).is_file() {
                missing.push(format!("{}:{line}: {name}", shown(root, &path)));
            }
        }
    }
    verdict("file references", checked, &missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_reference_forms() {
        let text = "/// See docs/icount.md, \"One vCPU\"; [eas](eas.md#verdicts) and README.md.\n\
                    https://example.org/x.md and lab*.md and notes.mdx and ./ARCHITECTURE.md\n\
                    concat!(dir, \"/README.md\")";
        let found: Vec<(usize, String)> = file_references(text);
        let expect = [
            (1, "docs/icount.md"),
            (1, "eas.md"),
            (1, "README.md"),
            (2, "ARCHITECTURE.md"),
        ];
        let expect: Vec<(usize, String)> =
            expect.iter().map(|&(l, s)| (l, s.to_string())).collect();
        assert_eq!(found, expect);
    }

    const REFERENCE_TEXT: &str = "# Title\n\n## 2. PELT\n\n### 2.7 Group propagation\n\n\
        ```text\n### 3.1 inside a fence\n```\n\n## Appendix A: vectors\n\n### A.5 Weights\n";

    #[test]
    fn headings_are_section_numbers() {
        let sections: Vec<_> = headings(REFERENCE_TEXT).into_iter().collect();
        assert_eq!(sections, ["2", "2.7", "A.5"]);
    }

    #[test]
    fn citation_forms() {
        let text = "/// §2.7. And §2.8's; §1.4/§1.5: §2.2–§2.7\n\
                    // Appendix A §5, §A.6 and §9 and §5.1.2\n§ alone";
        let found: Vec<_> = citations(text).into_iter().collect();
        let expect = [
            (1, "2.7"),
            (1, "2.8"),
            (1, "1.4"),
            (1, "1.5"),
            (1, "2.2"),
            (1, "2.7"),
            (2, "A.5"),
            (2, "A.6"),
            (2, "9"),
            (2, "5.1.2"),
            (3, ""),
        ];
        let expect: Vec<_> = expect.iter().map(|&(l, s)| (l, s.to_string())).collect();
        assert_eq!(found, expect);
    }

    #[test]
    fn one_resolves_one_does_not() {
        let files = vec![(
            "sched/src/a.rs".to_string(),
            "//! Group shares (§2.7).\n/// Idle weight (§3.1).\n".to_string(),
        )];
        let (checked, missing) = unresolved(REFERENCE_TEXT, &files);
        assert_eq!(checked, 2);
        assert_eq!(
            missing,
            [format!(
                "sched/src/a.rs:2: §3.1: no heading 3.1 in {REFERENCE}"
            )]
        );
    }

    #[test]
    fn appendix_citations_resolve_against_appendix_headings() {
        let files = vec![(
            "t.rs".to_string(),
            "// Appendix A §5 and §A.5 resolve; Appendix A §2 does not.\n".to_string(),
        )];
        let (checked, missing) = unresolved(REFERENCE_TEXT, &files);
        assert_eq!(checked, 3);
        assert_eq!(
            missing,
            [format!(
                "t.rs:1: Appendix A §2: no heading A.2 in {REFERENCE}"
            )]
        );
    }

    /// The repository itself: every citation resolves (also a step of
    /// `cargo xtask lint`).
    #[test]
    fn repository_citations_resolve() {
        let checked = check(&crate::run::board::workspace_root()).unwrap_or_else(|e| panic!("{e}"));
        assert!(checked > 0);
    }
}
