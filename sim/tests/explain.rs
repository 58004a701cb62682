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

/// Checks one explained pick level by level, from the CPU's queue down to
/// the task chosen: at each level the entity chosen (the task, or the group
/// entity above it) is a candidate of that level and eligible, with the
/// earliest virtual deadline of the level's eligible candidates, unless it
/// was running and RUN_TO_PARITY keeps it. Returns the levels so kept.
fn check_pick(index: usize, candidates: &[Candidate], chosen: Option<usize>) -> usize {
    let chosen = chosen.unwrap_or_else(|| panic!("pick {index}: idle with candidates"));
    // The chosen task, then each group entity above it, by the queues the
    // candidates say they are on.
    let mut chain = vec![
        candidates
            .iter()
            .find(|c| c.who == Competitor::Task(chosen))
            .unwrap_or_else(|| panic!("pick {index}: the chosen task is not a candidate")),
    ];
    while let Some(group) = chain.last().unwrap().queue.clone() {
        let above = candidates
            .iter()
            .find(|c| c.who == Competitor::Group(group.clone()))
            .unwrap_or_else(|| {
                panic!("pick {index}: group {group} is no candidate: {candidates:?}")
            });
        chain.push(above);
        assert!(chain.len() < 16, "pick {index}: a loop of groups");
    }
    let mut kept = 0;
    for c in chain {
        let level: Vec<&Candidate> = candidates.iter().filter(|o| o.queue == c.queue).collect();
        // Deadlines against the level's V (vruntime + lag), so that
        // wrapped vruntimes compare.
        let v = c.vruntime.wrapping_add(c.lag as u64);
        let key = |deadline: u64| deadline.wrapping_sub(v) as i64;
        let earliest = level
            .iter()
            .filter(|o| o.eligible)
            .map(|o| key(o.deadline))
            .min()
            .expect("an eligible candidate");
        // RUN_TO_PARITY: the running entity, eligible, its slice protected.
        if c.protected == Some(true) && c.eligible {
            kept += 1;
            continue;
        }
        assert!(
            c.eligible,
            "pick {index}: chose an ineligible entity {:?}: {candidates:?}",
            c.who
        );
        assert_eq!(
            key(c.deadline),
            earliest,
            "pick {index}: {:?} has not the earliest eligible deadline: {candidates:?}",
            c.who
        );
    }
    kept
}

#[test]
fn explained_picks_in_a_hierarchy_follow_the_rule_at_every_level() {
    // One CPU: a hog at the top level beside groups /a (with a nested /a/b)
    // and /c, of different shares, with a periodic task in /a/b waking into
    // the hierarchy. Each pick descends from the CPU's queue.
    let text = r#"{"global": {"duration": 2, "taskgroups": {
            "/a": {"shares": 2048}, "/a/b": {}, "/c": {"shares": 512}}},
        "tasks": {
        "top": {"cpus": [0], "run": 5000000},
        "a0": {"cpus": [0], "taskgroup": "/a", "run": 5000000},
        "a1": {"cpus": [0], "taskgroup": "/a", "priority": 3, "run": 5000000},
        "b0": {"cpus": [0], "taskgroup": "/a/b", "run": 5000000},
        "tick": {"cpus": [0], "taskgroup": "/a/b", "run": 2000,
                 "timer": {"ref": "unique", "period": 9000}},
        "c0": {"cpus": [0], "taskgroup": "/c", "run": 5000000}}}"#;
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
