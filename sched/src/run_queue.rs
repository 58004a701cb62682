//! One CPU's run queue: the single object the mechanism keeps per CPU behind a
//! lock, and the only scheduler type it names.
//!
//! It dispatches the class operations to the policy chosen at boot, so a new
//! policy plugs in here without any change to the mechanism. It also carries the
//! task-group API (create groups, set shares, move tasks) and the migration of a
//! task's state between CPUs; under round robin groups are accepted and have no
//! effect.

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::fair::group::validate_shares;
use crate::fair::{
    CfsTunables, EevdfTunables, FairMigration, FairRunQueue, GroupError, PickPolicy,
};
use crate::round_robin::RoundRobin;
use crate::task::{GroupId, Nanoseconds, ParamError, TaskId, TaskParams};

/// Group slots (the root included) of a run queue built with [`RunQueue::new`].
pub const DEFAULT_MAX_GROUPS: usize = 16;

/// The policy a run queue is built with, chosen at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// [`RoundRobin`] with the given slice.
    RoundRobin {
        /// Time slice in nanoseconds.
        slice: Nanoseconds,
    },
    /// The fair class with the CFS pick (Linux ≤ v6.5, §1.4).
    Cfs(CfsTunables),
    /// The fair class with the EEVDF pick (Linux ≥ v6.6, §1.5).
    Eevdf(EevdfTunables),
}

/// A task's state in transit from one CPU's run queue to another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskMigration {
    /// Round robin keeps nothing across CPUs but the parameters.
    RoundRobin(TaskParams),
    /// The fair state (vruntime offset, lag, weight, group).
    Fair(FairMigration),
}

#[derive(Debug)]
enum Policy {
    RoundRobin {
        queue: RoundRobin,
        /// Groups handed out so far (round robin ignores them).
        groups: usize,
        max_groups: usize,
        /// Parameters of known tasks, for migration.
        params: alloc::vec::Vec<TaskParams>,
        /// Which tasks are queued (migration refuses queued tasks).
        queued: alloc::vec::Vec<bool>,
    },
    Fair(FairRunQueue),
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
    policy: Policy,
    capacity: CpuCapacity,
}

impl RunQueue {
    /// A run queue for task ids below `max_tasks`, running `kind`, with
    /// [`DEFAULT_MAX_GROUPS`] group slots.
    pub fn new(kind: PolicyKind, max_tasks: usize) -> Self {
        Self::with_groups(kind, max_tasks, DEFAULT_MAX_GROUPS)
    }

    /// A run queue for task ids below `max_tasks` and `max_groups` task groups
    /// (the root group included), running `kind`.
    pub fn with_groups(kind: PolicyKind, max_tasks: usize, max_groups: usize) -> Self {
        let policy = match kind {
            PolicyKind::RoundRobin { slice } => Policy::RoundRobin {
                queue: RoundRobin::new(max_tasks, slice),
                groups: 1,
                max_groups: max_groups.max(1),
                params: alloc::vec![TaskParams::default(); max_tasks],
                queued: alloc::vec![false; max_tasks],
            },
            PolicyKind::Cfs(tunables) => Policy::Fair(FairRunQueue::new(
                PickPolicy::Cfs(tunables),
                max_tasks,
                max_groups,
            )),
            PolicyKind::Eevdf(tunables) => Policy::Fair(FairRunQueue::new(
                PickPolicy::Eevdf(tunables),
                max_tasks,
                max_groups,
            )),
        };
        RunQueue {
            policy,
            capacity: CpuCapacity::default(),
        }
    }

    fn class(&self) -> &dyn SchedClass {
        match &self.policy {
            Policy::RoundRobin { queue, .. } => queue,
            Policy::Fair(fair) => fair,
        }
    }

    fn class_mut(&mut self) -> &mut dyn SchedClass {
        match &mut self.policy {
            Policy::RoundRobin { queue, .. } => queue,
            Policy::Fair(fair) => fair,
        }
    }

    /// The fair run queue, when the policy is CFS or EEVDF (for reports).
    pub fn fair(&self) -> Option<&FairRunQueue> {
        match &self.policy {
            Policy::Fair(fair) => Some(fair),
            Policy::RoundRobin { .. } => None,
        }
    }

