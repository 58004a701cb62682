//! Wake-ups (Linux's `try_to_wake_up`): a sleeping task is placed on a CPU
//! (`select_task_rq`: its previous CPU, an idle CPU of the same cluster,
//! wake-affine, or EAS's choice), moved there with its PELT state and lag if
//! it changes CPU, and queued by that CPU, at once when it is this one, else
//! through that CPU's wake list and the wake-up IPI. Also the first queueing
//! of a new task (`wake_up_new_task`).
//!
//! A wake-up never schedules: callers in task context follow with
//! `preempt_point` once they hold no lock, and an interrupt's wake-up is
//! followed by the preemption on return from the interrupt.

use core::sync::atomic::{AtomicUsize, Ordering};

use alloc::collections::VecDeque;
use fairway_sched::cpu_core::TimerRequest;
use fairway_sched::task::{CpuId, CpuMask, ParamError, TaskId, TaskParams};
use heapless::Vec;

use super::observe::trace_group_bandwidth;
use super::run_queue::{
    CpuRunQueue, carry_out_decision, hrtick_update_here, reserve_task_ids, run_queue,
};
use super::{cpufreq, eas, load, pi};
use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::config::{MAX_CPUS, TASK_SLOTS};
use crate::observe::costs::{self, Op};
use crate::observe::{explain, trace};
use crate::platform::irq::{Ipi, send_ipi};
use crate::platform::percpu;
use crate::platform::sync::IrqSpinLock;
use crate::tasks::table::NOT_LISTED;
use crate::tasks::{TaskState, current, idle_task_id, task};

/// Tasks woken by other CPUs, per CPU. A task is on at most one list that
/// counts (its `wake_list`); stale entries elsewhere are skipped, so twice the
/// task count bounds a list: [`grow_wake_lists`] keeps every list's capacity
/// at twice the task slots allocated, as the task table grows (issue 15), so
/// that a push never allocates.
static WAKE_LISTS: [IrqSpinLock<VecDeque<TaskId>>; MAX_CPUS] =
    [const { IrqSpinLock::new(VecDeque::new()) }; MAX_CPUS];
/// Heap bytes the wake lists hold (outgrown buffers go back to the heap).
static WAKE_LIST_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Makes room on every CPU's wake list for twice `slots` task slots (when the
/// task table grows, before the new slots are visible). A list that grows at
/// least doubles, up to twice `TASK_SLOTS`, so that it is copied a bounded
/// number of times. On failure, the bytes that were asked for.
pub fn grow_wake_lists(slots: usize) -> Result<(), usize> {
    let needed = 2 * slots;
    for list in &WAKE_LISTS[..percpu::nr_cpus().clamp(1, MAX_CPUS)] {
        let mut list = list.lock();
        if list.capacity() >= needed {
            continue;
        }
        let capacity = needed.max(2 * list.capacity()).min(2 * TASK_SLOTS);
        let bytes = capacity * core::mem::size_of::<TaskId>();
        let additional = capacity - list.len();
        let before = list.capacity();
        list.try_reserve_exact(additional).map_err(|_| bytes)?;
        WAKE_LIST_BYTES.fetch_add(
            (list.capacity() - before) * core::mem::size_of::<TaskId>(),
            Ordering::Relaxed,
        );
    }
    Ok(())
}

/// The bytes the wake lists take (issue 15's scheduler memory).
pub fn wake_list_bytes() -> usize {
    core::mem::size_of_val(&WAKE_LISTS) + WAKE_LIST_BYTES.load(Ordering::Relaxed)
}

/// Wakes `id` if it sleeps; returns whether it did. A task owned by another CPU
/// is put on that CPU's wake list and the CPU is sent the wake-up IPI. Never
/// schedules: callers in task context follow with [`preempt_point`] once they
/// hold no lock.
pub fn wake_up(id: TaskId) -> bool {
    let slot = task(id);
    if slot
        .state
        .compare_exchange(
            TaskState::Sleeping as u8,
            TaskState::Running as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        return false;
    }
    slot.wakeups.fetch_add(1, Ordering::Relaxed);
    // `sched_waking` comes before the placement's `sched_migrate_task`, as
    // in Linux: its time is taken now, its target once placed.
    let waking_at = if trace::recording() { now_ns() } else { 0 };
    let cpu = place_wakeup(id);
    if trace::recording() {
        trace_waking(id, cpu, waking_at);
    }
    if cpu == this_cpu() {
        activate(id);
    } else if slot.wake_list.swap(cpu as u16, Ordering::AcqRel) != cpu as u16 {
        // An entry the task may still have on another CPU's list is now stale:
        // that CPU skips it (see `process_wake_list`).
        let mut list = WAKE_LISTS[cpu].lock();
        // Never grows here (no allocation on a hot path): see `WAKE_LISTS`.
        if list.len() == list.capacity() {
            panic!("wake list of CPU {} is full", cpu);
        }
        list.push_back(id);
        drop(list);
        send_ipi(cpu, Ipi::WakeUp);
    }
    true
}

