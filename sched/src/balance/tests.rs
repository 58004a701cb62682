//! Balance tests: hand-computed wake-up and balancing scenarios, and a
//! brute-force model that applies decisions until nothing moves.

use super::load_balance::MigrationType;
use super::rebalance::balance_interval_ns;
use super::wake::{wake_affine_idle, wake_affine_weight};
use super::*;
use crate::task::{CpuId, CpuMask, TaskId};
use crate::topology::{DomainLevel, Topology};
use alloc::vec;
use alloc::vec::Vec;

use crate::topology::test_boards::juno_r0;

/// Idle snapshots for every CPU of `topology`.
fn idle_snapshots(topology: &Topology) -> Vec<CpuSnapshot> {
    (0..topology.nr_cpus())
        .map(|i| {
            let cpu = CpuId(i as u16);
            CpuSnapshot {
                cpu,
                capacity: topology.capacity_orig(cpu),
                nr_running: 0,
                idle: true,
                load_avg: 0,
                util_avg: 0,
                runnable_avg: 0,
                util_est: 0,
                misfit_task_load: 0,
                uclamp: [0, 1024],
                uclamp_idle: true,
                rt_runnable: false,
            }
        })
        .collect()
}

/// Marks `cpu` busy with `nr` tasks of total load `load`.
fn busy(snapshots: &mut [CpuSnapshot], cpu: u16, nr: u32, load: u64) {
    let s = &mut snapshots[usize::from(cpu)];
    s.nr_running = nr;
    s.idle = nr == 0;
    s.load_avg = load;
    s.util_avg = if nr > 0 { s.capacity } else { 0 };
    s.runnable_avg = u64::from(nr) * s.capacity;
}

fn request(prev: u16, waker: u16) -> WakeRequest {
    WakeRequest {
        prev_cpu: CpuId(prev),
        waker_cpu: CpuId(waker),
        affinity: CpuMask::ALL,
        sync: false,
        wake_wide: false,
        task_load: 512,
        task_util: 100,
        uclamp: [0, 1024],
        waker_load: 1024,
    }
}

fn wake(
    topology: &Topology,
    snapshots: &[CpuSnapshot],
    request: &WakeRequest,
) -> (u16, WakeReason) {
    let target = select_task_rq(topology, snapshots, request).unwrap();
    (target.cpu.0, target.reason)
}

