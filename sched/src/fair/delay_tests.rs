//! Tests of the EEVDF delayed dequeue (§1.5 "Delayed dequeue"): expectations
//! follow from the rules (eligible ⇔ lag ≥ 0; a delayed entity stays queued,
//! is not runnable, completes at its pick with DELAY_ZERO).

use super::FairRunQueue;
use super::test_support::*;
use crate::class::{DequeueFlags, SchedClass};
use crate::task::{GroupId, TaskId};
use crate::weight::vtime_delta;

const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

/// Two nice-0 tasks; A runs 2 ms (so A is behind the average, lag < 0) and
/// blocks.
fn a_ran_and_blocked() -> FairRunQueue {
    let mut fair = FairRunQueue::new(eevdf(MS), 2, 4);
    for t in 0..2 {
        fair.task_new(TaskId(t), &nice(0), 0).unwrap();
        fair.enqueue_task(TaskId(t), 0, INITIAL);
    }
    let a = fair.pick_next_task(0).unwrap();
    assert_eq!(a, TaskId(0));
    fair.set_next_task(a, 0);
    let _ = fair.task_tick(a, MS);
    let _ = fair.task_tick(a, 2 * MS);
    let lag = vtime_delta(
        fair.avg_vruntime(GroupId::ROOT),
        fair.entities[fair.task_se(TaskId(0)) as usize].vruntime,
    );
    assert!(lag < 0, "A ran ahead: lag {lag}");
    fair.dequeue_task(a, 2 * MS, SLEEP);
    fair.put_prev_task(a, 2 * MS);
    fair
}

#[test]
fn ineligible_sleeper_stays_queued_but_not_runnable() {
    let mut fair = a_ran_and_blocked();
    assert!(
        fair.entities[fair.task_se(TaskId(0)) as usize].delayed
            && fair.entities[fair.task_se(TaskId(0)) as usize].on_rq
    );
    assert_eq!(fair.nr_running(), 1, "only B is runnable");
    assert_eq!(fair.queues[0].nr_queued, 2, "A still queued");
    // B is picked; A is never handed to the mechanism.
    assert_eq!(fair.pick_next_task(2 * MS), Some(TaskId(1)));
    fair.set_next_task(TaskId(1), 2 * MS);
    // B runs until A's lag has burnt off; the next pick that reaches A
    // completes its dequeue (lag ≥ 0 then, reset to 0 by DELAY_ZERO).
    let mut now = 2 * MS;
    let mut curr = TaskId(1);
    while fair.entities[fair.task_se(TaskId(0)) as usize].on_rq {
        now += MS;
        assert!(now < 100 * MS, "A's delayed dequeue never completed");
        let _ = fair.task_tick(curr, now);
        fair.put_prev_task(curr, now);
        curr = fair.pick_next_task(now).unwrap();
        assert_eq!(curr, TaskId(1), "a delayed task is never picked");
        fair.set_next_task(curr, now);
    }
    assert!(!fair.entities[fair.task_se(TaskId(0)) as usize].delayed);
    assert_eq!(fair.entities[fair.task_se(TaskId(0)) as usize].vlag, 0);
    assert_eq!(fair.queues[0].nr_queued, 1);
    assert_eq!(fair.nr_running(), 1);
}

#[test]
fn delayed_task_woken_early_keeps_its_place() {
    let mut fair = a_ran_and_blocked();
    let vruntime = fair.entities[fair.task_se(TaskId(0)) as usize].vruntime;
    let deadline = fair.entities[fair.task_se(TaskId(0)) as usize].deadline;
    fair.enqueue_task(TaskId(0), 2 * MS, WAKEUP);
    assert!(!fair.entities[fair.task_se(TaskId(0)) as usize].delayed);
    assert_eq!(fair.nr_running(), 2);
    assert_eq!(fair.queues[0].nr_queued, 2);
    // Its lag is still negative: no new placement (DELAY_ZERO only resets a
    // positive lag).
    assert_eq!(
        fair.entities[fair.task_se(TaskId(0)) as usize].vruntime,
        vruntime
    );
    assert_eq!(
        fair.entities[fair.task_se(TaskId(0)) as usize].deadline,
        deadline
    );
}

#[test]
fn eligible_sleeper_leaves_at_once() {
    let mut fair = a_ran_and_blocked();
    // B has not run: lag ≥ 0, so its sleep dequeues it at once.
    fair.dequeue_task(TaskId(1), 2 * MS, SLEEP);
    assert!(
        !fair.entities[fair.task_se(TaskId(1)) as usize].on_rq
            && !fair.entities[fair.task_se(TaskId(1)) as usize].delayed
    );
    assert_eq!(fair.nr_running(), 0);
    // Only the delayed A is left; the pick completes it and finds nothing.
    assert_eq!(fair.pick_next_task(2 * MS), None);
    assert!(!fair.entities[fair.task_se(TaskId(0)) as usize].on_rq);
    assert_eq!(fair.queues[0].nr_queued, 0);
}

/// §1.5 "A delayed task woken early": the lag at the requeue is taken with the
/// running task's vruntime as last charged. A (delayed, lag −1 ms: A ran 2 ms,
/// B none) is woken 3 ms after B started running, with B not charged since.
/// Charged, B would be 3 ms ahead, V 0.5 ms past A's vruntime, A's lag
/// +0.5 ms, and DELAY_ZERO would place A again; uncharged, V is still 1 ms
/// behind A, and A keeps its vruntime and deadline.
#[test]
fn delayed_task_woken_while_another_runs_takes_its_lag_as_last_charged() {
    let mut fair = a_ran_and_blocked();
    assert_eq!(fair.pick_next_task(2 * MS), Some(TaskId(1)));
    fair.set_next_task(TaskId(1), 2 * MS);
    let a = fair.task_se(TaskId(0)) as usize;
    let (vruntime, deadline) = (fair.entities[a].vruntime, fair.entities[a].deadline);
    let lag = vtime_delta(fair.avg_vruntime(GroupId::ROOT), vruntime);
    assert_eq!(lag, -(MS as i64), "A ran 2 ms, B none: A is 1 ms past V");
    fair.enqueue_task(TaskId(0), 5 * MS, WAKEUP);
    assert!(!fair.entities[a].delayed && fair.entities[a].on_rq);
    assert_eq!(
        (fair.entities[a].vruntime, fair.entities[a].deadline),
        (vruntime, deadline),
        "A was placed again: B was charged before the requeue"
    );
    assert_eq!(fair.nr_running(), 2);
}
