//! Explain mode's records (`explain=N`, the runner's `--explain N`): the
//! numbers behind the first N decisions, kept with the tracepoint records
//! (the same per-CPU buffers, the `trace` feature) and printed by the host
//! with the simulator's lines (`fairway_trace::explain`; docs/tracing.md,
//! "Explain mode"). A decision is a header record and one or more records
//! per candidate, all at the decision's instant on its CPU:
//!
//! - a pick among two or more fair tasks: each candidate's vruntime,
//!   deadline and lag against its queue's V (§1.5 of
//!   docs/linux-sched-reference.md), whether it is eligible, and for the
//!   task that was running whether RUN_TO_PARITY protects its slice;
//! - a wake-up's placement: each CPU's snapshot as placement read it;
//! - a frequency change: its domain's CPUs' utilization;
//! - a throttle or unthrottle of a task group's run queue (§4.2): its
//!   `runtime_remaining`, the pool's runtime and the group's `cpu.max`;
//! - under round robin, a pick among two or more tasks: the FIFO run queue
//!   in order, head first, and the time the task that was running ran of
//!   its slice.
//!
//! Reading state and changing none, explaining leaves the decisions as they
//! are; it costs the tracepoints' load and branch when off.

use core::sync::atomic::{AtomicU64, Ordering};

use fairway_sched::balance::CpuSnapshot;

use fairway_sched::fair::Entity;
use fairway_sched::task::GroupId;

use super::TaskId;
use super::scheduler::CpuRunQueue;
use super::tracepoint::{self, Kind, record, task_arg};
use crate::config::MAX_GROUPS;

/// Decisions left to explain.
static LEFT: AtomicU64 = AtomicU64::new(0);

/// Explains the next `decisions` decisions (boot, `explain=N`).
pub fn set_budget(decisions: u64) {
    LEFT.store(decisions, Ordering::Relaxed);
}

/// Whether decisions are being explained now.
#[inline(always)]
pub fn explaining() -> bool {
    tracepoint::recording() && LEFT.load(Ordering::Relaxed) > 0
}

/// Takes one decision from the budget; false when it is spent.
fn take() -> bool {
    LEFT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
        left.checked_sub(1)
    })
    .is_ok()
}

