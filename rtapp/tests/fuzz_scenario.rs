//! Fuzz target of the scenario reader: `parse_with_notes` / `parse_and_validate`
//! (rt-app JSON with comments and trailing commas, through jsonc-parser) and
//! `Scenario::validate`. For any text it returns a scenario or a `ScenarioError`
//! whose message starts with the JSON path it names, never panics; and a scenario
//! it accepts goes through the wire format (`encode`, then the kernel's
//! `decode_and_validate`) unchanged.
//!
//! Inputs: arbitrary strings and lossy UTF-8; soups of JSON tokens, comments and
//! rt-app keys; the example scenarios (`sim/scenarios`, `tests/scenarios`) edited
//! value by value (numbers at the edges of `i64` and of the ranges, keys dropped,
//! repeated or renamed to other rt-app keys and events such as lock, barrier or
//! fork, instance counts up to 10^9, values nested hundreds of arrays deep) and
//! written back with comments and trailing commas; and those texts byte-edited.

use fairway_contract::scenario::ErrorKind;
use fairway_contract::scenario::wire::{decode_and_validate, encode};
use fairway_fuzzing::proptest::prelude::*;
use fairway_fuzzing::proptest::test_runner::TestCaseError;
use fairway_fuzzing::{ByteEdit, ByteOrder, Outcome, apply, byte_edits};
use fairway_rtapp::{parse_and_validate, parse_with_notes};
use jsonc_parser::ast::Value;
use jsonc_parser::{CollectOptions, ParseOptions};

/// A JSON value with object members in order, repeats kept (as rt-app reads them).
#[derive(Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    Text(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn from_ast(value: &Value<'_>) -> Json {
        match value {
            Value::NullKeyword(_) => Json::Null,
            Value::BooleanLit(b) => Json::Bool(b.value),
            Value::NumberLit(n) => Json::Number(n.value.to_string()),
            Value::StringLit(s) => Json::Text(s.value.to_string()),
            Value::Array(a) => Json::Array(a.elements.iter().map(Json::from_ast).collect()),
            Value::Object(o) => Json::Object(
                o.properties
                    .iter()
                    .map(|p| (p.name.as_str().to_string(), Json::from_ast(&p.value)))
                    .collect(),
            ),
        }
    }

    /// Values depth first, this one first.
    fn count(&self) -> usize {
        1 + match self {
            Json::Array(elements) => elements.iter().map(Json::count).sum(),
            Json::Object(members) => members.iter().map(|(_, v)| v.count()).sum(),
            _ => 0,
        }
    }

    /// The `index`th value depth first (modulo the count).
    fn nth_mut(&mut self, index: usize) -> &mut Json {
        let index = index % self.count();
        self.nth_inner(index).expect("an index below the count")
    }

    fn nth_inner(&mut self, mut index: usize) -> Option<&mut Json> {
        if index == 0 {
            return Some(self);
        }
        index -= 1;
        let children: Vec<&mut Json> = match self {
            Json::Array(elements) => elements.iter_mut().collect(),
            Json::Object(members) => members.iter_mut().map(|(_, v)| v).collect(),
            _ => Vec::new(),
        };
        for child in children {
            let size = child.count();
            if index < size {
                return child.nth_inner(index);
            }
            index -= size;
        }
        None
    }

    /// Sets every member named `key`, at any depth.
    fn set_all(&mut self, key: &str, value: &Json) {
        match self {
            Json::Array(elements) => elements.iter_mut().for_each(|e| e.set_all(key, value)),
            Json::Object(members) => {
                for (k, v) in members {
                    if k == key {
                        *v = value.clone();
                    } else {
                        v.set_all(key, value);
                    }
                }
            }
            _ => {}
        }
    }
}

