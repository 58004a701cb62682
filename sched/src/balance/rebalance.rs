//! When to balance and the per-domain bookkeeping around one pass: periodic
//! balancing walks the domains bottom-up, each on its own interval
//! (`sched_balance_domains`, sched-domains.rst); a CPU about to go idle pulls
//! at once (`sched_balance_newidle`). The result is a [`BalanceDecision`].

use super::detach::{MovedTasks, detach_tasks, need_active_balance};
use super::load_balance::{
    BalancePlan, BusiestOutcome, IdleType, MigrationType, NR_MIGRATE, find_busiest,
};
use super::stats::{BalanceError, CpuSnapshot, TaskCandidate, check_cpu, check_snapshots};
use crate::task::{CpuId, CpuMask, Nanoseconds, TaskId};
use crate::topology::{DomainLevel, SchedDomain, Topology};

/// Nanoseconds per millisecond (Fairway counts jiffies as 1 ms, HZ = 1000).
const NS_PER_MS: u64 = 1_000_000;

/// The longest wait before balancing is looked at again (`jiffies + 60 * HZ`).
const MAX_NEXT_BALANCE_NS: u64 = 60_000 * NS_PER_MS;

/// A balanceable task slot used when none is given (padding for the buffer).
const NO_CANDIDATE: TaskCandidate = TaskCandidate {
    task: TaskId(0),
    load_avg: 0,
    util_avg: 0,
    util_est: 0,
    affinity: CpuMask(0),
    running: false,
    cache_hot: false,
    uclamp: [0, 1024],
};

/// One domain's balancing state for one CPU (the runtime fields of
/// `struct sched_domain`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainBalanceState {
    /// When this domain was last balanced.
    pub last_balance: Nanoseconds,
    /// Current interval in ms, between `min_interval` and `max_interval`:
    /// reset after an imbalance was found, doubled after a balanced pass.
    pub balance_interval_ms: u32,
    /// Consecutive passes that found an imbalance but moved nothing.
    pub nr_balance_failed: u32,
}

/// One CPU's balancing state; the mechanism keeps one per CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuBalanceState {
    /// Per [`DomainLevel`] (indexed by `level as usize`).
    pub levels: [DomainBalanceState; 2],
    /// `rq->next_balance`: when periodic balancing is due next.
    pub next_balance: Nanoseconds,
    /// EAS runs and the root domain is not overutilized (§5.5), as the
    /// mechanism last saw it: balancing then moves only misfit tasks and
    /// leaves the rest where energy-aware wake-ups put them. The mechanism
    /// sets it before each pass.
    pub energy_aware: bool,
}

impl CpuBalanceState {
    /// Whether periodic balancing is due at the tick at `now` (Linux's
    /// `trigger_load_balance`: `time_after_eq(jiffies, rq->next_balance)`).
    pub fn balance_due(&self, now: Nanoseconds) -> bool {
        now >= self.next_balance
    }

    /// Fresh state at boot time `now` (each interval starts at `min_interval`).
    pub fn new(topology: &Topology, cpu: CpuId, now: Nanoseconds) -> Self {
        let mut state = CpuBalanceState {
            next_balance: now,
            ..CpuBalanceState::default()
        };
        for level in DomainLevel::ALL {
            if let Some(domain) = topology.domain(cpu, level) {
                state.levels[level as usize] = DomainBalanceState {
                    last_balance: now,
                    balance_interval_ms: domain.min_interval_ms,
                    nr_balance_failed: 0,
                };
            }
        }
        state
    }
}

/// Tasks to move from one CPU to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The domain level that found the imbalance.
    pub level: DomainLevel,
    /// Where the tasks are now (the busiest run queue).
    pub source: CpuId,
    /// Where they go (the balancing CPU).
    pub destination: CpuId,
    /// What the imbalance counted.
    pub migration_type: MigrationType,
    /// The imbalance found, in units of `migration_type`.
    pub imbalance: u64,
    /// The tasks: detach from `source`, attach to `destination` (§2.6).
    pub tasks: MovedTasks,
    /// Active balance: `tasks` is the source's running task, which the
    /// mechanism must preempt (stopper) before moving it.
    pub active: bool,
}

/// A source CPU's tasks as balancing walks them: the mechanism's view of
/// Linux's `rq->cfs_tasks`, the list of a run queue's fair tasks with the
/// most recently picked or enqueued at its head.
pub trait TaskList {
    /// Fills `buffer` with the fair tasks on `cpu`'s run queue from the tail
    /// of its list (the task that ran least recently first, the running task
    /// at its place) and returns how many.
    fn candidates(&mut self, cpu: CpuId, buffer: &mut [TaskCandidate]) -> usize;

    /// Moves `tasks`, in this order, to the head of `cpu`'s list: the tasks
    /// a `detach_tasks` walk looked at and skipped, which Linux's walk moves
    /// there one by one (`list_move`), so that the next walk, which starts
    /// from the tail, tries the others first.
    fn rotate(&mut self, cpu: CpuId, tasks: &[TaskId]);
}

