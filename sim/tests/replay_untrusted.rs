//! The replay reader (`fairway_sim::replay::parse_kernel_lines` and
//! `replay_transcript`, behind `cargo xtask replay`) on edited and cut
//! transcripts: each is refused with a message naming the line, the field
//! and its value, never a panic, an allocation of the size a number asks
//! for, or a report of agreement with a run it has not seen.
//!
//! The transcript is `fixtures/replay-bandwidth-eevdf.txt`: 100 ms of two
//! CPUs with two bandwidth-limited groups under EEVDF, recorded from the
//! scheduling cores and printed as the kernel prints it (written by
//! `replay::tests::write_the_replay_fixture`). It has a `core: config` line
//! (`tasks=8 groups=4 cpus=2`), CPU 0's line 2 announcing 289 records and
//! CPU 1's line 292 announcing 279.

use fairway_sim::replay::{parse_kernel_lines, replay_transcript};

const FIXTURE: &str = include_str!("fixtures/replay-bandwidth-eevdf.txt");

fn lines() -> Vec<String> {
    FIXTURE.lines().map(str::to_string).collect()
}

/// Parses and replays `lines`: the report's agreeing count, or the error.
fn outcome(lines: &[String]) -> Result<(usize, usize, bool), String> {
    let transcript = parse_kernel_lines(lines.iter().map(String::as_str))?;
    let outcome = replay_transcript(&transcript)?;
    Ok((
        outcome.agreeing,
        outcome.records,
        outcome.divergence.is_some(),
    ))
}

/// Replaces the `field=` word of line `number` (1 for the first).
fn set_field(lines: &mut [String], number: usize, field: &str, value: &str) {
    let line = &mut lines[number - 1];
    let prefix = format!("{field}=");
    let words: Vec<String> = line
        .split(' ')
        .map(|word| match word.strip_prefix(&prefix) {
            Some(_) => format!("{prefix}{value}"),
            None => word.to_string(),
        })
        .collect();
    assert_ne!(words.join(" "), *line, "line {number} has no {field}=");
    *line = words.join(" ");
}

/// Replaces word `index` (0 for the sequence number) of the record on line
/// `number`.
fn set_record_word(lines: &mut [String], number: usize, index: usize, value: &str) {
    let line = &mut lines[number - 1];
    let (head, words) = line.split_once("core: record ").unwrap();
    let mut words: Vec<&str> = words.split(' ').collect();
    words[index] = value;
    *line = format!("{head}core: record {}", words.join(" "));
}

#[test]
fn the_fixture_replays_with_every_decision_the_same() {
    assert_eq!(outcome(&lines()), Ok((289 + 279, 289 + 279, false)));
}

/// `tasks=70000` once panicked in the timeline ("70063 entities exceed
/// MAX_ENTITIES"): with groups=4 a CPU holds at most 65535 - 3 tasks.
#[test]
fn tasks_above_the_entity_limit_are_refused_before_building() {
    let mut lines = lines();
    set_field(&mut lines, 1, "tasks", "70000");
    let error = outcome(&lines).unwrap_err();
    assert!(
        error.starts_with("line 1: tasks=70000 is above the limit of 65532 "),
        "{error}"
    );
}

/// `groups=4000000000` once asked for 96 GB: group ids are 16 bits.
#[test]
fn groups_beyond_sixteen_bit_ids_are_refused_before_allocating() {
    let mut lines = lines();
    set_field(&mut lines, 1, "groups", "4000000000");
    let error = outcome(&lines).unwrap_err();
    assert!(
        error.starts_with("line 1: groups=4000000000 is above the limit of 65536 "),
        "{error}"
    );
}

/// The largest slots the limits allow build, and one more task does not.
#[test]
fn the_limits_are_the_schedulers() {
    let mut lines = lines();
    set_field(&mut lines, 1, "groups", "65536");
    let error = outcome(&lines).unwrap_err();
    assert!(
        error.starts_with("line 1: tasks=8 is above the limit of 0 "),
        "{error}"
    );
    let mut lines = self::lines();
    set_field(&mut lines, 1, "cpus", "65");
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 1: cpus=65 is outside 1..=64"
    );
}

/// Line 151 is CPU 0's dequeue of task 2 (balancing at 50 ms); task 7 was
/// never created, so its dequeue (which once panicked with `dequeue of
/// TaskId(..)` in the fair class) is refused at that line.
#[test]
fn a_dequeue_of_a_task_not_queued_is_refused_at_its_line() {
    let mut lines = lines();
    assert!(
        lines[150].ends_with(" 50000000 3 2 2 0 0 0 0"),
        "{}",
        lines[150]
    );
    set_record_word(&mut lines, 151, 4, "7");
    let error = outcome(&lines).unwrap_err();
    assert!(error.starts_with("line 151: record "), "{error}");
    assert!(
        error.ends_with(
            ": dequeue of task 7, which is not queued: impossible on cpu 0 at this point \
             of the run"
        ),
        "{error}"
    );
}

