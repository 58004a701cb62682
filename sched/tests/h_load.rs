//! `RunQueue::task_h_load` (Linux's `task_h_load`, §2.7): a task's load as the
//! root run queue sees it through its groups.
//!
//! One CPU, two groups of equal shares, one always-running task in the first
//! and three in the second. In steady state every task and group entity is
//! always runnable, so each entity's load_avg tends to its weight (§2.2): the
//! group entities to their share of 1024, the tasks to 1024 (nice 0). The root
//! queue then carries 2048 and the h_load of a task in a group of n tasks is
//! about 1024 × 1024 / (n × 1024) = 1024 / n: 1024 and 341.

use fairway_sched::class::{EnqueueFlags, SchedClass};
use fairway_sched::fair::CfsTunables;
use fairway_sched::run_queue::{PolicyKind, RunQueue};
use fairway_sched::task::{GroupId, TaskId, TaskParams};

#[test]
fn h_load_divides_a_groups_load_among_its_tasks() {
    let mut rq = RunQueue::with_groups(PolicyKind::Cfs(CfsTunables::for_cpus(1)), 8, 4);
    let a = rq.create_group(GroupId::ROOT, 1024).unwrap();
    let b = rq.create_group(GroupId::ROOT, 1024).unwrap();
    let groups = [a, b, b, b];
    for (i, &group) in groups.iter().enumerate() {
        let params = TaskParams {
            group,
            ..TaskParams::default()
        };
        rq.task_new(TaskId(i as u16), &params, 0).unwrap();
        rq.enqueue_task(TaskId(i as u16), 0, EnqueueFlags::default());
    }
    let mut now = 0;
    let mut current = rq.pick_next_task(now).unwrap();
    rq.set_next_task(current, now);
    while now < 3_000_000_000 {
        now += 1_000_000;
        if rq.task_tick(current, now).is_needed() {
            rq.put_prev_task(current, now);
            current = rq.pick_next_task(now).unwrap();
            rq.set_next_task(current, now);
        }
        rq.update_blocked_averages(now);
    }
    // The task in the lone group is seen with the whole group's load; each of
    // the three shares its group's.
    let alone = rq.task_h_load(TaskId(0));
    let shared: Vec<u64> = (1..4).map(|t| rq.task_h_load(TaskId(t))).collect();
    assert!((1004..=1044).contains(&alone), "alone: {alone}");
    for h in shared {
        assert!((334..=348).contains(&h), "shared: {h}");
    }
    // Without groups, h_load is the task's own load.
    let mut flat = RunQueue::new(PolicyKind::Cfs(CfsTunables::for_cpus(1)), 4);
    flat.task_new(TaskId(0), &TaskParams::default(), 0).unwrap();
    flat.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
    assert_eq!(
        flat.task_h_load(TaskId(0)),
        flat.task_signals(TaskId(0)).load_avg
    );
}