/// `sched_waking` on the waker's CPU: the waker is the task running there,
/// none for a wake-up from an interrupt (a timer's) or from the idle task.
#[inline(never)]
fn trace_waking(id: TaskId, target: usize, at: u64) {
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    let waker = if percpu::in_interrupt() {
        trace::NO_TASK
    } else {
        trace::task_arg(current(), idle_task_id(cpu))
    };
    let kind = trace::Kind::Waking;
    trace::record(at, cpu, kind, id.0, waker, target as u64);
    crate::arch::cpu::irq_restore(irq_state);
}

/// Chooses the CPU a waking task runs on (Linux's `select_task_rq` at
/// `try_to_wake_up`) and detaches it from its old run queue when it moves.
/// A task that never left its run queue stays where it is.
fn place_wakeup(id: TaskId) -> usize {
    let slot = task(id);
    let prev = slot.cpu();
    let affinity = slot.affinity.load(Ordering::Relaxed);
    let allowed = affinity & (1 << prev) != 0;
    // Linux asks the class only of a task allowed on more than one CPU
    // (`select_task_rq` in core.c, `p->nr_cpus_allowed > 1`): a task pinned
    // to its previous CPU stays, without the placement's cost.
    if allowed && (affinity == 1 << prev || !load::enabled()) {
        return prev;
    }
    let mut rq = run_queue(prev).lock();
    // Holding `prev`'s lock: no switch is in progress there, so a task that is
    // not queued has finished switching out (`on_cpu` is clear).
    if slot.on_rq.load(Ordering::Relaxed) || slot.cpu() != prev {
        return slot.cpu();
    }
    let target = select_wake_cpu(id, prev, &rq);
    if target != prev && detach_for_wakeup(id, &mut rq, target) {
        load::publish(prev, &rq);
        target
    } else {
        prev
    }
}

/// Where the waking task `id`, whose run queue is `prev` (locked by the caller,
/// task not queued), should run. Returns `prev` when balancing is off.
fn select_wake_cpu(id: TaskId, prev: usize, rq: &CpuRunQueue) -> usize {
    let affinity = task(id).affinity.load(Ordering::Relaxed) & load::online_mask().0;
    let Some(topology) = load::topology().filter(|_| load::enabled()) else {
        // No balancing: stay, unless the affinity no longer allows it.
        return if affinity & (1 << prev) != 0 || affinity == 0 {
            prev
        } else {
            affinity.trailing_zeros() as usize
        };
    };
    let waker = crate::arch::cpu::this_cpu();
    let energy = eas::context();
    if energy.is_none() && !explain::explaining() {
        // Without EAS, placement reads only the fields and CPUs it asks for.
        return rq
            .core
            .select_task_rq_balanced(
                id,
                CpuId(waker as u16),
                CpuMask(affinity),
                load::load_avg(waker),
                topology,
                &load::PublishedLoads,
            )
            .cpu
            .index();
    }
    let mut snapshots: Vec<_, MAX_CPUS> = Vec::new();
    load::fill_snapshots(&mut snapshots);
    let placement = if explain::explaining() && eas::active() {
        // Explain mode records each energy estimate as feec makes it.
        explain_task_util_est(id, rq);
        rq.core.select_task_rq_observed(
            id,
            CpuId(waker as u16),
            CpuMask(affinity),
            load::load_avg(waker),
            topology,
            &snapshots,
            energy,
            explain::energy_estimate,
        )
    } else {
        rq.core.select_task_rq(
            id,
            CpuId(waker as u16),
            CpuMask(affinity),
            load::load_avg(waker),
            topology,
            &snapshots,
            energy,
        )
    };
    if explain::explaining() {
        // The snapshots placement read, as it read them.
        explain::wake(id, prev, placement.cpu.index(), snapshots.iter().copied());
    }
    eas::count_feec(placement.feec);
    if let Some(cost) = placement.feec_cost {
        // On the waking CPU's statistics: IRQs are masked under `prev`'s lock.
        costs::record(waker, Op::FindEnergyEfficientCpu, cost);
    }
    placement.cpu.index()
}

