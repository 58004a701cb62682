//! Fuzz target of the scenario wire format's reader (`scenario::wire::decode` and
//! `decode_and_validate`), which the kernel runs on a blob loaded into its RAM: for
//! any bytes it returns a scenario or a `WireError`, never panics, and never
//! allocates more than a small multiple of the blob (a count field of `u32::MAX`,
//! the largest a count can be, is refused before anything is allocated for it).
//!
//! Inputs: arbitrary bytes; a valid header over arbitrary bytes, resealed (length
//! and CRC-32 set, so the body decoder meets them); and encoded generated
//! scenarios, as they are (they must decode to the same scenario) or with byte edits,
//! mostly resealed. The global allocator records the peak during each decode.

use std::sync::Mutex;

use fairway_contract::scenario::wire::{
    HEADER_LEN, MAGIC, VERSION, WireError, WireErrorKind, crc32, decode, decode_and_validate,
    encode,
};
use fairway_contract::scenario::{
    Attributes, BandwidthChange, Calibration, Event, Global, MAX_TASKS, NamedEvent, Phase,
    PolicyName, Scenario, TaskGroup, TaskSpec, TimerMode,
};
use fairway_fuzzing::proptest::prelude::*;
use fairway_fuzzing::proptest::test_runner::TestCaseError;
use fairway_fuzzing::{ByteEdit, ByteOrder, Outcome, apply, byte_edits};
use peak_alloc::PeakAlloc;

/// Counts the bytes in use and their peak, for the allocation bound.
#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The tests of this file measure allocations one at a time.
static MEASURING: Mutex<()> = Mutex::new(());

/// The most a decode may allocate: `ALLOCATION_PER_BYTE` times the blob, plus a
/// little. An in-memory element is at most about 15 times its smallest encoding
/// (an event: 72 bytes from a 5-byte yield), and the lists being read at once are
/// each bounded by the bytes left.
const ALLOCATION_PER_BYTE: usize = 64;
const ALLOCATION_SLACK: usize = 4096;

/// The most validation may allocate, whatever the blob: the set of instance names
/// that checks they are unique holds at most `MAX_TASKS` names of at most
/// `MAX_NAME_BYTES` (the first longer one is refused before it is added), about 100
/// bytes each with the tree's nodes. (Found by the fuzz target: a 126-byte blob
/// with 247 instances allocates 12 KiB while validated.)
const VALIDATION_ALLOCATION: usize = MAX_TASKS * 128 + ALLOCATION_SLACK;

/// Runs `f`, returning its result and the peak number of bytes allocated meanwhile
/// beyond what was in use before.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let result = f();
    let peak = ALLOCATOR.peak_usage().saturating_sub(base);
    (result, peak)
}

/// Sets the header's total length to the blob's and its checksum to the body's.
fn reseal(blob: &mut [u8]) {
    if blob.len() >= HEADER_LEN {
        let length = blob.len() as u32;
        blob[8..12].copy_from_slice(&length.to_le_bytes());
        let checksum = crc32(&blob[HEADER_LEN..]);
        blob[12..16].copy_from_slice(&checksum.to_le_bytes());
    }
}

/// Mostly values a scenario uses, sometimes the edges of `i64` and of the ranges.
fn number() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => 0i64..2000,
        2 => prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            -2,
            -1,
            0,
            1,
            1024,
            1025,
            4096,
            4097,
            1_000_000_000_000,
            1_000_000_000_001,
            i64::MAX,
        ]),
        1 => any::<i64>(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9_-]{0,8}",
        1 => prop::sample::select(vec!["/", "/a", "/a/b", "", "a", "//", "/a/", "unique", "run0"])
            .prop_map(String::from),
        1 => any::<String>(),
    ]
}

fn policy() -> impl Strategy<Value = PolicyName> {
    prop::sample::select(vec![
        PolicyName::Other,
        PolicyName::Batch,
        PolicyName::Idle,
        PolicyName::Fifo,
        PolicyName::RoundRobin,
    ])
}

