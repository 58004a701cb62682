//! Tests of the fair class against independent expectations: the facts' vectors
//! (§1.5, Appendix A §5), analytic shares, and brute-force checks of the EEVDF
//! and CFS invariants over random operation sequences.

use alloc::vec;
use alloc::vec::Vec;

use super::Pick;
use super::entity::{CfsTunables, EevdfTunables};
use super::test_support::*;
use super::timeline::TimelineStore;
use super::{FairRunQueue, PickPolicy};
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::task::{GroupId, TaskId};
use crate::weight::{calc_delta_fair, vtime_delta};

/// §1.5 toy vector: v0 = 1,000,000; A (1024, 1,000,000), B (1024, 1,600,000),
/// C (335, 1,300,000) give Σkey·w = 714,900,000, Σw = 2383, V = 1,300,000;
/// A eligible (lag +300,000), B not (lag -300,000), C exactly eligible.
#[test]
fn eevdf_toy_vector() {
    let mut fair = FairRunQueue::new(eevdf(4 * MS), 3, 4);
    let root = GroupId::ROOT;
    fair.queues[0].min_vruntime = 1_000_000;
    let entities = [(0, 1_000_000u64), (0, 1_600_000), (5, 1_300_000)];
    for (i, &(n, v)) in entities.iter().enumerate() {
        fair.task_new(TaskId(i as u16), &nice(n), 0).unwrap();
        let e = fair.task_se(TaskId(i as u16)) as usize;
        let entity = &mut fair.entities[e];
        entity.vruntime = v;
        entity.deadline = v + 10;
        entity.on_rq = true;
        fair.queues[0].load += entity.load.weight;
        fair.queues[0].nr_queued += 1;
        fair.timeline_insert(root, e as u32);
    }
    let se = |t: u16| fair.task_se(TaskId(t));
    assert_eq!(fair.queues[0].avg_vruntime, 714_900_000);
    assert_eq!(fair.queues[0].avg_load, 2383);
    assert_eq!(fair.avg_vruntime(root), 1_300_000);
    assert!(fair.entity_eligible(root, se(0)));
    assert!(!fair.entity_eligible(root, se(1)));
    assert!(fair.entity_eligible(root, se(2)));
    // A has the earliest deadline among the eligible A and C.
    assert_eq!(fair.pick_next_task(0), Some(TaskId(0)));
}

/// Σ over the queue (running entity included) of w·(V − v) for the entities of
/// `q`, with Σw. §1.5: V is Σkey·w/Σw rounded toward −∞, so the weighted lags
/// sum to a value in (−Σw, 0].
fn weighted_lag_sum(fair: &FairRunQueue, q: GroupId, queued: &[u32]) -> (i128, i128) {
    let v = fair.avg_vruntime(q);
    let mut sum = 0i128;
    let mut load = 0i128;
    for &e in queued {
        let entity = &fair.entities[e as usize];
        let w = i128::from(entity.weight());
        sum += w * i128::from(vtime_delta(v, entity.vruntime));
        load += w;
    }
    (sum, load)
}

