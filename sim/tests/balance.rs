//! The simulator's load balancing (`--balance`) and skewed ticks (`--skew-tick`),
//! against outcomes worked out from the rules: equal hogs released from one CPU end
//! two to a CPU (the balanced fixed point), and with `skew_tick` CPU `c` of `n` ticks
//! `c × (tick / 2) / n` after the grid.

use fairway_rtapp::parse_and_validate_for;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::results::Results;
use fairway_sim::{Config, Simulation, policy_kind};

const MS: u64 = 1_000_000;

fn run(
    text: &str,
    policy: PolicyKind,
    cpus: usize,
    tick_ns: u64,
    hrtick: bool,
) -> (Config, Results) {
    let scenario = parse_and_validate_for(text, cpus, true).unwrap();
    let config = Config {
        policy,
        policy_name: "test".into(),
        capacities: vec![CpuCapacity::default(); cpus],
        tick_ns,
        duration_ns: None,
        sample_interval_ns: MS,
        hrtick,
        tick_phase_ns: 0,
        skew_tick: true,
        tick_seed: 0,
        balance: true,
        uclamp: true,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    };
    let results = Simulation::new(&scenario, config.clone())
        .unwrap()
        .run(None)
        .unwrap();
    (config, results)
}

/// The CPU each task was last switched in on.
fn last_cpu(results: &Results, task: usize) -> usize {
    results
        .switches
        .iter()
        .rev()
        .find(|s| s.next == Some(task))
        .map(|s| s.cpu)
        .expect("the task ran")
}

/// Eight equal hogs run their first millisecond pinned to CPU 0, then may run
/// anywhere. The idle CPUs pull them (an idle CPU balances every `min_interval` =
/// 4 ms, a has-spare CPU takes half of an overloaded one's tasks, `migrate_task`),
/// until every CPU runs two: then every CPU's load equals the domain's average and
/// nothing moves (`calculate_imbalance` finds the local group not below average).
#[test]
fn hogs_released_from_one_cpu_end_two_to_a_cpu() {
    let text = r#"{"global": {"duration": 2}, "tasks": {"hog": {"instance": 8,
        "phases": {"pinned": {"cpus": [0], "run": 1000}, "free": {"run": 10000000}}}}}"#;
    let tick = 4 * MS;
    let policy = policy_kind("eevdf", 4 * MS, 4, tick).unwrap();
    let (_, results) = run(text, policy, 4, tick, true);
    let mut per_cpu = [0usize; 4];
    for task in 0..8 {
        per_cpu[last_cpu(&results, task)] += 1;
    }
    assert_eq!(per_cpu, [2, 2, 2, 2], "{:?}", results.tasks);
    let migrations: u64 = results.tasks.iter().map(|t| t.migrations).sum();
    assert!(migrations >= 6, "six hogs must leave CPU 0: {migrations}");
    // Each hog leaves its pinned phase after 1 ms of run time: all eight within
    // 8 slices of 2.1 ms on CPU 0 (17 ms); an idle CPU then pulls at its next
    // balance, at most max_interval = 8 ms later. 50 ms covers both with room.
    for cpu in &results.cpus[1..] {
        assert!(
            cpu.idle_ns < 50 * MS,
            "cpu{} idle {} ns",
            cpu.cpu,
            cpu.idle_ns
        );
    }
}

/// Round-robin, hrtick off, 100 ms ticks: slices end at the ticks. With
/// `skew_tick`, CPU 1 of 2 ticks (100 / 2) / 2 = 25 ms after CPU 0.
#[test]
fn skewed_ticks_are_spread_over_half_a_period() {
    let text = r#"{"global": {"duration": 1}, "tasks": {"hog": {"instance": 4, "run": 10000000}}}"#;
    let tick = 100 * MS;
    let policy = PolicyKind::RoundRobin { slice: 4 * MS };
    let scenario = parse_and_validate_for(text, 2, true).unwrap();
    let (mut config, _) = run(text, policy, 2, tick, false);
    config.balance = false;
    let results = Simulation::new(&scenario, config)
        .unwrap()
        .run(None)
        .unwrap();
    let times = |cpu: usize| -> Vec<u64> {
        results
            .switches
            .iter()
            .filter(|s| s.cpu == cpu && s.time_ns > 0)
            .map(|s| s.time_ns)
            .take(3)
            .collect()
    };
    assert_eq!(times(0), vec![100 * MS, 200 * MS, 300 * MS]);
    assert_eq!(times(1), vec![25 * MS, 125 * MS, 225 * MS]);
}
