//! Explain mode's records (`explain=N`, the runner's `--explain N`): the
//! numbers behind the first N decisions, kept with the trace records
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
//!   its slice;
//! - under a registered policy (`sched=NAME`, docs/policies.md), a pick
//!   among two or more tasks: the candidates as the policy's
//!   `explain_pick` notes them, the chosen one first, each with its label
//!   and the number the policy decided by.
//!
//! Reading state and changing none, explaining leaves the decisions as they
//! are; it costs the trace events' load and branch when off. The scheduling
//! floor reads the numbers (only while [`explaining`]) and hands them here;
//! this file writes them into the trace buffers.

use core::sync::atomic::{AtomicU64, Ordering};

use fairway_sched::balance::CpuSnapshot;
use fairway_sched::policies::CandidateNote;
use fairway_sched::task::TaskId;

use super::trace::{self, Kind, record};

/// Decisions left to explain.
static LEFT: AtomicU64 = AtomicU64::new(0);

/// Explains the next `decisions` decisions (boot, `explain=N`).
pub fn set_budget(decisions: u64) {
    LEFT.store(decisions, Ordering::Relaxed);
}

/// Whether decisions are being explained now.
#[inline(always)]
pub fn explaining() -> bool {
    trace::recording() && LEFT.load(Ordering::Relaxed) > 0
}

/// Takes one decision from the budget; false when it is spent.
fn take() -> bool {
    LEFT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
        left.checked_sub(1)
    })
    .is_ok()
}

/// One candidate of a pick among fair tasks (§1.5, §2.6), as read right
/// after the pick: a task, or the entity of a task group above the
/// candidates, each against its own queue's V.
#[derive(Clone, Copy, Debug)]
pub struct PickCandidate {
    /// The task, or the group whose entity it is (`group`).
    pub id: u16,
    /// Whether it is a group's entity.
    pub group: bool,
    /// The task was running before the pick (for a group: the task that was
    /// running is below it).
    pub running: bool,
    /// The group whose queue it is on (0: the CPU's own).
    pub queue: u16,
    /// Its vruntime.
    pub vruntime: u64,
    /// Its deadline.
    pub deadline: u64,
    /// Its lag against its queue's V (`V - vruntime`).
    pub lag: i64,
    /// RUN_TO_PARITY protects its slice (its protected deadline is its
    /// deadline).
    pub protected: bool,
}

/// The pick just made on `cpu`: `chosen` (the task, [`NO_TASK`] for idle)
/// among `candidates`, the fair tasks still queued and the entities of the
/// task groups above them (read by the caller right after the pick, when a
/// task going to sleep has left and V is the pick's, as the simulator reads
/// them); `eevdf` says whether the policy is EEVDF. The caller calls only
/// for a pick among two or more tasks.
///
/// A candidate's records: `a` the task, or with flag bit 3 the group whose
/// entity it is; `b` the flags: bits 0-2 eligible, running (for a group:
/// the task that was running is below it), slice protected; bits 8-15 the
/// group whose queue it is on (0: the CPU's own).
///
/// [`NO_TASK`]: trace::NO_TASK
#[inline(never)]
pub fn pick(
    now: u64,
    cpu: usize,
    chosen: u16,
    eevdf: bool,
    candidates: impl Iterator<Item = PickCandidate> + Clone,
) {
    if !take() {
        return;
    }
    let count = candidates.clone().count();
    record(
        now,
        cpu,
        Kind::ExplainPick,
        chosen,
        count as u16,
        u64::from(eevdf),
    );
    for candidate in candidates {
        let flags = u16::from(candidate.lag >= 0)
            | u16::from(candidate.running) << 1
            | u16::from(candidate.protected) << 2
            | u16::from(candidate.group) << 3
            | (candidate.queue & 0xff) << 8;
        let put = |kind, value| record(now, cpu, kind, candidate.id, flags, value);
        put(Kind::ExplainCandidate, candidate.vruntime);
        put(Kind::ExplainDeadline, candidate.deadline);
        put(Kind::ExplainLag, candidate.lag as u64);
    }
}

/// A round-robin pick just made on `cpu`: `candidates()` are the task chosen,
/// the FIFO's head that the pick took out, then the FIFO in order, where the
/// task that was running, still runnable, was put back at the tail, with
/// the time it ran of its slice (as the simulator reads them); `slice` is
/// the slice. Nothing for fewer than two. The caller calls only for a pick
/// that was round robin's (not an RT task's, not idle).
///
/// Records: the header `a` the task chosen, `b` the candidates, `value`
/// the slice; per candidate `a` the task, `b` 1 for the task that was
/// running with `value` the time it ran of its slice.
#[inline(never)]
pub fn rr_pick<Candidates: Iterator<Item = (TaskId, Option<u64>)>>(
    now: u64,
    cpu: usize,
    slice: u64,
    candidates: impl Fn() -> Candidates,
) {
    let count = candidates().count();
    if count < 2 || !take() {
        return;
    }
    let Some((next, _)) = candidates().next() else {
        return;
    };
    record(now, cpu, Kind::ExplainRrPick, next.0, count as u16, slice);
    for (id, ran) in candidates() {
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

/// A registered policy's pick just made on `cpu`: task `chosen`, by the
/// policy at `policy` in `fairway_sched::policies::REGISTERED`, among
/// `notes`, the candidates as its `explain_pick` noted them (the chosen one
/// first). The caller calls only for two or more.
///
/// Records: the header `a` the task chosen, `b` the candidates, `value` the
/// policy's index; per candidate `a` the task, `b` bit 0 set when `value`
/// is its number, bits 8-15 its label's length (at most 255 bytes), then
/// the label in records of eight bytes, `b` the chunk's number.
#[inline(never)]
pub fn policy_pick(now: u64, cpu: usize, chosen: u16, policy: usize, notes: &[CandidateNote]) {
    if notes.len() < 2 || !take() {
        return;
    }
    let count = notes.len().min(usize::from(u16::MAX)) as u16;
    record(
        now,
        cpu,
        Kind::ExplainPolicyPick,
        chosen,
        count,
        policy as u64,
    );
    for note in notes.iter().take(usize::from(count)) {
        let label = &note.label.as_bytes()[..note.label.len().min(255)];
        let flags = u16::from(note.value.is_some()) | (label.len() as u16) << 8;
        let id = note.task.0;
        let value = note.value.unwrap_or(0);
        record(now, cpu, Kind::ExplainPolicyCandidate, id, flags, value);
        for (chunk, bytes) in label.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            let value = u64::from_le_bytes(word);
            record(now, cpu, Kind::ExplainPolicyLabel, id, chunk as u16, value);
        }
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

/// Before EAS prices a wake-up of `id`: the task's `task_util_est`, `util`,
/// as `find_energy_efficient_cpu` reads it (§5.4 step 4). The estimates and
/// the wake-up's own records follow.
#[inline(never)]
pub fn task_util_est(id: TaskId, util: u64) {
    let cpu = crate::arch::cpu::this_cpu();
    let now = crate::arch::timer::now_ns();
    record(now, cpu, Kind::ExplainTaskUtil, id.0, 0, util);
}

/// One energy estimate `find_energy_efficient_cpu` made (the observer of
/// `CpuCore::select_task_rq_observed`): the numbers it gave `em_cpu_energy`
/// and what it returned.
pub fn energy_estimate(estimate: fairway_sched::eas::EnergyEstimate) {
    let cpu = crate::arch::cpu::this_cpu();
    let now = crate::arch::timer::now_ns();
    let dst = estimate.dst.map_or(trace::NO_TASK, |cpu| cpu.0);
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
