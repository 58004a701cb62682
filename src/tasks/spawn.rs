//! Creating and ending tasks: a free slot found and set up, its stack and
//! first context prepared, and the task handed to the scheduler; a task's
//! first instructions and its end.

use core::sync::atomic::{AtomicUsize, Ordering};

use fairway_sched::task::{CpuMask, ParamError, TaskId, TaskParams};

use super::scheduler::Scheduler;
use super::table::{
    LATENCY_SAMPLES, LATENCY_STATS_BYTES, NO_BOOST, NO_TASK, STATISTICS_BYTES, SpawnError,
    TaskState, current, slot_or_allocate, task,
};
use crate::config::{MAX_CPUS, MAX_TASKS, TASK_STACK_SIZE};
use crate::observe::trace;
use crate::platform::percpu;

/// Where [`spawn`] starts looking for a free task slot.
static NEXT_FREE_SLOT: AtomicUsize = AtomicUsize::new(0);

/// Where the next search for a free slot starts (a batch of creations makes
/// room for the ids it will take from here, the scheduling floor's
/// `reserve_for_spawns`).
pub fn next_free_slot() -> usize {
    NEXT_FREE_SLOT.load(Ordering::Relaxed) % MAX_TASKS
}

/// Creates a task that runs `entry(argument)` on `cpu` with `params`, and makes
/// it runnable.
pub fn spawn<S: Scheduler>(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
) -> Result<TaskId, SpawnError> {
    spawn_task::<S>(name, entry, argument, cpu, params, None)
}

/// [`spawn`] for one task of a batch created at one instant: the interrupt
/// another CPU needs is added to `kicks`, for the creator to send once the
/// whole batch is queued (the scheduler's `Kicks`).
pub fn spawn_deferred<S: Scheduler>(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
    kicks: &mut S::Kicks,
) -> Result<TaskId, SpawnError> {
    spawn_task::<S>(name, entry, argument, cpu, params, Some(kicks))
}

fn spawn_task<S: Scheduler>(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
    kicks: Option<&mut S::Kicks>,
) -> Result<TaskId, SpawnError> {
    if cpu >= MAX_CPUS || !percpu::of(cpu).online.load(Ordering::Acquire) {
        return Err(SpawnError::CpuOffline { cpu });
    }
    params.validate().map_err(SpawnError::InvalidParameters)?;
    // The search for a free slot starts after the last one taken (cyclically,
    // as Linux allocates pids): creating n tasks in a row costs O(n), not the
    // O(n^2) of scanning from slot 0 each time (10,000 rt-app instances took
    // 2.3 s of the run's virtual time to create that way).
    // A chunk not allocated yet is allocated when the search reaches it: its
    // first slot is free, so a search allocates at most one chunk.
    let first = NEXT_FREE_SLOT.load(Ordering::Relaxed) % MAX_TASKS;
    let mut found = None;
    for index in (first..MAX_TASKS).chain(0..first) {
        let slot = slot_or_allocate::<S>(index)?;
        if slot
            .state
            .compare_exchange(
                TaskState::Free as u8,
                TaskState::Creating as u8,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            found = Some((index, slot));
            break;
        }
    }
    let (id, slot) = found.ok_or(SpawnError::TooManyTasks { limit: MAX_TASKS })?;
    NEXT_FREE_SLOT.store(id + 1, Ordering::Relaxed);
    let id = TaskId(id as u16);
    if slot.stack_base.load(Ordering::Relaxed) == 0 {
        match crate::platform::heap::allocate(TASK_STACK_SIZE, 16) {
            Some(base) => slot.stack_base.store(base, Ordering::Relaxed),
            None => {
                slot.state.store(TaskState::Free as u8, Ordering::Release);
                return Err(SpawnError::OutOfMemory {
                    bytes: TASK_STACK_SIZE,
                });
            }
        }
    }
    {
        let mut latency = slot.latency.lock();
        match latency.as_mut() {
            Some(stats) => {
                stats.histogram.clear();
                stats.sampler.clear();
            }
            None => {
                *latency = Some(alloc::boxed::Box::new(
                    fairway_sched::stats::LatencyStats::new(LATENCY_SAMPLES)
                        .expect("latency sample capacity"),
                ));
                STATISTICS_BYTES.fetch_add(LATENCY_STATS_BYTES, Ordering::Relaxed);
            }
        }
    }
    slot.set_name(name);
    *slot.entry.lock() = (entry, argument);
    for counter in [
        &slot.sum_exec_runtime,
        &slot.switches_in,
        &slot.wakeups,
        &slot.wakeup_latency_total,
        &slot.wakeup_latency_max,
        &slot.last_wakeup_latency,
        &slot.wait_total,
        &slot.migrations,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    slot.wait_next.store(NO_TASK, Ordering::Relaxed);
    slot.pi_priority.store(NO_BOOST, Ordering::Relaxed);
    slot.affinity.store(params.affinity.0, Ordering::Relaxed);
    if !params
        .affinity
        .contains(fairway_sched::task::CpuId(cpu as u16))
    {
        slot.state.store(TaskState::Free as u8, Ordering::Release);
        return Err(SpawnError::InvalidParameters(ParamError::EmptyAffinity));
    }
    let stack_top = (slot.stack_base.load(Ordering::Relaxed) + TASK_STACK_SIZE) as u64;
    slot.context
        .prepare_new_task(stack_top, task_entry::<S>, u64::from(id.0), 0);
    slot.cpu.store(cpu as u16, Ordering::Release);
    if let Err(error) = S::activate_new(id, cpu, &params, kicks) {
        slot.state.store(TaskState::Free as u8, Ordering::Release);
        return Err(SpawnError::InvalidParameters(error));
    }
    Ok(id)
}

/// Where every new task starts (called from `task_trampoline` in
/// `context.rs`, which [`spawn`] hands it to): the scheduler finishes the
/// switch to it, then it runs its entry and exits.
extern "C" fn task_entry<S: Scheduler>(id: u64, _unused: u64) -> ! {
    S::finish_task_switch(crate::arch::cpu::IrqState::enabled());
    let (entry, argument) = *task(TaskId(id as u16)).entry.lock();
    entry(argument);
    exit::<S>()
}

/// Ends the calling task (Linux's `do_task_dead`): marks it dead and
/// switches away for good; the scheduler frees its slot once switched out.
pub fn exit<S: Scheduler>() -> ! {
    let me = current();
    crate::arch::cpu::irq_disable();
    if trace::recording() {
        let cpu = crate::arch::cpu::this_cpu();
        let now = crate::arch::timer::now_ns();
        trace::record(now, cpu, trace::Kind::Exit, me.0, 0, 0);
    }
    task(me)
        .state
        .store(TaskState::Dead as u8, Ordering::Release);
    S::schedule();
    unreachable!("a dead task was scheduled again")
}

/// Changes the CPUs `id` may run on. A task that is not allowed where it is
/// moves at its next wake-up (the scheduler places it on an allowed CPU).
pub fn set_affinity(id: TaskId, affinity: CpuMask) -> Result<(), ParamError> {
    if affinity.0 & ((1u64 << percpu::nr_cpus()) - 1) == 0 {
        return Err(ParamError::EmptyAffinity);
    }
    task(id).affinity.store(affinity.0, Ordering::Release);
    Ok(())
}