fn attributes() -> impl Strategy<Value = Attributes> {
    let cpus = prop_oneof![4 => (0i64..8).boxed(), 1 => number().boxed()];
    (
        prop::option::weighted(0.2, policy()),
        prop::option::weighted(0.2, prop_oneof![-20i64..=19, number()]),
        prop::option::weighted(0.2, prop::collection::vec(cpus, 0..4)),
        prop::option::weighted(0.2, prop_oneof![0i64..=1024, number()]),
        prop::option::weighted(0.2, prop_oneof![0i64..=1024, number()]),
        prop::option::weighted(0.1, text()),
        prop::option::weighted(0.1, number()),
    )
        .prop_map(
            |(policy, priority, cpus, util_min, util_max, taskgroup, custom_slice_us)| Attributes {
                policy,
                priority,
                cpus,
                util_min,
                util_max,
                taskgroup,
                custom_slice_us,
            },
        )
}

fn event() -> impl Strategy<Value = NamedEvent> {
    let event = prop_oneof![
        3 => number().prop_map(|us| Event::Run { us }),
        1 => number().prop_map(|us| Event::Runtime { us }),
        2 => number().prop_map(|us| Event::Sleep { us }),
        1 => (text(), prop::option::weighted(0.9, number()), any::<bool>()).prop_map(
            |(reference, period_us, absolute)| Event::Timer {
                reference,
                period_us,
                mode: if absolute {
                    TimerMode::Absolute
                } else {
                    TimerMode::Relative
                },
            }
        ),
        1 => Just(Event::Yield),
        1 => text().prop_map(|mutex| Event::Lock { mutex }),
        1 => text().prop_map(|mutex| Event::Unlock { mutex }),
        1 => (text(), text()).prop_map(|(condition, mutex)| Event::Wait { condition, mutex }),
        1 => text().prop_map(|condition| Event::Signal { condition }),
        1 => text().prop_map(|condition| Event::Broadcast { condition }),
        1 => (text(), text()).prop_map(|(condition, mutex)| Event::Sync { condition, mutex }),
        1 => text().prop_map(|name| Event::Barrier { name }),
        1 => Just(Event::Suspend),
        1 => text().prop_map(|task| Event::Resume { task }),
        1 => text().prop_map(|name| Event::SemPost { name }),
        1 => text().prop_map(|name| Event::SemWait { name }),
        1 => text().prop_map(|task| Event::Fork { task }),
        1 => number().prop_map(|bytes| Event::Mem { bytes }),
        1 => number().prop_map(|bytes| Event::IoRun { bytes }),
    ];
    (text(), event).prop_map(|(key, event)| NamedEvent { key, event })
}

fn phase() -> impl Strategy<Value = Phase> {
    (
        text(),
        prop_oneof![3 => 1i64..4, 1 => number()],
        attributes(),
        prop::collection::vec(event(), 0..5),
    )
        .prop_map(|(name, loop_count, attributes, events)| Phase {
            name,
            loop_count,
            attributes,
            events,
        })
}

fn task() -> impl Strategy<Value = TaskSpec> {
    (
        "[a-z]{1,6}",
        prop_oneof![4 => 1i64..4, 1 => number()],
        prop_oneof![3 => 1i64..4, 1 => Just(-1i64), 1 => number()],
        prop_oneof![3 => Just(0i64), 1 => number()],
        attributes(),
        prop::collection::vec(phase(), 0..3),
    )
        .prop_map(
            |(name, instances, loop_count, delay_us, attributes, phases)| TaskSpec {
                name,
                instances,
                loop_count,
                delay_us,
                attributes,
                phases,
            },
        )
}

