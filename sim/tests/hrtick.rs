//! Slice ends on the high-resolution timer (`hrtick`) and the tick grid's phase, on
//! the round-robin policy, against switch times worked out by hand from its rule (a
//! 4 ms slice: the running task is rescheduled once it has run 4 ms and another task
//! waits; no wake-up preemption) and from where the timer or tick falls.

use fairway_rtapp::parse_and_validate_for;
use fairway_sched::round_robin::DEFAULT_SLICE_NS;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;
/// HZ=10: ticks far apart (100 ms), so a 4 ms slice can only end on the timer.
const TICK: u64 = 100 * MS;

fn switch_times(text: &str, hrtick: bool, tick_phase_ns: u64, duration_ns: u64) -> Vec<u64> {
    let scenario = parse_and_validate_for(text, 1, true).unwrap();
    let config = Config {
        policy: PolicyKind::RoundRobin {
            slice: DEFAULT_SLICE_NS,
        },
        policy_name: "rr".into(),
        capacities: vec![CpuCapacity::default()],
        tick_ns: TICK,
        duration_ns: Some(duration_ns),
        sample_interval_ns: MS,
        hrtick,
        tick_phase_ns,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        uclamp: true,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    };
    let results = Simulation::new(&scenario, config)
        .unwrap()
        .run(None)
        .unwrap();
    results.switches.iter().map(|s| s.time_ns).collect()
}

const TWO_HOGS: &str = r#"{"tasks": {"a": {"runtime": 1000000}, "b": {"runtime": 1000000}}}"#;

#[test]
fn hrtick_ends_each_slice_after_exactly_one_slice() {
    // 0: a starts; then a switch every 4 ms, whatever the 100 ms tick does.
    let expected: Vec<u64> = (0..=10).map(|k| k * DEFAULT_SLICE_NS).collect();
    assert_eq!(switch_times(TWO_HOGS, true, 0, 41 * MS), expected);
}

#[test]
fn without_hrtick_slices_end_at_ticks() {
    assert_eq!(
        switch_times(TWO_HOGS, false, 0, 350 * MS),
        vec![0, 100 * MS, 200 * MS, 300 * MS]
    );
}

#[test]
fn the_tick_grid_follows_its_phase() {
    // Ticks at 30, 130, 230 ms: the first already finds a's 4 ms slice over.
    assert_eq!(
        switch_times(TWO_HOGS, false, 30 * MS, 250 * MS),
        vec![0, 30 * MS, 130 * MS, 230 * MS]
    );
}

#[test]
fn a_late_competitor_arms_the_timer_of_a_task_that_ran_alone() {
    // a runs alone (no slice end) until b starts at 10 ms; a has run more than a
    // slice, so the timer armed on b's arrival expires at once: b runs at 10 ms,
    // then turns every 4 ms.
    let text =
        r#"{"tasks": {"a": {"runtime": 1000000}, "b": {"delay": 10000, "runtime": 1000000}}}"#;
    assert_eq!(
        switch_times(text, true, 0, 23 * MS),
        vec![0, 10 * MS, 14 * MS, 18 * MS, 22 * MS]
    );
}