/// Property test over random operation sequences (EEVDF, with groups): the
/// weighted lags sum to zero within the rounding of V, a picked entity is
/// eligible at every level, a freshly placed deadline is
/// vruntime + calc_delta_fair(slice) (half at fork), saved lags respect the
/// clamp, and nr_running matches a model.
#[test]
fn eevdf_invariants_over_random_operations() {
    let tick = 4 * MS;
    let tunables = EevdfTunables::for_cpus(1, tick);
    let mut delayed_dequeues = 0;
    for seed in 1..6u64 {
        let mut rng = Rng::new(seed);
        let tasks = 24usize;
        let mut fair = FairRunQueue::new(PickPolicy::Eevdf(tunables), tasks, 4);
        let g1 = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let g2 = fair.create_group(g1, 512).unwrap();
        let g3 = fair.create_group(GroupId::ROOT, 3000).unwrap();
        let groups = [GroupId::ROOT, g1, g2, g3];
        let mut queued = vec![false; tasks];
        for t in 0..tasks {
            let n = (rng.below(40) as i8) - 20;
            let g = groups[rng.below(4) as usize];
            fair.task_new(TaskId(t as u16), &in_group(n, g), 0).unwrap();
        }
        let mut now = 0u64;
        let mut curr: Option<TaskId> = None;
        for _ in 0..3000 {
            now += rng.below(3 * MS);
            let t = TaskId(rng.below(tasks as u64) as u16);
            match rng.below(4) {
                0 if !queued[t.index()] => {
                    let initial = rng.below(4) == 0;
                    let flags = if initial { INITIAL } else { WAKEUP };
                    let had_rel = fair.entities[fair.task_se(t) as usize].rel_deadline;
                    // A delayed task wakes where it is, without a new placement.
                    let was_delayed = fair.entities[fair.task_se(t) as usize].delayed;
                    fair.enqueue_task(t, now, flags);
                    queued[t.index()] = true;
                    if !had_rel && !was_delayed {
                        let entity = &fair.entities[fair.task_se(t) as usize];
                        let mut vslice = calc_delta_fair(entity.slice, entity.load);
                        if initial {
                            vslice /= 2;
                        }
                        assert_eq!(
                            entity.deadline.wrapping_sub(entity.vruntime),
                            vslice,
                            "deadline = vruntime + slice*NICE_0/weight"
                        );
                    }
                }
                1 if queued[t.index()] => {
                    fair.dequeue_task(t, now, SLEEP);
                    queued[t.index()] = false;
                    delayed_dequeues += u32::from(fair.entities[fair.task_se(t) as usize].delayed);
                    let entity = &fair.entities[fair.task_se(t) as usize];
                    let limit = calc_delta_fair((2 * entity.slice).max(tick), entity.load) as i64;
                    assert!(entity.vlag.abs() <= limit, "lag clamp");
                    if curr == Some(t) {
                        fair.put_prev_task(t, now);
                        curr = None;
                    }
                }
                2 => {
                    if let Some(c) = curr {
                        let _ = fair.task_tick(c, now);
                    }
                }
                _ => {
                    if let Some(c) = curr.take() {
                        fair.put_prev_task(c, now);
                    }
                    curr = fair.pick_next_task(now);
                    if let Some(next) = curr {
                        assert!(queued[next.index()], "picked a task that is not queued");
                        // Every entity on the path was eligible in its queue
                        // (no running entity at pick time here).
                        let mut level = Some(fair.task_se(next));
                        while let Some(se) = level {
                            let q = fair.entities[se as usize].queue;
                            assert!(fair.entity_eligible(q, se), "picked entity not eligible");
                            // Brute force: no eligible entity of that queue has
                            // an earlier deadline.
                            let deadline = fair.entities[se as usize].deadline;
                            for (other, entity) in fair.entities.iter().enumerate() {
                                if entity.known
                                    && entity.on_rq
                                    && entity.queue == q
                                    && fair.entity_eligible(q, other as u32)
                                {
                                    assert!(
                                        vtime_delta(entity.deadline, deadline) >= 0,
                                        "entity {other} is eligible with an earlier deadline"
                                    );
                                }
                            }
                            level = fair.parent_entity(se);
                        }
                        fair.set_next_task(next, now);
                    }
                }
            }
            let model = queued.iter().filter(|&&q| q).count();
            assert_eq!(fair.nr_running(), model);
            fair.check_consistency();
            // Lag sum at every group queue.
            for &g in &groups {
                let members: Vec<u32> = (0..fair.entities.len() as u32)
                    .filter(|&e| {
                        let entity = &fair.entities[e as usize];
                        entity.known && entity.on_rq && entity.queue == g
                    })
                    .collect();
                let (sum, load) = weighted_lag_sum(&fair, g, &members);
                assert!(
                    sum <= 0 && sum > -load.max(1),
                    "seed {seed}: weighted lag sum {sum} with load {load} in {g:?}"
                );
            }
        }
    }
    // The sequences exercised the delayed dequeue (§1.5) too.
    assert!(delayed_dequeues > 0);
}

