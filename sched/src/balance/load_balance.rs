//! One load-balancing pass in one domain (`sched_balance_rq`, formerly
//! `load_balance`): find the busiest group and its busiest run queue,
//! compute the imbalance and what kind of thing to move, and pick the tasks.
//!
//! Rules follow Linux's reworked balancer (Vincent Guittot, "sched/fair:
//! Rework load_balance()", 0b0695f2b34a, v5.5) and its decision matrix
//! (a658353167bf, 2022), busiest group in rows, local group in columns:
//!
//! ```text
//!   busiest \ local  has_spare   fully_busy  overloaded
//!   has_spare        nr_idle     balanced    balanced
//!   fully_busy       nr_idle     nr_idle     balanced
//!   misfit_task      force       N/A         N/A
//!   overloaded       force       force       avg_load
//! ```

use super::stats::{CpuSnapshot, GroupStats, GroupType, group_stats};
use crate::task::{CpuId, CpuMask};
use crate::topology::{SchedDomain, Topology, capacity_greater};

/// `sysctl_sched_nr_migrate`: the most tasks one pass looks at and moves.
pub const NR_MIGRATE: usize = 32;

/// `enum cpu_idle_type`: why the destination CPU balances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    /// Periodic balance from a busy CPU.
    NotIdle,
    /// Periodic balance from an idle CPU.
    Idle,
    /// The CPU is about to go idle (`sched_balance_newidle`).
    NewlyIdle,
}

/// What the imbalance counts (`enum migration_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    /// Move load (sum of `task_h_load`) until the imbalance is covered.
    Load,
    /// Move utilization (sum of `task_util_est`).
    Util,
    /// Move a number of tasks.
    Task,
    /// Move the misfit task to a bigger CPU (imbalance 1).
    Misfit,
}

/// The source, destination and amount a pass settled on, before picking tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BalancePlan {
    /// The busiest run queue, tasks come from here.
    pub source: CpuId,
    /// The balancing CPU, tasks go here.
    pub destination: CpuId,
    /// What `imbalance` counts.
    pub migration_type: MigrationType,
    /// How much to move, in units of `migration_type`.
    pub imbalance: u64,
}

/// The answer of [`find_busiest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusiestOutcome {
    /// `should_we_balance` said another CPU of the local group balances.
    NotThisCpu,
    /// Nothing worth moving (`out_balanced`).
    Balanced,
    /// Every candidate source was excluded (all its tasks pinned).
    NoSource,
    /// Move according to the plan.
    Plan(BalancePlan),
}

/// `sd_lb_stats`: the local and busiest groups and the domain's totals.
struct DomainStats {
    local: GroupStats,
    busiest: Option<GroupStats>,
    total_load: u64,
    total_capacity: u64,
}

impl DomainStats {
    /// `sds->avg_load`: the domain's load per capacity.
    fn avg_load(&self) -> u64 {
        self.total_load * 1024 / self.total_capacity.max(1)
    }
}

/// `should_we_balance`: newly idle CPUs always balance; otherwise only the
/// first idle CPU of the local group, or its first CPU if none is idle.
fn should_we_balance(
    topology: &Topology,
    domain: &SchedDomain,
    destination: CpuId,
    idle: IdleType,
    snapshots: &[CpuSnapshot],
) -> bool {
    if idle == IdleType::NewlyIdle {
        return snapshots[destination.index()].nr_running == 0;
    }
    let group = topology.group_of(domain, destination);
    let first_idle = topology.cpus_in(group).find(|c| snapshots[c.index()].idle);
    first_idle.or_else(|| topology.cpus_in(group).next()) == Some(destination)
}

/// `update_sd_pick_busiest`: whether group `candidate` is busier than `busiest`.
fn pick_busiest(
    domain: &SchedDomain,
    destination_capacity: u64,
    local: &GroupStats,
    candidate: &GroupStats,
    busiest: Option<&GroupStats>,
) -> bool {
    if candidate.sum_nr_running == 0 {
        return false;
    }
    if candidate.group_type == GroupType::MisfitTask
        && (!capacity_greater(destination_capacity, candidate.max_capacity)
            || local.group_type != GroupType::HasSpare)
    {
        return false;
    }
    if let Some(busiest) = busiest {
        if candidate.group_type != busiest.group_type {
            return candidate.group_type > busiest.group_type;
        }
        let busier = match candidate.group_type {
            // Fully busy groups read avg_load 0: the first one stays.
            GroupType::Overloaded | GroupType::FullyBusy => candidate.avg_load > busiest.avg_load,
            GroupType::MisfitTask => {
                candidate.group_misfit_task_load >= busiest.group_misfit_task_load
            }
            GroupType::HasSpare => {
                candidate.idle_cpus < busiest.idle_cpus
                    || (candidate.idle_cpus == busiest.idle_cpus
                        && candidate.sum_nr_running > busiest.sum_nr_running)
            }
        };
        if !busier {
            return false;
        }
    }
    // No more than one task per CPU on bigger CPUs: do not pull to a smaller CPU.
    !(domain.asym_capacity
        && candidate.group_type <= GroupType::FullyBusy
        && capacity_greater(candidate.min_capacity, destination_capacity))
}

