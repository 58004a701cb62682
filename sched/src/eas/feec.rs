//! `find_energy_efficient_cpu(p, prev_cpu)` (docs/linux-sched-reference.md
//! §5.4, Linux v6.10 and later): where a waking task costs the least energy.
//!
//! Per performance domain only two CPUs are priced: the previous CPU, and
//! the CPU with the most spare capacity where the task fits (the one that
//! lets schedutil keep the lowest frequency). Each is priced as the domain's
//! energy with the task there minus without it. The previous CPU stays
//! unless another candidate fits better, or fits as well and costs strictly
//! less (no margin since Linux v6.0), or, when neither meets the task's
//! uclamp_min, offers more capacity.

use super::energy_env::{
    EnergyDomain, EnergyEnv, EnergyEstimate, WakingTask, cpu_util, estimate_energy,
};
use crate::balance::CpuSnapshot;
use crate::task::CpuId;
use crate::topology::Topology;
use crate::uclamp::util_fits_cpu;

/// What `find_energy_efficient_cpu` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeecChoice {
    /// The CPU to wake on; `None` when EAS has no say (no performance
    /// domain, or the waking CPU's asymmetric domain does not span the
    /// previous CPU), and the wake-up path decides.
    pub cpu: Option<CpuId>,
    /// The energy the task adds on the previous CPU (`prev_delta`), if
    /// priced.
    pub prev_delta: Option<u64>,
    /// The energy the task adds on the chosen CPU, if priced.
    pub delta: Option<u64>,
    /// No CPU of any domain fits the task, not even by its clamps
    /// (`util_fits_cpu` 0 everywhere): Linux then keeps the previous CPU,
    /// the 2024 RFC's feec returns −1 so that the wake-up path decides
    /// (§5.6).
    pub nothing_fits: bool,
}

impl FeecChoice {
    fn only(cpu: Option<CpuId>) -> Self {
        FeecChoice {
            cpu,
            prev_delta: None,
            delta: None,
            nothing_fits: false,
        }
    }
}

/// `find_energy_efficient_cpu` for `task` woken by a task on `waker_cpu`,
/// over the root domain's performance domains `domains` and every CPU's
/// `snapshots` (`snapshots[i].cpu == CpuId(i)`).
pub fn find_energy_efficient_cpu(
    topology: &Topology,
    domains: &[EnergyDomain],
    snapshots: &[CpuSnapshot],
    task: &WakingTask,
    waker_cpu: CpuId,
) -> FeecChoice {
    find_energy_efficient_cpu_observed(topology, domains, snapshots, task, waker_cpu, |_| {})
}