/// CFS over random operations: the picked task is the one with the smallest
/// vruntime (brute force over queued entities at each level), and nr_running
/// matches a model.
#[test]
fn cfs_picks_leftmost_over_random_operations() {
    let mut rng = Rng::new(11);
    let tasks = 16usize;
    let mut fair = FairRunQueue::new(cfs(), tasks, 2);
    let g = fair.create_group(GroupId::ROOT, 1024).unwrap();
    for t in 0..tasks {
        let n = (rng.below(10) as i8) - 5;
        let group = if t % 3 == 0 { g } else { GroupId::ROOT };
        fair.task_new(TaskId(t as u16), &in_group(n, group), 0)
            .unwrap();
    }
    let mut queued = vec![false; tasks];
    let mut curr: Option<TaskId> = None;
    let mut now = 0;
    for _ in 0..3000 {
        now += rng.below(2 * MS);
        let t = TaskId(rng.below(tasks as u64) as u16);
        match rng.below(3) {
            0 if !queued[t.index()] => {
                fair.enqueue_task(t, now, WAKEUP);
                queued[t.index()] = true;
            }
            1 if queued[t.index()] => {
                fair.dequeue_task(t, now, SLEEP);
                queued[t.index()] = false;
                if curr == Some(t) {
                    fair.put_prev_task(t, now);
                    curr = None;
                }
            }
            _ => {
                if let Some(c) = curr.take() {
                    fair.put_prev_task(c, now);
                }
                curr = fair.pick_next_task(now);
                if let Some(next) = curr {
                    let mut level = Some(fair.task_se(next));
                    while let Some(se) = level {
                        let q = fair.entities[se as usize].queue;
                        let v = fair.entities[se as usize].vruntime;
                        for (other, entity) in fair.entities.iter().enumerate() {
                            if entity.known && entity.on_rq && entity.queue == q {
                                assert!(
                                    vtime_delta(entity.vruntime, v) >= 0,
                                    "entity {other} is left of the pick {se}"
                                );
                            }
                        }
                        level = fair.parent_entity(se);
                    }
                    fair.set_next_task(next, now);
                }
            }
        }
        assert_eq!(fair.nr_running(), queued.iter().filter(|&&q| q).count());
        fair.check_consistency();
    }
}

/// §1.4 wake-up preemption: the woken task preempts iff
/// curr.vruntime − woken.vruntime > calc_delta_fair(wakeup_granularity, woken).
/// Thresholds for the 1 ms granularity of one CPU from the §1.2 table: nice 0
/// 1,000,000 ns, nice −5 328,099 ns.
#[test]
fn cfs_wakeup_preemption_rule() {
    let tunables = CfsTunables::for_cpus(1);
    let cases = [
        (0i8, 1_000_000u64, false),
        (0, 1_000_001, true),
        (-5, 328_099, false),
        (-5, 328_100, true),
        (0, 0, false),
    ];
    for (woken_nice, gap, expected) in cases {
        let mut fair = FairRunQueue::new(PickPolicy::Cfs(tunables), 2, 4);
        fair.task_new(TaskId(0), &nice(0), 0).unwrap();
        fair.task_new(TaskId(1), &nice(woken_nice), 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, INITIAL);
        fair.enqueue_task(TaskId(1), 0, INITIAL);
        fair.dequeue_task(TaskId(1), 0, SLEEP);
        let curr = fair.pick_next_task(0).unwrap();
        assert_eq!(curr, TaskId(0));
        fair.set_next_task(curr, 0);
        // The woken task sits `gap` behind curr; gaps under latency/2 = 3 ms
        // survive the wake-up placement unchanged.
        let base = fair.entities[fair.task_se(TaskId(0)) as usize].vruntime;
        let woken = fair.task_se(TaskId(1)) as usize;
        fair.entities[woken].vruntime = base.wrapping_sub(gap);
        fair.enqueue_task(TaskId(1), 0, WAKEUP);
        assert_eq!(
            fair.entities[fair.task_se(TaskId(1)) as usize].vruntime,
            base.wrapping_sub(gap)
        );
        assert_eq!(
            fair.wakeup_preempt(TaskId(0), TaskId(1), 0).is_needed(),
            expected,
            "nice {woken_nice} gap {gap}"
        );
    }
}

