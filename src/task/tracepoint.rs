//! Tracepoints: the scheduler's events and signals, recorded where the kernel
//! carries each out into per-CPU RAM buffers, and printed at the end of a run
//! as `tracepoint:` lines that the host runner turns into a Perfetto trace
//! (`--trace FILE`; docs/tracing.md, "The kernel's traces").
//!
//! The events are those the simulator's `--trace` records, at the same
//! points of the same decisions, in the shapes of Linux's ftrace events:
//! `sched_switch`, `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task`, `cpu_frequency`, `cpu_idle`, `sched_process_exit`,
//! and the counters Linux's scheduler tracepoints expose (a task's util_avg,
//! util_est and load_avg; a CPU's util, capacity and uclamp values; a
//! performance domain's energy; the root domain's overutilized flag; and,
//! for each task group with CFS bandwidth control, each CPU's `throttled`
//! and `runtime_remaining` and the pool's `runtime`, recorded when they
//! change).
//!
//! Cost: without the `trace` feature every tracepoint compiles out (each
//! body stands behind [`ENABLED`], a constant `false`), so the default
//! image's instructions are the same as without this module. Built in and off (`trace_records=0`), a
//! tracepoint is a load and a branch; on, a record is a 24-byte copy under
//! this CPU's buffer lock, never an allocation: the buffers are allocated at
//! boot and a full buffer counts what it drops.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};

use spin::Once;

use super::TaskId;
use super::groups::GroupId;
use crate::config::{MAX_CPUS, MAX_GROUPS};
use crate::sync::IrqSpinLock;

/// Whether the tracepoints are compiled in (the `trace` feature).
pub const ENABLED: bool = cfg!(feature = "trace");

/// A task argument that is no task: the idle task, or no waker.
pub const NO_TASK: u16 = u16::MAX;

pub use fairway_contract::tracepoint::{Kind, PrevState};

/// One record: 24 bytes.
#[derive(Clone, Copy, Debug)]
struct Record {
    time_ns: u64,
    value: u64,
    a: u16,
    b: u16,
    cpu: u8,
    kind: Kind,
}

/// One CPU's buffer: filled only by its own CPU, read at the end.
struct Buffer {
    records: Vec<Record>,
    dropped: u64,
}

static BUFFERS: [Once<IrqSpinLock<Buffer>>; MAX_CPUS] = [const { Once::new() }; MAX_CPUS];
static RECORDING: AtomicBool = AtomicBool::new(false);
/// The run's time zero and end, ns since boot.
static ORIGIN_NS: AtomicU64 = AtomicU64::new(0);
static END_NS: AtomicU64 = AtomicU64::new(0);

/// Allocates each CPU's buffer of `records` (at boot, `trace_records=N`);
/// `Err` when the heap has no room for them.
pub fn allocate(nr_cpus: usize, records: usize) -> Result<(), alloc::collections::TryReserveError> {
    for buffer in BUFFERS.iter().take(nr_cpus) {
        let mut room = Vec::new();
        room.try_reserve_exact(records)?;
        buffer.call_once(|| {
            IrqSpinLock::new(Buffer {
                records: room,
                dropped: 0,
            })
        });
    }
    Ok(())
}

/// Whether tracepoints record now.
#[inline(always)]
pub fn recording() -> bool {
    ENABLED && RECORDING.load(Ordering::Relaxed)
}

/// Starts recording, with `origin_ns` as the run's time zero (a no-op
/// without buffers), and records every limited group's state on every CPU
/// (its counters start at the run's start, as the simulator's do).
pub fn start(origin_ns: u64) {
    if ENABLED && BUFFERS[0].get().is_some() {
        ORIGIN_NS.store(origin_ns, Ordering::Relaxed);
        for row in &GROUP_LAST {
            for last in row {
                last.throttled.store(UNKNOWN, Ordering::Relaxed);
            }
        }
        for pool in &POOL_LAST {
            pool.store(u64::MAX, Ordering::Relaxed);
        }
        RECORDING.store(true, Ordering::Release);
        for cpu in 0..crate::percpu::nr_online() {
            super::scheduler::with_run_queue(cpu, |rq| {
                group_bandwidth(crate::arch::timer::now_ns(), cpu, rq.core.run_queue());
            });
        }
    }
}

