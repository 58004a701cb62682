//! The scheduling floor: the one door to each CPU's scheduler driver
//! (`fairway_sched::cpu_core::CpuCore`, [`run_queue`]) and the files that
//! carry its decisions out. It stands on the platform, observation and tasks
//! floors, and the workloads stand on it.
//!
//! Its files call down, never across: each imports only files of a lower
//! rank here (the floors lint, `cargo xtask lint`, checks it):
//!
//! ```text
//!   7  sleep                                   sleep until a time
//!   6  wakeup   switch   tick                  the paths: try_to_wake_up, __schedule, sched_tick
//!   5  balance                                 periodic, newly-idle and active balancing
//!   4  groups   pi   cpufreq   bandwidth       what the paths and the balancer call
//!   3  load   observe                          published load; values for the observation floor
//!   2  run_queue   eas                         the door: run queues, carrying decisions out; EAS state
//!   1  settings   energy                       boot-time settings and energy model
//! ```
//!
//! This file is above them all: boot's entry points, and the names the
//! floors above use. It also implements the tasks floor's
//! [`tasks::Scheduler`](crate::tasks::Scheduler) interface with [`Scheduler`], and names the
//! tasks floor's generic pieces with it ([`spawn`], [`Completion`],
//! [`Pipe`]...).
//!
//! A timer wake-up, from the vector to the pick (ARCHITECTURE.md, "A timer
//! wake-up, file by file"): `exception.rs` → `irq.rs` → `hrtimer.rs` →
//! [`wakeup::wake_from_timer`] (placement over the published load, the
//! driver's `try_to_wake_up`, the decision carried out, the load published
//! by `load.rs`) → back to `hrtimer.rs`, `irq.rs` and `exception.rs`, whose
//! way out is [`switch::preempt_on_irq_return`]: `schedule()` and the
//! driver's pick.

pub mod balance;
pub mod bandwidth;
pub mod cpufreq;
pub mod eas;
pub mod energy;
pub mod groups;
pub mod load;
pub mod observe;
pub mod pi;
pub mod run_queue;
pub mod settings;
pub mod sleep;
pub mod switch;
pub mod tick;
pub mod wakeup;

use core::sync::atomic::Ordering;

use fairway_sched::task::{ParamError, TaskId, TaskParams};

pub use run_queue::{CpuRunQueue, with_run_queue};
pub use settings::{
    MAX_GROUPS, PolicyChoice, SchedConfig, config, configure, tick_period_ns, uclamp_enabled,
};
pub use sleep::{sleep_for, sleep_until, sleep_until_expiry};
pub use switch::{finish_task_switch, idle_loop, preempt_point, schedule, yield_now};
pub use tick::start_tick;
pub use wakeup::{DeferredKicks, process_wake_list, wake_up};

use crate::arch::cpu::IrqState;
use crate::arch::timer::now_ns;
use crate::config::MAX_TASKS;
use crate::observe::costs;
use crate::platform::irq::{self, Ipi, RegisterError};
use crate::platform::percpu;
use crate::tasks::{self, SpawnError, TaskState, idle_task_id, task};

/// The scheduler the tasks floor sleeps, wakes and creates with: this
/// floor's functions, bound at compile time.
pub struct Scheduler;

impl tasks::Scheduler for Scheduler {
    type Kicks = DeferredKicks;

    #[inline(always)]
    fn grow_wake_lists(slots: usize) -> Result<(), usize> {
        wakeup::grow_wake_lists(slots)
    }

    #[inline(always)]
    fn activate_new(
        id: TaskId,
        cpu: usize,
        params: &TaskParams,
        kicks: Option<&mut DeferredKicks>,
    ) -> Result<(), ParamError> {
        wakeup::activate_new(id, cpu, params, kicks)
    }

    #[inline(always)]
    fn finish_task_switch(irq_state: IrqState) {
        switch::finish_task_switch(irq_state);
    }

    #[inline(always)]
    fn schedule() {
        switch::schedule();
    }

    #[inline(always)]
    fn wake_up(id: TaskId) -> bool {
        wakeup::wake_up(id)
    }

    #[inline(always)]
    fn preempt_point() {
        switch::preempt_point();
    }
}

