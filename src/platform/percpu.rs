//! Per-CPU data: one slot per logical CPU, indexed by [`this_cpu`].

use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::arch::cpu::this_cpu;
use crate::config::MAX_CPUS;

/// What each CPU keeps about itself.
pub struct PerCpu {
    /// The CPU has finished booting and takes interrupts.
    pub online: AtomicBool,
    /// The running task should call `schedule()` at the next opportunity.
    pub need_resched: AtomicBool,
    /// The CPU switched to its idle task and has not balanced since.
    pub entered_idle: AtomicBool,
    /// Interrupt-handler nesting depth (0 in task context).
    pub irq_depth: AtomicU32,
    /// Times the idle loop came back from WFI.
    pub idle_wakeups: AtomicU64,
    /// Interrupts taken.
    pub interrupts: AtomicU64,
    /// Context switches made.
    pub context_switches: AtomicU64,
    /// Ticks handled.
    pub ticks: AtomicU64,
    /// The longest time between two ticks in which a task ran (ns): no task
    /// ran longer without its runtime charged. One tick period on hardware,
    /// more under QEMU icount, where a vCPU takes its timer interrupt only
    /// when the round-robin turn comes back to it (docs/icount.md). CFS
    /// bandwidth control charges at the same instants, so a group can
    /// overrun its runtime by up to this much per CPU.
    pub max_uncharged_ns: AtomicU64,
    /// When the gap of `max_uncharged_ns` ended (ns since boot): the runner
    /// names it when it warns that emulation shaped a run (docs/icount.md).
    pub max_uncharged_end_ns: AtomicU64,
    /// When the last tick was handled (ns), for `max_uncharged_ns`.
    pub last_tick_ns: AtomicU64,
    /// `context_switches` at the last tick, for `max_uncharged_ns`.
    pub switches_at_tick: AtomicU64,
    /// The task running on this CPU.
    pub current_task: AtomicU16,
    /// Counter value when the last context switch started (cost counters).
    pub switch_start: AtomicU64,
    /// The task switched away from, for `finish_task_switch`.
    pub previous_task: AtomicU16,
    /// MPIDR affinity of this CPU.
    pub mpidr: AtomicU64,
    /// Normalised capacity (1..=1024) from the device tree.
    pub capacity: AtomicU32,
    /// Cluster number from the device tree's cpu-map.
    pub cluster: AtomicU16,
    /// `arch_scale_freq_capacity`: the frequency in effect × 1024 / the
    /// highest (1024 without DVFS; `crate::cpufreq`).
    pub frequency_scale: AtomicU32,
}

impl PerCpu {
    const fn new() -> Self {
        PerCpu {
            online: AtomicBool::new(false),
            need_resched: AtomicBool::new(false),
            entered_idle: AtomicBool::new(false),
            irq_depth: AtomicU32::new(0),
            idle_wakeups: AtomicU64::new(0),
            interrupts: AtomicU64::new(0),
            context_switches: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            max_uncharged_ns: AtomicU64::new(0),
            max_uncharged_end_ns: AtomicU64::new(0),
            last_tick_ns: AtomicU64::new(0),
            switches_at_tick: AtomicU64::new(0),
            current_task: AtomicU16::new(0),
            switch_start: AtomicU64::new(0),
            previous_task: AtomicU16::new(0),
            mpidr: AtomicU64::new(0),
            capacity: AtomicU32::new(1024),
            cluster: AtomicU16::new(0),
            frequency_scale: AtomicU32::new(1024),
        }
    }
}

static CPUS: [PerCpu; MAX_CPUS] = [const { PerCpu::new() }; MAX_CPUS];

/// Where the host runner reads how far a run has got, for its progress line
/// (`xtask/src/run/progress.rs`): CPU 0's last tick, ns since boot, which the
/// tick writes anyway. Data only, kept by `#[used]` and found by name in the
/// image's symbols, so the kernel spends no instruction on it.
#[used]
pub static PROGRESS_NS: &AtomicU64 = &CPUS[0].last_tick_ns;
static NR_CPUS: AtomicUsize = AtomicUsize::new(1);

/// The calling CPU's data.
#[inline]
pub fn this() -> &'static PerCpu {
    &CPUS[this_cpu()]
}

/// CPU `cpu`'s data.
#[inline]
pub fn of(cpu: usize) -> &'static PerCpu {
    &CPUS[cpu]
}

/// How many CPUs the device tree lists (and Fairway uses).
pub fn nr_cpus() -> usize {
    NR_CPUS.load(Ordering::Relaxed)
}

/// Sets the CPU count (boot core, before starting the others).
pub fn set_nr_cpus(count: usize) {
    NR_CPUS.store(count.clamp(1, MAX_CPUS), Ordering::Relaxed);
}

/// How many CPUs are online.
pub fn nr_online() -> usize {
    CPUS.iter()
        .filter(|c| c.online.load(Ordering::Acquire))
        .count()
}

/// True inside an interrupt handler.
pub fn in_interrupt() -> bool {
    this().irq_depth.load(Ordering::Relaxed) > 0
}