/// Before EAS prices a wake-up of `id` (its run queue `rq` locked): the
/// task's `task_util_est`, as `find_energy_efficient_cpu` reads it (§5.4
/// step 4), for explain mode.
#[inline(never)]
fn explain_task_util_est(id: TaskId, rq: &CpuRunQueue) {
    let signals = rq.core.run_queue().task_signals_synced(id);
    explain::task_util_est(id, signals.util_avg.max(signals.util_est));
}

/// Moves the sleeping `id` (not queued; its run queue `rq` of CPU `prev`
/// locked) out of `prev` for the wake-up on `target`, leaving its state for the
/// target CPU to attach.
fn detach_for_wakeup(id: TaskId, rq: &mut CpuRunQueue, target: usize) -> bool {
    let now = now_ns();
    let Some(state) = rq.core.migrate_task_out(id, now) else {
        return false;
    };
    rq.remove_member(id);
    *task(id).pending_migration.lock() = Some(state);
    // Read only when trace events are compiled in: the default image keeps
    // this path's instructions.
    let source = if trace::ENABLED {
        task(id).cpu() as u16
    } else {
        0
    };
    task(id).cpu.store(target as u16, Ordering::Release);
    task(id).migrations.fetch_add(1, Ordering::Relaxed);
    let kind = trace::Kind::Migrate;
    trace::record(now, target, kind, id.0, source, target as u64);
    // `migrate_task_rq_fair`: a task that moved is no longer cache hot.
    task(id).exec_start.store(0, Ordering::Relaxed);
    true
}

/// On the target CPU (its lock held): joins a task detached by a wake-up.
fn attach_pending(rq: &mut CpuRunQueue, id: TaskId, now: u64) -> bool {
    let Some(state) = task(id).pending_migration.lock().take() else {
        return false;
    };
    if rq.core.migrate_task_in(id, &state, now).is_err() {
        panic!("task {} could not join its wake-up CPU", id.0);
    }
    rq.add_member(id);
    // A boost decided while it was between the two CPUs.
    pi::apply(rq, task(id).cpu(), id);
    true
}

/// Enqueues the woken `id` on this CPU's run queue (the local half of a wake-up).
fn activate(id: TaskId) {
    // Masked before the CPU number is read, as in `schedule()`.
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    let mut rq = run_queue(cpu).lock_masked(irq_state);
    let slot = task(id);
    // A task that never left the run queue (it was woken before it could
    // schedule out) or went back to sleep since (a stale wake-list entry) is
    // left alone.
    if slot.state() != TaskState::Running || slot.on_rq.load(Ordering::Relaxed) || slot.cpu() != cpu
    {
        return;
    }
    let now = now_ns();
    let migrated = attach_pending(&mut rq, id, now);
    let decision = rq.core.try_to_wake_up(id, now, migrated);
    costs::record_op_costs(cpu, || rq.core.take_op_costs());
    trace_group_bandwidth(now, cpu, rq.core.run_queue());
    trace::record(now, cpu, trace::Kind::Wakeup, id.0, 0, cpu as u64);
    slot.on_rq.store(true, Ordering::Relaxed);
    slot.wait_start.store(now, Ordering::Relaxed);
    slot.woken_at.store(now.max(1), Ordering::Relaxed);
    carry_out_decision(&mut rq, cpu, decision);
    if cpufreq::active() {
        cpufreq::governor_call(cpu, &mut rq, now, false);
    }
    load::publish(cpu, &rq);
    if eas::active() {
        load::note_overutilized(cpu);
    }
}

