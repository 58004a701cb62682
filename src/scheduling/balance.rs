//! Spreading tasks over CPUs, the mechanism half: periodic and newly-idle
//! load balancing that moves tasks between run queues (with their PELT state
//! and lag, through `migrate_task_out` / `migrate_task_in`), and active
//! balancing, which pushes a misfit running task away once it is switched
//! out. The decisions themselves come from `fairway_sched::balance`; the
//! load they read is the CPUs' published snapshots ([`load`]). Wake-up
//! placement is the wake-up's (`wakeup.rs`).
//!
//! Two run-queue locks are only ever held together here, taken in CPU-number
//! order (see `sync`).

use core::sync::atomic::{AtomicU16, AtomicU32, Ordering};

use fairway_sched::balance::{
    BalanceDecision, CpuBalanceState, Migration, TaskCandidate, TaskList, newidle_balance,
    rebalance_domains,
};
use fairway_sched::class_stack::ClassKind;
use fairway_sched::run_queue::TaskMigration;
use fairway_sched::task::{CpuId, CpuMask, TaskId};
use fairway_sched::topology::{CpuDescription, Topology};
use heapless::Vec;

use super::eas;
use super::load::{self, publish};
use super::observe::trace_group_bandwidth;
use super::run_queue::{CpuRunQueue, carry_out_decision, run_queue};
use crate::arch::timer::now_ns;
use crate::config::MAX_CPUS;
use crate::observe::{costs, trace};
use crate::platform::percpu;
use crate::platform::sync::IrqSpinLock;
use crate::tasks::{TaskState, task};

static STATES: [IrqSpinLock<Option<CpuBalanceState>>; MAX_CPUS] =
    [const { IrqSpinLock::new(None) }; MAX_CPUS];

/// Builds the topology from the device tree's capacities and clusters, and
/// each CPU's balancing state (boot core, once, before the other CPUs
/// start). `enabled` is `balance=` on the command line.
pub fn init(nr_cpus: usize, enabled: bool) -> Result<(), &'static str> {
    load::set_enabled(enabled);
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
    load::set_topology(topology);
    Ok(())
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
        crate::platform::irq::send_ipi(source, crate::platform::irq::Ipi::Reschedule);
    }
}

/// In `schedule()` on `cpu` (its run-queue lock held), before the pick:
/// carries out an active-balance request (`active_load_balance_cpu_stop`).
/// The running `previous`, if it is a queued fair task allowed on the
/// destination and not throttled, leaves the run queue as the stopper's
/// preemption and `detach_one_task` would take it; it moves once switched
/// out ([`finish_push`]). Returns whether it left.
#[inline(always)]
pub fn take_push(cpu: usize, rq: &mut CpuRunQueue, previous: TaskId, now: u64) -> bool {
    // A plain load first: the switch path pays no atomic swap without a request.
    if PUSH_TO[cpu].load(Ordering::Relaxed) == NO_PUSH {
        return false;
    }
    take_requested_push(cpu, rq, previous, now)
}

/// [`take_push`] once a request is there: out of line, so that `schedule()`,
/// which almost never takes one, saves no registers for it.
#[cold]
#[inline(never)]
fn take_requested_push(cpu: usize, rq: &mut CpuRunQueue, previous: TaskId, now: u64) -> bool {
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
    costs::record_op_costs(cpu, || rq.core.take_op_costs());
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
#[inline(always)]
pub fn finish_push(cpu: usize) {
    // A plain load first: the switch path pays no atomic without a push.
    let packed = PUSHED[cpu].load(Ordering::Relaxed);
    if packed == u32::MAX {
        return;
    }
    finish_taken_push(cpu, packed);
}

/// [`finish_push`] once a push was taken: out of line, so that
/// `finish_task_switch`, which almost never carries one out, saves no
/// registers for it (its frame was 96 bytes of them and 480 of locals).
#[cold]
#[inline(never)]
fn finish_taken_push(cpu: usize, packed: u32) {
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
        costs::record_op_costs(source, || source_rq.core.take_op_costs());
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
    let kind = trace::Kind::Migrate;
    trace::record(
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
    costs::record_op_costs(destination, || rq.core.take_op_costs());
    trace_group_bandwidth(now, destination, rq.core.run_queue());
    carry_out_decision(rq, destination, decision);
}

/// Periodic load balancing of `cpu`, from its tick (no lock held).
pub fn periodic(cpu: usize) {
    let Some(topology) = load::topology().filter(|_| load::enabled()) else {
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
    state.energy_aware = eas::context().is_some_and(|eas| !eas.overutilized);
    let mut snapshots = Vec::new();
    load::fill_snapshots(&mut snapshots);
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
    eas::recompute_overutilized(topology, &snapshots);
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
pub fn newly_idle(cpu: usize) -> bool {
    let Some(topology) = load::topology().filter(|_| load::enabled()) else {
        return false;
    };
    // Linux tests the root domain's `overloaded` flag before anything else
    // (`sched_balance_newidle`): with no CPU running more than one task or a
    // misfit one, there is nothing to pull. The same test as the core's
    // (`newidle_balance`), on the published values, before the snapshots are
    // gathered; with EAS the pass also recomputes the overutilized state,
    // so it always runs.
    if !eas::active() && !load::any_overloaded() {
        return false;
    }
    let mut state_guard = STATES[cpu].lock();
    let Some(state) = state_guard.as_mut() else {
        return false;
    };
    state.energy_aware = eas::context().is_some_and(|eas| !eas.overutilized);
    let mut snapshots = Vec::new();
    load::fill_snapshots(&mut snapshots);
    let decision = newidle_balance(
        topology,
        state,
        CpuId(cpu as u16),
        &snapshots,
        &mut RunQueueTasks,
    );
    drop(state_guard);
    // Load balancing recomputes the root domain's state (§5.5).
    eas::recompute_overutilized(topology, &snapshots);
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
