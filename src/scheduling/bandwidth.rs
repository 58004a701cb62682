//! CFS bandwidth control in the kernel (docs/linux-sched-reference.md §4.2):
//! the task groups' pools, shared by every CPU's core, and their period and
//! slack timers as high-resolution timers pinned to the CPU that armed them.
//!
//! ```text
//!   a core asks for a timer ─► arm_timer, the core's hook (under its
//!                               run-queue lock): hrtimer on this CPU
//!   timer fires (IRQ, no lock) ─► pool decides under its own lock
//!       grant for this CPU   ─► distribute_runtime under this run queue's lock
//!       grant for another    ─► that CPU's grant list + call-function IPI;
//!                               it applies the grant under its own lock
//! ```
//!
//! No CPU takes another CPU's run-queue lock to unthrottle it (Linux sends a
//! CSD for the same reason). Until a group gets a quota the pools do not exist
//! and the cores pay one test per `update_curr`; with `cfs_bandwidth=0` (the
//! default) they pay nothing, and neither does this module: the cores arm
//! their timers through the hook, so no hot path polls for them.

use fairway_sched::bandwidth::pools::{BandwidthTimer, BandwidthTimerKind};
use fairway_sched::bandwidth::{Bandwidth, BandwidthError};
use fairway_sched::fair::GroupError;
use fairway_sched::task::GroupId;
use heapless::Deque;

use super::observe::trace_group_bandwidth;
pub use super::run_queue::pools;
use super::run_queue::{carry_out_decision, pools_attached, run_queue, with_run_queue};
use super::settings::config;
use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::config::{MAX_CPUS, MAX_GROUPS};
use crate::observe::{bandwidth as bandwidth_trace, trace};
use crate::platform::sync::IrqSpinLock;
use crate::platform::{hrtimer, percpu};

/// A grant waiting for the CPU it is for.
#[derive(Clone, Copy)]
struct PendingGrant {
    group: GroupId,
    amount: u64,
    unthrottle: bool,
}

/// Grants for each CPU, carried by the call-function IPI. A run queue is in a
/// pool's FIFO at most once, so a CPU waits for at most a few grants per group.
const GRANT_SLOTS: usize = 4 * MAX_GROUPS;
static GRANTS: [IrqSpinLock<Deque<PendingGrant, GRANT_SLOTS>>; MAX_CPUS] =
    [const { IrqSpinLock::new(Deque::new()) }; MAX_CPUS];

/// Why a group's bandwidth could not be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetBandwidthError {
    /// Linux's `tg_set_cfs_bandwidth` refuses the settings (`EINVAL`).
    Invalid(BandwidthError),
    /// The group does not exist, or is the root.
    Group(GroupError),
    /// The run queues were built without bandwidth control: boot with
    /// `cfs_bandwidth=1` (the host runner adds it for a scenario that sets a
    /// `cpu.max`).
    NotBuilt,
}

impl core::fmt::Display for SetBandwidthError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SetBandwidthError::Invalid(error) => write!(f, "invalid argument: {error}"),
            SetBandwidthError::Group(error) => write!(f, "{error}"),
            SetBandwidthError::NotBuilt => f.write_str(
                "the run queues were built without bandwidth control: boot with cfs_bandwidth=1",
            ),
        }
    }
}

/// Sets `group`'s `cpu.max` and `cpu.max.burst` on every CPU
/// (`tg_set_cfs_bandwidth`, §4.1): the pool is refilled (a first quota
/// makes it, full, its period grid starting where `bw_timer=` says, §4.6;
/// a pool that exists keeps its grid and its armed timers), and every CPU's
/// run queue of the group is told (a throttled one comes back).
///
/// `origin` is where the scenario's time starts: a first grid is laid from
/// it, so that the kernel's periods fall where the simulator's do. Returns a
/// point of the group's grid, in ns after `origin`: the armed timer's next
/// expiry, or where the grid starts; the refills fall on it plus whole
/// periods (0 while the group never had a quota).
pub fn set_group_bandwidth(
    group: GroupId,
    settings: Bandwidth,
    origin: u64,
) -> Result<u64, SetBandwidthError> {
    settings.validate().map_err(SetBandwidthError::Invalid)?;
    if !config().cfs_bandwidth {
        return Err(SetBandwidthError::NotBuilt);
    }
    let cpus = percpu::nr_cpus();
    let pools = pools_attached(cpus, arm_timer);
    let period = settings.period.max(1);
    let offset = (origin + config().bandwidth_timer.offset(group.0, period)) % period;
    // A timer callback on this CPU takes the same pool lock.
    let irq_state = crate::arch::cpu::irq_save();
    let grid = pools.set(group, settings, offset, cpus);
    crate::arch::cpu::irq_restore(irq_state);
    // A grid point after the run's start as it is (the timer's next expiry
    // when armed), else the grid's phase.
    let start = grid.map_or(0, |grid| {
        if grid >= origin {
            grid - origin
        } else {
            (grid % period + period - origin % period) % period
        }
    });
    for cpu in 0..cpus {
        let mut rq = run_queue(cpu).lock();
        let now = now_ns();
        let decision = rq
            .core
            .set_group_bandwidth(group, settings.quota.is_some(), now)
            .map_err(SetBandwidthError::Group)?;
        trace_group_bandwidth(now, cpu, rq.core.run_queue());
        carry_out_decision(&mut rq, cpu, decision);
    }
    Ok(start)
}