/// Stops recording; the run ended at `end_ns` (the report's counters were
/// read between then and now, so the records go on to now).
///
/// Each CPU's signals, and its running task's, are recorded once more at
/// the end, as last updated, so that every chart's lines reach the run's end
/// as the simulator's do, instead of stopping at each CPU's last switch or
/// tick. The run-queue locks mask interrupts, so no holder can be
/// interrupted by the deadline's timer that may call this; they are taken
/// one at a time.
pub fn stop(end_ns: u64) {
    if recording() {
        let now = crate::arch::timer::now_ns();
        for cpu in 0..crate::percpu::nr_online() {
            super::scheduler::with_run_queue(cpu, |rq| {
                record_signals(now, cpu, rq.core.run_queue(), rq.core.current());
            });
        }
        RECORDING.store(false, Ordering::Release);
        END_NS.store(end_ns, Ordering::Relaxed);
    }
}

/// Records `kind` for CPU `cpu` at `now` in this CPU's buffer.
#[inline(always)]
pub fn record(now: u64, cpu: usize, kind: Kind, a: u16, b: u16, value: u64) {
    if recording() {
        push(Record {
            time_ns: now,
            value,
            a,
            b,
            cpu: cpu as u8,
            kind,
        });
    }
}

#[inline(never)]
fn push(record: Record) {
    let Some(buffer) = BUFFERS[crate::arch::cpu::this_cpu()].get() else {
        return;
    };
    let mut buffer = buffer.lock();
    if buffer.records.len() < buffer.records.capacity() {
        buffer.records.push(record);
    } else {
        buffer.dropped += 1;
    }
}

/// A task as the records name it: [`NO_TASK`] for an idle task.
#[inline(always)]
pub fn task_arg(id: TaskId, idle: TaskId) -> u16 {
    if id == idle { NO_TASK } else { id.0 }
}

/// The counters of `cpu`'s run queue `queue`, and of `task` on it, as they
/// were last updated (at a switch and at the tick, as the simulator records
/// them).
#[inline(always)]
pub fn signals(
    now: u64,
    cpu: usize,
    queue: &fairway_sched::run_queue::RunQueue,
    task: Option<TaskId>,
) {
    if recording() {
        record_signals(now, cpu, queue, task);
    }
}

#[inline(never)]
fn record_signals(
    now: u64,
    cpu: usize,
    queue: &fairway_sched::run_queue::RunQueue,
    task: Option<TaskId>,
) {
    use fairway_sched::uclamp::ClampId;
    let capacity = queue.cpu_capacity();
    let capacity = u64::from(capacity.capacity_orig) * u64::from(capacity.frequency_scale) / 1024;
    let counter = |kind, a, value| record(now, cpu, kind, a, 0, value);
    counter(
        Kind::CpuUclampMin,
        0,
        u64::from(queue.uclamp_value(ClampId::Min)),
    );
    counter(
        Kind::CpuUclampMax,
        0,
        u64::from(queue.uclamp_value(ClampId::Max)),
    );
    if super::eas::active() {
        counter(Kind::Overutilized, 0, u64::from(super::eas::overutilized()));
    }
    counter(Kind::CpuUtil, 0, queue.signals().util_avg);
    counter(Kind::CpuCapacity, 0, capacity);
    if let Some(task) = task {
        let signals = queue.task_signals(task);
        counter(Kind::TaskUtilAvg, task.0, signals.util_avg);
        counter(Kind::TaskUtilEst, task.0, signals.util_est);
        counter(Kind::TaskLoadAvg, task.0, signals.load_avg);
    }
}

/// A limited group's state on one CPU as last recorded.
struct GroupLast {
    /// [`UNKNOWN`] before the first record, else 1 + `throttled`.
    throttled: AtomicU8,
    runtime_remaining: AtomicI64,
}

const UNKNOWN: u8 = 0;

/// Each CPU's row is written only under that CPU's run-queue lock.
static GROUP_LAST: [[GroupLast; MAX_GROUPS]; MAX_CPUS] = [const {
    [const {
        GroupLast {
            throttled: AtomicU8::new(UNKNOWN),
            runtime_remaining: AtomicI64::new(0),
        }
    }; MAX_GROUPS]
}; MAX_CPUS];
/// Each pool's `runtime` as last recorded (`u64::MAX`: not yet).
static POOL_LAST: [AtomicU64; MAX_GROUPS] = [const { AtomicU64::new(u64::MAX) }; MAX_GROUPS];

/// Each task group with CFS bandwidth control, on `cpu` (whose run queue
/// `queue` is locked by the caller, after a call into its core): its run
/// queue's `throttled` and `runtime_remaining` and the pool's `runtime`,
/// recorded when they changed since the last call (as the simulator
/// records them after each event); a throttle or unthrottle is explained
/// in explain mode. Reads only; O(groups). Until a group has a quota
/// there are no pools, and a call is a load and a branch more.
#[inline(always)]
pub fn group_bandwidth(now: u64, cpu: usize, queue: &fairway_sched::run_queue::RunQueue) {
    if recording()
        && let Some(pools) = super::bandwidth::pools()
    {
        record_group_bandwidth(now, cpu, queue, pools);
    }
}

