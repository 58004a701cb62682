//! The registry: names unique, distinct from the built-ins, found by
//! `sched=`; and the adapter's bookkeeping shared by every policy.

use super::*;
use crate::boot_options::PolicyChoice;

#[test]
fn every_registered_name_is_unique_and_not_a_built_in() {
    for (index, policy) in REGISTERED.iter().enumerate() {
        assert!(
            !PolicyChoice::BUILT_IN.contains(&policy.name),
            "{}",
            policy.name
        );
        assert!(
            REGISTERED[..index]
                .iter()
                .all(|other| other.name != policy.name),
            "{} registered twice",
            policy.name
        );
        assert!(!policy.summary.is_empty());
    }
}

#[test]
fn sched_finds_every_registered_policy_by_name() {
    for id in PolicyId::all() {
        assert_eq!(
            PolicyChoice::parse(id.name()),
            Some(PolicyChoice::Registered(id))
        );
        assert_eq!(PolicyChoice::Registered(id).name(), id.name());
    }
    assert_eq!(
        PolicyChoice::names().collect::<Vec<_>>(),
        ["eevdf", "cfs", "rr", "template", "lottery", "stride"]
    );
}

#[test]
fn weights_are_linux_s_table() {
    let nice = |nice| TaskParams {
        policy: TaskPolicy::Normal { nice },
        ..TaskParams::default()
    };
    assert_eq!(weight_of(&nice(0)), 1024);
    assert_eq!(weight_of(&nice(-5)), 3121);
    assert_eq!(weight_of(&nice(19)), 15);
    let idle = TaskParams {
        policy: TaskPolicy::Idle,
        ..TaskParams::default()
    };
    assert_eq!(weight_of(&idle), 3);
}

#[test]
fn below_stays_below_its_bound_and_repeats() {
    let mut first = SplitMix64::new(7);
    let mut second = SplitMix64::new(7);
    for bound in 1..1000 {
        let value = first.below(bound);
        assert!(value < bound);
        assert_eq!(value, second.below(bound));
    }
}

#[test]
fn per_task_grows_on_demand() {
    let mut table: PerTask<u32> = PerTask::new(2);
    assert_eq!(table.get(TaskId(5)), 0);
    *table.get_mut(TaskId(5)) = 3;
    assert_eq!(table.get(TaskId(5)), 3);
}

#[test]
fn each_cpu_s_instance_is_told_its_cpu() {
    use crate::boot_options::SchedConfig;
    use crate::run_queue::RunQueue;
    let id = PolicyId::find("stride").unwrap();
    let config = SchedConfig {
        policy: PolicyChoice::Registered(id),
        ..SchedConfig::DEFAULT
    };
    let kind = config.policy_kind(4);
    for cpu in 0..4 {
        let queue = RunQueue::new(kind.for_cpu(cpu), 8);
        let context = queue.registered().unwrap().context();
        assert_eq!((context.cpu, context.nr_cpus), (cpu, 4));
    }
}

#[test]
fn a_policy_is_found_again_by_its_index() {
    for id in PolicyId::all() {
        assert_eq!(PolicyId::from_index(id.index()), Some(id));
    }
    assert_eq!(PolicyId::from_index(REGISTERED.len()), None);
}
