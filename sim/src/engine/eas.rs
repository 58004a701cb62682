//! Energy-aware placement in the simulator, carried out as the kernel's
//! `src/scheduling/eas.rs` carries it out (docs/eas.md): EAS is on when the
//! board's domains pass Linux's checks (`fairway_sched::eas::eas_possible`,
//! §5.3); wake-ups then go through `find_energy_efficient_cpu` in the core's
//! `select_task_rq` while the root domain is not overutilized. The flag is
//! set when a woken task is enqueued and at the tick on a CPU that no longer
//! fits its utilization, and recomputed over every CPU at each periodic and
//! newly-idle load balance pass (§5.5).

use fairway_sched::eas::{
    EasInputs, EasUnavailable, EnergyContext, EnergyDomain, any_overutilized, cpu_overutilized,
    eas_possible, enabled::DomainState,
};
use fairway_sched::task::CpuMask;
use fairway_sched::topology::Topology;

use super::{Dvfs, Simulation};

/// EAS during a run.
pub(super) struct EasState {
    /// The root domain's performance domains (`rd->pd`).
    domains: Vec<EnergyDomain>,
    /// `rd->overutilized`.
    pub(super) overutilized: bool,
    /// `eas_overutilized=` (§5.6).
    when_overutilized: bool,
}

impl EasState {
    /// EAS for the board's `dvfs` on `topology`, or why it stays off.
    pub(super) fn new(dvfs: &Dvfs, topology: &Topology) -> Result<Self, EasUnavailable> {
        let mask = |cpus: &[usize]| CpuMask(cpus.iter().fold(0, |m, &c| m | 1 << c));
        let states: Vec<DomainState> = dvfs
            .domains
            .iter()
            .zip(&dvfs.models)
            .map(|((cpus, spec), model)| DomainState {
                cpus: mask(cpus),
                governor: spec.governor,
                energy_model: model.is_some(),
            })
            .collect();
        eas_possible(&EasInputs {
            energy_aware: dvfs.energy_aware,
            topology,
            domains: &states,
        })?;
        let domains = dvfs
            .domains
            .iter()
            .zip(&dvfs.models)
            .filter_map(|((cpus, _), model)| {
                Some(EnergyDomain {
                    cpus: mask(cpus),
                    model: model.clone()?,
                })
            })
            .collect();
        Ok(EasState {
            domains,
            overutilized: false,
            when_overutilized: dvfs.eas_overutilized,
        })
    }

    /// How many performance domains EAS prices.
    pub(super) fn domains(&self) -> usize {
        self.domains.len()
    }

    /// Each priced domain's CPUs among the first `nr_cpus` (`rd->pd`'s order).
    pub(super) fn domain_cpus(&self, nr_cpus: usize) -> Vec<Vec<usize>> {
        self.domains
            .iter()
            .map(|d| {
                (0..nr_cpus)
                    .filter(|&cpu| d.cpus.contains(fairway_sched::task::CpuId(cpu as u16)))
                    .collect()
            })
            .collect()
    }
}

impl Simulation<'_> {
    /// What a wake-up needs of EAS, when it is on.
    pub(super) fn energy_context(&self) -> Option<EnergyContext<'_>> {
        self.eas.as_ref().map(|eas| EnergyContext {
            domains: &eas.domains,
            overutilized: eas.overutilized,
            when_overutilized: eas.when_overutilized,
        })
    }

    /// EAS runs and the root domain is not overutilized: load balancing
    /// then moves only misfit tasks (§5.5).
    pub(super) fn energy_aware_balance(&self) -> bool {
        self.eas.as_ref().is_some_and(|eas| !eas.overutilized)
    }

    /// `check_update_overutilized_status` (at a woken task's enqueue and at
    /// the tick): `cpu` no longer fitting its utilization makes the root
    /// domain overutilized.
    pub(super) fn note_overutilized(&mut self, cpu: usize) {
        let Some(eas) = &self.eas else { return };
        if eas.overutilized {
            return;
        }
        let Some(balancer) = &self.balancer else {
            return;
        };
        let snapshot = self.balance_snapshot(cpu);
        let capacity = balancer
            .topology()
            .capacity_orig(fairway_sched::task::CpuId(cpu as u16));
        if cpu_overutilized(&snapshot, capacity)
            && let Some(eas) = &mut self.eas
        {
            eas.overutilized = true;
        }
    }

    /// Load balancing's recomputation at the root domain: overutilized
    /// while any CPU is.
    pub(super) fn recompute_overutilized(&mut self) {
        if self.eas.is_none() {
            return;
        }
        let Some(balancer) = &self.balancer else {
            return;
        };
        let over = any_overutilized(balancer.topology(), &self.balance_snapshots());
        if let Some(eas) = &mut self.eas {
            eas.overutilized = over;
        }
    }
}
