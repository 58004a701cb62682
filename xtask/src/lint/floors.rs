//! The floors lint: the kernel's files (`src/**/*.rs`) import one way. Each
//! file belongs to a floor ([`FLOORS`]), and a file may name only files of
//! its own floor or of floors below it; inside the scheduling floor, a file
//! may name only files of a lower rank ([`SCHEDULING_RANKS`]: the wake-up,
//! the switch and the tick call down to the balancer and the door to the
//! driver, never across to each other); and no files import each other in a
//! circle, on any floor. ARCHITECTURE.md, "The kernel in floors", is the map.
//!
//! ```text
//!   workloads   src/workload/, src/main.rs, src/lib.rs         5
//!   boot        src/init.rs                                    4
//!   scheduling  src/scheduling/  (ranks 1-8 inside)            3
//!   tasks       src/tasks/                                     2
//!   observe     src/observe/                                   1
//!   platform    src/platform/, src/arch/, src/drivers/,        0
//!               src/config.rs, src/board.rs
//! ```
//!
//! An import is any path to another kernel file: `use crate::…`, `super::…`,
//! `self::…` or a child module's name, in a `use` tree or inline
//! (`crate::platform::percpu::of(cpu)`), outside comments and strings. A
//! path names the file of its longest module prefix, so a name a `mod.rs`
//! re-exports names that `mod.rs` (`crate::tasks::task` is `tasks/mod.rs`),
//! and `arch`'s re-exports of `aarch64`'s modules follow them
//! (`crate::arch::cpu` is `arch/aarch64/cpu.rs`). A failure names the file,
//! the line and the path, and the floors (or ranks) it crosses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The floors, lowest first.
pub const FLOOR_NAMES: [&str; 6] = [
    "platform",
    "observe",
    "tasks",
    "scheduling",
    "boot",
    "workloads",
];

/// Each file's floor: the first entry whose prefix the file's path (from the
/// repository root) starts with. A kernel file in none is an error: a new
/// folder or top-level file is given its floor here.
pub const FLOORS: [(&str, usize); 13] = [
    ("src/arch/", 0),
    ("src/drivers/", 0),
    ("src/platform/", 0),
    ("src/config.rs", 0),
    ("src/board.rs", 0),
    ("src/observe/", 1),
    ("src/tasks/", 2),
    ("src/scheduling/", 3),
    ("src/init.rs", 4),
    ("src/workload/", 5),
    ("src/main.rs", 5),
    ("src/lib.rs", 5),
    ("src/", usize::MAX),
];

/// The scheduling floor's files and their ranks: a file imports only files of
/// a lower rank (scheduling/mod.rs documents the picture).
pub const SCHEDULING_RANKS: [(&str, u8); 16] = [
    ("settings", 1),
    ("energy", 1),
    ("run_queue", 2),
    ("eas", 2),
    ("load", 3),
    ("observe", 3),
    ("groups", 4),
    ("pi", 4),
    ("cpufreq", 4),
    ("bandwidth", 4),
    ("balance", 5),
    ("wakeup", 6),
    ("switch", 6),
    ("tick", 6),
    ("sleep", 7),
    ("mod", 8),
];

