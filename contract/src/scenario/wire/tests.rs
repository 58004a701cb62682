//! Wire-format tests: golden bytes, round trips of generated scenarios, every error, and
//! seeded random mutations that must never panic.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::writer::Writer;
use super::*;
use crate::scenario::{
    Attributes, BandwidthChange, Calibration, ErrorKind, Event, Global, NamedEvent, Phase,
    PolicyName, ScenarioError, TaskGroup, TaskSpec, TimerMode,
};

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-known seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    fn i64(&mut self) -> i64 {
        match self.below(4) {
            0 => [i64::MIN, -1, 0, 1, i64::MAX][self.below(5) as usize],
            1 => self.next() as i64,
            _ => self.below(200_000) as i64 - 1000,
        }
    }

    fn string(&mut self) -> String {
        const PIECES: [&str; 8] = ["run", "p", "unique", "/", "é", "日本", "🦀", ""];
        (0..self.below(5))
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect()
    }

    fn list(&mut self) -> Vec<i64> {
        (0..self.below(5)).map(|_| self.i64()).collect()
    }

    fn policy(&mut self) -> PolicyName {
        [
            PolicyName::Other,
            PolicyName::Batch,
            PolicyName::Idle,
            PolicyName::Fifo,
            PolicyName::RoundRobin,
        ][self.below(5) as usize]
    }
}

/// Which variants and optional fields a generated scenario exercised.
#[derive(Default)]
struct Coverage {
    events: [usize; EVENT_KINDS],
    timer_modes: [usize; 2],
    policies: [usize; 5],
    calibrations: [usize; 2],
    attributes_set: [usize; 7],
    pi_enabled: usize,
    period_absent: usize,
}

fn random_attributes(rng: &mut Rng, coverage: &mut Coverage) -> Attributes {
    let mut set = |rng: &mut Rng, index: usize| {
        let present = rng.chance(2);
        coverage.attributes_set[index] += usize::from(present);
        present
    };
    let policy = set(rng, 0).then(|| rng.policy());
    let priority = set(rng, 1).then(|| rng.i64());
    let cpus = set(rng, 2).then(|| rng.list());
    let util_min = set(rng, 3).then(|| rng.i64());
    let util_max = set(rng, 4).then(|| rng.i64());
    let taskgroup = set(rng, 5).then(|| rng.string());
    let custom_slice_us = set(rng, 6).then(|| rng.i64());
    if let Some(policy) = policy {
        coverage.policies[policy as usize] += 1;
    }
    Attributes {
        policy,
        priority,
        cpus,
        util_min,
        util_max,
        taskgroup,
        custom_slice_us,
    }
}

/// Event variants, one tag each (`wire.rs`, "Event").
const EVENT_KINDS: usize = 19;

fn random_event(rng: &mut Rng, coverage: &mut Coverage) -> Event {
    let kind = rng.below(EVENT_KINDS as u64) as usize;
    coverage.events[kind] += 1;
    match kind {
        0 => Event::Run { us: rng.i64() },
        1 => Event::Runtime { us: rng.i64() },
        2 => Event::Sleep { us: rng.i64() },
        3 => {
            let mode = if rng.chance(2) {
                TimerMode::Absolute
            } else {
                TimerMode::Relative
            };
            coverage.timer_modes[mode as usize] += 1;
            let period_us = if rng.chance(4) {
                coverage.period_absent += 1;
                None
            } else {
                Some(rng.i64())
            };
            Event::Timer {
                reference: rng.string(),
                period_us,
                mode,
            }
        }
        4 => Event::Yield,
        5 => Event::Lock {
            mutex: rng.string(),
        },
        6 => Event::Unlock {
            mutex: rng.string(),
        },
        7 => Event::Wait {
            condition: rng.string(),
            mutex: rng.string(),
        },
        8 => Event::Signal {
            condition: rng.string(),
        },
        9 => Event::Broadcast {
            condition: rng.string(),
        },
        10 => Event::Sync {
            condition: rng.string(),
            mutex: rng.string(),
        },
        11 => Event::Barrier { name: rng.string() },
        12 => Event::Suspend,
        13 => Event::Resume { task: rng.string() },
        14 => Event::SemPost { name: rng.string() },
        15 => Event::SemWait { name: rng.string() },
        16 => Event::Fork { task: rng.string() },
        17 => Event::Mem { bytes: rng.i64() },
        _ => Event::IoRun { bytes: rng.i64() },
    }
}

