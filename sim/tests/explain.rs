//! Explain mode (`--explain`): every EEVDF pick it explains must follow the
//! rule it states (docs/linux-sched-reference.md §1.5), checked on the
//! printed numbers alone: the task chosen is among the candidates and
//! eligible (lag ≥ 0), and has the earliest virtual deadline of the
//! eligible ones, unless it was already running and RUN_TO_PARITY keeps it
//! (it is eligible and its slice protected: its protected deadline is its
//! deadline).

use fairway_rtapp::parse_and_validate;
use fairway_sched::fair::EevdfTunables;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;

fn eevdf(cpus: usize) -> Config {
    Config {
        policy: PolicyKind::Eevdf(EevdfTunables::for_cpus(cpus as u32, 4 * MS)),
        policy_name: "eevdf".into(),
        capacities: vec![CpuCapacity::default(); cpus],
        tick_ns: 4 * MS,
        duration_ns: Some(2_000 * MS),
        sample_interval_ns: MS,
        hrtick: false,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: true,
        uclamp: false,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    }
}

#[test]
fn every_explained_eevdf_pick_follows_the_rule_it_states() {
    // Hogs of three weights and two periodic tasks on 2 CPUs for 2 s: picks
    // at ticks, at wake-ups and after sleeps, with lags of both signs.
    let text = r#"{"global": {"duration": 2}, "tasks": {
        "hog0": {"cpus": [0], "priority": -3, "run": 5000000},
        "hog1": {"cpus": [0], "run": 5000000},
        "hog2": {"cpus": [1], "priority": 4, "run": 5000000},
        "hog3": {"cpus": [1], "run": 5000000},
        "short": {"run": 1000, "timer": {"ref": "unique", "period": 10000}},
        "mid": {"run": 3000, "timer": {"ref": "unique", "period": 7000}}}}"#;
    let scenario = parse_and_validate(text, 2).unwrap();
    let results = Simulation::new(&scenario, eevdf(2))
        .unwrap()
        .with_explain(5_000)
        .run(None)
        .unwrap();
    let picks = &results.explained_picks;
    assert!(picks.len() >= 1_000, "only {} picks explained", picks.len());
    let mut kept_by_parity = 0;
    for (index, (candidates, chosen)) in picks.iter().enumerate() {
        let chosen = chosen.unwrap_or_else(|| panic!("pick {index}: idle with candidates"));
        let c = candidates
            .iter()
            .find(|c| c.task == chosen)
            .unwrap_or_else(|| panic!("pick {index}: the chosen task is not a candidate"));
        let earliest = candidates
            .iter()
            .filter(|c| c.eligible)
            .map(|c| c.deadline as i64)
            .min()
            .expect("an eligible candidate");
        // RUN_TO_PARITY: the running task, eligible, its slice protected.
        let kept = c.protected == Some(true) && c.eligible;
        if kept {
            kept_by_parity += 1;
            continue;
        }
        assert!(
            c.eligible,
            "pick {index}: chose an ineligible task: {candidates:?}"
        );
        assert_eq!(
            c.deadline as i64, earliest,
            "pick {index}: not the earliest eligible deadline: {candidates:?}"
        );
    }
    // Both branches of the rule were exercised.
    eprintln!(
        "{} picks explained, {kept_by_parity} kept by RUN_TO_PARITY",
        picks.len()
    );
    assert!(kept_by_parity > 0 && kept_by_parity < picks.len());
}