/// [`find_energy_efficient_cpu`], telling `observe` each energy estimate it
/// makes, in order (`--explain` prints them; a no-op observer compiles to
/// nothing, so the kernel's wake-ups pay nothing for it).
pub fn find_energy_efficient_cpu_observed(
    topology: &Topology,
    domains: &[EnergyDomain],
    snapshots: &[CpuSnapshot],
    task: &WakingTask,
    waker_cpu: CpuId,
    mut observe: impl FnMut(EnergyEstimate),
) -> FeecChoice {
    if domains.is_empty() {
        return FeecChoice::only(None);
    }
    let prev = task.prev_cpu;
    let Some(sd) = topology
        .asym_capacity_domain(waker_cpu)
        .filter(|sd| sd.span.contains(prev))
    else {
        return FeecChoice::only(None);
    };
    let [p_util_min, p_util_max] = task.clamps();
    if task.task_util_est() == 0 && p_util_min == 0 {
        return FeecChoice::only(Some(prev));
    }
    let mut best_delta = u64::MAX;
    let mut prev_delta = u64::MAX;
    let mut best_energy_cpu = prev;
    let (mut best_fits, mut prev_fits) = (-1i32, -1i32);
    let (mut best_actual_cap, mut prev_actual_cap) = (0u64, 0u64);
    let mut nothing_fits = true;
    for (index, domain) in domains.iter().enumerate() {
        let env = EnergyEnv::new(topology, snapshots, domain, task);
        let mut compute_energy = |dst: Option<CpuId>| {
            let estimate = estimate_energy(topology, snapshots, domain, task, &env, dst);
            observe(EnergyEstimate {
                domain: index,
                ..estimate
            });
            estimate.energy
        };
        let cpu_actual_cap = env.cpu_cap;
        // Linux starts it at −1 (a `long`), so that a CPU with no spare
        // capacity left, fitting only by its uclamp_max, can be the candidate.
        let mut max_spare_cap = -1i64;
        let mut max_spare_cap_cpu: Option<CpuId> = None;
        let mut max_fits = -1i32;
        let mut prev_spare_cap: Option<u64> = None;
        for cpu in topology.cpus_in(domain.cpus) {
            if !sd.span.contains(cpu) || !task.affinity.contains(cpu) {
                continue;
            }
            let snapshot = &snapshots[cpu.index()];
            let orig = topology.capacity_orig(cpu);
            let util = cpu_util(snapshot, orig, task, Some(cpu), false);
            let (mut util_min, mut util_max) = (p_util_min, p_util_max);
            if task.uclamp_used && !snapshot.uclamp_idle {
                util_min = util_min.max(u64::from(snapshot.uclamp[0]));
                util_max = util_max.max(u64::from(snapshot.uclamp[1]));
            }
            let fits = util_fits_cpu(
                util,
                util_min as u16,
                util_max as u16,
                snapshot.capacity,
                orig,
                orig,
            )
            .as_linux();
            if fits == 0 {
                continue;
            }
            let spare = snapshot.capacity.saturating_sub(util);
            if cpu == prev {
                prev_spare_cap = Some(spare);
                prev_fits = fits;
            } else if fits > max_fits || (fits == max_fits && spare as i64 > max_spare_cap) {
                max_spare_cap = spare as i64;
                max_spare_cap_cpu = Some(cpu);
                max_fits = fits;
            }
        }
        if max_spare_cap_cpu.is_none() && prev_spare_cap.is_none() {
            continue;
        }
        nothing_fits = false;
        let base_energy = compute_energy(None);
        if prev_spare_cap.is_some() {
            let energy = compute_energy(Some(prev));
            // Less energy with the task than without: the utilizations
            // changed under the estimate; keep the previous CPU.
            if energy < base_energy {
                return FeecChoice::only(Some(prev));
            }
            prev_delta = energy - base_energy;
            prev_actual_cap = cpu_actual_cap;
            best_delta = best_delta.min(prev_delta);
        }
        let Some(candidate) = max_spare_cap_cpu else {
            continue;
        };
        if prev_spare_cap.is_some_and(|prev_spare| max_spare_cap <= prev_spare as i64) {
            continue;
        }
        // The best so far fits better.
        if max_fits < best_fits {
            continue;
        }
        // Neither meets the task's uclamp_min, and the best so far is faster.
        if max_fits < 0 && cpu_actual_cap <= best_actual_cap {
            continue;
        }
        let energy = compute_energy(Some(candidate));
        if energy < base_energy {
            return FeecChoice::only(Some(prev));
        }
        let cur_delta = energy - base_energy;
        // Both fit, and the best so far adds less.
        if max_fits > 0 && best_fits > 0 && cur_delta >= best_delta {
            continue;
        }
        best_delta = cur_delta;
        best_energy_cpu = candidate;
        best_fits = max_fits;
        best_actual_cap = cpu_actual_cap;
    }
    let moves = best_fits > prev_fits
        || (best_fits > 0 && best_delta < prev_delta)
        || (best_fits < 0 && best_actual_cap > prev_actual_cap);
    let priced = |delta: u64| (delta != u64::MAX).then_some(delta);
    FeecChoice {
        cpu: Some(if moves { best_energy_cpu } else { prev }),
        prev_delta: priced(prev_delta),
        // When the task moves, `best_delta` is its best candidate's.
        delta: priced(if moves { best_delta } else { prev_delta }),
        nothing_fits,
    }
}
