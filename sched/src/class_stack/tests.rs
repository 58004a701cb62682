//! Tests of the class stack with [`RoundRobin`] standing in for the fair class.

use super::*;
use crate::round_robin::RoundRobin;
use alloc::vec::Vec;

const MS: Nanoseconds = 1_000_000;
const MAX_TASKS: usize = 16;

type Stack = ClassStack<RoundRobin>;

fn stack() -> Stack {
    ClassStack::new(MAX_TASKS, RoundRobin::new(MAX_TASKS, 4 * MS))
}

fn params(policy: Policy) -> TaskParams {
    TaskParams {
        policy,
        ..TaskParams::default()
    }
}

const NORMAL: Policy = Policy::Normal { nice: 0 };
const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};
const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

fn add(stack: &mut Stack, task: u16, policy: Policy) {
    stack.task_new(TaskId(task), &params(policy), 0).unwrap();
    stack.enqueue_task(TaskId(task), 0, EnqueueFlags::default());
}

fn run_next(stack: &mut Stack, now: Nanoseconds) -> Option<TaskId> {
    let next = stack.pick_next_task(now);
    match next {
        Some(task) => stack.set_next_task(task, now),
        None => stack.set_next_idle(now),
    }
    next
}

#[test]
fn tasks_are_recorded_in_the_class_of_their_policy() {
    let mut s = stack();
    add(&mut s, 0, NORMAL);
    add(&mut s, 1, Policy::Batch { nice: 5 });
    add(&mut s, 2, Policy::Idle);
    add(&mut s, 3, Policy::Fifo { priority: 1 });
    add(&mut s, 4, Policy::RoundRobin { priority: 99 });
    let classes: Vec<_> = (0..6).map(|t| s.task_class(TaskId(t))).collect();
    use ClassKind::*;
    assert_eq!(
        classes,
        [
            Some(Fair),
            Some(Fair),
            Some(Fair),
            Some(Realtime),
            Some(Realtime),
            None
        ]
    );
    assert_eq!(
        (s.nr_running(), s.rt().nr_running(), s.fair().nr_running()),
        (5, 2, 3)
    );
}

#[test]
fn bad_parameters_are_refused_by_the_stack() {
    let mut s = stack();
    let fifo0 = params(Policy::Fifo { priority: 0 });
    assert!(matches!(
        s.task_new(TaskId(0), &fifo0, 0),
        Err(ParamError::OutOfRange {
            field: "rt_priority",
            value: 0,
            ..
        })
    ));
    let rr100 = params(Policy::RoundRobin { priority: 100 });
    assert!(matches!(
        s.task_new(TaskId(0), &rr100, 0),
        Err(ParamError::OutOfRange {
            field: "rt_priority",
            value: 100,
            ..
        })
    ));
    let clamp = TaskParams {
        uclamp_max: Some(1025),
        ..TaskParams::default()
    };
    assert!(matches!(
        s.task_new(TaskId(0), &clamp, 0),
        Err(ParamError::OutOfRange {
            field: "uclamp_max",
            value: 1025,
            ..
        })
    ));
    assert_eq!(
        s.task_new(TaskId(16), &TaskParams::default(), 0),
        Err(ParamError::TooManyTasks {
            task: 16,
            capacity: 16
        })
    );
    assert_eq!(
        s.task_class(TaskId(0)),
        None,
        "refused tasks are not recorded"
    );
    assert_eq!(
        s.set_task_uclamp(TaskId(0), None, None),
        Err(ParamError::UnknownTask { task: 0 })
    );
}