#[inline(never)]
fn record_group_bandwidth(
    now: u64,
    cpu: usize,
    queue: &fairway_sched::run_queue::RunQueue,
    pools: &fairway_sched::bandwidth::pools::BandwidthPools,
) {
    let Some(fair) = queue.fair() else { return };
    for index in 1..super::groups::nr_groups().min(MAX_GROUPS) {
        let group = GroupId(index as u16);
        // One lock of the pool for both.
        let Some((settings, pool)) = pools.with(group, |pool| (pool.settings(), pool.runtime()))
        else {
            continue;
        };
        let Some(group_queue) = fair.group_queue(group) else {
            continue;
        };
        let (throttled, remaining) = (
            group_queue.runtime.throttled,
            group_queue.runtime.runtime_remaining,
        );
        let last = &GROUP_LAST[cpu][index];
        let before = last
            .throttled
            .swap(1 + u8::from(throttled), Ordering::Relaxed);
        if before != 1 + u8::from(throttled) {
            record(
                now,
                cpu,
                Kind::GroupThrottled,
                index as u16,
                0,
                u64::from(throttled),
            );
            if before != UNKNOWN && super::explain::explaining() {
                super::explain::throttle(
                    now,
                    cpu,
                    index as u16,
                    throttled,
                    remaining,
                    Some(pool),
                    settings,
                );
            }
        }
        if last.runtime_remaining.swap(remaining, Ordering::Relaxed) != remaining
            || before == UNKNOWN
        {
            record(
                now,
                cpu,
                Kind::GroupRuntimeRemaining,
                index as u16,
                0,
                remaining as u64,
            );
        }
        if POOL_LAST[index].swap(pool, Ordering::Relaxed) != pool {
            record(now, cpu, Kind::GroupRuntime, index as u16, 0, pool);
        }
    }
}

/// Group `group`'s pool after its period or slack timer changed it (no
/// run-queue lock: the pool's own value, recorded when it changed).
#[inline(always)]
pub fn pool_runtime(now: u64, group: GroupId, runtime: Option<u64>) {
    if recording()
        && let Some(runtime) = runtime
        && POOL_LAST[group.index()].swap(runtime, Ordering::Relaxed) != runtime
    {
        let cpu = crate::arch::cpu::this_cpu();
        record(now, cpu, Kind::GroupRuntime, group.0, 0, runtime);
    }
}

/// Prints the records, CPU by CPU in the order each CPU made them, with
/// times since the run's start, each CPU's followed by its count of records
/// and of dropped ones (`tracepoint-cpu:`); then the names of the tasks that
/// exist at the end (`tracepoint-task: ID NAME`: a slot freed during the run
/// is named by whoever holds it then) and the run's end (`tracepoint-end:`).
/// The host merges the CPUs by time. `groups` names the task groups the
/// records number (`tracepoint-group: INDEX PATH`); those with group
/// counters are the ones with CFS bandwidth control.
pub fn print(groups: &[(GroupId, &str)]) {
    if !ENABLED || BUFFERS[0].get().is_none() {
        return;
    }
    RECORDING.store(false, Ordering::Release);
    let origin = ORIGIN_NS.load(Ordering::Relaxed);
    for (cpu, buffer) in BUFFERS.iter().enumerate() {
        let Some(buffer) = buffer.get() else { continue };
        // Taken out of the lock: printing a million lines with this CPU's
        // interrupts masked would hold its timers for seconds.
        let (records, dropped) = {
            let mut buffer = buffer.lock();
            (core::mem::take(&mut buffer.records), buffer.dropped)
        };
        for record in &records {
            defmt::println!(
                "tracepoint: {=u8} {=u8} {=u64} {=u16} {=u16} {=u64}",
                record.kind as u8,
                record.cpu,
                record.time_ns.saturating_sub(origin),
                record.a,
                record.b,
                record.value
            );
        }
        defmt::println!(
            "tracepoint-cpu: {=usize} records={=usize} dropped={=u64}",
            cpu,
            records.len(),
            dropped
        );
    }
    for (group, path) in groups {
        defmt::println!("tracepoint-group: {=u16} {=str}", group.0, path);
    }
    super::for_each_task(|id, slot| {
        defmt::println!("tracepoint-task: {=u16} {=str}", id.0, slot.name().as_str());
    });
    defmt::println!(
        "tracepoint-end: {=u64}",
        END_NS.load(Ordering::Relaxed).saturating_sub(origin)
    );
}
