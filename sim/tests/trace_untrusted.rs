//! The Perfetto trace reader (`fairway_trace::Trace::from_perfetto`, behind
//! `cargo xtask plot`) on the simulator's own trace of `eas-workload-a` on
//! juno-r2, damaged: refused with a message naming the field, its value
//! and where, never a loop or an allocation as long as a number in the file.

use fairway_sim::cli::{parse_args, run};
use fairway_trace::{MAX_CPUS, Trace};

/// The simulator's trace of `tests/scenarios/eas-workload-a.json` on juno-r2
/// (`fairway-sim --board juno-r2 --trace FILE --quiet`).
fn juno_trace(test: &str) -> Vec<u8> {
    let path = std::env::temp_dir().join(format!("fairway-{test}-{}.pftrace", std::process::id()));
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/scenarios/eas-workload-a.json"
    );
    let args: Vec<String> = [
        scenario,
        "--board",
        "juno-r2",
        "--quiet",
        "--trace",
        path.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    run(&parse_args(&args).unwrap()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

#[test]
fn the_juno_trace_reads_back() {
    let trace = Trace::from_perfetto(&juno_trace("reads-back")).unwrap();
    // juno-r2: two big and four LITTLE CPUs.
    assert_eq!(trace.nr_cpus, 6);
    assert!(trace.records.iter().all(|r| r.cpu < trace.nr_cpus));
}

/// Byte 69,607 set to 0x2b once made `cargo xtask plot` loop for ever over
/// a CPU count read from the file. That byte is the tag of an event in an
/// ftrace bundle (0x12: field 2, length-delimited, then its length 0x0c);
/// 0x2b starts a group that the 0x0c (now "end group") closes, so the
/// event's own first field, `08` and its timestamp, is read as the
/// bundle's field 1, `cpu`: a CPU number of about 900 million.
#[test]
fn a_trace_with_one_byte_changed_is_refused_naming_the_field() {
    let mut bytes = juno_trace("one-byte");
    assert_eq!(bytes[69_607..69_610], [0x12, 0x0c, 0x08]);
    bytes[69_607] = 0x2b;
    let mut timestamp = 0u64;
    for (index, byte) in bytes[69_610..].iter().take(10).enumerate() {
        timestamp |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            break;
        }
    }
    let error = Trace::from_perfetto(&bytes).unwrap_err();
    assert!(error.starts_with("packet at byte "), "{error}");
    assert!(
        error.ends_with(&format!(
            ": ftrace_events cpu={timestamp} is not below MAX_CPUS ({MAX_CPUS})"
        )),
        "{error}"
    );
}
