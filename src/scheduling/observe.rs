//! The scheduling floor's half of observation: it reads its own run queues
//! and hands the values down to the observation floor ([`crate::observe`]),
//! which never reads them itself. Each reader runs only while its records
//! are taken (a trace event's load and branch when not, nothing at all in an
//! image without the `trace` feature).
//!
//! Also the start, stop and print of a run's records, which need every CPU's
//! run queue: the workloads call them here.

use alloc::vec::Vec;

use fairway_sched::boot_options::PolicyChoice;
use fairway_sched::run_queue::RunQueue;
use fairway_sched::task::{GroupId, TaskId};

use super::run_queue::{CpuRunQueue, nr_groups, pools, run_queue, with_run_queue};
use super::{eas, settings};
use crate::config::{MAX_CPUS, MAX_GROUPS};
use crate::observe::bandwidth::{self as bandwidth_trace, GroupBandwidth};
use crate::observe::explain::{self, PickCandidate};
use crate::observe::trace::{self, CpuSignals, TaskSignals, task_arg};
use crate::observe::{replay, switches};
use crate::platform::percpu;
use crate::tasks::{live_tasks, task};

/// The counters of `cpu`'s run queue `queue`, and of `task` on it, as they
/// were last updated (at a switch and at the tick, as the simulator records
/// them), when the trace records.
#[inline(always)]
pub fn trace_signals(now: u64, cpu: usize, queue: &RunQueue, task: Option<TaskId>) {
    if trace::recording() {
        record_signals(now, cpu, queue, task);
    }
}

#[inline(never)]
fn record_signals(now: u64, cpu: usize, queue: &RunQueue, task: Option<TaskId>) {
    use fairway_sched::uclamp::ClampId;
    let capacity = queue.cpu_capacity();
    let capacity = u64::from(capacity.capacity_orig) * u64::from(capacity.frequency_scale) / 1024;
    let signals = CpuSignals {
        uclamp_min: u64::from(queue.uclamp_value(ClampId::Min)),
        uclamp_max: u64::from(queue.uclamp_value(ClampId::Max)),
        overutilized: eas::active().then(eas::overutilized),
        util: queue.signals().util_avg,
        capacity,
    };
    let task = task.map(|task| {
        let signals = queue.task_signals(task);
        TaskSignals {
            task,
            util_avg: signals.util_avg,
            util_est: signals.util_est,
            load_avg: signals.load_avg,
        }
    });
    trace::signals(now, cpu, signals, task);
}

/// Each task group with CFS bandwidth control, on `cpu` (whose run queue
/// `queue` is locked by the caller, after a call into its core): its run
/// queue's `throttled` and `runtime_remaining` and the pool's `runtime`,
/// handed to [`crate::observe::bandwidth`], which records what changed.
/// Reads only; O(groups). Until a group has a quota there are no pools, and
/// a call is a load and a branch more.
#[inline(always)]
pub fn trace_group_bandwidth(now: u64, cpu: usize, queue: &RunQueue) {
    if trace::recording()
        && let Some(pools) = pools()
    {
        record_group_bandwidth(now, cpu, queue, pools);
    }
}

#[inline(never)]
fn record_group_bandwidth(
    now: u64,
    cpu: usize,
    queue: &RunQueue,
    pools: &fairway_sched::bandwidth::pools::BandwidthPools,
) {
    let Some(fair) = queue.fair() else { return };
    let groups = (1..nr_groups().min(MAX_GROUPS)).filter_map(|index| {
        let group = GroupId(index as u16);
        // One lock of the pool for both.
        let (settings, pool_runtime) =
            pools.with(group, |pool| (pool.settings(), pool.runtime()))?;
        let runtime = fair.group_queue(group)?.runtime;
        Some(GroupBandwidth {
            group: group.0,
            throttled: runtime.throttled,
            runtime_remaining: runtime.runtime_remaining,
            pool_runtime,
            settings,
        })
    });
    bandwidth_trace::group_bandwidth(now, cpu, groups);
}

/// Starts recording the trace, with `origin_ns` as the run's time
/// zero (a no-op without buffers), and records every limited group's state
/// on every CPU (its counters start at the run's start, as the simulator's
/// do).
pub fn trace_start(origin_ns: u64) {
    if trace::allocated() {
        bandwidth_trace::reset();
        trace::start(origin_ns);
        for cpu in 0..percpu::nr_online() {
            with_run_queue(cpu, |rq| {
                trace_group_bandwidth(crate::arch::timer::now_ns(), cpu, rq.core.run_queue());
            });
        }
    }
}

/// Stops recording the trace; the run ended at `end_ns` (the
/// report's counters were read between then and now, so the records go on
/// to now).
///
/// Each CPU's signals, and its running task's, are recorded once more at
/// the end, as last updated, so that every chart's lines reach the run's end
/// as the simulator's do, instead of stopping at each CPU's last switch or
/// tick. The run-queue locks mask interrupts, so no holder can be
/// interrupted by the deadline's timer that may call this; they are taken
/// one at a time.
pub fn trace_stop(end_ns: u64) {
    if trace::recording() {
        let now = crate::arch::timer::now_ns();
        for cpu in 0..percpu::nr_online() {
            with_run_queue(cpu, |rq| {
                record_signals(now, cpu, rq.core.run_queue(), rq.core.current());
            });
        }
        trace::stop(end_ns);
    }
}

