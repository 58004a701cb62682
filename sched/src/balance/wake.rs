//! Wake-up CPU selection without EAS: `select_task_rq_fair`'s fast path,
//! i.e. wake-affine between the waker's and the wakee's previous CPU, then
//! `select_idle_sibling` (an idle CPU sharing the target's cluster), or
//! `select_idle_capacity` on asymmetric systems (`sched-capacity.rst` section 5.1.2).
//!
//! ```text
//!   waker cpu --wake_affine--> target --select_idle_sibling--> chosen cpu
//!   prev cpu  --'                ^ target idle? prev idle and same cluster?
//!                                  first idle CPU of target's cluster (wrapping)
//! ```

use super::stats::{BalanceError, CpuLoads, CpuSnapshot, check_cpu};
use crate::task::{CpuId, CpuMask};
use crate::topology::{DomainLevel, Topology};
use crate::uclamp::{CpuFit, util_fits_cpu};

/// What the mechanism knows about a wake-up (`try_to_wake_up` of `p` by the
/// task running on `waker_cpu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeRequest {
    /// `task_cpu(p)`: where the task last ran.
    pub prev_cpu: CpuId,
    /// `smp_processor_id()`: the CPU doing the wake-up.
    pub waker_cpu: CpuId,
    /// The task's allowed CPUs.
    pub affinity: CpuMask,
    /// `WF_SYNC`: the waker will sleep right after (pipe hand-off).
    pub sync: bool,
    /// [`wake_wide`]: the waker wakes many different tasks, so wake-affine
    /// is not tried.
    pub wake_wide: bool,
    /// The wakee's `task_h_load` (its load_avg).
    pub task_load: u64,
    /// The wakee's `task_util_est` (§2.4).
    pub task_util: u64,
    /// The wakee's effective `[uclamp_min, uclamp_max]` (§3.3).
    pub uclamp: [u16; 2],
    /// The waker's `task_h_load` (`current`), used for sync wake-ups.
    pub waker_load: u64,
}

/// Why a CPU was chosen, for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeReason {
    /// The wake-affine target (waker's or previous CPU) was idle.
    TargetIdle,
    /// The previous CPU was idle and shares the target's cluster.
    PrevIdle,
    /// The first idle CPU found in the target's cluster.
    IdleSibling,
    /// An idle CPU whose capacity fits the task (asymmetric systems).
    IdleCapacity,
    /// No idle CPU: the wake-affine target, busy.
    Busy,
    /// The choice was outside the affinity; the first allowed CPU instead
    /// (`select_fallback_rq`).
    Fallback,
}

/// The CPU to enqueue the wakee on.
#[must_use = "the mechanism must enqueue the task on this CPU"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeTarget {
    /// The chosen CPU.
    pub cpu: CpuId,
    /// Why.
    pub reason: WakeReason,
}

/// `wake_wide(p)`: whether the waker/wakee pair looks like one-to-many
/// (Michael Wang, "sched: Use wakee flips to decide wake_affine", 2013).
/// `wakee_flips` count how often a task switched whom it wakes (the
/// mechanism adds 1 on each change and halves them once a second). With
/// `factor` the cluster (LLC) size, the bigger count `master` and the smaller
/// `slave`: wide iff `slave >= factor && master >= slave * factor`.
pub fn wake_wide(waker_flips: u32, wakee_flips: u32, cluster_size: u32) -> bool {
    let (master, slave) = if waker_flips >= wakee_flips {
        (waker_flips, wakee_flips)
    } else {
        (wakee_flips, waker_flips)
    };
    slave >= cluster_size && u64::from(master) >= u64::from(slave) * u64::from(cluster_size)
}

