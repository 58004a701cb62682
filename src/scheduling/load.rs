//! Each CPU's load, published under its run-queue lock and read by any CPU
//! without locks (Linux reads other run queues' PELT signals the same way),
//! and the CPUs' topology they are read against. Wake-up placement, load
//! balancing, EAS and cpufreq's explain records read them; the wake-up, the
//! switch, the tick and the balancer publish them.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use fairway_sched::balance::{BalanceError, CpuLoads, CpuSnapshot};
use fairway_sched::task::{CpuId, CpuMask};
use fairway_sched::topology::Topology;
use heapless::Vec;
use spin::Once;

use super::eas;
use super::run_queue::CpuRunQueue;
use crate::config::MAX_CPUS;
use crate::platform::percpu;
use crate::tasks::task;

/// A CPU's load, published under its run-queue lock, read by anyone.
struct Snapshot {
    nr_running: AtomicU32,
    idle: AtomicBool,
    load_avg: AtomicU64,
    util_avg: AtomicU64,
    runnable_avg: AtomicU64,
    util_est: AtomicU64,
    /// The run queue's clamps for EAS, packed by [`pack_clamps`]; published
    /// only while EAS runs.
    clamps: AtomicU32,
    /// `rq->misfit_task_load` (§5.5); published only on asymmetric CPUs.
    misfit_task_load: AtomicU64,
}

/// `[uclamp_min, uclamp_max]` in bits 0..11 and 11..22, `uclamp_idle` in
/// bit 22, an RT task runnable in bit 23.
fn pack_clamps(uclamp: [u16; 2], uclamp_idle: bool, rt_runnable: bool) -> u32 {
    u32::from(uclamp[0])
        | u32::from(uclamp[1]) << 11
        | u32::from(uclamp_idle) << 22
        | u32::from(rt_runnable) << 23
}

/// [`pack_clamps`]' fields back.
fn unpack_clamps(packed: u32) -> ([u16; 2], bool, bool) {
    let value = |shift: u32| ((packed >> shift) & 0x7ff) as u16;
    (
        [value(0), value(11)],
        packed & 1 << 22 != 0,
        packed & 1 << 23 != 0,
    )
}

static SNAPSHOTS: [Snapshot; MAX_CPUS] = [const {
    Snapshot {
        nr_running: AtomicU32::new(0),
        idle: AtomicBool::new(true),
        load_avg: AtomicU64::new(0),
        util_avg: AtomicU64::new(0),
        runnable_avg: AtomicU64::new(0),
        util_est: AtomicU64::new(0),
        clamps: AtomicU32::new(1024 << 11 | 1 << 22),
        misfit_task_load: AtomicU64::new(0),
    }
}; MAX_CPUS];

static TOPOLOGY: Once<Topology> = Once::new();
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Whether [`publish`] publishes `misfit_task_load`: balancing on and the
/// CPUs asymmetric, decided once at boot by [`set_enabled`] and
/// [`set_topology`] rather than at each publish.
static PUBLISH_MISFIT: AtomicBool = AtomicBool::new(false);

/// Sets whether load balancing and wake-up placement are on (`balance=`,
/// boot core, before the topology is built).
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
    note_publish_misfit();
}

/// Keeps the CPUs' topology (boot core, once, before the other CPUs start).
pub fn set_topology(topology: Topology) {
    TOPOLOGY.call_once(|| topology);
    note_publish_misfit();
}

/// Only load balancing reads `misfit_task_load`: nothing to publish without
/// balancing or on identical CPUs.
fn note_publish_misfit() {
    let publish = enabled() && TOPOLOGY.get().is_some_and(Topology::is_asymmetric);
    PUBLISH_MISFIT.store(publish, Ordering::Relaxed);
}

/// The CPUs' topology, once built.
pub fn topology() -> Option<&'static Topology> {
    TOPOLOGY.get()
}

/// Whether load balancing and wake-up placement are on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) && TOPOLOGY.get().is_some()
}