    /// Creates a task group under `parent` with `shares` (`cpu.shares`,
    /// 2..=262144). Call it identically on every CPU: the ids then agree.
    pub fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
        match &mut self.policy {
            Policy::Fair(fair) => fair.create_group(parent, shares),
            Policy::RoundRobin {
                groups, max_groups, ..
            } => {
                if parent.index() >= *groups {
                    return Err(GroupError::NoSuchGroup { group: parent.0 });
                }
                validate_shares(shares)?;
                if *groups >= *max_groups {
                    return Err(GroupError::TooManyGroups {
                        capacity: *max_groups,
                    });
                }
                *groups += 1;
                Ok(GroupId((*groups - 1) as u16))
            }
        }
    }

    /// Removes an empty task group.
    pub fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError> {
        match &mut self.policy {
            Policy::Fair(fair) => fair.remove_group(group),
            Policy::RoundRobin { .. } => Ok(()),
        }
    }

    /// Sets a group's `cpu.shares` (2..=262144).
    pub fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        match &mut self.policy {
            Policy::Fair(fair) => fair.set_group_shares(group, shares, now),
            Policy::RoundRobin { .. } => validate_shares(shares).map(|_| ()),
        }
    }

    /// Moves `task` into `group`, whether it sleeps, waits or runs.
    pub fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        match &mut self.policy {
            Policy::Fair(fair) => fair.set_task_group(task, group, now),
            Policy::RoundRobin { .. } => Ok(()),
        }
    }

    /// This CPU's contribution to the group-wide load of `group` (§2.7); the
    /// mechanism sums it over CPUs and hands the sum back with
    /// [`set_group_load_sum`](Self::set_group_load_sum).
    pub fn group_load_contribution(&self, group: GroupId) -> u64 {
        self.fair()
            .map_or(0, |fair| fair.group_load_contribution(group))
    }

    /// Hands this CPU the group-wide load sum of `group` (`tg->load_avg`).
    pub fn set_group_load_sum(&mut self, group: GroupId, sum: u64) {
        if let Policy::Fair(fair) = &mut self.policy {
            fair.set_group_load_sum(group, sum);
        }
    }

    /// Decays the PELT signals of group run queues nothing else updates
    /// (`update_blocked_averages`, §2.7); call it periodically, e.g. every tick
    /// or at load balance.
    pub fn update_blocked_averages(&mut self, now: Nanoseconds) {
        if let Policy::Fair(fair) = &mut self.policy {
            fair.update_blocked_averages(now);
        }
    }

    /// Whether this CPU's fair utilization changed since the last call (the
    /// frequency governor's hook, §2.6).
    pub fn take_util_changed(&mut self) -> bool {
        match &mut self.policy {
            Policy::Fair(fair) => fair.take_util_changed(),
            Policy::RoundRobin { .. } => false,
        }
    }

    /// Takes a known task that is not queued off this CPU; `None` if it is
    /// unknown or still queued.
    pub fn migrate_task_out(&mut self, task: TaskId) -> Option<TaskMigration> {
        match &mut self.policy {
            Policy::Fair(fair) => fair.migrate_task_out(task).map(TaskMigration::Fair),
            Policy::RoundRobin {
                queue,
                params,
                queued,
                ..
            } => {
                if *queued.get(task.index())? {
                    return None;
                }
                let p = params[task.index()];
                queue.task_dead(task);
                Some(TaskMigration::RoundRobin(p))
            }
        }
    }

    /// Makes a migrated task known here; then enqueue it with
    /// `EnqueueFlags { migrated: true, .. }`.
    pub fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &TaskMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        match (&mut self.policy, migration) {
            (Policy::Fair(fair), TaskMigration::Fair(m)) => fair.migrate_task_in(task, m, now),
            (Policy::RoundRobin { .. }, TaskMigration::RoundRobin(p)) => {
                self.task_new(task, p, now)
            }
            (Policy::Fair(_), TaskMigration::RoundRobin(p)) => self.task_new(task, p, now),
            (Policy::RoundRobin { .. }, TaskMigration::Fair(m)) => {
                let p = TaskParams {
                    group: m.group,
                    ..TaskParams::default()
                };
                self.task_new(task, &p, now)
            }
        }
    }

    /// Sets the capacity and frequency this CPU runs at from now on, which scales
    /// the PELT clock (§2.3).
    pub fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        self.capacity = capacity;
        if let Policy::Fair(fair) = &mut self.policy {
            fair.set_cpu_capacity(capacity);
        }
    }

    /// The capacity last set.
    pub fn cpu_capacity(&self) -> CpuCapacity {
        self.capacity
    }

    /// The signals of `task`, which must be known to this run queue.
    pub fn task_signals(&self, task: TaskId) -> TaskSignals {
        match self.fair() {
            Some(fair) => match fair.task_entity(task) {
                Some(entity) => TaskSignals {
                    vruntime: fair.task_vruntime(task),
                    sum_exec_runtime: entity.sum_exec_runtime,
                    util_avg: entity.avg.util_avg,
                    load_avg: entity.avg.load_avg,
                    runnable_avg: entity.avg.runnable_avg,
                    util_est: entity.avg.util_est.ewma,
                },
                None => TaskSignals::default(),
            },
            None => TaskSignals::default(),
        }
    }

    /// The run queue's aggregate signals.
    pub fn signals(&self) -> RunQueueSignals {
        let nr_running = self.class().nr_running();
        match self.fair().and_then(|fair| fair.group_queue(GroupId::ROOT)) {
            Some(root) => RunQueueSignals {
                nr_running,
                util_avg: root.pelt.avg.util_avg,
                load_avg: root.pelt.avg.load_avg,
                runnable_avg: root.pelt.avg.runnable_avg,
                util_est: root.pelt.avg.util_est.enqueued,
            },
            None => RunQueueSignals {
                nr_running,
                ..RunQueueSignals::default()
            },
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
        if let Policy::RoundRobin { params: known, .. } = &mut self.policy
            && let Some(slot) = known.get_mut(task.index())
        {
            *slot = *params;
        }
        self.class_mut().task_new(task, params, now)
    }
    fn task_dead(&mut self, task: TaskId) {
        self.class_mut().task_dead(task)
    }
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        if let Policy::RoundRobin { queued, .. } = &mut self.policy {
            queued[task.index()] = true;
        }
        self.class_mut().enqueue_task(task, now, flags)
    }
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        if let Policy::RoundRobin { queued, .. } = &mut self.policy {
            queued[task.index()] = false;
        }
        self.class_mut().dequeue_task(task, now, flags)
    }
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.class_mut().pick_next_task(now)
    }
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.class_mut().put_prev_task(task, now)
    }
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.class_mut().set_next_task(task, now)
    }
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        self.class_mut().task_tick(task, now)
    }
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        self.class_mut().wakeup_preempt(current, woken, now)
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.class_mut().yield_task(task, now)
    }
    fn nr_running(&self) -> usize {
        self.class().nr_running()
    }
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        self.class().slice_remaining(task, now)
    }
}

#[cfg(test)]
mod conformance;