/// Prints the trace records (see `trace::print`), with the
/// names of the tasks that exist now; `groups` names the task groups.
pub fn print_trace(groups: &[(GroupId, &str)]) {
    trace::print(groups, live_tasks().map(|(id, slot)| (id, slot.name())));
}

/// Prints the context-switch trace (`trace_switches=N`) with `start_ns` as
/// time zero.
pub fn print_switches(start_ns: u64) {
    switches::print(start_ns, settings::tick_period_ns(), |id| task(id).name());
}

/// Prints the record of every call into each CPU's driver (`record_core=N`)
/// and stops it: every CPU's records are taken, each under its run-queue
/// lock, and cut at the sequence number read under CPU 0's as it stops
/// (why: `replay::print`).
pub fn print_core_record() {
    if replay::capacity() == 0 {
        return;
    }
    let nr_cpus = percpu::nr_cpus().min(MAX_CPUS);
    let mut cut = u64::MAX;
    let mut taken = Vec::with_capacity(nr_cpus);
    for cpu in 0..nr_cpus {
        let mut rq = run_queue(cpu).lock();
        if cpu == 0 {
            cut = replay::sequence();
        }
        taken.push(rq.core.take_records());
    }
    replay::print(settings::config(), &taken, cut);
}

/// Explain mode's pick (`explain::pick`): the pick just made on `cpu` (its
/// run queue `rq` locked), where `previous` was running and `next` was
/// chosen: the fair tasks still queued, read right after the pick, when a
/// task going to sleep has left and V is the pick's (as the simulator reads
/// them), and the entities of the task groups above them (a pick goes level
/// by level, §2.6), each against its own queue's V. Under round robin, the
/// FIFO instead; under a registered policy, the policy's notes.
#[inline(never)]
pub fn explain_pick(cpu: usize, rq: &CpuRunQueue, now: u64, previous: TaskId, next: TaskId) {
    let queue = rq.core.run_queue();
    if let Some(rr) = queue.round_robin() {
        explain_rr_pick(cpu, rr, rq, now, previous, next);
        return;
    }
    if let Some(class) = queue.registered() {
        explain_policy_pick(cpu, class, rq, now, previous, next);
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
    if candidates().count() < 2 {
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
    let group_entities = (1..MAX_GROUPS)
        .filter(move |&index| groups & 1 << index != 0)
        .filter_map(group_entity);
    let candidate =
        |id: u16, group: bool, running: bool, entity: &fairway_sched::fair::Entity, v: u64| {
            PickCandidate {
                id,
                group,
                running,
                queue: entity.queue.0,
                vruntime: entity.vruntime,
                deadline: entity.deadline,
                lag: v.wrapping_sub(entity.vruntime) as i64,
                protected: entity.protected_deadline == entity.deadline,
            }
        };
    let tasks =
        candidates().map(|(id, entity, v)| candidate(id.0, false, id == previous, entity, v));
    let groups = group_entities.map(|(group, entity, v)| {
        candidate(group.0, true, running_groups & bit(group) != 0, entity, v)
    });
    let eevdf = settings::config().policy == PolicyChoice::Eevdf;
    explain::pick(
        now,
        cpu,
        task_arg(next, rq.idle),
        eevdf,
        tasks.chain(groups),
    );
}

/// A round-robin pick just made on `cpu` (its run queue `rq` locked, `rr`
/// its round-robin class), where `previous` was running and `next` was
/// chosen: `next`, the FIFO's head that the pick took out, then the FIFO in
/// order, where `previous`, still runnable, was put back at the tail, with
/// the time it ran of its slice (as the simulator reads them). Nothing for a
/// pick that was not round robin's (an RT task, idle).
fn explain_rr_pick(
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
    let candidates = || {
        core::iter::once(next).chain(rr.fifo()).map(move |id| {
            let ran = (id == previous)
                .then(|| rr.slice_start(id))
                .flatten()
                .map(|start| now.saturating_sub(start));
            (id, ran)
        })
    };
    explain::rr_pick(now, cpu, rr.slice(), candidates);
}

/// A registered policy's pick just made on `cpu` (its run queue `rq`
/// locked, `class` its policy's class), where `previous` was running and
/// `next` was chosen: the policy's notes on `next` and on the tasks still
/// waiting (`Policy::explain_pick`, read right after the pick, as the
/// simulator reads them). Nothing for a pick that was not the policy's (an
/// RT task, idle) or kept the running task. The candidates' and the notes'
/// lists (`PolicyClass::explain_pick`) are allocated only here, while
/// explaining: a kernel not explaining allocates nothing for them.
fn explain_policy_pick(
    cpu: usize,
    class: &fairway_sched::policies::PolicyClass,
    rq: &CpuRunQueue,
    now: u64,
    previous: TaskId,
    next: TaskId,
) {
    if next == rq.idle || next == previous || class.current() != Some(next) {
        return;
    }
    let notes = class.explain_pick(next);
    explain::policy_pick(now, cpu, next.0, class.id().index(), &notes);
}