#[test]
fn all_idle_wakes_on_prev() {
    let smp = Topology::symmetric(8, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    busy(&mut s, 5, 1, 1024); // the waker runs on CPU 5
    // wake_affine_idle: waker busy, not sync, prev idle -> prev; prev idle -> prev.
    assert_eq!(wake(&smp, &s, &request(2, 5)), (2, WakeReason::TargetIdle));
    // Same when the waker CPU is not allowed, or the wake-up is wide.
    let mut r = request(2, 5);
    r.affinity = CpuMask(0x0f);
    assert_eq!(wake(&smp, &s, &r), (2, WakeReason::TargetIdle));
    r.wake_wide = true;
    assert_eq!(wake(&smp, &s, &r), (2, WakeReason::TargetIdle));
}

#[test]
fn busy_prev_wakes_on_first_idle_sibling_of_its_cluster() {
    let smp = Topology::symmetric(8, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    busy(&mut s, 1, 1, 1024);
    // Woken from prev's own CPU: target = prev = 1, busy; scan cluster {0..3}
    // from 2 with wrap-around: 2 is idle.
    assert_eq!(wake(&smp, &s, &request(1, 1)), (2, WakeReason::IdleSibling));
    busy(&mut s, 2, 1, 1024);
    assert_eq!(wake(&smp, &s, &request(1, 1)), (3, WakeReason::IdleSibling));
    busy(&mut s, 3, 1, 1024);
    assert_eq!(wake(&smp, &s, &request(1, 1)), (0, WakeReason::IdleSibling));
    // Whole cluster busy: the fast path does not leave it; the target stays.
    busy(&mut s, 0, 1, 1024);
    assert_eq!(wake(&smp, &s, &request(1, 1)), (1, WakeReason::Busy));
}

#[test]
fn affinity_is_respected_at_wake_up() {
    let smp = Topology::symmetric(8, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    busy(&mut s, 0, 1, 1024);
    busy(&mut s, 1, 1, 1024);
    // Idle 2 and 3 are excluded: {0, 1, 6}. Cluster scan finds nothing -> prev 1.
    let mut r = request(1, 1);
    r.affinity = CpuMask(0b100_0011);
    assert_eq!(wake(&smp, &s, &r), (1, WakeReason::Busy));
    // Allowed {3}: the scan finds 3.
    r.affinity = CpuMask(0b1000);
    assert_eq!(wake(&smp, &s, &r), (3, WakeReason::IdleSibling));
    // prev not allowed and nothing allowed in its cluster: fallback to an
    // idle allowed CPU (6).
    r.affinity = CpuMask(0b100_0000);
    assert_eq!(wake(&smp, &s, &r), (6, WakeReason::Fallback));
    // Bad input is a typed error.
    r.affinity = CpuMask(1 << 20);
    assert_eq!(
        select_task_rq(&smp, &s, &r),
        Err(BalanceError::EmptyAffinity)
    );
    r.prev_cpu = CpuId(9);
    assert_eq!(
        select_task_rq(&smp, &s, &r),
        Err(BalanceError::UnknownCpu {
            field: "prev_cpu",
            cpu: 9
        })
    );
    assert_eq!(
        select_task_rq(&smp, &s[..7], &request(1, 1)),
        Err(BalanceError::SnapshotMismatch {
            index: 7,
            nr_cpus: 8
        })
    );
}

#[test]
fn wake_affine_weight_matches_the_formula_by_hand() {
    let smp = Topology::symmetric(8, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    // this = CPU 5 load 1024, prev = CPU 1 load 2048, task load 512, pct 117:
    // this_eff = (1024 + 512) * 100 * 1024 = 157_286_400
    // prev_eff = (2048 - 512) * (100 + 17/2 = 108) * 1024 = 169_869_312 -> affine.
    busy(&mut s, 5, 1, 1024);
    busy(&mut s, 1, 2, 2048);
    let r = request(1, 5);
    assert!(wake_affine_weight(&s[5], &s[1], &r, 117));
    // this load 1536: this_eff = 2048 * 102_400 = 209_715_200 > prev_eff -> not affine.
    busy(&mut s, 5, 1, 1536);
    assert!(!wake_affine_weight(&s[5], &s[1], &r, 117));
    // Sync, waker load 2048 > this load 1536: affine at once.
    let mut sync = r;
    sync.sync = true;
    sync.waker_load = 2048;
    assert!(wake_affine_weight(&s[5], &s[1], &sync, 117));
    // Tie: this 568 + 512 = 1080 -> 1080 * 100 * 1024 = 110_592_000;
    // prev (1512 - 512) * 108 * 1024 = 110_592_000. Strictly-less fails
    // without sync; with sync (waker load 0) prev gets +1 and affine wins.
    busy(&mut s, 5, 1, 568);
    busy(&mut s, 1, 2, 1512);
    assert!(!wake_affine_weight(&s[5], &s[1], &r, 117));
    sync.waker_load = 0;
    assert!(wake_affine_weight(&s[5], &s[1], &sync, 117));
    // Capacities cross-multiply: this cap 446, prev cap 1024, this load 400,
    // prev load 1200, task 512: this_eff = 912 * 100 * 1024 = 93_388_800,
    // prev_eff = 688 * 108 * 446 = 33_139_584 -> not affine.
    let juno = juno_r0();
    let mut j = idle_snapshots(&juno);
    busy(&mut j, 3, 1, 400);
    busy(&mut j, 1, 2, 1200);
    assert!(!wake_affine_weight(&j[3], &j[1], &request(1, 3), 117));
}

#[test]
fn wake_affine_moves_the_wakee_to_the_wakers_cluster() {
    let smp = Topology::symmetric(8, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    // Whole cluster 0 busy, prev 1 heavily loaded; waker on 5 lightly loaded.
    for cpu in 0..4 {
        busy(&mut s, cpu, 2, 2048);
    }
    busy(&mut s, 5, 1, 100);
    // wake_affine_idle: this busy, not sync, prev busy -> no verdict;
    // weight: (100 + 512) * 102_400 = 62_668_800 < (2048 - 512) * 110_592 -> 5.
    // select_idle_sibling(5): 5 busy, prev in another cluster, scan from 6 -> 6.
    assert_eq!(wake(&smp, &s, &request(1, 5)), (6, WakeReason::IdleSibling));
    // wake_affine_idle cases: idle waker sharing prev's cluster.
    busy(&mut s, 2, 0, 0);
    assert_eq!(
        wake_affine_idle(&smp, &s, CpuId(2), CpuId(1), false),
        Some(CpuId(2))
    );
    busy(&mut s, 1, 0, 0);
    assert_eq!(
        wake_affine_idle(&smp, &s, CpuId(2), CpuId(1), false),
        Some(CpuId(1))
    );
    // Sync from a CPU running only the waker.
    assert_eq!(
        wake_affine_idle(&smp, &s, CpuId(5), CpuId(0), true),
        Some(CpuId(5))
    );
    assert_eq!(wake_affine_idle(&smp, &s, CpuId(5), CpuId(0), false), None);
}

#[test]
fn wake_wide_compares_flips_with_the_cluster_size() {
    // slave >= factor && master >= slave * factor, factor = 4.
    assert!(!wake_wide(8, 2, 4)); // slave 2 < 4
    assert!(wake_wide(16, 4, 4)); // 16 >= 4 * 4
    assert!(!wake_wide(15, 4, 4)); // 15 < 16
    assert!(wake_wide(4, 16, 4)); // symmetric in waker/wakee
}

#[test]
fn asymmetric_wake_up_picks_an_idle_cpu_that_fits() {
    let juno = juno_r0();
    let s = idle_snapshots(&juno);
    // util 600 does not fit 446 (600 * 1280 = 768_000 >= 446 * 1024 = 456_704)
    // but fits 1024. From little prev 3: scan 3, 4, 5, 0, 1 -> big CPU 1.
    let mut r = request(3, 3);
    r.task_util = 600;
    assert_eq!(wake(&juno, &s, &r), (1, WakeReason::IdleCapacity));
    // A small task (util 100) stays on its idle little prev.
    r.task_util = 100;
    assert_eq!(wake(&juno, &s, &r), (3, WakeReason::TargetIdle));
    // Big CPUs busy: no idle CPU fits; all candidates have capacity 446, the
    // first scanned (3) is kept.
    let mut s = s;
    busy(&mut s, 1, 1, 1024);
    busy(&mut s, 2, 1, 1024);
    r.task_util = 600;
    assert_eq!(wake(&juno, &s, &r), (3, WakeReason::IdleCapacity));
    // uclamp_max 300 makes the big task fit a little CPU (§3.4).
    r.uclamp = [0, 300];
    assert_eq!(wake(&juno, &s, &r), (3, WakeReason::TargetIdle));
}

// ---------------------------------------------------------------------------
// Load balancing.

/// A model of the system: each CPU's tasks as Linux's `cfs_tasks` list
/// holds them, in the order `detach_tasks` walks it (from the tail, the task
/// that ran least recently, to the head). The last entry, at the head, is
/// the running task: the model lets it run for ever, as if it had been
/// picked after every change of the list. A task that arrives (`add`, a
/// migration) is enqueued at the head, just behind the running one, or runs
/// if the CPU was idle; a task a walk skipped goes there too (the rotation
/// of `detach_tasks`).
#[derive(Clone)]
struct Model {
    topology: Topology,
    queues: Vec<Vec<ModelTask>>,
    states: Vec<CpuBalanceState>,
}

#[derive(Clone, Copy, Debug)]
struct ModelTask {
    id: TaskId,
    load: u64,
    util: u64,
    affinity: CpuMask,
}

/// Task `index` of a model CPU's list as a balance candidate (the last
/// entry is the running task).
fn candidate(queue: &[ModelTask], index: usize) -> TaskCandidate {
    let t = queue[index];
    TaskCandidate {
        task: t.id,
        load_avg: t.load,
        util_avg: t.util,
        util_est: 0,
        affinity: t.affinity,
        running: index + 1 == queue.len(),
        cache_hot: false,
        uclamp: [0, 1024],
    }
}

/// A model CPU's list into `out`, in walk order.
fn fill(queue: &[ModelTask], out: &mut [TaskCandidate]) -> usize {
    let n = queue.len().min(out.len());
    for (i, slot) in out.iter_mut().take(n).enumerate() {
        *slot = candidate(queue, i);
    }
    n
}

/// The model's lists as the balancer walks and rotates them.
struct Lists<'a>(&'a mut [Vec<ModelTask>]);

impl TaskList for Lists<'_> {
    fn candidates(&mut self, cpu: CpuId, out: &mut [TaskCandidate]) -> usize {
        fill(&self.0[cpu.index()], out)
    }

    /// Each task to the head, behind the running one (which the model keeps
    /// at the head).
    fn rotate(&mut self, cpu: CpuId, tasks: &[TaskId]) {
        let queue = &mut self.0[cpu.index()];
        for id in tasks {
            let at = queue
                .iter()
                .position(|t| t.id == *id)
                .expect("rotated task on its CPU");
            if at + 1 < queue.len() {
                let task = queue.remove(at);
                let head = queue.len() - 1;
                queue.insert(head, task);
            }
        }
    }
}

impl Model {
    fn new(topology: Topology) -> Self {
        let n = topology.nr_cpus();
        let states = (0..n)
            .map(|c| CpuBalanceState::new(&topology, CpuId(c as u16), 0))
            .collect();
        Model {
            topology,
            queues: vec![Vec::new(); n],
            states,
        }
    }

    fn add(&mut self, cpu: usize, id: u16, load: u64, util: u64, affinity: CpuMask) {
        let task = ModelTask {
            id: TaskId(id),
            load,
            util,
            affinity,
        };
        self.enqueue(cpu, task);
    }

    /// `task` joins `cpu`'s list at the head, behind the running task; on an
    /// idle CPU it runs.
    fn enqueue(&mut self, cpu: usize, task: ModelTask) {
        let queue = &mut self.queues[cpu];
        let at = queue.len().saturating_sub(1);
        queue.insert(at, task);
    }

    /// Snapshots as PELT would settle for always-running tasks: util = the
    /// CPU's capacity when busy, runnable = nr * capacity, load = sum of loads.
    fn snapshots(&self) -> Vec<CpuSnapshot> {
        let mut s = idle_snapshots(&self.topology);
        for (cpu, queue) in self.queues.iter().enumerate() {
            let load = queue.iter().map(|t| t.load).sum();
            busy(&mut s, cpu as u16, queue.len() as u32, load);
            if !queue.is_empty() {
                let candidate = self.candidate(cpu, queue.len() - 1);
                s[cpu].misfit_task_load = misfit_task_load(
                    &self.topology,
                    CpuId(cpu as u16),
                    s[cpu].capacity,
                    &candidate,
                );
            }
        }
        s
    }

    fn candidate(&self, cpu: usize, index: usize) -> TaskCandidate {
        candidate(&self.queues[cpu], index)
    }

    fn fill(&self, cpu: CpuId, out: &mut [TaskCandidate]) -> usize {
        fill(&self.queues[cpu.index()], out)
    }

    /// Carries a decision's migration out, checking it names tasks that are
    /// on the source and allowed on the destination.
    fn apply(&mut self, decision: &BalanceDecision) -> usize {
        let Some(migration) = &decision.migration else {
            return 0;
        };
        for id in migration.tasks.as_slice() {
            let source = &mut self.queues[migration.source.index()];
            let at = source
                .iter()
                .position(|t| t.id == *id)
                .expect("task on source");
            let running = at + 1 == source.len();
            assert!(
                !migration.active || running,
                "active balance moves the running task"
            );
            assert!(
                migration.active || !running,
                "running task moved without active balance"
            );
            let task = source.remove(at);
            assert!(
                task.affinity.contains(migration.destination),
                "task {id:?} moved outside its affinity"
            );
            self.enqueue(migration.destination.index(), task);
        }
        migration.tasks.len()
    }

    /// Periodic balancing of every due CPU at `now`; the number of tasks moved.
    fn tick(&mut self, now: u64) -> usize {
        let mut moved = 0;
        for cpu in 0..self.topology.nr_cpus() {
            if now < self.states[cpu].next_balance {
                continue;
            }
            let snapshots = self.snapshots();
            let mut state = self.states[cpu];
            let decision = rebalance_domains(
                &self.topology,
                &mut state,
                CpuId(cpu as u16),
                now,
                &snapshots,
                &mut Lists(&mut self.queues),
            )
            .unwrap();
            self.states[cpu] = state;
            moved += self.apply(&decision);
        }
        moved
    }

    /// Ticks every ms for `ms` ms; returns the time of the last move.
    fn run(&mut self, ms: u64) -> u64 {
        let mut last_move = 0;
        for t in 1..=ms {
            if self.tick(t * 1_000_000) > 0 {
                last_move = t;
            }
        }
        last_move
    }

    fn nr_running(&self) -> Vec<usize> {
        self.queues.iter().map(Vec::len).collect()
    }

    fn where_is(&self, id: u16) -> usize {
        self.queues
            .iter()
            .position(|q| q.iter().any(|t| t.id == TaskId(id)))
            .unwrap()
    }
}

#[test]
fn four_tasks_on_one_cpu_spread_over_four_idle_cpus() {
    let mut model = Model::new(Topology::symmetric(4, 4).unwrap());
    for id in 0..4 {
        model.add(0, id, 1024, 256, CpuMask::ALL);
    }
    // First pass, CPU 1 idle at 10 ms: local has_spare, CPU 0 overloaded
    // (4 > 1 task, util 1024 * 117 > capacity 1024 * 100). One-CPU groups:
    // migrate_task, imbalance (4 - 0) >> 1 = 2; the running task 0 stays,
    // tasks 1 and 2 move.
    let snapshots = model.snapshots();
    let mut state = model.states[1];
    let decision = rebalance_domains(
        &model.topology,
        &mut state,
        CpuId(1),
        10_000_000,
        &snapshots,
        &mut |c: CpuId, out: &mut [TaskCandidate]| model.fill(c, out),
    )
    .unwrap();
    let migration = decision.migration.unwrap();
    assert_eq!(
        (migration.source, migration.destination),
        (CpuId(0), CpuId(1))
    );
    assert_eq!(migration.migration_type, MigrationType::Task);
    assert_eq!(migration.imbalance, 2);
    assert_eq!(migration.tasks.as_slice(), &[TaskId(1), TaskId(2)]);
    assert!(!migration.active);
    // Applied repeatedly: one task per CPU, then nothing moves.
    let last_move = model.run(2000);
    assert_eq!(model.nr_running(), vec![1, 1, 1, 1]);
    assert!(last_move < 1000, "still moving at {last_move} ms");
}

#[test]
fn newly_idle_pulls_exactly_one_task() {
    let mut model = Model::new(Topology::symmetric(4, 4).unwrap());
    for id in 0..4 {
        model.add(0, id, 1024, 256, CpuMask::ALL);
    }
    let snapshots = model.snapshots();
    let mut state = model.states[2];
    let decision = newidle_balance(
        &model.topology,
        &mut state,
        CpuId(2),
        &snapshots,
        &mut |c: CpuId, out: &mut [TaskCandidate]| model.fill(c, out),
    )
    .unwrap();
    let migration = decision.migration.unwrap();
    assert_eq!(migration.tasks.as_slice(), &[TaskId(1)]);
    assert_eq!(migration.destination, CpuId(2));
    // No waiting task anywhere (rd->overload clear): nothing to pull.
    let mut model = Model::new(Topology::symmetric(4, 4).unwrap());
    model.add(0, 0, 1024, 1024, CpuMask::ALL);
    let snapshots = model.snapshots();
    let decision = newidle_balance(
        &model.topology,
        &mut state,
        CpuId(2),
        &snapshots,
        &mut |c: CpuId, out: &mut [TaskCandidate]| model.fill(c, out),
    )
    .unwrap();
    assert_eq!(decision.migration, None);
}

#[test]
fn pinned_tasks_are_never_moved() {
    let mut model = Model::new(Topology::symmetric(8, 4).unwrap());
    for id in 0..4 {
        model.add(0, id, 1024, 256, CpuMask::only(CpuId(0)));
    }
    model.run(3000);
    assert_eq!(model.nr_running(), vec![4, 0, 0, 0, 0, 0, 0, 0]);
    // Two pinned, two free: the free ones leave, the pinned ones stay.
    let mut model = Model::new(Topology::symmetric(8, 4).unwrap());
    for id in 0..4 {
        let affinity = if id < 2 {
            CpuMask::only(CpuId(0))
        } else {
            CpuMask::ALL
        };
        model.add(0, id, 1024, 256, affinity);
    }
    model.run(3000);
    assert_eq!((model.where_is(0), model.where_is(1)), (0, 0));
    assert_eq!(model.nr_running()[0], 2);
    assert_eq!(model.nr_running().iter().filter(|&&n| n == 1).count(), 2);
}

#[test]
fn misfit_task_moves_from_little_to_big_on_juno_r0() {
    let mut model = Model::new(juno_r0());
    // util 600 does not fit a 446 CPU (§5.5: largest fitting util is 356).
    model.add(3, 7, 600, 600, CpuMask::ALL);
    let snapshots = model.snapshots();
    assert_eq!(snapshots[3].misfit_task_load, 600);
    // Big CPU 1, idle, balances at 20 ms: cluster level (1, 2) balanced,
    // system level (asymmetric): the little group is misfit_task, the big
    // local group has spare -> migrate_misfit, imbalance 1, active balance.
    let mut state = model.states[1];
    let decision = rebalance_domains(
        &model.topology,
        &mut state,
        CpuId(1),
        20_000_000,
        &snapshots,
        &mut |c: CpuId, out: &mut [TaskCandidate]| model.fill(c, out),
    )
    .unwrap();
    let migration = decision.migration.unwrap();
    assert_eq!(migration.level, DomainLevel::System);
    assert_eq!(
        (migration.source, migration.destination),
        (CpuId(3), CpuId(1))
    );
    assert_eq!(
        (migration.migration_type, migration.imbalance),
        (MigrationType::Misfit, 1)
    );
    assert!(migration.active);
    assert_eq!(migration.tasks.as_slice(), &[TaskId(7)]);
    // The whole model settles with the task on a big CPU.
    model.run(1000);
    assert!(matches!(model.where_is(7), 1 | 2));
    // Not misfit: pinned to the little cluster, fitting util, or symmetric.
    let juno = juno_r0();
    let mut task = model.candidate(model.where_is(7), 0);
    task.affinity = CpuMask(0b111001);
    assert_eq!(misfit_task_load(&juno, CpuId(3), 446, &task), 0);
    task.affinity = CpuMask::ALL;
    task.util_avg = 356;
    assert_eq!(misfit_task_load(&juno, CpuId(3), 446, &task), 0);
    task.util_avg = 357;
    assert_eq!(misfit_task_load(&juno, CpuId(3), 446, &task), 600);
    let smp = Topology::symmetric(4, 4).unwrap();
    task.util_avg = 1024;
    assert_eq!(misfit_task_load(&smp, CpuId(3), 1024, &task), 0);
}

/// One `rebalance_domains` call for `cpu` at `now_ms` on `model`.
fn balance_at(model: &mut Model, cpu: u16, now_ms: u64) -> Option<Migration> {
    let snapshots = model.snapshots();
    let mut state = model.states[usize::from(cpu)];
    let decision = rebalance_domains(
        &model.topology,
        &mut state,
        CpuId(cpu),
        now_ms * 1_000_000,
        &snapshots,
        &mut |c: CpuId, out: &mut [TaskCandidate]| model.fill(c, out),
    )
    .unwrap();
    model.states[usize::from(cpu)] = state;
    decision.migration
}

#[test]
fn overloaded_cpu_sheds_load_after_a_failed_attempt() {
    // 4 CPUs, one cluster; CPU 0 runs 3 tasks of load 1024, CPUs 1-3 one each.
    let mut model = Model::new(Topology::symmetric(4, 4).unwrap());
    for (id, cpu) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 2), (5, 3)] {
        model.add(cpu, id, 1024, 341, CpuMask::ALL);
    }
    // Busy CPU 1 at 100 ms (busy interval 4 * 16 - 1 = 63 ms has elapsed):
    // CPU 0 overloaded (avg_load 3072), CPU 1 fully busy (1024), domain
    // average 6144 * 1024 / 4096 = 1536 -> migrate_load,
    // imbalance = min(3072 - 1536, 1536 - 1024) * 1024 / 1024 = 512.
    // A task's load 1024 > 512: nothing moves, nr_balance_failed = 1.
    assert_eq!(balance_at(&mut model, 1, 100), None);
    assert_eq!(model.states[1].levels[0].nr_balance_failed, 1);
    // Next attempt: 1024 >> 1 = 512 <= 512 -> task 1 (task 0 runs) moves.
    let migration = balance_at(&mut model, 1, 200).unwrap();
    assert_eq!(
        (migration.migration_type, migration.imbalance),
        (MigrationType::Load, 512)
    );
    assert_eq!(
        (migration.source, migration.destination),
        (CpuId(0), CpuId(1))
    );
    assert_eq!(migration.tasks.as_slice(), &[TaskId(1)]);
    assert_eq!(model.states[1].levels[0].nr_balance_failed, 0);
}

/// A source list that records what the balancer rotates.
struct Recorder {
    list: Vec<TaskCandidate>,
    rotated: Vec<(CpuId, Vec<TaskId>)>,
}

impl TaskList for Recorder {
    fn candidates(&mut self, _cpu: CpuId, out: &mut [TaskCandidate]) -> usize {
        let n = self.list.len().min(out.len());
        out[..n].copy_from_slice(&self.list[..n]);
        n
    }

    fn rotate(&mut self, cpu: CpuId, tasks: &[TaskId]) {
        self.rotated.push((cpu, tasks.to_vec()));
    }
}

#[test]
fn skipped_candidates_go_back_to_the_head_of_their_list() {
    // The loads of the test above, CPU 1 balancing after one failed attempt
    // (1024 >> 1 = 512 fits the imbalance 512). CPU 0's list from its tail:
    // task 1, cache hot (skipped while nr_balance_failed <= cache_nice_tries
    // = 1), then task 2, then task 0, running. The walk skips task 1, which
    // the mechanism must move to the head, detaches task 2 and stops there
    // (imbalance covered): task 0 is not walked.
    let mut model = Model::new(Topology::symmetric(4, 4).unwrap());
    for (id, cpu) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 2), (5, 3)] {
        model.add(cpu, id, 1024, 341, CpuMask::ALL);
    }
    let mut list: Vec<TaskCandidate> = (0..3).map(|i| model.candidate(0, i)).collect();
    assert_eq!(
        list.iter()
            .map(|t| (t.task.0, t.running))
            .collect::<Vec<_>>(),
        [(1, false), (2, false), (0, true)]
    );
    list[0].cache_hot = true;
    let mut recorder = Recorder {
        list,
        rotated: Vec::new(),
    };
    let mut state = model.states[1];
    state.levels[0].nr_balance_failed = 1;
    let decision = rebalance_domains(
        &model.topology,
        &mut state,
        CpuId(1),
        100_000_000,
        &model.snapshots(),
        &mut recorder,
    )
    .unwrap();
    let migration = decision.migration.unwrap();
    assert_eq!(migration.tasks.as_slice(), &[TaskId(2)]);
    assert_eq!(recorder.rotated, vec![(CpuId(0), vec![TaskId(1)])]);
}

