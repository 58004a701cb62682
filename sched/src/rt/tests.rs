//! Tests of the RT class against the rules of `sched(7)` and a brute-force model.

use super::*;

const MS: Nanoseconds = 1_000_000;

fn fifo(priority: u8) -> TaskParams {
    TaskParams {
        policy: Policy::Fifo { priority },
        ..TaskParams::default()
    }
}

fn rr(priority: u8) -> TaskParams {
    TaskParams {
        policy: Policy::RoundRobin { priority },
        ..TaskParams::default()
    }
}

const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};
const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

/// A class with tasks 0.. created with `params` and enqueued in that order.
fn class_with(params: &[TaskParams]) -> RtClass {
    let mut rt = RtClass::new(16);
    for (t, p) in params.iter().enumerate() {
        rt.task_new(TaskId(t as u16), p, 0).unwrap();
        rt.enqueue_task(TaskId(t as u16), 0, EnqueueFlags::default());
    }
    rt
}

fn run_next(rt: &mut RtClass, now: Nanoseconds) -> Option<TaskId> {
    let next = rt.pick_next_task(now)?;
    rt.set_next_task(next, now);
    Some(next)
}

/// Runs `task` to a block at `now`.
fn block(rt: &mut RtClass, task: TaskId, now: Nanoseconds) {
    rt.dequeue_task(task, now, SLEEP);
    rt.put_prev_task(task, now);
}

#[test]
fn priority_is_validated() {
    let mut rt = RtClass::new(4);
    for bad in [0, 100] {
        for params in [fifo(bad), rr(bad)] {
            assert_eq!(
                rt.task_new(TaskId(0), &params, 0),
                Err(ParamError::OutOfRange {
                    field: "rt_priority",
                    value: i64::from(bad),
                    min: 1,
                    max: 99
                })
            );
        }
    }
    assert_eq!(
        rt.task_new(TaskId(0), &TaskParams::default(), 0),
        Err(ParamError::OutOfRange {
            field: "policy",
            value: 0,
            min: 1,
            max: 2
        })
    );
    assert!(rt.task_new(TaskId(0), &fifo(1), 0).is_ok());
    assert!(rt.task_new(TaskId(1), &rr(99), 0).is_ok());
    assert!(matches!(
        rt.task_new(TaskId(4), &fifo(1), 0),
        Err(ParamError::TooManyTasks { task: 4, .. })
    ));
}

#[test]
fn strict_priority_order() {
    // Higher user priority runs first, whatever the enqueue order.
    let mut rt = class_with(&[fifo(10), rr(50), fifo(99), fifo(1), rr(64), fifo(63)]);
    let mut order = alloc::vec::Vec::new();
    let mut now = 0;
    while let Some(t) = run_next(&mut rt, now) {
        order.push(rt.priority(t).unwrap());
        now += MS;
        block(&mut rt, t, now);
    }
    assert_eq!(order, [99, 64, 63, 50, 10, 1]);
    assert_eq!(rt.nr_running(), 0);
}

#[test]
fn fifo_order_within_a_priority_and_fifo_is_not_rotated() {
    let mut rt = class_with(&[fifo(20), fifo(20), fifo(20)]);
    let a = run_next(&mut rt, 0).unwrap();
    assert_eq!(a, TaskId(0));
    // One second of 1 ms ticks: SCHED_FIFO has no slice.
    for tick in 1..=1000 {
        assert_eq!(rt.task_tick(a, tick * MS), Resched::Keep, "tick {tick}");
    }
    assert_eq!(rt.time_slice(a), 0);
    // A schedule() without blocking (put_prev, pick) keeps the head.
    rt.put_prev_task(a, 1000 * MS);
    assert_eq!(run_next(&mut rt, 1000 * MS), Some(TaskId(0)));
    block(&mut rt, a, 1001 * MS);
    assert_eq!(run_next(&mut rt, 1001 * MS), Some(TaskId(1)));
    block(&mut rt, TaskId(1), 1002 * MS);
    // A woken task goes to the tail: 0 wakes after 2 and waits behind it.
    rt.enqueue_task(TaskId(0), 1002 * MS, WAKEUP);
    assert_eq!(run_next(&mut rt, 1002 * MS), Some(TaskId(2)));
    block(&mut rt, TaskId(2), 1003 * MS);
    assert_eq!(run_next(&mut rt, 1003 * MS), Some(TaskId(0)));
}

#[test]
fn round_robin_rotates_after_100_ms_of_ticks() {
    let mut rt = class_with(&[rr(30), rr(30), rr(30)]);
    let mut now = 0;
    let mut order = alloc::vec::Vec::new();
    for _ in 0..6 {
        let t = run_next(&mut rt, now).unwrap();
        order.push(t.0);
        // 99 ticks of 1 ms keep it; the 100th (100 ms, RR_TIMESLICE) rotates it.
        for _ in 1..100 {
            now += MS;
            assert_eq!(rt.task_tick(t, now), Resched::Keep);
        }
        now += MS;
        assert_eq!(rt.task_tick(t, now), Resched::Reschedule);
        assert_eq!(rt.time_slice(t), RR_TIMESLICE_NS, "refilled");
        rt.put_prev_task(t, now);
    }
    assert_eq!(order, [0, 1, 2, 0, 1, 2]);
    assert_eq!(rt.sum_exec_runtime(TaskId(0)), 200 * MS);
}

