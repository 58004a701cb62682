//! Fuzz target of the Perfetto trace reader (`Trace::from_perfetto`, behind
//! `cargo xtask plot`), which reads a file anyone can damage: for any byte
//! edits of a real trace it returns a trace or a message, never panics and
//! ends; a trace it returns holds only what its readers may index (CPUs
//! below `nr_cpus` ≤ `MAX_CPUS`, tasks of the process tree, counts within
//! the limits) and writes back.
//!
//! Inputs: two traces of the simulator (`fixtures/`: `eas-workload-a` on
//! juno-r2 for 30 ms, with frequency, idle, energy and task counters;
//! `bandwidth-mix-2cpus` for 40 ms, with group tracks), byte-edited with
//! the protobuf's varints and lengths in mind (`SetWord` writes
//! little-endian words, so a length or tag byte takes any value). The
//! harness is `fairway_fuzzing` (case count, seed, persisted failures).

use fairway_fuzzing::proptest::prelude::*;
use fairway_fuzzing::proptest::test_runner::TestCaseError;
use fairway_fuzzing::{ByteOrder, Outcome, apply, byte_edits};
use fairway_trace::{CounterTrack, MAX_CPUS, MAX_GROUPS, MAX_TASKS, Trace};

const FIXTURES: [&[u8]; 2] = [
    include_bytes!("fixtures/juno-r2-eas-workload-a-30ms.pftrace"),
    include_bytes!("fixtures/bandwidth-mix-2cpus-40ms.pftrace"),
];

/// What the readers of a trace rely on.
fn check(trace: &Trace) -> Result<(), TestCaseError> {
    prop_assert!(trace.nr_cpus <= MAX_CPUS);
    prop_assert!(trace.tasks.len() <= MAX_TASKS);
    prop_assert!(trace.groups.len() <= MAX_GROUPS);
    let tasks = trace.tasks.len();
    for record in &trace.records {
        prop_assert!(record.cpu < trace.nr_cpus, "{:?}", record);
        let named = record.event.tasks();
        prop_assert!(
            named.into_iter().flatten().all(|t| t < tasks),
            "{:?}",
            record
        );
    }
    for sample in &trace.counters {
        match sample.track {
            CounterTrack::Task(task, _) => prop_assert!(task < tasks),
            CounterTrack::Cpu(cpu, _) | CounterTrack::GroupCpu(_, cpu, _) => {
                prop_assert!(cpu < MAX_CPUS)
            }
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn fuzz_perfetto() {
    for fixture in FIXTURES {
        let trace = Trace::from_perfetto(fixture).unwrap();
        assert!(!trace.records.is_empty() && !trace.counters.is_empty());
    }
    let report = fairway_fuzzing::run(
        "perfetto",
        env!("CARGO_MANIFEST_DIR"),
        100_000,
        (0..FIXTURES.len(), byte_edits(2)),
        |(fixture, edits)| -> Result<Outcome, TestCaseError> {
            let mut bytes = FIXTURES[fixture].to_vec();
            apply(&mut bytes, &edits, ByteOrder::Little);
            match Trace::from_perfetto(&bytes) {
                Ok(trace) => {
                    check(&trace)?;
                    // What was read writes back, and reads back the same.
                    let again = Trace::from_perfetto(&trace.to_perfetto());
                    prop_assert!(again.is_ok(), "{:?}", again);
                    Ok("accepted")
                }
                Err(message) => {
                    prop_assert!(
                        message.starts_with("not a Perfetto trace: ")
                            || message.starts_with("packet at byte "),
                        "{}",
                        message
                    );
                    // A packet that decodes with a field out of bounds,
                    // or bytes that are not protobuf.
                    Ok(
                        if message.contains(": not a trace packet: ")
                            || message.starts_with("not a Perfetto trace: ")
                        {
                            "refused (framing)"
                        } else {
                            "refused (field)"
                        },
                    )
                }
            }
        },
    );
    // Most edits break the protobuf framing (a length, a tag); enough
    // decode to exercise the checks past it.
    assert!(
        (report.count("accepted") + report.count("refused (field)")) * 20 > report.cases,
        "{report:?}"
    );
}
