//! When EAS runs (docs/linux-sched-reference.md §5.3): Linux builds the root
//! domain's list of performance domains, and so turns EAS on, only when the
//! switch `sched_energy_aware` is on, the CPUs' capacities differ, there is
//! no SMT, load tracking is frequency-invariant, every policy is governed by
//! schedutil and every CPU's domain has an energy model. Otherwise it says
//! why and schedules for performance. Fairway has no SMT; its frequency
//! invariance comes with a board's OPP tables, so a CPU outside every
//! performance domain has none.

use crate::schedutil::Governor;
use crate::task::CpuMask;
use crate::topology::Topology;

/// One performance domain as the EAS check sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainState {
    /// Its CPUs.
    pub cpus: CpuMask,
    /// The governor of its policy.
    pub governor: Governor,
    /// Whether its energy model was built (the board gives
    /// `dynamic-power-coefficient` and a valid table, §5.1).
    pub energy_model: bool,
}

/// What the EAS check reads.
#[derive(Clone, Copy, Debug)]
pub struct EasInputs<'a> {
    /// The switch (`sched_energy_aware`, on by default).
    pub energy_aware: bool,
    /// The CPUs' capacities.
    pub topology: &'a Topology,
    /// The performance domains, in the board's order.
    pub domains: &'a [DomainState],
}

/// Why EAS stays off, in the order Linux checks (§5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EasUnavailable {
    /// `sched_energy_aware=0`.
    SwitchedOff,
    /// Every CPU has the same capacity (no `SD_ASYM_CPUCAPACITY` domain).
    SymmetricCapacities,
    /// CPUs `cpus` belong to no performance domain, so their load tracking
    /// is not frequency-invariant.
    NotFrequencyInvariant {
        /// The CPUs without a domain.
        cpus: CpuMask,
    },
    /// Performance domain `domain` is governed by `governor`, not schedutil.
    GovernorNotSchedutil {
        /// The domain, counted from 0.
        domain: usize,
        /// Its governor.
        governor: Governor,
    },
    /// Performance domain `domain` has no energy model.
    NoEnergyModel {
        /// The domain, counted from 0.
        domain: usize,
    },
}

impl core::fmt::Display for EasUnavailable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            EasUnavailable::SwitchedOff => f.write_str("sched_energy_aware=0"),
            EasUnavailable::SymmetricCapacities => {
                f.write_str("CPUs do not have asymmetric capacities")
            }
            EasUnavailable::NotFrequencyInvariant { cpus } => write!(
                f,
                "CPUs {:#x} have no performance domain: load tracking is not frequency-invariant",
                cpus.0
            ),
            EasUnavailable::GovernorNotSchedutil { domain, governor } => write!(
                f,
                "perf domain {domain} is governed by {}: schedutil is mandatory for EAS",
                governor.name()
            ),
            EasUnavailable::NoEnergyModel { domain } => {
                write!(f, "perf domain {domain} has no energy model")
            }
        }
    }
}

/// `sched_is_eas_possible` and the rest of `build_perf_domains`' checks
/// (§5.3): `Ok` when EAS can run, else the first reason it cannot.
pub fn eas_possible(inputs: &EasInputs<'_>) -> Result<(), EasUnavailable> {
    if !inputs.energy_aware {
        return Err(EasUnavailable::SwitchedOff);
    }
    if !inputs.topology.is_asymmetric() {
        return Err(EasUnavailable::SymmetricCapacities);
    }
    let covered = inputs.domains.iter().fold(0u64, |mask, d| mask | d.cpus.0);
    let missing = inputs.topology.all_cpus().0 & !covered;
    if missing != 0 {
        return Err(EasUnavailable::NotFrequencyInvariant {
            cpus: CpuMask(missing),
        });
    }
    if let Some((domain, state)) = inputs
        .domains
        .iter()
        .enumerate()
        .find(|(_, d)| d.governor != Governor::Schedutil)
    {
        return Err(EasUnavailable::GovernorNotSchedutil {
            domain,
            governor: state.governor,
        });
    }
    if let Some(domain) = inputs.domains.iter().position(|d| !d.energy_model) {
        return Err(EasUnavailable::NoEnergyModel { domain });
    }
    Ok(())
}
