//! The plain data balancing decides on: per-CPU snapshots and per-task
//! candidates (filled by the mechanism), and the per-group statistics and
//! classification computed from them (`sg_lb_stats`, `group_classify`).

use crate::run_queue::{RunQueueSignals, TaskSignals};
use crate::task::{CpuId, CpuMask, Nanoseconds, TaskId};
use crate::topology::{SchedDomain, Topology};
use crate::uclamp::{CpuFit, util_fits_cpu};

/// One CPU's run queue as balancing sees it, taken without its lock (Linux
/// reads these remotely too). The kernel and the simulator fill it from
/// `RunQueue::signals()`; `snapshots[i].cpu` must be `CpuId(i)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSnapshot {
    /// Which CPU.
    pub cpu: CpuId,
    /// `capacity_of(cpu)`: capacity left to fair tasks (capacity_orig less
    /// RT/IRQ pressure; capacity_orig when no pressure is modelled).
    pub capacity: u64,
    /// Runnable fair tasks, the running one included (`h_nr_running`).
    pub nr_running: u32,
    /// `available_idle_cpu`: the CPU runs its idle task with nothing queued.
    pub idle: bool,
    /// `cpu_load`: the root fair run queue's PELT load_avg (§2).
    pub load_avg: u64,
    /// The root fair run queue's util_avg (§2).
    pub util_avg: u64,
    /// The root fair run queue's runnable_avg (§2).
    pub runnable_avg: u64,
    /// The root fair run queue's util_est (§2.4).
    pub util_est: u64,
    /// `rq->misfit_task_load` as [`misfit_task_load`] computed it for the
    /// running task at the last tick or pick; 0 when none (§5.5).
    pub misfit_task_load: u64,
    /// The run queue's `[uclamp_min, uclamp_max]` (`uclamp_rq_get`, §3.2);
    /// `[0, 1024]` when uclamp is unused.
    pub uclamp: [u16; 2],
    /// `uclamp_rq_is_idle`: no task holds the run queue's clamps (its
    /// values are the last ones kept, §3.2), so a waking task's clamps
    /// replace them rather than merge with them (§3.4).
    pub uclamp_idle: bool,
    /// An RT task is runnable here: with uclamp unused, schedutil and EAS
    /// then ask for the CPU's whole capacity (§3.4, `effective_cpu_util`).
    pub rt_runnable: bool,
}

impl CpuSnapshot {
    /// A snapshot from a run queue's signals; `capacity` is `capacity_of(cpu)`.
    pub fn from_signals(cpu: CpuId, capacity: u64, signals: &RunQueueSignals) -> Self {
        CpuSnapshot {
            cpu,
            capacity,
            nr_running: signals.nr_running as u32,
            idle: signals.nr_running == 0,
            load_avg: signals.load_avg,
            util_avg: signals.util_avg,
            runnable_avg: signals.runnable_avg,
            util_est: signals.util_est,
            misfit_task_load: 0,
            uclamp: [0, 1024],
            uclamp_idle: signals.nr_running == 0,
            rt_runnable: false,
        }
    }

    /// `cpu_util_cfs`: `max(util_avg, util_est)` capped at capacity_orig (§5.5).
    pub fn cpu_util_cfs(&self, capacity_orig: u64) -> u64 {
        self.util_avg.max(self.util_est).min(capacity_orig)
    }
}

/// Where a wake-up placement reads the CPUs' published loads (Linux reads
/// other run queues' fields remotely, unlocked, §5.2): a table of every CPU's
/// [`CpuSnapshot`] (the simulator's; the kernel's under EAS and explain
/// mode), or a view that reads only the fields of the CPUs a decision asks
/// for (the kernel's otherwise). Both answer with the same values: a field
/// read is the field of [`CpuLoads::snapshot`].
pub trait CpuLoads {
    /// Checks that the loads describe every CPU of `topology`, in order
    /// ([`check_snapshots`] for a table).
    fn check(&self, topology: &Topology) -> Result<(), BalanceError>;
    /// CPU `cpu`'s whole snapshot.
    fn snapshot(&self, cpu: CpuId) -> CpuSnapshot;
    /// `available_idle_cpu(cpu)`: [`CpuSnapshot::idle`].
    fn idle(&self, cpu: CpuId) -> bool {
        self.snapshot(cpu).idle
    }
    /// [`CpuSnapshot::nr_running`].
    fn nr_running(&self, cpu: CpuId) -> u32 {
        self.snapshot(cpu).nr_running
    }
    /// `capacity_of(cpu)`: [`CpuSnapshot::capacity`].
    fn capacity(&self, cpu: CpuId) -> u64 {
        self.snapshot(cpu).capacity
    }
}

