//! The estimates `find_energy_efficient_cpu` compares (docs/linux-sched-reference.md
//! §5.2, §5.4, §3.4): each CPU's utilization with or without the waking
//! task, what schedutil would ask of the domain, and the domain's energy.
//!
//! A domain's energy is `cost × busy` (§5.2): `busy` is the sum of its CPUs'
//! utilizations (the task's counted once, where it is placed) and `cost` is
//! that of the lowest efficient performance state able to serve the busiest
//! CPU's request with schedutil's headroom. Placing the task changes both, so
//! the caller compares `compute_energy(pd, dst) − compute_energy(pd, none)`
//! across candidates.

use crate::balance::CpuSnapshot;
use crate::energy::PerfDomainModel;
use crate::schedutil::effective_cpu_perf;
use crate::task::{CpuId, CpuMask};
use crate::topology::Topology;

/// One entry of the root domain's performance domain list (`rd->pd`): its
/// CPUs and their energy model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnergyDomain {
    /// The domain's CPUs.
    pub cpus: CpuMask,
    /// Its energy model (§5.1).
    pub model: PerfDomainModel,
}

/// The waking task as EAS reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakingTask {
    /// `task_cpu(p)`: the CPU it last ran on. Its util_avg is still counted
    /// there (a sleeping task's contribution decays in place, §2.6); its
    /// util_est is not (dequeue removed it, §2.4).
    pub prev_cpu: CpuId,
    /// The CPUs it may run on.
    pub affinity: CpuMask,
    /// `task_util(p)`: its util_avg.
    pub util_avg: u64,
    /// `_task_util_est(p)`: its util_est (§2.4).
    pub util_est: u64,
    /// Its effective `[uclamp_min, uclamp_max]` (§3.3).
    pub uclamp: [u16; 2],
    /// Whether uclamp's accounting runs (Fairway's `uclamp=`; Linux's
    /// `uclamp_is_used()` turns on at the first clamp request instead,
    /// docs/eas.md).
    pub uclamp_used: bool,
}

impl WakingTask {
    /// `task_util_est(p)`: `max(util_avg, util_est)` (§2.4).
    pub fn task_util_est(&self) -> u64 {
        self.util_avg.max(self.util_est)
    }

    /// The clamps EAS applies: the effective ones, or `[0, 1024]` while
    /// uclamp is unused (§5.4 step 1).
    pub fn clamps(&self) -> [u64; 2] {
        if self.uclamp_used {
            [u64::from(self.uclamp[0]), u64::from(self.uclamp[1])]
        } else {
            [0, 1024]
        }
    }
}

/// `cpu_util(cpu, p, dst_cpu, boost)`: the fair utilization of `cpu` if the
/// task ran on `dst` (`None`: nowhere, i.e. without it), at most the CPU's
/// capacity.
///
/// - util_avg, or with `boost` `max(util_avg, runnable_avg)`;
/// - the task's util_avg leaves its previous CPU when `dst` is elsewhere, and
///   joins `dst` when that is another CPU;
/// - then at least util_est, plus the task's util_est on `dst`.
pub fn cpu_util(
    snapshot: &CpuSnapshot,
    capacity_orig: u64,
    task: &WakingTask,
    dst: Option<CpuId>,
    boost: bool,
) -> u64 {
    let cpu = snapshot.cpu;
    let mut util = snapshot.util_avg;
    if boost {
        util = util.max(snapshot.runnable_avg);
    }
    let here = dst == Some(cpu);
    if task.prev_cpu == cpu && !here {
        util = util.saturating_sub(task.util_avg);
    } else if task.prev_cpu != cpu && here {
        util += task.util_avg;
    }
    let mut util_est = snapshot.util_est;
    if here {
        util_est += task.util_est;
    }
    util.max(util_est).min(capacity_orig)
}

/// `effective_cpu_util(cpu, util_cfs, &min, &max)` (v6.8+, §3.4) for a CPU
/// without IRQ, deadline or RT utilization to add (Fairway tracks none):
/// `(util, min, max)` where `util` is `util_cfs` capped at the capacity,
/// `min` the run queue's uclamp_min (the whole capacity when uclamp is
/// unused and an RT task is runnable) and `max` its uclamp_max, at most the
/// capacity.
pub fn effective_cpu_util(
    snapshot: &CpuSnapshot,
    capacity_orig: u64,
    util_cfs: u64,
    uclamp_used: bool,
) -> (u64, u64, u64) {
    let scale = capacity_orig;
    let (rq_min, rq_max) = if uclamp_used {
        (u64::from(snapshot.uclamp[0]), u64::from(snapshot.uclamp[1]))
    } else {
        (0, 1024)
    };
    let min = if !uclamp_used && snapshot.rt_runnable {
        scale
    } else {
        rq_min
    };
    (util_cfs.min(scale), min, scale.min(rq_max))
}

