//! Overutilization (docs/linux-sched-reference.md §5.5): EAS packs tasks on
//! the CPUs that cost least only while every CPU has headroom left. Once one
//! CPU's fair utilization no longer fits its capacity (80 %, uclamp-aware),
//! the root domain is overutilized, wake-ups skip
//! `find_energy_efficient_cpu` and load balancing spreads tasks for
//! performance until balancing finds every CPU fitting again.
//!
//! Linux sets the root domain's flag at enqueue (not for a new task) and at
//! the tick, and only load balancing at the root domain recomputes it, so
//! only load balancing clears it. The mechanism holds the flag; these are
//! the rules it applies.

use crate::balance::CpuSnapshot;
use crate::task::CpuId;
use crate::topology::Topology;
use crate::uclamp::{CpuFit, util_fits_cpu};

/// `cpu_overutilized(cpu)` (§5.5): the CPU's fair utilization
/// (`max(util_avg, util_est)`, at most its capacity) does not fit it under
/// its run queue's clamps. A utilization that fits but misses a uclamp_min
/// boost is not overutilized.
pub fn cpu_overutilized(snapshot: &CpuSnapshot, capacity_orig: u64) -> bool {
    let util = snapshot.cpu_util_cfs(capacity_orig);
    util_fits_cpu(
        util,
        snapshot.uclamp[0],
        snapshot.uclamp[1],
        snapshot.capacity,
        capacity_orig,
        capacity_orig,
    ) == CpuFit::DoesNotFit
}

/// The root domain's state as load balancing recomputes it
/// (`update_sd_lb_stats` at the root): whether any CPU is overutilized.
pub fn any_overutilized(topology: &Topology, snapshots: &[CpuSnapshot]) -> bool {
    snapshots
        .iter()
        .take(topology.nr_cpus())
        .any(|s| cpu_overutilized(s, topology.capacity_orig(CpuId(s.cpu.0))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::CpuDescription;

    fn snapshot(cpu: u16, capacity: u64, util: u64) -> CpuSnapshot {
        CpuSnapshot {
            cpu: CpuId(cpu),
            capacity,
            nr_running: 1,
            idle: false,
            load_avg: util,
            util_avg: util,
            runnable_avg: util,
            util_est: 0,
            misfit_task_load: 0,
            uclamp: [0, 1024],
            uclamp_idle: false,
            rt_runnable: false,
        }
    }

    /// The 80 % line of §5.5's table: 356 fits a capacity-446 CPU, 357 does
    /// not; 819 fits 1024, 820 does not.
    #[test]
    fn the_line_is_fits_capacity() {
        assert!(!cpu_overutilized(&snapshot(0, 446, 356), 446));
        assert!(cpu_overutilized(&snapshot(0, 446, 357), 446));
        assert!(!cpu_overutilized(&snapshot(1, 1024, 819), 1024));
        assert!(cpu_overutilized(&snapshot(1, 1024, 820), 1024));
    }

    /// A uclamp_max at or below the CPU's capacity makes any utilization
    /// fit (§3.4): a capped busy LITTLE CPU is not overutilized. util_est
    /// counts too.
    #[test]
    fn clamps_and_util_est() {
        let mut capped = snapshot(0, 446, 446);
        capped.uclamp = [0, 300];
        assert!(!cpu_overutilized(&capped, 446));
        let mut estimated = snapshot(0, 446, 100);
        estimated.util_est = 400;
        assert!(cpu_overutilized(&estimated, 446));
    }

    #[test]
    fn any_cpu_makes_the_system_overutilized() {
        let little = CpuDescription {
            capacity: 446,
            cluster: 0,
        };
        let big = CpuDescription {
            capacity: 1024,
            cluster: 1,
        };
        let topology = Topology::new(&[little, big]).unwrap();
        let calm = [snapshot(0, 446, 300), snapshot(1, 1024, 800)];
        assert!(!any_overutilized(&topology, &calm));
        let busy = [snapshot(0, 446, 400), snapshot(1, 1024, 100)];
        assert!(any_overutilized(&topology, &busy));
    }
}