/// A table of every CPU's snapshot, `table[i]` CPU `i`'s.
impl<T: AsRef<[CpuSnapshot]> + ?Sized> CpuLoads for T {
    fn check(&self, topology: &Topology) -> Result<(), BalanceError> {
        check_snapshots(topology, self.as_ref())
    }
    fn snapshot(&self, cpu: CpuId) -> CpuSnapshot {
        self.as_ref()[cpu.index()]
    }
    fn idle(&self, cpu: CpuId) -> bool {
        self.as_ref()[cpu.index()].idle
    }
    fn nr_running(&self, cpu: CpuId) -> u32 {
        self.as_ref()[cpu.index()].nr_running
    }
    fn capacity(&self, cpu: CpuId) -> u64 {
        self.as_ref()[cpu.index()].capacity
    }
}

/// A fair task on the run queue of the CPU being pulled from, in the order
/// of Linux's `cfs_tasks` from its tail (the task that ran least recently
/// first; a task goes to the head when it is enqueued or picked). The
/// running task is on that list too, at its place: `detach_tasks` counts it
/// against `loop_max` and skips it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskCandidate {
    /// The task.
    pub task: TaskId,
    /// `task_h_load`: its load as the root run queue sees it through its
    /// groups (its own load_avg without task groups, §2.7).
    pub load_avg: u64,
    /// Its util_avg (§2).
    pub util_avg: u64,
    /// Its util_est (§2.4).
    pub util_est: u64,
    /// The CPUs it may run on.
    pub affinity: CpuMask,
    /// Whether it is the CPU's current task (only active balance moves it).
    pub running: bool,
    /// `task_hot`: it ran within `migration_cost` (0.5 ms, §9) on this CPU.
    pub cache_hot: bool,
    /// Effective `[uclamp_min, uclamp_max]` (§3.3); `[0, 1024]` without uclamp.
    pub uclamp: [u16; 2],
}

/// `sysctl_sched_migration_cost` (§9): a task that ran within this long is
/// cache hot.
pub const MIGRATION_COST_NS: u64 = 500_000;

impl TaskCandidate {
    /// A candidate from the run queue's view of the task (`signals`), with
    /// `task_hot` judged from when it last started running (`exec_start`).
    pub fn from_signals(
        task: TaskId,
        signals: &TaskSignals,
        affinity: CpuMask,
        running: bool,
        now: Nanoseconds,
        exec_start: Nanoseconds,
        uclamp: [u16; 2],
    ) -> Self {
        TaskCandidate {
            task,
            load_avg: signals.load_avg,
            util_avg: signals.util_avg,
            util_est: signals.util_est,
            affinity,
            running,
            cache_hot: now.saturating_sub(exec_start) < MIGRATION_COST_NS,
            uclamp,
        }
    }

    /// `task_util_est(p)`: `max(util_avg, util_est)` (§2.4).
    pub fn task_util_est(&self) -> u64 {
        self.util_avg.max(self.util_est)
    }

    /// `task_fits_cpu(p, cpu)`: `util_fits_cpu` of its util_est and clamps
    /// returns 1 (§3.4, §5.5). Capacities as [`util_fits_cpu`] takes them.
    pub fn fits_cpu(&self, capacity: u64, capacity_orig: u64) -> bool {
        util_fits_cpu(
            self.task_util_est(),
            self.uclamp[0],
            self.uclamp[1],
            capacity,
            capacity_orig,
            capacity_orig,
        ) == CpuFit::Fits
    }
}

/// Bad input to a balancing decision, like `EINVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalanceError {
    /// `field` names CPU `cpu`, which the topology does not have.
    UnknownCpu {
        /// The field.
        field: &'static str,
        /// The CPU id given.
        cpu: u16,
    },
    /// The snapshot slice does not hold one entry per CPU in order.
    SnapshotMismatch {
        /// The first index whose entry is missing or names another CPU.
        index: usize,
        /// Number of CPUs in the topology.
        nr_cpus: usize,
    },
    /// A task's affinity names no CPU of the topology.
    EmptyAffinity,
}

/// Checks that `snapshots[i]` describes CPU `i` for every CPU.
pub fn check_snapshots(topology: &Topology, snapshots: &[CpuSnapshot]) -> Result<(), BalanceError> {
    let nr_cpus = topology.nr_cpus();
    for index in 0..nr_cpus.max(snapshots.len()) {
        match snapshots.get(index) {
            Some(s) if index < nr_cpus && s.cpu.index() == index => {}
            _ => return Err(BalanceError::SnapshotMismatch { index, nr_cpus }),
        }
    }
    Ok(())
}

/// Checks that `cpu` exists.
pub fn check_cpu(topology: &Topology, field: &'static str, cpu: CpuId) -> Result<(), BalanceError> {
    if topology.contains(cpu) {
        Ok(())
    } else {
        Err(BalanceError::UnknownCpu { field, cpu: cpu.0 })
    }
}

/// `update_misfit_status` (§5.5): the `misfit_task_load` a CPU reports for its
/// running `task`. Zero without asymmetric capacities, when the task is pinned
/// to one CPU, when the CPU already has the biggest capacity the task may use,
/// or when the task fits; else `max(task_h_load, 1)`.
pub fn misfit_task_load(
    topology: &Topology,
    cpu: CpuId,
    capacity: u64,
    task: &TaskCandidate,
) -> u64 {
    let allowed = CpuMask(task.affinity.0 & topology.all_cpus().0);
    let capacity_orig = topology.capacity_orig(cpu);
    if !topology.is_asymmetric()
        || allowed.0.count_ones() <= 1
        || capacity_orig >= topology.max_capacity_in(allowed)
        || task.fits_cpu(capacity, capacity_orig)
    {
        0
    } else {
        task.load_avg.max(1)
    }
}

