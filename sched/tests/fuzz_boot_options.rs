//! Fuzz target of the boot-option parser (`BootOptions::parse`), which the kernel
//! runs on `/chosen/bootargs` before its heap exists and the runner on `--append`:
//! for any line it returns options or a `BootOptionError` naming the word, never
//! panics, and the options of a line it accepts, written out (`Display`), parse
//! back to the same options.
//!
//! Inputs: arbitrary strings; lines of words made of the known keys (and near
//! misses) and values at the edges of their ranges, joined by ASCII and Unicode
//! white space; lines around the 1,024-byte limit; and options generated in range
//! and written out.

use fairway_fuzzing::Outcome;
use fairway_fuzzing::proptest::prelude::*;
use fairway_fuzzing::proptest::test_runner::TestCaseError;
use fairway_sched::bandwidth::PeriodTimerStart;
use fairway_sched::boot_options::{
    BootOptions, HackbenchOptions, LoadedBlob, MAX_BOOTARGS, PolicyChoice, PowerOff, Problem,
    RtAppOptions, SchedConfig, SchedPipeOptions, Workload,
};
use fairway_sched::fair::{Feature, SchedFeatures};
use fairway_sched::schedutil::{Governor, UpdateSites};

const KEYS: [&str; 44] = [
    "sched",
    "sched_feat",
    "hz",
    "hrtick",
    "skew_tick",
    "slice_us",
    "uclamp",
    "balance",
    "bw_timer",
    "bw_seed",
    "cfs_bandwidth",
    "governor",
    "cpufreq_update",
    "sched_energy_aware",
    "eas_overutilized",
    "tick_seed",
    "icount",
    "trace_records",
    "explain",
    "dtb",
    "dtb_size",
    "workload",
    "scenario",
    "scenario_size",
    "trace_switches",
    "record_core",
    "util_sample_us",
    "util_warmup_ms",
    "rtapp_log_rows",
    "loops",
    "pinned",
    "depth",
    "quota_us",
    "groups",
    "fds",
    "power_off",
    "semihosting",
    "psci",
    // Near misses.
    "HZ",
    "hz ",
    "",
    "sched=",
    "dtb_size_",
    "ｈｚ",
];

const VALUES: [&str; 39] = [
    "pelt",
    "switch",
    "schedutil",
    "performance",
    "powersave",
    "aligned",
    "period10",
    "random",
    "0",
    "1",
    "2",
    "3",
    "9",
    "10",
    "100",
    "1000",
    "10000",
    "10001",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "-5",
    "+5",
    "",
    "abc",
    "0x40000000",
    "0x",
    "0xg",
    "0XAB",
    "0xfffffffffffffffff",
    "eevdf",
    "cfs",
    "rr",
    "demo",
    "rtapp",
    "sched-pipe",
    "hackbench",
    "１",
    "٣",
];

const SEPARATORS: [&str; 7] = [" ", "  ", "\t", "\n", "\r\n", "\u{a0}", "\u{3000}"];