/// The pick just made on `cpu` (its run queue `rq` locked), where
/// `previous` was running and `next` was chosen: the fair tasks still
/// queued, read right after the pick, when a task going to sleep has left
/// and V is the pick's (as the simulator reads them), and the entities of
/// the task groups above them (a pick goes level by level, §2.6), each
/// against its own queue's V.
///
/// A candidate's records: `a` the task, or with flag bit 3 the group whose
/// entity it is; `b` the flags: bits 0-2 eligible, running (for a group:
/// the task that was running is below it), slice protected; bits 8-15 the
/// group whose queue it is on (0: the CPU's own).
#[inline(never)]
pub fn pick(cpu: usize, rq: &CpuRunQueue, now: u64, previous: TaskId, next: TaskId) {
    let queue = rq.core.run_queue();
    if let Some(rr) = queue.round_robin() {
        rr_pick(cpu, rr, rq, now, previous, next);
        return;
    }
    let Some(view) = queue.fair() else { return };
    // The groups above `task`, innermost first (the root not included).
    let groups_above = |task: TaskId| {
        view.groups_above(view.task_entity(task).map_or(GroupId::ROOT, |e| e.queue))
            .take(MAX_GROUPS)
    };
    // Groups as a bit set: no allocation here.
    const _: () = assert!(MAX_GROUPS <= 64, "a pick's groups are a u64 bit set");
    let bit = |group: GroupId| 1u64 << (group.index() % 64);
    let running_groups = groups_above(previous).fold(0u64, |set, g| set | bit(g));
    let candidates = || {
        rq.members().iter().filter_map(move |&id| {
            let entity = view.task_entity(id)?;
            if !entity.on_rq || entity.delayed {
                return None;
            }
            let v = queue.avg_vruntime(entity.queue)?;
            Some((id, entity, v))
        })
    };
    let count = candidates().count();
    if count < 2 {
        return;
    }
    let groups = candidates()
        .flat_map(|(id, _, _)| groups_above(id))
        .fold(0u64, |set, g| set | bit(g));
    let group_entity = |index: usize| {
        let group = GroupId(index as u16);
        let entity = view.group_entity_of(group)?;
        if !entity.on_rq || entity.delayed {
            return None;
        }
        let v = queue.avg_vruntime(entity.queue)?;
        Some((group, entity, v))
    };
    let group_entities = || {
        (1..MAX_GROUPS)
            .filter(move |&index| groups & 1 << index != 0)
            .filter_map(group_entity)
    };
    if !take() {
        return;
    }
    let count = count + group_entities().count();
    let eevdf =
        super::scheduler::config().policy == fairway_sched::boot_options::PolicyChoice::Eevdf;
    let chosen = task_arg(next, rq.idle);
    record(
        now,
        cpu,
        Kind::ExplainPick,
        chosen,
        count as u16,
        u64::from(eevdf),
    );
    let put = |a: u16, group_flag: u16, running: bool, entity: &Entity, v: u64| {
        let lag = v.wrapping_sub(entity.vruntime) as i64;
        let protected = entity.protected_deadline == entity.deadline;
        let flags = u16::from(lag >= 0)
            | u16::from(running) << 1
            | u16::from(protected) << 2
            | group_flag << 3
            | (entity.queue.0 & 0xff) << 8;
        record(now, cpu, Kind::ExplainCandidate, a, flags, entity.vruntime);
        record(now, cpu, Kind::ExplainDeadline, a, flags, entity.deadline);
        record(now, cpu, Kind::ExplainLag, a, flags, lag as u64);
    };
    for (id, entity, v) in candidates() {
        put(id.0, 0, id == previous, entity, v);
    }
    for (group, entity, v) in group_entities() {
        put(group.0, 1, running_groups & bit(group) != 0, entity, v);
    }
}

/// A round-robin pick just made on `cpu` (its run queue `rq` locked, `rr`
/// its round-robin class), where `previous` was running and `next` was
/// chosen: `next`, the FIFO's head that the pick took out, then the FIFO in
/// order, where `previous`, still runnable, was put back at the tail, with
/// the time it ran of its slice (as the simulator reads them). Nothing for a
/// pick that was not round robin's (an RT task, idle) or among fewer than
/// two tasks.
///
/// Records: the header `a` the task chosen, `b` the candidates, `value`
/// the slice; per candidate `a` the task, `b` 1 for `previous` with `value`
/// the time it ran of its slice.
fn rr_pick(
    cpu: usize,
    rr: &fairway_sched::round_robin::RoundRobin,
    rq: &CpuRunQueue,
    now: u64,
    previous: TaskId,
    next: TaskId,
) {
    if next == rq.idle || next == previous || rr.current() != Some(next) {
        return;
    }
    let candidates = || core::iter::once(next).chain(rr.fifo());
    let count = candidates().count();
    if count < 2 || !take() {
        return;
    }
    record(
        now,
        cpu,
        Kind::ExplainRrPick,
        next.0,
        count as u16,
        rr.slice(),
    );
    for id in candidates() {
        let ran = (id == previous)
            .then(|| rr.slice_start(id))
            .flatten()
            .map(|start| now.saturating_sub(start));
        record(
            now,
            cpu,
            Kind::ExplainRrCandidate,
            id.0,
            u16::from(ran.is_some()),
            ran.unwrap_or(0),
        );
    }
}

/// A wake-up of `id` (last on `previous`) placed on `target`, with the
/// CPUs' snapshots placement read (`snapshots`).
#[inline(never)]
pub fn wake(
    id: TaskId,
    previous: usize,
    target: usize,
    snapshots: impl Iterator<Item = CpuSnapshot>,
) {
    if !take() {
        return;
    }
    let cpu = crate::arch::cpu::this_cpu();
    let now = crate::arch::timer::now_ns();
    record(
        now,
        cpu,
        Kind::ExplainWake,
        id.0,
        previous as u16,
        target as u64,
    );
    for snapshot in snapshots {
        let util = snapshot
            .util_avg
            .max(snapshot.util_est)
            .min(snapshot.capacity);
        let flags = (snapshot.nr_running.min(0x7fff) as u16) | u16::from(snapshot.idle) << 15;
        let value = snapshot.capacity << 32 | util.min(u64::from(u32::MAX));
        record(
            now,
            cpu,
            Kind::ExplainPlacement,
            snapshot.cpu.0,
            flags,
            value,
        );
    }
}