#[test]
fn round_robin_alone_keeps_running_with_a_fresh_slice() {
    let mut rt = class_with(&[rr(30), fifo(29)]);
    let t = run_next(&mut rt, 0).unwrap();
    assert_eq!(t, TaskId(0));
    for tick in 1..=250 {
        assert_eq!(rt.task_tick(t, tick * MS), Resched::Keep, "tick {tick}");
    }
    // 250 ms = two refills and 50 ms into the third slice.
    assert_eq!(rt.time_slice(t), 50 * MS);
}

#[test]
fn preempted_task_resumes_first_and_finishes_its_slice() {
    // sched(7): a preempted task stays at the head of its list; an RR task
    // completes the unexpired portion of its quantum.
    let mut rt = RtClass::new(8);
    for (t, p) in [(0, rr(30)), (1, rr(30)), (2, fifo(50))] {
        rt.task_new(TaskId(t), &p, 0).unwrap();
    }
    rt.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
    rt.enqueue_task(TaskId(1), 0, EnqueueFlags::default());
    let a = run_next(&mut rt, 0).unwrap();
    for tick in 1..=40 {
        assert_eq!(rt.task_tick(a, tick * MS), Resched::Keep);
    }
    rt.enqueue_task(TaskId(2), 40 * MS, WAKEUP);
    assert_eq!(
        rt.wakeup_preempt(a, TaskId(2), 40 * MS),
        Resched::Reschedule
    );
    rt.put_prev_task(a, 40 * MS);
    assert_eq!(run_next(&mut rt, 40 * MS), Some(TaskId(2)));
    block(&mut rt, TaskId(2), 45 * MS);
    assert_eq!(run_next(&mut rt, 45 * MS), Some(a), "preempted task first");
    assert_eq!(rt.time_slice(a), 60 * MS);
    for tick in 1..60 {
        assert_eq!(rt.task_tick(a, 45 * MS + tick * MS), Resched::Keep);
    }
    assert_eq!(rt.task_tick(a, 105 * MS), Resched::Reschedule);
}

#[test]
fn wakeup_preempts_only_for_a_higher_priority() {
    let mut rt = RtClass::new(8);
    for (t, p) in [fifo(20), fifo(20), fifo(19), rr(21)].iter().enumerate() {
        rt.task_new(TaskId(t as u16), p, 0).unwrap();
    }
    rt.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
    let a = run_next(&mut rt, 0).unwrap();
    for t in 1..4 {
        rt.enqueue_task(TaskId(t), 1, WAKEUP);
    }
    assert_eq!(rt.wakeup_preempt(a, TaskId(1), 0), Resched::Keep, "equal");
    assert_eq!(rt.wakeup_preempt(a, TaskId(2), 0), Resched::Keep, "lower");
    assert_eq!(rt.wakeup_preempt(a, TaskId(3), 0), Resched::Reschedule);
}

#[test]
fn yield_moves_to_the_tail_of_its_priority() {
    let mut rt = class_with(&[fifo(20), fifo(20), fifo(10)]);
    let a = run_next(&mut rt, 0).unwrap();
    rt.yield_task(a, 1);
    rt.put_prev_task(a, 1);
    assert_eq!(run_next(&mut rt, 1), Some(TaskId(1)));
    rt.yield_task(TaskId(1), 2);
    rt.put_prev_task(TaskId(1), 2);
    assert_eq!(
        run_next(&mut rt, 2),
        Some(TaskId(0)),
        "never the lower priority"
    );
}

/// Brute-force model: the queued tasks in enqueue order; the pick is the
/// first of the highest priority.
#[test]
fn pick_matches_a_brute_force_model_under_random_sequences() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    const TASKS: usize = 32;
    let mut rt = RtClass::new(TASKS);
    let priorities: alloc::vec::Vec<u8> = (0..TASKS).map(|_| (next() % 99 + 1) as u8).collect();
    for (t, &p) in priorities.iter().enumerate() {
        rt.task_new(TaskId(t as u16), &fifo(p), 0).unwrap();
    }
    let mut model: alloc::vec::Vec<usize> = alloc::vec::Vec::new();
    for step in 0..5000 {
        let t = (next() % TASKS as u64) as usize;
        if let Some(at) = model.iter().position(|&m| m == t) {
            model.remove(at);
            rt.dequeue_task(TaskId(t as u16), step, SLEEP);
        } else {
            model.push(t);
            rt.enqueue_task(TaskId(t as u16), step, WAKEUP);
        }
        let best = model.iter().map(|&m| priorities[m]).max();
        let expected = best.and_then(|b| model.iter().find(|&&m| priorities[m] == b));
        assert_eq!(
            rt.pick_next_task(step),
            expected.map(|&m| TaskId(m as u16)),
            "step {step}"
        );
        assert_eq!(rt.nr_running(), model.len());
    }
}

