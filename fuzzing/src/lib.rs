//! The harness of Fairway's fuzz targets: the readers of untrusted input (the
//! rt-app scenario reader, the scenario wire format, the device tree, the boot
//! options, the kernel transcript `cargo xtask replay` reads and the Perfetto
//! trace `cargo xtask plot` reads) each have a target, an ordinary `#[test]` in
//! their crate that calls [`run`].
//!
//! A target is a proptest property run for a fixed number of cases from a fixed
//! seed, so `cargo xtask test` is repeatable and bounded in time; and
//! `FAIRWAY_FUZZ_CASES=N` runs every target N cases instead (`FAIRWAY_FUZZ_SEED=S`
//! explores other inputs). A failing case is shrunk to a small input and its seed is
//! appended to the crate's `proptest-regressions/TARGET.txt`, which is committed and
//! replayed before the new cases of every later run. Because a seed reproduces its
//! input only while the strategy is unchanged, every crash found is also kept as a
//! named unit test with its minimal input.
//!
//! Each run prints one line, `fuzz: TARGET: N cases in T s (outcome counts)`, which
//! the test command shows (libtest's `--show-output`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use proptest;

use proptest::prelude::*;
use proptest::test_runner::{
    Config, FileFailurePersistence, RngAlgorithm, TestCaseError, TestRng, TestRunner,
};

/// The environment variable that sets every target's number of cases.
pub const CASES_VARIABLE: &str = "FAIRWAY_FUZZ_CASES";

/// The environment variable that changes the seed every target starts from.
pub const SEED_VARIABLE: &str = "FAIRWAY_FUZZ_SEED";

/// The environment variable that prints every case before it runs (to find the
/// input of a hang).
pub const TRACE_VARIABLE: &str = "FAIRWAY_FUZZ_TRACE";

/// What a case came to, counted in the report line (`"accepted"`, `"refused"`...),
/// so that a target shows it reaches past the first check of its reader.
pub type Outcome = &'static str;

/// What a target did.
#[derive(Debug)]
pub struct Report {
    /// Cases run, the replayed persisted failures included.
    pub cases: u64,
    /// How many cases came to each outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Wall time.
    pub elapsed: Duration,
}

impl Report {
    /// How many cases came to `outcome`.
    pub fn count(&self, outcome: Outcome) -> u64 {
        self.outcomes.get(outcome).copied().unwrap_or(0)
    }
}

fn variable(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.parse() {
        Ok(number) => Some(number),
        Err(_) => panic!("{name}={value}: not a number"),
    }
}

/// The number of cases: `FAIRWAY_FUZZ_CASES`, else `default`.
pub fn cases(default: u32) -> u32 {
    variable(CASES_VARIABLE).map_or(default, |n| {
        u32::try_from(n).unwrap_or_else(|_| panic!("{CASES_VARIABLE}={n}: above {}", u32::MAX))
    })
}

/// The target's seed: the target's name mixed with `FAIRWAY_FUZZ_SEED` (0 if unset),
/// spread over ChaCha's 32 bytes with splitmix64.
fn seed(target: &str) -> [u8; 32] {
    // FNV-1a of the name, so that targets do not share a stream.
    let mut state = target.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    }) ^ variable(SEED_VARIABLE).unwrap_or(0);
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    seed
}

