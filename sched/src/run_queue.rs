//! One CPU's run queue: the single object the mechanism keeps per CPU behind a
//! lock, and the only scheduler type it names.
//!
//! It dispatches the class operations to the policy chosen at boot, so a new
//! policy plugs in here without any change to the mechanism.

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::round_robin::RoundRobin;
use crate::task::{Nanoseconds, ParamError, TaskId, TaskParams};

/// The policy a run queue is built with, chosen at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// [`RoundRobin`] with the given slice.
    RoundRobin {
        /// Time slice in nanoseconds.
        slice: Nanoseconds,
    },
}

/// One task's scheduler signals, for reports, traces and the simulator's CSV.
/// Policies without a signal report zero for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskSignals {
    /// Virtual runtime in ns (§1.3).
    pub vruntime: u64,
    /// Total time the task has run, in ns (`sum_exec_runtime`).
    pub sum_exec_runtime: u64,
    /// PELT utilization, 0..=1024 (§2).
    pub util_avg: u64,
    /// PELT load (§2).
    pub load_avg: u64,
    /// PELT runnable average (§2).
    pub runnable_avg: u64,
    /// util_est of the task (§2.4).
    pub util_est: u64,
}

/// A CPU run queue's aggregate signals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunQueueSignals {
    /// Queued tasks, the running one included.
    pub nr_running: usize,
    /// PELT utilization of the root fair run queue.
    pub util_avg: u64,
    /// PELT load of the root fair run queue.
    pub load_avg: u64,
    /// PELT runnable average of the root fair run queue.
    pub runnable_avg: u64,
    /// Sum of the queued tasks' util_est.
    pub util_est: u64,
}

/// The compute capacity a CPU offers now (§2.3, §7.1): its original capacity
/// (the biggest CPU is 1024) and the frequency scale (`cur_freq * 1024 / max_freq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCapacity {
    /// `arch_scale_cpu_capacity`, 1..=1024.
    pub capacity_orig: u32,
    /// `arch_scale_freq_capacity`, 1..=1024.
    pub frequency_scale: u32,
}

impl Default for CpuCapacity {
    fn default() -> Self {
        CpuCapacity {
            capacity_orig: 1024,
            frequency_scale: 1024,
        }
    }
}

/// One CPU's run queue.
#[derive(Debug)]
pub struct RunQueue {
    policy: RoundRobin,
    capacity: CpuCapacity,
}

impl RunQueue {
    /// A run queue for task ids below `max_tasks`, running `kind`.
    pub fn new(kind: PolicyKind, max_tasks: usize) -> Self {
        match kind {
            PolicyKind::RoundRobin { slice } => RunQueue {
                policy: RoundRobin::new(max_tasks, slice),
                capacity: CpuCapacity::default(),
            },
        }
    }

    /// Sets the capacity and frequency this CPU runs at from now on, which scales
    /// the PELT clock (§2.3).
    pub fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        self.capacity = capacity;
    }

    /// The capacity last set.
    pub fn cpu_capacity(&self) -> CpuCapacity {
        self.capacity
    }

    /// The signals of `task`, which must be known to this run queue.
    pub fn task_signals(&self, _task: TaskId) -> TaskSignals {
        TaskSignals::default()
    }

    /// The run queue's aggregate signals.
    pub fn signals(&self) -> RunQueueSignals {
        RunQueueSignals {
            nr_running: self.policy.nr_running(),
            ..RunQueueSignals::default()
        }
    }
}

impl SchedClass for RunQueue {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        self.policy.task_new(task, params, now)
    }
    fn task_dead(&mut self, task: TaskId) {
        self.policy.task_dead(task)
    }
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        self.policy.enqueue_task(task, now, flags)
    }
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        self.policy.dequeue_task(task, now, flags)
    }
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.policy.pick_next_task(now)
    }
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.put_prev_task(task, now)
    }
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.set_next_task(task, now)
    }
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        self.policy.task_tick(task, now)
    }
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        self.policy.wakeup_preempt(current, woken, now)
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.policy.yield_task(task, now)
    }
    fn nr_running(&self) -> usize {
        self.policy.nr_running()
    }
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        self.policy.slice_remaining(task, now)
    }
}
