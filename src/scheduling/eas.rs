//! Energy-aware placement, the mechanism half (docs/eas.md): at boot the
//! board's performance domains go through Linux's checks
//! (`fairway_sched::eas::eas_possible`, §5.3) and the kernel says whether EAS
//! runs and why not; while it runs, wake-ups hand the core's
//! `select_task_rq` the domains' energy models and the root domain's
//! overutilized flag, and `find_energy_efficient_cpu` chooses (§5.4).
//!
//! The flag (`rd->overutilized`, §5.5) is set when a woken task is enqueued
//! and at the tick on a CPU whose utilization no longer fits it, and
//! recomputed over every CPU's snapshot at each periodic and newly-idle
//! load balance pass, the only places it clears. The simulator does the
//! same (`sim/src/engine/eas.rs`).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fairway_sched::balance::CpuSnapshot;
use fairway_sched::cpu_core::FeecOutcome;
use fairway_sched::eas::{
    EasInputs, EnergyContext, EnergyDomain, any_overutilized, cpu_overutilized, eas_possible,
    enabled::DomainState,
};
use fairway_sched::schedutil::Governor;
use fairway_sched::task::CpuMask;
use fairway_sched::topology::Topology;
use spin::Once;

use crate::board::BoardInfo;

/// The root domain's performance domains, when EAS runs.
static DOMAINS: Once<Vec<EnergyDomain>> = Once::new();
/// Whether EAS runs (one load for the wake-up and tick paths).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// `rd->overutilized`.
static OVERUTILIZED: AtomicBool = AtomicBool::new(false);
/// Wake-ups `find_energy_efficient_cpu` placed, and those it ran for but
/// left to the wake-up path (the seed experiment's explanation, docs/eas.md).
static FEEC_PLACED: AtomicU64 = AtomicU64::new(0);
static FEEC_DECLINED: AtomicU64 = AtomicU64::new(0);

/// Counts what `find_energy_efficient_cpu` did for one wake-up.
#[inline]
pub fn count_feec(outcome: FeecOutcome) {
    let counter = match outcome {
        FeecOutcome::NotRun => return,
        FeecOutcome::Placed => &FEEC_PLACED,
        FeecOutcome::Declined => &FEEC_DECLINED,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The report's metrics of EAS, when it runs: `feec_placed` and
/// `feec_declined` since boot.
pub fn metrics() -> Vec<(&'static str, u64)> {
    if !active() {
        return Vec::new();
    }
    alloc::vec![
        ("feec_placed", FEEC_PLACED.load(Ordering::Relaxed)),
        ("feec_declined", FEEC_DECLINED.load(Ordering::Relaxed)),
    ]
}

/// Decides at boot whether EAS runs on `board` under `topology`, with
/// `sched_energy_aware=` and `governor=`, and logs the answer.
pub fn init(board: &BoardInfo, topology: &Topology, energy_aware: bool, governor: Governor) {
    let models = super::energy::models();
    let mut states = Vec::new();
    for index in 0..board.perf_domains.len() {
        let cpus = board
            .cpus
            .iter()
            .enumerate()
            .filter(|(_, info)| info.perf_domain == Some(index as u8))
            .fold(0u64, |mask, (cpu, _)| mask | 1 << cpu);
        if cpus == 0 {
            continue;
        }
        states.push(DomainState {
            cpus: CpuMask(cpus),
            governor,
            energy_model: models.iter().any(|(mask, _)| u64::from(*mask) == cpus),
        });
    }
    let verdict = eas_possible(&EasInputs {
        energy_aware,
        topology,
        domains: &states,
    });
    match verdict {
        Ok(()) => {
            let domains: Vec<EnergyDomain> = models
                .iter()
                .map(|(mask, model)| EnergyDomain {
                    cpus: CpuMask(u64::from(*mask)),
                    model: model.clone(),
                })
                .collect();
            if super::settings::config().eas_overutilized {
                defmt::info!(
                    "eas: on ({=usize} perf domains), also when overutilized (eas_overutilized=1)",
                    domains.len()
                );
            } else {
                defmt::info!("eas: on ({=usize} perf domains)", domains.len());
            }
            DOMAINS.call_once(|| domains);
            ACTIVE.store(true, Ordering::Release);
        }
        Err(reason) => defmt::info!("eas: off: {}", defmt::Display2Format(&reason)),
    }
}

/// Whether EAS runs.
#[inline]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// What a wake-up needs of EAS, when it runs.
pub fn context() -> Option<EnergyContext<'static>> {
    if !active() {
        return None;
    }
    DOMAINS.get().map(|domains| EnergyContext {
        domains,
        overutilized: OVERUTILIZED.load(Ordering::Relaxed),
        when_overutilized: super::settings::config().eas_overutilized,
    })
}

/// `check_update_overutilized_status` (a woken task's enqueue, the tick):
/// `snapshot`, the CPU's just published, no longer fitting sets the flag.
pub fn note_overutilized(snapshot: &CpuSnapshot, capacity_orig: u64) {
    if active()
        && !OVERUTILIZED.load(Ordering::Relaxed)
        && cpu_overutilized(snapshot, capacity_orig)
    {
        OVERUTILIZED.store(true, Ordering::Relaxed);
    }
}

/// Load balancing's recomputation at the root domain.
pub fn recompute_overutilized(topology: &Topology, snapshots: &[CpuSnapshot]) {
    if active() {
        OVERUTILIZED.store(any_overutilized(topology, snapshots), Ordering::Relaxed);
    }
}

/// Whether the root domain is overutilized (for the report).
pub fn overutilized() -> bool {
    OVERUTILIZED.load(Ordering::Relaxed)
}