/// Any scenario the model can hold, valid ones included.
fn scenario() -> impl Strategy<Value = Scenario> {
    let global = (
        prop_oneof![3 => 1i64..10, 1 => Just(-1i64), 1 => number()],
        prop_oneof![
            3 => (0i64..2).prop_map(Calibration::Cpu),
            1 => number().prop_map(Calibration::Cpu),
            1 => number().prop_map(Calibration::NsPerLoop),
        ],
        policy(),
        prop::collection::vec(prop_oneof![1i64..=1024, number()], 0..5),
        prop::collection::vec(prop_oneof![1i64..=1024, number()], 0..5),
        prop::collection::vec(
            (
                text(),
                prop_oneof![2i64..=1024, number()],
                prop::option::of(number()),
                number(),
                number(),
                prop::collection::vec(
                    (number(), prop::option::of(number()), number(), number()).prop_map(
                        |(at_us, quota_us, period_us, burst_us)| BandwidthChange {
                            at_us,
                            quota_us,
                            period_us,
                            burst_us,
                        },
                    ),
                    0..3,
                ),
            )
                .prop_map(|(path, shares, quota_us, period_us, burst_us, changes)| {
                    TaskGroup {
                        path,
                        shares,
                        quota_us,
                        period_us,
                        burst_us,
                        changes,
                    }
                }),
            0..3,
        ),
        any::<bool>(),
    )
        .prop_map(
            |(
                duration_s,
                calibration,
                default_policy,
                capacities,
                frequency_scales,
                task_groups,
                pi_enabled,
            )| {
                Global {
                    duration_s,
                    calibration,
                    default_policy,
                    capacities,
                    frequency_scales,
                    task_groups,
                    pi_enabled,
                }
            },
        );
    (global, prop::collection::vec(task(), 0..4))
        .prop_map(|(global, tasks)| Scenario { global, tasks })
}

/// Scenarios that validation accepts on one CPU or more (finite loops, values in
/// range, unique names), so that edits start from blobs the kernel would run.
fn valid_scenario() -> impl Strategy<Value = Scenario> {
    let event = prop_oneof![
        3 => (0i64..1000).prop_map(|us| Event::Run { us }),
        1 => (0i64..1000).prop_map(|us| Event::Runtime { us }),
        2 => (0i64..1000).prop_map(|us| Event::Sleep { us }),
        1 => (1i64..1000).prop_map(|us| Event::Timer {
            reference: "unique".into(),
            period_us: Some(us),
            mode: TimerMode::Relative,
        }),
        1 => Just(Event::Yield),
        1 => "[a-z]{1,3}".prop_map(|name| Event::SemPost { name }),
        1 => "[a-z]{1,3}".prop_map(|condition| Event::Signal { condition }),
        1 => (0i64..1_000_000).prop_map(|bytes| Event::Mem { bytes }),
        1 => (0i64..1_000_000).prop_map(|bytes| Event::IoRun { bytes }),
    ];
    let attributes = (
        prop::option::weighted(0.3, -20i64..=19),
        prop::option::weighted(0.2, Just(vec![0i64])),
        prop::option::weighted(0.2, 0i64..=512),
        prop::option::weighted(0.2, 512i64..=1024),
        prop::option::weighted(0.2, prop::sample::select(vec!["/a", "/a/b", "/c"])),
    )
        .prop_map(
            |(priority, cpus, util_min, util_max, taskgroup)| Attributes {
                policy: None,
                priority,
                cpus,
                util_min,
                util_max,
                taskgroup: taskgroup.map(String::from),
                custom_slice_us: None,
            },
        );
    let phase = (
        "[a-z]{0,4}",
        1i64..3,
        attributes.clone(),
        prop::collection::vec(("[a-z]{1,5}", event), 1..4),
    )
        .prop_map(|(name, loop_count, attributes, events)| Phase {
            name,
            loop_count,
            attributes,
            events: events
                .into_iter()
                .map(|(key, event)| NamedEvent { key, event })
                .collect(),
        });
    let task = (
        "[a-z]{1,6}",
        1i64..3,
        1i64..3,
        0i64..100,
        attributes,
        prop::collection::vec(phase, 1..3),
    );
    (
        1i64..10,
        prop::collection::vec(
            (prop::sample::select(vec!["/a", "/a/b", "/c"]), 2i64..=1024),
            0..3,
        ),
        prop::collection::vec(task, 1..4),
    )
        .prop_map(|(duration_s, groups, tasks)| Scenario {
            global: Global {
                duration_s,
                task_groups: groups
                    .into_iter()
                    .map(|(path, shares)| TaskGroup::with_shares(path.into(), shares))
                    .collect(),
                ..Global::default()
            },
            tasks: tasks
                .into_iter()
                .enumerate()
                .map(
                    |(index, (name, instances, loop_count, delay_us, attributes, phases))| {
                        TaskSpec {
                            // The index keeps names (and instance names) unique.
                            name: format!("{name}{index}"),
                            instances,
                            loop_count,
                            delay_us,
                            attributes,
                            phases,
                        }
                    },
                )
                .collect(),
        })
}

