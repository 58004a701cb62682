//! Fuzz target of the replay reader (`cargo xtask replay TRANSCRIPT`:
//! `fairway_sim::replay::parse_kernel_lines`, then `replay_transcript`), which
//! reads a kernel transcript anyone can edit: for any edit of a real
//! transcript it refuses with a message or replays, never panics, never
//! allocates what a number asks for, and ends. A transcript cut short of
//! its records is refused as truncated, never replayed.
//!
//! Inputs: the fixture of `replay_untrusted.rs` (568 records of a two-CPU
//! bandwidth run under EEVDF) with byte edits, lines cut, removed,
//! repeated or swapped, and numbers changed (header fields and record words,
//! to the edges of what the reader checks). The harness is
//! `fairway_fuzzing` (case count, seed, persisted failures).

use fairway_fuzzing::proptest::prelude::*;
use fairway_fuzzing::proptest::test_runner::TestCaseError;
use fairway_fuzzing::{ByteEdit, ByteOrder, Outcome, apply, byte_edits};
use fairway_sim::replay::{parse_kernel_lines, replay_transcript};

const FIXTURE: &str = include_str!("fixtures/replay-bandwidth-eevdf.txt");

/// One edit of the transcript's lines; line and word positions are taken
/// modulo the counts.
#[derive(Clone, Debug)]
enum LineEdit {
    /// Keeps the first lines.
    Cut(u16),
    Remove(u16),
    Duplicate(u16),
    Swap(u16, u16),
    /// Sets a number of a line (a header field's value or a record word).
    Number(u16, u8, u64),
}

/// Numbers at the edges of what the reader checks: the fixture's slot
/// counts and their neighbours, the 16-bit id limits, the entity limit,
/// the values that once crashed it, and any.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => prop::sample::select(vec![
            0,
            1,
            2,
            3,
            4,
            7,
            8,
            9,
            22,
            23,
            64,
            65,
            1024,
            1025,
            0xffff,
            0x1_0000,
            65_532,
            65_533,
            70_000,
            u64::from(u32::MAX),
            4_000_000_000,
            u64::MAX,
        ]),
        1 => any::<u64>(),
    ]
}

fn line_edit() -> impl Strategy<Value = LineEdit> {
    prop_oneof![
        1 => any::<u16>().prop_map(LineEdit::Cut),
        1 => any::<u16>().prop_map(LineEdit::Remove),
        1 => any::<u16>().prop_map(LineEdit::Duplicate),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| LineEdit::Swap(a, b)),
        4 => (any::<u16>(), any::<u8>(), number())
            .prop_map(|(line, word, value)| LineEdit::Number(line, word, value)),
    ]
}

#[derive(Clone, Debug)]
enum Input {
    /// The fixture's first lines only (a run cut short).
    Cut(u16),
    /// Line edits.
    Lines(Vec<LineEdit>),
    /// Byte edits of the text.
    Bytes(Vec<ByteEdit>),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        1 => any::<u16>().prop_map(Input::Cut),
        4 => prop::collection::vec(line_edit(), 1..4).prop_map(Input::Lines),
        2 => byte_edits(3).prop_map(Input::Bytes),
    ]
}

fn edit_lines(lines: &mut Vec<String>, edits: &[LineEdit]) {
    for edit in edits {
        if lines.is_empty() {
            return;
        }
        let count = lines.len();
        let at = |n: u16| usize::from(n) % count;
        match *edit {
            LineEdit::Cut(n) => lines.truncate(usize::from(n) % (lines.len() + 1)),
            LineEdit::Remove(n) => {
                lines.remove(at(n));
            }
            LineEdit::Duplicate(n) => {
                let copy = lines[at(n)].clone();
                lines.insert(at(n), copy);
            }
            LineEdit::Swap(a, b) => {
                let (a, b) = (at(a), at(b));
                lines.swap(a, b);
            }
            LineEdit::Number(n, word, value) => {
                let line = &mut lines[at(n)];
                // The words holding a number: `key=N` or `N`.
                let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
                let numeric: Vec<usize> = (0..words.len())
                    .filter(|&i| {
                        let digits = words[i].rsplit('=').next().unwrap_or("");
                        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
                    })
                    .collect();
                if numeric.is_empty() {
                    continue;
                }
                let i = numeric[usize::from(word) % numeric.len()];
                words[i] = match words[i].split_once('=') {
                    Some((key, _)) => format!("{key}={value}"),
                    None => value.to_string(),
                };
                *line = words.join(" ");
            }
        }
    }
}

fn lines_of(input: &Input) -> Vec<String> {
    let mut lines: Vec<String> = FIXTURE.lines().map(str::to_string).collect();
    match input {
        Input::Cut(n) => lines.truncate(usize::from(*n) % (lines.len() + 1)),
        Input::Lines(edits) => edit_lines(&mut lines, edits),
        Input::Bytes(edits) => {
            let mut bytes = FIXTURE.as_bytes().to_vec();
            apply(&mut bytes, edits, ByteOrder::Little);
            lines = String::from_utf8_lossy(&bytes)
                .lines()
                .map(str::to_string)
                .collect();
        }
    }
    lines
}

/// Whether an error message is one of the reader's: it names a line, or
/// says what the whole transcript lacks.
fn is_a_reader_message(message: &str) -> bool {
    message.starts_with("line ")
        || message.starts_with("transcript truncated: ")
        || message.starts_with("no `core: config` line")
}

#[test]
fn fuzz_replay() {
    let total = FIXTURE.lines().count();
    let report = fairway_fuzzing::run(
        "replay",
        env!("CARGO_MANIFEST_DIR"),
        40_000,
        input(),
        |input| -> Result<Outcome, TestCaseError> {
            let lines = lines_of(&input);
            let transcript = match parse_kernel_lines(lines.iter().map(String::as_str)) {
                Ok(transcript) => transcript,
                Err(message) => {
                    prop_assert!(is_a_reader_message(&message), "{}", message);
                    return Ok("refused");
                }
            };
            // A run cut short of its records is never replayed.
            if let Input::Cut(n) = input {
                let kept = usize::from(n) % (total + 1);
                prop_assert_eq!(kept, total, "a cut transcript was read");
            }
            match replay_transcript(&transcript) {
                Ok(outcome) if outcome.divergence.is_some() => Ok("diverges"),
                Ok(outcome) => {
                    prop_assert_eq!(outcome.agreeing, outcome.records);
                    Ok("agrees")
                }
                Err(message) => {
                    prop_assert!(message.starts_with("line "), "{}", message);
                    Ok("impossible")
                }
            }
        },
    );
    // The edits leave transcripts that reach the replay, so its checks of
    // each record's state are exercised, not only the reader's.
    assert!(
        report.count("diverges") + report.count("impossible") > 0,
        "{report:?}"
    );
}