/// Handles the wake-up IPI: enqueues the tasks other CPUs woke for this one.
pub fn process_wake_list() {
    let cpu = this_cpu();
    loop {
        // One lock per task: the last entry taken ends the loop without
        // locking the list again to find it empty. A task pushed after that
        // is not missed: its waker sends the wake-up IPI after the push, and
        // that IPI runs this again.
        let (next, more) = {
            let mut list = WAKE_LISTS[cpu].lock();
            let next = list.pop_front();
            (next, !list.is_empty())
        };
        let Some(id) = next else {
            break;
        };
        // Only the entry on the list the task was last put on counts, and
        // only while the task belongs to this CPU.
        let slot = task(id);
        let claimed = slot
            .wake_list
            .compare_exchange(cpu as u16, NOT_LISTED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if claimed && slot.cpu() == cpu {
            activate(id);
        }
        if !more {
            break;
        }
    }
}

/// The sleep timer's callback (`sleep.rs` arms it): wakes task `id`.
pub fn wake_from_timer(id: usize) {
    wake_up(TaskId(id as u16));
}

/// The interrupts a batch of task creations owes other CPUs, sent together
/// by [`DeferredKicks::send`] once the whole batch is queued.
///
/// rt-app's instances are created at one instant (`src/workload/rtapp.rs`).
/// Kicking each CPU as its first instance is queued would let that CPU start
/// running while the creator is still creating: under `--icount` (one vCPU at
/// a time, docs/icount.md) the kick hands the turn to that CPU, whose hog then
/// runs a whole turn (about 3 ms) while the creator waits, and an idle CPU
/// whose own instances are not queued yet pulls a waiting one from the
/// creator's CPU at its tick (a 4-task CPU the balancer needs about 400 ms to
/// even out, found in `fairness-12-mixed-nice-4cpus-cfs`).
#[derive(Debug, Default)]
pub struct DeferredKicks {
    /// CPUs to send a reschedule IPI (their `need_resched` is already set).
    reschedule: u64,
    /// CPUs whose running task's slice end must be recomputed.
    hrtick: u64,
}

impl DeferredKicks {
    /// Sends the owed interrupts: a reschedule, which re-evaluates the slice
    /// too, else the slice update.
    pub fn send(self) {
        for cpu in 0..percpu::nr_cpus() {
            let bit = 1u64 << cpu;
            // A full call-function mailbox falls back to a reschedule.
            let reschedule = self.reschedule & bit != 0
                || (self.hrtick & bit != 0
                    && crate::platform::smp::call_function(cpu, hrtick_update_here, cpu).is_err());
            if reschedule {
                send_ipi(cpu, Ipi::Reschedule);
            }
        }
    }
}

/// Registers a new task with CPU `cpu`'s run queue and makes it runnable;
/// another CPU is interrupted at once, or through `deferred` when given.
pub fn activate_new(
    id: TaskId,
    cpu: usize,
    params: &TaskParams,
    deferred: Option<&mut DeferredKicks>,
) -> Result<(), ParamError> {
    // Room for the task in every CPU's tables before it can be queued
    // anywhere (`reserve_task_ids`): once per task created.
    reserve_task_ids(id.index() + 1);
    let mut rq = run_queue(cpu).lock();
    let now = now_ns();
    let decision = rq.core.wake_up_new_task(id, params, now)?;
    costs::record_op_costs(cpu, || rq.core.take_op_costs());
    trace_group_bandwidth(now, cpu, rq.core.run_queue());
    if trace::recording() {
        let prio = prio(params.policy);
        trace::record(now, cpu, trace::Kind::WakeupNew, id.0, prio, cpu as u64);
    }
    let slot = task(id);
    slot.state
        .store(TaskState::Running as u8, Ordering::Release);
    rq.add_member(id);
    slot.on_rq.store(true, Ordering::Relaxed);
    slot.wait_start.store(now, Ordering::Relaxed);
    match deferred {
        Some(kicks) if cpu != this_cpu() => {
            if decision.resched {
                percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
                kicks.reschedule |= 1 << cpu;
            } else if decision.hrtick != TimerRequest::Keep {
                kicks.hrtick |= 1 << cpu;
            }
        }
        _ => carry_out_decision(&mut rq, cpu, decision),
    }
    if cpufreq::active() {
        cpufreq::governor_call(cpu, &mut rq, now, false);
    }
    load::publish(cpu, &rq);
    Ok(())
}

/// Linux's `prio` of a policy (`p->prio`), as `sched_wakeup_new` reports
/// it: `120 + nice` for the fair policies (`SCHED_IDLE` reports 120),
/// `99 - rt_priority` for RT.
fn prio(policy: fairway_sched::task::Policy) -> u16 {
    use fairway_sched::task::Policy;
    match policy {
        Policy::Normal { nice } | Policy::Batch { nice } => (120 + i16::from(nice)) as u16,
        Policy::Idle => 120,
        Policy::Fifo { priority } | Policy::RoundRobin { priority } => 99 - u16::from(priority),
    }
}
