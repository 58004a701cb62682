//! `cargo xtask lint`: the repository's own checks of its text (section
//! citations and Markdown file names resolve, xtask's folders import down
//! their layers, the kernel's files stand in their floors, functions and
//! files keep their sizes), then rustfmt and clippy.

pub mod citations;
pub mod floors;
pub mod layers;
pub mod sizes;

use crate::run::board::workspace_root;
use crate::run::build::cargo;

/// `cargo xtask lint`: the section-citation check ([`citations`]), the
/// layers of xtask's folders ([`layers`]), the kernel's floors
/// ([`floors`]), the sizes of functions and files ([`sizes`]), then rustfmt
/// and clippy with `-D warnings`, host and aarch64.
pub fn run() -> Result<(), String> {
    eprintln!(
        "xtask: section citations resolve in {}",
        citations::REFERENCE
    );
    let checked = citations::check(&workspace_root())?;
    eprintln!("xtask: {checked} section citations resolve");
    let files = citations::check_files(&workspace_root())?;
    eprintln!("xtask: {files} references to Markdown files resolve");
    let imports = layers::check(&workspace_root())?;
    eprintln!("xtask: {imports} imports between xtask's folders follow its layers (main.rs)");
    eprintln!("xtask: the kernel's floors (src/: every import points down, no circles)");
    let kernel_imports = floors::check(&workspace_root())?;
    eprintln!("xtask: {kernel_imports} imports between kernel files point down");
    let sizes = sizes::check(&workspace_root())?;
    eprintln!(
        "xtask: {} functions within {} lines; {} files over {} lines, each with its reason",
        sizes.functions,
        sizes::MAX_FUNCTION_LINES,
        sizes.long_files,
        sizes::MAX_FILE_LINES
    );
    eprintln!("xtask: cargo fmt --check");
    cargo(&["fmt", "--all", "--", "--check"])?;
    eprintln!("xtask: clippy (host)");
    let mut clippy_host = vec!["clippy", "--quiet", "--target", "host-tuple"];
    clippy_host.extend(crate::run::build::HOST_PACKAGES);
    clippy_host.extend(["--all-targets", "--", "-D", "warnings"]);
    cargo(&clippy_host)?;
    eprintln!("xtask: clippy (aarch64-unknown-none-softfloat)");
    let deny = ["--", "-D", "warnings"];
    cargo(
        &[
            &["clippy", "--quiet", "--package", "fairway", "--all-targets"],
            &deny[..],
        ]
        .concat(),
    )?;
    cargo(
        &[
            &[
                "clippy",
                "--quiet",
                "--package",
                "fairway-sched",
                "--package",
                "fairway-contract",
            ],
            &deny[..],
        ]
        .concat(),
    )?;
    eprintln!("xtask: clippy (aarch64, costs compiled out)");
    cargo(
        &[
            &[
                "clippy",
                "--quiet",
                "--package",
                "fairway",
                "--no-default-features",
            ],
            &deny[..],
        ]
        .concat(),
    )?;
    eprintln!("xtask: clippy (aarch64, trace events compiled in)");
    cargo(
        &[
            &[
                "clippy",
                "--quiet",
                "--package",
                "fairway",
                "--no-default-features",
                "--features",
                "trace",
            ],
            &deny[..],
        ]
        .concat(),
    )?;
    Ok(())
}

/// The files under `dir` whose names end in one of `endings`, sorted,
/// skipping `target` and hidden folders: what each lint reads.
pub fn files_under(
    dir: &std::path::Path,
    endings: &[&str],
) -> Result<Vec<std::path::PathBuf>, String> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries =
            std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    folders.push(path);
                }
            } else if endings.iter().any(|ending| name.ends_with(ending)) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The `.rs` files under `dir` with their text, each named by its path
/// from `named_from` with `/` separators: what the floors, sizes and layers
/// lints read.
pub fn rust_sources(
    dir: &std::path::Path,
    named_from: &std::path::Path,
) -> Result<Vec<(String, String)>, String> {
    files_under(dir, &[".rs"])?
        .into_iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let shown = path
                .strip_prefix(named_from)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            Ok((shown, text))
        })
        .collect()
}

/// `text` with comments, string and character literals blanked (newlines
/// kept, so lines still count): doc links and strings name no import. Both
/// import lints read code through it.
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                out.push(' ');
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while at < chars.len() {
                if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    at += 2;
                } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[at]));
                    at += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (at == 0
                || chars[at - 1] == 'b'
                || !(chars[at - 1].is_alphanumeric() || chars[at - 1] == '_'))
        {
            // A raw string: r"…", r#"…"#.
            let mut hashes = 0;
            let mut scan = at + 1;
            while chars.get(scan) == Some(&'#') {
                hashes += 1;
                scan += 1;
            }
            if chars.get(scan) != Some(&'"') {
                out.push(c);
                at += 1;
                continue;
            }
            for _ in at..=scan {
                out.push(' ');
            }
            at = scan + 1;
            while at < chars.len() {
                if chars[at] == '"' && (1..=hashes).all(|k| chars.get(at + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    at += hashes + 1;
                    break;
                }
                out.push(blank(chars[at]));
                at += 1;
            }
        } else if c == '"' {
            out.push(' ');
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                if chars[at] == '\\' {
                    out.push(' ');
                    at += 1;
                }
                if at < chars.len() {
                    out.push(blank(chars[at]));
                    at += 1;
                }
            }
            out.push(' ');
            at += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'); a lifetime stays.
            let literal_end = if next == Some('\\') {
                chars
                    .get(at + 3..)
                    .and_then(|rest| rest.iter().position(|&c| c == '\''))
                    .map(|k| at + 3 + k)
            } else if chars.get(at + 2) == Some(&'\'') {
                Some(at + 2)
            } else {
                None
            };
            match literal_end {
                Some(end) => {
                    for _ in at..=end {
                        out.push(' ');
                    }
                    at = end + 1;
                }
                None => {
                    out.push(c);
                    at += 1;
                }
            }
        } else {
            out.push(c);
            at += 1;
        }
    }
    out
}
