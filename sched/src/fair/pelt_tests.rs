//! PELT through the fair run queue, against Appendix A of the facts (§1, §3,
//! §4): the class calls `update_load_avg` at the right points, with the right
//! states, on the right clock.

use alloc::vec::Vec;

use super::entity::{CfsTunables, EevdfTunables};
use super::{FairRunQueue, PickPolicy};
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::run_queue::CpuCapacity;
use crate::task::{GroupId, TaskId, TaskParams};

const MS: u64 = 1_000_000;

fn picks() -> [PickPolicy; 2] {
    [
        PickPolicy::Cfs(CfsTunables::for_cpus(1)),
        PickPolicy::Eevdf(EevdfTunables::for_cpus(1, MS)),
    ]
}

const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};

/// Appendix A §1 / §2.8 column (b): an always-running nice-0 task on a
/// cap-1024 CPU, ticks every 1 ms from t = 0: util_avg at t ms.
#[test]
fn always_running_task_follows_appendix_a_1() {
    let expected = [
        (1, 0),
        (2, 41),
        (4, 81),
        (8, 156),
        (16, 288),
        (32, 495),
        (64, 751),
        (100, 894),
        (200, 1008),
        (345, 1023),
        (400, 1024),
        (1000, 1024),
    ];
    for pick in picks() {
        let mut fair = FairRunQueue::new(pick, 1, 1);
        fair.task_new(TaskId(0), &TaskParams::default(), 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, WAKEUP);
        assert_eq!(fair.pick_next_task(0), Some(TaskId(0)));
        fair.set_next_task(TaskId(0), 0);
        let mut seen = Vec::new();
        for t in 1..=1000u64 {
            let _ = fair.task_tick(TaskId(0), t * MS);
            if expected.iter().any(|&(at, _)| at == t) {
                seen.push((t, fair.entities[0].avg.util_avg));
            }
        }
        assert_eq!(seen, expected);
    }
}

/// One activation of a periodic task: util at wake-up (after the enqueue),
/// before the dequeue's update, after it, and util_est.
fn periodic(capacity: CpuCapacity, period: u64, run: u64, activations: u64) -> Vec<[u64; 4]> {
    let mut fair = FairRunQueue::new(picks()[1], 1, 1);
    fair.set_cpu_capacity(capacity);
    fair.task_new(TaskId(0), &TaskParams::default(), 0).unwrap();
    let task = TaskId(0);
    let mut rows = Vec::new();
    for k in 0..activations {
        let wake = k * period * MS;
        fair.enqueue_task(task, wake, WAKEUP);
        let at_wake = fair.entities[0].avg.util_avg;
        assert_eq!(fair.pick_next_task(wake), Some(task));
        fair.set_next_task(task, wake);
        for tick in 1..run {
            let _ = fair.task_tick(task, wake + tick * MS);
        }
        let sleep = wake + run * MS;
        // Ticks fall on absolute 1 ms multiples: the dequeue is the tick.
        let pre = fair.entities[0].avg.util_avg;
        fair.dequeue_task(
            task,
            sleep,
            DequeueFlags {
                sleep: true,
                migrating: false,
            },
        );
        fair.put_prev_task(task, sleep);
        assert_eq!(fair.pick_next_task(sleep), None);
        let avg = fair.entities[0].avg;
        rows.push([at_wake, pre, avg.util_avg, avg.util_est.ewma]);
    }
    rows
}

/// Appendix A §3 "25% duty, 16 ms period": acts 0–2 and 117–119.
#[test]
fn periodic_task_follows_appendix_a_3() {
    let full = CpuCapacity::default();
    let rows = periodic(full, 16, 4, 120);
    assert_eq!(
        rows[..3],
        [[0, 61, 81, 61], [63, 121, 139, 121], [108, 163, 181, 163]]
    );
    assert_eq!(rows[117..], [[225, 273, 288, 273]; 3]);
}

/// Appendix A §3: 50 % wall duty on a cap-512 CPU at fmax, and on a cap-1024
/// CPU at half frequency, give the invariant util of 25 % at fmax (§2.3).
#[test]
fn capacity_and_frequency_invariance_follow_appendix_a_3() {
    for capacity in [
        CpuCapacity {
            capacity_orig: 512,
            frequency_scale: 1024,
        },
        CpuCapacity {
            capacity_orig: 1024,
            frequency_scale: 512,
        },
    ] {
        let rows = periodic(capacity, 16, 8, 120);
        assert_eq!(
            rows[..3],
            [[0, 71, 71, 71], [63, 121, 139, 121], [108, 163, 181, 163]]
        );
        assert_eq!(
            rows[117..],
            [
                [225, 273, 288, 281],
                [225, 273, 288, 281],
                [225, 280, 280, 281]
            ]
        );
    }
}

/// Appendix A §4: new nice-0 tasks woken one after another on an idle cap-1024
/// CPU start at util 512, 256, 128, ... while the run queue's util goes 512,
/// 768, 896, ...
#[test]
fn new_tasks_follow_appendix_a_4() {
    let task_util = [512, 256, 128, 64, 32, 16, 8, 4];
    let queue_util = [512, 768, 896, 960, 992, 1008, 1016, 1020];
    for pick in picks() {
        let mut fair = FairRunQueue::new(pick, 8, 1);
        for t in 0..8u16 {
            fair.task_new(TaskId(t), &TaskParams::default(), MS)
                .unwrap();
            fair.enqueue_task(
                TaskId(t),
                MS,
                EnqueueFlags {
                    initial: true,
                    ..EnqueueFlags::default()
                },
            );
            assert_eq!(
                fair.entities[t as usize].avg.util_avg,
                task_util[t as usize]
            );
            assert_eq!(
                fair.queues[GroupId::ROOT.index()].pelt.avg.util_avg,
                queue_util[t as usize]
            );
        }
    }
}

/// §2.7: a group entity's util follows its group run queue's util: one
/// always-running task in a group, its group entity and the root agree with
/// the task (Appendix A §1 at 32 ms and 100 ms).
#[test]
fn group_entity_mirrors_its_group() {
    for pick in picks() {
        let mut fair = FairRunQueue::new(pick, 1, 3);
        let outer = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let inner = fair.create_group(outer, 1024).unwrap();
        let params = TaskParams {
            group: inner,
            ..TaskParams::default()
        };
        fair.task_new(TaskId(0), &params, 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, WAKEUP);
        fair.set_next_task(TaskId(0), 0);
        for t in 1..=100u64 {
            let _ = fair.task_tick(TaskId(0), t * MS);
            if t == 32 || t == 100 {
                let expected = if t == 32 { 495 } else { 894 };
                let inner_entity = fair.group_entity(inner) as usize;
                let outer_entity = fair.group_entity(outer) as usize;
                assert_eq!(fair.entities[0].avg.util_avg, expected);
                assert_eq!(fair.entities[inner_entity].avg.util_avg, expected, "inner");
                assert_eq!(fair.entities[outer_entity].avg.util_avg, expected, "outer");
            }
        }
    }
}