fn quoted(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// How a text is laid out: `decor` bits choose, token by token, comments, line
/// breaks and trailing commas (all of which rt-app's lenient JSON allows).
struct Writer {
    decor: u64,
    out: String,
}

impl Writer {
    fn bit(&mut self) -> bool {
        // xorshift64: a fixed sequence of choices per input.
        self.decor ^= self.decor << 13;
        self.decor ^= self.decor >> 7;
        self.decor ^= self.decor << 17;
        self.decor.is_multiple_of(5)
    }

    fn gap(&mut self) {
        if self.decor == 0 {
            return;
        }
        if self.bit() {
            self.out.push_str(" /* a * / comment */ ");
        }
        if self.bit() {
            self.out
                .push_str(" // a line comment, with \"quotes\" and { brackets }\n");
        }
        if self.bit() {
            self.out.push_str("\n\t ");
        }
    }

    fn write(&mut self, value: &Json) {
        self.gap();
        match value {
            Json::Null => self.out.push_str("null"),
            Json::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => self.out.push_str(n),
            Json::Text(t) => quoted(t, &mut self.out),
            Json::Array(elements) => {
                self.out.push('[');
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.write(e);
                }
                if !elements.is_empty() && self.decor != 0 && self.bit() {
                    self.out.push(',');
                }
                self.gap();
                self.out.push(']');
            }
            Json::Object(members) => {
                self.out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.gap();
                    quoted(k, &mut self.out);
                    self.gap();
                    self.out.push(':');
                    self.write(v);
                }
                if !members.is_empty() && self.decor != 0 && self.bit() {
                    self.out.push(',');
                }
                self.gap();
                self.out.push('}');
            }
        }
        self.gap();
    }
}

fn write_json(value: &Json, decor: u64) -> String {
    let mut writer = Writer {
        decor,
        out: String::new(),
    };
    writer.write(value);
    writer.out
}

/// The example scenarios, as written and as `Json`.
fn corpus() -> Vec<(String, Json)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut files = Vec::new();
    for folder in ["sim/scenarios", "tests/scenarios"] {
        for entry in std::fs::read_dir(format!("{root}/{folder}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let lenient = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        ..ParseOptions::default()
    };
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let tree = jsonc_parser::parse_to_ast(&text, &CollectOptions::default(), &lenient)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let json = Json::from_ast(tree.value.as_ref().unwrap());
            (text, json)
        })
        .collect()
}

const NUMBERS: [&str; 24] = [
    "-9223372036854775808",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "100000000000000000000000000",
    "0",
    "-0",
    "-1",
    "1",
    "2",
    "19",
    "20",
    "-21",
    "99",
    "100",
    "1024",
    "1025",
    "4096",
    "4097",
    "1000000000",
    "1000000000000",
    "1000000000001",
    "1.5",
    "1e3",
];

const KEYS: [&str; 50] = [
    "global",
    "tasks",
    "resources",
    "duration",
    "calibration",
    "default_policy",
    "capacities",
    "frequency_scales",
    "taskgroups",
    "shares",
    "pi_enabled",
    "logdir",
    "instance",
    "loop",
    "delay",
    "phases",
    "policy",
    "priority",
    "cpus",
    "util_min",
    "util_max",
    "taskgroup",
    "nodes_membind",
    "dl-runtime",
    "run",
    "run0",
    "runtime",
    "sleep",
    "sleep1",
    "timer",
    "timer0",
    "ref",
    "period",
    "mode",
    "yield",
    "lock",
    "unlock",
    "wait",
    "signal",
    "broad",
    "barrier",
    "suspend",
    "resume",
    "mem",
    "iorun",
    "fork",
    "sem_post",
    "",
    "日本",
    "a-1",
];

const TEXTS: [&str; 16] = [
    "SCHED_OTHER",
    "SCHED_FIFO",
    "SCHED_RR",
    "SCHED_IDLE",
    "SCHED_BATCH",
    "SCHED_DEADLINE",
    "SCHED_NONE",
    "CPU0",
    "CPU-1",
    "CPU9223372036854775808",
    "relative",
    "absolute",
    "unique",
    "/a",
    "/a//b",
    "",
];

fn number() -> impl Strategy<Value = Json> {
    prop_oneof![
        3 => prop::sample::select(NUMBERS.to_vec()).prop_map(|n| Json::Number(n.into())),
        1 => any::<i64>().prop_map(|n| Json::Number(n.to_string())),
    ]
}

fn small_value() -> impl Strategy<Value = Json> {
    prop_oneof![
        4 => number(),
        2 => prop::sample::select(TEXTS.to_vec()).prop_map(|t| Json::Text(t.into())),
        1 => any::<String>().prop_map(Json::Text),
        1 => Just(Json::Null),
        1 => any::<bool>().prop_map(Json::Bool),
        1 => prop::collection::vec(number(), 0..4).prop_map(Json::Array),
        1 => Just(Json::Object(Vec::new())),
    ]
}

