//! Spreading tasks over CPUs, the mechanism half: per-CPU load snapshots that
//! any CPU can read without locks, wake-up CPU selection, and periodic and
//! newly-idle load balancing that moves tasks between run queues (with their
//! PELT state and lag, through `migrate_task_out` / `migrate_task_in`).
//! The decisions themselves come from `fairway_sched::balance`.
//!
//! Two run-queue locks are only ever held together here, taken in CPU-number
//! order (see `sync`).

use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};

use fairway_sched::balance::{
    BalanceDecision, CpuBalanceState, CpuSnapshot, Migration, TaskCandidate, TaskList,
    newidle_balance, rebalance_domains,
};
use fairway_sched::class_stack::ClassKind;
use fairway_sched::run_queue::TaskMigration;
use fairway_sched::task::{CpuId, CpuMask};
use fairway_sched::topology::{CpuDescription, Topology};
use heapless::Vec;
use spin::Once;

use super::scheduler::{CpuRunQueue, carry_out_decision, run_queue};
use super::{TaskId, TaskState, task};
use crate::arch::timer::now_ns;
use crate::config::MAX_CPUS;
use crate::percpu;
use crate::sync::IrqSpinLock;

/// A CPU's load, published under its run-queue lock, read by anyone.
struct Snapshot {
    nr_running: AtomicU32,
    idle: AtomicBool,
    load_avg: AtomicU64,
    util_avg: AtomicU64,
    runnable_avg: AtomicU64,
    util_est: AtomicU64,
    /// The run queue's clamps for EAS, packed by [`pack_clamps`]; published
    /// only while EAS runs.
    clamps: AtomicU32,
    /// `rq->misfit_task_load` (§5.5); published only on asymmetric CPUs.
    misfit_task_load: AtomicU64,
}

/// `[uclamp_min, uclamp_max]` in bits 0..11 and 11..22, `uclamp_idle` in
/// bit 22, an RT task runnable in bit 23.
fn pack_clamps(uclamp: [u16; 2], uclamp_idle: bool, rt_runnable: bool) -> u32 {
    u32::from(uclamp[0])
        | u32::from(uclamp[1]) << 11
        | u32::from(uclamp_idle) << 22
        | u32::from(rt_runnable) << 23
}

/// [`pack_clamps`]' fields back.
fn unpack_clamps(packed: u32) -> ([u16; 2], bool, bool) {
    let value = |shift: u32| ((packed >> shift) & 0x7ff) as u16;
    (
        [value(0), value(11)],
        packed & 1 << 22 != 0,
        packed & 1 << 23 != 0,
    )
}

static SNAPSHOTS: [Snapshot; MAX_CPUS] = [const {
    Snapshot {
        nr_running: AtomicU32::new(0),
        idle: AtomicBool::new(true),
        load_avg: AtomicU64::new(0),
        util_avg: AtomicU64::new(0),
        runnable_avg: AtomicU64::new(0),
        util_est: AtomicU64::new(0),
        clamps: AtomicU32::new(1024 << 11 | 1 << 22),
        misfit_task_load: AtomicU64::new(0),
    }
}; MAX_CPUS];

static TOPOLOGY: Once<Topology> = Once::new();
static STATES: [IrqSpinLock<Option<CpuBalanceState>>; MAX_CPUS] =
    [const { IrqSpinLock::new(None) }; MAX_CPUS];
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Builds the topology from the device tree's capacities and clusters (boot
/// core, once, before the other CPUs start). `enabled` is `balance=` on the
/// command line.
pub fn init(nr_cpus: usize, enabled: bool) -> Result<(), &'static str> {
    ENABLED.store(enabled, Ordering::Relaxed);
    let mut cpus: Vec<CpuDescription, MAX_CPUS> = Vec::new();
    for cpu in 0..nr_cpus {
        let slot = percpu::of(cpu);
        let _ = cpus.push(CpuDescription {
            capacity: slot.capacity.load(Ordering::Relaxed),
            cluster: slot.cluster.load(Ordering::Relaxed) as u8,
        });
    }
    let topology = Topology::new(&cpus).map_err(|_| "the CPU topology is inconsistent")?;
    let now = now_ns();
    for (cpu, state) in STATES.iter().enumerate().take(nr_cpus) {
        *state.lock() = Some(CpuBalanceState::new(&topology, CpuId(cpu as u16), now));
    }
    TOPOLOGY.call_once(|| topology);
    Ok(())
}