/// A task id without a slot (tasks=8) is refused as it is read.
#[test]
fn a_task_id_without_a_slot_is_refused_at_its_line() {
    let mut lines = lines();
    set_record_word(&mut lines, 151, 4, "8");
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 151: record: task=8 is not below tasks=8"
    );
}

/// Line 24 is CPU 0's wake-up of task 4 at 7 ms; task 0, CPU-bound, is
/// queued there then, so waking it again is impossible.
#[test]
fn a_wakeup_of_a_queued_task_is_refused_at_its_line() {
    let mut lines = lines();
    assert!(
        lines[23].ends_with(" 7000000 1 4 1 0 0 0 0"),
        "{}",
        lines[23]
    );
    set_record_word(&mut lines, 24, 4, "0");
    let error = outcome(&lines).unwrap_err();
    assert!(error.starts_with("line 24: record "), "{error}");
    assert!(
        error.contains(": wakeup of task 0, which is already queued: "),
        "{error}"
    );
}

/// Cut after 16 lines, the transcript once replayed as "14 of 14 records
/// agree": CPU 0 announces 289 records on line 2, 14 follow.
#[test]
fn a_transcript_cut_in_the_first_cpu_is_refused_as_truncated() {
    let lines = &lines()[..16];
    assert_eq!(
        outcome(lines).unwrap_err(),
        "transcript truncated: cpu 0 announces records=289 (line 2), 14 present"
    );
}

/// Cut at line 400 (in CPU 1's records, which start after its line 292),
/// the replay once reported a difference where CPU 1's records stop.
#[test]
fn a_transcript_cut_in_the_last_cpu_is_refused_as_truncated() {
    let lines = &lines()[..400];
    assert_eq!(
        outcome(lines).unwrap_err(),
        "transcript truncated: cpu 1 announces records=279 (line 292), 108 present"
    );
}

/// Cut after CPU 0's records, before CPU 1's line: the config says cpus=2.
#[test]
fn a_transcript_cut_between_cpus_is_refused_as_truncated() {
    let lines = &lines()[..291];
    assert_eq!(
        outcome(lines).unwrap_err(),
        "transcript truncated: `core: config` announces cpus=2, 1 `core: cpu` lines present"
    );
}

/// A line cut in its middle leaves a record of fewer than ten numbers.
#[test]
fn a_record_cut_in_its_middle_is_refused_at_its_line() {
    let mut lines = lines();
    lines.truncate(571);
    let last = lines.last_mut().unwrap();
    let cut = last.rfind(' ').unwrap();
    last.truncate(cut);
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 571: a record of 9 numbers, not ten (a cut line?)"
    );
}

/// A record more than its CPU announced is refused where it is.
#[test]
fn a_record_beyond_the_announced_count_is_refused_at_its_line() {
    let mut lines = lines();
    set_field(&mut lines, 2, "records", "288");
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 291: cpu 0 announces records=288 (line 2), this is one more"
    );
}

/// A record of CPU 1 among CPU 0's, and a CPU line out of order.
#[test]
fn records_and_cpu_lines_out_of_place_are_refused() {
    let mut lines = lines();
    set_record_word(&mut lines, 3, 1, "1");
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 3: record of cpu=1 among cpu 0's records"
    );
    let mut lines = self::lines();
    lines[291] = lines[291].replace("cpu=1", "cpu=3");
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 292: cpu=3, but the CPU lines so far announce cpu 1 next"
    );
}

/// A capacity outside 1..=1024 and a `dropped=` sum past 2^64 are refused
/// or saturate, not wrap or panic.
#[test]
fn capacities_and_dropped_counts_are_bounded() {
    let mut lines = lines();
    set_field(&mut lines, 292, "capacity", "4294968320");
    assert_eq!(
        outcome(&lines).unwrap_err(),
        "line 292: cpu 1: capacity=4294968320 is outside 1..=1024"
    );
    let mut lines = self::lines();
    set_field(&mut lines, 2, "dropped", &u64::MAX.to_string());
    set_field(&mut lines, 292, "dropped", "1");
    let transcript = parse_kernel_lines(lines.iter().map(String::as_str)).unwrap();
    assert_eq!(transcript.dropped, u64::MAX);
}
