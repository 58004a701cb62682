//! Model-level tests: validation paths and the translation into `TaskParams`.

use alloc::string::ToString;
use alloc::vec;

use super::*;
use fairway_sched::task::{CpuMask, Policy};

fn task(attributes: Attributes, events: Vec<Event>) -> TaskSpec {
    TaskSpec {
        name: "t".into(),
        instances: 1,
        loop_count: 1,
        delay_us: 0,
        attributes,
        phases: vec![Phase {
            name: "p".into(),
            loop_count: 1,
            attributes: Attributes::default(),
            events: events
                .into_iter()
                .map(|event| NamedEvent {
                    key: match event {
                        Event::Run { .. } => "run".into(),
                        Event::Timer { .. } => "timer".into(),
                        _ => "other".into(),
                    },
                    event,
                })
                .collect(),
        }],
    }
}

fn scenario(tasks: Vec<TaskSpec>) -> Scenario {
    Scenario {
        global: Global::default(),
        tasks,
    }
}

#[test]
fn task_params_follow_rt_app_meaning_of_priority() {
    let s = scenario(vec![]);
    let other = Attributes {
        priority: Some(-5),
        cpus: Some(vec![0, 2]),
        ..Attributes::default()
    };
    let params = s.task_params(&other);
    assert_eq!(params.policy, Policy::Normal { nice: -5 });
    assert_eq!(params.affinity, CpuMask(0b101));
    // rt-app: RT policies default to priority 10; no `cpus` means every CPU.
    let rr = Attributes {
        policy: Some(PolicyName::RoundRobin),
        ..Attributes::default()
    };
    let params = s.task_params(&rr);
    assert_eq!(params.policy, Policy::RoundRobin { priority: 10 });
    assert_eq!(params.affinity, CpuMask::ALL);
    assert_eq!(params.validate(), Ok(()));
}

#[test]
fn phase_attributes_override_the_task() {
    let parent = Attributes {
        priority: Some(3),
        cpus: Some(vec![1]),
        ..Attributes::default()
    };
    let own = Attributes {
        cpus: Some(vec![0]),
        ..Attributes::default()
    };
    let effective = own.inherit(&parent);
    assert_eq!(effective.priority, Some(3));
    assert_eq!(effective.cpus, Some(vec![0]));
    assert!(Attributes::default().is_empty());
    assert!(!own.is_empty());
}

#[test]
fn validation_names_path_and_value() {
    let s = scenario(vec![task(
        Attributes::default(),
        vec![Event::Run { us: -5 }],
    )]);
    let error = s.validate(1).unwrap_err();
    assert_eq!(error.path, "tasks.t.phases.p.run");
    assert_eq!(error.kind, ErrorKind::Negative { value: -5 });
    assert_eq!(error.to_string(), "tasks.t.phases.p.run: -5 is negative");

    let timer = Event::Timer {
        reference: "unique".into(),
        period_us: None,
        mode: TimerMode::Relative,
    };
    let s = scenario(vec![task(Attributes::default(), vec![timer])]);
    let error = s.validate(1).unwrap_err();
    assert_eq!(error.path, "tasks.t.phases.p.timer.period");
    assert_eq!(error.kind, ErrorKind::Missing);

    let fifo = Attributes {
        policy: Some(PolicyName::Fifo),
        priority: Some(0),
        ..Attributes::default()
    };
    let s = scenario(vec![task(fifo, vec![Event::Run { us: 1 }])]);
    assert_eq!(
        s.validate(1).unwrap_err().kind,
        ErrorKind::OutOfRange {
            value: 0,
            min: 1,
            max: 99
        }
    );
}

#[test]
fn durations_are_bounded_so_nanoseconds_fit() {
    let s = scenario(vec![task(
        Attributes::default(),
        vec![Event::Run {
            us: validate::MAX_DURATION_US + 1,
        }],
    )]);
    assert!(matches!(
        s.validate(1).unwrap_err().kind,
        ErrorKind::OutOfRange { .. }
    ));
    // The largest accepted duration, in ns, times 1024 * 1024 still fits a u128 and the ns
    // value itself fits a u64.
    assert!(
        (validate::MAX_DURATION_US as u64)
            .checked_mul(1000)
            .is_some()
    );
}

#[test]
fn a_valid_scenario_passes() {
    let timer = Event::Timer {
        reference: "unique".into(),
        period_us: Some(16_000),
        mode: TimerMode::Relative,
    };
    let s = scenario(vec![task(
        Attributes::default(),
        vec![Event::Run { us: 4_000 }, timer],
    )]);
    assert_eq!(s.validate(1), Ok(()));
    assert_eq!(s.instance_count(), 1);
    assert_eq!(s.group_shares("/none"), DEFAULT_SHARES);
}

/// A clamp at task or at phase level makes the scenario use uclamp; the first
/// one is named by its path, for `uclamp=0`'s refusal.
#[test]
fn the_first_clamp_is_found_at_task_or_phase_level() {
    let run = || vec![Event::Run { us: 10 }];
    assert_eq!(
        scenario(vec![task(Attributes::default(), run())]).first_clamp(),
        None
    );
    let at_task = task(
        Attributes {
            util_max: Some(300),
            ..Attributes::default()
        },
        run(),
    );
    assert_eq!(
        scenario(vec![at_task]).first_clamp(),
        Some(("tasks.t.util_max".into(), 300))
    );
    let mut at_phase = task(Attributes::default(), run());
    at_phase.phases[0].attributes.util_min = Some(512);
    assert_eq!(
        scenario(vec![task(Attributes::default(), run()), at_phase]).first_clamp(),
        Some(("tasks.t.phases.p.util_min".into(), 512))
    );
}