/// `sibling_imbalance` (v6.6+): tasks to move so both groups run the same
/// number of tasks per CPU, doubled (the caller halves it).
fn sibling_imbalance(idle: IdleType, busiest: &GroupStats, local: &GroupStats) -> u64 {
    if idle == IdleType::NotIdle || busiest.sum_nr_running == 0 {
        return 0;
    }
    let (b_cpus, l_cpus) = (
        u64::from(busiest.group_weight),
        u64::from(local.group_weight),
    );
    let (b_nr, l_nr) = (
        u64::from(busiest.sum_nr_running),
        u64::from(local.sum_nr_running),
    );
    if b_cpus == l_cpus {
        return b_nr.saturating_sub(l_nr);
    }
    let imbalance = (l_cpus * b_nr).saturating_sub(b_cpus * l_nr);
    let imbalance = (2 * imbalance + l_cpus + b_cpus) / (l_cpus + b_cpus);
    if imbalance <= 1 && l_nr == 0 && b_nr > 1 {
        2
    } else {
        imbalance
    }
}

/// `sched_balance_find_src_group` + `calculate_imbalance` +
/// `sched_balance_find_src_rq` for `destination` in `domain`. CPUs in
/// `excluded` are not considered as sources (Linux's `LBF_ALL_PINNED` retry).
///
/// The groups are visited in the order of `destination`'s own group list,
/// which starts at its local group and wraps around
/// ([`Topology::for_each_group`]); of two equally busy groups the first
/// stays the busiest, as in `update_sd_pick_busiest`.
///
/// With `energy_aware` (EAS runs and the root domain is not overutilized,
/// §5.5) only a misfit busiest group is balanced; anything else is left
/// where energy-aware wake-ups placed it.
pub fn find_busiest(
    topology: &Topology,
    domain: &SchedDomain,
    destination: CpuId,
    idle: IdleType,
    energy_aware: bool,
    snapshots: &[CpuSnapshot],
    excluded: CpuMask,
) -> BusiestOutcome {
    if !should_we_balance(topology, domain, destination, idle, snapshots) {
        return BusiestOutcome::NotThisCpu;
    }
    let destination_capacity = snapshots[destination.index()].capacity;
    let local_mask = topology.group_of(domain, destination);
    let local = group_stats(topology, domain, local_mask, snapshots, true);
    let mut stats = DomainStats {
        local,
        busiest: None,
        total_load: 0,
        total_capacity: 0,
    };
    topology.for_each_group(domain, destination, |mask| {
        if mask == local_mask {
            stats.total_load += stats.local.group_load;
            stats.total_capacity += stats.local.group_capacity;
            return;
        }
        // Excluded CPUs (all tasks pinned) leave the statistics (`env->cpus`).
        let usable = CpuMask(mask.0 & !excluded.0);
        if usable.0 == 0 {
            return;
        }
        let group = group_stats(topology, domain, usable, snapshots, false);
        stats.total_load += group.group_load;
        stats.total_capacity += group.group_capacity;
        if pick_busiest(
            domain,
            destination_capacity,
            &stats.local,
            &group,
            stats.busiest.as_ref(),
        ) {
            stats.busiest = Some(group);
        }
    });
    let Some(busiest) = stats.busiest else {
        return if excluded.0 == 0 {
            BusiestOutcome::Balanced
        } else {
            BusiestOutcome::NoSource
        };
    };
    if energy_aware && busiest.group_type != GroupType::MisfitTask {
        return BusiestOutcome::Balanced;
    }
    let Some((migration_type, imbalance)) = group_imbalance(domain, idle, &mut stats, &busiest)
    else {
        return BusiestOutcome::Balanced;
    };
    if imbalance == 0 {
        return BusiestOutcome::Balanced;
    }
    let source = find_busiest_queue(
        topology,
        domain,
        destination_capacity,
        snapshots,
        busiest.mask,
        migration_type,
        imbalance,
    );
    match source {
        Some(source) => BusiestOutcome::Plan(BalancePlan {
            source,
            destination,
            migration_type,
            imbalance,
        }),
        None => BusiestOutcome::Balanced,
    }
}