/// §1.4 placement: a long sleeper wakes at min_vruntime − latency/2; a short
/// sleeper keeps its vruntime; a new task starts at min_vruntime + vslice.
#[test]
fn cfs_sleeper_credit() {
    let tunables = CfsTunables::for_cpus(1);
    let mut fair = FairRunQueue::new(PickPolicy::Cfs(tunables), 3, 4);
    for t in 0..2 {
        fair.task_new(TaskId(t), &nice(0), 0).unwrap();
        fair.enqueue_task(TaskId(t), 0, INITIAL);
    }
    let runtime = drive(&mut fair, 2, MS, 0, 100 * MS);
    assert_eq!(runtime.iter().sum::<u64>(), 100 * MS);
    // Task 1 sleeps while task 0 runs 50 ms.
    fair.dequeue_task(TaskId(1), 100 * MS, SLEEP);
    let _ = drive(&mut fair, 2, MS, 100 * MS, 150 * MS);
    let min = fair.queues[0].min_vruntime;
    fair.enqueue_task(TaskId(1), 150 * MS, WAKEUP);
    assert_eq!(
        fair.entities[fair.task_se(TaskId(1)) as usize].vruntime,
        min - tunables.latency / 2
    );
    // A new task: min_vruntime + vslice, vslice = sched_slice = latency/3 for
    // three tasks of equal weight (period = latency while nr ≤ 8), up to the
    // 1 ns truncation of the fixed-point division (§1.2).
    fair.task_new(TaskId(2), &nice(0), 150 * MS).unwrap();
    fair.enqueue_task(TaskId(2), 150 * MS, INITIAL);
    let min = fair.queues[0].min_vruntime;
    let offset = fair.entities[fair.task_se(TaskId(2)) as usize]
        .vruntime
        .wrapping_sub(min);
    assert!(
        offset.abs_diff(tunables.latency / 3) <= 1,
        "start debit {offset}"
    );
}