#[test]
fn rt_runs_before_fair_and_idle_comes_last() {
    let mut s = stack();
    add(&mut s, 0, NORMAL);
    add(&mut s, 1, NORMAL);
    add(&mut s, 2, Policy::Fifo { priority: 10 });
    add(&mut s, 3, Policy::RoundRobin { priority: 20 });
    let mut order = Vec::new();
    let mut now = 0;
    while let Some(t) = run_next(&mut s, now) {
        order.push(t.0);
        now += MS;
        s.dequeue_task(t, now, SLEEP);
        s.put_prev_task(t, now);
    }
    assert_eq!(order, [3, 2, 0, 1]);
    // Nothing queued: the idle class answers "run the idle loop".
    assert!(s.idle().is_idle());
    assert_eq!(s.nr_running(), 0);
    // A wake-up ends idle at the next set_next_task.
    s.enqueue_task(TaskId(0), 10 * MS, WAKEUP);
    assert_eq!(run_next(&mut s, 10 * MS), Some(TaskId(0)));
    assert!(!s.idle().is_idle());
    assert_eq!(s.idle().idle_time(10 * MS), 6 * MS);
}

#[test]
fn rt_wakeup_preempts_fair_and_fair_wakeup_never_preempts_rt() {
    let mut s = stack();
    add(&mut s, 0, NORMAL);
    for t in 1..=2 {
        s.task_new(TaskId(t), &params(NORMAL), 0).unwrap();
    }
    s.task_new(TaskId(3), &params(Policy::Fifo { priority: 1 }), 0)
        .unwrap();
    s.task_new(TaskId(4), &params(Policy::Fifo { priority: 2 }), 0)
        .unwrap();
    let fair = run_next(&mut s, 0).unwrap();
    // Fair wakes while fair runs: the fair class (RoundRobin) decides: Keep.
    s.enqueue_task(TaskId(1), MS, WAKEUP);
    assert_eq!(s.wakeup_preempt(fair, TaskId(1), MS), Resched::Keep);
    // RT wakes while fair runs: preempt, and the RT task is picked.
    s.enqueue_task(TaskId(3), 2 * MS, WAKEUP);
    assert_eq!(
        s.wakeup_preempt(fair, TaskId(3), 2 * MS),
        Resched::Reschedule
    );
    s.put_prev_task(fair, 2 * MS);
    let rt = run_next(&mut s, 2 * MS).unwrap();
    assert_eq!(rt, TaskId(3));
    // Fair wakes while RT runs: never a preemption.
    s.enqueue_task(TaskId(2), 3 * MS, WAKEUP);
    assert_eq!(s.wakeup_preempt(rt, TaskId(2), 3 * MS), Resched::Keep);
    // Higher RT wakes while RT runs: the RT class decides: preempt.
    s.enqueue_task(TaskId(4), 4 * MS, WAKEUP);
    assert_eq!(s.wakeup_preempt(rt, TaskId(4), 4 * MS), Resched::Reschedule);
    s.put_prev_task(rt, 4 * MS);
    assert_eq!(run_next(&mut s, 4 * MS), Some(TaskId(4)));
}

#[test]
fn ticks_and_yields_reach_the_tasks_class() {
    let mut s = stack();
    add(&mut s, 0, Policy::RoundRobin { priority: 5 });
    add(&mut s, 1, Policy::RoundRobin { priority: 5 });
    add(&mut s, 2, NORMAL);
    let a = run_next(&mut s, 0).unwrap();
    // RR rotates after 100 ms of 1 ms ticks (the fair task's 4 ms slice is irrelevant).
    for tick in 1..100 {
        assert_eq!(s.task_tick(a, tick * MS), Resched::Keep);
    }
    assert_eq!(s.task_tick(a, 100 * MS), Resched::Reschedule);
    s.put_prev_task(a, 100 * MS);
    let b = run_next(&mut s, 100 * MS).unwrap();
    assert_eq!(b, TaskId(1));
    s.yield_task(b, 101 * MS);
    s.put_prev_task(b, 101 * MS);
    assert_eq!(run_next(&mut s, 101 * MS), Some(TaskId(0)));
}

