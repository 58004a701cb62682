//! The class stack through [`RunQueue`]: RT above fair, the slice-end times
//! (`slice_remaining`) worked out by hand from §1.4 (CFS slice), §1.5 (EEVDF
//! deadline) and `sched(7)` (100 ms SCHED_RR slice), and the uclamp switch
//! against §3.1–§3.3.

use super::*;

const MS: u64 = 1_000_000;
const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};
const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

fn kinds() -> [PolicyKind; 3] {
    [
        PolicyKind::RoundRobin { slice: 4 * MS },
        PolicyKind::Cfs(CfsTunables::for_cpus(1)),
        PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
    ]
}

fn with_policy(policy: Policy) -> TaskParams {
    TaskParams {
        policy,
        ..TaskParams::default()
    }
}

fn add(rq: &mut RunQueue, task: u16, policy: Policy, now: Nanoseconds) {
    rq.task_new(TaskId(task), &with_policy(policy), now)
        .unwrap();
    rq.enqueue_task(TaskId(task), now, EnqueueFlags::default());
}

fn switch_to_next(rq: &mut RunQueue, prev: Option<TaskId>, now: Nanoseconds) -> Option<TaskId> {
    if let Some(prev) = prev {
        rq.put_prev_task(prev, now);
    }
    let next = rq.pick_next_task(now);
    if let Some(next) = next {
        rq.set_next_task(next, now);
    }
    next
}

const NICE_0: Policy = Policy::Normal { nice: 0 };
const RR_10: Policy = Policy::RoundRobin { priority: 10 };

#[test]
fn rt_preempts_fair_and_fair_never_preempts_rt() {
    for kind in kinds() {
        let mut rq = RunQueue::new(kind, 8);
        add(&mut rq, 0, NICE_0, 0);
        let fair = switch_to_next(&mut rq, None, 0);
        assert_eq!(fair, Some(TaskId(0)), "{kind:?}");
        rq.task_new(TaskId(1), &with_policy(Policy::Fifo { priority: 1 }), MS)
            .unwrap();
        rq.enqueue_task(TaskId(1), MS, WAKEUP);
        assert_eq!(rq.task_class(TaskId(1)), Some(ClassKind::Realtime));
        assert_eq!(
            rq.task_policy(TaskId(1)),
            Some(Policy::Fifo { priority: 1 })
        );
        assert_eq!(rq.task_policy(TaskId(0)), Some(NICE_0));
        assert_eq!(rq.task_policy(TaskId(2)), None);
        assert_eq!(
            rq.wakeup_preempt(TaskId(0), TaskId(1), MS),
            Resched::Reschedule,
            "{kind:?}: an RT wake-up preempts a fair task"
        );
        let rt = switch_to_next(&mut rq, fair, MS);
        assert_eq!(rt, Some(TaskId(1)), "{kind:?}: RT is picked first");
        assert_eq!(rq.nr_running(), 2);
        // A fair wake-up never preempts RT, and RT runs while it is runnable.
        rq.task_new(TaskId(2), &with_policy(NICE_0), 2 * MS)
            .unwrap();
        rq.enqueue_task(TaskId(2), 2 * MS, WAKEUP);
        assert_eq!(
            rq.wakeup_preempt(TaskId(1), TaskId(2), 2 * MS),
            Resched::Keep
        );
        assert_eq!(
            rq.task_tick(TaskId(1), 3 * MS),
            Resched::Keep,
            "FIFO has no slice"
        );
        assert_eq!(switch_to_next(&mut rq, rt, 3 * MS), Some(TaskId(1)));
        // Once RT sleeps, the fair class runs.
        rq.dequeue_task(TaskId(1), 4 * MS, SLEEP);
        let next = switch_to_next(&mut rq, rt, 4 * MS);
        assert!(
            matches!(next, Some(TaskId(0)) | Some(TaskId(2))),
            "{kind:?}"
        );
        assert_eq!(rq.nr_running(), 2);
    }
}

