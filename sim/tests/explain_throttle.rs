//! Explain mode at a throttle (`--explain` with a group's `cpu.max`): every
//! throttle and unthrottle it prints follows CFS bandwidth control's rule
//! (docs/linux-sched-reference.md §4.2), checked from the printed numbers
//! alone, and their count is the one `tests/scenarios/bandwidth-25-100.json`
//! works out: a CPU-bound task in a group limited to 25 ms per 100 ms runs
//! 25 ms of each of the run's 10 periods, so it is throttled 10 times and
//! unthrottled by the 9 refills inside the run.

use fairway_sched::bandwidth::PeriodTimerStart;
use fairway_sched::fair::EevdfTunables;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;

#[test]
fn every_explained_throttle_follows_the_bandwidth_rule() {
    let path = format!(
        "{}/../tests/scenarios/bandwidth-25-100.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario =
        fairway_rtapp::parse_and_validate(&std::fs::read_to_string(path).unwrap(), 1).unwrap();
    let config = Config {
        policy: PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
        policy_name: "eevdf".into(),
        capacities: vec![CpuCapacity::default(); 1],
        tick_ns: 4 * MS,
        duration_ns: Some(1_000 * MS),
        sample_interval_ns: MS,
        hrtick: false,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        uclamp: false,
        bandwidth_timer: PeriodTimerStart::Aligned,
        cfs_bandwidth: true,
        dvfs: None,
    };
    let results = Simulation::new(&scenario, config)
        .unwrap()
        .with_explain(1_000)
        .run(None)
        .unwrap();
    let explained = &results.explained_throttles;
    let mut throttled = false;
    let (mut throttles, mut unthrottles) = (0, 0);
    for (at, view) in explained {
        assert_eq!((view.group.as_str(), view.cpu), ("/a", 0), "at {at} ns");
        assert_eq!(view.quota, Some(25 * MS), "at {at} ns");
        assert_eq!(view.period, 100 * MS, "at {at} ns");
        // They alternate, a throttle first.
        assert_ne!(view.throttled, throttled, "at {at} ns: {view:?}");
        throttled = view.throttled;
        if view.throttled {
            // Spent, and the pool had nothing left to give.
            assert!(view.runtime_remaining <= 0, "at {at} ns: {view:?}");
            assert_eq!(view.pool_runtime, Some(0), "at {at} ns: {view:?}");
            throttles += 1;
        } else {
            // Runtime handed over, at a refill (a multiple of the period).
            assert!(view.runtime_remaining > 0, "at {at} ns: {view:?}");
            assert_eq!(at % (100 * MS), 0, "at {at} ns: {view:?}");
            unthrottles += 1;
        }
    }
    assert_eq!((throttles, unthrottles), (10, 9), "{explained:?}");
}
