//! Picking the tasks one balancing pass moves (`detach_tasks`,
//! `can_migrate_task`) and deciding when only pushing the running task
//! helps (`need_active_balance`).

use super::load_balance::{BalancePlan, IdleType, MigrationType, NR_MIGRATE};
use super::stats::{CpuSnapshot, TaskCandidate};
use crate::task::TaskId;
use crate::topology::{SchedDomain, Topology};

/// The tasks one pass moves (at most [`NR_MIGRATE`]), without allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MovedTasks {
    tasks: [TaskId; NR_MIGRATE],
    len: u8,
}

impl Default for MovedTasks {
    fn default() -> Self {
        MovedTasks {
            tasks: [TaskId(0); NR_MIGRATE],
            len: 0,
        }
    }
}

impl MovedTasks {
    /// The tasks, in the order they were detached.
    pub fn as_slice(&self) -> &[TaskId] {
        &self.tasks[..usize::from(self.len)]
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether no task moves.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `task`; false when full.
    pub(crate) fn push_task(&mut self, task: TaskId) -> bool {
        let Some(slot) = self.tasks.get_mut(usize::from(self.len)) else {
            return false;
        };
        *slot = task;
        self.len += 1;
        true
    }
}

/// What [`detach_tasks`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetachOutcome {
    /// The tasks to move from source to destination.
    pub moved: MovedTasks,
    /// The candidates the walk looked at and skipped, in walk order. Linux's
    /// `detach_tasks` moves each skipped task to the head of `cfs_tasks`
    /// (`list_move`), where the most recently run tasks are, so that the
    /// next walk, which starts from the tail, tries the others first.
    pub rotated: MovedTasks,
    /// No candidate was allowed on the destination (`LBF_ALL_PINNED`).
    pub all_pinned: bool,
    /// Imbalance left over.
    pub imbalance_left: u64,
}

/// `detach_tasks`: walk the source's candidates, least recently run first
/// (Linux takes them from the tail of `cfs_tasks`), at most `loop_max =
/// min(NR_MIGRATE, nr_running)` of them (the running task counts, as it is
/// on Linux's list), skipping tasks not allowed on the destination, the
/// running task, and cache-hot tasks while `nr_balance_failed <=
/// cache_nice_tries`; count each against the imbalance (a task bigger than
/// the imbalance, halved once per failed attempt, is skipped); stop after
/// one task when newly idle, when the imbalance is covered, or before
/// emptying the source. Skipped tasks are reported in
/// [`DetachOutcome::rotated`] for the mechanism to move to the head of its
/// list.
pub fn detach_tasks(
    topology: &Topology,
    domain: &SchedDomain,
    plan: &BalancePlan,
    idle: IdleType,
    source: &CpuSnapshot,
    candidates: &[TaskCandidate],
    nr_balance_failed: u32,
) -> DetachOutcome {
    let mut outcome = DetachOutcome {
        all_pinned: true,
        imbalance_left: plan.imbalance,
        ..DetachOutcome::default()
    };
    if source.nr_running <= 1 || plan.imbalance == 0 {
        return outcome;
    }
    let mut left = source.nr_running;
    let shift = nr_balance_failed.min(63);
    let capacity_orig = topology.capacity_orig(plan.source);
    // `can_migrate_task` and the migration type's test; on success the task
    // is counted against the imbalance.
    let fits = |task: &TaskCandidate, outcome: &mut DetachOutcome| {
        if !task.affinity.contains(plan.destination) {
            return false;
        }
        outcome.all_pinned = false;
        if task.running || (task.cache_hot && nr_balance_failed <= domain.cache_nice_tries) {
            return false;
        }
        let imbalance = &mut outcome.imbalance_left;
        match plan.migration_type {
            MigrationType::Load => {
                let load = task.load_avg.max(1);
                if load >> shift > *imbalance {
                    return false;
                }
                *imbalance = imbalance.saturating_sub(load);
            }
            MigrationType::Util => {
                let util = task.task_util_est();
                if util >> shift > *imbalance {
                    return false;
                }
                *imbalance = imbalance.saturating_sub(util);
            }
            MigrationType::Task => *imbalance = imbalance.saturating_sub(1),
            MigrationType::Misfit => {
                if task.fits_cpu(source.capacity, capacity_orig) {
                    return false;
                }
                *imbalance = 0;
            }
        }
        true
    };
    for task in candidates
        .iter()
        .take(NR_MIGRATE.min(source.nr_running as usize))
    {
        if idle != IdleType::NotIdle && left <= 1 {
            break;
        }
        if !fits(task, &mut outcome) {
            // `goto next`: to the head of the list.
            let _ = outcome.rotated.push_task(task.task);
            continue;
        }
        if !outcome.moved.push_task(task.task) {
            break;
        }
        left -= 1;
        if idle == IdleType::NewlyIdle || outcome.imbalance_left == 0 {
            break;
        }
    }
    outcome
}

/// `need_active_balance`: after nothing could be detached, whether to push
/// the source's running task: always for misfit; for an idle destination
/// when the source runs one task, its capacity is reduced by RT/IRQ pressure
/// (`check_cpu_capacity`) and the destination offers more by imbalance_pct;
/// or after more than `cache_nice_tries + 2` failed attempts.
pub fn need_active_balance(
    topology: &Topology,
    domain: &SchedDomain,
    plan: &BalancePlan,
    idle: IdleType,
    source: &CpuSnapshot,
    destination: &CpuSnapshot,
    nr_balance_failed: u32,
) -> bool {
    if plan.migration_type == MigrationType::Misfit {
        return true;
    }
    let reduced =
        source.capacity * domain.imbalance_pct < topology.capacity_orig(plan.source) * 100;
    if idle != IdleType::NotIdle
        && source.nr_running == 1
        && reduced
        && source.capacity * domain.imbalance_pct < destination.capacity * 100
    {
        return true;
    }
    nr_balance_failed > domain.cache_nice_tries + 2
}