/// What a case feeds the decoder.
#[derive(Clone, Debug)]
enum Input {
    /// Any bytes.
    Bytes(Vec<u8>),
    /// A valid header over any body, resealed.
    Body(Vec<u8>),
    /// A scenario's blob, with byte edits, resealed or not.
    Edited(Scenario, Vec<ByteEdit>, bool),
}

fn input() -> impl Strategy<Value = (Input, usize)> {
    let input = prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Input::Bytes),
        2 => prop::collection::vec(any::<u8>(), 0..256).prop_map(Input::Body),
        7 => (
            prop_oneof![valid_scenario(), scenario()],
            prop::collection::vec(byte_edits(3), 0..=1),
            prop::bool::weighted(0.8)
        )
            .prop_map(|(scenario, edits, reseal)| {
                Input::Edited(scenario, edits.into_iter().flatten().collect(), reseal)
            }),
    ];
    let nr_cpus = prop_oneof![4 => 1usize..=8, 1 => Just(0usize), 1 => Just(64usize)];
    (input, nr_cpus)
}

fn kind(error: &WireError) -> Outcome {
    match error.kind {
        WireErrorKind::BadMagic { .. }
        | WireErrorKind::UnsupportedVersion { .. }
        | WireErrorKind::BadTotalLength { .. } => "refused: header",
        WireErrorKind::ChecksumMismatch { .. } => "refused: checksum",
        WireErrorKind::Invalid(_) => "refused: invalid scenario",
        _ => "refused: body",
    }
}

#[test]
fn fuzz_wire() {
    let _measuring = MEASURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The case that allocated the most per byte of blob: (bytes, blob length).
    let largest = std::cell::Cell::new((0usize, 1usize));
    let report = fairway_fuzzing::run(
        "wire",
        env!("CARGO_MANIFEST_DIR"),
        60_000,
        input(),
        |(input, nr_cpus)| -> Result<Outcome, TestCaseError> {
            let blob = match &input {
                Input::Bytes(bytes) => bytes.clone(),
                Input::Body(body) => {
                    let mut blob = MAGIC.to_vec();
                    blob.extend_from_slice(&VERSION.to_le_bytes());
                    blob.extend_from_slice(&[0; 8]);
                    blob.extend_from_slice(body);
                    reseal(&mut blob);
                    blob
                }
                Input::Edited(scenario, edits, reseal_it) => {
                    let mut blob = encode(scenario).expect("a small scenario encodes");
                    if edits.is_empty() {
                        // Unedited, a blob decodes to the scenario written.
                        prop_assert_eq!(decode(&blob), Ok(scenario.clone()));
                    }
                    apply(&mut blob, edits, ByteOrder::Little);
                    if *reseal_it {
                        reseal(&mut blob);
                    }
                    blob
                }
            };
            let (decoded, peak) = measured(|| decode(&blob));
            let (most, length) = largest.get();
            if peak * length > most * blob.len().max(1) {
                largest.set((peak, blob.len().max(1)));
            }
            prop_assert!(
                peak <= ALLOCATION_PER_BYTE * blob.len() + ALLOCATION_SLACK,
                "{} bytes allocated to decode a {}-byte blob",
                peak,
                blob.len()
            );
            if let Ok(scenario) = &decoded {
                let (_, peak) = measured(|| scenario.validate(nr_cpus));
                prop_assert!(
                    peak <= VALIDATION_ALLOCATION,
                    "{} bytes allocated to validate",
                    peak
                );
            }
            let result = decode_and_validate(&blob, nr_cpus);
            match result {
                Ok(scenario) => {
                    // Whatever is accepted is what `decode` gives, valid, and
                    // written back to the same bytes.
                    prop_assert_eq!(decoded.as_ref(), Ok(&scenario));
                    prop_assert!(scenario.validate(nr_cpus).is_ok());
                    prop_assert_eq!(encode(&scenario).unwrap(), blob);
                    Ok("accepted")
                }
                Err(error) => {
                    prop_assert!(error.offset <= blob.len(), "{}", error);
                    prop_assert!(!error.to_string().is_empty());
                    match (&error.kind, &decoded) {
                        // Refused by validation: decoded, and `validate` says why.
                        (WireErrorKind::Invalid(invalid), Ok(scenario)) => {
                            prop_assert_eq!(scenario.validate(nr_cpus), Err(invalid.clone()));
                        }
                        (WireErrorKind::Invalid(_), Err(e)) => {
                            prop_assert!(false, "decode refused what validation saw: {}", e)
                        }
                        (_, decoded) => prop_assert_eq!(decoded, &Err(error.clone())),
                    }
                    Ok(kind(&error))
                }
            }
        },
    );
    let (most, length) = largest.get();
    println!(
        "fuzz: wire: decoding allocated at most {:.1} bytes per byte of blob ({most} for {length})",
        most as f64 / length as f64
    );
    // Every stage of the reader is reached.
    for outcome in [
        "accepted",
        "refused: header",
        "refused: checksum",
        "refused: body",
        "refused: invalid scenario",
    ] {
        assert!(report.count(outcome) > 0, "{outcome}: {report:?}");
    }
}