/// The CPUs' topology, once built.
pub fn topology() -> Option<&'static Topology> {
    TOPOLOGY.get()
}

/// Whether load balancing and wake-up placement are on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) && TOPOLOGY.get().is_some()
}

/// Publishes `cpu`'s load (its run-queue lock held).
pub(super) fn publish(cpu: usize, rq: &CpuRunQueue) {
    let signals = rq.queue().signals();
    let snapshot = &SNAPSHOTS[cpu];
    snapshot
        .nr_running
        .store(signals.nr_running as u32, Ordering::Relaxed);
    snapshot.idle.store(
        rq.core.current().is_none() && signals.nr_running == 0,
        Ordering::Relaxed,
    );
    snapshot.load_avg.store(signals.load_avg, Ordering::Relaxed);
    snapshot.util_avg.store(signals.util_avg, Ordering::Relaxed);
    snapshot
        .runnable_avg
        .store(signals.runnable_avg, Ordering::Relaxed);
    snapshot.util_est.store(signals.util_est, Ordering::Relaxed);
    if super::eas::active() {
        use fairway_sched::uclamp::ClampId;
        let queue = rq.queue();
        let clamps = pack_clamps(
            [
                queue.uclamp_value(ClampId::Min),
                queue.uclamp_value(ClampId::Max),
            ],
            queue.uclamp_idle(),
            queue.rt().highest_queued_priority().is_some(),
        );
        snapshot.clamps.store(clamps, Ordering::Relaxed);
    }
    // Only load balancing reads it: nothing to publish without balancing
    // or on identical CPUs.
    if let Some(topology) = TOPOLOGY.get().filter(|t| t.is_asymmetric() && enabled()) {
        snapshot
            .misfit_task_load
            .store(misfit_of(topology, cpu, rq), Ordering::Relaxed);
    }
}

/// `update_misfit_status` (§5.5): the `misfit_task_load` of `cpu`'s running
/// fair task, 0 when none.
fn misfit_of(topology: &Topology, cpu: usize, rq: &CpuRunQueue) -> u64 {
    let affinity = rq
        .core
        .current()
        .map_or(0, |id| task(id).affinity.load(Ordering::Relaxed));
    let capacity = u64::from(percpu::of(cpu).capacity.load(Ordering::Relaxed));
    rq.core
        .misfit_task_load(topology, CpuMask(affinity), capacity)
}

/// `cpu`'s snapshot as published.
/// CPU `cpu`'s snapshot as last published (explain mode reads it).
pub fn snapshot(cpu: usize) -> CpuSnapshot {
    snapshot_of(cpu)
}

fn snapshot_of(cpu: usize) -> CpuSnapshot {
    let snapshot = &SNAPSHOTS[cpu];
    let online = percpu::of(cpu).online.load(Ordering::Relaxed);
    let (uclamp, uclamp_idle, rt_runnable) = unpack_clamps(snapshot.clamps.load(Ordering::Relaxed));
    CpuSnapshot {
        cpu: CpuId(cpu as u16),
        capacity: u64::from(percpu::of(cpu).capacity.load(Ordering::Relaxed)),
        // A CPU still booting looks empty (nothing to pull from it);
        // wake-ups never choose it (`online_mask`).
        nr_running: if online {
            snapshot.nr_running.load(Ordering::Relaxed)
        } else {
            0
        },
        idle: !online || snapshot.idle.load(Ordering::Relaxed),
        load_avg: snapshot.load_avg.load(Ordering::Relaxed),
        util_avg: snapshot.util_avg.load(Ordering::Relaxed),
        runnable_avg: snapshot.runnable_avg.load(Ordering::Relaxed),
        util_est: snapshot.util_est.load(Ordering::Relaxed),
        misfit_task_load: snapshot.misfit_task_load.load(Ordering::Relaxed),
        uclamp,
        uclamp_idle,
        rt_runnable,
    }
}