/// `select_task_rq_fair` for a `WF_TTWU` wake-up, without EAS (§5.4 runs
/// first when EAS is on and the system is not overutilized).
///
/// Wake-affine is tried when the waker's CPU is allowed and the wake-up is
/// not wide; the domain is the lowest one spanning both CPUs (every level has
/// `SD_WAKE_AFFINE`). `select_idle_sibling` then looks for an idle CPU.
/// `snapshots` is every CPU's table or a view reading only what the
/// decision asks for ([`CpuLoads`]): the same decision either way.
pub fn select_task_rq<L: CpuLoads + ?Sized>(
    topology: &Topology,
    snapshots: &L,
    request: &WakeRequest,
) -> Result<WakeTarget, BalanceError> {
    snapshots.check(topology)?;
    check_cpu(topology, "prev_cpu", request.prev_cpu)?;
    check_cpu(topology, "waker_cpu", request.waker_cpu)?;
    let allowed = CpuMask(request.affinity.0 & topology.all_cpus().0);
    if allowed.0 == 0 {
        return Err(BalanceError::EmptyAffinity);
    }
    let (waker, prev) = (request.waker_cpu, request.prev_cpu);
    let mut target = prev;
    if !request.wake_wide && allowed.contains(waker) && waker != prev {
        let level = if topology.share_cache(waker, prev) {
            DomainLevel::Cluster
        } else {
            DomainLevel::System
        };
        let imbalance_pct = topology
            .domain(waker, level)
            .map_or(117, |domain| domain.imbalance_pct);
        target = wake_affine(topology, snapshots, request, imbalance_pct);
    }
    let chosen = select_idle_sibling(topology, snapshots, request, allowed, target);
    if allowed.contains(chosen.cpu) {
        return Ok(chosen);
    }
    // select_fallback_rq: an idle allowed CPU, else the first allowed one.
    let cpu = topology
        .cpus_in(allowed)
        .find(|&c| snapshots.idle(c))
        .or_else(|| topology.cpus_in(allowed).next())
        .ok_or(BalanceError::EmptyAffinity)?;
    Ok(WakeTarget {
        cpu,
        reason: WakeReason::Fallback,
    })
}

/// `wake_affine`: the waker's CPU if `wake_affine_idle` or, failing a
/// verdict, `wake_affine_weight` choose it; else the previous CPU.
pub fn wake_affine<L: CpuLoads + ?Sized>(
    topology: &Topology,
    snapshots: &L,
    request: &WakeRequest,
    imbalance_pct: u64,
) -> CpuId {
    let (this, prev) = (request.waker_cpu, request.prev_cpu);
    let verdict = wake_affine_idle(topology, snapshots, this, prev, request.sync).or_else(|| {
        wake_affine_weight(
            &snapshots.snapshot(this),
            &snapshots.snapshot(prev),
            request,
            imbalance_pct,
        )
        .then_some(this)
    });
    if verdict == Some(this) { this } else { prev }
}

/// `wake_affine_idle`: an idle waker CPU sharing the cache with prev gives
/// prev if prev is idle too, else the waker CPU; a sync wake-up from a CPU
/// running only the waker gives the waker CPU; an idle prev gives prev.
pub fn wake_affine_idle<L: CpuLoads + ?Sized>(
    topology: &Topology,
    snapshots: &L,
    this: CpuId,
    prev: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let idle = |cpu: CpuId| snapshots.idle(cpu);
    if idle(this) && topology.share_cache(this, prev) {
        return Some(if idle(prev) { prev } else { this });
    }
    if sync && snapshots.nr_running(this) == 1 {
        return Some(this);
    }
    idle(prev).then_some(prev)
}

/// `wake_affine_weight` (WA_WEIGHT, WA_BIAS on): pull the wakee to the
/// waker's CPU when its load there, scaled by prev's capacity, is below
/// prev's load without the wakee, scaled by this CPU's capacity and by half
/// the domain's imbalance margin:
///
/// ```text
///   this_eff = (load(this) [- load(waker) if sync] + load(p)) * 100 * cap(prev)
///   prev_eff = (load(prev) - load(p)) * (100 + (pct - 100)/2) * cap(this) [+ 1 if sync]
///   affine  <=> this_eff < prev_eff   (sync and load(waker) > load(this): affine)
/// ```
///
/// Sources: Linux commits f2cdd9cc6c97 ("sched/fair: Use a weight-based
/// approach for wake_affine", 2017), eeb603986391 and the `sync` tie-break.
pub fn wake_affine_weight(
    this: &CpuSnapshot,
    prev: &CpuSnapshot,
    request: &WakeRequest,
    imbalance_pct: u64,
) -> bool {
    let mut this_eff = i128::from(this.load_avg);
    if request.sync {
        let current = i128::from(request.waker_load);
        if current > this_eff {
            return true;
        }
        this_eff -= current;
    }
    let task_load = i128::from(request.task_load);
    this_eff = (this_eff + task_load) * 100 * i128::from(prev.capacity);
    let bias = 100 + (i128::from(imbalance_pct) - 100) / 2;
    let mut prev_eff = (i128::from(prev.load_avg) - task_load) * bias * i128::from(this.capacity);
    if request.sync {
        prev_eff += 1;
    }
    this_eff < prev_eff
}