/// §1.5: a task's lag survives a sleep and a migration: after it joins again,
/// V − vruntime equals the saved vlag (within the rounding of V and of the
/// inflation, 2 ns).
#[test]
fn eevdf_lag_is_kept_across_sleep_and_migration() {
    let tick = 4 * MS;
    // v6.6–v6.11 behaviour: no delayed dequeue, so every sleeper leaves at once.
    let pick = PickPolicy::Eevdf(EevdfTunables {
        delay_dequeue: false,
        ..EevdfTunables::for_cpus(1, tick)
    });
    let mut cpu0 = FairRunQueue::new(pick, 4, 4);
    let mut cpu1 = FairRunQueue::new(pick, 4, 4);
    for t in 0..3 {
        cpu0.task_new(TaskId(t), &nice(t as i8 * 2), 0).unwrap();
        cpu0.enqueue_task(TaskId(t), 0, INITIAL);
    }
    cpu1.task_new(TaskId(3), &nice(-3), 0).unwrap();
    cpu1.enqueue_task(TaskId(3), 0, INITIAL);
    let _ = drive(&mut cpu0, 4, MS, 0, 37 * MS);
    let _ = drive(&mut cpu1, 4, MS, 0, 37 * MS);
    for t in 0..3u16 {
        let task = TaskId(t);
        cpu0.dequeue_task(task, 37 * MS, SLEEP);
        let vlag = cpu0.entities[cpu0.task_se(TaskId(t)) as usize].vlag;
        cpu0.enqueue_task(task, 40 * MS, WAKEUP);
        let lag = vtime_delta(
            cpu0.avg_vruntime(GroupId::ROOT),
            cpu0.entities[cpu0.task_se(TaskId(t)) as usize].vruntime,
        );
        assert!((lag - vlag).abs() <= 2, "sleep: lag {lag} vs saved {vlag}");
    }
    // Migrate task 1 to cpu1.
    cpu0.dequeue_task(
        TaskId(1),
        41 * MS,
        DequeueFlags {
            sleep: false,
            migrating: true,
        },
    );
    let vlag = cpu0.entities[cpu0.task_se(TaskId(1)) as usize].vlag;
    let migration = cpu0.migrate_task_out(TaskId(1)).unwrap();
    cpu1.migrate_task_in(TaskId(1), &migration, 41 * MS)
        .unwrap();
    cpu1.enqueue_task(
        TaskId(1),
        41 * MS,
        EnqueueFlags {
            migrated: true,
            ..EnqueueFlags::default()
        },
    );
    let lag = vtime_delta(
        cpu1.avg_vruntime(GroupId::ROOT),
        cpu1.entities[cpu1.task_se(TaskId(1)) as usize].vruntime,
    );
    assert!(
        (lag - vlag).abs() <= 2,
        "migration: lag {lag} vs saved {vlag}"
    );
    assert_eq!(cpu0.nr_running(), 2);
    assert_eq!(cpu1.nr_running(), 2);
}

/// §1.3: min_vruntime starts at −2^20 (near wrap-around) and never decreases.
#[test]
fn min_vruntime_starts_near_wrap_and_is_monotonic() {
    for pick in [cfs(), eevdf(MS)] {
        let mut fair = FairRunQueue::new(pick, 3, 4);
        assert_eq!(fair.queues[0].min_vruntime, (-(1i64 << 20)) as u64);
        for t in 0..3 {
            fair.task_new(TaskId(t), &nice(t as i8), 0).unwrap();
            fair.enqueue_task(TaskId(t), 0, INITIAL);
        }
        let mut last = fair.queues[0].min_vruntime;
        let mut now = 0;
        for step in 0..200u64 {
            let _ = drive(&mut fair, 3, MS, now, now + 3 * MS);
            now += 3 * MS;
            let t = TaskId((step % 3) as u16);
            fair.dequeue_task(t, now, SLEEP);
            fair.enqueue_task(t, now, WAKEUP);
            let min = fair.queues[0].min_vruntime;
            assert!(vtime_delta(min, last) >= 0, "min_vruntime went back");
            last = min;
        }
        // It wrapped past zero during the run.
        assert!(vtime_delta(last, 0) > 0);
    }
}