/// A wait queue that sleeps and wakes with this floor's scheduler.
pub type WaitQueue = tasks::wait::WaitQueue<Scheduler>;
/// A completion that sleeps and wakes with this floor's scheduler.
pub type Completion = tasks::wait::Completion<Scheduler>;
/// A pipe that sleeps and wakes with this floor's scheduler.
pub type Pipe = tasks::pipe::Pipe<Scheduler>;

/// Creates a task that runs `entry(argument)` on `cpu` with `params`, and
/// makes it runnable (`tasks::spawn::spawn`).
pub fn spawn(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
) -> Result<TaskId, SpawnError> {
    tasks::spawn::spawn::<Scheduler>(name, entry, argument, cpu, params)
}

/// [`spawn`] for one task of a batch created at one instant: the interrupt
/// another CPU needs is added to `kicks`, for the creator to send once the
/// whole batch is queued ([`DeferredKicks::send`]).
pub fn spawn_deferred(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
    kicks: &mut DeferredKicks,
) -> Result<TaskId, SpawnError> {
    tasks::spawn::spawn_deferred::<Scheduler>(name, entry, argument, cpu, params, kicks)
}

/// Ends the calling task.
pub fn exit() -> ! {
    tasks::spawn::exit::<Scheduler>()
}

/// Sleeps until `condition(&mut *guard)` holds, on no wait list
/// (`tasks::wait::park_until`).
pub fn park_until<'a, T>(
    lock: &'a crate::platform::sync::IrqSpinLock<T>,
    guard: crate::platform::sync::IrqSpinLockGuard<'a, T>,
    condition: impl FnMut(&mut T) -> bool,
) -> crate::platform::sync::IrqSpinLockGuard<'a, T> {
    tasks::wait::park_until::<Scheduler, T>(lock, guard, condition)
}

/// Allocates the task table's first slots, the idle tasks' among them (boot
/// core, before the run queues are built).
pub fn init_table() {
    tasks::table::init_table::<Scheduler>();
}

/// Registers this floor's interrupt handler, the wake-up IPI's (boot core,
/// once, before any CPU unmasks IRQs).
pub fn register_irq_handlers() -> Result<(), RegisterError> {
    irq::register_handler(Ipi::WakeUp as u32, process_wake_list)
}

/// Builds CPU `cpu`'s run queue with the calling context as its idle task
/// (each CPU calls this for itself while booting, IRQs masked).
pub fn init_cpu(cpu: usize) {
    let idle = idle_task_id(cpu);
    run_queue::build(cpu, idle);
    costs::init_cpu(cpu);
    let idle_task = task(idle);
    idle_task.set_name("idle");
    idle_task.cpu.store(cpu as u16, Ordering::Relaxed);
    idle_task.on_cpu.store(true, Ordering::Relaxed);
    idle_task
        .state
        .store(TaskState::Running as u8, Ordering::Release);
    idle_task.exec_start.store(now_ns(), Ordering::Relaxed);
    percpu::of(cpu)
        .current_task
        .store(idle.0, Ordering::Relaxed);
}

/// Makes room in every run queue for the next `count` tasks to be created,
/// at once (a workload that creates a batch of tasks calls it first: the
/// run queues' tables then grow once, to whole blocks of ids, and not by a
/// quarter at a time as single creations do). Ids are given out in order
/// from the last one taken, so the next `count` are known; should some be
/// taken meanwhile, creation still grows the tables as it goes.
pub fn reserve_for_spawns(count: usize) {
    let next = tasks::spawn::next_free_slot();
    run_queue::reserve_task_ids((next + count).min(MAX_TASKS));
}

/// How many task ids every run queue has room for.
pub fn task_ids_reserved() -> usize {
    run_queue::task_ids_reserved()
}

/// The scheduler's memory (issue 15): the run queues' heap (every CPU's core,
/// classes, trees and records), and the tables that grow with the task slots
/// allocated (the task table with its slot pointers, and the CPUs' wake
/// lists); stacks are not counted.
pub fn memory_bytes() -> (usize, usize) {
    (
        run_queue::run_queue_bytes(),
        wakeup::wake_list_bytes() + tasks::table::task_table_bytes(),
    )
}
