//! PELT through the fair run queue, against Appendix A of the reference (§A.1,
//! §A.3, §A.4): the class calls `update_load_avg` at the right points, with the right
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
        let mut fair = FairRunQueue::new(pick, 1, 4);
        fair.task_new(TaskId(0), &TaskParams::default(), 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, WAKEUP);
        assert_eq!(fair.pick_next_task(0), Some(TaskId(0)));
        fair.set_next_task(TaskId(0), 0);
        let mut seen = Vec::new();
        for t in 1..=1000u64 {
            let _ = fair.task_tick(TaskId(0), t * MS);
            if expected.iter().any(|&(at, _)| at == t) {
                seen.push((
                    t,
                    fair.entities[fair.task_se(TaskId(0)) as usize].avg.util_avg,
                ));
            }
        }
        assert_eq!(seen, expected);
    }
}

/// One activation of a periodic task: util at wake-up (after the enqueue),
/// before the dequeue's update, after it, and util_est.
fn periodic(capacity: CpuCapacity, period: u64, run: u64, activations: u64) -> Vec<[u64; 4]> {
    let mut fair = FairRunQueue::new(picks()[1], 1, 4);
    fair.set_cpu_capacity(capacity);
    fair.task_new(TaskId(0), &TaskParams::default(), 0).unwrap();
    let task = TaskId(0);
    let mut rows = Vec::new();
    for k in 0..activations {
        let wake = k * period * MS;
        fair.enqueue_task(task, wake, WAKEUP);
        let at_wake = fair.entities[fair.task_se(TaskId(0)) as usize].avg.util_avg;
        assert_eq!(fair.pick_next_task(wake), Some(task));
        fair.set_next_task(task, wake);
        for tick in 1..run {
            let _ = fair.task_tick(task, wake + tick * MS);
        }
        let sleep = wake + run * MS;
        // Ticks fall on absolute 1 ms multiples: the dequeue is the tick.
        let pre = fair.entities[fair.task_se(TaskId(0)) as usize].avg.util_avg;
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
        let avg = fair.entities[fair.task_se(TaskId(0)) as usize].avg;
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
        let mut fair = FairRunQueue::new(pick, 8, 4);
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
                fair.entities[fair.task_se(TaskId(t)) as usize].avg.util_avg,
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
                assert_eq!(
                    fair.entities[fair.task_se(TaskId(0)) as usize].avg.util_avg,
                    expected
                );
                assert_eq!(fair.entities[inner_entity].avg.util_avg, expected, "inner");
                assert_eq!(fair.entities[outer_entity].avg.util_avg, expected, "outer");
            }
        }
    }
}

/// One 1 ms tick of a CPU whose tasks are all CPU-bound: tick the running
/// task (or start one), switch when asked.
fn tick_cpu(fair: &mut FairRunQueue, now: u64) {
    let Some(task) = (0..fair.max_tasks as u16)
        .map(TaskId)
        .find(|&t| fair.entities[fair.task_se(t) as usize].known && is_running(fair, t))
    else {
        let next = fair.pick_next_task(now).expect("runnable");
        fair.set_next_task(next, now);
        return;
    };
    if fair.task_tick(task, now).is_needed() {
        fair.put_prev_task(task, now);
        let next = fair.pick_next_task(now).expect("runnable");
        fair.set_next_task(next, now);
    }
}

fn is_running(fair: &FairRunQueue, task: TaskId) -> bool {
    let entity = &fair.entities[fair.task_se(task) as usize];
    fair.queues[entity.queue.index()].curr == fair.task_se(task)
}

/// §2.7 worked vector: a group (shares 1024) with 3 busy tasks on CPU 0 and 1
/// on CPU 1 gets group-entity weights 768 and 256 once the loads saturate,
/// with the mechanism summing the CPUs' contributions every ms
/// (`group_load_contribution` / `set_group_load_sum`). Contributions move only
/// by more than 1/64 (§2.7), so the other CPU's part may be stale by < 1/64:
/// 1024·3072/(3072 + 1024 ± 16) and 1024·1024/(1024 + 3072 ± 48) are within
/// ±3 of 768 and 256.
#[test]
fn group_shares_across_two_cpus() {
    for pick in picks() {
        let mut cpus = [FairRunQueue::new(pick, 4, 2), FairRunQueue::new(pick, 4, 2)];
        let mut group = GroupId::ROOT;
        for cpu in &mut cpus {
            group = cpu.create_group(GroupId::ROOT, 1024).unwrap();
        }
        let params = TaskParams {
            group,
            ..TaskParams::default()
        };
        for (cpu, tasks) in [(0usize, 0..3u16), (1, 3..4)] {
            for t in tasks {
                cpus[cpu].task_new(TaskId(t), &params, 0).unwrap();
                cpus[cpu].enqueue_task(TaskId(t), 0, WAKEUP);
            }
        }
        for t in 0..=3000u64 {
            for cpu in &mut cpus {
                tick_cpu(cpu, t * MS);
            }
            let sum: u64 = cpus.iter().map(|c| c.group_load_contribution(group)).sum();
            for cpu in &mut cpus {
                cpu.set_group_load_sum(group, sum);
            }
        }
        let weight = |cpu: &FairRunQueue| {
            let e = cpu.group_entity(group) as usize;
            cpu.entities[e].load.scaled_down()
        };
        assert!(
            weight(&cpus[0]).abs_diff(768) <= 3,
            "CPU 0: {}",
            weight(&cpus[0])
        );
        assert!(
            weight(&cpus[1]).abs_diff(256) <= 3,
            "CPU 1: {}",
            weight(&cpus[1])
        );
    }
}