/// Bad group input gives typed errors naming the field and value.
#[test]
fn group_errors_are_typed() {
    use super::group::GroupError;
    let mut fair = FairRunQueue::new(cfs(), 2, 2);
    assert_eq!(
        fair.create_group(GroupId::ROOT, 1),
        Err(GroupError::OutOfRange {
            field: "shares",
            value: 1,
            min: 2,
            max: 1 << 18
        })
    );
    assert_eq!(
        fair.create_group(GroupId(5), 1024),
        Err(GroupError::NoSuchGroup { group: 5 })
    );
    let g = fair.create_group(GroupId::ROOT, 1024).unwrap();
    assert_eq!(
        fair.create_group(g, 1024),
        Err(GroupError::TooManyGroups { capacity: 2 })
    );
    assert_eq!(
        fair.set_group_shares(GroupId::ROOT, 100, 0),
        Err(GroupError::RootGroup)
    );
    fair.task_new(TaskId(0), &in_group(0, g), 0).unwrap();
    assert_eq!(
        fair.remove_group(g),
        Err(GroupError::GroupBusy { group: g.0 })
    );
    assert_eq!(
        fair.set_task_group(TaskId(1), g, 0),
        Err(GroupError::UnknownTask { task: 1 })
    );
    fair.set_task_group(TaskId(0), GroupId::ROOT, 0).unwrap();
    assert_eq!(fair.remove_group(g), Ok(()));
}

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// Brute-force recount of every group run queue against its members: tree
    /// invariants, load, nr_queued, h_nr_running and the EEVDF sums, and the
    /// state of bandwidth control (§4.2). For tests.
    ///
    /// With throttling, `h_nr_running` of a run queue `Q` counts the tasks that
    /// are runnable (known, queued, not delayed) in `Q`'s subtree and whose
    /// path from their own run queue up to `Q` crosses no throttled run queue
    /// other than `Q` itself: a throttled run queue keeps counting its own
    /// subtree (`throttle_cfs_rq` leaves its `h_nr_running` alone), while every
    /// level above it lost its tasks when its group entity was dequeued, and
    /// enqueue, dequeue and the delayed dequeue stop at a throttled level.
    pub(crate) fn check_consistency(&self) {
        for (g, info) in self.groups.iter().enumerate() {
            if !info.exists {
                continue;
            }
            let group = GroupId(g as u16);
            let queue = &self.queues[g];
            let in_tree = self.nodes.check(&queue.timeline);
            let (mut load, mut nr, mut waiting, mut avg_load, mut avg) =
                (0u64, 0u32, 0usize, 0u64, 0i64);
            for (e, entity) in self.entities.iter().enumerate() {
                if !(entity.known && entity.on_rq && entity.queue == group) {
                    continue;
                }
                load += entity.load.weight;
                nr += 1;
                if queue.curr != e as u32 {
                    waiting += 1;
                    avg_load += entity.weight();
                    avg +=
                        vtime_delta(entity.vruntime, queue.min_vruntime) * entity.weight() as i64;
                }
            }
            assert_eq!(queue.load, load, "load of {group:?}");
            assert_eq!(queue.nr_queued, nr, "nr_queued of {group:?}");
            assert_eq!(in_tree, waiting, "tree size of {group:?}");
            assert_eq!(queue.avg_load, avg_load, "avg_load of {group:?}");
            assert_eq!(queue.avg_vruntime, avg, "avg_vruntime of {group:?}");
            let tasks_below = (0..self.max_tasks)
                .filter(|&t| {
                    let entity = &self.entities[self.task_se(TaskId(t as u16)) as usize];
                    if !(entity.known && entity.on_rq && !entity.delayed) {
                        return false;
                    }
                    let mut at = entity.queue;
                    loop {
                        if at == group {
                            return true;
                        }
                        if at == GroupId::ROOT {
                            return false;
                        }
                        if self.queues[at.index()].runtime.throttled {
                            // Throttled strictly below `group`: its tasks do
                            // not count up here.
                            return false;
                        }
                        at = self.groups[at.index()].parent;
                    }
                })
                .count();
            assert_eq!(
                queue.h_nr_running as usize, tasks_below,
                "h_nr_running of {group:?}"
            );
            self.check_bandwidth_consistency(group);
        }
        for (e, entity) in self.entities.iter().enumerate() {
            assert!(
                !entity.delayed || (entity.known && entity.on_rq),
                "entity {e} is delayed but not queued"
            );
        }
    }

    /// Bandwidth control of `group`'s run queue (§4.1, §4.2): only a limited
    /// run queue is throttled (never the root's); `throttle_count` is the
    /// number of throttled run queues among the group and its ancestors
    /// (`tg_throttle_down` / `tg_unthrottle_up`); a group entity is queued in
    /// its parent exactly when its run queue is not throttled and holds
    /// entities (or the entity waits as delayed, EEVDF), so a throttled run
    /// queue's entity is never queued.
    fn check_bandwidth_consistency(&self, group: GroupId) {
        let runtime = &self.queues[group.index()].runtime;
        if !runtime.enabled {
            assert!(!runtime.throttled, "{group:?} is throttled without a limit");
        }
        let mut throttled_here_and_above = 0;
        let mut at = group;
        loop {
            throttled_here_and_above += u32::from(self.queues[at.index()].runtime.throttled);
            if at == GroupId::ROOT {
                break;
            }
            at = self.groups[at.index()].parent;
        }
        assert_eq!(
            runtime.throttle_count, throttled_here_and_above,
            "throttle_count of {group:?}"
        );
        if group == GroupId::ROOT {
            assert!(!runtime.throttled, "the root run queue is throttled");
            return;
        }
        let entity = &self.entities[self.group_entity(group) as usize];
        let queue = &self.queues[group.index()];
        if entity.delayed {
            // Its dequeue was delayed when its run queue emptied (EEVDF
            // `DELAY_DEQUEUE`); whatever joins the run queue again first
            // requeues it (`requeue_delayed_entity`, and `unthrottle_cfs_rq`'s
            // "unfinished DELAY_DEQUEUE business").
            assert_eq!(
                queue.load, 0,
                "{group:?}'s group entity is delayed over a run queue with entities \
                 (h_nr_running {})",
                queue.h_nr_running
            );
        }
        if runtime.throttled {
            assert!(
                !entity.on_rq,
                "{group:?} is throttled but its group entity is queued"
            );
        } else {
            assert_eq!(
                entity.on_rq,
                queue.load != 0 || entity.delayed,
                "{group:?} (load {}, delayed {}): its group entity's on_rq",
                queue.load,
                entity.delayed
            );
        }
    }
}