/// What one domain's estimates share (`struct energy_env`): the task's busy
/// time, the domain's busy time without the task, and its capacities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnergyEnv {
    /// `task_busy_time`: `task_util_est(p)` (no IRQ time to scale by).
    pub task_busy_time: u64,
    /// `pd_busy_time`: the domain's CPUs' utilizations without the task,
    /// at most `pd_cap`.
    pub pd_busy_time: u64,
    /// `cpu_cap`: one CPU's actual capacity (no thermal or cpufreq pressure
    /// in Fairway: its arch capacity).
    pub cpu_cap: u64,
    /// `pd_cap`: `cpu_cap` times the domain's CPUs.
    pub pd_cap: u64,
}

impl EnergyEnv {
    /// `eenv_task_busy_time` and `eenv_pd_busy_time` for `domain`.
    pub fn new(
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        domain: &EnergyDomain,
        task: &WakingTask,
    ) -> Self {
        let mut cpus = topology.cpus_in(domain.cpus);
        let cpu_cap = cpus.next().map_or(0, |cpu| topology.capacity_orig(cpu));
        let mut pd_cap = 0;
        let mut busy = 0;
        for cpu in topology.cpus_in(domain.cpus) {
            let snapshot = &snapshots[cpu.index()];
            let orig = topology.capacity_orig(cpu);
            pd_cap += cpu_cap;
            let util = cpu_util(snapshot, orig, task, None, false);
            busy += effective_cpu_util(snapshot, orig, util, task.uclamp_used).0;
        }
        EnergyEnv {
            task_busy_time: task.task_util_est(),
            pd_busy_time: busy.min(pd_cap),
            cpu_cap,
            pd_cap,
        }
    }
}

/// `eenv_pd_max_util`: the performance the domain's busiest CPU would ask of
/// schedutil with the task on `dst` (`None`: nowhere), at most `cpu_cap`.
/// Each CPU's utilization is boosted by its runnable_avg; on `dst` the task's
/// clamps join the run queue's (replacing its ceiling when the run queue is
/// uclamp-idle); schedutil's headroom applies between the clamps (§3.4).
pub fn pd_max_util(
    topology: &Topology,
    snapshots: &[CpuSnapshot],
    domain: &EnergyDomain,
    task: &WakingTask,
    dst: Option<CpuId>,
    cpu_cap: u64,
) -> u64 {
    let mut max_util = 0;
    for cpu in topology.cpus_in(domain.cpus) {
        let snapshot = &snapshots[cpu.index()];
        let orig = topology.capacity_orig(cpu);
        let util = cpu_util(snapshot, orig, task, dst, true);
        let (util, mut min, mut max) = effective_cpu_util(snapshot, orig, util, task.uclamp_used);
        if dst == Some(cpu) && task.uclamp_used {
            let [task_min, task_max] = task.clamps();
            min = min.max(task_min);
            max = if snapshot.uclamp_idle {
                task_max
            } else {
                max.max(task_max)
            };
        }
        max_util = max_util.max(effective_cpu_perf(util, min, max));
    }
    max_util.min(cpu_cap)
}

/// One `compute_energy` of `find_energy_efficient_cpu`: what
/// `em_cpu_energy` was given and what it returned (for `--explain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnergyEstimate {
    /// The performance domain's index in `rd->pd`.
    pub domain: usize,
    /// Where the task was placed (`None`: without it, the base energy).
    pub dst: Option<CpuId>,
    /// `eenv_pd_max_util`: the busiest CPU's performance request, schedutil's
    /// headroom included, at most `cpu_cap`.
    pub max_util: u64,
    /// `sum_util`: the domain's busy time, the task's included when placed.
    pub sum_util: u64,
    /// `cpu_cap`.
    pub cpu_cap: u64,
    /// `em_cpu_energy(pd, max_util, sum_util, cpu_cap)`.
    pub energy: u64,
}

/// `compute_energy(eenv, pd, cpus, p, dst_cpu)` (§5.4): the domain's energy
/// estimate with the task on `dst` (`None`: without the task).
pub fn compute_energy(
    topology: &Topology,
    snapshots: &[CpuSnapshot],
    domain: &EnergyDomain,
    task: &WakingTask,
    env: &EnergyEnv,
    dst: Option<CpuId>,
) -> u64 {
    estimate_energy(topology, snapshots, domain, task, env, dst).energy
}

/// [`compute_energy`] with the numbers it gave `em_cpu_energy` (`domain`
/// left 0 for the caller to set).
pub fn estimate_energy(
    topology: &Topology,
    snapshots: &[CpuSnapshot],
    domain: &EnergyDomain,
    task: &WakingTask,
    env: &EnergyEnv,
    dst: Option<CpuId>,
) -> EnergyEstimate {
    let max_util = pd_max_util(topology, snapshots, domain, task, dst, env.cpu_cap);
    let mut busy = env.pd_busy_time;
    if dst.is_some() {
        busy = (busy + env.task_busy_time).min(env.pd_cap);
    }
    EnergyEstimate {
        domain: 0,
        dst,
        max_util,
        sum_util: busy,
        cpu_cap: env.cpu_cap,
        energy: domain.model.cpu_energy(max_util, busy, env.cpu_cap),
    }
}