/// The tie of the groups sweep (docs/testing.md, the 10 s groups check):
/// {g0} | {g1, g2} | {g1, g3, g3} |
/// {g2, g2, g3, g3}, root loads 1024 / 853 / 1024 / 1194 (§2.7: g2's entity
/// weighs 2/3 of 1024 on CPU 3, g3's 2/4). CPU 1 computes the imbalance
/// min(1194 - 1023, 1023 - 853) = 170 (average 4095 × 1024 / 4096 = 1023);
/// CPU 3's g2 tasks have `task_h_load` 340 and its g3 tasks 255. None fits
/// on the first attempt; after one failure 340 >> 1 = 170 fits exactly, as
/// does 255 >> 1, so the task at the tail of `cfs_tasks` moves, a g2 task
/// (the mirror image, where the tie comes back) or a g3 task (on towards the
/// fair placement).
#[test]
fn a_g2_and_a_g3_task_both_fit_the_groups_imbalance_after_one_failure() {
    let smp = Topology::symmetric(4, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    busy(&mut s, 0, 1, 1024);
    busy(&mut s, 1, 2, 853);
    busy(&mut s, 2, 3, 1024);
    busy(&mut s, 3, 4, 1194);
    let task = |id: u16, load: u64, running: bool| TaskCandidate {
        task: TaskId(id),
        load_avg: load,
        util_avg: 256,
        util_est: 0,
        affinity: CpuMask::ALL,
        running,
        cache_hot: false,
        uclamp: [0, 1024],
    };
    let (g2, g3, g3b, g2_running) = (
        task(20, 340, false),
        task(30, 255, false),
        task(31, 255, false),
        task(21, 340, true),
    );
    let pass = |list: Vec<TaskCandidate>, failed: u32| {
        let mut recorder = Recorder {
            list,
            rotated: Vec::new(),
        };
        let mut state = CpuBalanceState::new(&smp, CpuId(1), 0);
        state.levels[0].nr_balance_failed = failed;
        rebalance_domains(&smp, &mut state, CpuId(1), 100_000_000, &s, &mut recorder)
            .unwrap()
            .migration
    };
    // First attempt: 340 > 170 and 255 > 170, nothing moves.
    assert_eq!(pass(vec![g2, g3, g3b, g2_running], 0), None);
    // After one failure, whichever comes first from the tail moves.
    for (list, moved) in [
        (vec![g2, g3, g3b, g2_running], 20),
        (vec![g3, g2, g3b, g2_running], 30),
    ] {
        let migration = pass(list, 1).unwrap();
        assert_eq!(
            (
                migration.source,
                migration.migration_type,
                migration.imbalance
            ),
            (CpuId(3), MigrationType::Load, 170)
        );
        assert_eq!(migration.tasks.as_slice(), &[TaskId(moved)]);
    }
}

#[test]
fn idle_cluster_pulls_utilization_from_an_overloaded_cluster() {
    // 8 CPUs in 2 clusters. Cluster 0: CPU 0 runs 3 tasks, CPUs 1-3 one each
    // (6 tasks on 4 CPUs, util 4096 * 117 > 4096 * 100: overloaded).
    // Cluster 1: CPU 4 runs one task, 5-7 idle (has spare).
    let mut model = Model::new(Topology::symmetric(8, 4).unwrap());
    for (id, cpu) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 2), (5, 3), (6, 4)] {
        model.add(cpu, id, 1024, 300, CpuMask::ALL);
    }
    // CPU 5 (first idle CPU of cluster 1) at 20 ms. Cluster level: CPU 4 runs
    // a lone task -> balanced. System level: local has spare, busiest
    // overloaded, not a shared cache -> migrate_util with the local spare
    // capacity max(4096, 1024) - 1024 = 3072; the only CPU with > 1 task is
    // CPU 0; tasks 1 and 2 (util 300 each) move, the running task 0 stays.
    let migration = balance_at(&mut model, 5, 20).unwrap();
    assert_eq!(migration.level, DomainLevel::System);
    assert_eq!(
        (migration.migration_type, migration.imbalance),
        (MigrationType::Util, 3072)
    );
    assert_eq!(
        (migration.source, migration.destination),
        (CpuId(0), CpuId(5))
    );
    assert_eq!(migration.tasks.as_slice(), &[TaskId(1), TaskId(2)]);
    // CPU 6 is not the first idle CPU of its group: it leaves system-level
    // balancing to CPU 5 (should_we_balance).
    let mut model2 = model.clone();
    model2.states[6].levels[0].balance_interval_ms = 1000;
    assert_eq!(balance_at(&mut model2, 6, 20), None);
}