/// §1.4/§1.5: a SCHED_IDLE task is preempted by any non-idle wakee, even a
/// nice-19 one from another group; a SCHED_BATCH wakee never preempts a normal
/// task, even at nice -20.
#[test]
fn idle_and_batch_wakeup_rules() {
    use crate::task::{Policy, TaskParams};
    for pick in [cfs(), eevdf(MS)] {
        let mut fair = FairRunQueue::new(pick, 3, 3);
        let a = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let b = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let idle = TaskParams {
            policy: Policy::Idle,
            group: a,
            ..TaskParams::default()
        };
        let batch = TaskParams {
            policy: Policy::Batch { nice: -20 },
            ..TaskParams::default()
        };
        fair.task_new(TaskId(0), &idle, 0).unwrap();
        fair.task_new(TaskId(1), &in_group(19, b), 0).unwrap();
        fair.task_new(TaskId(2), &batch, 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, INITIAL);
        assert_eq!(fair.pick_next_task(0), Some(TaskId(0)));
        fair.set_next_task(TaskId(0), 0);
        fair.enqueue_task(TaskId(1), MS, WAKEUP);
        assert!(
            fair.wakeup_preempt(TaskId(0), TaskId(1), MS).is_needed(),
            "idle curr"
        );
        fair.put_prev_task(TaskId(0), MS);
        fair.dequeue_task(TaskId(0), MS, SLEEP);
        assert_eq!(fair.pick_next_task(MS), Some(TaskId(1)));
        fair.set_next_task(TaskId(1), MS);
        let _ = fair.task_tick(TaskId(1), 10 * MS);
        fair.enqueue_task(TaskId(2), 10 * MS, WAKEUP);
        assert!(
            !fair
                .wakeup_preempt(TaskId(1), TaskId(2), 10 * MS)
                .is_needed(),
            "batch"
        );
    }
}