/// With EAS on, `cpu` (just published, its run-queue lock held) no longer
/// fitting its utilization makes the root domain overutilized (at a woken
/// task's enqueue and at the tick, §5.5).
pub(super) fn note_overutilized(cpu: usize) {
    if let Some(topology) = TOPOLOGY.get().filter(|_| super::eas::active()) {
        super::eas::note_overutilized(&snapshot_of(cpu), topology.capacity_orig(CpuId(cpu as u16)));
    }
}

/// Whether some CPU published more than one runnable task or a misfit task
/// (`rd->overloaded`, §5.5).
fn any_overloaded() -> bool {
    (0..percpu::nr_cpus().min(MAX_CPUS)).any(|cpu| {
        let snapshot = &SNAPSHOTS[cpu];
        (percpu::of(cpu).online.load(Ordering::Relaxed)
            && snapshot.nr_running.load(Ordering::Relaxed) > 1)
            || snapshot.misfit_task_load.load(Ordering::Relaxed) > 0
    })
}

/// Every CPU's snapshot as published, into `all` (empty), where the caller
/// keeps the table: returned from a call, its whole room (every possible
/// CPU's) was copied with `memcpy`, about 440 instructions, at each wake-up
/// placement and each newly-idle balance.
fn fill_snapshots(all: &mut Vec<CpuSnapshot, MAX_CPUS>) {
    for cpu in 0..percpu::nr_cpus().min(MAX_CPUS) {
        let _ = all.push(snapshot_of(cpu));
    }
}

fn online_mask() -> CpuMask {
    let mut mask = 0u64;
    for cpu in 0..percpu::nr_cpus() {
        if percpu::of(cpu).online.load(Ordering::Relaxed) {
            mask |= 1 << cpu;
        }
    }
    CpuMask(mask)
}

/// Where the waking task `id`, whose run queue is `prev` (locked by the caller,
/// task not queued), should run. Returns `prev` when balancing is off.
pub(super) fn select_wake_cpu(id: TaskId, prev: usize, rq: &CpuRunQueue) -> usize {
    let affinity = task(id).affinity.load(Ordering::Relaxed) & online_mask().0;
    let Some(topology) = TOPOLOGY.get().filter(|_| enabled()) else {
        // No balancing: stay, unless the affinity no longer allows it.
        return if affinity & (1 << prev) != 0 || affinity == 0 {
            prev
        } else {
            affinity.trailing_zeros() as usize
        };
    };
    let waker = crate::arch::cpu::this_cpu();
    let mut snapshots = Vec::new();
    fill_snapshots(&mut snapshots);
    let placement = if super::explain::explaining() && super::eas::active() {
        // Explain mode records each energy estimate as feec makes it.
        super::explain::task_util_est(id, rq);
        rq.core.select_task_rq_observed(
            id,
            CpuId(waker as u16),
            CpuMask(affinity),
            SNAPSHOTS[waker].load_avg.load(Ordering::Relaxed),
            topology,
            &snapshots,
            super::eas::context(),
            super::explain::energy_estimate,
        )
    } else {
        rq.core.select_task_rq(
            id,
            CpuId(waker as u16),
            CpuMask(affinity),
            SNAPSHOTS[waker].load_avg.load(Ordering::Relaxed),
            topology,
            &snapshots,
            super::eas::context(),
        )
    };
    if super::explain::explaining() {
        // The snapshots placement read, as it read them.
        super::explain::wake(id, prev, placement.cpu.index(), snapshots.iter().copied());
    }
    super::eas::count_feec(placement.feec);
    if let Some(cost) = placement.feec_cost {
        // On the waking CPU's statistics: IRQs are masked under `prev`'s lock.
        crate::instrument::record(waker, crate::instrument::Op::FindEnergyEfficientCpu, cost);
    }
    placement.cpu.index()
}

