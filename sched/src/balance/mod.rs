//! Spreading tasks over CPUs: where a waking task runs, and when and what
//! periodic and newly-idle load balancing moves (Linux's `select_task_rq_fair`
//! without EAS and `sched_balance_rq`, facts §5.5, §7, sched-domains.rst,
//! sched-capacity.rst).
//!
//! Everything here is a pure function of plain snapshots; the mechanism
//! locks, reads `RunQueue::signals()` into [`CpuSnapshot`]s, calls in, and
//! carries out the returned decision: enqueue on [`WakeTarget::cpu`], or
//! detach [`Migration::tasks`] from the source run queue and attach them to
//! the destination (§2.6: `migrate_task_rq_fair` removes the PELT load from
//! the source; the entity is attached on the destination; EEVDF keeps the
//! task's lag across the move, §1.5).
//!
//! ```text
//!   tick on cpu C ----> rebalance_domains(C)  --> BalanceDecision
//!   C goes idle  -----> newidle_balance(C)    --> BalanceDecision
//!   wake-up of p -----> select_task_rq(p)     --> WakeTarget
//! ```
//!
//! Sources besides `docs/linux-sched-reference.md` (§5.5 misfit/fitness, §7 capacities, §2.6
//! migration, §9 constants): `Documentation/scheduler/sched-domains.rst`
//! (per-domain intervals, busiest group then busiest queue, imbalance),
//! `sched-capacity.rst` sections 5.1.2-5.1.3 (capacity-fitting wake-ups, misfit via
//! active balance), and the Linux commit messages named where each rule is
//! implemented (load_balance rework 0b0695f2b34a and its decision matrix
//! a658353167bf, misfit cad68e552e77, wake_affine_weight f2cdd9cc6c97,
//! asymmetric wake-up scan b7a331615d25 and b4c9c9f15649, busy_factor 16).
//!
//! Simplified relative to Linux, on purpose (no SMT, NUMA or cgroups here):
//! - two levels only (cluster = LLC, system); no SMT, NUMA or asym-packing
//!   levels, so no `group_smt_balance`, `group_asym_packing`, and no
//!   `group_imbalanced` (the affinity-failure flag passed to the parent);
//! - `task_h_load` comes with each candidate from the mechanism
//!   (`RunQueue::task_h_load`, §2.7);
//! - no `sched_idle_cpu` (a CPU running only SCHED_IDLE tasks counts as
//!   busy), no `recent_used_cpu`, per-CPU-kthread stacking, `SIS_UTIL` scan limit
//!   or `wake_wide` bookkeeping (the caller passes [`wake_wide`]'s answer);
//! - no `max_newidle_lb_cost`/`avg_idle` gate on newly-idle balancing;
//! - `rebalance_domains` returns at the first pass that moves tasks; the
//!   other due levels run at the next call (the mechanism applies, refreshes
//!   its snapshots, and calls again);
//! - an all-pinned retry excludes the source and recomputes, as Linux's
//!   `LBF_ALL_PINNED` redo, but `LBF_DST_PINNED` (try another destination
//!   CPU of the local group) is not done;
//! - active balance moves the source's running task itself; thermal
//!   pressure is not modelled (actual capacity = capacity_orig);
//! - no EAS gate: with EAS on and not overutilized, the caller uses feec
//!   (§5.4) first and skips non-misfit balancing (§5.5).
//!
//! Modules: [`stats`] (snapshots, group statistics), [`wake`] (wake-up CPU
//! selection), [`load_balance`] (busiest group and queue, imbalance),
//! [`detach`] (which tasks move), [`rebalance`]
//! (intervals, per-domain state, the drivers).

pub mod detach;
pub mod load_balance;
pub mod rebalance;
pub mod stats;
pub mod wake;

#[cfg(test)]
mod tests;

pub use detach::MovedTasks;
pub use load_balance::{IdleType, MigrationType, NR_MIGRATE};
pub use rebalance::{
    BalanceDecision, CpuBalanceState, DomainBalanceState, Migration, TaskList, newidle_balance,
    rebalance_domains,
};
pub use stats::{
    BalanceError, CpuLoads, CpuSnapshot, MIGRATION_COST_NS, TaskCandidate, misfit_task_load,
};
pub use wake::{WakeReason, WakeRequest, WakeTarget, select_task_rq, wake_wide};
