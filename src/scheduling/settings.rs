//! The scheduler's settings: the command line's `SchedConfig` and the policy
//! built from it, fixed once at boot and then only read, by every file of
//! this floor (the lowest of them, with `energy`).

use fairway_sched::run_queue::PolicyKind;
use spin::Once;

use crate::platform::percpu;

/// The scheduler's settings (`SchedConfig`, from the command line) and the
/// policy built from them: set once at boot by [`configure`], then only read.
struct Settings {
    config: SchedConfig,
    policy: PolicyKind,
}
static SETTINGS: Once<Settings> = Once::new();

pub use fairway_sched::boot_options::{PolicyChoice, SchedConfig};

/// Fixes the scheduler's settings for the whole run (boot core, once, when the
/// CPU count is known, before any run queue is built or tick started). One
/// value set once: no setter order to respect.
pub fn configure(config: SchedConfig, nr_cpus: usize) {
    SETTINGS.call_once(|| Settings {
        config,
        policy: config.policy_kind(nr_cpus),
    });
}

/// The settings in force ([`SchedConfig::DEFAULT`] until [`configure`] ran).
pub fn config() -> &'static SchedConfig {
    SETTINGS
        .get()
        .map_or(&SchedConfig::DEFAULT, |settings| &settings.config)
}

/// The policy the run queues are built with (once [`configure`] ran).
pub fn policy() -> PolicyKind {
    SETTINGS
        .get()
        .expect("settings fixed before the run queues are built")
        .policy
}

/// Whether uclamp is in use: its run-queue accounting runs (`uclamp=`,
/// resolved at boot).
pub fn uclamp_enabled() -> bool {
    config().uclamp == Some(true)
}

/// The most task groups (root included) the run queues are built for.
pub use crate::config::MAX_GROUPS;

/// The round-robin time slice.
pub fn slice_ns() -> u64 {
    config().slice_ns()
}

/// Whether slices end on a high-resolution timer.
pub fn hrtick_enabled() -> bool {
    config().hrtick
}

/// Where CPU `cpu`'s ticks fall within the period: Linux's `skew_tick=1`
/// (`tick_sched_timer` setup) offsets CPU n by n × (period / 2) / nr_cpus;
/// with `skew_tick=0` (the default, as in Linux) every CPU ticks at the
/// multiples of the period.
///
/// Why the option exists: every tick reprograms the CPU's timer comparator,
/// and under QEMU icount (vCPUs run round-robin on one thread) a vCPU whose
/// new deadline becomes the earliest of all is sent to the back of the round:
/// with the ticks of all CPUs at the same instants one CPU lost that way
/// 0.4-0.8 s of each 2 s (issue 4, 12 hogs on 4 CPUs, CFS), charged to
/// whatever task was running, which left CFS 2-2.5 % off its weights at HZ=100
/// and 200. Skewed, a CPU's next tick is never the earliest deadline when it
/// is programmed (the other CPUs tick before it): 0.08-0.35 s per CPU, and
/// within 1.2 %. Linux offers the option for the same kind of reason (CPUs
/// contending at the same instant); on a board it only moves the ticks.
///
/// `tick_seed=N` adds a phase drawn from N, so that the seed experiment of
/// issue 14 can perturb otherwise identical icount runs (docs/eas.md).
pub fn tick_offset_ns(cpu: usize) -> u64 {
    config().tick_offset_ns(cpu, percpu::nr_cpus())
}

/// The first tick of CPU `cpu` after `now`.
pub fn next_tick_after(cpu: usize, now: u64) -> u64 {
    let period = tick_period_ns();
    let offset = tick_offset_ns(cpu);
    (now.saturating_sub(offset) / period + 1) * period + offset
}

/// The scheduler tick period in ns.
pub fn tick_period_ns() -> u64 {
    config().tick_ns()
}