#[test]
fn uclamp_rq_value_follows_enqueue_and_dequeue_with_rt_boost_and_idle_holding() {
    let mut s = stack();
    let fair = TaskParams {
        uclamp_min: Some(300),
        uclamp_max: Some(500),
        ..TaskParams::default()
    };
    s.task_new(TaskId(0), &fair, 0).unwrap();
    s.task_new(TaskId(1), &params(Policy::Fifo { priority: 1 }), 0)
        .unwrap();
    assert_eq!(
        s.uclamp_eff_value(TaskId(1), ClampId::Min),
        Some(1024),
        "RT boost"
    );
    assert_eq!(s.uclamp_eff_value(TaskId(2), ClampId::Min), None);
    s.enqueue_task(TaskId(0), 0, WAKEUP);
    assert_eq!(
        (
            s.uclamp_rq_value(ClampId::Min),
            s.uclamp_rq_value(ClampId::Max)
        ),
        (300, 500)
    );
    // The RT task (1024, 1024) lifts both.
    s.enqueue_task(TaskId(1), 0, WAKEUP);
    assert_eq!(
        (
            s.uclamp_rq_value(ClampId::Min),
            s.uclamp_rq_value(ClampId::Max)
        ),
        (1024, 1024)
    );
    s.dequeue_task(TaskId(1), 1, SLEEP);
    assert_eq!(s.uclamp_rq_value(ClampId::Min), 300);
    // Last task leaves: max held at 500, min 0 (§3.2).
    s.dequeue_task(TaskId(0), 2, SLEEP);
    assert_eq!(
        (
            s.uclamp_rq_value(ClampId::Min),
            s.uclamp_rq_value(ClampId::Max)
        ),
        (0, 500)
    );
    assert!(s.uclamp_run_queue().is_idle());
}

#[test]
fn clamp_and_group_changes_recount_a_queued_task() {
    let mut s = stack();
    add(&mut s, 0, NORMAL);
    assert_eq!(s.uclamp_rq_value(ClampId::Min), 0);
    s.set_task_uclamp(TaskId(0), Some(600), None).unwrap();
    assert_eq!(s.uclamp_rq_value(ClampId::Min), 600);
    // Group (205, 512): min clamp(600, 205, 512) = 512, max clamp(1024, ..) = 512.
    let group = GroupUclamp::new(205, 512, &GroupUclamp::ROOT).unwrap();
    s.set_task_group_uclamp(TaskId(0), Some(group)).unwrap();
    assert_eq!(
        (
            s.uclamp_rq_value(ClampId::Min),
            s.uclamp_rq_value(ClampId::Max)
        ),
        (512, 512)
    );
    // Back to the root group and to default clamps.
    s.set_task_group_uclamp(TaskId(0), None).unwrap();
    s.set_task_uclamp(TaskId(0), None, None).unwrap();
    assert_eq!(
        (
            s.uclamp_rq_value(ClampId::Min),
            s.uclamp_rq_value(ClampId::Max)
        ),
        (0, 1024)
    );
    assert_eq!(
        s.set_task_uclamp(TaskId(0), Some(700), Some(600)),
        Err(ParamError::OutOfRange {
            field: "uclamp_min",
            value: 700,
            min: 0,
            max: 600
        })
    );
    // A lower RT default boost reaches RT tasks at their next enqueue.
    add(&mut s, 1, Policy::Fifo { priority: 3 });
    s.set_uclamp_sysctl(UclampSysctl::new(1024, 1024, 300).unwrap());
    assert_eq!(s.uclamp_rq_value(ClampId::Min), 1024, "counted value kept");
    s.dequeue_task(TaskId(1), 1, SLEEP);
    s.enqueue_task(TaskId(1), 2, WAKEUP);
    assert_eq!(s.uclamp_rq_value(ClampId::Min), 300);
}

