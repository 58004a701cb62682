//! Cycle-counter costs of the scheduler's hot paths (issue 4):
//! `enqueue_task`, `dequeue_task`, `pick_next_task` and the context switch are
//! bracketed here; the PELT and uclamp updates inside the core are bracketed by
//! the core's probe (`fairway_sched::stats::probe`) with the same counter.
//!
//! Each CPU keeps, per operation, a log2 histogram and an exact sampler
//! (`fairway_sched::stats::CostStats`), touched only by that CPU with IRQs
//! masked (under its run-queue lock). The cost of an empty bracket is measured
//! at boot on each CPU (the minimum over a calibration loop) and subtracted from
//! every sample. Under QEMU icount the counter counts instructions.
//!
//! The cargo feature `costs` (on by default) compiles all of it in;
//! without it, `bracket` is the bare operation and nothing is recorded.

use fairway_sched::cpu_core::OpCosts;
use fairway_sched::stats::probe::{CostProbe, ProbeCosts};
use fairway_sched::stats::{CostStats, ExactSampler, overhead_from_calibration};

use crate::config::MAX_CPUS;
use crate::platform::sync::IrqSpinLock;

/// A measured operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Op {
    /// `enqueue_task` of the run queue (PELT and uclamp included).
    EnqueueTask,
    /// `dequeue_task` of the run queue (PELT and uclamp included).
    DequeueTask,
    /// `pick_next_task` plus `set_next_task`.
    PickNextTask,
    /// The PELT updates inside one enqueue or dequeue.
    PeltUpdate,
    /// The uclamp bucket update inside one enqueue or dequeue.
    UclampUpdate,
    /// Saving one task's registers and restoring another's.
    ContextSwitch,
    /// `find_energy_efficient_cpu` at a wake-up, when EAS chose (issue 14).
    FindEnergyEfficientCpu,
}

/// Every operation, in report order.
pub const OPS: [Op; 7] = [
    Op::EnqueueTask,
    Op::DequeueTask,
    Op::PickNextTask,
    Op::PeltUpdate,
    Op::UclampUpdate,
    Op::ContextSwitch,
    Op::FindEnergyEfficientCpu,
];

impl Op {
    /// The name in reports (`docs/report-format.md`).
    pub const fn name(self) -> &'static str {
        match self {
            Op::EnqueueTask => "enqueue_task",
            Op::DequeueTask => "dequeue_task",
            Op::PickNextTask => "pick_next_task",
            Op::PeltUpdate => "pelt_update",
            Op::UclampUpdate => "uclamp_update",
            Op::ContextSwitch => "context_switch",
            Op::FindEnergyEfficientCpu => "find_energy_efficient_cpu",
        }
    }
}

/// Samples kept per operation per CPU for exact quantiles.
const SAMPLES: usize = 4096;
const CALIBRATION_ROUNDS: usize = 1000;

/// One CPU's cost statistics.
pub struct CpuCosts {
    /// Per operation, indexed by `Op as usize`.
    pub ops: [CostStats; OPS.len()],
    /// The empty-bracket cost subtracted from the kernel's brackets.
    pub overhead: u64,
    /// The empty-bracket cost subtracted from the core's probes.
    pub probe_overhead: u64,
}

impl CpuCosts {
    /// The empty-bracket cost subtracted from `op`'s samples (per bracket).
    pub fn overhead_of(&self, op: Op) -> u64 {
        match op {
            Op::PeltUpdate | Op::UclampUpdate => self.probe_overhead,
            _ => self.overhead,
        }
    }
}

static COSTS: [IrqSpinLock<Option<CpuCosts>>; MAX_CPUS] =
    [const { IrqSpinLock::new(None) }; MAX_CPUS];

/// Whether the cost counters are compiled in.
pub const ENABLED: bool = cfg!(feature = "costs");

/// The counter the brackets read.
#[inline(always)]
pub fn counter() -> u64 {
    crate::arch::pmu::cycles()
}

