//! The command lines of issue 10's reproductions, and the defaults docs/running.md lists.

use super::*;
use alloc::string::ToString;

fn refused(line: &str) -> alloc::string::String {
    match BootOptions::parse(line) {
        Ok(options) => panic!("'{line}' was accepted as {options:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn an_empty_line_gives_the_documented_defaults() {
    let options = BootOptions::parse("").unwrap();
    assert_eq!(options.sched.policy, PolicyChoice::Eevdf);
    assert_eq!(options.sched.hz, 250);
    // Linux's `HRTICK` feature is off (docs/linux-sched-reference.md §1.5).
    assert!(!options.sched.hrtick);
    // uclamp follows the workload, as Linux's static key (§3.2).
    assert_eq!(options.sched.uclamp, None);
    assert!(options.sched.uclamp_used(true) && !options.sched.uclamp_used(false));
    assert!(options.sched.balance);
    assert!(!options.sched.skew_tick && !options.icount);
    assert_eq!(options.sched.slice_us, 4000);
    assert_eq!(options.loaded_dtb, None);
    assert_eq!(options.workload, Workload::Demo);
}

#[test]
fn every_option_is_read() {
    let options = BootOptions::parse(
        "sched=cfs hz=1000 hrtick=0 skew_tick=1 slice_us=2000 uclamp=0 balance=0 icount=1 \
         workload=sched-pipe loops=7 pinned=1 depth=3",
    )
    .unwrap();
    assert_eq!(options.sched.policy, PolicyChoice::Cfs);
    assert_eq!(options.sched.hz, 1000);
    assert!(
        !options.sched.hrtick
            && options.sched.skew_tick
            && options.sched.uclamp == Some(false)
            && !options.sched.balance
    );
    assert!(options.icount);
    assert_eq!(options.sched.slice_us, 2000);
    assert_eq!(
        options.workload,
        Workload::SchedPipe(SchedPipeOptions {
            loops: 7,
            pinned: true,
            depth: 3,
            quota_us: 0,
        })
    );
    let rtapp = BootOptions::parse(
        "workload=rtapp scenario=0x40100000 scenario_size=512 trace_switches=20 util_sample_us=100 \
         rtapp_log_rows=500",
    )
    .unwrap();
    assert_eq!(
        rtapp.workload,
        Workload::RtApp(RtAppOptions {
            scenario: LoadedBlob {
                address: 0x4010_0000,
                size: 512
            },
            trace_switches: 20,
            record_core: 0,
            util_sample_us: 100,
            util_warmup_ms: 1000,
            rtapp_log_rows: 500,
        })
    );
    let hackbench = BootOptions::parse("workload=hackbench groups=8 fds=10 loops=100").unwrap();
    assert_eq!(
        hackbench.workload,
        Workload::Hackbench(HackbenchOptions {
            groups: 8,
            fds: 10,
            loops: 100
        })
    );
    let dtb = BootOptions::parse("dtb=0x40100000 dtb_size=4096").unwrap();
    assert_eq!(
        dtb.loaded_dtb,
        Some(LoadedBlob {
            address: 0x4010_0000,
            size: 4096
        })
    );
}

/// Issue 10: each of these was silently accepted or silently defaulted.
#[test]
fn bad_values_are_refused_naming_the_option_and_the_value() {
    assert_eq!(refused("hz=abc"), "bootargs: hz=abc: not a number");
    assert_eq!(refused("hz="), "bootargs: hz=: not a number");
    assert_eq!(refused("hz=-5"), "bootargs: hz=-5: not a number");
    assert_eq!(refused("hz=+5"), "bootargs: hz=+5: not a number");
    assert_eq!(refused("hz=5"), "bootargs: hz=5: outside 10..=10000");
    assert_eq!(
        refused("hz=99999999999999999999999"),
        "bootargs: hz=99999999999999999999999: outside 10..=10000"
    );
    assert_eq!(
        refused("balance=2"),
        "bootargs: balance=2: must be one of 0, 1"
    );
    assert_eq!(
        refused("trace_switches=abc workload=rtapp scenario=0x1 scenario_size=1"),
        "bootargs: trace_switches=abc: not a number"
    );
    assert_eq!(
        refused("rtapp_log_rows=1000001 workload=rtapp scenario=0x1 scenario_size=1"),
        "bootargs: rtapp_log_rows=1000001: outside 0..=1000000"
    );
    assert_eq!(
        refused("workload=sched-pipe pinned=7"),
        "bootargs: pinned=7: must be one of 0, 1"
    );
    assert_eq!(
        refused("workload=sched-pipe loops=0"),
        "bootargs: loops=0: outside 1..=100000000"
    );
    assert_eq!(
        refused("sched=eevdf garbage"),
        "bootargs: 'garbage' is not an option=value pair"
    );
    assert_eq!(
        refused("colour=blue"),
        "bootargs: colour=blue: unknown option 'colour'"
    );
    assert_eq!(
        refused("hz=100 hz=1000"),
        "bootargs: hz=1000: hz is given twice"
    );
    assert_eq!(
        refused("sched=bfs"),
        "bootargs: sched=bfs: must be one of eevdf, cfs, rr, template, lottery, stride"
    );
    assert_eq!(
        refused("workload=fork-bomb"),
        "bootargs: workload=fork-bomb: must be one of demo, rtapp, sched-pipe, hackbench"
    );
}

#[test]
fn options_of_another_workload_are_refused() {
    assert_eq!(
        refused("pinned=1"),
        "bootargs: pinned=1: an option of workload=sched-pipe, not of workload=demo"
    );
    assert_eq!(
        refused("workload=hackbench depth=2"),
        "bootargs: depth=2: an option of workload=sched-pipe, not of workload=hackbench"
    );
    assert_eq!(
        refused("workload=demo scenario=0x40100000 scenario_size=10"),
        "bootargs: scenario=0x40100000: an option of workload=rtapp, not of workload=demo"
    );
    assert_eq!(
        refused("workload=sched-pipe rtapp_log_rows=100"),
        "bootargs: rtapp_log_rows=100: an option of workload=rtapp, not of workload=sched-pipe"
    );
    assert_eq!(
        refused("workload=rtapp"),
        "bootargs: workload=rtapp needs scenario=0xADDRESS scenario_size=BYTES as well"
    );
    assert_eq!(
        refused("workload=rtapp scenario=0x40100000"),
        "bootargs: scenario=0x40100000 needs scenario_size as well"
    );
    assert_eq!(
        refused("workload=rtapp scenario=40100000 scenario_size=3"),
        "bootargs: scenario=40100000: not a number"
    );
}

#[test]
fn a_line_longer_than_the_kernel_keeps_is_refused() {
    let long = "hz=250 ".repeat(MAX_BOOTARGS / 7 + 1);
    assert!(refused(&long).contains("more than 1024"));
}

#[test]
fn whitespace_of_any_kind_separates_words() {
    let options = BootOptions::parse("  sched=rr\thz=100\n").unwrap();
    assert_eq!(options.sched.policy, PolicyChoice::RoundRobin);
    assert_eq!(options.sched.hz, 100);
}

#[test]
fn options_are_written_back_as_a_full_line() {
    let defaults = BootOptions::parse("").unwrap();
    assert_eq!(
        defaults.to_string(),
        "sched=eevdf hz=250 hrtick=0 skew_tick=0 slice_us=4000 uclamp=auto balance=1 \
         bw_timer=random bw_seed=0 cfs_bandwidth=0 governor=schedutil cpufreq_update=pelt sched_energy_aware=1 eas_overutilized=0 tick_seed=0 sched_feat=RUN_TO_PARITY,PREEMPT_SHORT,DELAY_DEQUEUE,DELAY_ZERO icount=0 trace_records=0 explain=0 workload=demo"
    );
    let line = "workload=rtapp scenario=0x40100000 scenario_size=512 dtb=0x40180000 dtb_size=9 \
                slice_us=2000 trace_switches=20";
    let options = BootOptions::parse(line).unwrap();
    assert_eq!(
        options.to_string(),
        "sched=eevdf hz=250 hrtick=0 skew_tick=0 slice_us=2000 uclamp=auto balance=1 \
         bw_timer=random bw_seed=0 cfs_bandwidth=0 governor=schedutil cpufreq_update=pelt sched_energy_aware=1 eas_overutilized=0 tick_seed=0 sched_feat=RUN_TO_PARITY,PREEMPT_SHORT,DELAY_DEQUEUE,DELAY_ZERO icount=0 trace_records=0 explain=0 dtb=0x40180000 dtb_size=9 workload=rtapp scenario=0x40100000 scenario_size=512 \
         trace_switches=20 record_core=0 util_sample_us=0 util_warmup_ms=1000 rtapp_log_rows=0"
    );
    assert_eq!(BootOptions::parse(&options.to_string()), Ok(options));
}

/// `sched_feat=` switches the chosen pick's features (§1.5) and the
/// tunables the run queues are built with follow; a word that is not a
/// feature of that pick is refused by name.
#[test]
fn scheduler_features_are_a_boot_option_of_the_chosen_pick() {
    use crate::run_queue::PolicyKind;
    let options =
        BootOptions::parse("sched_feat=NO_RUN_TO_PARITY,PREEMPT_SHORT,NO_DELAY_DEQUEUE").unwrap();
    let PolicyKind::Eevdf(tunables) = options.sched.policy_kind(4) else {
        panic!("sched=eevdf is the default");
    };
    assert_eq!(
        (
            tunables.run_to_parity,
            tunables.preempt_short,
            tunables.delay_dequeue,
            tunables.delay_zero
        ),
        (false, true, false, true)
    );
    assert!(
        options
            .to_string()
            .contains(" sched_feat=NO_RUN_TO_PARITY,PREEMPT_SHORT,NO_DELAY_DEQUEUE,DELAY_ZERO ")
    );
    assert_eq!(BootOptions::parse(&options.to_string()), Ok(options));

    let cfs = BootOptions::parse("sched=cfs").unwrap();
    assert!(
        !cfs.to_string().contains("sched_feat"),
        "CFS has no switches"
    );
    let rr = BootOptions::parse("sched=rr").unwrap();
    assert!(
        !rr.to_string().contains("sched_feat"),
        "round robin has no features"
    );

    assert_eq!(
        refused("sched_feat=NO_RUN_TO_PARITY,NO_START_DEBIT"),
        "bootargs: sched_feat=NO_RUN_TO_PARITY,NO_START_DEBIT: 'NO_START_DEBIT' is not a \
         feature switch of sched=eevdf (one of RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, \
         DELAY_ZERO, or NO_ and one of them)"
    );
    assert_eq!(
        refused("sched=cfs sched_feat=DELAY_ZERO"),
        "bootargs: sched_feat=DELAY_ZERO: sched=cfs has no feature switches"
    );
    assert_eq!(
        refused("sched=rr sched_feat=RUN_TO_PARITY"),
        "bootargs: sched_feat=RUN_TO_PARITY: sched=rr has no feature switches"
    );
}

#[test]
fn the_simulators_flags_are_the_same_settings_read_the_same_way() {
    // The simulator writes its flags as these words (`fairway-sim --hz 1000`).
    assert_eq!(SchedConfig::parse(""), Ok(SchedConfig::DEFAULT));
    assert_eq!(
        BootOptions::parse("").unwrap().sched,
        SchedConfig::DEFAULT,
        "one default for both"
    );
    for (word, uclamp) in [
        ("uclamp=auto", None),
        ("uclamp=0", Some(false)),
        ("uclamp=1", Some(true)),
    ] {
        assert_eq!(SchedConfig::parse(word).unwrap().uclamp, uclamp, "{word}");
    }
    let config = SchedConfig::parse("sched=cfs hz=1000 balance=0").unwrap();
    assert_eq!(config.policy, PolicyChoice::Cfs);
    assert_eq!((config.hz, config.balance), (1000, false));
    assert_eq!(config.tick_ns(), 1_000_000);
    for (line, message) in [
        ("hz=abc", "hz=abc: not a number"),
        ("balance=2", "balance=2: must be one of 0, 1"),
        ("uclamp=yes", "uclamp=yes: must be one of 0, 1, auto"),
        (
            "sched=foo",
            "sched=foo: must be one of eevdf, cfs, rr, template, lottery, stride",
        ),
        ("hz=", "hz=: not a number"),
        ("workload=demo", "workload=demo: unknown option 'workload'"),
    ] {
        let error = SchedConfig::parse(line).unwrap_err();
        assert_eq!(error.to_string(), alloc::format!("bootargs: {message}"));
    }
}

/// `bw_timer=` names one of the three starts of §4.6; `bw_seed=` seeds the
/// random one; anything else is refused with the word.
#[test]
fn bandwidth_timer_start_is_chosen_strictly() {
    use crate::bandwidth::PeriodTimerStart;
    let start = |line| SchedConfig::parse(line).map(|c| c.bandwidth_timer);
    assert_eq!(start(""), Ok(PeriodTimerStart::Random { seed: 0 }));
    assert_eq!(start("bw_timer=aligned"), Ok(PeriodTimerStart::Aligned));
    assert_eq!(start("bw_timer=period10"), Ok(PeriodTimerStart::Period10));
    assert_eq!(
        start("bw_timer=random bw_seed=7"),
        Ok(PeriodTimerStart::Random { seed: 7 })
    );
    let error = SchedConfig::parse("bw_timer=staggered").unwrap_err();
    assert_eq!(error.word, "bw_timer=staggered");
    assert!(SchedConfig::parse("bw_seed=-1").is_err());
}

/// `quota_us=` (sched-pipe) is Linux's smallest quota or more, and only
/// with a group to limit.
#[test]
fn sched_pipe_quota_needs_a_group() {
    let pipe = |line| match BootOptions::parse(line).map(|o| o.workload) {
        Ok(Workload::SchedPipe(options)) => Ok(options.quota_us),
        Ok(_) => panic!("not sched-pipe"),
        Err(error) => Err(error.to_string()),
    };
    assert_eq!(
        pipe("workload=sched-pipe depth=1 quota_us=50000"),
        Ok(50_000)
    );
    assert_eq!(pipe("workload=sched-pipe depth=0 quota_us=0"), Ok(0));
    assert_eq!(
        pipe("workload=sched-pipe quota_us=50000"),
        Err("bootargs: quota_us=50000 needs depth=1..3 as well".to_string())
    );
    assert!(pipe("workload=sched-pipe depth=1 quota_us=999").is_err());
    assert!(BootOptions::parse("quota_us=50000").is_err());
}

/// Where each CPU ticks: `skew_tick`'s `cpu × (period / 2) / nr_cpus` alone
/// without a seed (4 ms at HZ=250 on 4 CPUs: 0, 0.5, 1, 1.5 ms); with
/// `tick_seed=N`, a phase below one period that depends on N and the CPU,
/// the same at every call (so that runs repeat).
#[test]
fn the_tick_offset_follows_skew_tick_and_the_seed() {
    let config = |line| SchedConfig::parse(line).unwrap();
    let skewed = config("skew_tick=1");
    let offsets: alloc::vec::Vec<u64> = (0..4).map(|cpu| skewed.tick_offset_ns(cpu, 4)).collect();
    assert_eq!(offsets, [0, 500_000, 1_000_000, 1_500_000]);
    assert_eq!(config("").tick_offset_ns(3, 4), 0);
    let seeded = config("tick_seed=7");
    let first: alloc::vec::Vec<u64> = (0..8).map(|cpu| seeded.tick_offset_ns(cpu, 8)).collect();
    let again: alloc::vec::Vec<u64> = (0..8).map(|cpu| seeded.tick_offset_ns(cpu, 8)).collect();
    assert_eq!(first, again);
    assert!(first.iter().all(|&offset| offset < 4_000_000));
    assert!(first.windows(2).any(|w| w[0] != w[1]), "{first:?}");
    let other: alloc::vec::Vec<u64> = (0..8)
        .map(|cpu| config("tick_seed=8").tick_offset_ns(cpu, 8))
        .collect();
    assert_ne!(first, other);
    assert_eq!(
        SchedConfig::parse("tick_seed=x").unwrap_err().to_string(),
        "bootargs: tick_seed=x: not a number"
    );
    assert_eq!(
        SchedConfig::parse("eas_overutilized=2")
            .unwrap_err()
            .to_string(),
        "bootargs: eas_overutilized=2: must be one of 0, 1"
    );
}

/// `power_off=` chooses the PSCI call that ends a run and `semihosting=0`
/// keeps QEMU from ending it early; other values are refused naming the word.
#[test]
fn power_off_and_semihosting_are_read_and_checked() {
    let defaults = BootOptions::parse("").unwrap();
    assert_eq!(defaults.power_off, PowerOff::Off);
    assert!(defaults.semihosting);
    assert!(defaults.psci);
    let options = BootOptions::parse("power_off=reset semihosting=0 psci=0").unwrap();
    assert_eq!(options.power_off, PowerOff::Reset);
    assert!(!options.semihosting && !options.psci);
    assert_eq!(
        BootOptions::parse("power_off=off").unwrap().power_off,
        PowerOff::Off
    );
    assert_eq!(
        refused("power_off=halt"),
        "bootargs: power_off=halt: must be one of off, reset"
    );
    assert_eq!(
        refused("semihosting=no"),
        "bootargs: semihosting=no: must be one of 0, 1"
    );
    assert_eq!(refused("psci=2"), "bootargs: psci=2: must be one of 0, 1");
    let line = options.to_string();
    assert!(
        line.contains(" power_off=reset semihosting=0 psci=0 workload=demo"),
        "{line}"
    );
    assert_eq!(BootOptions::parse(&line), Ok(options));
}