#[test]
fn cfs_slice_remaining_is_the_sched_slice_left() {
    // §1.4, 1 CPU: latency 6 ms, two tasks (≤ sched_nr_latency) share the
    // period by weight. check_preempt_tick reschedules once ran > slice, so the
    // slice ends 1 ns after `slice - ran`.
    let mut rq = RunQueue::new(PolicyKind::Cfs(CfsTunables::for_cpus(1)), 4);
    add(&mut rq, 0, NICE_0, 0);
    let curr = switch_to_next(&mut rq, None, 0).unwrap();
    assert_eq!(rq.slice_remaining(curr, MS), None, "alone: no slice end");
    add(&mut rq, 1, NICE_0, 0);
    // Whichever runs, it gets half of the period: __calc_delta(6 ms, 1024,
    // 2048) with the runtime inverse ⌊(2^32-1)/2048⌋ = 2097151 (§1.2):
    // ⌊6e6 · 1024 · 2097151 / 2^32⌋ = 2,999,998 ns.
    let slice = 2_999_998;
    assert_eq!(rq.slice_remaining(curr, MS), Some(slice - MS + 1));
    assert_eq!(rq.task_tick(curr, 2 * MS), Resched::Keep);
    assert_eq!(rq.slice_remaining(curr, 2 * MS), Some(slice - 2 * MS + 1));
    assert_eq!(rq.task_tick(curr, 3 * MS + 1), Resched::Reschedule);
    assert_eq!(rq.slice_remaining(curr, 3 * MS + 1), Some(0));
}

#[test]
fn cfs_slice_remaining_follows_the_weights() {
    // nice 0 (1024) running against nice 5 (335): slice = 6 ms · 1024 / 1359
    // (§1.1 weights, §1.4 sched_slice) = 4,520,971.3 ns, within the fixed-point
    // rounding of §1.2.
    let mut rq = RunQueue::new(PolicyKind::Cfs(CfsTunables::for_cpus(1)), 4);
    add(&mut rq, 0, NICE_0, 0);
    add(&mut rq, 1, Policy::Normal { nice: 5 }, 0);
    let curr = switch_to_next(&mut rq, None, 0).unwrap();
    let weight = if curr == TaskId(0) { 1024.0 } else { 335.0 };
    let expected = 6e6 * weight / 1359.0 + 1.0;
    let got = rq.slice_remaining(curr, 0).unwrap() as f64;
    assert!((got - expected).abs() <= 2.0, "{got} vs {expected}");
}

#[test]
fn eevdf_slice_remaining_is_the_time_to_the_deadline() {
    // §1.5: deadline = vruntime + calc_delta_fair(base_slice); 0.7 ms on 1 CPU.
    // The vruntime runs at 1024/w of wall time, so the wall time to the
    // deadline is the slice itself, less what the floor of the fixed point
    // (§1.2) lets an entity heavier than nice 0 gain: under w/1024 ns.
    let tunables = EevdfTunables::for_cpus(1, 4 * MS);
    let slice = tunables.base_slice;
    let start = |nice: i8| {
        let mut rq = RunQueue::new(PolicyKind::Eevdf(tunables), 4);
        add(&mut rq, 0, Policy::Normal { nice }, 0);
        add(&mut rq, 1, Policy::Normal { nice }, 0);
        let curr = switch_to_next(&mut rq, None, 0).unwrap();
        (rq, curr)
    };
    for (nice, weight) in [(0i8, 1024u64), (5, 335), (-5, 3121)] {
        let (mut rq, curr) = start(nice);
        let remaining = rq.slice_remaining(curr, 0).unwrap();
        assert!(
            remaining <= slice && slice - remaining < weight.div_ceil(1024),
            "nice {nice}: {remaining}"
        );
        if nice == 0 {
            assert_eq!(remaining, slice);
        }
        assert_eq!(
            rq.slice_remaining(curr, 250_000),
            Some(remaining - 250_000),
            "nice {nice}"
        );
        // The tick finds the deadline passed exactly then (update_deadline),
        // not a nanosecond earlier.
        assert_eq!(
            rq.task_tick(curr, remaining),
            Resched::Reschedule,
            "nice {nice}: the deadline passed with another task queued"
        );
        let (mut rq, curr) = start(nice);
        assert_eq!(
            rq.task_tick(curr, remaining - 1),
            Resched::Keep,
            "nice {nice}"
        );
    }
}

#[test]
fn eevdf_slice_remaining_alone_is_none() {
    let mut rq = RunQueue::new(PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)), 4);
    add(&mut rq, 0, NICE_0, 0);
    let curr = switch_to_next(&mut rq, None, 0).unwrap();
    assert_eq!(rq.slice_remaining(curr, 0), None);
}

