//! The tasks floor: the task table ([`table`]), creating and ending tasks
//! ([`spawn`]), waiting ([`wait`]) and pipes ([`pipe`]). It stands on the
//! platform and observation floors and below the scheduling floor.
//!
//! Creating, waiting and piping need the scheduler (a new task is queued, a
//! waiter switches away, a waker wakes), yet this floor names nothing above
//! it: what it needs is the [`Scheduler`] interface, defined here
//! ([`scheduler`]) and
//! implemented by the scheduling floor (`scheduling::Scheduler`), and the
//! functions and types that need it are generic over it. The scheduling
//! floor names them with its own type (`scheduling::spawn`,
//! `scheduling::Completion`, `scheduling::Pipe`), so users see no parameter.
//! Bound at compile time, a pipe's wake-up is a direct call, as it was before
//! the floors: no function pointer on the hot path.
//!
//! ```text
//!   scheduling ── implements ──► tasks::Scheduler ◄── generic over ── spawn, wait, pipe
//!        │                                                                 │
//!        └─────────────── names spawn::<Scheduler>, Pipe<Scheduler> ───────┘
//! ```

pub mod pipe;
pub mod scheduler;
pub mod spawn;
pub mod table;
pub mod wait;

pub use fairway_sched::task::{CpuMask, Policy, TaskId, TaskParams};

pub use scheduler::Scheduler;
pub use spawn::set_affinity;
pub use table::{
    CHUNK_SLOTS, NO_TASK, SpawnError, TASK_NAME_BYTES, Task, TaskState, current,
    current_runtime_ns, for_each_task, idle_task_id, live_tasks, runtime_ns_on, statistics_bytes,
    task, task_slots_allocated,
};