/// Lists the tasks of `source`'s `cfs_tasks` (its lock taken here) as balance
/// candidates.
fn candidates_of(source: usize, buffer: &mut [TaskCandidate]) -> usize {
    if !percpu::of(source).online.load(Ordering::Acquire) {
        return 0;
    }
    candidates(&run_queue(source).lock(), source, buffer)
}

/// The fair tasks of `rq`'s `cfs_tasks` from its tail, the task that ran least
/// recently first, as Linux's `detach_tasks` takes them; the running task is
/// on the list too (the walk counts it and skips it).
fn candidates(rq: &CpuRunQueue, source: usize, buffer: &mut [TaskCandidate]) -> usize {
    let now = now_ns();
    let mut count = 0;
    for id in rq.core.cfs_tasks().from_tail(buffer.len()) {
        let slot = task(id);
        if slot.cpu() != source
            || slot.state() != TaskState::Running
            || !slot.on_rq.load(Ordering::Relaxed)
            || rq.queue().task_class(id) != Some(ClassKind::Fair)
            || rq.queue().task_throttled(id)
        {
            // A task of a throttled group stays (`throttled_lb_pair`, §4.2).
            continue;
        }
        buffer[count] = rq.core.balance_candidate(
            id,
            CpuMask(slot.affinity.load(Ordering::Relaxed)),
            rq.current() == id,
            now,
            slot.exec_start.load(Ordering::Relaxed),
        );
        count += 1;
    }
    count
}

/// The run queues' `cfs_tasks` lists as balancing walks them: candidates from
/// a source's tail, and the tasks a walk skipped back to its head, each under
/// the source's run-queue lock.
struct RunQueueTasks;

impl TaskList for RunQueueTasks {
    fn candidates(&mut self, cpu: CpuId, buffer: &mut [TaskCandidate]) -> usize {
        candidates_of(cpu.index(), buffer)
    }

    fn rotate(&mut self, cpu: CpuId, tasks: &[TaskId]) {
        let cpu = cpu.index();
        if !percpu::of(cpu).online.load(Ordering::Acquire) {
            return;
        }
        let mut rq = run_queue(cpu).lock();
        let now = now_ns();
        for &id in tasks {
            if task(id).cpu() == cpu {
                rq.core.cfs_tasks_rotate(id, now);
            }
        }
    }
}

/// No active-balance request ([`PUSH_TO`]) or parked task ([`PUSHED`]).
const NO_PUSH: u16 = u16::MAX;

/// Active balance requests (Linux's `rq->active_balance` and `push_cpu`):
/// CPU `i`'s running task is to be pushed to CPU `PUSH_TO[i]`.
static PUSH_TO: [AtomicU16; MAX_CPUS] = [const { AtomicU16::new(NO_PUSH) }; MAX_CPUS];

/// The task an active balance took off CPU `i`'s run queue and its
/// destination (`task << 16 | destination`), to move once it is switched out.
static PUSHED: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(u32::MAX) }; MAX_CPUS];

/// Whether `migration` is an active balance Fairway carries out: a misfit
/// task's (§5.5). Linux also pushes after repeated failed passes and from
/// CPUs whose capacity RT or IRQ work reduced; the core decides those too,
/// but neither mechanism carries them out yet (docs/eas.md).
fn is_misfit_push(migration: &Migration) -> bool {
    migration.active && migration.migration_type == fairway_sched::balance::MigrationType::Misfit
}