/// Checks the kernel at `root` (its `src/`): the number of imports between
/// its files, or one line per import that points up or across, and per
/// circle.
pub fn check(root: &Path) -> Result<usize, String> {
    let files = super::rust_sources(&root.join("src"), root)?;
    let (imports, failures) = check_sources(&files);
    if failures.is_empty() {
        Ok(imports)
    } else {
        Err(format!(
            "{} floor violation(s) (ARCHITECTURE.md, \"The kernel in floors\"):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

/// One kernel file's place: its floor and, on the scheduling floor, its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    floor: usize,
    rank: Option<u8>,
}

/// Where `file` (a path from the root) stands, or why it has no place.
fn place(file: &str) -> Result<Place, String> {
    let floor = FLOORS
        .iter()
        .find(|(prefix, _)| file.starts_with(prefix))
        .map(|&(_, floor)| floor)
        .filter(|&floor| floor != usize::MAX)
        .ok_or_else(|| {
            format!("{file}: in no floor: give it one in xtask/src/floors.rs, FLOORS")
        })?;
    let rank = if FLOOR_NAMES[floor] == "scheduling" {
        let stem = file
            .strip_prefix("src/scheduling/")
            .and_then(|rest| rest.strip_suffix(".rs"))
            .unwrap_or(file);
        let rank = SCHEDULING_RANKS
            .iter()
            .find(|(name, _)| *name == stem)
            .map(|&(_, rank)| rank)
            .ok_or_else(|| {
                format!("{file}: no rank in the scheduling floor: give it one in xtask/src/floors.rs, SCHEDULING_RANKS")
            })?;
        Some(rank)
    } else {
        None
    };
    Ok(Place { floor, rank })
}

/// `file`'s module path: `src/lib.rs` is the crate, `src/a/mod.rs` and
/// `src/a.rs` are `a`, `src/a/b.rs` is `a::b`. `None` for `src/main.rs`, a
/// crate of its own.
fn module_of(file: &str) -> Option<Vec<String>> {
    let inner = file.strip_prefix("src/")?.strip_suffix(".rs")?;
    if inner == "main" {
        return None;
    }
    if inner == "lib" {
        return Some(Vec::new());
    }
    let mut parts: Vec<String> = inner.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    Some(parts)
}

/// Checks `files` (path from the root, text): the number of imports between
/// them, and one line per import that points up or across and per circle.
pub fn check_sources(files: &[(String, String)]) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut texts = Vec::new();
    for (file, text) in files {
        match place(file) {
            Ok(_) => {}
            Err(error) => failures.push(error),
        }
        let code = super::code_only(text);
        if let Some(module) = module_of(file) {
            modules.insert(module, file.clone());
        }
        texts.push((file.clone(), code));
    }
    let aliases = aliases(&texts, &modules);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut count = 0;
    for (file, code) in &texts {
        let Some(module) = module_of(file) else {
            continue;
        };
        let Ok(from) = place(file) else { continue };
        let children = child_modules(code);
        let mut seen = BTreeSet::new();
        for (line, path) in paths(code, &children) {
            let Some(absolute) = absolute(&module, &path, &children) else {
                continue;
            };
            let Some(target) = resolve(&absolute, &modules, &aliases) else {
                continue;
            };
            if target == *file || !seen.insert((line, target.clone())) {
                continue;
            }
            count += 1;
            edges
                .entry(file.clone())
                .or_default()
                .insert(target.clone());
            let Ok(to) = place(&target) else { continue };
            let written = path.join("::");
            if to.floor > from.floor {
                failures.push(format!(
                    "{file}:{line}: `{written}` points up a floor: {} ({}) imports {} ({target})",
                    FLOOR_NAMES[from.floor], file, FLOOR_NAMES[to.floor]
                ));
            } else if let (Some(mine), Some(theirs)) = (from.rank, to.rank)
                && theirs >= mine
            {
                let direction = if theirs == mine { "across" } else { "up" };
                failures.push(format!(
                    "{file}:{line}: `{written}` points {direction} in the scheduling floor: rank {mine} imports {target} (rank {theirs})"
                ));
            }
        }
    }
    for circle in circles(&edges) {
        failures.push(format!(
            "files that import each other in a circle: {}",
            circle.join(", ")
        ));
    }
    (count, failures)
}

/// The modules a `mod.rs` (or any file) re-exports under another name with
/// `pub use child::{a, b}` where `child::a` is a module file: `arch`'s
/// `pub use aarch64::{cpu, …}`. Maps the re-exported path to the module's.
fn aliases(
    texts: &[(String, String)],
    modules: &BTreeMap<Vec<String>, String>,
) -> BTreeMap<Vec<String>, Vec<String>> {
    let mut aliases = BTreeMap::new();
    for (file, code) in texts {
        let Some(module) = module_of(file) else {
            continue;
        };
        let children = child_modules(code);
        for (start, tree) in use_trees(code) {
            if !code[..start].trim_end().ends_with("pub") {
                continue;
            }
            for path in expand(&tree) {
                if let Some(absolute) = absolute(&module, &path, &children)
                    && modules.contains_key(&absolute)
                    && let Some(name) = path.last()
                {
                    let mut alias = module.clone();
                    alias.push(name.clone());
                    if alias != absolute {
                        aliases.insert(alias, absolute);
                    }
                }
            }
        }
    }
    aliases
}

/// The file `path` (absolute, from the crate) names: the file of its longest
/// module prefix, after re-exported modules are followed.
fn resolve(
    path: &[String],
    modules: &BTreeMap<Vec<String>, String>,
    aliases: &BTreeMap<Vec<String>, Vec<String>>,
) -> Option<String> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let Some((alias, target)) = aliases
            .iter()
            .filter(|(alias, _)| path.starts_with(alias))
            .max_by_key(|(alias, _)| alias.len())
        else {
            break;
        };
        let mut followed = target.clone();
        followed.extend_from_slice(&path[alias.len()..]);
        path = followed;
    }
    (0..=path.len())
        .rev()
        .find_map(|length| modules.get(&path[..length]).cloned())
}