#[test]
fn bandwidth_settings_are_validated() {
    // sched-rt-group.rst: period 1..=INT_MAX us, runtime -1..=period us.
    assert_eq!(
        RtBandwidth::new(0, 0),
        Err(ParamError::OutOfRange {
            field: "sched_rt_period_us",
            value: 0,
            min: 1,
            max: i64::from(i32::MAX)
        })
    );
    for bad in [-2, 1_000_001] {
        assert_eq!(
            RtBandwidth::new(1_000_000, bad),
            Err(ParamError::OutOfRange {
                field: "sched_rt_runtime_us",
                value: bad,
                min: -1,
                max: 1_000_000
            })
        );
    }
    assert_eq!(RtBandwidth::new(1_000_000, -1).unwrap().runtime(), None);
    assert_eq!(
        RtBandwidth::new(1_000_000, 950_000),
        Ok(RtBandwidth::LINUX_DEFAULT)
    );
    assert_eq!(RtClass::new(1).bandwidth(), RtBandwidth::UNLIMITED);
}

#[test]
fn a_fifo_hog_is_throttled_to_950_ms_per_second() {
    // Analytic: 1 s period, 0.95 s runtime, 1 ms ticks. rt_time exceeds 950 ms
    // at the 951st tick; the period timer at 1 s pays back 950 ms (rt_time 1 ms)
    // and unthrottles; in the second period the hog runs 950 ms (1 + 950 > 950
    // at 1950 ms) and leaves 50 ms to others.
    let mut rt = RtClass::with_bandwidth(4, RR_TIMESLICE_NS, RtBandwidth::LINUX_DEFAULT);
    rt.task_new(TaskId(0), &fifo(50), 0).unwrap();
    rt.enqueue_task(TaskId(0), 0, WAKEUP);
    assert_eq!(rt.period_timer_deadline(), Some(1000 * MS));
    let hog = run_next(&mut rt, 0).unwrap();
    for tick in 1..=950 {
        assert_eq!(rt.task_tick(hog, tick * MS), Resched::Keep, "tick {tick}");
    }
    assert_eq!(rt.task_tick(hog, 951 * MS), Resched::Reschedule);
    assert!(rt.is_throttled());
    rt.put_prev_task(hog, 951 * MS);
    assert_eq!(rt.pick_next_task(951 * MS), None, "throttled: others run");
    assert_eq!(rt.nr_running(), 1, "still queued");
    assert_eq!(rt.period_timer(999 * MS), Resched::Keep, "too early");
    assert_eq!(rt.period_timer(1000 * MS), Resched::Reschedule);
    assert_eq!((rt.is_throttled(), rt.rt_time()), (false, MS));
    assert_eq!(rt.period_timer_deadline(), Some(2000 * MS));
    assert_eq!(run_next(&mut rt, 1000 * MS), Some(hog));
    for tick in 1001..=1949 {
        assert_eq!(rt.task_tick(hog, tick * MS), Resched::Keep, "tick {tick}");
    }
    assert_eq!(rt.task_tick(hog, 1950 * MS), Resched::Reschedule);
    assert_eq!(rt.sum_exec_runtime(hog), 1901 * MS);
}

#[test]
fn period_timer_pays_back_missed_periods_and_stops_when_idle() {
    let mut rt = RtClass::with_bandwidth(4, RR_TIMESLICE_NS, RtBandwidth::LINUX_DEFAULT);
    rt.task_new(TaskId(0), &fifo(50), 0).unwrap();
    rt.enqueue_task(TaskId(0), 0, WAKEUP);
    let t = run_next(&mut rt, 0).unwrap();
    block(&mut rt, t, 300 * MS);
    assert_eq!(rt.rt_time(), 300 * MS);
    // Fired late, at 2.5 s: two periods elapsed, 2 x 950 ms paid back, rt_time 0,
    // nothing queued: the timer stops.
    assert_eq!(rt.period_timer(2500 * MS), Resched::Keep);
    assert_eq!((rt.rt_time(), rt.period_timer_deadline()), (0, None));
    // The next enqueue restarts it one period later.
    rt.enqueue_task(t, 3000 * MS, WAKEUP);
    assert_eq!(rt.period_timer_deadline(), Some(4000 * MS));
    // Unlimited bandwidth never starts a timer nor throttles.
    let mut free = RtClass::new(2);
    free.task_new(TaskId(0), &fifo(1), 0).unwrap();
    free.enqueue_task(TaskId(0), 0, WAKEUP);
    let t = run_next(&mut free, 0).unwrap();
    assert_eq!(free.task_tick(t, 5000 * MS), Resched::Keep);
    assert_eq!(
        (free.period_timer_deadline(), free.is_throttled()),
        (None, false)
    );
}