/// Asks `source` to push its running task to `destination` (Linux wakes the
/// source's stopper, `stop_one_cpu_nowait`): `source` reschedules and
/// [`take_push`] does the stopper's work there. One request at a time per
/// source, as Linux's `active_balance` flag.
fn request_push(source: usize, destination: usize) {
    if PUSH_TO[source]
        .compare_exchange(
            NO_PUSH,
            destination as u16,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_err()
    {
        return;
    }
    percpu::of(source)
        .need_resched
        .store(true, Ordering::Release);
    if source != crate::arch::cpu::this_cpu() {
        crate::irq::send_ipi(source, crate::irq::Ipi::Reschedule);
    }
}

/// In `schedule()` on `cpu` (its run-queue lock held), before the pick:
/// carries out an active-balance request (`active_load_balance_cpu_stop`).
/// The running `previous`, if it is a queued fair task allowed on the
/// destination and not throttled, leaves the run queue as the stopper's
/// preemption and `detach_one_task` would take it; it moves once switched
/// out ([`finish_push`]). Returns whether it left.
pub(super) fn take_push(cpu: usize, rq: &mut CpuRunQueue, previous: TaskId, now: u64) -> bool {
    // A plain load first: the switch path pays no atomic swap without a request.
    if PUSH_TO[cpu].load(Ordering::Relaxed) == NO_PUSH {
        return false;
    }
    let destination = PUSH_TO[cpu].swap(NO_PUSH, Ordering::AcqRel);
    if destination == NO_PUSH {
        return false;
    }
    let destination = usize::from(destination);
    // A push taken but not yet carried out (its `finish_push` interrupted
    // before it claimed it) keeps the slot: this request is dropped, as
    // Linux drops one while `active_balance` is set.
    if PUSHED[cpu].load(Ordering::Relaxed) != u32::MAX {
        return false;
    }
    let slot = task(previous);
    let allowed = slot.affinity.load(Ordering::Relaxed) & (1 << destination) != 0;
    if previous == rq.idle
        || !slot.on_rq.load(Ordering::Relaxed)
        || slot.state() != TaskState::Running
        || rq.queue().task_class(previous) != Some(ClassKind::Fair)
        || rq.queue().task_throttled(previous)
        || !allowed
        || !percpu::of(destination).online.load(Ordering::Acquire)
    {
        return false;
    }
    let flags = fairway_sched::class::DequeueFlags {
        migrating: true,
        ..fairway_sched::class::DequeueFlags::default()
    };
    rq.core.dequeue_task(previous, now, flags);
    rq.record_costs(cpu);
    // `on_rq` stays set, as Linux's TASK_ON_RQ_MIGRATING: a wake-up racing
    // with the push (its state set Running before this switch) or a stale
    // wake-list entry must not enqueue the task here or move it elsewhere
    // (`place_wakeup` and `activate` leave an on_rq task alone), and load
    // balancing skips it while [`PUSHED`] names it ([`carry_out`]).
    PUSHED[cpu].store(
        u32::from(previous.0) << 16 | destination as u32,
        Ordering::Relaxed,
    );
    true
}

/// In `finish_task_switch` on `cpu`, no lock held: moves the task
/// [`take_push`] took off this run queue, now switched out, to its
/// destination, as load balancing moves a queued task.
pub(super) fn finish_push(cpu: usize) {
    // A plain load first: the switch path pays no atomic without a push.
    let packed = PUSHED[cpu].load(Ordering::Relaxed);
    if packed == u32::MAX {
        return;
    }
    let (id, destination) = (TaskId((packed >> 16) as u16), (packed & 0xffff) as usize);
    let (first, second) = (cpu.min(destination), cpu.max(destination));
    let mut first_guard = run_queue(first).lock();
    let mut second_guard = run_queue(second).lock();
    // Claimed under the source's lock: IRQs are on until the locks are
    // taken, and an interrupt in between may switch and carry out this very
    // push from the next `finish_task_switch` (then the slot no longer holds
    // it); load balancing, under the same lock, sees the slot and skips the
    // task until it moves.
    if PUSHED[cpu]
        .compare_exchange(packed, u32::MAX, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    let (source_rq, destination_rq) = if cpu == first {
        (&mut *first_guard, &mut *second_guard)
    } else {
        (&mut *second_guard, &mut *first_guard)
    };
    let now = now_ns();
    let Some(state) = source_rq.core.migrate_task_out(id, now) else {
        panic!("task {} pushed from CPU {} could not leave it", id.0, cpu);
    };
    source_rq.remove_member(id);
    attach(destination_rq, cpu, destination, id, &state, now);
    publish(cpu, source_rq);
    publish(destination, destination_rq);
}

/// Moves the decided tasks from `migration.source` to `migration.destination`,
/// each still queued there, not running, and allowed on the destination.
fn carry_out(migration: &Migration) -> usize {
    let (source, destination) = (migration.source.index(), migration.destination.index());
    let online = |cpu: usize| percpu::of(cpu).online.load(Ordering::Acquire);
    if source == destination || !online(source) || !online(destination) {
        return 0;
    }
    let (first, second) = (source.min(destination), source.max(destination));
    let mut first_guard = run_queue(first).lock();
    let mut second_guard = run_queue(second).lock();
    let (source_rq, destination_rq) = if source == first {
        (&mut *first_guard, &mut *second_guard)
    } else {
        (&mut *second_guard, &mut *first_guard)
    };
    let now = now_ns();
    let mut moved = 0;
    for &id in migration.tasks.as_slice() {
        let slot = task(id);
        let allowed = slot.affinity.load(Ordering::Relaxed) & (1 << destination) != 0;
        // A task an active balance took off the run queue (still `on_rq`)
        // moves only by its push.
        let pushed = PUSHED[source].load(Ordering::Relaxed) >> 16 == u32::from(id.0);
        if slot.cpu() != source
            || !slot.on_rq.load(Ordering::Relaxed)
            || pushed
            || source_rq.current() == id
            || slot.state() != TaskState::Running
            || !allowed
        {
            continue;
        }
        let Some(state) = source_rq.core.detach_task(id, now) else {
            continue;
        };
        source_rq.record_costs(source);
        source_rq.remove_member(id);
        attach(destination_rq, source, destination, id, &state, now);
        moved += 1;
    }
    if moved > 0 {
        publish(source, source_rq);
        publish(destination, destination_rq);
    }
    drop(second_guard);
    drop(first_guard);
    moved
}

/// Makes `id` (migrated out of `source`'s run queue as `state`) queued on
/// `destination`, whose lock is held.
fn attach(
    rq: &mut CpuRunQueue,
    source: usize,
    destination: usize,
    id: TaskId,
    state: &TaskMigration,
    now: u64,
) {
    let slot = task(id);
    slot.cpu.store(destination as u16, Ordering::Release);
    slot.migrations.fetch_add(1, Ordering::Relaxed);
    let kind = super::tracepoint::Kind::Migrate;
    super::tracepoint::record(
        now,
        destination,
        kind,
        id.0,
        source as u16,
        destination as u64,
    );
    // `migrate_task_rq_fair`: a task that moved is no longer cache hot.
    slot.exec_start.store(0, Ordering::Relaxed);
    if rq.core.migrate_task_in(id, state, now).is_err() {
        panic!("task {} could not join CPU {}", id.0, destination);
    }
    rq.add_member(id);
    let decision = rq.core.attach_task(id, now);
    rq.record_costs(destination);
    super::tracepoint::group_bandwidth(now, destination, rq.core.run_queue());
    carry_out_decision(rq, destination, decision);
}

/// Periodic load balancing of `cpu`, from its tick (no lock held).
pub(super) fn periodic(cpu: usize) {
    let Some(topology) = TOPOLOGY.get().filter(|_| enabled()) else {
        return;
    };
    let now = now_ns();
    let mut state_guard = STATES[cpu].lock();
    let Some(state) = state_guard.as_mut() else {
        return;
    };
    if !state.balance_due(now) {
        return;
    }
    state.energy_aware = super::eas::context().is_some_and(|eas| !eas.overutilized);
    let mut snapshots = Vec::new();
    fill_snapshots(&mut snapshots);
    let decision = rebalance_domains(
        topology,
        state,
        CpuId(cpu as u16),
        now,
        &snapshots,
        &mut RunQueueTasks,
    );
    drop(state_guard);
    // Load balancing recomputes the root domain's state (§5.5).
    super::eas::recompute_overutilized(topology, &snapshots);
    if let Ok(BalanceDecision {
        migration: Some(migration),
        ..
    }) = decision
    {
        if is_misfit_push(&migration) {
            request_push(migration.source.index(), migration.destination.index());
        } else if !migration.active {
            carry_out(&migration);
        }
    }
}

/// Newly-idle balancing: `cpu` found nothing to run; pull from the busiest
/// CPU now rather than at its next tick (no lock held).
pub(super) fn newly_idle(cpu: usize) -> bool {
    let Some(topology) = TOPOLOGY.get().filter(|_| enabled()) else {
        return false;
    };
    // Linux tests the root domain's `overloaded` flag before anything else
    // (`sched_balance_newidle`): with no CPU running more than one task or a
    // misfit one, there is nothing to pull. The same test as the core's
    // (`newidle_balance`), on the published values, before the snapshots are
    // gathered; with EAS the pass also recomputes the overutilized state,
    // so it always runs.
    if !super::eas::active() && !any_overloaded() {
        return false;
    }
    let mut state_guard = STATES[cpu].lock();
    let Some(state) = state_guard.as_mut() else {
        return false;
    };
    state.energy_aware = super::eas::context().is_some_and(|eas| !eas.overutilized);
    let mut snapshots = Vec::new();
    fill_snapshots(&mut snapshots);
    let decision = newidle_balance(
        topology,
        state,
        CpuId(cpu as u16),
        &snapshots,
        &mut RunQueueTasks,
    );
    drop(state_guard);
    // Load balancing recomputes the root domain's state (§5.5).
    super::eas::recompute_overutilized(topology, &snapshots);
    match decision {
        Ok(BalanceDecision {
            migration: Some(migration),
            ..
        }) if migration.active => {
            if is_misfit_push(&migration) {
                request_push(migration.source.index(), migration.destination.index());
            }
            false
        }
        Ok(decision) => decision
            .migration
            .is_some_and(|migration| carry_out(&migration) > 0),
        Err(_) => false,
    }
}

/// Moves the sleeping `id` (not queued; its run queue `rq` of CPU `prev`
/// locked) out of `prev` for the wake-up on `target`, leaving its state for the
/// target CPU to attach.
pub(super) fn detach_for_wakeup(id: TaskId, rq: &mut CpuRunQueue, target: usize) -> bool {
    let now = now_ns();
    let Some(state) = rq.core.migrate_task_out(id, now) else {
        return false;
    };
    rq.remove_member(id);
    *task(id).pending_migration.lock() = Some(state);
    // Read only when tracepoints are compiled in: the default image keeps
    // this path's instructions.
    let source = if super::tracepoint::ENABLED {
        task(id).cpu() as u16
    } else {
        0
    };
    task(id).cpu.store(target as u16, Ordering::Release);
    task(id).migrations.fetch_add(1, Ordering::Relaxed);
    let kind = super::tracepoint::Kind::Migrate;
    super::tracepoint::record(now, target, kind, id.0, source, target as u64);
    // `migrate_task_rq_fair`: a task that moved is no longer cache hot.
    task(id).exec_start.store(0, Ordering::Relaxed);
    true
}

/// On the target CPU (its lock held): joins a task detached by a wake-up.
pub(super) fn attach_pending(rq: &mut CpuRunQueue, id: TaskId, now: u64) -> bool {
    let Some(state) = task(id).pending_migration.lock().take() else {
        return false;
    };
    if rq.core.migrate_task_in(id, &state, now).is_err() {
        panic!("task {} could not join its wake-up CPU", id.0);
    }
    rq.add_member(id);
    // A boost decided while it was between the two CPUs.
    super::pi::apply(rq, task(id).cpu(), id);
    true
}
