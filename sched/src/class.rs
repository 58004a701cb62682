//! The scheduling-class interface, shaped like Linux's `struct sched_class`.
//!
//! A class is one CPU's run queue of one policy. The mechanism calls it with the
//! run queue's lock held and the current time; it answers with decisions.
//!
//! The life of a task on a run queue, as in Linux:
//!
//! ```text
//!  task_new ──► enqueue_task ──► (pick_next_task ─► set_next_task ─► running
//!                    ▲                 ▲                                │ task_tick
//!                    │                 └──────── put_prev_task ◄────────┤ preempted/yield
//!                    └────────── dequeue_task (sleep) ◄─────────────────┘ blocks
//! ```
//!
//! A task is *queued* from `enqueue_task` until `dequeue_task`, whether it is
//! running or waiting. The running task is handed back with `put_prev_task` at
//! every `schedule()`, also when it has just been dequeued.

use crate::task::{Nanoseconds, ParamError, TaskId, TaskParams};

/// Why a task is enqueued (Linux's `ENQUEUE_*` flags, the ones the core uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnqueueFlags {
    /// The task wakes up from a sleep (`ENQUEUE_WAKEUP`).
    pub wakeup: bool,
    /// The task arrives from another CPU (`ENQUEUE_MIGRATED`).
    pub migrated: bool,
    /// The task is new (`ENQUEUE_INITIAL`).
    pub initial: bool,
}

/// Why a task is dequeued (Linux's `DEQUEUE_*` flags, the ones the core uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DequeueFlags {
    /// The task goes to sleep (`DEQUEUE_SLEEP`).
    pub sleep: bool,
    /// The task leaves for another CPU.
    pub migrating: bool,
}

/// Whether the running task must give up the CPU (Linux's `resched_curr`).
#[must_use = "a reschedule decision must be carried out by the mechanism"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resched {
    /// Keep running the current task.
    Keep,
    /// Call `schedule()` at the next opportunity.
    Reschedule,
}

impl Resched {
    /// True when a reschedule is asked for.
    pub const fn is_needed(self) -> bool {
        matches!(self, Resched::Reschedule)
    }
}

/// The class operations, named as Linux's `sched_class` members.
pub trait SchedClass {
    /// Makes `task` known to this run queue (Linux's `task_fork` plus the
    /// parameter set-up of `sched_setattr`). Fails with the offending field.
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError>;

    /// Forgets `task`, which must not be queued (Linux's `task_dead`).
    fn task_dead(&mut self, task: TaskId);

    /// `task` becomes runnable here.
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags);

    /// `task` stops being runnable here.
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags);

    /// The task that should run next, or `None` when nothing is queued.
    /// Does not change state; the mechanism confirms with `set_next_task`.
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId>;

    /// The running task `task` stops running (it is preempted, yields, or was
    /// dequeued); if it is still queued it waits its turn again.
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds);

    /// `task` (queued) starts running.
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds);

    /// The periodic tick while `task` runs.
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched;

    /// Whether the newly woken `woken` should preempt the running `current`.
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched;

    /// The running task gives up the CPU voluntarily (Linux's `yield_task`).
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds);

    /// How many tasks are queued, the running one included.
    fn nr_running(&self) -> usize;

    /// Makes room for task ids below `count` in the tables this class
    /// indexes by task id (it never shrinks them). Linux allocates a task's
    /// scheduling state with the task; here each CPU keeps a table per
    /// class, grown when the mechanism creates a task (on every CPU the task
    /// may run on), so that no hot path allocates and the memory follows the
    /// tasks created, not a fixed maximum (`docs/performance.md`, memory).
    fn reserve_tasks(&mut self, count: usize);

    /// The bytes of the tables this class indexes by task id.
    fn task_storage_bytes(&self) -> usize;

    /// `put_prev_task` at a context switch, the next pick and
    /// `set_next_task` (of this class or another) or the idle class
    /// following under the same lock: a class that keeps a hierarchy may
    /// leave its upper levels running until it knows the next task
    /// ([`SchedClass::settle_switch`]).
    fn put_prev_task_for_switch(&mut self, task: TaskId, now: Nanoseconds) {
        self.put_prev_task(task, now);
    }

    /// The switch goes to no task of this class: whatever
    /// [`SchedClass::put_prev_task_for_switch`] left running stops now.
    fn settle_switch(&mut self, _now: Nanoseconds) {}

    /// How long the running `task` may still run before its slice ends, when
    /// another task waits for the CPU: the mechanism arms a high-resolution timer
    /// for then (Linux's `hrtick`), so slices hold without a fast tick. `None`
    /// when nothing would preempt it.
    fn slice_remaining(&self, _task: TaskId, _now: Nanoseconds) -> Option<Nanoseconds> {
        None
    }
}
