//! One suite for every policy (docs/testing.md): nothing lost, nothing duplicated,
//! idle when empty, nr_running consistent with a model, no starvation.

use super::*;
use crate::fair::test_rng::Rng;
use alloc::vec;
use alloc::vec::Vec;

const MS: u64 = 1_000_000;

fn policies() -> [PolicyKind; 3] {
    [
        PolicyKind::RoundRobin { slice: 4 * MS },
        PolicyKind::Cfs(CfsTunables::for_cpus(1)),
        PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
    ]
}

fn params(rng: &mut Rng) -> TaskParams {
    let nice = rng.below(40) as i8 - 20;
    let priority = rng.below(3) as u8 + 1;
    let policy = match rng.below(8) {
        0 => crate::task::Policy::Batch { nice },
        1 => crate::task::Policy::Idle,
        // RT tasks go to the RT class above the policy under test.
        2 => crate::task::Policy::Fifo { priority },
        3 => crate::task::Policy::RoundRobin { priority },
        _ => crate::task::Policy::Normal { nice },
    };
    TaskParams {
        policy,
        ..TaskParams::default()
    }
}

/// Picks, runs and dequeues until empty: every queued task comes out exactly
/// once, then the queue is idle.
fn drain(rq: &mut RunQueue, queued: &mut [bool], now: Nanoseconds) {
    let mut seen = vec![false; queued.len()];
    while let Some(task) = rq.pick_next_task(now) {
        assert!(queued[task.index()], "{task:?} picked but not queued");
        assert!(!seen[task.index()], "{task:?} picked twice");
        seen[task.index()] = true;
        rq.set_next_task(task, now);
        rq.dequeue_task(
            task,
            now,
            DequeueFlags {
                sleep: true,
                ..DequeueFlags::default()
            },
        );
        rq.put_prev_task(task, now);
        queued[task.index()] = false;
    }
    assert!(queued.iter().all(|&q| !q), "a queued task was lost");
    assert_eq!(rq.nr_running(), 0);
}

#[test]
fn random_operations_keep_every_task_once() {
    for kind in policies() {
        let mut rng = Rng::new(3);
        let tasks = 20;
        let mut rq = RunQueue::new(kind, tasks);
        let group = rq.create_group(GroupId::ROOT, 1024).unwrap();
        let nested = rq.create_group(group, 300).unwrap();
        assert_eq!(rq.pick_next_task(0), None, "idle when empty");
        for t in 0..tasks {
            let mut p = params(&mut rng);
            p.group = [GroupId::ROOT, group, nested][t % 3];
            rq.task_new(TaskId(t as u16), &p, 0).unwrap();
        }
        let mut queued = vec![false; tasks];
        let mut curr: Option<TaskId> = None;
        let mut now = 0;
        for step in 0..4000 {
            now += rng.below(2 * MS);
            let t = TaskId(rng.below(tasks as u64) as u16);
            match rng.below(6) {
                0 | 1 if !queued[t.index()] => {
                    rq.enqueue_task(
                        t,
                        now,
                        EnqueueFlags {
                            wakeup: true,
                            ..EnqueueFlags::default()
                        },
                    );
                    queued[t.index()] = true;
                    if let Some(c) = curr {
                        let _ = rq.wakeup_preempt(c, t, now);
                    }
                }
                2 if queued[t.index()] => {
                    rq.dequeue_task(
                        t,
                        now,
                        DequeueFlags {
                            sleep: true,
                            ..DequeueFlags::default()
                        },
                    );
                    queued[t.index()] = false;
                    if curr == Some(t) {
                        rq.put_prev_task(t, now);
                        curr = None;
                    }
                }
                3 => {
                    if let Some(c) = curr {
                        if rng.below(4) == 0 {
                            rq.yield_task(c, now);
                        }
                        let _ = rq.task_tick(c, now);
                    }
                }
                4 if step % 7 == 0 => {
                    let g = [GroupId::ROOT, group, nested][rng.below(3) as usize];
                    rq.set_task_group(t, g, now).unwrap();
                }
                _ => {
                    if let Some(c) = curr.take() {
                        rq.put_prev_task(c, now);
                    }
                    curr = rq.pick_next_task(now);
                    match curr {
                        Some(next) => {
                            assert!(queued[next.index()], "{next:?} not queued");
                            rq.set_next_task(next, now);
                        }
                        None => assert!(queued.iter().all(|&q| !q), "idle with work"),
                    }
                }
            }
            assert_eq!(rq.nr_running(), queued.iter().filter(|&&q| q).count());
            assert_eq!(rq.signals().nr_running, rq.nr_running());
            if let Some(fair) = rq.fair() {
                fair.check_consistency();
            }
        }
        if let Some(c) = curr.take() {
            rq.put_prev_task(c, now);
        }
        drain(&mut rq, &mut queued, now);
        assert_eq!(rq.pick_next_task(now + 1), None);
    }
}

/// CPU-bound tasks driven by a 1 ms tick: every one runs within 200 ms.
#[test]
fn no_starvation_under_ticks() {
    for kind in policies() {
        let tasks = 6;
        let mut rq = RunQueue::new(kind, tasks);
        for t in 0..tasks {
            let p = TaskParams {
                policy: crate::task::Policy::Normal {
                    nice: t as i8 * 3 - 5,
                },
                ..TaskParams::default()
            };
            rq.task_new(TaskId(t as u16), &p, 0).unwrap();
            rq.enqueue_task(TaskId(t as u16), 0, EnqueueFlags::default());
        }
        let mut last_ran: Vec<u64> = vec![0; tasks];
        let mut now = 0;
        let mut curr = rq.pick_next_task(now).unwrap();
        rq.set_next_task(curr, now);
        while now < 2_000 * MS {
            now += MS;
            last_ran[curr.index()] = now;
            if rq.task_tick(curr, now).is_needed() {
                rq.put_prev_task(curr, now);
                curr = rq.pick_next_task(now).unwrap();
                rq.set_next_task(curr, now);
            }
            for (t, &at) in last_ran.iter().enumerate() {
                assert!(now - at <= 200 * MS, "{kind:?}: task {t} starved at {now}");
            }
        }
    }
}

#[test]
fn migration_keeps_the_task() {
    for kind in policies() {
        let mut cpu0 = RunQueue::new(kind, 4);
        let mut cpu1 = RunQueue::new(kind, 4);
        cpu0.task_new(TaskId(1), &TaskParams::default(), 0).unwrap();
        cpu0.enqueue_task(TaskId(1), 0, EnqueueFlags::default());
        assert!(cpu0.migrate_task_out(TaskId(1)).is_none(), "queued");
        cpu0.dequeue_task(TaskId(1), 5, DequeueFlags::default());
        let m = cpu0.migrate_task_out(TaskId(1)).unwrap();
        cpu1.migrate_task_in(TaskId(1), &m, 5).unwrap();
        cpu1.enqueue_task(
            TaskId(1),
            5,
            EnqueueFlags {
                migrated: true,
                ..EnqueueFlags::default()
            },
        );
        assert_eq!(cpu1.pick_next_task(5), Some(TaskId(1)));
        assert_eq!(cpu0.pick_next_task(5), None);
    }
}
