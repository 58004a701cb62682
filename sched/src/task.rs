//! Task and CPU identities and the scheduling parameters a task is created with.

use core::fmt;

/// Time in nanoseconds, on the clock of the run queue that is given it.
pub type Nanoseconds = u64;

/// A task, by its index in the mechanism's task table.
///
/// Indices keep the core free of pointers and allocation: per-task policy state
/// lives in arrays indexed by this value, sized once when a run queue is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u16);

impl TaskId {
    /// The index into per-task arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A CPU, by its logical number (0 is the boot CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuId(pub u16);

impl CpuId {
    /// The index into per-CPU arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A task group (a cgroup with the `cpu` controller), by its index in every
/// CPU's group arrays. [`GroupId::ROOT`] is the root group, which every task
/// belongs to unless moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GroupId(pub u16);

impl GroupId {
    /// The root task group (`root_task_group`).
    pub const ROOT: GroupId = GroupId(0);

    /// The index into per-group arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The most CPUs a Fairway system has (the size of a [`CpuMask`]).
pub const MAX_CPUS: usize = 64;

/// A set of CPUs, as Linux's `cpumask`, for affinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpuMask(pub u64);

impl CpuMask {
    /// Every CPU.
    pub const ALL: CpuMask = CpuMask(u64::MAX);

    /// Only `cpu`.
    pub const fn only(cpu: CpuId) -> CpuMask {
        CpuMask(1 << cpu.0)
    }

    /// Whether `cpu` is in the set.
    pub const fn contains(self, cpu: CpuId) -> bool {
        (cpu.0 as usize) < MAX_CPUS && self.0 & (1 << cpu.0) != 0
    }
}

/// Scheduling policy and its priority, as `sched_setattr` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_NORMAL` (also called `SCHED_OTHER`) with a nice value in -20..=19.
    Normal {
        /// The nice value.
        nice: i8,
    },
    /// `SCHED_BATCH`: fair class, never preempts on wake-up.
    Batch {
        /// The nice value.
        nice: i8,
    },
    /// `SCHED_IDLE`: fair class with the minimum weight.
    Idle,
    /// `SCHED_FIFO` with an RT priority in 1..=99.
    Fifo {
        /// The real-time priority (higher runs first).
        priority: u8,
    },
    /// `SCHED_RR` with an RT priority in 1..=99.
    RoundRobin {
        /// The real-time priority (higher runs first).
        priority: u8,
    },
}

impl Default for Policy {
    fn default() -> Self {
        Policy::Normal { nice: 0 }
    }
}

/// Everything the core needs to know about a task when it is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskParams {
    /// Policy and priority.
    pub policy: Policy,
    /// The CPUs the task may run on.
    pub affinity: CpuMask,
    /// Requested `uclamp_min` (`sched_attr.sched_util_min`), 0..=1024; `None`
    /// keeps the default (0, or the RT default boost for RT tasks, §3.3).
    pub uclamp_min: Option<u16>,
    /// Requested `uclamp_max` (`sched_attr.sched_util_max`), 0..=1024; `None`
    /// keeps the default 1024 (§3.1).
    pub uclamp_max: Option<u16>,
    /// The task group the task starts in (the root group by default).
    pub group: GroupId,
    /// A custom EEVDF slice (Linux 6.12's `sched_attr.sched_runtime` for a fair
    /// task, §1.5), clamped to [`CUSTOM_SLICE_RANGE`]; `None` = the base slice.
    pub custom_slice: Option<Nanoseconds>,
}

/// The range Linux clamps a custom slice to: 0.1 ms to 100 ms (§1.5, §9).
pub const CUSTOM_SLICE_RANGE: (Nanoseconds, Nanoseconds) = (100_000, 100_000_000);

impl Default for TaskParams {
    fn default() -> Self {
        TaskParams {
            policy: Policy::default(),
            affinity: CpuMask::ALL,
            uclamp_min: None,
            uclamp_max: None,
            custom_slice: None,
            group: GroupId::ROOT,
        }
    }
}

impl TaskParams {
    /// Default parameters, allowed on `cpu` only.
    pub fn pinned(cpu: usize) -> Self {
        TaskParams {
            affinity: CpuMask::only(CpuId(cpu as u16)),
            ..TaskParams::default()
        }
    }

    /// Checks the parameters the way `sched_setattr` does, naming the bad field
    /// (the clamps as `uclamp_validate` does, §3.1).
    pub fn validate(&self) -> Result<(), ParamError> {
        match self.policy {
            Policy::Normal { nice } | Policy::Batch { nice } if !(-20..=19).contains(&nice) => {
                Err(ParamError::OutOfRange {
                    field: "nice",
                    value: i64::from(nice),
                    min: -20,
                    max: 19,
                })
            }
            Policy::Fifo { priority } | Policy::RoundRobin { priority }
                if !(1..=99).contains(&priority) =>
            {
                Err(ParamError::OutOfRange {
                    field: "rt_priority",
                    value: i64::from(priority),
                    min: 1,
                    max: 99,
                })
            }
            _ if self.affinity.0 == 0 => Err(ParamError::EmptyAffinity),
            _ => crate::uclamp::request::validate_uclamp(self.uclamp_min, self.uclamp_max),
        }
    }
}

/// A scheduling parameter Linux would refuse with `EINVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// `field` is `value`, outside `min..=max`.
    OutOfRange {
        /// The parameter's name.
        field: &'static str,
        /// The value given.
        value: i64,
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// The affinity mask names no CPU.
    EmptyAffinity,
    /// The task id is beyond the capacity the run queue was built with.
    TooManyTasks {
        /// The id given.
        task: u16,
        /// The number of task slots.
        capacity: usize,
    },
    /// The task id names no created task (like `ESRCH`).
    UnknownTask {
        /// The id given.
        task: u16,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParamError::OutOfRange {
                field,
                value,
                min,
                max,
            } => write!(
                f,
                "invalid argument: {field} = {value} is outside {min}..={max}"
            ),
            ParamError::EmptyAffinity => write!(f, "invalid argument: affinity names no CPU"),
            ParamError::TooManyTasks { task, capacity } => write!(
                f,
                "too many tasks: task id {task} but only {capacity} task slots"
            ),
            ParamError::UnknownTask { task } => write!(f, "no such task: task id {task}"),
        }
    }
}

/// Grows `table`, indexed by task id, to hold ids below `count`, filling
/// new entries with `unused` (never shrinks). By whole 64-entry blocks, and
/// by at least a quarter of what it holds, so that creating tasks one after
/// another copies each entry a bounded number of times, while at most a
/// quarter of the table stays unused; exactly sized (`reserve_exact`), so
/// that what a table takes is what [`table_bytes`] reports.
pub(crate) fn grow_table<T: Clone>(table: &mut alloc::vec::Vec<T>, count: usize, unused: T) {
    let len = table.len();
    if count <= len {
        return;
    }
    let target = grown_length(len, count);
    table.reserve_exact(target - len);
    table.resize(target, unused);
}

/// The length a table indexed by task id grows to from `len` to hold ids
/// below `count` (more than `len`): the policy of [`grow_table`], for the
/// mechanism's own tables too.
pub fn grown_length(len: usize, count: usize) -> usize {
    count.next_multiple_of(64).max(len + len / 4)
}

/// The heap a table indexed by task id takes.
pub fn table_bytes<T>(table: &alloc::vec::Vec<T>) -> usize {
    table.capacity() * core::mem::size_of::<T>()
}