/// Runs the fuzz target `target` of the crate at `manifest_dir` (its
/// `env!("CARGO_MANIFEST_DIR")`): `test` on [`cases`]`(default_cases)` values of
/// `strategy`, after the failures persisted in
/// `manifest_dir/proptest-regressions/target.txt`. Prints the report line; panics
/// with the shrunk input if a case fails or panics.
pub fn run<S: Strategy>(
    target: &str,
    manifest_dir: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<Outcome, TestCaseError>,
) -> Report {
    let persistence: &'static str =
        format!("{manifest_dir}/proptest-regressions/{target}.txt").leak();
    let config = Config {
        cases: cases(default_cases),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(persistence))),
        rng_algorithm: RngAlgorithm::ChaCha,
        // Never more than a few seconds of shrinking, whatever the input.
        max_shrink_iters: 10_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed(target)),
    );
    let outcomes = RefCell::new(BTreeMap::new());
    let trace = std::env::var_os(TRACE_VARIABLE).is_some();
    let watchdog = Watchdog::start(target);
    let start = Instant::now();
    let result = runner.run(&strategy, |value| {
        if trace {
            eprintln!("fuzz: {target}: case {}: {value:?}", watchdog.cases() + 1);
        }
        watchdog.enter();
        let outcome = test(value);
        watchdog.leave();
        *outcomes.borrow_mut().entry(outcome?).or_insert(0) += 1;
        Ok(())
    });
    let report = Report {
        cases: watchdog.cases(),
        outcomes: outcomes.into_inner(),
        elapsed: start.elapsed(),
    };
    drop(watchdog);
    if let Err(failure) = result {
        panic!("fuzz: {target}: {failure}");
    }
    let outcomes: Vec<String> = report
        .outcomes
        .iter()
        .map(|(outcome, count)| format!("{outcome} {count}"))
        .collect();
    println!(
        "fuzz: {target}: {} cases in {:.1} s ({})",
        report.cases,
        report.elapsed.as_secs_f64(),
        outcomes.join(", ")
    );
    report
}

/// How long one case may run before the watchdog ends the process.
const CASE_TIME_LIMIT: Duration = Duration::from_secs(30);

/// Ends the process when a case runs longer than [`CASE_TIME_LIMIT`]: a reader
/// that loops forever (as the device-tree reader once did) would otherwise hang the
/// test command, and a panic cannot stop a thread. It names the case, which
/// `FAIRWAY_FUZZ_TRACE=1` shows.
struct Watchdog {
    state: Arc<WatchdogState>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct WatchdogState {
    /// Cases entered.
    cases: AtomicU64,
    running: AtomicBool,
    done: AtomicBool,
}

impl Watchdog {
    fn start(target: &str) -> Self {
        let state = Arc::new(WatchdogState::default());
        let watched = Arc::clone(&state);
        let target = target.to_string();
        let thread = std::thread::spawn(move || {
            let mut last = (0, Instant::now());
            while !watched.done.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                let case = watched.cases.load(Ordering::Acquire);
                if case != last.0 || !watched.running.load(Ordering::Acquire) {
                    last = (case, Instant::now());
                } else if last.1.elapsed() > CASE_TIME_LIMIT {
                    eprintln!(
                        "fuzz: {target}: case {case} has run for {} s: the reader hangs \
                         ({TRACE_VARIABLE}=1 prints each case before it runs)",
                        CASE_TIME_LIMIT.as_secs()
                    );
                    std::process::exit(101);
                }
            }
        });
        Watchdog {
            state,
            thread: Some(thread),
        }
    }

    fn cases(&self) -> u64 {
        self.state.cases.load(Ordering::Acquire)
    }

    fn enter(&self) {
        self.state.cases.fetch_add(1, Ordering::AcqRel);
        self.state.running.store(true, Ordering::Release);
    }

    fn leave(&self) {
        self.state.running.store(false, Ordering::Release);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.state.done.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One edit of a byte string, at a position that [`apply`] takes modulo the length
/// (a small number: shrinking moves it to the start, and a failure shows where).
#[derive(Clone, Debug)]
pub enum ByteEdit {
    /// Flips one bit.
    FlipBit(u16, u8),
    /// Overwrites one byte.
    SetByte(u16, u8),
    /// Overwrites four bytes at a multiple of 4 (a length, offset, token or cell)
    /// with the number in the format's byte order.
    SetWord(u16, u32),
    /// Cuts the string there.
    Truncate(u16),
    /// Inserts bytes.
    Insert(u16, Vec<u8>),
    /// Removes up to this many bytes.
    Remove(u16, u8),
    /// Repeats up to this many bytes in place.
    Duplicate(u16, u8),
}

/// Numbers at the edges of what readers check: small counts, tokens, sign bits,
/// all ones, and any other.
pub fn interesting_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        prop::sample::select(vec![
            0,
            1,
            2,
            3,
            4,
            8,
            9,
            0x10,
            0x28,
            0x7f,
            0x80,
            0xff,
            0x100,
            0xffff,
            0x1_0000,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_fff0,
            0xffff_fffc,
            0xffff_ffff,
        ]),
        any::<u32>(),
    ]
}