/// A word: `key=value`, a bare word, or `key=value=value`.
fn word() -> impl Strategy<Value = String> {
    let key = prop::sample::select(KEYS.to_vec());
    let value = prop::sample::select(VALUES.to_vec());
    prop_oneof![
        8 => (key.clone(), value.clone()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => key.clone().prop_map(String::from),
        1 => (key, value.clone(), value).prop_map(|(k, v, w)| format!("{k}={v}={w}")),
    ]
}

fn words() -> impl Strategy<Value = String> {
    prop::collection::vec((word(), prop::sample::select(SEPARATORS.to_vec())), 0..10).prop_map(
        |words| {
            words
                .into_iter()
                .map(|(word, separator)| word + separator)
                .collect()
        },
    )
}

/// Lines of 1,000 to 1,100 bytes: a valid option repeated (refused: given twice)
/// or padded with spaces, around the 1,024-byte limit.
fn long_line() -> impl Strategy<Value = String> {
    (1_000usize..1_100, any::<bool>()).prop_map(|(length, padded)| {
        if padded {
            let mut line = String::from("hz=100");
            line.push_str(&" ".repeat(length - line.len()));
            line
        } else {
            "hz=100 ".repeat(length / 7)
        }
    })
}

fn options() -> impl Strategy<Value = BootOptions> {
    let blob = (any::<u64>(), 1..=u64::from(u32::MAX))
        .prop_map(|(address, size)| LoadedBlob { address, size });
    let workload = prop_oneof![
        Just(Workload::Demo),
        (
            blob.clone(),
            0..=200_000u64,
            0..=200_000u64,
            0..=10_000_000u64,
            0..=3_600_000u64,
            0..=1_000_000u64
        )
            .prop_map(
                |(
                    scenario,
                    trace_switches,
                    record_core,
                    util_sample_us,
                    util_warmup_ms,
                    rtapp_log_rows,
                )| {
                    Workload::RtApp(RtAppOptions {
                        scenario,
                        trace_switches,
                        record_core,
                        util_sample_us,
                        util_warmup_ms,
                        rtapp_log_rows,
                    })
                }
            ),
        (
            1..=100_000_000u64,
            any::<bool>(),
            0..=3u64,
            prop_oneof![Just(0u64), 1000..=1_000_000_000u64]
        )
            .prop_map(|(loops, pinned, depth, quota_us)| {
                Workload::SchedPipe(SchedPipeOptions {
                    loops,
                    pinned,
                    depth,
                    // A quota needs a group to limit.
                    quota_us: if depth == 0 { 0 } else { quota_us },
                })
            }),
        (1..=40u64, 1..=20u64, 1..=100_000u64).prop_map(|(groups, fds, loops)| {
            Workload::Hackbench(HackbenchOptions { groups, fds, loops })
        }),
    ];
    (
        prop::sample::select(vec![
            PolicyChoice::Eevdf,
            PolicyChoice::Cfs,
            PolicyChoice::RoundRobin,
        ]),
        10..=10_000u64,
        any::<[bool; 5]>(),
        100..=1_000_000u64,
        prop::option::of(blob),
        workload,
        (0..3u8, any::<u64>(), any::<bool>(), any::<bool>()),
        prop::sample::select(vec![
            Governor::Schedutil,
            Governor::Performance,
            Governor::Powersave,
        ]),
        (
            prop::sample::select(vec![UpdateSites::Pelt, UpdateSites::ContextSwitch]),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0u64), any::<u64>()],
        ),
        (
            prop_oneof![
                Just(0u64),
                1..=fairway_sched::boot_options::MAX_TRACE_RECORDS
            ],
            prop_oneof![
                Just(0u64),
                1..=fairway_sched::boot_options::MAX_TRACE_RECORDS
            ],
        ),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<u8>()),
    )
        .prop_map(
            |(
                policy,
                hz,
                [hrtick, skew_tick, uclamp_chosen, balance, icount],
                slice_us,
                loaded_dtb,
                workload,
                (start, seed, cfs_bandwidth, uclamp),
                governor,
                (cpufreq_update, energy_aware, eas_overutilized, tick_seed),
                (trace_records, explain),
                (reset, semihosting, psci, feature_bits),
            )| {
                let features = features_of(policy, feature_bits);
                // sched-pipe's quota_us implies cfs_bandwidth=1.
                let quota = matches!(workload, Workload::SchedPipe(p) if p.quota_us > 0);
                BootOptions {
                    sched: SchedConfig {
                        policy,
                        hz,
                        hrtick,
                        skew_tick,
                        slice_us,
                        // `uclamp=auto` or a chosen value.
                        uclamp: uclamp_chosen.then_some(uclamp),
                        balance,
                        bandwidth_timer: match start {
                            0 => PeriodTimerStart::Aligned,
                            1 => PeriodTimerStart::Period10,
                            _ => PeriodTimerStart::Random { seed },
                        },
                        cfs_bandwidth: cfs_bandwidth || quota,
                        governor,
                        cpufreq_update,
                        energy_aware,
                        eas_overutilized,
                        tick_seed,
                        features,
                    },
                    icount,
                    trace_records,
                    explain,
                    loaded_dtb,
                    workload,
                    power_off: if reset {
                        PowerOff::Reset
                    } else {
                        PowerOff::Off
                    },
                    semihosting,
                    psci,
                }
            },
        )
}

/// Each of `policy`'s feature switches on or off by a bit of `bits`; round
/// robin has none (`sched_feat=` is refused under it).
fn features_of(policy: PolicyChoice, bits: u8) -> SchedFeatures {
    policy.feature_set().map_or(SchedFeatures::DEFAULT, |set| {
        Feature::ALL
            .into_iter()
            .filter(|f| set.has(*f))
            .enumerate()
            .fold(SchedFeatures::DEFAULT, |features, (i, f)| {
                features.with(f, bits & 1 << i != 0)
            })
    })
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<String>(),
        1 => prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        6 => words(),
        1 => long_line(),
        3 => options().prop_map(|options| options.to_string()),
    ]
}

#[test]
fn fuzz_boot_options() {
    let report = fairway_fuzzing::run(
        "boot_options",
        env!("CARGO_MANIFEST_DIR"),
        200_000,
        line(),
        |line| -> Result<Outcome, TestCaseError> {
            match BootOptions::parse(&line) {
                Ok(options) => {
                    let written = options.to_string();
                    prop_assert!(written.len() <= MAX_BOOTARGS, "{}", written);
                    prop_assert_eq!(BootOptions::parse(&written), Ok(options));
                    Ok("accepted")
                }
                Err(error) => {
                    let message = error.to_string();
                    prop_assert!(message.starts_with("bootargs: "), "{}", message);
                    match error.problem {
                        Problem::TooLong(length) => {
                            prop_assert!(length == line.len() && length > MAX_BOOTARGS)
                        }
                        // The word refused is named, as written (or the option
                        // that is missing, when a required one is).
                        _ => prop_assert!(message.contains(error.word), "{}", message),
                    }
                    Ok("refused")
                }
            }
        },
    );
    assert!(report.count("accepted") * 10 > report.cases, "{report:?}");
}
