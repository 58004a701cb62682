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
use fairway_sim::engine::explain::{Candidate, Competitor};
use fairway_sim::{Config, Simulation};
use fairway_trace::explain_rule::check_eevdf_pick;

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
        assert!(candidates.iter().all(|c| c.queue.is_none()));
        kept_by_parity += check_pick(index, candidates, *chosen);
    }
    // Both branches of the rule were exercised.
    eprintln!(
        "{} picks explained, {kept_by_parity} kept by RUN_TO_PARITY",
        picks.len()
    );
    assert!(kept_by_parity > 0 && kept_by_parity < picks.len());
}

/// Checks one explained pick level by level (the rule is
/// `fairway_trace::explain_rule`, read from the printed numbers alone);
/// returns the levels RUN_TO_PARITY kept.
fn check_pick(index: usize, candidates: &[Candidate], chosen: Option<usize>) -> usize {
    check_eevdf_pick(candidates, chosen)
        .unwrap_or_else(|error| panic!("pick {index}: {error}"))
        .kept
}

#[test]
fn explained_picks_in_a_hierarchy_follow_the_rule_at_every_level() {
    // One CPU: a hog at the top level beside groups /a (with a nested /a/b)
    // and /c, of different shares, with a periodic task in /a/b waking into
    // the hierarchy. Each pick descends from the CPU's queue.
    // (The kernel's test boots the same file: `kernel-explain-groups`.)
    let text = include_str!("../../tests/scenarios/explain-groups-eevdf.json");
    let scenario = parse_and_validate(text, 1).unwrap();
    let results = Simulation::new(&scenario, eevdf(1))
        .unwrap()
        .with_explain(3_000)
        .run(None)
        .unwrap();
    let picks = &results.explained_picks;
    assert!(picks.len() >= 400, "only {} picks explained", picks.len());
    let (mut deep, mut kept) = (0, 0);
    for (index, (candidates, chosen)) in picks.iter().enumerate() {
        kept += check_pick(index, candidates, *chosen);
        // The chosen task's depth: /a/b's tasks are three levels down.
        let queue = candidates
            .iter()
            .find(|c| Some(c.who.clone()) == chosen.map(Competitor::Task))
            .and_then(|c| c.queue.clone());
        deep += usize::from(queue.as_deref() == Some("/a/b"));
    }
    eprintln!(
        "{} picks explained, {deep} of a task in /a/b, {kept} levels kept by RUN_TO_PARITY",
        picks.len()
    );
    assert!(
        deep > 0 && kept > 0,
        "{deep} picks into /a/b, {kept} levels kept"
    );
}
