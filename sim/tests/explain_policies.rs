//! Explain mode and runs under the registered policies (`--sched lottery`,
//! `--sched stride`, sched/src/policies/): each pick among two or more
//! tasks lists the candidates with the number the policy decided by, the
//! chosen one first; under stride the chosen task has the smallest pass.
//! `tests/scenarios/explain-rr-1cpu.json`: three nice-0 tasks that never
//! sleep on one CPU, a 4 ms slice.

use fairway_rtapp::parse_and_validate;
use fairway_sched::run_queue::CpuCapacity;
use fairway_sim::{Config, Simulation, policy_kind};

const MS: u64 = 1_000_000;

fn config(name: &str) -> Config {
    Config {
        policy: policy_kind(name, 4 * MS, 1, 4 * MS).unwrap(),
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

const SCENARIO: &str = include_str!("../../tests/scenarios/explain-rr-1cpu.json");

#[test]
fn a_lottery_pick_lists_every_candidate_with_its_tickets() {
    let scenario = parse_and_validate(SCENARIO, 1).unwrap();
    let results = Simulation::new(&scenario, config("lottery"))
        .unwrap()
        .with_explain(100)
        .run(None)
        .unwrap();
    let picks = &results.explained_policy_picks;
    assert!(picks.len() >= 50, "{} picks explained", picks.len());
    assert!(results.explained_picks.is_empty() && results.explained_rr_picks.is_empty());
    for (notes, chosen) in picks {
        assert_eq!(notes.len(), 3);
        assert_eq!(Some(notes[0].task.index()), *chosen, "the chosen one first");
        for note in notes {
            assert_eq!((note.label, note.value), ("tickets", Some(1024)), "nice 0");
        }
    }
}

#[test]
fn a_stride_pick_takes_the_smallest_pass() {
    let scenario = parse_and_validate(SCENARIO, 1).unwrap();
    let results = Simulation::new(&scenario, config("stride"))
        .unwrap()
        .with_explain(100)
        .run(None)
        .unwrap();
    let picks = &results.explained_policy_picks;
    assert!(picks.len() >= 50, "{} picks explained", picks.len());
    for (notes, _) in picks {
        // Read after the pick: the chosen task's pass is not yet charged.
        let chosen = notes[0].value.unwrap();
        assert!(
            notes.iter().all(|note| note.value.unwrap() >= chosen),
            "{notes:?}"
        );
    }
}

/// Three equal tasks under each registered policy share the CPU: stride
/// and the template within a slice of a third each, lottery within 4 σ of
/// the binomial count.
#[test]
fn equal_tasks_share_the_cpu_under_every_registered_policy() {
    let scenario = parse_and_validate(SCENARIO, 1).unwrap();
    for name in ["template", "lottery", "stride"] {
        let results = Simulation::new(&scenario, config(name))
            .unwrap()
            .run(None)
            .unwrap();
        let total: u64 = results.tasks.iter().map(|t| t.runtime_ns).sum();
        let slices = total as f64 / (4 * MS) as f64;
        let allowed = match name {
            "lottery" => 4.0 * (slices * (1.0 / 3.0) * (2.0 / 3.0)).sqrt(),
            _ => 1.0,
        };
        for task in &results.tasks {
            let error = (task.runtime_ns as f64 / (4 * MS) as f64 - slices / 3.0).abs();
            assert!(
                error <= allowed,
                "{name}: {} off by {error:.2} slices",
                task.name
            );
        }
    }
}

/// Explain mode recorded without printing (`with_explain_recorded`) keeps
/// the same picks as printed explain mode: explaining reads state and
/// changes none, whether or not it prints.
#[test]
fn recorded_explain_keeps_the_printed_picks() {
    let scenario = parse_and_validate(SCENARIO, 1).unwrap();
    let run = |recorded: bool| {
        let simulation = Simulation::new(&scenario, config("stride")).unwrap();
        let simulation = if recorded {
            simulation.with_explain_recorded(20)
        } else {
            simulation.with_explain(20)
        };
        simulation.run(None).unwrap().explained_policy_picks
    };
    let printed = run(false);
    assert_eq!(printed.len(), 20);
    assert_eq!(run(true), printed);
}