/// The cores' hook for a timer request (under the requesting core's
/// run-queue lock): arms it on this CPU, as Linux pins the period and slack
/// timers to the CPU that starts them.
fn arm_timer(timer: BandwidthTimer) {
    let slack = timer.kind == BandwidthTimerKind::Slack;
    let callback = if slack { slack_timer } else { period_timer };
    hrtimer::start(
        hrtimer::bandwidth_timer(timer.group.index(), slack),
        timer.expires,
        callback,
        timer.group.index(),
    );
}

/// A group's period timer (`sched_cfs_period_timer`): the pool refills and
/// pays the throttled run queues; it runs again unless the pool went idle.
fn period_timer(group: usize) {
    let Some(pools) = pools() else {
        return;
    };
    let id = GroupId(group as u16);
    let Some(outcome) = pools.with(id, |pool| pool.period_timer(now_ns)) else {
        return;
    };
    if trace::recording() {
        let runtime = pools.with(id, |pool| pool.runtime());
        bandwidth_trace::pool_runtime(now_ns(), id, runtime);
    }
    if let Some(at) = outcome.rearm {
        hrtimer::start(
            hrtimer::bandwidth_timer(group, false),
            at,
            period_timer,
            group,
        );
    }
    for grant in &outcome.grants {
        deliver(id, grant.cpu.into(), grant.amount, grant.unthrottle);
    }
}

/// A group's slack timer (`sched_cfs_slack_timer`): returned runtime is
/// paid out before the refill.
fn slack_timer(group: usize) {
    let Some(pools) = pools() else {
        return;
    };
    let id = GroupId(group as u16);
    let now = now_ns();
    let grants = pools
        .with(id, |pool| pool.slack_timer(now))
        .unwrap_or_default();
    if trace::recording() {
        let runtime = pools.with(id, |pool| pool.runtime());
        bandwidth_trace::pool_runtime(now, id, runtime);
    }
    for grant in &grants {
        deliver(id, grant.cpu.into(), grant.amount, grant.unthrottle);
    }
}

/// Hands a grant to the CPU it is for: here under this run queue's lock,
/// elsewhere through that CPU's grant list and the call-function IPI.
fn deliver(group: GroupId, cpu: usize, amount: u64, unthrottle: bool) {
    let grant = PendingGrant {
        group,
        amount,
        unthrottle,
    };
    if cpu == this_cpu() {
        apply(cpu, grant);
        return;
    }
    if GRANTS[cpu].lock().push_back(grant).is_err() {
        // A lost grant would leave the group throttled for good.
        panic!("bandwidth: CPU {}'s grant list is full", cpu);
    }
    if crate::platform::smp::call_function(cpu, apply_pending_grants, cpu).is_err() {
        // Its mailbox is full: its next tick applies the grant.
        defmt::warn!(
            "bandwidth: CPU {=usize}'s mailbox is full; grant deferred to its tick",
            cpu
        );
    }
}

fn apply(cpu: usize, grant: PendingGrant) {
    let mut rq = run_queue(cpu).lock();
    let now = now_ns();
    let decision = rq
        .core
        .distribute_runtime(grant.group, grant.amount, grant.unthrottle, now);
    trace_group_bandwidth(now, cpu, rq.core.run_queue());
    carry_out_decision(&mut rq, cpu, decision);
}

/// Applies the grants other CPUs' timers left for this CPU (the
/// call-function IPI, and each tick as a fallback).
pub fn apply_pending_grants(cpu: usize) {
    if pools().is_none() {
        return;
    }
    loop {
        let Some(grant) = GRANTS[cpu].lock().pop_front() else {
            break;
        };
        apply(cpu, grant);
    }
}

/// A limited group's `cpu.max` and `cpu.stat` at one instant.
#[derive(Clone, Debug)]
pub struct GroupStats {
    /// The settings in force (the period doubles when too short).
    pub settings: Bandwidth,
    /// `nr_periods`, `nr_throttled`, `throttled_usec`, `nr_bursts`, `burst_usec`.
    pub stats: fairway_sched::bandwidth::pool::BandwidthStats,
    /// `cpu.stat.local`'s throttled time of each CPU, in ns.
    pub local_throttled_ns: alloc::vec::Vec<u64>,
    /// The largest debt each CPU's run queue of the group carried into or
    /// out of a throttle, in ns (`CfsRqRuntime::max_debt`).
    pub max_debt_ns: alloc::vec::Vec<u64>,
}

/// `group`'s statistics now, if it has a quota (takes each CPU's run-queue
/// lock in turn, briefly).
pub fn group_stats(group: GroupId) -> Option<GroupStats> {
    let pools = pools()?;
    // A timer callback on this CPU takes the same pool lock.
    let irq_state = crate::arch::cpu::irq_save();
    let settings_and_stats = pools.settings(group).zip(pools.stats(group));
    crate::arch::cpu::irq_restore(irq_state);
    let (settings, stats) = settings_and_stats?;
    let (local_throttled_ns, max_debt_ns) = (0..percpu::nr_online())
        .map(|cpu| {
            with_run_queue(cpu, |rq| {
                rq.queue()
                    .fair()
                    .and_then(|fair| fair.group_queue(group))
                    .map_or((0, 0), |queue| {
                        (queue.runtime.throttled_time_self, queue.runtime.max_debt)
                    })
            })
        })
        .unzip();
    Some(GroupStats {
        settings,
        stats,
        local_throttled_ns,
        max_debt_ns,
    })
}