/// Issue 15 (memory in proportion to the tasks): the group entities come
/// first, so the entity table grows at its end when the mechanism makes room
/// for more task ids; a group entity that is queued
/// keeps its state and its tree across the growth. Sizes by block
/// arithmetic (`crate::task::grown_length`): 3 group entities + 8 tasks = 11
/// entries; room for task 70 needs 74, one block of 64 rounded up is 128.
#[test]
fn entities_grow_after_the_group_entities() {
    use super::entity::Entity;
    use crate::task::TaskParams;
    // The node arena has all 2^16 nodes of 32 bytes (EEVDF) from the start.
    const ARENA: usize = (1 << 16) * 32;
    let mut fair = FairRunQueue::new(eevdf(3 * MS), 8, 4);
    let size = |entities: usize| entities * core::mem::size_of::<Entity>() + ARENA;
    assert_eq!(fair.task_storage_bytes(), size(11));
    let group = fair.create_group(GroupId::ROOT, 1024).unwrap();
    let in_group = TaskParams {
        group,
        ..TaskParams::default()
    };
    fair.task_new(TaskId(7), &in_group, 0).unwrap();
    fair.enqueue_task(TaskId(7), 0, WAKEUP);
    fair.task_new(TaskId(6), &TaskParams::default(), 0).unwrap();
    fair.enqueue_task(TaskId(6), 0, WAKEUP);
    assert!(
        fair.task_new(TaskId(70), &TaskParams::default(), 0)
            .is_err()
    );
    let group_vruntime = fair.group_entity_of(group).unwrap().vruntime;
    fair.reserve_tasks(71);
    assert_eq!(fair.task_storage_bytes(), size(128));
    assert_eq!(
        fair.group_entity_of(group).unwrap().vruntime,
        group_vruntime
    );
    assert!(fair.group_entity_of(group).unwrap().on_rq);
    fair.task_new(TaskId(70), &in_group, MS).unwrap();
    fair.enqueue_task(TaskId(70), MS, WAKEUP);
    // Room that exists is not allocated again.
    fair.reserve_tasks(100);
    assert_eq!(fair.task_storage_bytes(), size(128));
    // All three run, and the trees hold after the growth.
    let mut seen = Vec::new();
    for step in 0..6u64 {
        let now = (2 + step) * 3 * MS;
        let next = fair.pick_next_task(now).unwrap();
        fair.set_next_task(next, now);
        seen.push(next);
        fair.check_consistency();
        fair.put_prev_task(next, now + 3 * MS);
    }
    for task in [TaskId(6), TaskId(7), TaskId(70)] {
        assert!(seen.contains(&task), "{task:?} never ran: {seen:?}");
    }
}

/// A group removed while its group entity waits on the parent's timeline as
/// a delayed dequeue (§1.5: its run queue emptied while it was not eligible):
/// the removal completes that dequeue first, as Linux does when it
/// unregisters a group, so no entity of a removed group is left queued for a
/// pick to walk into.
#[test]
fn removing_a_group_whose_entity_is_delayed_completes_its_dequeue() {
    let mut fair = FairRunQueue::new(eevdf(MS), 2, 2);
    let g = fair.create_group(GroupId::ROOT, 1024).unwrap();
    let (grouped, plain) = (TaskId(0), TaskId(1));
    fair.task_new(grouped, &in_group(0, g), 0).unwrap();
    fair.task_new(plain, &nice(0), 0).unwrap();
    fair.enqueue_task(grouped, 0, INITIAL);
    fair.enqueue_task(plain, 0, INITIAL);
    // The grouped task runs 10 ms alone: G's entity ends far past the
    // average, not eligible, when its task sleeps.
    fair.set_next_task(grouped, 0);
    fair.dequeue_task(grouped, 10 * MS, SLEEP);
    fair.put_prev_task(grouped, 10 * MS);
    let ge = fair.group_entity(g) as usize;
    assert!(
        fair.entities[ge].on_rq && fair.entities[ge].delayed,
        "the case needs G's entity delayed"
    );
    fair.check_consistency();
    fair.set_task_group(grouped, GroupId::ROOT, 10 * MS)
        .unwrap();
    assert_eq!(fair.remove_group(g), Ok(()));
    assert_eq!(fair.queues[0].nr_queued, 1, "only the plain task is queued");
    fair.check_consistency();
    assert_eq!(fair.pick_next_task(10 * MS), Some(plain));
}
