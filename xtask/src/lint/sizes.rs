//! The sizes lint: the repository's Rust (every `.rs` file outside `target/`
//! and hidden folders) stays in pieces a reader can hold.
//!
//! - No function is longer than [`MAX_FUNCTION_LINES`] lines, counted from
//!   the line of its `fn` to the line of its closing brace, tests included.
//!   Braces are counted in code only ([`super::code_only`]), so a brace in a
//!   string, a raw string or a comment does not count.
//! - No file longer than [`MAX_FILE_LINES`] lines, test files aside (a
//!   `tests.rs`, a `*_tests.rs`, or any file under a `tests/` folder), goes
//!   without a line starting [`REASON`] in its leading doc comment: a long
//!   file is one concept that reads best whole, and says so.
//! - A module with children is `x/mod.rs`, never `x.rs` beside a folder
//!   `x/` (only folders holding `.rs` files count, so a folder of test data
//!   beside a test file is no module).
//!
//! A failure names the file and line, the function and its length; the file
//! and its length; or the `x.rs` and the `x/`.

use std::path::Path;

/// The longest a function may be, in lines.
pub const MAX_FUNCTION_LINES: usize = 150;

/// The longest a non-test file may be, in lines, without a reason.
pub const MAX_FILE_LINES: usize = 800;

/// How the reason for a long file starts, in its leading doc comment.
pub const REASON: &str = "//! Why this file is long:";

/// What the lint counted where it found nothing wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct Counts {
    /// Functions read, each within [`MAX_FUNCTION_LINES`].
    pub functions: usize,
    /// Non-test files over [`MAX_FILE_LINES`], each with its reason.
    pub long_files: usize,
}