/// The balanced/force checks of `sched_balance_find_src_group`, then
/// `calculate_imbalance`. `None` means balanced.
fn group_imbalance(
    domain: &SchedDomain,
    idle: IdleType,
    stats: &mut DomainStats,
    busiest: &GroupStats,
) -> Option<(MigrationType, u64)> {
    let local = stats.local;
    let force = if busiest.group_type == GroupType::MisfitTask {
        true
    } else if local.group_type > busiest.group_type {
        return None;
    } else {
        if local.group_type == GroupType::Overloaded {
            // Both overloaded: balance only if busiest is above local by imbalance_pct.
            let average = stats.avg_load();
            if local.avg_load >= busiest.avg_load
                || local.avg_load >= average
                || 100 * busiest.avg_load <= domain.imbalance_pct * local.avg_load
            {
                return None;
            }
        }
        domain.prefer_sibling
            && local.group_type == GroupType::HasSpare
            && sibling_imbalance(idle, busiest, &local) > 1
    };
    if !force && busiest.group_type != GroupType::Overloaded {
        if idle == IdleType::NotIdle {
            // Not overloaded: let an idle CPU pull instead.
            return None;
        }
        if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
            return None;
        }
        if busiest.sum_nr_running == 1 {
            return None;
        }
    }
    calculate_imbalance(domain, idle, stats, busiest)
}

/// `calculate_imbalance`: what to move and how much.
fn calculate_imbalance(
    domain: &SchedDomain,
    idle: IdleType,
    stats: &mut DomainStats,
    busiest: &GroupStats,
) -> Option<(MigrationType, u64)> {
    let average = stats.avg_load();
    let local = &mut stats.local;
    if busiest.group_type == GroupType::MisfitTask {
        return Some((MigrationType::Misfit, 1));
    }
    if local.group_type == GroupType::HasSpare {
        if busiest.group_type > GroupType::FullyBusy && !domain.share_cache {
            // Fill the local group's spare capacity with utilization.
            let spare = local.group_capacity.max(local.group_util) - local.group_util;
            if spare == 0 && idle != IdleType::NotIdle {
                return Some((MigrationType::Task, 1));
            }
            return Some((MigrationType::Util, spare));
        }
        let imbalance = if busiest.group_weight == 1 || domain.prefer_sibling {
            sibling_imbalance(idle, busiest, local)
        } else {
            u64::from(local.idle_cpus.saturating_sub(busiest.idle_cpus))
        };
        return Some((MigrationType::Task, imbalance >> 1));
    }
    if local.group_type < GroupType::Overloaded {
        local.avg_load = local.group_load * 1024 / local.group_capacity.max(1);
        if local.avg_load >= busiest.avg_load || local.avg_load >= average {
            return None;
        }
    }
    let from_busiest = (busiest.avg_load.saturating_sub(average)) * busiest.group_capacity;
    let to_local = (average.saturating_sub(local.avg_load)) * local.group_capacity;
    Some((MigrationType::Load, from_busiest.min(to_local) / 1024))
}

/// `sched_balance_find_src_rq`: the busiest CPU of the busiest group for the
/// migration type.
fn find_busiest_queue(
    topology: &Topology,
    domain: &SchedDomain,
    destination_capacity: u64,
    snapshots: &[CpuSnapshot],
    group: CpuMask,
    migration_type: MigrationType,
    imbalance: u64,
) -> Option<CpuId> {
    let mut busiest: Option<(CpuId, u64, u64)> = None; // (cpu, metric, capacity)
    for cpu in topology.cpus_in(CpuMask(group.0 & domain.span.0)) {
        let s = &snapshots[cpu.index()];
        let nr = s.nr_running;
        if nr == 0 {
            continue;
        }
        // A lone task would not be better off on a CPU that is not bigger.
        if domain.asym_capacity && !capacity_greater(destination_capacity, s.capacity) && nr == 1 {
            continue;
        }
        let (metric, busier) = match migration_type {
            MigrationType::Load => {
                // A lone task heavier than the imbalance stays, unless capacity is reduced.
                let reduced = s.capacity * domain.imbalance_pct < topology.capacity_orig(cpu) * 100;
                if nr == 1 && s.load_avg > imbalance && !reduced {
                    continue;
                }
                // Compare load per capacity: load * busiest_capacity > busiest_load * capacity.
                let busier = busiest.is_none_or(|(_, load, capacity)| {
                    u128::from(s.load_avg) * u128::from(capacity)
                        > u128::from(load) * u128::from(s.capacity)
                });
                (s.load_avg, busier)
            }
            MigrationType::Util => {
                if nr <= 1 {
                    continue;
                }
                let util = s.cpu_util_cfs(topology.capacity_orig(cpu));
                (util, busiest.is_none_or(|(_, best, _)| util > best))
            }
            MigrationType::Task => {
                let nr = u64::from(nr);
                (nr, busiest.is_none_or(|(_, best, _)| nr > best))
            }
            MigrationType::Misfit => {
                let load = s.misfit_task_load;
                (load, load > busiest.map_or(0, |(_, best, _)| best))
            }
        };
        if busier {
            busiest = Some((cpu, metric, s.capacity));
        }
    }
    busiest.map(|(cpu, _, _)| cpu)
}