#[test]
fn cache_hot_tasks_wait_for_failed_attempts() {
    use super::detach::detach_tasks;
    use super::load_balance::{BalancePlan, IdleType};
    let smp = Topology::symmetric(4, 4).unwrap();
    let domain = smp.domain(CpuId(1), DomainLevel::Cluster).unwrap();
    let plan = BalancePlan {
        source: CpuId(0),
        destination: CpuId(1),
        migration_type: MigrationType::Task,
        imbalance: 2,
    };
    let mut s = idle_snapshots(&smp);
    busy(&mut s, 0, 3, 3072);
    let signals = crate::run_queue::TaskSignals::default();
    // exec_start 400 us ago: hot (< 500 us, §9); 500 us ago: cold.
    let now = 10_000_000;
    let task = |id, running, exec_start| {
        TaskCandidate::from_signals(
            TaskId(id),
            &signals,
            CpuMask::ALL,
            running,
            now,
            exec_start,
            [0, 1024],
        )
    };
    let tasks = [
        task(0, true, 0),
        task(1, false, now - 400_000),
        task(2, false, now - 500_000),
    ];
    assert!(tasks[1].cache_hot && !tasks[2].cache_hot);
    // cache_nice_tries = 1: the hot task stays while nr_balance_failed <= 1.
    // The running and the hot task are skipped: both go to the head of the
    // list (the rotation), in walk order.
    let out = detach_tasks(&smp, &domain, &plan, IdleType::Idle, &s[0], &tasks, 1);
    assert_eq!(out.moved.as_slice(), &[TaskId(2)]);
    assert_eq!(out.rotated.as_slice(), &[TaskId(0), TaskId(1)]);
    let out = detach_tasks(&smp, &domain, &plan, IdleType::Idle, &s[0], &tasks, 2);
    assert_eq!(out.moved.as_slice(), &[TaskId(1), TaskId(2)]);
    assert_eq!(out.rotated.as_slice(), &[TaskId(0)]);
    // The walk stops once the imbalance is covered: the tasks after the one
    // detached keep their places (nothing rotated past it).
    let one = BalancePlan {
        imbalance: 1,
        ..plan
    };
    let tasks = [task(1, false, 0), task(2, false, 0), task(0, true, 0)];
    let out = detach_tasks(&smp, &domain, &one, IdleType::Idle, &s[0], &tasks, 0);
    assert_eq!(out.moved.as_slice(), &[TaskId(1)]);
    assert!(out.rotated.is_empty());
}