/// `path` as written in `module` made absolute (from the crate), when it
/// names a kernel file: it starts with `crate`, `super`, `self` or the name
/// of one of the file's child modules.
fn absolute(
    module: &[String],
    path: &[String],
    children: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut absolute: Vec<String> = match first.as_str() {
        "crate" => path[1..].to_vec(),
        "self" => module.iter().chain(&path[1..]).cloned().collect(),
        "super" => {
            let supers = path.iter().take_while(|part| *part == "super").count();
            let base = module.len().checked_sub(supers)?;
            module[..base]
                .iter()
                .chain(&path[supers..])
                .cloned()
                .collect()
        }
        name if children.contains(name) => module.iter().chain(path).cloned().collect(),
        _ => return None,
    };
    if absolute.last().is_some_and(|last| last == "self") {
        absolute.pop();
    }
    Some(absolute)
}

/// The modules a file declares (`mod name;`, any visibility).
fn child_modules(code: &str) -> BTreeSet<String> {
    let mut children = BTreeSet::new();
    for line in code.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .collect();
        if let Some(at) = words.iter().position(|w| *w == "mod")
            && line.trim_end().ends_with(';')
            && words[..at]
                .iter()
                .all(|w| w.starts_with("pub") || w.starts_with('('))
            && let Some(name) = words.get(at + 1)
        {
            children.insert((*name).to_string());
        }
    }
    children
}

/// Every path of `code` that may name a kernel file, with its line: the
/// paths of its `use` trees, expanded, and inline paths (`a::b::c`) that
/// start with `crate`, `super`, `self` or a child module.
fn paths(code: &str, children: &BTreeSet<String>) -> Vec<(usize, Vec<String>)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut in_use = vec![false; code.len()];
    for (start, tree) in use_trees(code) {
        for path in expand(&tree) {
            found.push((line_of(start), path));
        }
        let end = start + code[start..].find(';').unwrap_or(code.len() - start);
        in_use[start..end].iter_mut().for_each(|byte| *byte = true);
    }
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = is_ident(bytes[at])
            && (at == 0
                || (!is_ident(bytes[at - 1]) && bytes[at - 1] != b':' && bytes[at - 1] != b'$'));
        if !starts_word || in_use[at] {
            at += 1;
            continue;
        }
        let mut parts = Vec::new();
        let mut end = at;
        loop {
            let word_start = end;
            while end < bytes.len() && is_ident(bytes[end]) {
                end += 1;
            }
            parts.push(code[word_start..end].to_string());
            if code[end..].starts_with("::") && end + 2 < bytes.len() && is_ident(bytes[end + 2]) {
                end += 2;
            } else {
                break;
            }
        }
        let first = parts[0].as_str();
        if parts.len() > 1
            && (matches!(first, "crate" | "super" | "self") || children.contains(first))
        {
            found.push((line_of(at), parts));
        }
        at = end.max(at + 1);
    }
    found
}