/// Checks the Rust under `root`: the counts, or one line per function too
/// long, per long file without its reason and per `x.rs` beside `x/`.
pub fn check(root: &Path) -> Result<Counts, String> {
    let files = super::rust_sources(root, root)?;
    let (counts, failures) = check_sources(&files);
    if failures.is_empty() {
        Ok(counts)
    } else {
        Err(format!(
            "{} size violation(s) (ARCHITECTURE.md, \"Rules\"):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

/// Checks `files` (each a path from the root, `/`-separated, and its text):
/// what was counted, and the failures.
pub fn check_sources(files: &[(String, String)]) -> (Counts, Vec<String>) {
    let mut counts = Counts {
        functions: 0,
        long_files: 0,
    };
    let mut failures = Vec::new();
    for (path, text) in files {
        for function in functions(&super::code_only(text)) {
            counts.functions += 1;
            if function.lines > MAX_FUNCTION_LINES {
                failures.push(format!(
                    "{path}:{}: fn {} is {} lines (at most {MAX_FUNCTION_LINES}): split it into functions that each own one step",
                    function.line, function.name, function.lines
                ));
            }
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES && !is_test_file(path) {
            if has_reason(text) {
                counts.long_files += 1;
            } else {
                failures.push(format!(
                    "{path}: {lines} lines (over {MAX_FILE_LINES}) and no `{REASON}` line in its leading doc comment: split it along a seam, or say why it reads best whole"
                ));
            }
        }
    }
    failures.extend(module_pairs(files.iter().map(|(path, _)| path.as_str())));
    (counts, failures)
}

/// One function found in code: where its `fn` stands, its name, and its
/// length in lines.
#[derive(Debug, PartialEq, Eq)]
struct Function {
    line: usize,
    name: String,
    lines: usize,
}

/// The functions with a body in `code` (comments and literals blanked):
/// every `fn NAME`, nested ones too, from its line to its closing brace's.
/// A `fn` with no name (a function pointer type) or no body (a trait's
/// declaration) is none.
fn functions(code: &str) -> Vec<Function> {
    let chars: Vec<char> = code.chars().collect();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut line = 1;
    for at in 0..chars.len() {
        if chars[at] == '\n' {
            line += 1;
            continue;
        }
        let keyword = chars[at] == 'f'
            && chars.get(at + 1) == Some(&'n')
            && chars.get(at + 2).is_some_and(|c| c.is_whitespace())
            && (at == 0 || !is_word(chars[at - 1]));
        if !keyword {
            continue;
        }
        let mut scan = at + 2;
        while chars.get(scan).is_some_and(|c| c.is_whitespace()) {
            scan += 1;
        }
        if chars.get(scan) == Some(&'r') && chars.get(scan + 1) == Some(&'#') {
            scan += 2;
        }
        let name_start = scan;
        while chars.get(scan).is_some_and(|&c| is_word(c)) {
            scan += 1;
        }
        if scan == name_start {
            continue;
        }
        let name: String = chars[name_start..scan].iter().collect();
        if let Some(end_line) = body_end(&chars, scan, line) {
            out.push(Function {
                line,
                name,
                lines: end_line - line + 1,
            });
        }
    }
    out
}

/// The line of the brace closing the body that follows `from` (the end of
/// a function's name, on line `line`), or `None` if a `;` outside brackets
/// comes first: a declaration with no body.
fn body_end(chars: &[char], from: usize, mut line: usize) -> Option<usize> {
    let mut brackets = 0usize;
    let mut braces = 0usize;
    for &c in &chars[from..] {
        match c {
            '\n' => line += 1,
            '(' | '[' if braces == 0 => brackets += 1,
            ')' | ']' if braces == 0 => brackets = brackets.saturating_sub(1),
            ';' if braces == 0 && brackets == 0 => return None,
            '{' if brackets == 0 => braces += 1,
            '}' if brackets == 0 && braces > 0 => {
                braces -= 1;
                if braces == 0 {
                    return Some(line);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `path` is a test file, which may be long: `tests.rs`,
/// `*_tests.rs`, or any file under a `tests/` folder.
fn is_test_file(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs") || parts.contains(&"tests")
}

/// Whether the leading doc comment of `text` (its first lines that are
/// `//!` or blank) holds a line starting [`REASON`].
fn has_reason(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .take_while(|line| line.is_empty() || line.starts_with("//!"))
        .any(|line| line.starts_with(REASON))
}

/// One failure per `x.rs` beside a folder `x/` holding `.rs` files, among
/// `paths` (the repository's Rust files).
fn module_pairs<'a>(paths: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
    let mut failures = Vec::new();
    for path in paths.clone() {
        let Some(stem) = path.strip_suffix(".rs") else {
            continue;
        };
        let folder = format!("{stem}/");
        if paths.clone().any(|other| other.starts_with(&folder)) {
            failures.push(format!(
                "{path} beside the folder {folder}: a module with children is {folder}mod.rs"
            ));
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sources: &[(&str, String)]) -> Vec<(String, String)> {
        sources
            .iter()
            .map(|(path, text)| (path.to_string(), text.clone()))
            .collect()
    }

    /// A function of `lines` lines, from its `fn` line to its closing brace.
    fn function(name: &str, lines: usize) -> String {
        assert!(lines >= 2);
        let mut text = format!("fn {name}() {{\n");
        for k in 0..lines - 2 {
            text.push_str(&format!("    let _x{k} = {k};\n"));
        }
        text.push_str("}\n");
        text
    }

    #[test]
    fn a_function_of_151_lines_is_refused_and_one_of_150_passes() {
        let text = format!("{}\n{}", function("short", 150), function("long", 151));
        let (counts, failures) = check_sources(&files(&[("sim/src/a.rs", text)]));
        assert_eq!(counts.functions, 2);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].starts_with("sim/src/a.rs:152: fn long is 151 lines (at most 150)"),
            "{}",
            failures[0]
        );
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_count() {
        let text = "fn quoted() {\n    let a = format!(\"}}{{}} {}\", 1);\n    let b = r#\"}\"#;\n    // }\n    let c = '}';\n    inner();\n}\n\nfn inner() {}\n";
        assert_eq!(
            functions(&crate::lint::code_only(text)),
            [
                Function {
                    line: 1,
                    name: "quoted".into(),
                    lines: 7
                },
                Function {
                    line: 9,
                    name: "inner".into(),
                    lines: 1
                },
            ]
        );
    }

    #[test]
    fn declarations_and_function_pointers_are_no_functions() {
        let text = "trait T {\n    fn f(x: [u8; 4]);\n    fn g(&self) -> u8 {\n        0\n    }\n}\ntype P = fn(u8) -> u8;\n";
        assert_eq!(
            functions(&crate::lint::code_only(text)),
            [Function {
                line: 3,
                name: "g".into(),
                lines: 3
            }]
        );
    }

    #[test]
    fn a_file_of_801_lines_needs_its_reason_and_a_test_file_does_not() {
        let long = "//! A module.\n".to_string() + &"\n".repeat(800);
        let with_reason = format!("//! A module.\n{REASON} one table.\n") + &"\n".repeat(799);
        let at_800 = "//! A module.\n".to_string() + &"\n".repeat(799);
        let (counts, failures) = check_sources(&files(&[
            ("sched/src/long.rs", long.clone()),
            ("sched/src/reasoned.rs", with_reason),
            ("sched/src/at_800.rs", at_800),
            ("sched/src/fair/tests.rs", long.clone()),
            ("sched/src/fair/throttle_tests.rs", long.clone()),
            ("devicetree/tests/fuzz.rs", long),
        ]));
        assert_eq!(counts.long_files, 1);
        assert_eq!(
            failures,
            [format!(
                "sched/src/long.rs: 801 lines (over 800) and no `{REASON}` line in its leading doc comment: split it along a seam, or say why it reads best whole"
            )]
        );
    }

    #[test]
    fn the_reason_counts_only_in_the_leading_doc_comment() {
        assert!(has_reason(&format!("//! A module.\n//!\n{REASON} x.\n")));
        assert!(!has_reason(&format!(
            "//! A module.\n\nuse a;\n{REASON} x.\n"
        )));
    }

    #[test]
    fn x_rs_beside_a_folder_x_is_refused() {
        let (_, failures) = check_sources(&files(&[
            ("sched/src/rt.rs", String::new()),
            ("sched/src/rt/queue.rs", String::new()),
            ("sched/src/pelt/mod.rs", String::new()),
            ("sched/src/pelt/sum.rs", String::new()),
            // A folder of data beside a test file holds no `.rs`: no module.
            ("devicetree/tests/fixtures.rs", String::new()),
        ]));
        assert_eq!(
            failures,
            [
                "sched/src/rt.rs beside the folder sched/src/rt/: a module with children is sched/src/rt/mod.rs"
            ]
        );
    }

    #[test]
    fn the_repository_keeps_its_sizes() {
        let root = crate::run::board::workspace_root();
        if let Err(error) = check(&root) {
            panic!("{error}");
        }
    }
}