/// `update_sd_pick_busiest` keeps the first of two equally loaded groups in
/// the order of the balancing CPU's group list, which starts at its own
/// group and wraps (`build_sched_groups`): each CPU prefers the sources
/// that follow it. The loads are the balance cycle (docs/testing.md) of the
/// equal-share groups: 1109 / 1024 / 853 / 1109.
#[test]
fn equally_busy_sources_are_taken_in_wrap_order_from_the_balancing_cpu() {
    use super::load_balance::{BusiestOutcome, IdleType, find_busiest};
    let smp = Topology::symmetric(4, 4).unwrap();
    let mut s = idle_snapshots(&smp);
    busy(&mut s, 0, 3, 1109);
    busy(&mut s, 1, 1, 1024);
    busy(&mut s, 2, 2, 853);
    busy(&mut s, 3, 4, 1109);
    let domain = smp.domain(CpuId(2), DomainLevel::Cluster).unwrap();
    // CPU 2: average 4095 * 1024 / 4096 = 1023; 853 < 1023 and 100 * 1109 >
    // 117 * 853, so migrate_load, min(1109 - 1023, 1023 - 853) = 86. Its
    // list is {2} {3} {0} {1}: CPU 3 comes before CPU 0.
    let outcome = find_busiest(
        &smp,
        &domain,
        CpuId(2),
        IdleType::NotIdle,
        false,
        &s,
        CpuMask(0),
    );
    let BusiestOutcome::Plan(plan) = outcome else {
        panic!("no plan: {outcome:?}");
    };
    assert_eq!(
        (plan.source, plan.migration_type, plan.imbalance),
        (CpuId(3), MigrationType::Load, 86)
    );
    // Seen from CPU 1 (1024 >= the average 1023) the domain is balanced.
    let domain = smp.domain(CpuId(1), DomainLevel::Cluster).unwrap();
    assert_eq!(
        find_busiest(
            &smp,
            &domain,
            CpuId(1),
            IdleType::NotIdle,
            false,
            &s,
            CpuMask(0)
        ),
        BusiestOutcome::Balanced
    );
    // The same loads with CPU 0 balancing from 853: its list is {0} {1} {2}
    // {3}, and of the equal CPUs 2 and 3 it takes CPU 2.
    busy(&mut s, 0, 2, 853);
    busy(&mut s, 2, 3, 1109);
    let domain = smp.domain(CpuId(0), DomainLevel::Cluster).unwrap();
    let outcome = find_busiest(
        &smp,
        &domain,
        CpuId(0),
        IdleType::NotIdle,
        false,
        &s,
        CpuMask(0),
    );
    let BusiestOutcome::Plan(plan) = outcome else {
        panic!("no plan: {outcome:?}");
    };
    assert_eq!(plan.source, CpuId(2));
}