/// One edit of a scenario; values are numbered depth first, root 0.
#[derive(Clone, Debug)]
enum JsonEdit {
    /// Replaces a value.
    Set(u16, Json),
    /// Sets every member with this key.
    SetAll(&'static str, Json),
    /// Removes the n-th member of an object.
    Remove(u16, u8),
    /// Repeats the n-th member of an object.
    Repeat(u16, u8),
    /// Renames the n-th member of an object.
    Rename(u16, u8, &'static str),
    /// Adds a member to an object.
    Add(u16, &'static str, Json),
    /// Wraps a value in this many arrays.
    Nest(u16, u16),
}

fn json_edit() -> impl Strategy<Value = JsonEdit> {
    let key = prop::sample::select(KEYS.to_vec());
    prop_oneof![
        4 => (any::<u16>(), small_value()).prop_map(|(n, v)| JsonEdit::Set(n, v)),
        2 => (
            prop::sample::select(vec!["instance", "loop", "run", "sleep", "period", "priority", "duration", "delay"]),
            prop_oneof![
                number(),
                prop::sample::select(vec!["4096", "100000", "1000000000"])
                    .prop_map(|n| Json::Number(n.into())),
            ],
        )
            .prop_map(|(k, v)| JsonEdit::SetAll(k, v)),
        2 => (any::<u16>(), any::<u8>()).prop_map(|(n, i)| JsonEdit::Remove(n, i)),
        2 => (any::<u16>(), any::<u8>()).prop_map(|(n, i)| JsonEdit::Repeat(n, i)),
        3 => (any::<u16>(), any::<u8>(), key.clone()).prop_map(|(n, i, k)| JsonEdit::Rename(n, i, k)),
        2 => (any::<u16>(), key, small_value()).prop_map(|(n, k, v)| JsonEdit::Add(n, k, v)),
        1 => (any::<u16>(), prop_oneof![1u16..40, 500u16..530, 2_000u16..2_001])
            .prop_map(|(n, depth)| JsonEdit::Nest(n, depth)),
    ]
}

fn edit_json(json: &mut Json, edits: &[JsonEdit]) {
    for edit in edits {
        match edit {
            JsonEdit::Set(n, value) => *json.nth_mut(usize::from(*n)) = value.clone(),
            JsonEdit::SetAll(key, value) => json.set_all(key, value),
            JsonEdit::Nest(n, depth) => {
                let target = json.nth_mut(usize::from(*n));
                for _ in 0..*depth {
                    let inner = std::mem::replace(target, Json::Null);
                    *target = Json::Array(vec![inner]);
                }
            }
            JsonEdit::Remove(n, i) | JsonEdit::Repeat(n, i) | JsonEdit::Rename(n, i, _) => {
                if let Json::Object(members) = json.nth_mut(usize::from(*n))
                    && !members.is_empty()
                {
                    let i = usize::from(*i) % members.len();
                    match edit {
                        JsonEdit::Remove(..) => {
                            members.remove(i);
                        }
                        JsonEdit::Repeat(..) => {
                            let member = members[i].clone();
                            members.insert(i + 1, member);
                        }
                        JsonEdit::Rename(_, _, key) => members[i].0 = key.to_string(),
                        _ => unreachable!(),
                    }
                }
            }
            JsonEdit::Add(n, key, value) => {
                if let Json::Object(members) = json.nth_mut(usize::from(*n)) {
                    members.push((key.to_string(), value.clone()));
                }
            }
        }
    }
}

const TOKENS: [&str; 32] = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"global\"",
    "\"tasks\"",
    "\"t\"",
    "\"run\"",
    "\"loop\"",
    "\"phases\"",
    "\"timer\"",
    "\"period\"",
    "1",
    "-1",
    "9223372036854775808",
    "1.5",
    "true",
    "null",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "\"unterminated",
    "'single'",
    "0x10",
    "NaN",
    "Infinity",
    "\u{feff}",
    "\"\\u12\"",
];

/// What a case gives the reader.
#[derive(Clone, Debug)]
enum Input {
    /// Any text.
    Text(String),
    /// JSON tokens, comments and keys, concatenated.
    Tokens(Vec<&'static str>),
    /// An example scenario (by index) with edits, written with `decor`.
    Edited(usize, Vec<JsonEdit>, u64),
    /// An example scenario as written, byte-edited (then read as lossy UTF-8).
    EditedText(usize, Vec<ByteEdit>),
}

fn input(corpus_size: usize) -> impl Strategy<Value = (Input, usize)> {
    let input = prop_oneof![
        1 => any::<String>().prop_map(Input::Text),
        1 => prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|bytes| Input::Text(String::from_utf8_lossy(&bytes).into_owned())),
        2 => prop::collection::vec(prop::sample::select(TOKENS.to_vec()), 0..40)
            .prop_map(Input::Tokens),
        8 => (0..corpus_size, prop::collection::vec(json_edit(), 0..5), prop_oneof![Just(0u64), any::<u64>()])
            .prop_map(|(file, edits, decor)| Input::Edited(file, edits, decor)),
        2 => (0..corpus_size, byte_edits(3))
            .prop_map(|(file, edits)| Input::EditedText(file, edits)),
    ];
    let nr_cpus = prop_oneof![6 => 1usize..=8, 1 => Just(0usize), 1 => Just(64usize)];
    (input, nr_cpus)
}

fn text_of(input: &Input, corpus: &[(String, Json)]) -> String {
    match input {
        Input::Text(text) => text.clone(),
        Input::Tokens(tokens) => tokens.concat(),
        Input::Edited(file, edits, decor) => {
            let mut json = corpus[*file].1.clone();
            edit_json(&mut json, edits);
            write_json(&json, *decor)
        }
        Input::EditedText(file, edits) => {
            let mut bytes = corpus[*file].0.as_bytes().to_vec();
            apply(&mut bytes, edits, ByteOrder::Little);
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }
}

#[test]
fn fuzz_scenario() {
    let corpus = corpus();
    let report = fairway_fuzzing::run(
        "scenario",
        env!("CARGO_MANIFEST_DIR"),
        40_000,
        input(corpus.len()),
        |(input, nr_cpus)| -> Result<Outcome, TestCaseError> {
            let text = text_of(&input, &corpus);
            let parsed = parse_with_notes(&text);
            match parse_and_validate(&text, nr_cpus) {
                Ok(scenario) => {
                    prop_assert_eq!(parsed.map(|p| p.scenario), Ok(scenario.clone()));
                    // Through the wire format, as the kernel receives it.
                    let blob = encode(&scenario).expect("a parsed scenario encodes");
                    prop_assert_eq!(decode_and_validate(&blob, nr_cpus), Ok(scenario));
                    Ok("accepted")
                }
                Err(error) => {
                    let message = error.to_string();
                    let path = if error.path.is_empty() {
                        "<root>"
                    } else {
                        error.path.as_str()
                    };
                    // The path leads the message, its control characters escaped
                    // (none reaches the terminal raw).
                    let shown: String = path
                        .chars()
                        .map(|c| {
                            if c.is_control() && c != '\n' {
                                c.escape_default().to_string()
                            } else {
                                c.to_string()
                            }
                        })
                        .collect();
                    prop_assert!(message.starts_with(&format!("{shown}: ")), "{}", message);
                    prop_assert!(
                        !message.chars().any(|c| c.is_control() && c != '\n'),
                        "{:?}",
                        message
                    );
                    let syntax = matches!(error.kind, ErrorKind::Syntax { .. });
                    // Only a text that is not JSON, holds no value, or whose value is
                    // not an object is refused at the root; anything else names the
                    // field.
                    let root_type = matches!(error.kind, ErrorKind::WrongType { .. });
                    prop_assert!(syntax || root_type || !error.path.is_empty(), "{}", message);
                    match parsed {
                        Err(parse_error) => prop_assert_eq!(parse_error, error.clone()),
                        Ok(parsed) => {
                            prop_assert_eq!(parsed.scenario.validate(nr_cpus), Err(error.clone()))
                        }
                    }
                    Ok(if syntax {
                        "refused: syntax"
                    } else {
                        "refused: field"
                    })
                }
            }
        },
    );
    for outcome in ["accepted", "refused: syntax", "refused: field"] {
        assert!(
            report.count(outcome) * 20 > report.cases,
            "{outcome}: {report:?}"
        );
    }
}