/// Every four bytes of a blob in turn set to `u32::MAX` (the largest count a blob
/// can hold; 2^32 cannot be written), resealed: each count field is refused as a
/// length overflow, and no decode allocates beyond the bound.
#[test]
fn counts_of_u32_max_are_refused_before_allocating() {
    let _measuring = MEASURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let phase = |events: Vec<NamedEvent>| Phase {
        name: "p".into(),
        loop_count: 1,
        attributes: Attributes {
            cpus: Some(vec![0, 1]),
            taskgroup: Some("/g".into()),
            ..Attributes::default()
        },
        events,
    };
    let scenario = Scenario {
        global: Global {
            capacities: vec![1024, 512],
            frequency_scales: vec![1024, 1024],
            task_groups: vec![TaskGroup::with_shares("/g".into(), 1024)],
            ..Global::default()
        },
        tasks: vec![TaskSpec {
            name: "t".into(),
            instances: 1,
            loop_count: 1,
            delay_us: 0,
            attributes: Attributes::default(),
            phases: vec![phase(vec![
                NamedEvent {
                    key: "run".into(),
                    event: Event::Run { us: 10 },
                },
                NamedEvent {
                    key: "timer".into(),
                    event: Event::Timer {
                        reference: "unique".into(),
                        period_us: Some(100),
                        mode: TimerMode::Relative,
                    },
                },
            ])],
        }],
    };
    let blob = encode(&scenario).unwrap();
    assert_eq!(decode_and_validate(&blob, 2), Ok(scenario));
    let mut overflows = 0;
    for at in HEADER_LEN..blob.len() - 3 {
        let mut edited = blob.clone();
        edited[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        reseal(&mut edited);
        let (result, peak) = measured(|| decode_and_validate(&edited, 2));
        assert!(
            peak <= ALLOCATION_PER_BYTE * edited.len() + ALLOCATION_SLACK,
            "u32::MAX at byte {at}: {peak} bytes allocated to decode"
        );
        if let Err(WireError {
            offset,
            kind: WireErrorKind::LengthOverflow { length, .. },
        }) = result
            && (offset, length) == (at, u32::MAX)
        {
            overflows += 1;
        }
    }
    // The counts: capacities, frequency scales, task groups, a group's path and its
    // limit changes, tasks, a task's name and phases, the phase's name, cpus, task
    // group and events, two event keys and the timer's reference.
    assert_eq!(overflows, 15);
}