/// A group's state, from least to most in need of shedding load (the order
/// of Linux's `enum group_type`, without the SMT, asym-packing and
/// imbalanced-by-affinity states Fairway does not model).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// Spare capacity: more tasks could run without hurting anyone.
    #[default]
    HasSpare,
    /// No spare capacity, but tasks do not wait for each other.
    FullyBusy,
    /// A task does not fit its CPU's capacity (asymmetric systems only).
    MisfitTask,
    /// More tasks than CPUs and the CPUs cannot serve them all.
    Overloaded,
}

/// `sg_lb_stats`: one group's sums over its CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupStats {
    /// The group's CPUs.
    pub mask: CpuMask,
    /// Sum of `cpu_load`.
    pub group_load: u64,
    /// Sum of `cpu_util_cfs`.
    pub group_util: u64,
    /// Sum of runnable_avg.
    pub group_runnable: u64,
    /// Sum of `capacity_of`.
    pub group_capacity: u64,
    /// Sum of nr_running.
    pub sum_nr_running: u32,
    /// CPUs with nothing to run.
    pub idle_cpus: u32,
    /// Number of CPUs.
    pub group_weight: u32,
    /// Largest `misfit_task_load` of a CPU (non-local groups, asym domains).
    pub group_misfit_task_load: u64,
    /// Smallest and largest `capacity_of` of its CPUs.
    pub min_capacity: u64,
    /// See `min_capacity`.
    pub max_capacity: u64,
    /// `group_load * 1024 / group_capacity`, for overloaded groups (else 0).
    pub avg_load: u64,
    /// The classification.
    pub group_type: GroupType,
}

/// `group_is_overloaded`: more tasks than CPUs, and util or runnable above the
/// capacity by `imbalance_pct`.
fn group_is_overloaded(imbalance_pct: u64, s: &GroupStats) -> bool {
    s.sum_nr_running > s.group_weight
        && (s.group_capacity * 100 < s.group_util * imbalance_pct
            || s.group_capacity * imbalance_pct < s.group_runnable * 100)
}

/// `group_has_capacity`: fewer tasks than CPUs, or util and runnable well
/// below capacity.
fn group_has_capacity(imbalance_pct: u64, s: &GroupStats) -> bool {
    if s.sum_nr_running < s.group_weight {
        return true;
    }
    if s.group_capacity * imbalance_pct < s.group_runnable * 100 {
        return false;
    }
    s.group_capacity * 100 > s.group_util * imbalance_pct
}

/// `update_sg_lb_stats` + `group_classify` for the group `mask` of `domain`.
/// `local` is the destination CPU's own group (it never counts as misfit).
pub fn group_stats(
    topology: &Topology,
    domain: &SchedDomain,
    mask: CpuMask,
    snapshots: &[CpuSnapshot],
    local: bool,
) -> GroupStats {
    let mut s = GroupStats {
        mask,
        group_load: 0,
        group_util: 0,
        group_runnable: 0,
        group_capacity: 0,
        sum_nr_running: 0,
        idle_cpus: 0,
        group_weight: 0,
        group_misfit_task_load: 0,
        min_capacity: u64::MAX,
        max_capacity: 0,
        avg_load: 0,
        group_type: GroupType::HasSpare,
    };
    for cpu in topology.cpus_in(CpuMask(mask.0 & domain.span.0)) {
        let snapshot = &snapshots[cpu.index()];
        s.group_load += snapshot.load_avg;
        s.group_util += snapshot.cpu_util_cfs(topology.capacity_orig(cpu));
        s.group_runnable += snapshot.runnable_avg;
        s.sum_nr_running += snapshot.nr_running;
        s.group_capacity += snapshot.capacity;
        s.group_weight += 1;
        s.min_capacity = s.min_capacity.min(snapshot.capacity);
        s.max_capacity = s.max_capacity.max(snapshot.capacity);
        if snapshot.nr_running == 0 && snapshot.idle {
            s.idle_cpus += 1;
        }
        if !local && domain.asym_capacity {
            s.group_misfit_task_load = s.group_misfit_task_load.max(snapshot.misfit_task_load);
        }
    }
    let pct = domain.imbalance_pct;
    let kind = if group_is_overloaded(pct, &s) {
        GroupType::Overloaded
    } else if s.group_misfit_task_load > 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(pct, &s) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    };
    // Only an overloaded group's avg_load is computed here (a fully busy one
    // reads 0, so the first such group stays the busiest, as in Linux).
    if kind == GroupType::Overloaded && s.group_capacity > 0 {
        s.avg_load = s.group_load * 1024 / s.group_capacity;
    }
    s.group_type = kind;
    s
}