/// `select_idle_sibling(p, prev, target)`: the target if idle (and fitting on
/// asymmetric systems), prev if idle in the same cluster, else an idle CPU:
/// by capacity fit over the asymmetric domain, or the first idle CPU of the
/// target's cluster scanning from `target + 1` with wrap-around.
fn select_idle_sibling<L: CpuLoads + ?Sized>(
    topology: &Topology,
    snapshots: &L,
    request: &WakeRequest,
    allowed: CpuMask,
    target: CpuId,
) -> WakeTarget {
    let asym = topology.is_asymmetric();
    let [util_min, util_max] = request.uclamp;
    let fit = |cpu: CpuId| {
        util_fits_cpu(
            request.task_util,
            util_min,
            util_max,
            snapshots.capacity(cpu),
            topology.capacity_orig(cpu),
            topology.capacity_orig(cpu),
        )
    };
    let usable = |cpu: CpuId| {
        allowed.contains(cpu) && snapshots.idle(cpu) && (!asym || fit(cpu) == CpuFit::Fits)
    };
    let prev = request.prev_cpu;
    if usable(target) {
        return WakeTarget {
            cpu: target,
            reason: WakeReason::TargetIdle,
        };
    }
    if prev != target && topology.share_cache(prev, target) && usable(prev) {
        return WakeTarget {
            cpu: prev,
            reason: WakeReason::PrevIdle,
        };
    }
    if let Some(domain) = topology.asym_capacity_domain(target) {
        let span = CpuMask(domain.span.0 & allowed.0);
        return match select_idle_capacity(topology, snapshots, span, target, &fit) {
            Some(cpu) => WakeTarget {
                cpu,
                reason: WakeReason::IdleCapacity,
            },
            None => WakeTarget {
                cpu: target,
                reason: WakeReason::Busy,
            },
        };
    }
    let span = CpuMask(topology.cluster_mask(target).0 & allowed.0);
    match for_each_cpu_wrap(topology, span, target.0 + 1).find(|&c| snapshots.idle(c)) {
        Some(cpu) => WakeTarget {
            cpu,
            reason: WakeReason::IdleSibling,
        },
        None => WakeTarget {
            cpu: target,
            reason: WakeReason::Busy,
        },
    }
}

/// `select_idle_capacity`: scanning `span` from `target`, the first idle CPU
/// where the task fits; else the idle CPU that fits best (a CPU missing only
/// the uclamp_min hint beats one that does not fit), then by capacity.
fn select_idle_capacity<L: CpuLoads + ?Sized>(
    topology: &Topology,
    snapshots: &L,
    span: CpuMask,
    target: CpuId,
    fit: &dyn Fn(CpuId) -> CpuFit,
) -> Option<CpuId> {
    let mut best: Option<(i32, u64, CpuId)> = None;
    for cpu in for_each_cpu_wrap(topology, span, target.0) {
        if !snapshots.idle(cpu) {
            continue;
        }
        let fits = fit(cpu);
        if fits == CpuFit::Fits {
            return Some(cpu);
        }
        let capacity = if fits == CpuFit::FitsBoostUnmet {
            topology.capacity_orig(cpu)
        } else {
            snapshots.capacity(cpu)
        };
        // -1 (boost unmet) ranks before 0 (does not fit); then larger capacity.
        let rank = fits.as_linux();
        let better = match best {
            None => true,
            Some((best_rank, best_capacity, _)) => {
                rank < best_rank || (rank == best_rank && capacity > best_capacity)
            }
        };
        if better {
            best = Some((rank, capacity, cpu));
        }
    }
    best.map(|(_, _, cpu)| cpu)
}

/// `for_each_cpu_wrap(cpu, mask, start)`: the CPUs of `mask` from `start`
/// upwards, then from 0 up to `start`.
fn for_each_cpu_wrap(
    topology: &Topology,
    mask: CpuMask,
    start: u16,
) -> impl Iterator<Item = CpuId> + '_ {
    let n = topology.nr_cpus() as u16;
    let start = if n == 0 { 0 } else { start % n };
    (0..n)
        .map(move |offset| CpuId((start + offset) % n))
        .filter(move |cpu| mask.contains(*cpu))
}
