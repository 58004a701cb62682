//! Energy-Aware Scheduling (docs/linux-sched-reference.md §5): on a system
//! whose CPUs differ in capacity and whose frequencies follow schedutil, a
//! waking task goes where the energy model says the whole system spends the
//! least, as long as no CPU is overutilized.
//!
//! ```text
//!   wake-up of p ──► eas enabled (§5.3)? ──no──► select_task_rq (balance::wake)
//!                      │ yes, and not overutilized (§5.5)
//!                      ▼
//!   find_energy_efficient_cpu (§5.4): per performance domain
//!     candidates: the CPU with most spare capacity that fits, and prev_cpu
//!     energy of the domain with p there, minus without p (compute_energy, §5.2)
//!   ──► the candidate with the smallest increase (prev_cpu unless another wins)
//! ```
//!
//! Module map:
//! - [`enabled`]: the conditions under which Linux turns EAS on, and why it
//!   stays off.
//! - [`energy_env`]: the utilization and energy estimates of one domain with
//!   and without the waking task (`cpu_util`, `effective_cpu_util`,
//!   `eenv_pd_max_util`, `compute_energy`).
//! - [`feec`]: `find_energy_efficient_cpu`, the choice itself.
//! - [`overutilized`]: when a CPU, and so the system, has no headroom left
//!   and EAS stands aside (§5.5).
//!
//! Everything here is a pure function over the snapshots the mechanism
//! publishes (`balance::CpuSnapshot`) and the energy model built from the
//! device tree ([`crate::energy`]), so the kernel and the simulator decide
//! alike.

pub mod enabled;
pub mod energy_env;
pub mod feec;
pub mod overutilized;

#[cfg(test)]
mod tests;

pub use enabled::{EasInputs, EasUnavailable, eas_possible};
pub use energy_env::{EnergyDomain, EnergyEstimate, WakingTask, compute_energy};
pub use feec::{FeecChoice, find_energy_efficient_cpu, find_energy_efficient_cpu_observed};
pub use overutilized::{any_overutilized, cpu_overutilized};

/// What a wake-up needs of EAS when it is on: the root domain's performance
/// domains with their energy models, and whether the root domain is
/// overutilized (then `find_energy_efficient_cpu` is skipped, §5.4).
#[derive(Clone, Copy, Debug)]
pub struct EnergyContext<'a> {
    /// The performance domains (`rd->pd`).
    pub domains: &'a [EnergyDomain],
    /// `rd->overutilized`.
    pub overutilized: bool,
    /// `eas_overutilized=1`: keep calling `find_energy_efficient_cpu` while
    /// overutilized, as the 2024 RFC "Rework EAS to handle more cases" does
    /// (§5.6, its patch 4); when no CPU fits the task, the wake-up path
    /// decides. Off (the default), Linux's rule: EAS stands aside.
    pub when_overutilized: bool,
}

impl EnergyContext<'_> {
    /// Whether a wake-up asks `find_energy_efficient_cpu` (§5.4, §5.6).
    pub fn places_wakeups(&self) -> bool {
        !self.overutilized || self.when_overutilized
    }
}