/// Brute force on Juno r0: 1-3 tasks of util 600 (misfit on a 446 CPU, §5.5)
/// start on random little CPUs. The big CPUs (2) end up running one each;
/// a third stays on a little CPU (no big CPU has spare capacity), and
/// nothing is pulled back down (a bigger group is not robbed, sched-capacity.rst).
#[test]
fn misfit_tasks_end_on_big_cpus() {
    let mut rng = Rng(0xb16_11771e);
    let littles = [0usize, 3, 4, 5];
    for case in 0..30 {
        let mut model = Model::new(juno_r0());
        let tasks = 1 + rng.below(3) as u16;
        for id in 0..tasks {
            let cpu = littles[rng.below(4) as usize];
            model.add(cpu, id, 600, 600, CpuMask::ALL);
        }
        let last_move = model.run(3000);
        let on_big: usize = model.nr_running()[1] + model.nr_running()[2];
        assert_eq!(
            on_big,
            usize::from(tasks.min(2)),
            "case {case}: {:?}",
            model.nr_running()
        );
        assert!(model.nr_running()[1] <= 1 && model.nr_running()[2] <= 1);
        assert!(
            last_move < 2000,
            "case {case}: still moving at {last_move} ms"
        );
    }
}

#[test]
fn balance_intervals_follow_sd_init() {
    let smp = Topology::symmetric(8, 4).unwrap();
    let cluster = smp.domain(CpuId(0), DomainLevel::Cluster).unwrap();
    // Idle: min_interval = weight 4 ms. Busy: 4 * 16 - 1 = 63 ms.
    assert_eq!(balance_interval_ns(&cluster, 4, false, 8), 4_000_000);
    assert_eq!(balance_interval_ns(&cluster, 4, true, 8), 63_000_000);
    // Clamped to HZ * nr_cpus / 10 = 800 ms.
    assert_eq!(balance_interval_ns(&cluster, 100, true, 8), 800_000_000);
    // A balanced pass doubles the interval up to max_interval (8 ms).
    let mut model = Model::new(smp);
    model.add(0, 0, 1024, 1024, CpuMask::ALL);
    model.run(100);
    assert_eq!(model.states[0].levels[0].balance_interval_ms, 8);
}