/// Publishes `cpu`'s load (its run-queue lock held). What only EAS or
/// asymmetric CPUs publish is out of line ([`publish_clamps_and_misfit`]),
/// so that the switch and the wake-up, which publish at every call, save no
/// registers for it.
pub fn publish(cpu: usize, rq: &CpuRunQueue) {
    let signals = rq.queue().signals();
    let snapshot = &SNAPSHOTS[cpu];
    snapshot
        .nr_running
        .store(signals.nr_running as u32, Ordering::Relaxed);
    snapshot.idle.store(
        rq.core.current().is_none() && signals.nr_running == 0,
        Ordering::Relaxed,
    );
    snapshot.load_avg.store(signals.load_avg, Ordering::Relaxed);
    snapshot.util_avg.store(signals.util_avg, Ordering::Relaxed);
    snapshot
        .runnable_avg
        .store(signals.runnable_avg, Ordering::Relaxed);
    snapshot.util_est.store(signals.util_est, Ordering::Relaxed);
    if eas::active() || PUBLISH_MISFIT.load(Ordering::Relaxed) {
        publish_clamps_and_misfit(cpu, rq);
    }
}

/// The rest of [`publish`]: the run queue's clamps under EAS, and
/// `misfit_task_load` on asymmetric CPUs with balancing on.
#[inline(never)]
fn publish_clamps_and_misfit(cpu: usize, rq: &CpuRunQueue) {
    let snapshot = &SNAPSHOTS[cpu];
    if eas::active() {
        use fairway_sched::uclamp::ClampId;
        let queue = rq.queue();
        let clamps = pack_clamps(
            [
                queue.uclamp_value(ClampId::Min),
                queue.uclamp_value(ClampId::Max),
            ],
            queue.uclamp_idle(),
            queue.rt().highest_queued_priority().is_some(),
        );
        snapshot.clamps.store(clamps, Ordering::Relaxed);
    }
    // Only load balancing reads it (`note_publish_misfit`).
    if PUBLISH_MISFIT.load(Ordering::Relaxed)
        && let Some(topology) = TOPOLOGY.get()
    {
        snapshot
            .misfit_task_load
            .store(misfit_of(topology, cpu, rq), Ordering::Relaxed);
    }
}

/// `update_misfit_status` (§5.5): the `misfit_task_load` of `cpu`'s running
/// fair task, 0 when none.
fn misfit_of(topology: &Topology, cpu: usize, rq: &CpuRunQueue) -> u64 {
    let affinity = rq
        .core
        .current()
        .map_or(0, |id| task(id).affinity.load(Ordering::Relaxed));
    let capacity = u64::from(percpu::of(cpu).capacity.load(Ordering::Relaxed));
    rq.core
        .misfit_task_load(topology, CpuMask(affinity), capacity)
}

/// CPU `cpu`'s snapshot as last published.
pub fn snapshot(cpu: usize) -> CpuSnapshot {
    snapshot_of(cpu)
}

fn snapshot_of(cpu: usize) -> CpuSnapshot {
    let snapshot = &SNAPSHOTS[cpu];
    let online = percpu::of(cpu).online.load(Ordering::Relaxed);
    let (uclamp, uclamp_idle, rt_runnable) = unpack_clamps(snapshot.clamps.load(Ordering::Relaxed));
    CpuSnapshot {
        cpu: CpuId(cpu as u16),
        capacity: u64::from(percpu::of(cpu).capacity.load(Ordering::Relaxed)),
        // A CPU still booting looks empty (nothing to pull from it);
        // wake-ups never choose it (`online_mask`).
        nr_running: if online {
            snapshot.nr_running.load(Ordering::Relaxed)
        } else {
            0
        },
        idle: !online || snapshot.idle.load(Ordering::Relaxed),
        load_avg: snapshot.load_avg.load(Ordering::Relaxed),
        util_avg: snapshot.util_avg.load(Ordering::Relaxed),
        runnable_avg: snapshot.runnable_avg.load(Ordering::Relaxed),
        util_est: snapshot.util_est.load(Ordering::Relaxed),
        misfit_task_load: snapshot.misfit_task_load.load(Ordering::Relaxed),
        uclamp,
        uclamp_idle,
        rt_runnable,
    }
}