/// Each `use` declaration of `code`: where its tree starts and the tree
/// (the text between `use` and `;`, whitespace squeezed).
fn use_trees(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut trees = Vec::new();
    for (at, _) in code.match_indices("use") {
        let before_ok = at == 0 || !is_ident(bytes[at - 1]);
        let after_ok = bytes.get(at + 3).is_some_and(|b| b.is_ascii_whitespace());
        if !before_ok || !after_ok {
            continue;
        }
        let Some(length) = code[at..].find(';') else {
            continue;
        };
        let mut tree = code[at + 3..at + length]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for (spaced, tight) in [
            (" ::", "::"),
            (":: ", "::"),
            ("{ ", "{"),
            (" {", "{"),
            (" }", "}"),
            (", ", ","),
            (" ,", ","),
        ] {
            tree = tree.replace(spaced, tight);
        }
        trees.push((at, tree));
    }
    trees
}

/// A `use` tree's paths: `a::{b, c::{d, self}}` is `a::b`, `a::c::d`, `a::c`
/// (an `as` rename keeps the path; a glob names its module).
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let tree = tree.split(" as ").next().unwrap_or(tree);
        let mut parts: Vec<String> = tree
            .split("::")
            .filter(|part| !part.is_empty() && *part != "*")
            .map(str::to_string)
            .collect();
        if parts.last().is_some_and(|last| last == "self") {
            parts.pop();
        }
        return if parts.is_empty() {
            Vec::new()
        } else {
            vec![parts]
        };
    };
    let head: Vec<String> = tree[..open]
        .split("::")
        .filter(|part| !part.is_empty())
        .map(str::to_string)
        .collect();
    let close = tree.rfind('}').unwrap_or(tree.len());
    let body = &tree[open + 1..close.max(open + 1)];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (at, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&body[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    let mut paths = Vec::new();
    for item in items.into_iter().filter(|item| !item.trim().is_empty()) {
        for tail in expand(item) {
            paths.push(head.iter().cloned().chain(tail).collect());
        }
        if item.trim() == "self" {
            paths.push(head.clone());
        }
    }
    paths
}

/// The circles of `edges` (file to the files it imports): each strongly
/// connected set of two or more files (Tarjan's algorithm), sorted.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = edges
        .keys()
        .chain(edges.values().flatten())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let number: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let successors: Vec<Vec<usize>> = nodes
        .iter()
        .map(|node| {
            edges
                .get(*node)
                .map(|targets| targets.iter().map(|t| number[t]).collect())
                .unwrap_or_default()
        })
        .collect();
    struct Tarjan<'a> {
        successors: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        components: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, node: usize) {
            let n = self.index.iter().flatten().count();
            self.index[node] = Some(n);
            self.low[node] = n;
            self.stack.push(node);
            self.on_stack[node] = true;
            for &next in &self.successors[node] {
                match self.index[next] {
                    None => {
                        self.visit(next);
                        self.low[node] = self.low[node].min(self.low[next]);
                    }
                    Some(index) if self.on_stack[next] => {
                        self.low[node] = self.low[node].min(index);
                    }
                    Some(_) => {}
                }
            }
            if Some(self.low[node]) == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        successors: &successors,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        stack: Vec::new(),
        on_stack: vec![false; nodes.len()],
        components: Vec::new(),
    };
    for node in 0..nodes.len() {
        if tarjan.index[node].is_none() {
            tarjan.visit(node);
        }
    }
    tarjan
        .components
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut files: Vec<String> = component.iter().map(|&i| nodes[i].clone()).collect();
            files.sort();
            files
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sources: &[(&str, &str)]) -> Vec<(String, String)> {
        sources
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect()
    }

    #[test]
    fn an_import_up_a_floor_fails_naming_file_line_and_path() {
        let (_, failures) = check_sources(&files(&[
            ("src/lib.rs", "pub mod observe;\npub mod scheduling;\n"),
            ("src/observe/mod.rs", "pub mod trace;\n"),
            (
                "src/observe/trace.rs",
                "//! Trace events.\n\nuse crate::scheduling::run_queue::run_queue;\n",
            ),
            ("src/scheduling/mod.rs", "pub mod run_queue;\n"),
            ("src/scheduling/run_queue.rs", "pub fn run_queue() {}\n"),
        ]));
        assert_eq!(failures.len(), 1, "{failures:?}");
        let failure = &failures[0];
        assert!(
            failure.starts_with("src/observe/trace.rs:3: `crate::scheduling::run_queue::run_queue` points up a floor"),
            "{failure}"
        );
        assert!(failure.contains("src/scheduling/run_queue.rs"), "{failure}");
    }

    #[test]
    fn an_inline_path_counts_and_comments_and_strings_do_not() {
        let (imports, failures) = check_sources(&files(&[
            ("src/lib.rs", "pub mod platform;\npub mod tasks;\n"),
            ("src/platform/mod.rs", "pub mod irq;\n"),
            (
                "src/platform/irq.rs",
                "/// Calls [`crate::tasks::wake`] (a doc link is no import).\n\
                 fn handle() {\n    let s = \"crate::tasks::wake\";\n    crate::tasks::wake();\n}\n",
            ),
            ("src/tasks/mod.rs", "pub fn wake() {}\n"),
        ]));
        assert_eq!(imports, 1, "{failures:?}");
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].starts_with("src/platform/irq.rs:4: `crate::tasks::wake` points up"),
            "{}",
            failures[0]
        );
    }

    #[test]
    fn scheduling_files_call_down_not_across() {
        let (_, failures) = check_sources(&files(&[
            (
                "src/scheduling/mod.rs",
                "pub mod run_queue;\npub mod switch;\npub mod tick;\n",
            ),
            ("src/scheduling/run_queue.rs", ""),
            (
                "src/scheduling/switch.rs",
                "use super::run_queue::run_queue;\n",
            ),
            (
                "src/scheduling/tick.rs",
                "use super::{run_queue, switch};\n",
            ),
        ]));
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].starts_with("src/scheduling/tick.rs:1: `super::switch` points across"),
            "{}",
            failures[0]
        );
    }

    #[test]
    fn a_circle_on_one_floor_fails() {
        let (_, failures) = check_sources(&files(&[
            ("src/platform/mod.rs", "pub mod heap;\npub mod irq;\n"),
            ("src/platform/heap.rs", "use super::irq::send;\n"),
            (
                "src/platform/irq.rs",
                "fn f() { super::heap::allocate(); }\n",
            ),
        ]));
        assert_eq!(
            failures,
            ["files that import each other in a circle: src/platform/heap.rs, src/platform/irq.rs"]
        );
    }

    #[test]
    fn re_exported_modules_are_followed_and_unknown_files_are_named() {
        let (_, failures) = check_sources(&files(&[
            (
                "src/arch/mod.rs",
                "pub mod aarch64;\npub use aarch64::{cpu, timer};\n",
            ),
            ("src/arch/aarch64/mod.rs", "pub mod cpu;\npub mod timer;\n"),
            ("src/arch/aarch64/cpu.rs", ""),
            (
                "src/arch/aarch64/timer.rs",
                "use crate::arch::cpu::this_cpu;\n",
            ),
            ("src/stray.rs", ""),
        ]));
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].starts_with("src/stray.rs: in no floor"),
            "{}",
            failures[0]
        );
        assert_eq!(
            resolve(
                &["arch".into(), "cpu".into(), "this_cpu".into()],
                &BTreeMap::from([
                    (vec!["arch".into()], "src/arch/mod.rs".into()),
                    (
                        vec!["arch".into(), "aarch64".into(), "cpu".into()],
                        "src/arch/aarch64/cpu.rs".into()
                    ),
                ]),
                &BTreeMap::from([(
                    vec!["arch".into(), "cpu".into()],
                    vec!["arch".into(), "aarch64".into(), "cpu".into()]
                )]),
            ),
            Some("src/arch/aarch64/cpu.rs".to_string())
        );
    }

    #[test]
    fn use_trees_expand() {
        assert_eq!(
            expand("super::{self,a,b::{c,self},d as e}"),
            [
                vec!["super".to_string()],
                vec!["super".into(), "a".into()],
                vec!["super".into(), "b".into(), "c".into()],
                vec!["super".into(), "b".into()],
                vec!["super".into(), "d".into()],
            ]
        );
    }

    #[test]
    fn the_kernel_stands_in_its_floors() {
        let root = crate::run::board::workspace_root();
        if let Err(error) = check(&root) {
            panic!("{error}");
        }
    }
}