/// xorshift64*: a small seeded generator for reproducible random cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The longest an episode of counts two apart can last, in ms, in a
/// cluster of `w` CPUs whose domain spans `w` CPUs: `(32w - 1) + s(w) (16w
/// - 1)`, where `s(w)` is the number of failed passes the repairing CPU may
/// need. See [`random_equal_tasks_end_within_one_task_per_cpu`].
fn uneven_episode_bound_ms(w: u64) -> u64 {
    // The imbalance the repairing CPU computes is at least 2 × 1024 / w
    // (integer division, as the balancer's avg_load is truncated), and a
    // task of load 1024 moves once 1024 >> nr_balance_failed fits it.
    let imbalance = 2 * 1024 / w;
    let failures = (0..).find(|s| 1024u64 >> s <= imbalance).unwrap_or(0);
    (32 * w - 1) + failures * (16 * w - 1)
}

/// Brute force: equal always-running tasks (load 1024) placed at random,
/// every CPU balancing periodically. When the count divides evenly (or there
/// are no more tasks than CPUs) the model reaches a fixed point within 1.5 s
/// with counts within one. Otherwise Linux's rules keep bouncing the extra
/// tasks (3 vs 2 tasks is 50 % > imbalance_pct apart, and `nr_balance_failed`
/// halves the task's load until it fits the imbalance), and after 1.5 s the
/// check is the bound derived here.
///
/// Counts two apart (an "episode") after the start:
///
/// 1. Only a system-level pull makes one. A cluster-level pull moves tasks
///    from the CPU with the most to a CPU with fewer, at most down to and up
///    to the same count, so it never widens the spread. A system-level pull
///    lands on the balancing CPU of the local cluster, which is its first
///    idle CPU (0 tasks: no widening) or, when none is idle, its first CPU
///    (`should_we_balance`), whatever its count.
/// 2. With counts within one before the pull (m - 1 or m tasks everywhere),
///    the pulling cluster C is below the domain's average (else
///    `calculate_imbalance` finds nothing to do), so C holds a CPU Y with m - 1
///    tasks; the pull raises C's first CPU X from m to m + 1, the only CPU at
///    m + 1. So the spread is 2 and both ends are in C, and X is the busiest
///    CPU of C for every other CPU of C, whatever the order of the group
///    list (Linux's wrap-around order from each CPU only decides ties, and
///    X has none).
/// 3. Y repairs it with a cluster-level pull. Let k CPUs of C besides X hold
///    m tasks (k <= w - 2, Y is not one of them). C's average is m - 1 +
///    (2 + k)/w tasks, so Y (fully busy or overloaded: below the average,
///    and X's load over Y's exceeds imbalance_pct) computes the imbalance
///    min(m + 1 - avg, avg - (m - 1)) = (2 + k)/w >= 2/w tasks, i.e. at
///    least 2 × 1024 / w. The load 1024 of one task fits it after s(w)
///    failed passes, `1024 >> s <= 2048 / w`: s = 0 for w = 2, 1 for w = 3
///    and 4. (A Y with 0 tasks is idle and pulls at once, every w ms.)
/// 4. Y's passes are `balance_interval × busy_factor - 1` ms apart, the
///    interval between `min_interval = w` and `max_interval = 2w` ms and
///    reset to w after every pass that found an imbalance. From any instant
///    of the episode, Y's next pass comes within 32w - 1 ms, and each further
///    one 16w - 1 ms after the last, so the episode ends within `(32w - 1) +
///    s(w) (16w - 1)` ms ([`uneven_episode_bound_ms`]): 63 ms for clusters
///    of 2, 142 ms for 3, 190 ms for 4.
///
/// The total time spent uneven has no such bound: it depends on how often
/// the bounce between clusters lands on a cluster's first CPU while that
/// CPU holds the cluster's most tasks (with the group list starting at the
/// local group, one case spends 294 ms of 2.5 s in 8 episodes of at most
/// 73 ms; the 250 ms the old first-group-first order kept it under was a
/// judgement, not a bound). The check is therefore per episode, measured
/// from 1.5 s on, with the spread never above 2 (step 2).
#[test]
fn random_equal_tasks_end_within_one_task_per_cpu() {
    let mut rng = Rng(0x5eed_f00d);
    for case in 0..60 {
        let (n, per_cluster) = [(8, 4), (4, 4), (6, 3), (8, 2)][case % 4];
        let mut model = Model::new(Topology::symmetric(n, per_cluster).unwrap());
        let tasks = 1 + rng.below(3 * n as u64) as usize;
        for id in 0..tasks {
            let cpu = rng.below(n as u64) as usize;
            model.add(cpu, id as u16, 1024, 512, CpuMask::ALL);
        }
        let bound = uneven_episode_bound_ms(per_cluster as u64);
        let mut last_move = 0;
        let mut uneven_since = None;
        let mut uneven_ms = 0;
        for t in 1..=4000u64 {
            if model.tick(t * 1_000_000) > 0 {
                last_move = t;
            }
            let nr = model.nr_running();
            assert_eq!(nr.iter().sum::<usize>(), tasks);
            if t < 1500 {
                continue;
            }
            let (min, max) = (nr.iter().min().unwrap(), nr.iter().max().unwrap());
            assert!(max - min <= 2, "case {case} at {t} ms: {nr:?}");
            if max - min > 1 {
                uneven_ms += 1;
                let since = *uneven_since.get_or_insert(t);
                assert!(
                    t - since < bound,
                    "case {case}: counts two apart for {} ms from {since} ms \
                     (bound {bound} ms for clusters of {per_cluster}): {nr:?}",
                    t - since + 1
                );
            } else {
                uneven_since = None;
            }
        }
        if tasks.is_multiple_of(n) || tasks <= n {
            // A fixed point: nothing moves, counts within one.
            assert!(
                last_move < 1500,
                "case {case}: still moving at {last_move} ms"
            );
            assert_eq!(uneven_ms, 0, "case {case}");
        }
    }
}