/// Before EAS prices a wake-up of `id` (its run queue `rq` locked): the
/// task's `task_util_est`, as `find_energy_efficient_cpu` reads it (§5.4
/// step 4). The estimates and the wake-up's own records follow.
#[inline(never)]
pub fn task_util_est(id: TaskId, rq: &CpuRunQueue) {
    let signals = rq.core.run_queue().task_signals_synced(id);
    let cpu = crate::arch::cpu::this_cpu();
    let now = crate::arch::timer::now_ns();
    let util = signals.util_avg.max(signals.util_est);
    record(now, cpu, Kind::ExplainTaskUtil, id.0, 0, util);
}

/// One energy estimate `find_energy_efficient_cpu` made (the observer of
/// `CpuCore::select_task_rq_observed`): the numbers it gave `em_cpu_energy`
/// and what it returned.
pub fn energy_estimate(estimate: fairway_sched::eas::EnergyEstimate) {
    let cpu = crate::arch::cpu::this_cpu();
    let now = crate::arch::timer::now_ns();
    let dst = estimate.dst.map_or(tracepoint::NO_TASK, |cpu| cpu.0);
    let field = |value: u64| value.min(0xff_ffff);
    let utils =
        field(estimate.cpu_cap) << 48 | field(estimate.max_util) << 24 | field(estimate.sum_util);
    record(
        now,
        cpu,
        Kind::ExplainEnergy,
        estimate.domain as u16,
        dst,
        estimate.energy,
    );
    record(
        now,
        cpu,
        Kind::ExplainEnergyUtil,
        estimate.domain as u16,
        dst,
        utils,
    );
}

/// A frequency change of performance domain `domain` to `khz` at `now`,
/// with its CPUs' capacity and snapshots.
#[inline(never)]
pub fn frequency(
    now: u64,
    domain: usize,
    khz: u64,
    cpus: impl Iterator<Item = (u64, CpuSnapshot)> + Clone,
) {
    if !take() {
        return;
    }
    let cpu = crate::arch::cpu::this_cpu();
    let count = cpus.clone().count();
    record(
        now,
        cpu,
        Kind::ExplainFrequency,
        domain as u16,
        count as u16,
        khz,
    );
    for (capacity_orig, snapshot) in cpus {
        let value = capacity_orig << 48
            | snapshot.util_avg.min(0xff_ffff) << 24
            | snapshot.util_est.min(0xff_ffff);
        record(now, cpu, Kind::ExplainDomainCpu, snapshot.cpu.0, 0, value);
    }
}

/// Group `group`'s run queue on `cpu` was just throttled (or unthrottled),
/// seen after a call into the core: the numbers behind it, as the
/// simulator's explain prints them (`fairway_trace::explain::throttle_lines`).
#[inline(never)]
pub fn throttle(
    now: u64,
    cpu: usize,
    group: u16,
    throttled: bool,
    runtime_remaining: i64,
    pool_runtime: Option<u64>,
    settings: fairway_sched::bandwidth::Bandwidth,
) {
    if !take() {
        return;
    }
    let put = |kind, value| record(now, cpu, kind, group, 0, value);
    put(Kind::ExplainThrottle, u64::from(throttled));
    put(Kind::ExplainThrottleRemaining, runtime_remaining as u64);
    put(Kind::ExplainThrottlePool, pool_runtime.unwrap_or(u64::MAX));
    put(
        Kind::ExplainThrottleQuota,
        settings.quota.unwrap_or(u64::MAX),
    );
    put(Kind::ExplainThrottlePeriod, settings.period);
    put(Kind::ExplainThrottleBurst, settings.burst);
}