/// A closure that lists candidates keeps no list of its own: nothing to
/// rotate. (Tests that look at one pass use this; the kernel and the
/// simulator keep the list and implement [`TaskList`] themselves.)
impl<F> TaskList for F
where
    F: FnMut(CpuId, &mut [TaskCandidate]) -> usize,
{
    fn candidates(&mut self, cpu: CpuId, buffer: &mut [TaskCandidate]) -> usize {
        self(cpu, buffer)
    }

    fn rotate(&mut self, _cpu: CpuId, _tasks: &[TaskId]) {}
}

/// What a balancing call decided.
#[must_use = "the mechanism must carry out the migration and remember next_balance"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BalanceDecision {
    /// The tasks to move, if any.
    pub migration: Option<Migration>,
    /// When to call [`rebalance_domains`] next.
    pub next_balance: Nanoseconds,
}

/// `get_sd_balance_interval`: the interval in ns, times `busy_factor` (and
/// one jiffy less, to desynchronise levels) when the CPU is busy, clamped to
/// 1 ms .. `max_load_balance_interval` (HZ * nr_cpus / 10 jiffies).
pub fn balance_interval_ns(
    domain: &SchedDomain,
    interval_ms: u32,
    busy: bool,
    nr_cpus: usize,
) -> Nanoseconds {
    let mut interval = u64::from(interval_ms);
    if busy {
        interval = (interval * u64::from(domain.busy_factor)).saturating_sub(1);
    }
    let max = (100 * nr_cpus as u64).max(1);
    interval.clamp(1, max) * NS_PER_MS
}

/// Periodic balancing of `cpu` at `now` (`sched_balance_domains`): each
/// domain whose interval has elapsed gets a pass, bottom-up. Returns at the
/// first pass that moves tasks (the caller applies it and the higher levels
/// stay due for the next call). `tasks.candidates(cpu, buffer)` fills `buffer` with
/// the queued fair tasks of `cpu` (locked by the caller) and returns how many.
pub fn rebalance_domains(
    topology: &Topology,
    state: &mut CpuBalanceState,
    cpu: CpuId,
    now: Nanoseconds,
    snapshots: &[CpuSnapshot],
    tasks: &mut impl TaskList,
) -> Result<BalanceDecision, BalanceError> {
    check_snapshots(topology, snapshots)?;
    check_cpu(topology, "cpu", cpu)?;
    let mut idle = if snapshots[cpu.index()].idle {
        IdleType::Idle
    } else {
        IdleType::NotIdle
    };
    let mut next_balance = now + MAX_NEXT_BALANCE_NS;
    let mut migration = None;
    let mut continue_balancing = true;
    for level in DomainLevel::ALL {
        let Some(domain) = topology.domain(cpu, level) else {
            continue;
        };
        let domain_state = &mut state.levels[level as usize];
        let busy = idle != IdleType::Idle;
        let interval = balance_interval_ns(
            &domain,
            domain_state.balance_interval_ms,
            busy,
            topology.nr_cpus(),
        );
        if continue_balancing
            && migration.is_none()
            && now >= domain_state.last_balance.saturating_add(interval)
        {
            let (found, go_on) = load_balance(
                topology,
                &domain,
                domain_state,
                cpu,
                idle,
                state.energy_aware,
                snapshots,
                tasks,
            );
            continue_balancing = go_on;
            domain_state.last_balance = now;
            if found.is_some() {
                idle = IdleType::NotIdle;
                migration = found;
            }
        }
        let interval = balance_interval_ns(
            &domain,
            domain_state.balance_interval_ms,
            idle != IdleType::Idle,
            topology.nr_cpus(),
        );
        next_balance = next_balance.min(domain_state.last_balance.saturating_add(interval));
    }
    state.next_balance = next_balance;
    Ok(BalanceDecision {
        migration,
        next_balance,
    })
}

/// Newly-idle balancing (`sched_balance_newidle`): `cpu` has nothing to run;
/// unless no CPU has a waiting or misfit task (`rd->overloaded` clear), walk the domains bottom-up and pull
/// (one task, the newly-idle rule) from the first imbalance found. Balance
/// intervals are ignored and not changed.
pub fn newidle_balance(
    topology: &Topology,
    state: &mut CpuBalanceState,
    cpu: CpuId,
    snapshots: &[CpuSnapshot],
    tasks: &mut impl TaskList,
) -> Result<BalanceDecision, BalanceError> {
    check_snapshots(topology, snapshots)?;
    check_cpu(topology, "cpu", cpu)?;
    let mut migration = None;
    let overloaded = snapshots
        .iter()
        .any(|s| s.nr_running > 1 || s.misfit_task_load > 0);
    if snapshots[cpu.index()].nr_running == 0 && overloaded {
        for level in DomainLevel::ALL {
            let Some(domain) = topology.domain(cpu, level) else {
                continue;
            };
            let energy_aware = state.energy_aware;
            let domain_state = &mut state.levels[level as usize];
            let (found, _) = load_balance(
                topology,
                &domain,
                domain_state,
                cpu,
                IdleType::NewlyIdle,
                energy_aware,
                snapshots,
                tasks,
            );
            if found.is_some() {
                migration = found;
                break;
            }
        }
    }
    Ok(BalanceDecision {
        migration,
        next_balance: state.next_balance,
    })
}