#[test]
fn rr_slice_remaining_counts_the_100_ms_slice_against_peers() {
    for kind in kinds() {
        let mut rq = RunQueue::new(kind, 4);
        add(&mut rq, 0, RR_10, 0);
        add(&mut rq, 3, NICE_0, 0);
        let curr = switch_to_next(&mut rq, None, 0).unwrap();
        assert_eq!(curr, TaskId(0));
        assert_eq!(rq.slice_remaining(curr, 0), None, "no peer at priority 10");
        add(&mut rq, 1, Policy::RoundRobin { priority: 5 }, 0);
        assert_eq!(
            rq.slice_remaining(curr, 0),
            None,
            "a lower priority is no peer"
        );
        add(&mut rq, 2, RR_10, 0);
        assert_eq!(rq.slice_remaining(curr, 30 * MS), Some(70 * MS));
        assert_eq!(rq.task_tick(curr, 50 * MS), Resched::Keep);
        assert_eq!(rq.slice_remaining(curr, 60 * MS), Some(40 * MS));
        assert_eq!(rq.task_tick(curr, 100 * MS), Resched::Reschedule);
        assert_eq!(
            switch_to_next(&mut rq, Some(curr), 100 * MS),
            Some(TaskId(2))
        );
        let fifo = TaskId(2);
        assert_eq!(rq.slice_remaining(fifo, 100 * MS), Some(100 * MS));
    }
}

#[test]
fn uclamp_values_follow_the_queued_tasks_and_the_switch() {
    for kind in kinds() {
        let mut rq = RunQueue::new(kind, 4);
        assert!(rq.uclamp_enabled());
        let params = TaskParams {
            uclamp_min: Some(512),
            uclamp_max: Some(800),
            ..TaskParams::default()
        };
        rq.task_new(TaskId(0), &params, 0).unwrap();
        rq.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
        // §3.2: the run queue's clamps are the max over queued tasks.
        assert_eq!(rq.uclamp_value(ClampId::Min), 512);
        assert_eq!(rq.uclamp_value(ClampId::Max), 800);
        // §3.3: an RT task without a floor gets util_min_rt_default = 1024.
        add(&mut rq, 1, RR_10, 0);
        assert_eq!(rq.uclamp_value(ClampId::Min), 1024);
        assert_eq!(rq.uclamp_value(ClampId::Max), 1024);
        rq.dequeue_task(TaskId(1), 0, SLEEP);
        assert_eq!(rq.uclamp_value(ClampId::Min), 512);
        // Off: no clamp at all (uclamp_none, §3.1).
        rq.set_uclamp_enabled(false);
        assert_eq!(rq.uclamp_value(ClampId::Min), 0);
        assert_eq!(rq.uclamp_value(ClampId::Max), 1024);
        rq.dequeue_task(TaskId(0), 0, SLEEP);
        rq.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
        rq.set_task_uclamp(TaskId(0), Some(300), None).unwrap();
        assert_eq!(rq.uclamp_value(ClampId::Min), 0);
        // On again: the queued task counts at once, with its new request.
        rq.set_uclamp_enabled(true);
        assert_eq!(rq.uclamp_value(ClampId::Min), 300);
        assert_eq!(rq.uclamp_value(ClampId::Max), 1024);
        assert!(matches!(
            rq.set_task_uclamp(TaskId(0), Some(900), Some(100)),
            Err(ParamError::OutOfRange { .. })
        ));
        let off = RunQueue::with_options(kind, 4, 2, false);
        assert!(!off.uclamp_enabled());
    }
}

#[test]
fn migration_carries_policy_and_clamps() {
    for kind in kinds() {
        let mut cpu0 = RunQueue::new(kind, 4);
        let mut cpu1 = RunQueue::new(kind, 4);
        for (task, policy) in [(0, RR_10), (1, NICE_0)] {
            cpu0.task_new(TaskId(task), &with_policy(policy), 0)
                .unwrap();
            cpu0.set_task_uclamp(TaskId(task), Some(256), None).unwrap();
            let m = cpu0.migrate_task_out(TaskId(task)).unwrap();
            assert_eq!(cpu0.task_policy(TaskId(task)), None, "gone from cpu0");
            cpu1.migrate_task_in(TaskId(task), &m, MS).unwrap();
            assert_eq!(cpu1.task_policy(TaskId(task)), Some(policy));
            assert_eq!(cpu1.uclamp_eff_value(TaskId(task), ClampId::Min), Some(256));
            cpu1.enqueue_task(
                TaskId(task),
                MS,
                EnqueueFlags {
                    migrated: true,
                    ..EnqueueFlags::default()
                },
            );
        }
        assert_eq!(cpu1.nr_running(), 2);
        assert_eq!(cpu1.pick_next_task(MS), Some(TaskId(0)), "RT first");
    }
}