/// A structurally arbitrary scenario (values need not pass validation).
fn random_scenario(rng: &mut Rng, coverage: &mut Coverage) -> Scenario {
    let calibration = if rng.chance(2) {
        coverage.calibrations[0] += 1;
        Calibration::Cpu(rng.i64())
    } else {
        coverage.calibrations[1] += 1;
        Calibration::NsPerLoop(rng.i64())
    };
    let default_policy = rng.policy();
    coverage.policies[default_policy as usize] += 1;
    let global = Global {
        duration_s: rng.i64(),
        calibration,
        default_policy,
        capacities: rng.list(),
        frequency_scales: rng.list(),
        task_groups: (0..rng.below(3))
            .map(|_| TaskGroup {
                path: rng.string(),
                shares: rng.i64(),
                quota_us: rng.chance(2).then(|| rng.i64()),
                period_us: rng.i64(),
                burst_us: rng.i64(),
                changes: (0..rng.below(3))
                    .map(|_| BandwidthChange {
                        at_us: rng.i64(),
                        quota_us: rng.chance(2).then(|| rng.i64()),
                        period_us: rng.i64(),
                        burst_us: rng.i64(),
                    })
                    .collect(),
            })
            .collect(),
        pi_enabled: {
            let on = rng.chance(2);
            coverage.pi_enabled += usize::from(on);
            on
        },
    };
    let tasks = (0..rng.below(4))
        .map(|_| TaskSpec {
            name: rng.string(),
            instances: rng.i64(),
            loop_count: rng.i64(),
            delay_us: rng.i64(),
            attributes: random_attributes(rng, coverage),
            phases: (0..rng.below(4))
                .map(|_| Phase {
                    name: rng.string(),
                    loop_count: rng.i64(),
                    attributes: random_attributes(rng, coverage),
                    events: (0..rng.below(6))
                        .map(|_| NamedEvent {
                            key: rng.string(),
                            event: random_event(rng, coverage),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    Scenario { global, tasks }
}

/// One task `t`, one unnamed phase, one event `run` of 5 µs; everything else default.
fn tiny() -> Scenario {
    Scenario {
        global: Global::default(),
        tasks: vec![TaskSpec {
            name: "t".into(),
            instances: 1,
            loop_count: 1,
            delay_us: 0,
            attributes: Attributes::default(),
            phases: vec![Phase {
                name: String::new(),
                loop_count: 1,
                attributes: Attributes::default(),
                events: vec![NamedEvent {
                    key: "run".into(),
                    event: Event::Run { us: 5 },
                }],
            }],
        }],
    }
}

/// The blob of [`tiny`], written by hand from the layout table in the module doc. The
/// CRC-32 was computed independently with Python's `zlib.crc32` over bytes 16..130.
#[rustfmt::skip]
const TINY_BLOB: [u8; 130] = [
    b'F', b'W', b'S', b'C',                         // 0: magic
    4, 0, 0, 0,                                     // 4: version 4
    130, 0, 0, 0,                                   // 8: total length
    0xb7, 0x83, 0xec, 0x2b,                         // 12: CRC-32 0x2bec83b7
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // 16: duration -1
    0, 0, 0, 0, 0, 0, 0, 0, 0,                      // 24: calibration Cpu(0)
    0,                                              // 33: default policy Other
    0, 0, 0, 0,                                     // 34: no capacities
    0, 0, 0, 0,                                     // 38: no frequency scales
    0, 0, 0, 0,                                     // 42: no task groups
    0,                                              // 46: pi_enabled false
    1, 0, 0, 0,                                     // 47: one task
    1, 0, 0, 0, b't',                               // 51: name "t"
    1, 0, 0, 0, 0, 0, 0, 0,                         // 56: instances 1
    1, 0, 0, 0, 0, 0, 0, 0,                         // 64: loop 1
    0, 0, 0, 0, 0, 0, 0, 0,                         // 72: delay 0
    0, 0, 0, 0, 0, 0, 0,                            // 80: no attributes
    1, 0, 0, 0,                                     // 87: one phase
    0, 0, 0, 0,                                     // 91: name ""
    1, 0, 0, 0, 0, 0, 0, 0,                         // 95: loop 1
    0, 0, 0, 0, 0, 0, 0,                            // 103: no attributes
    1, 0, 0, 0,                                     // 110: one event
    3, 0, 0, 0, b'r', b'u', b'n',                   // 114: key "run"
    0, 5, 0, 0, 0, 0, 0, 0, 0,                      // 121: Run { us: 5 }
];

/// Rewrites the total length and checksum after a body edit, so the body decoder sees it.
fn reseal(blob: &mut [u8]) {
    if blob.len() < HEADER_LEN {
        return;
    }
    let total = blob.len() as u32;
    blob[8..12].copy_from_slice(&total.to_le_bytes());
    let checksum = crc32(&blob[HEADER_LEN..]);
    blob[12..16].copy_from_slice(&checksum.to_le_bytes());
}

fn error_at(blob: &[u8]) -> (usize, WireErrorKind) {
    let error = decode(blob).expect_err("blob must be refused");
    (error.offset, error.kind)
}

#[test]
fn crc32_matches_the_catalogue_check_value() {
    // CRC RevEng catalogue, CRC-32/ISO-HDLC: check = 0xcbf43926 for "123456789".
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

/// [`tiny`] with a task group `/a` (shares 1024, `cpu.max` "25000 100000") whose limit
/// changes at 0.5 s to "50000 50000" with a 10,000 µs burst.
fn tiny_with_a_limit_change() -> Scenario {
    let mut scenario = tiny();
    scenario.global.task_groups.push(TaskGroup {
        quota_us: Some(25_000),
        changes: vec![BandwidthChange {
            at_us: 500_000,
            quota_us: Some(50_000),
            period_us: 50_000,
            burst_us: 10_000,
        }],
        ..TaskGroup::with_shares("/a".into(), 1024)
    });
    scenario
}

/// The blob of [`tiny_with_a_limit_change`], written by hand from the layout table
/// (TaskGroup and BandwidthChange rows); the CRC-32 was computed independently with
/// Python's `zlib.crc32` over bytes 16..206.
#[rustfmt::skip]
const LIMIT_CHANGE_BLOB: [u8; 206] = [
    b'F', b'W', b'S', b'C',                         // 0: magic
    4, 0, 0, 0,                                     // 4: version 4
    206, 0, 0, 0,                                   // 8: total length
    0xe5, 0xbf, 0x5b, 0x4b,                         // 12: CRC-32 0x4b5bbfe5
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // 16: duration -1
    0, 0, 0, 0, 0, 0, 0, 0, 0,                      // 24: calibration Cpu(0)
    0,                                              // 33: default policy Other
    0, 0, 0, 0,                                     // 34: no capacities
    0, 0, 0, 0,                                     // 38: no frequency scales
    1, 0, 0, 0,                                     // 42: one task group
    2, 0, 0, 0, b'/', b'a',                         // 46: path "/a"
    0, 4, 0, 0, 0, 0, 0, 0,                         // 52: shares 1024
    1, 0xa8, 0x61, 0, 0, 0, 0, 0, 0,                // 60: quota Some(25000)
    0xa0, 0x86, 1, 0, 0, 0, 0, 0,                   // 69: period 100000
    0, 0, 0, 0, 0, 0, 0, 0,                         // 77: burst 0
    1, 0, 0, 0,                                     // 85: one change
    0x20, 0xa1, 7, 0, 0, 0, 0, 0,                   // 89: at 500000
    1, 0x50, 0xc3, 0, 0, 0, 0, 0, 0,                // 97: quota Some(50000)
    0x50, 0xc3, 0, 0, 0, 0, 0, 0,                   // 106: period 50000
    0x10, 0x27, 0, 0, 0, 0, 0, 0,                   // 114: burst 10000
    0,                                              // 122: pi_enabled false
    1, 0, 0, 0,                                     // 123: one task, as in TINY_BLOB
    1, 0, 0, 0, b't',
    1, 0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0,
    0, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0,
    3, 0, 0, 0, b'r', b'u', b'n',
    0, 5, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn a_limit_change_encodes_to_the_hand_written_bytes() {
    assert_eq!(
        encode(&tiny_with_a_limit_change()).unwrap(),
        LIMIT_CHANGE_BLOB
    );
    assert_eq!(
        decode_and_validate(&LIMIT_CHANGE_BLOB, 1),
        Ok(tiny_with_a_limit_change())
    );
}

#[test]
fn tiny_scenario_encodes_to_the_hand_written_bytes() {
    assert_eq!(encode(&tiny()).unwrap(), TINY_BLOB);
    assert_eq!(decode(&TINY_BLOB).unwrap(), tiny());
    assert_eq!(declared_length(&TINY_BLOB[..HEADER_LEN]), Ok(130));
}

#[test]
fn tiny_scenario_decodes_and_validates() {
    assert_eq!(decode_and_validate(&TINY_BLOB, 1), Ok(tiny()));
    let mut bad = tiny();
    bad.tasks[0].phases[0].events[0].event = Event::Run { us: -5 };
    let error = decode_and_validate(&encode(&bad).unwrap(), 1).unwrap_err();
    assert_eq!(error.offset, HEADER_LEN);
    assert_eq!(
        error.kind,
        WireErrorKind::Invalid(ScenarioError::new(
            "tasks.t.run",
            ErrorKind::Negative { value: -5 }
        ))
    );
}

#[test]
fn random_scenarios_round_trip_and_cover_every_variant() {
    let mut rng = Rng(0x5EED_0001);
    let mut coverage = Coverage::default();
    for _ in 0..2000 {
        let scenario = random_scenario(&mut rng, &mut coverage);
        let blob = encode(&scenario).unwrap();
        assert_eq!(declared_length(&blob), Ok(blob.len()));
        assert_eq!(decode(&blob).as_ref(), Ok(&scenario));
    }
    let all = |counts: &[usize]| counts.iter().all(|&n| n > 0);
    assert!(all(&coverage.events), "events {:?}", coverage.events);
    assert!(all(&coverage.timer_modes));
    assert!(all(&coverage.policies));
    assert!(all(&coverage.calibrations));
    assert!(all(&coverage.attributes_set));
    assert!(coverage.period_absent > 0);
}

#[test]
fn header_errors_name_the_field() {
    // Too short for the magic or the version.
    assert_eq!(
        error_at(&TINY_BLOB[..2]),
        (
            0,
            WireErrorKind::Truncated {
                field: "header.magic",
                needed: 4,
                available: 2
            }
        )
    );
    assert_eq!(
        error_at(&TINY_BLOB[..10]),
        (
            8,
            WireErrorKind::Truncated {
                field: "header.total_length",
                needed: 4,
                available: 2
            }
        )
    );
    let mut blob = TINY_BLOB;
    blob[0] = b'X';
    assert_eq!(
        error_at(&blob),
        (0, WireErrorKind::BadMagic { found: *b"XWSC" })
    );
    let mut blob = TINY_BLOB;
    // A blob of the previous format (before `cpu.max.changes` joined the task groups).
    blob[4] = 3;
    assert_eq!(
        error_at(&blob),
        (
            4,
            WireErrorKind::UnsupportedVersion {
                found: 3,
                supported: 4
            }
        )
    );
    let mut blob = TINY_BLOB;
    blob[8] = 15;
    assert_eq!(
        error_at(&blob),
        (8, WireErrorKind::BadTotalLength { declared: 15 })
    );
    assert_eq!(
        declared_length(&blob),
        Err(WireError::new(
            8,
            WireErrorKind::BadTotalLength { declared: 15 }
        ))
    );
}

#[test]
fn length_and_checksum_errors() {
    // The input stops before the declared total length.
    assert_eq!(
        error_at(&TINY_BLOB[..100]),
        (
            0,
            WireErrorKind::Truncated {
                field: "blob",
                needed: 130,
                available: 100
            }
        )
    );
    // The input goes on after it.
    let mut long = TINY_BLOB.to_vec();
    long.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        error_at(&long),
        (130, WireErrorKind::TrailingBytes { count: 3 })
    );
    // A body byte changed: run 5 µs becomes 6 µs.
    let mut blob = TINY_BLOB;
    blob[122] = 6;
    assert_eq!(
        error_at(&blob),
        (
            12,
            WireErrorKind::ChecksumMismatch {
                stored: 0x2BEC_83B7,
                computed: crc32(&blob[HEADER_LEN..])
            }
        )
    );
    // A consistent header over a body that stops inside the event's `us`.
    let mut cut = TINY_BLOB[..126].to_vec();
    reseal(&mut cut);
    assert_eq!(
        error_at(&cut),
        (
            122,
            WireErrorKind::Truncated {
                field: "event.run",
                needed: 8,
                available: 4
            }
        )
    );
    // A consistent header over a body with bytes after the scenario.
    let mut padded = TINY_BLOB.to_vec();
    padded.push(0);
    reseal(&mut padded);
    assert_eq!(
        error_at(&padded),
        (130, WireErrorKind::TrailingBytes { count: 1 })
    );
}

#[test]
fn body_errors_name_the_field_and_offset() {
    let edit = |offset: usize, value: u8| {
        let mut blob = TINY_BLOB;
        blob[offset] = value;
        reseal(&mut blob);
        error_at(&blob)
    };
    assert_eq!(
        edit(121, 19),
        (
            121,
            WireErrorKind::BadTag {
                field: "event",
                tag: 19
            }
        )
    );
    assert_eq!(
        edit(24, 2),
        (
            24,
            WireErrorKind::BadTag {
                field: "global.calibration",
                tag: 2
            }
        )
    );
    assert_eq!(
        edit(33, 9),
        (
            33,
            WireErrorKind::BadTag {
                field: "global.default_policy",
                tag: 9
            }
        )
    );
    assert_eq!(
        edit(80, 2),
        (
            80,
            WireErrorKind::BadTag {
                field: "attributes.policy",
                tag: 2
            }
        )
    );
    // 0xff can never appear in UTF-8; it replaces the `t` of the task name.
    assert_eq!(
        edit(55, 0xff),
        (55, WireErrorKind::BadUtf8 { field: "task.name" })
    );
    // The name's count becomes 0x0100_0001; only 130 - 55 = 75 bytes follow it.
    assert_eq!(
        edit(54, 1),
        (
            51,
            WireErrorKind::LengthOverflow {
                field: "task.name",
                length: 0x0100_0001,
                available: 75
            }
        )
    );
    // Three tasks need at least 3 x 39 = 117 bytes; 130 - 51 = 79 follow the count.
    assert_eq!(
        edit(47, 3),
        (
            47,
            WireErrorKind::LengthOverflow {
                field: "tasks",
                length: 3,
                available: 79
            }
        )
    );
}

#[test]
fn timer_tags_are_checked() {
    let mut scenario = tiny();
    scenario.tasks[0].phases[0].events[0] = NamedEvent {
        key: "timer".into(),
        event: Event::Timer {
            reference: "unique".into(),
            period_us: Some(16_000),
            mode: TimerMode::Absolute,
        },
    };
    let blob = encode(&scenario).unwrap();
    // Event at 114: key (4 + 5 bytes), tag, reference (4 + 6), period (1 + 8), mode.
    let mode = 114 + 9 + 1 + 10 + 9;
    assert_eq!(blob.len(), mode + 1);
    assert_eq!(blob[mode], 1);
    let mut bad = blob.clone();
    bad[mode] = 2;
    reseal(&mut bad);
    assert_eq!(
        error_at(&bad),
        (
            mode,
            WireErrorKind::BadTag {
                field: "timer.mode",
                tag: 2
            }
        )
    );
    let mut bad = blob;
    bad[mode - 9] = 7;
    reseal(&mut bad);
    assert_eq!(
        error_at(&bad),
        (
            mode - 9,
            WireErrorKind::BadTag {
                field: "timer.period",
                tag: 7
            }
        )
    );
}

#[test]
fn counts_beyond_u32_are_refused_when_encoding() {
    let mut writer = Writer { bytes: Vec::new() };
    let length = u32::MAX as usize + 1;
    assert_eq!(
        writer.count("task.name", length),
        Err(WireError::new(
            0,
            WireErrorKind::TooLarge {
                field: "task.name",
                length
            }
        ))
    );
}

#[test]
fn errors_display_field_and_offset() {
    let error = decode(&TINY_BLOB[..2]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "scenario blob, byte 0: header.magic needs 4 bytes, 2 left"
    );
}

/// Applies one random mutation: bit flip, byte overwrite, truncation, insertion, deletion.
fn mutate(rng: &mut Rng, blob: &mut Vec<u8>) {
    let at = |rng: &mut Rng, len: usize| rng.below(len.max(1) as u64) as usize;
    match rng.below(6) {
        0 if !blob.is_empty() => {
            let i = at(rng, blob.len());
            blob[i] ^= 1 << rng.below(8);
        }
        1 if !blob.is_empty() => {
            let i = at(rng, blob.len());
            blob[i] = rng.next() as u8;
        }
        2 => blob.truncate(at(rng, blob.len())),
        3 => {
            let i = at(rng, blob.len() + 1);
            blob.insert(i.min(blob.len()), rng.next() as u8);
        }
        4 if blob.len() > 1 => {
            let i = at(rng, blob.len());
            let n = (rng.below(8) as usize).min(blob.len() - i);
            blob.drain(i..i + n);
        }
        _ => {
            // A count or tag position gets an extreme value.
            if blob.len() >= 4 {
                let i = at(rng, blob.len() - 3);
                blob[i..i + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
            }
        }
    }
}

#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0xF022_5EED);
    let mut coverage = Coverage::default();
    let mut originals: Vec<Vec<u8>> = (0..50)
        .map(|_| encode(&random_scenario(&mut rng, &mut coverage)).unwrap())
        .collect();
    originals.push(TINY_BLOB.to_vec());
    let (mut accepted, mut refused_in_body) = (0, 0);
    // Refusals by kind: magic, version, total length, truncated, trailing, checksum, tag,
    // UTF-8, length overflow.
    let mut kinds = [0usize; 9];
    for case in 0..20_000 {
        let mut blob = originals[case % originals.len()].clone();
        for _ in 0..=rng.below(3) {
            mutate(&mut rng, &mut blob);
        }
        // Mostly reseal, so that the body decoder (not the checksum) meets the damage.
        if !rng.chance(4) {
            reseal(&mut blob);
        }
        match decode(&blob) {
            Ok(scenario) => {
                accepted += 1;
                // Whatever decodes must re-encode to the same bytes.
                assert_eq!(encode(&scenario).unwrap(), blob);
            }
            Err(error) => {
                refused_in_body += usize::from(error.offset >= HEADER_LEN);
                kinds[match error.kind {
                    WireErrorKind::BadMagic { .. } => 0,
                    WireErrorKind::UnsupportedVersion { .. } => 1,
                    WireErrorKind::BadTotalLength { .. } => 2,
                    WireErrorKind::Truncated { .. } => 3,
                    WireErrorKind::TrailingBytes { .. } => 4,
                    WireErrorKind::ChecksumMismatch { .. } => 5,
                    WireErrorKind::BadTag { .. } => 6,
                    WireErrorKind::BadUtf8 { .. } => 7,
                    WireErrorKind::LengthOverflow { .. } => 8,
                    WireErrorKind::TooLarge { .. } | WireErrorKind::Invalid(_) => {
                        panic!("decode cannot return {error}")
                    }
                }] += 1;
                assert!(error.offset <= blob.len(), "{error}");
            }
        }
        let _ = decode_and_validate(&blob, 4);
        let _ = declared_length(&blob);
    }
    // The mutations reached the body decoder, and some left a well-formed blob.
    extern crate std;
    std::eprintln!("accepted {accepted}, refused in body {refused_in_body}, kinds {kinds:?}");
    assert!(refused_in_body > 5_000, "{refused_in_body}");
    assert!(accepted > 0);
    // Every decode refusal but BadTotalLength (a total below 16 is rarely drawn; it has its
    // own test above) was met.
    assert!(
        kinds.iter().enumerate().all(|(i, &n)| i == 2 || n > 0),
        "{kinds:?}"
    );
}