/// One pass in one domain (`sched_balance_rq`). Returns the migration, if
/// any, and whether higher domains should still be balanced.
#[allow(clippy::too_many_arguments)]
fn load_balance(
    topology: &Topology,
    domain: &SchedDomain,
    state: &mut DomainBalanceState,
    destination: CpuId,
    idle: IdleType,
    energy_aware: bool,
    snapshots: &[CpuSnapshot],
    tasks: &mut impl TaskList,
) -> (Option<Migration>, bool) {
    let mut excluded = CpuMask(0);
    let mut buffer = [NO_CANDIDATE; NR_MIGRATE];
    let local = topology.group_of(domain, destination);
    loop {
        let plan = match find_busiest(
            topology,
            domain,
            destination,
            idle,
            energy_aware,
            snapshots,
            excluded,
        ) {
            BusiestOutcome::Plan(plan) => plan,
            BusiestOutcome::NotThisCpu => {
                out_balanced(domain, state, idle, true);
                return (None, false);
            }
            BusiestOutcome::Balanced => {
                out_balanced(domain, state, idle, true);
                return (None, true);
            }
            BusiestOutcome::NoSource => {
                // Every busier CPU had only pinned tasks (out_all_pinned).
                out_balanced(domain, state, idle, true);
                return (None, true);
            }
        };
        let source = &snapshots[plan.source.index()];
        let n = tasks.candidates(plan.source, &mut buffer).min(NR_MIGRATE);
        let candidates = &buffer[..n];
        let outcome = detach_tasks(
            topology,
            domain,
            &plan,
            idle,
            source,
            candidates,
            state.nr_balance_failed,
        );
        if !outcome.rotated.is_empty() {
            tasks.rotate(plan.source, outcome.rotated.as_slice());
        }
        if !outcome.moved.is_empty() {
            state.nr_balance_failed = 0;
            state.balance_interval_ms = domain.min_interval_ms;
            return (Some(migration(domain, &plan, outcome.moved, false)), true);
        }
        if source.nr_running > 1 && outcome.all_pinned {
            // Retry without this source while CPUs outside the local group remain.
            excluded.0 |= 1 << plan.source.0;
            if domain.span.0 & !excluded.0 & !local.0 != 0 {
                continue;
            }
            out_balanced(domain, state, idle, true);
            return (None, true);
        }
        if idle != IdleType::NewlyIdle {
            state.nr_balance_failed += 1;
        }
        let destination_snapshot = &snapshots[destination.index()];
        let active = need_active_balance(
            topology,
            domain,
            &plan,
            idle,
            source,
            destination_snapshot,
            state.nr_balance_failed,
        );
        if active {
            let running = candidates.iter().find(|t| t.running);
            match running {
                Some(task) if task.affinity.contains(destination) => {
                    state.nr_balance_failed = domain.cache_nice_tries + 1;
                    state.balance_interval_ms = domain.min_interval_ms;
                    let mut moved = MovedTasks::default();
                    let _ = moved.push_task(task.task);
                    return (Some(migration(domain, &plan, moved, true)), true);
                }
                // The running task may not go there (out_one_pinned).
                _ => {
                    out_balanced(domain, state, idle, false);
                    return (None, true);
                }
            }
        }
        state.balance_interval_ms = domain.min_interval_ms;
        return (None, true);
    }
}

/// The `out_balanced` / `out_one_pinned` tail: forget failures (unless only
/// the running task was pinned) and, except when newly idle, back off by
/// doubling the interval up to `max_interval`.
fn out_balanced(
    domain: &SchedDomain,
    state: &mut DomainBalanceState,
    idle: IdleType,
    reset_failures: bool,
) {
    if reset_failures {
        state.nr_balance_failed = 0;
    }
    if idle != IdleType::NewlyIdle && state.balance_interval_ms < domain.max_interval_ms {
        state.balance_interval_ms *= 2;
    }
}

fn migration(
    domain: &SchedDomain,
    plan: &BalancePlan,
    tasks: MovedTasks,
    active: bool,
) -> Migration {
    Migration {
        level: domain.level,
        source: plan.source,
        destination: plan.destination,
        migration_type: plan.migration_type,
        imbalance: plan.imbalance,
        tasks,
        active,
    }
}