#[test]
fn a_grouped_task_alone_in_its_group_ends_its_slice_at_the_group_level() {
    // The task competes only at the root (its group entity against a root
    // task): the slice end comes from that level, and the tick agrees.
    for kind in [
        PolicyKind::Cfs(CfsTunables::for_cpus(1)),
        PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
    ] {
        let start = || {
            let mut rq = RunQueue::new(kind, 4);
            let group = rq.create_group(GroupId::ROOT, 1024).unwrap();
            let grouped = TaskParams {
                group,
                ..TaskParams::default()
            };
            rq.task_new(TaskId(0), &grouped, 0).unwrap();
            rq.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
            rq.set_next_task(TaskId(0), 0);
            add(&mut rq, 1, NICE_0, 0);
            rq
        };
        let mut rq = start();
        let remaining = rq
            .slice_remaining(TaskId(0), 0)
            .expect("competes at the root");
        assert!(remaining > 0, "{kind:?}");
        assert_eq!(
            rq.task_tick(TaskId(0), remaining),
            Resched::Reschedule,
            "{kind:?}"
        );
        let mut rq = start();
        assert_eq!(
            rq.task_tick(TaskId(0), remaining - 1),
            Resched::Keep,
            "{kind:?}"
        );
    }
}

/// §1.5, Linux 6.12's custom slice: `sched_runtime` of a fair task is its request
/// size, clamped to 0.1..=100 ms, kept at every new request.
#[test]
fn eevdf_custom_slice_sets_the_request_size() {
    let tunables = EevdfTunables::for_cpus(1, 4 * MS);
    let with_slice = |slice: Option<Nanoseconds>| TaskParams {
        custom_slice: slice,
        ..with_policy(NICE_0)
    };
    let start = |slice: Option<Nanoseconds>| {
        let mut rq = RunQueue::new(PolicyKind::Eevdf(tunables), 4);
        rq.task_new(TaskId(0), &with_slice(slice), 0).unwrap();
        rq.enqueue_task(TaskId(0), 0, EnqueueFlags::default());
        add(&mut rq, 1, NICE_0, 0);
        rq
    };
    // Both start at lag 0; the base slice (0.7 ms) ends first, so task 1 runs first.
    let mut rq = start(Some(3 * MS));
    let first = switch_to_next(&mut rq, None, 0).unwrap();
    assert_eq!(first, TaskId(1));
    assert_eq!(rq.slice_remaining(first, 0), Some(tunables.base_slice));
    let slice_end = tunables.base_slice;
    assert_eq!(rq.task_tick(first, slice_end), Resched::Reschedule);
    let second = switch_to_next(&mut rq, Some(first), slice_end).unwrap();
    assert_eq!(second, TaskId(0));
    // Task 0's request: 3 ms from its vruntime 0, run at nice 0 = 3 ms of wall time.
    assert_eq!(rq.slice_remaining(second, slice_end), Some(3 * MS));
    // Its next request is 3 ms again, not the base slice.
    assert_eq!(
        rq.task_tick(second, slice_end + 3 * MS),
        Resched::Reschedule
    );
    assert_eq!(
        rq.slice_remaining(second, slice_end + 3 * MS),
        Some(3 * MS),
        "the new deadline is one custom slice on"
    );
    // Clamped to Linux's range.
    for (asked, granted) in [(10_000, 100_000), (200 * MS, 100 * MS)] {
        let mut rq = start(Some(asked));
        rq.dequeue_task(TaskId(1), 0, SLEEP);
        add(&mut rq, 2, NICE_0, 0);
        rq.dequeue_task(TaskId(2), 0, SLEEP);
        let only = switch_to_next(&mut rq, None, 0).unwrap();
        assert_eq!(only, TaskId(0));
        add(&mut rq, 3, NICE_0, 0);
        assert_eq!(rq.slice_remaining(only, 0), Some(granted), "asked {asked}");
    }
}