#[test]
fn uneven_episode_bounds_follow_the_balance_intervals() {
    // Clusters of 2: imbalance 1024, no failure: 2 × 2 × 16 - 1 = 63 ms.
    assert_eq!(uneven_episode_bound_ms(2), 63);
    // Of 3: imbalance 682 needs 1024 >> 1: 95 + 47 ms.
    assert_eq!(uneven_episode_bound_ms(3), 142);
    // Of 4: imbalance 512 needs 1024 >> 1: 127 + 63 ms.
    assert_eq!(uneven_episode_bound_ms(4), 190);
    // Of 8: imbalance 256 needs 1024 >> 2: 255 + 2 × 127 ms.
    assert_eq!(uneven_episode_bound_ms(8), 509);
}

#[test]
fn random_affinities_are_never_violated() {
    let mut rng = Rng(0xa11_0ca7e);
    for case in 0..60 {
        let topology = if case % 3 == 2 {
            juno_r0()
        } else {
            Topology::symmetric(8, 4).unwrap()
        };
        let n = topology.nr_cpus() as u64;
        let all = topology.all_cpus().0;
        let mut model = Model::new(topology);
        let tasks = 1 + rng.below(3 * n) as u16;
        let mut pinned = Vec::new();
        for id in 0..tasks {
            let affinity = match rng.below(3) {
                0 => CpuMask::ALL,
                1 => CpuMask(rng.next() & all | 1 << rng.below(n)),
                _ => CpuMask::only(CpuId(rng.below(n) as u16)),
            };
            let cpus: Vec<u16> = (0..n as u16)
                .filter(|&c| affinity.contains(CpuId(c)))
                .collect();
            let cpu = cpus[rng.below(cpus.len() as u64) as usize];
            if cpus.len() == 1 {
                pinned.push((id, cpu));
            }
            let load = [1024, 335, 3121][rng.below(3) as usize];
            model.add(usize::from(cpu), id, load, 300, affinity);
        }
        model.run(3000); // apply() asserts each move respects affinity
        assert_eq!(model.nr_running().iter().sum::<usize>(), usize::from(tasks));
        for (id, cpu) in pinned {
            assert_eq!(
                model.where_is(id),
                usize::from(cpu),
                "case {case}: pinned task {id} moved"
            );
        }
        // No idle CPU while a task allowed on it waits (queued, not running)
        // on a CPU of the same cluster.
        let nr = model.nr_running();
        for (cpu, queue) in model.queues.iter().enumerate() {
            for task in queue.iter().skip(1) {
                for idle in (0..nr.len()).filter(|&c| nr[c] == 0) {
                    let same = model
                        .topology
                        .share_cache(CpuId(idle as u16), CpuId(cpu as u16));
                    assert!(
                        !(same && task.affinity.contains(CpuId(idle as u16))),
                        "case {case}: CPU {idle} idle while task {:?} waits on {cpu}: {nr:?}",
                        task.id
                    );
                }
            }
        }
    }
}

/// With EAS running and the system not overutilized (§5.5) only a misfit
/// group is balanced: three small tasks packed on LITTLE CPU 0 of Juno r0
/// stay there, while without EAS the idle LITTLE CPU 3 pulls one (the same
/// inputs); a misfit task on CPU 0 is still pulled by an idle big CPU.
#[test]
fn energy_aware_balancing_moves_only_misfit_tasks() {
    use super::load_balance::{BusiestOutcome, IdleType, find_busiest};
    let juno = juno_r0();
    let mut s = idle_snapshots(&juno);
    busy(&mut s, 0, 3, 300);
    s[0].util_avg = 300;
    let domain = juno.domain(CpuId(3), DomainLevel::Cluster).unwrap();
    let pass = |s: &[CpuSnapshot], energy_aware| {
        find_busiest(
            &juno,
            &domain,
            CpuId(3),
            IdleType::Idle,
            energy_aware,
            s,
            CpuMask(0),
        )
    };
    assert!(matches!(pass(&s, false), BusiestOutcome::Plan(plan) if plan.source == CpuId(0)));
    assert_eq!(pass(&s, true), BusiestOutcome::Balanced);
    // A misfit task on CPU 0: big CPU 1 pulls it in the system domain.
    s[0].misfit_task_load = 600;
    let system = juno.domain(CpuId(1), DomainLevel::System).unwrap();
    let outcome = find_busiest(
        &juno,
        &system,
        CpuId(1),
        IdleType::Idle,
        true,
        &s,
        CpuMask(0),
    );
    let BusiestOutcome::Plan(plan) = outcome else {
        panic!("no plan: {outcome:?}");
    };
    assert_eq!(
        (plan.source, plan.migration_type),
        (CpuId(0), MigrationType::Misfit)
    );
}