/// One to `max` edits.
pub fn byte_edits(max: usize) -> impl Strategy<Value = Vec<ByteEdit>> {
    let edit = prop_oneof![
        1 => (any::<u16>(), 0u8..8).prop_map(|(at, bit)| ByteEdit::FlipBit(at, bit)),
        1 => (any::<u16>(), any::<u8>()).prop_map(|(at, value)| ByteEdit::SetByte(at, value)),
        3 => (any::<u16>(), interesting_u32()).prop_map(|(at, value)| ByteEdit::SetWord(at, value)),
        1 => (any::<u16>()).prop_map(ByteEdit::Truncate),
        1 => (any::<u16>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| ByteEdit::Insert(at, bytes)),
        1 => (any::<u16>(), 1u8..32).prop_map(|(at, length)| ByteEdit::Remove(at, length)),
        1 => (any::<u16>(), 1u8..64).prop_map(|(at, length)| ByteEdit::Duplicate(at, length)),
    ];
    prop::collection::vec(edit, 1..=max)
}

/// The byte order of [`ByteEdit::SetWord`].
#[derive(Clone, Copy, Debug)]
pub enum ByteOrder {
    /// The device tree's.
    Big,
    /// The scenario wire format's.
    Little,
}

/// Applies `edits` to `bytes` in order.
pub fn apply(bytes: &mut Vec<u8>, edits: &[ByteEdit], order: ByteOrder) {
    for edit in edits {
        let length = bytes.len();
        // A position in 0..n (n > 0).
        let at = |position: u16, n: usize| usize::from(position) % n;
        match edit {
            ByteEdit::FlipBit(position, bit) if length > 0 => {
                bytes[at(*position, length)] ^= 1 << (bit % 8)
            }
            ByteEdit::SetByte(position, value) if length > 0 => {
                bytes[at(*position, length)] = *value
            }
            ByteEdit::SetWord(position, value) if length >= 4 => {
                let start = at(*position, length / 4) * 4;
                let word = match order {
                    ByteOrder::Big => value.to_be_bytes(),
                    ByteOrder::Little => value.to_le_bytes(),
                };
                bytes[start..start + 4].copy_from_slice(&word);
            }
            ByteEdit::Truncate(position) => bytes.truncate(at(*position, length + 1)),
            ByteEdit::Insert(position, inserted) => {
                let start = at(*position, length + 1);
                bytes.splice(start..start, inserted.iter().copied());
            }
            ByteEdit::Remove(position, count) if length > 0 => {
                let start = at(*position, length);
                let end = (start + usize::from(*count)).min(length);
                bytes.drain(start..end);
            }
            ByteEdit::Duplicate(position, count) if length > 0 => {
                let start = at(*position, length);
                let end = (start + usize::from(*count)).min(length);
                let copy = bytes[start..end].to_vec();
                bytes.splice(end..end, copy);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_where_they_say() {
        let mut bytes = vec![0u8; 8];
        apply(
            &mut bytes,
            &[ByteEdit::SetWord(5, 0x0102_0304)],
            ByteOrder::Big,
        );
        assert_eq!(bytes, [0, 0, 0, 0, 1, 2, 3, 4]);
        apply(
            &mut bytes,
            &[ByteEdit::SetWord(0, 0x0102_0304)],
            ByteOrder::Little,
        );
        assert_eq!(bytes, [4, 3, 2, 1, 1, 2, 3, 4]);
        apply(&mut bytes, &[ByteEdit::Duplicate(6, 9)], ByteOrder::Big);
        assert_eq!(bytes, [4, 3, 2, 1, 1, 2, 3, 4, 3, 4]);
        apply(
            &mut bytes,
            &[ByteEdit::Remove(1, 2), ByteEdit::FlipBit(0, 1)],
            ByteOrder::Big,
        );
        assert_eq!(bytes, [6, 1, 1, 2, 3, 4, 3, 4]);
        apply(&mut bytes, &[ByteEdit::Truncate(13)], ByteOrder::Big);
        assert_eq!(bytes, [6, 1, 1, 2]);
    }

    #[test]
    fn seeds_depend_on_the_target() {
        assert_ne!(seed("a"), seed("b"));
        assert_eq!(seed("a"), seed("a"));
    }
}
