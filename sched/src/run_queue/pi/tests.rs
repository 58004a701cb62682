//! `rt_mutex_setprio` on one run queue, against the rules of
//! `docs/priority-inheritance.md`: a boosted task runs in the RT class at the
//! lent priority and preempts as a wake-up of that priority would; a deboost
//! puts it back (at the head of its own RT priority's list, or in the fair
//! class with its fair state as it was).

use super::super::*;

const MS: u64 = 1_000_000;

fn kinds() -> [PolicyKind; 3] {
    [
        PolicyKind::RoundRobin { slice: 4 * MS },
        PolicyKind::Cfs(CfsTunables::for_cpus(1)),
        PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
    ]
}

fn add(rq: &mut RunQueue, task: u16, policy: Policy, now: Nanoseconds) {
    let params = TaskParams {
        policy,
        ..TaskParams::default()
    };
    rq.task_new(TaskId(task), &params, now).unwrap();
    rq.enqueue_task(TaskId(task), now, EnqueueFlags::default());
}

fn switch(rq: &mut RunQueue, prev: TaskId, now: Nanoseconds) -> TaskId {
    rq.put_prev_task(prev, now);
    let next = rq.pick_next_task(now).unwrap();
    rq.set_next_task(next, now);
    next
}

const NICE_0: Policy = Policy::Normal { nice: 0 };
const FIFO_10: Policy = Policy::Fifo { priority: 10 };
const FIFO_50: Policy = Policy::Fifo { priority: 50 };

#[test]
fn a_boosted_fair_task_preempts_the_fair_task_running_and_comes_back_fair() {
    for kind in kinds() {
        let mut rq = RunQueue::new(kind, 8);
        add(&mut rq, 0, NICE_0, 0);
        add(&mut rq, 1, NICE_0, 0);
        let running = rq.pick_next_task(0).unwrap();
        rq.set_next_task(running, 0);
        let owner = TaskId(1 - running.0);
        // Task `running` runs 3 ms; `owner` waits, queued.
        let now = 3 * MS;
        let before = rq.task_signals(owner);
        let resched = rq.rt_mutex_setprio(owner, Some(90), now, Some(running));
        assert_eq!(resched, Ok(Resched::Reschedule), "{kind:?}");
        assert_eq!(rq.task_class(owner), Some(ClassKind::Realtime));
        assert_eq!(rq.pi_priority(owner), Some(90));
        assert_eq!(rq.rt().priority(owner), Some(90));
        assert_eq!(switch(&mut rq, running, now), owner, "{kind:?}");
        // Released at once: back to the fair class, the running task asks to
        // reschedule, and its fair signals are those it left with.
        assert_eq!(
            rq.rt_mutex_setprio(owner, None, now, Some(owner)),
            Ok(Resched::Reschedule)
        );
        assert_eq!(rq.task_class(owner), Some(ClassKind::Fair));
        assert_eq!(rq.pi_priority(owner), None);
        assert_eq!(rq.task_policy(owner), Some(NICE_0));
        let after = rq.task_signals(owner);
        assert_eq!(after.util_avg, before.util_avg, "{kind:?}");
        assert_eq!(after.load_avg, before.load_avg, "{kind:?}");
        assert_eq!(rq.nr_running(), 2);
    }
}

#[test]
fn an_rt_owner_takes_the_lent_priority_and_a_deboost_queues_it_first() {
    for kind in kinds() {
        let mut rq = RunQueue::new(kind, 8);
        add(&mut rq, 0, FIFO_10, 0); // the owner
        add(&mut rq, 1, FIFO_50, 0); // the medium task, running
        add(&mut rq, 2, FIFO_10, 0); // a peer of the owner, queued after it
        let running = rq.pick_next_task(0).unwrap();
        rq.set_next_task(running, 0);
        assert_eq!(running, TaskId(1));
        // A boost no stronger than its own priority is none.
        assert_eq!(
            rq.rt_mutex_setprio(TaskId(0), Some(10), MS, Some(running)),
            Ok(Resched::Keep)
        );
        assert_eq!(rq.pi_priority(TaskId(0)), None);
        // Lent 90 by a waiter: it preempts the priority-50 task.
        assert_eq!(
            rq.rt_mutex_setprio(TaskId(0), Some(90), MS, Some(running)),
            Ok(Resched::Reschedule)
        );
        assert_eq!(switch(&mut rq, running, MS), TaskId(0));
        // Lent less (the top waiter left): still above 50, no reschedule asked.
        assert_eq!(
            rq.rt_mutex_setprio(TaskId(0), Some(60), 2 * MS, Some(TaskId(0))),
            Ok(Resched::Keep)
        );
        assert_eq!(rq.rt().priority(TaskId(0)), Some(60));
        // Released: priority 10 again, the running task reschedules, 50 runs.
        assert_eq!(
            rq.rt_mutex_setprio(TaskId(0), None, 3 * MS, Some(TaskId(0))),
            Ok(Resched::Reschedule)
        );
        assert_eq!(switch(&mut rq, TaskId(0), 3 * MS), TaskId(1));
        // Task 1 sleeps: task 0, put at the head of priority 10's list by
        // its deboost, runs before task 2 which was queued first.
        rq.dequeue_task(TaskId(1), 4 * MS, DequeueFlags::default());
        assert_eq!(switch(&mut rq, TaskId(1), 4 * MS), TaskId(0), "{kind:?}");
    }
}

#[test]
fn a_boost_is_kept_across_a_migration_with_the_fair_state() {
    let kind = PolicyKind::Eevdf(EevdfTunables::for_cpus(2, 4 * MS));
    let mut source = RunQueue::new(kind, 8);
    let mut target = RunQueue::new(kind, 8);
    let owner = TaskId(3);
    source.task_new(owner, &TaskParams::default(), 0).unwrap();
    source.enqueue_task(owner, 0, EnqueueFlags::default());
    source.set_next_task(owner, 0);
    source.put_prev_task(owner, 10 * MS);
    source.dequeue_task(owner, 10 * MS, DequeueFlags::default());
    let before = source.task_signals(owner);
    assert!(before.util_avg > 0);
    // Boosted while asleep (it holds a mutex and sleeps), then moved.
    assert_eq!(
        source.rt_mutex_setprio(owner, Some(70), 10 * MS, None),
        Ok(Resched::Keep)
    );
    let migration = source.migrate_task_out(owner).unwrap();
    assert_eq!(migration.pi_priority, Some(70));
    assert!(migration.fair.is_some(), "the fair state travels with it");
    target.migrate_task_in(owner, &migration, 10 * MS).unwrap();
    assert_eq!(target.task_class(owner), Some(ClassKind::Realtime));
    assert_eq!(target.rt().priority(owner), Some(70));
    assert_eq!(
        target.rt_mutex_setprio(owner, None, 10 * MS, None),
        Ok(Resched::Keep)
    );
    assert_eq!(target.task_class(owner), Some(ClassKind::Fair));
    assert_eq!(target.task_signals(owner).util_avg, before.util_avg);
}

#[test]
fn an_unknown_task_is_refused() {
    let mut rq = RunQueue::new(kinds()[2], 4);
    assert_eq!(
        rq.rt_mutex_setprio(TaskId(2), Some(5), 0, None),
        Err(ParamError::UnknownTask { task: 2 })
    );
}
