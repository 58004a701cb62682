//! The layers of xtask's folders (written out in `main.rs`): each top-level
//! module may import only the modules below it, so that no two import each
//! other. This reads every file of `xtask/src` and reports each import that
//! points up or sideways, as `file:line: crate::NAME`.
//!
//! An import is a path that reaches the crate root: `crate::NAME`,
//! `crate::{A, B}`, or `super::` climbing out of the file's top-level module
//! (an inline `mod NAME { ... }` counts as one level). Comments, strings and
//! character literals are not read. `NAME` is a top-level module (a folder
//! with its `mod.rs`, or a file beside `main.rs`) or else an item of
//! `main.rs`, the dispatch, which nothing may import.

use std::path::{Path, PathBuf};

/// Each top-level module and the top-level modules it may import besides
/// itself; `main.rs` may import any. A module missing here is an error: a
/// new folder takes its place in the layers first.
pub const ALLOWED: [(&str, &[&str]); 6] = [
    ("test", &["lint", "experiments", "hil", "run", "plot"]),
    ("lint", &["run"]),
    ("experiments", &["run"]),
    ("hil", &["run"]),
    ("run", &["plot"]),
    ("plot", &[]),
];

/// What an import names at the crate root.
const DISPATCH: &str = "main.rs";

/// A token of code: an identifier or keyword, `::`, or one other character.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Word(&'a str),
    Path,
    Other(char),
}

/// The tokens of `code` (no comments or literals) with their line numbers.
fn tokens(code: &str) -> Vec<(usize, Token<'_>)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut rest = code.char_indices().peekable();
    while let Some((at, c)) = rest.next() {
        if c == '\n' {
            line += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let mut end = at + c.len_utf8();
            while let Some(&(next_at, next)) = rest.peek() {
                if !(next.is_alphanumeric() || next == '_') {
                    break;
                }
                end = next_at + next.len_utf8();
                rest.next();
            }
            out.push((line, Token::Word(&code[at..end])));
        } else if c == ':' && rest.peek().map(|&(_, n)| n) == Some(':') {
            rest.next();
            out.push((line, Token::Path));
        } else if !c.is_whitespace() {
            out.push((line, Token::Other(c)));
        }
    }
    out
}

