//! One definition of an overrun (docs/report-format.md, "Overruns"): a timer
//! event reached after its expiry is a missed period, and no wake-up, so it has
//! no latency. The expected counts are the scenario's arithmetic, worked out
//! in `tests/scenarios/overrun-12-10.json`: alone on a CPU, ten loops of 12 ms
//! of work on a 10 ms period (each timer event 2 ms late: 10 missed periods,
//! no sleep), then ten of 4 ms (each sleeps 6 ms and is woken: 10 wake-ups,
//! each switched in at once on the idle CPU, latency 0), ending at 220 ms.
//! The same file is the trace checks' `overrun-12-10` (simulator) and
//! `kernel-overrun-12-10` cases.

use fairway_rtapp::parse_and_validate;
use fairway_sched::fair::{CfsTunables, EevdfTunables};
use fairway_sched::round_robin::DEFAULT_SLICE_NS;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;

fn config(policy: PolicyKind, name: &str) -> Config {
    Config {
        policy,
        policy_name: name.into(),
        capacities: vec![CpuCapacity::default()],
        tick_ns: 4 * MS,
        duration_ns: None,
        sample_interval_ns: MS,
        hrtick: false,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        uclamp: false,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    }
}

#[test]
fn an_overrun_is_a_missed_period_and_no_wakeup_under_every_policy() {
    let text = include_str!("../../tests/scenarios/overrun-12-10.json");
    let scenario = parse_and_validate(text, 1).unwrap();
    for (policy, name) in [
        (
            PolicyKind::RoundRobin {
                slice: DEFAULT_SLICE_NS,
            },
            "rr",
        ),
        (PolicyKind::Cfs(CfsTunables::for_cpus(1)), "cfs"),
        (
            PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
            "eevdf",
        ),
    ] {
        let results = Simulation::new(&scenario, config(policy, name))
            .unwrap()
            .run(None)
            .unwrap();
        let late = &results.tasks[0];
        assert_eq!(results.end_ns, 220 * MS, "{name}: the run's end");
        assert_eq!(late.missed_periods, 10, "{name}: missed periods");
        assert_eq!(late.wakeup_latency.count, 10, "{name}: wake-ups");
        assert_eq!(late.wakeup_latency.max, 0, "{name}: latency on an idle CPU");
        assert_eq!(late.pending_wakeups, 0, "{name}: pending");
        // 10 × 12 ms + 10 × 4 ms of work at capacity 1024.
        assert_eq!(late.runtime_ns, 160 * MS, "{name}: runtime");
        // Switched out only to sleep (once per wake-up) and at its exit.
        assert_eq!(late.voluntary_switches, 11, "{name}: sleeps and the exit");
        assert_eq!(late.involuntary_switches, 0, "{name}: preemptions");
    }
}
