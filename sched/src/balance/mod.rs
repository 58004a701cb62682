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
//! Modules: [`stats`] (snapshots, group statistics), [`wake`] (wake-up CPU
//! selection), [`load_balance`] (one pass in one domain), [`rebalance`]
//! (intervals, per-domain state, the drivers).

pub mod load_balance;
pub mod rebalance;
pub mod stats;
pub mod wake;

#[cfg(test)]
mod tests;

pub use load_balance::{IdleType, MigrationType, MovedTasks, NR_MIGRATE};
pub use rebalance::{
    BalanceDecision, CpuBalanceState, DomainBalanceState, Migration, newidle_balance,
    rebalance_domains,
};
pub use stats::{BalanceError, CpuSnapshot, TaskCandidate, misfit_task_load};
pub use wake::{WakeReason, WakeRequest, WakeTarget, select_task_rq};