/// The names at the crate root that the file imports, with their lines:
/// `depth` is how deep its module is (`main.rs` 0, `run/mod.rs` 1,
/// `run/qemu/mod.rs` 2). A glob of the root (`super::*` from a top-level
/// module) is named `*`.
fn root_imports(text: &str, depth: usize) -> Vec<(usize, String)> {
    let code = super::code_only(text);
    let tokens = tokens(&code);
    let word = |i: usize| match tokens.get(i) {
        Some((_, Token::Word(w))) => Some(*w),
        _ => None,
    };
    let is = |i: usize, token: &Token| tokens.get(i).map(|(_, t)| t) == Some(token);
    // The names a path names after its root, from token `i` on: one name,
    // `*`, or the first name of each member of a `{ ... }` group.
    let names_at = |i: usize| -> Vec<String> {
        if let Some(name) = word(i) {
            return vec![name.to_string()];
        }
        if is(i, &Token::Other('*')) {
            return vec!["*".to_string()];
        }
        if !is(i, &Token::Other('{')) {
            return Vec::new();
        }
        let mut names = Vec::new();
        let (mut nesting, mut member_start) = (0, true);
        for (_, token) in &tokens[i + 1..] {
            match token {
                Token::Other('{') => nesting += 1,
                Token::Other('}') if nesting == 0 => break,
                Token::Other('}') => nesting -= 1,
                Token::Other(',') if nesting == 0 => member_start = true,
                Token::Word(name) if member_start && nesting == 0 => {
                    names.push(name.to_string());
                    member_start = false;
                }
                Token::Other('*') if member_start && nesting == 0 => {
                    names.push("*".to_string());
                    member_start = false;
                }
                _ => member_start = false,
            }
        }
        names
    };
    let mut imports = Vec::new();
    // Open braces: whether each opened an inline module.
    let mut braces: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let line = tokens[i].0;
        match &tokens[i].1 {
            Token::Other('{') => {
                let inline_module = i >= 2 && word(i - 2) == Some("mod") && word(i - 1).is_some();
                braces.push(inline_module);
            }
            Token::Other('}') => {
                braces.pop();
            }
            Token::Word("crate") if is(i + 1, &Token::Path) => {
                for name in names_at(i + 2) {
                    imports.push((line, name));
                }
            }
            Token::Word("super")
                if is(i + 1, &Token::Path) && !is(i.wrapping_sub(1), &Token::Path) =>
            {
                let mut climbed = 0;
                let mut j = i;
                while word(j) == Some("super") && is(j + 1, &Token::Path) {
                    climbed += 1;
                    j += 2;
                }
                let here = depth + braces.iter().filter(|&&inline| inline).count();
                if climbed >= here {
                    for name in names_at(j) {
                        imports.push((line, name));
                    }
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    imports
}

/// The file's top-level module (`None` for `main.rs`) and its module depth.
fn module_of(relative: &Path) -> (Option<String>, usize) {
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && parts[0] == DISPATCH {
        return (None, 0);
    }
    let top = parts[0].trim_end_matches(".rs").to_string();
    let last = parts.last().map_or("", String::as_str);
    let depth = if last == "mod.rs" {
        parts.len() - 1
    } else {
        parts.len()
    };
    (Some(top), depth)
}

/// Checks the imports of the files `(path relative to the source folder,
/// text)`; returns the number of imports between top-level modules, or the
/// list of those against the layers.
pub fn check_sources(files: &[(PathBuf, String)]) -> Result<usize, String> {
    let modules: Vec<String> = files
        .iter()
        .filter_map(|(path, _)| module_of(path).0)
        .collect();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in files {
        let (Some(from), depth) = module_of(path) else {
            continue;
        };
        let Some((_, allowed)) = ALLOWED.iter().find(|(name, _)| *name == from) else {
            wrong.push(format!(
                "{}: module {from} has no place in the layers (lint/layers.rs)",
                path.display()
            ));
            continue;
        };
        for (line, name) in root_imports(text, depth) {
            let target = if modules.contains(&name) {
                name.as_str()
            } else {
                DISPATCH
            };
            if target == from {
                continue;
            }
            checked += 1;
            if !allowed.contains(&target) {
                let shown = if target == DISPATCH {
                    format!("{name} (of {DISPATCH}, the dispatch)")
                } else {
                    name.clone()
                };
                wrong.push(format!(
                    "{}:{line}: crate::{shown}: {from} may import only {}",
                    path.display(),
                    if allowed.is_empty() {
                        "itself".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
    }
    if wrong.is_empty() {
        Ok(checked)
    } else {
        Err(format!(
            "{} imports against the layers of xtask/src (main.rs):\n  {}",
            wrong.len(),
            wrong.join("\n  ")
        ))
    }
}

/// Checks `xtask/src` of the workspace at `root`; returns the number of
/// imports between its top-level modules.
pub fn check(root: &Path) -> Result<usize, String> {
    let source = root.join("xtask/src");
    let files: Vec<(PathBuf, String)> = super::rust_sources(&source, &source)?
        .into_iter()
        .map(|(shown, text)| (PathBuf::from(shown), text))
        .collect();
    check_sources(&files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> (PathBuf, String) {
        (PathBuf::from(path), text.to_string())
    }

    /// The smallest tree: every module of the layers, empty.
    fn tree(extra: &[(PathBuf, String)]) -> Vec<(PathBuf, String)> {
        let mut files = vec![file("main.rs", "mod run; mod test; use crate::test::run;")];
        for (module, _) in ALLOWED {
            files.push(file(&format!("{module}/mod.rs"), ""));
        }
        files.extend(extra.iter().cloned());
        files
    }

    #[test]
    fn comments_strings_and_characters_are_not_code() {
        let text = "let a = \"crate::test\"; // crate::hil\nlet b = '\"'; /* crate::x */ \
                    let c = r#\"crate::y\"#; let d = '{'; fn f<'a>(x: &'a str) {}";
        let code = crate::lint::code_only(text);
        assert!(!code.contains("crate"), "{code}");
        assert!(code.contains("fn f<'a>(x: &'a str) {}"), "{code}");
        assert_eq!(code.lines().count(), text.lines().count());
    }

    #[test]
    fn paths_that_reach_the_root_are_found() {
        let text = "use crate::run::qemu;\nuse crate::{plot, test::Case};\n\
                    fn f() { crate::hil::run(); super::super::lint::run(); }\n\
                    mod tests { use super::*; }";
        let found: Vec<(usize, String)> = root_imports(text, 2);
        let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["run", "plot", "test", "hil", "lint"]);
        assert_eq!(found[3].0, 3);
        // From a top-level module's mod.rs one `super` reaches the root, but
        // not from inside its inline test module.
        let names: Vec<String> = root_imports("use super::usage;\nmod tests { use super::*; }", 1)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(names, ["usage"]);
    }

    #[test]
    fn imports_down_the_layers_pass() {
        let files = tree(&[
            file(
                "test/harness.rs",
                "use crate::run::qemu;\nuse crate::experiments::agree;",
            ),
            file("experiments/compare.rs", "use crate::run::{board, qemu};"),
            file(
                "run/tools.rs",
                "use crate::plot::FONTS;\nuse crate::run::board;",
            ),
        ]);
        assert_eq!(check_sources(&files), Ok(4));
    }

    #[test]
    fn an_import_up_or_sideways_fails_naming_file_and_line() {
        for (path, text, named) in [
            (
                "run/qemu.rs",
                "\nuse crate::test::Case;",
                "run/qemu.rs:2: crate::test",
            ),
            (
                "plot/draw.rs",
                "fn f() { crate::run::x(); }",
                "plot/draw.rs:1: crate::run",
            ),
            (
                "hil/mod.rs",
                "use crate::{run, test};",
                "hil/mod.rs:1: crate::test",
            ),
            ("experiments/a.rs", "use crate::hil::Load;", "crate::hil"),
            (
                "run/report/mod.rs",
                "use super::super::lint;",
                "crate::lint",
            ),
            (
                "run/runner.rs",
                "fn f() { crate::usage(); }",
                "crate::usage (of main.rs",
            ),
            (
                "lint/mod.rs",
                "use crate::test;",
                "lint may import only run",
            ),
        ] {
            let error = check_sources(&tree(&[file(path, text)])).unwrap_err();
            assert!(error.contains(named), "{path}: {error}");
        }
    }

    #[test]
    fn a_module_outside_the_layers_fails() {
        let error = check_sources(&tree(&[file("extra.rs", "")])).unwrap_err();
        assert!(error.contains("module extra has no place"), "{error}");
    }

    /// xtask's own tree follows its layers.
    #[test]
    fn xtask_follows_its_layers() {
        let checked = check(&crate::run::board::workspace_root()).unwrap();
        assert!(checked > 0);
    }
}
