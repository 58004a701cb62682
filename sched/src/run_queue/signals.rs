//! What a run queue reports: task, run-queue and group signals, and the CPU
//! capacity it runs at.

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

/// One task group's signals on one CPU (zero under round robin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupSignals {
    /// PELT load of the group's run queue here (`cfs_rq->avg.load_avg`).
    pub load_avg: u64,
    /// PELT utilization of the group's run queue here.
    pub util_avg: u64,
    /// PELT runnable average of the group's run queue here.
    pub runnable_avg: u64,
    /// The group entity's weight, scaled down (`calc_group_shares`, §2.7).
    pub entity_weight: u64,
    /// The group entity's PELT load on its parent's run queue (§2.7).
    pub entity_load_avg: u64,
    /// The group-wide load sum last handed in (`tg->load_avg`).
    pub tg_load_avg: u64,
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