/// The published loads as wake-up placement reads them without EAS
/// ([`CpuLoads`]): each field read from the CPU's published values when the
/// decision asks for it, the same value [`snapshot`] gives, rather than every
/// CPU's whole snapshot copied first.
pub struct PublishedLoads;

impl CpuLoads for PublishedLoads {
    fn check(&self, topology: &Topology) -> Result<(), BalanceError> {
        // `fill_snapshots`' table: one entry per CPU, in order.
        let nr_cpus = percpu::nr_cpus().min(MAX_CPUS);
        if nr_cpus == topology.nr_cpus() {
            Ok(())
        } else {
            Err(BalanceError::SnapshotMismatch {
                index: nr_cpus.min(topology.nr_cpus()),
                nr_cpus: topology.nr_cpus(),
            })
        }
    }

    fn snapshot(&self, cpu: CpuId) -> CpuSnapshot {
        snapshot_of(cpu.index())
    }

    fn idle(&self, cpu: CpuId) -> bool {
        let cpu = cpu.index();
        !percpu::of(cpu).online.load(Ordering::Relaxed)
            || SNAPSHOTS[cpu].idle.load(Ordering::Relaxed)
    }

    fn nr_running(&self, cpu: CpuId) -> u32 {
        let cpu = cpu.index();
        if percpu::of(cpu).online.load(Ordering::Relaxed) {
            SNAPSHOTS[cpu].nr_running.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    fn capacity(&self, cpu: CpuId) -> u64 {
        u64::from(percpu::of(cpu.index()).capacity.load(Ordering::Relaxed))
    }
}

/// With EAS on, `cpu` (just published, its run-queue lock held) no longer
/// fitting its utilization makes the root domain overutilized (at a woken
/// task's enqueue and at the tick, §5.5).
pub fn note_overutilized(cpu: usize) {
    if let Some(topology) = TOPOLOGY.get().filter(|_| eas::active()) {
        eas::note_overutilized(&snapshot_of(cpu), topology.capacity_orig(CpuId(cpu as u16)));
    }
}

/// Whether some CPU published more than one runnable task or a misfit task
/// (`rd->overloaded`, §5.5).
pub fn any_overloaded() -> bool {
    (0..percpu::nr_cpus().min(MAX_CPUS)).any(|cpu| {
        let snapshot = &SNAPSHOTS[cpu];
        (percpu::of(cpu).online.load(Ordering::Relaxed)
            && snapshot.nr_running.load(Ordering::Relaxed) > 1)
            || snapshot.misfit_task_load.load(Ordering::Relaxed) > 0
    })
}

/// Every CPU's snapshot as published, into `all` (empty), where the caller
/// keeps the table: returned from a call, its whole room (every possible
/// CPU's) was copied with `memcpy`, about 440 instructions, at each wake-up
/// placement and each newly-idle balance.
pub fn fill_snapshots(all: &mut Vec<CpuSnapshot, MAX_CPUS>) {
    for cpu in 0..percpu::nr_cpus().min(MAX_CPUS) {
        let _ = all.push(snapshot_of(cpu));
    }
}

/// The CPUs online, as a mask.
pub fn online_mask() -> CpuMask {
    let mut mask = 0u64;
    for cpu in 0..percpu::nr_cpus() {
        if percpu::of(cpu).online.load(Ordering::Relaxed) {
            mask |= 1 << cpu;
        }
    }
    CpuMask(mask)
}

/// CPU `cpu`'s `load_avg` as last published (the waker's, for wake-affine).
pub fn load_avg(cpu: usize) -> u64 {
    SNAPSHOTS[cpu].load_avg.load(Ordering::Relaxed)
}
