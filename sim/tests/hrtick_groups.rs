//! The slice-end timer (`hrtick`) on the fair class with task groups: the run of a
//! hang report, which never returned under EEVDF, must reach its end under both picks.

use fairway_rtapp::parse_and_validate_for;
use fairway_sched::round_robin::DEFAULT_SLICE_NS;
use fairway_sched::run_queue::CpuCapacity;
use fairway_sim::{Config, Simulation, policy_kind};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

/// The hang report's scenario. Placement (least-loaded, lowest id first) puts ui-0 and
/// indexer-1 on cpu0, ui-1 on cpu1, indexer-0 on cpu2. On cpu0 a root task runs against
/// the `/background` group entity, reweighted as the other CPUs' share of the group
/// comes and goes (§2.7); under EEVDF, at 375.2 ms, that entity was left a zero-length
/// request (deadline = vruntime) and the slice-end timer was re-armed at the instant it
/// fired at, for ever.
const GROUPED: &str = r#"{"tasks":{"ui":{"instance":2,"phases":{"burst":{"run":8000}}},
    "indexer":{"instance":2,"taskgroup":"/background","run0":20000,"sleep0":5000}}}"#;

#[test]
fn a_grouped_run_on_the_slice_end_timer_reaches_its_end() {
    for policy in ["eevdf", "cfs"] {
        let scenario = parse_and_validate_for(GROUPED, 3, true).unwrap();
        let config = Config {
            policy: policy_kind(policy, DEFAULT_SLICE_NS, 3, 4 * MS).unwrap(),
            policy_name: policy.into(),
            capacities: vec![CpuCapacity::default(); 3],
            tick_ns: 4 * MS,
            duration_ns: Some(SECOND),
            sample_interval_ns: MS,
            hrtick: true,
            tick_phase_ns: 0,
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
            .unwrap_or_else(|error| panic!("{policy}: {error}"));
        assert_eq!(results.end_ns, SECOND, "{policy}");
        // ui-0 and ui-1 never sleep; indexer-0, alone on cpu2, runs 20 ms of every 25.
        let busy: Vec<u64> = results.cpus.iter().map(|c| c.busy_ns).collect();
        assert_eq!(busy, [SECOND, SECOND, 800 * MS], "{policy}");
        // cpu0 was shared: its two tasks took turns.
        assert!(results.cpus[0].context_switches > 2, "{policy}");
    }
}
