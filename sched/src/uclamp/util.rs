//! Clamped utilization, as frequency selection and CPU fitness read it
//! (`uclamp_rq_util_with`, `fits_capacity`, `util_fits_cpu`, facts §3.4, Appendix A §6).

use super::buckets::UclampRunQueue;
use super::request::{ClampId, SCHED_CAPACITY_SCALE, uclamp_none};

/// `fits_capacity(util, capacity)`: `util * 1280 < capacity * 1024`, i.e.
/// `util` fits when it leaves 20 % headroom (Appendix A §6).
pub const fn fits_capacity(util: u64, capacity: u64) -> bool {
    util * 1280 < capacity * 1024
}

/// `uclamp_rq_util_with(rq, util, p)` (§3.4, Linux <= v6.7): `util` clamped by
/// the task's effective `[min, max]` (or `[0, 1024]` without a task) merged
/// with the run queue's clamps, unless the run queue is uclamp-idle. When the
/// floor reaches the ceiling the floor wins. Schedutil of that era added its
/// +25 % headroom *after* this (a 512 cap gave a request for 640).
pub fn uclamp_rq_util_with(run_queue: &UclampRunQueue, util: u64, task: Option<[u16; 2]>) -> u64 {
    let [mut min, mut max] = task.unwrap_or([uclamp_none(ClampId::Min), uclamp_none(ClampId::Max)]);
    if !run_queue.is_idle() {
        min = min.max(run_queue.value(ClampId::Min));
        max = max.max(run_queue.value(ClampId::Max));
    }
    let (min, max) = (u64::from(min), u64::from(max));
    if min >= max {
        return min;
    }
    util.clamp(min, max)
}

/// The answer of [`util_fits_cpu`] (Linux returns 1, 0 or -1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuFit {
    /// Neither the utilization nor the ceiling fits (0).
    DoesNotFit,
    /// It fits (1).
    Fits,
    /// It fits, but the floor (the boost) asks for more than the CPU can give
    /// now (-1). `task_fits_cpu` counts it as not fitting; `cpu_overutilized`
    /// as fitting.
    FitsBoostUnmet,
}

impl CpuFit {
    /// Linux's integer: 1, 0 or -1.
    pub const fn as_linux(self) -> i32 {
        match self {
            CpuFit::DoesNotFit => 0,
            CpuFit::Fits => 1,
            CpuFit::FitsBoostUnmet => -1,
        }
    }
}

/// `util_fits_cpu(util, uclamp_min, uclamp_max, cpu)` (§3.4), with the CPU's
/// capacities given: `capacity` is `capacity_of` (arch capacity less RT, DL and
/// IRQ pressure), `capacity_orig` is `arch_scale_cpu_capacity`, and
/// `actual_capacity` is `get_actual_cpu_capacity` (less thermal/cpufreq pressure).
///
/// With the default clamps (0, 1024) the answer is plain `fits_capacity`.
pub fn util_fits_cpu(
    util: u64,
    uclamp_min: u16,
    uclamp_max: u16,
    capacity: u64,
    capacity_orig: u64,
    actual_capacity: u64,
) -> CpuFit {
    let fits = fits_capacity(util, capacity);
    let scale = u64::from(SCHED_CAPACITY_SCALE);
    let (uclamp_min, uclamp_max) = (u64::from(uclamp_min), u64::from(uclamp_max));
    // A 1024 ceiling on a 1024 CPU does not make everything "fit" the biggest CPU.
    let top_on_top = capacity_orig == scale && uclamp_max == scale;
    let uclamp_max_fits = !top_on_top && uclamp_max <= capacity_orig;
    let fits = fits || uclamp_max_fits;
    let uclamp_min = uclamp_min.min(uclamp_max);
    if fits && util < uclamp_min && uclamp_min > actual_capacity {
        CpuFit::FitsBoostUnmet
    } else if fits {
        CpuFit::Fits
    } else {
        CpuFit::DoesNotFit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uclamp::TaskClamp;

    #[test]
    fn fits_capacity_matches_appendix_a_section_6() {
        // Appendix A §6: largest fitting util per capacity.
        for (capacity, largest) in [
            (1024, 819),
            (446, 356),
            (383, 306),
            (160, 127),
            (498, 398),
            (512, 409),
        ] {
            assert!(fits_capacity(largest, capacity), "cap {capacity}");
            assert!(!fits_capacity(largest + 1, capacity), "cap {capacity}");
        }
    }

    #[test]
    fn util_with_clamps_by_task_and_run_queue() {
        let mut rq = UclampRunQueue::default();
        // Idle rq: only the task's clamps count; without a task util passes.
        assert_eq!(uclamp_rq_util_with(&rq, 700, None), 700);
        assert_eq!(uclamp_rq_util_with(&rq, 700, Some([0, 512])), 512);
        let mut t = [TaskClamp::default(); 2];
        rq.inc(&mut t, [200, 512]);
        // clamp(100, 200, 512) = 200; clamp(1000, 200, 512) = 512, and §3.4's
        // legacy headroom after clamping: 512 + 512/4 = 640.
        assert_eq!(uclamp_rq_util_with(&rq, 100, None), 200);
        let capped = uclamp_rq_util_with(&rq, 1000, Some([0, 0]));
        assert_eq!((capped, capped + capped / 4), (512, 640));
        // The merge is a max: a task asking 1024 lifts the ceiling.
        assert_eq!(uclamp_rq_util_with(&rq, 1000, Some([0, 1024])), 1000);
        // min >= max returns min: RT boost 1024 with its own cap 512 on an idle rq.
        rq.dec(&mut t);
        assert!(rq.is_idle());
        assert_eq!(uclamp_rq_util_with(&rq, 10, Some([1024, 512])), 1024);
        // Idle rq ignores the held max (512): util 900 passes with default task clamps.
        assert_eq!(uclamp_rq_util_with(&rq, 900, Some([0, 1024])), 900);
    }

    #[test]
    fn util_fits_cpu_cases() {
        use CpuFit::*;
        // Default clamps on the big CPU = fits_capacity (819 fits, 820 not; Appendix A §6),
        // because the 1024-on-1024 exception keeps uclamp_max from fitting.
        assert_eq!(util_fits_cpu(819, 0, 1024, 1024, 1024, 1024), Fits);
        assert_eq!(util_fits_cpu(820, 0, 1024, 1024, 1024, 1024), DoesNotFit);
        // Little CPU 446: util 500 does not fit (640000 >= 456704), but a cap of
        // 300 <= 446 does.
        assert_eq!(util_fits_cpu(500, 0, 1024, 446, 446, 446), DoesNotFit);
        assert_eq!(util_fits_cpu(500, 0, 300, 446, 446, 446), Fits);
        // Boost 600 on the little CPU: fits (128000 < 456704), util 100 < 600 and
        // 600 > 446 -> -1; on the big CPU 600 <= 1024 -> 1.
        assert_eq!(util_fits_cpu(100, 600, 1024, 446, 446, 446), FitsBoostUnmet);
        assert_eq!(FitsBoostUnmet.as_linux(), -1);
        assert_eq!(util_fits_cpu(100, 600, 1024, 1024, 1024, 1024), Fits);
        // Floor above ceiling: min(600, 300) = 300 <= 446 -> fits.
        assert_eq!(util_fits_cpu(100, 600, 300, 446, 446, 446), Fits);
        // Thermal pressure: actual 400 < boost 420 -> -1 even though orig is 446.
        assert_eq!(util_fits_cpu(100, 420, 1024, 446, 446, 400), FitsBoostUnmet);
    }
}