/// Allocates this CPU's statistics and measures the bracket overheads (each
/// CPU at boot, IRQs masked).
pub fn init_cpu(cpu: usize) {
    if !ENABLED {
        return;
    }
    let mut empty = ExactSampler::new(CALIBRATION_ROUNDS).expect("calibration capacity");
    for _ in 0..CALIBRATION_ROUNDS {
        let start = counter();
        let end = counter();
        empty.record(end.wrapping_sub(start));
    }
    let overhead = overhead_from_calibration(&empty);
    let mut empty_probe = ExactSampler::new(CALIBRATION_ROUNDS).expect("calibration capacity");
    let mut probe = CostProbe::default();
    probe.set_counter(Some(counter));
    for _ in 0..CALIBRATION_ROUNDS {
        let start = probe.start();
        probe.end_pelt(start);
        empty_probe.record(probe.take().pelt);
    }
    let probe_overhead = overhead_from_calibration(&empty_probe);
    let ops = OPS.map(|op| new_stats(op, overhead));
    *COSTS[cpu].lock() = Some(CpuCosts {
        ops,
        overhead,
        probe_overhead,
    });
}

/// Records `cycles` (a raw bracket) for `op` on `cpu`.
#[inline]
pub fn record(cpu: usize, op: Op, cycles: u64) {
    if !ENABLED {
        return;
    }
    if let Some(costs) = COSTS[cpu].lock().as_mut() {
        costs.ops[op as usize].record(cycles);
    }
}

/// Records what one call into CPU `cpu`'s driver spent in `enqueue_task`,
/// `dequeue_task` and the pick, and the PELT updates its probe counted:
/// `take` hands over the driver's counts (`CpuCore::take_op_costs`), and is
/// called only when the cost counters are compiled in.
#[inline(always)]
pub fn record_op_costs(cpu: usize, take: impl FnOnce() -> OpCosts) {
    if ENABLED {
        record_costs(cpu, take());
    }
}

fn record_costs(cpu: usize, costs: OpCosts) {
    if let Some(cycles) = costs.enqueue {
        record(cpu, Op::EnqueueTask, cycles);
        record_internal(cpu, costs.enqueue_internal);
    }
    if let Some(cycles) = costs.dequeue {
        record(cpu, Op::DequeueTask, cycles);
        record_internal(cpu, costs.dequeue_internal);
    }
    if let Some(cycles) = costs.pick {
        record(cpu, Op::PickNextTask, cycles);
    }
    // Every other PELT update (a switch's group levels, the tick, the
    // blocked-load decay): the PELT histogram covers them all.
    record_internal(cpu, costs.other_internal);
}

/// Runs `operation` between two counter reads and records the difference.
#[inline(always)]
pub fn bracket<R>(cpu: usize, op: Op, operation: impl FnOnce() -> R) -> R {
    if !ENABLED {
        return operation();
    }
    let start = counter();
    let result = operation();
    let end = counter();
    record(cpu, op, end.wrapping_sub(start));
    result
}

/// Statistics for `op`: the kernel's brackets subtract `overhead` per sample;
/// the core's probes are corrected per bracket in [`record_internal`].
fn new_stats(op: Op, overhead: u64) -> CostStats {
    let mut stats = CostStats::new(op.name(), SAMPLES).expect("sample capacity");
    if !matches!(op, Op::PeltUpdate | Op::UclampUpdate) {
        stats.set_overhead(overhead);
    }
    stats
}

/// Records the core's PELT and uclamp probe counts of one enqueue or dequeue,
/// less the empty-probe cost of each bracket the core made (one per entity
/// updated, one per uclamp update); nothing when the core made no bracket.
pub fn record_internal(cpu: usize, costs: ProbeCosts) {
    if !ENABLED {
        return;
    }
    if let Some(state) = COSTS[cpu].lock().as_mut() {
        let per_bracket = state.probe_overhead;
        if costs.pelt_brackets > 0 {
            let net = costs.pelt.saturating_sub(per_bracket * costs.pelt_brackets);
            state.ops[Op::PeltUpdate as usize].record(net);
        }
        if costs.uclamp_brackets > 0 {
            let net = costs
                .uclamp
                .saturating_sub(per_bracket * costs.uclamp_brackets);
            state.ops[Op::UclampUpdate as usize].record(net);
        }
    }
}

/// Clears every CPU's statistics (keeping the calibration), so that a
/// benchmark measures only its own run.
pub fn reset() {
    for slot in &COSTS {
        if let Some(costs) = slot.lock().as_mut() {
            for stats in costs.ops.iter_mut() {
                stats.histogram.clear();
                stats.sampler.clear();
            }
        }
    }
}

/// Runs `visit` on `cpu`'s statistics (for the report).
pub fn with_costs<R>(cpu: usize, visit: impl FnOnce(&mut CpuCosts) -> R) -> Option<R> {
    COSTS[cpu].lock().as_mut().map(visit)
}
