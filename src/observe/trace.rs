//! Trace events: the scheduler's events and signals, recorded where the kernel
//! carries each out into per-CPU RAM buffers, and printed at the end of a run
//! as `trace-record:` lines (not `trace:`, the switch trace's) that the host
//! runner turns into a Perfetto trace (`--trace FILE`; docs/tracing.md, "The
//! kernel's traces").
//!
//! Callers hand a trace event the values it records, as Linux's trace events
//! are called with them: nothing here reads a run queue or the scheduler's
//! state (the scheduling floor reads them, only while recording, and passes
//! the numbers down).
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
//! Cost: without the `trace` feature every trace event compiles out (each
//! body stands behind [`ENABLED`], a constant `false`), so the default
//! image's instructions are the same as without this module. Built in and off (`trace_records=0`), a
//! trace event is a load and a branch; on, a record is a 24-byte copy under
//! this CPU's buffer lock, never an allocation: the buffers are allocated at
//! boot and a full buffer counts what it drops.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::Once;

use fairway_sched::task::{GroupId, TaskId};

use crate::config::MAX_CPUS;
use crate::platform::sync::IrqSpinLock;

/// Whether the trace events are compiled in (the `trace` feature).
pub const ENABLED: bool = cfg!(feature = "trace");

/// A task argument that is no task: the idle task, or no waker.
pub const NO_TASK: u16 = u16::MAX;

pub use fairway_contract::trace::{Kind, PrevState};

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

/// Whether the trace records now.
#[inline(always)]
pub fn recording() -> bool {
    ENABLED && RECORDING.load(Ordering::Relaxed)
}

/// Whether the buffers exist (`trace_records=N` at boot): [`start`] would
/// record.
pub fn allocated() -> bool {
    ENABLED && BUFFERS[0].get().is_some()
}

/// Starts recording, with `origin_ns` as the run's time zero (a no-op
/// without buffers). The scheduling floor's `trace_start` calls it, then
/// records every limited group's state on every CPU (its counters start at
/// the run's start, as the simulator's do).
pub fn start(origin_ns: u64) {
    if allocated() {
        ORIGIN_NS.store(origin_ns, Ordering::Relaxed);
        RECORDING.store(true, Ordering::Release);
    }
}

/// Stops recording; the run ended at `end_ns` (the report's counters were
/// read between then and now, so the records go on to now). The scheduling
/// floor's `trace_stop` records each CPU's signals once more first.
pub fn stop(end_ns: u64) {
    if recording() {
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

/// A CPU's counters as its run queue last updated them.
#[derive(Clone, Copy, Debug)]
pub struct CpuSignals {
    /// The run queue's `uclamp_min`.
    pub uclamp_min: u64,
    /// The run queue's `uclamp_max`.
    pub uclamp_max: u64,
    /// The root domain's overutilized flag, while EAS runs.
    pub overutilized: Option<bool>,
    /// The root run queue's util_avg.
    pub util: u64,
    /// The CPU's capacity at its frequency now.
    pub capacity: u64,
}

/// A task's counters as its run queue last updated them.
#[derive(Clone, Copy, Debug)]
pub struct TaskSignals {
    /// The task.
    pub task: TaskId,
    /// Its util_avg.
    pub util_avg: u64,
    /// Its util_est.
    pub util_est: u64,
    /// Its load_avg.
    pub load_avg: u64,
}

/// Records the counters of `cpu` and of `task` on it (at a switch and at
/// the tick, as the simulator records them). The caller reads them only
/// while [`recording`].
#[inline(never)]
pub fn signals(now: u64, cpu: usize, signals: CpuSignals, task: Option<TaskSignals>) {
    let counter = |kind, a, value| record(now, cpu, kind, a, 0, value);
    counter(Kind::CpuUclampMin, 0, signals.uclamp_min);
    counter(Kind::CpuUclampMax, 0, signals.uclamp_max);
    if let Some(overutilized) = signals.overutilized {
        counter(Kind::Overutilized, 0, u64::from(overutilized));
    }
    counter(Kind::CpuUtil, 0, signals.util);
    counter(Kind::CpuCapacity, 0, signals.capacity);
    if let Some(task) = task {
        counter(Kind::TaskUtilAvg, task.task.0, task.util_avg);
        counter(Kind::TaskUtilEst, task.task.0, task.util_est);
        counter(Kind::TaskLoadAvg, task.task.0, task.load_avg);
    }
}

/// Prints the records, CPU by CPU in the order each CPU made them, with
/// times since the run's start, each CPU's followed by its count of records
/// and of dropped ones (`trace-cpu:`); then the names of the tasks that
/// exist at the end, `tasks` (`trace-task: ID NAME`: a slot freed
/// during the run is named by whoever holds it then), and the run's end
/// (`trace-end:`). The host merges the CPUs by time. `groups` names the
/// task groups the records number (`trace-group: INDEX PATH`); those
/// with group counters are the ones with CFS bandwidth control.
pub fn print<Name: AsRef<str>>(
    groups: &[(GroupId, &str)],
    tasks: impl Iterator<Item = (TaskId, Name)>,
) {
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
                "trace-record: {=u8} {=u8} {=u64} {=u16} {=u16} {=u64}",
                record.kind as u8,
                record.cpu,
                record.time_ns.saturating_sub(origin),
                record.a,
                record.b,
                record.value
            );
        }
        defmt::println!(
            "trace-cpu: {=usize} records={=usize} dropped={=u64}",
            cpu,
            records.len(),
            dropped
        );
    }
    for (group, path) in groups {
        defmt::println!("trace-group: {=u16} {=str}", group.0, path);
    }
    for (id, name) in tasks {
        defmt::println!("trace-task: {=u16} {=str}", id.0, name.as_ref());
    }
    defmt::println!(
        "trace-end: {=u64}",
        END_NS.load(Ordering::Relaxed).saturating_sub(origin)
    );
}