#[test]
fn uclamp_rq_value_is_the_max_over_queued_tasks_under_random_sequences() {
    // Brute-force model: the max over the queued tasks' effective values,
    // computed by hand from the rules (§3.3): user value if given, else 0 for
    // the floor of a fair task, 1024 (RT default boost) for an RT task, 1024
    // for the ceiling. Values are one per bucket (0, 300, 500, 700, 1024 map to
    // buckets 0..=4, Appendix A §7), so no stale local max can hide a change.
    // When nothing is queued: min 0, max held at the last task's value (§3.2).
    let choices = [None, Some(300), Some(500), Some(700)];
    let mut seed: u64 = 0x1234_5678_9abc_def1;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _round in 0..20 {
        let mut s = stack();
        let mut effective = [[0u16; 2]; MAX_TASKS];
        let mut queued = [false; MAX_TASKS];
        for (t, task_effective) in effective.iter_mut().enumerate() {
            let rt = next(2) == 0;
            let mut min = choices[next(4) as usize];
            let mut max = choices[next(4) as usize];
            if let (Some(a), Some(b)) = (min, max) {
                (min, max) = (Some(a.min(b)), Some(a.max(b)));
            }
            let policy = if rt {
                Policy::RoundRobin {
                    priority: 1 + next(99) as u8,
                }
            } else {
                NORMAL
            };
            let p = TaskParams {
                policy,
                uclamp_min: min,
                uclamp_max: max,
                ..TaskParams::default()
            };
            s.task_new(TaskId(t as u16), &p, 0).unwrap();
            *task_effective = [
                min.unwrap_or(if rt { 1024 } else { 0 }),
                max.unwrap_or(1024),
            ];
        }
        let mut last_max = 1024;
        for step in 0..300 {
            let t = next(MAX_TASKS as u64) as usize;
            if queued[t] {
                s.dequeue_task(TaskId(t as u16), step, SLEEP);
                last_max = effective[t][1];
            } else {
                s.enqueue_task(TaskId(t as u16), step, WAKEUP);
            }
            queued[t] = !queued[t];
            let on = || (0..MAX_TASKS).filter(|&t| queued[t]);
            let expected_min = on().map(|t| effective[t][0]).max().unwrap_or(0);
            let expected_max = on().map(|t| effective[t][1]).max().unwrap_or(last_max);
            assert_eq!(s.uclamp_rq_value(ClampId::Min), expected_min, "step {step}");
            assert_eq!(s.uclamp_rq_value(ClampId::Max), expected_max, "step {step}");
            assert_eq!(s.nr_running(), on().count());
        }
    }
}

#[test]
fn throttled_rt_lets_fair_run_until_the_period_timer() {
    use crate::rt::{RR_TIMESLICE_NS, RtBandwidth};
    let rt = RtClass::with_bandwidth(MAX_TASKS, RR_TIMESLICE_NS, RtBandwidth::LINUX_DEFAULT);
    let fair = RoundRobin::new(MAX_TASKS, 4 * MS);
    let mut s = ClassStack::with_parts(
        MAX_TASKS,
        rt,
        fair,
        UclampRunQueue::default(),
        UclampSysctl::default(),
    );
    add(&mut s, 0, NORMAL);
    add(&mut s, 1, Policy::Fifo { priority: 10 });
    let hog = run_next(&mut s, 0).unwrap();
    assert_eq!(hog, TaskId(1));
    // 951 ms of RT exceeds 950 ms (sched-rt-group defaults): fair gets the CPU.
    assert_eq!(s.task_tick(hog, 951 * MS), Resched::Reschedule);
    s.put_prev_task(hog, 951 * MS);
    assert_eq!(run_next(&mut s, 951 * MS), Some(TaskId(0)));
    assert_eq!(s.rt_period_timer_deadline(), Some(1000 * MS));
    assert_eq!(s.rt_period_timer(1000 * MS), Resched::Reschedule);
    s.put_prev_task(TaskId(0), 1000 * MS);
    assert_eq!(run_next(&mut s, 1000 * MS), Some(hog));
}