/// Single CPU: the group-wide sum is this CPU's own contribution, so a busy
/// group's entity weighs exactly its shares at every tick (§2.7:
/// tg_weight = load, shares = tg_shares).
#[test]
fn single_cpu_group_weight_is_exactly_its_shares() {
    for pick in picks() {
        let mut fair = FairRunQueue::new(pick, 3, 2);
        let group = fair.create_group(GroupId::ROOT, 3000).unwrap();
        let params = TaskParams {
            group,
            ..TaskParams::default()
        };
        for t in 0..2u16 {
            fair.task_new(TaskId(t), &params, 0).unwrap();
            fair.enqueue_task(TaskId(t), 0, WAKEUP);
        }
        fair.task_new(TaskId(2), &TaskParams::default(), 0).unwrap();
        fair.enqueue_task(TaskId(2), 0, WAKEUP);
        let e = fair.group_entity(group) as usize;
        for t in 0..=1000u64 {
            tick_cpu(&mut fair, t * MS);
            assert_eq!(fair.entities[e].load.scaled_down(), 3000, "at {t} ms");
        }
    }
}

/// Through the run queue's public signals: an always-running nice-0 task and
/// its CPU both show Appendix A §1 column (b) (894 at 100 ms); after a sleep
/// the task's util_est is the util it had when it went to sleep (§2.4 step 3,
/// reset upward) and the CPU's util_est sum drops to 0 while it sleeps.
#[test]
fn run_queue_signals_report_pelt() {
    use crate::run_queue::{PolicyKind, RunQueue};
    for kind in [
        PolicyKind::Cfs(CfsTunables::for_cpus(1)),
        PolicyKind::Eevdf(EevdfTunables::for_cpus(1, MS)),
    ] {
        let mut rq = RunQueue::new(kind, 1);
        let task = TaskId(0);
        rq.task_new(task, &TaskParams::default(), 0).unwrap();
        rq.enqueue_task(task, 0, WAKEUP);
        let next = rq.pick_next_task(0).unwrap();
        rq.set_next_task(next, 0);
        for t in 1..=100u64 {
            let _ = rq.task_tick(task, t * MS);
        }
        assert_eq!(rq.task_signals(task).util_avg, 894);
        assert_eq!(rq.signals().util_avg, 894);
        assert_eq!(rq.task_signals(task).sum_exec_runtime, 100 * MS);
        let before_sleep = rq.task_signals(task).util_avg;
        rq.dequeue_task(
            task,
            100 * MS,
            DequeueFlags {
                sleep: true,
                migrating: false,
            },
        );
        rq.put_prev_task(task, 100 * MS);
        assert_eq!(rq.task_signals(task).util_est, before_sleep);
        assert_eq!(rq.signals().util_est, 0);
        assert_eq!(rq.signals().nr_running, 0);
    }
}

