//! The scheduler interface of the tasks floor: what creating, waiting and
//! piping need of the scheduler above, which implements it
//! (`scheduling::Scheduler`). Generic code here is bound to it at compile
//! time, so a call through it is a direct call.

use fairway_sched::task::{ParamError, TaskId, TaskParams};

use crate::arch::cpu::IrqState;

/// What the tasks floor asks of the scheduler above it (implemented by the
/// scheduling floor's `Scheduler`).
pub trait Scheduler {
    /// The interrupts a batch of task creations owes other CPUs, sent once
    /// the whole batch is queued ([`spawn::spawn_deferred`]).
    type Kicks;

    /// Makes room on every CPU's wake list for twice `slots` task slots
    /// (when the task table grows, before the new slots are visible); on
    /// failure, the bytes that were asked for.
    fn grow_wake_lists(slots: usize) -> Result<(), usize>;

    /// Registers the new task `id` with CPU `cpu`'s run queue and makes it
    /// runnable (Linux's `wake_up_new_task`); another CPU is interrupted at
    /// once, or through `kicks` when given.
    fn activate_new(
        id: TaskId,
        cpu: usize,
        params: &TaskParams,
        kicks: Option<&mut Self::Kicks>,
    ) -> Result<(), ParamError>;

    /// Completes the switch to a new task, at its first instruction, and
    /// leaves interrupts in `irq_state` (Linux's `schedule_tail`).
    fn finish_task_switch(irq_state: IrqState);

    /// Switches to the next task (the calling task goes to sleep, dies or
    /// yields, as its state says).
    fn schedule();

    /// Wakes `id` if it sleeps; returns whether it did. Never schedules.
    fn wake_up(id: TaskId) -> bool;

    /// Reschedules if asked to and not in an interrupt handler.
    fn preempt_point();
}