/// Appendix A §2 (decay while sleeping, from 1000 ms of running with 1 ms
/// ticks): a task in a group blocks; `update_blocked_averages` alone then
/// decays its group run queue, whose util the group entity takes (§2.7).
/// One blocked update per duration, as the appendix computes each row.
#[test]
fn blocked_group_decays_as_appendix_a_2() {
    let rows = [
        (1, 1003),
        (2, 983),
        (4, 943),
        (8, 868),
        (16, 736),
        (32, 528),
        (64, 273),
        (100, 129),
        (200, 16),
        (300, 2),
        (500, 0),
    ];
    for pick in picks() {
        for (slept, expected) in rows {
            let mut fair = FairRunQueue::new(pick, 1, 2);
            let group = fair.create_group(GroupId::ROOT, 1024).unwrap();
            let params = TaskParams {
                group,
                ..TaskParams::default()
            };
            let task = TaskId(0);
            fair.task_new(task, &params, 0).unwrap();
            fair.enqueue_task(task, 0, WAKEUP);
            assert_eq!(fair.pick_next_task(0), Some(task));
            fair.set_next_task(task, 0);
            for t in 1..1000u64 {
                let _ = fair.task_tick(task, t * MS);
            }
            let sleep = 1000 * MS;
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
            assert_eq!(fair.queues[group.index()].pelt.avg.util_avg, 1024);
            fair.update_blocked_averages(sleep + slept * MS);
            let entity = fair.group_entity(group) as usize;
            assert_eq!(
                fair.queues[group.index()].pelt.avg.util_avg,
                expected,
                "group run queue after {slept} ms"
            );
            assert_eq!(
                fair.entities[entity].avg.util_avg, expected,
                "group entity after {slept} ms"
            );
        }
    }
}

/// §2.6: a task dequeued to migrate (load balancing) leaves its run queues'
/// load at once (`dequeue_entity` updates it with `DO_DETACH`), while a
/// blocked task's removal waits for the run queue's next update
/// (`remove_entity_load_avg`). Two identical CPUs, two busy tasks in a group
/// for 100 ms; the queued one leaves each: the group run queue of the
/// migrating dequeue has lost exactly the task's load_avg, the other none yet.
#[test]
fn migrating_dequeue_detaches_the_load_at_once() {
    for pick in picks() {
        let run = |migrating: bool| {
            let mut fair = FairRunQueue::new(pick, 2, 2);
            let group = fair.create_group(GroupId::ROOT, 1024).unwrap();
            let params = TaskParams {
                group,
                ..TaskParams::default()
            };
            for t in 0..2 {
                fair.task_new(TaskId(t), &params, 0).unwrap();
                fair.enqueue_task(TaskId(t), 0, WAKEUP);
            }
            for t in 0..100u64 {
                tick_cpu(&mut fair, t * MS);
            }
            let now = 100 * MS;
            let queued = (0..2u16)
                .map(TaskId)
                .find(|&t| !is_running(&fair, t))
                .expect("one task waits");
            let task_load = fair.entities[fair.task_se(queued) as usize].avg.load_avg;
            fair.dequeue_task(
                queued,
                now,
                DequeueFlags {
                    sleep: false,
                    migrating,
                },
            );
            let _ = fair.migrate_task_out(queued).expect("movable");
            (task_load, fair.queues[group.index()].pelt.avg.load_avg)
        };
        let (task_load, kept) = run(false);
        let (same_task_load, detached) = run(true);
        assert_eq!(task_load, same_task_load);
        assert!(task_load > 400, "a busy task's load: {task_load}");
        assert!(
            kept.abs_diff(detached + task_load) <= 1,
            "group load {kept} without detach, {detached} with, task {task_load}"
        );
    }
}

/// §2.5 and §2.7: a group entity is attached from birth with zero load, so the
/// first task of a new group reaches the root run queue once, through
/// propagation. A new nice-0 task starts with `load_avg` = 1024 (§2.5); alone
/// on one CPU its group entity weighs the group's shares, 1024 (§2.7 vector
/// "all of the tg's load on one CPU"), and carries a full runnable sum, so the
/// root's load is the sum of its one entity's, 1024, right after the enqueue
/// and while the task keeps running (a saturated signal stays saturated; ±1
/// for PELT's integer rounding). Counting the group's load twice would give
/// 2048 at first, decaying towards 1024 with PELT's 32 ms half-life.
#[test]
fn first_task_of_a_new_group_loads_the_root_once() {
    for pick in picks() {
        for depth in 1..=2 {
            let mut fair = FairRunQueue::new(pick, 1, 3);
            let mut group = GroupId::ROOT;
            for _ in 0..depth {
                group = fair.create_group(group, 1024).unwrap();
            }
            let params = TaskParams {
                group,
                ..TaskParams::default()
            };
            let start = 10 * MS;
            fair.task_new(TaskId(0), &params, start).unwrap();
            fair.enqueue_task(TaskId(0), start, WAKEUP);
            let root = |fair: &FairRunQueue| fair.queues[GroupId::ROOT.index()].pelt.avg.load_avg;
            assert_eq!(root(&fair), 1024, "depth {depth} after the enqueue");
            fair.set_next_task(TaskId(0), start);
            for t in 1..=64u64 {
                let _ = fair.task_tick(TaskId(0), start + t * MS);
            }
            assert!(
                root(&fair).abs_diff(1024) <= 1,
                "depth {depth} at 64 ms: {}",
                root(&fair)
            );
        }
    }
}
