//! The task table: the slots, what each holds, finding a slot by id, and
//! growing the table (why a slot could not be had: [`SpawnError`]).
//!
//! A task is a slot of the task table, named by its index ([`TaskId`], the same
//! type the scheduling core uses). Slots `0..MAX_TASKS` are for tasks, the next
//! `MAX_CPUS` are the CPUs' idle tasks. The table grows with the tasks created
//! (issue 15): slots are allocated from the heap in chunks of [`CHUNK_SLOTS`],
//! a chunk the first time one of its slots is used, and never freed, so a
//! `&'static Task` stays valid. A static array of one pointer per slot finds
//! them: a lookup is one acquire load more than a static table of slots, and
//! no address computation within a chunk. A slot's stack is allocated the first
//! time the slot is used and kept for its next tenants.
//!
//! ```text
//!   SLOTS: [OnceRef<Task>; TASK_SLOTS]        chunks (heap, never freed)
//!    [0]  ──────────────────────────────────▶ ┌ slot 0
//!    ...                                      │ ...
//!    [63] ──────────────────────────────────▶ └ slot 63
//!    [64..9984] null (no slot used yet)
//!    [9984..10012] ─────────────────────────▶ slots 9984..10012, idle tasks
//!                                              among them (allocated at boot)
//! ```

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU64, AtomicUsize, Ordering};

use alloc::boxed::Box;
use alloc::vec::Vec;
use fairway_sched::task::{ParamError, TaskId};
use once_cell::race::OnceRef;

use super::scheduler::Scheduler;
use crate::arch::context::TaskContext;
use crate::config::{MAX_TASKS, TASK_SLOTS};
use crate::platform::percpu;
use crate::platform::sync::IrqSpinLock;

/// The longest task name kept, in bytes: a scenario's instance names are checked
/// against the same limit on the host, so no two are cut to the same name.
pub const TASK_NAME_BYTES: usize = fairway_contract::scenario::MAX_NAME_BYTES;

/// Life cycle of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
#[repr(u8)]
pub enum TaskState {
    /// Unused.
    Free = 0,
    /// Being set up by `spawn`.
    Creating = 1,
    /// Runnable (queued, or running).
    Running = 2,
    /// Waiting for a wake-up.
    Sleeping = 3,
    /// Finished; the slot is freed after the switch away from it.
    Dead = 4,
}

impl TaskState {
    pub(crate) fn from_u8(value: u8) -> Self {
        match value {
            1 => TaskState::Creating,
            2 => TaskState::Running,
            3 => TaskState::Sleeping,
            4 => TaskState::Dead,
            _ => TaskState::Free,
        }
    }
}

/// "No task" in intrusive links.
pub const NO_TASK: u16 = u16::MAX;

/// `Task::wake_list` when the task is on no wake list.
pub const NOT_LISTED: u16 = u16::MAX;

/// `Task::pi_priority` with no boost.
pub const NO_BOOST: u8 = 0;

/// One slot of the task table.
pub struct Task {
    /// Its [`TaskState`]: the scheduling floor changes it at wake-ups and
    /// switches.
    pub(crate) state: AtomicU8,
    /// Queued on its CPU's run queue; changed only under that run queue's lock.
    pub(crate) on_rq: AtomicBool,
    /// Its registers are live on a CPU (cleared after the switch away completes).
    pub(crate) on_cpu: AtomicBool,
    /// The CPU whose wake list holds the task's live entry ([`NOT_LISTED`] if none).
    pub(crate) wake_list: AtomicU16,
    /// The CPU whose run queue owns the task.
    pub(crate) cpu: AtomicU16,
    /// Next task in the wait list the task sleeps on.
    pub(crate) wait_next: AtomicU16,
    pub(crate) context: TaskContext,
    pub(super) stack_base: AtomicUsize,
    pub(super) entry: IrqSpinLock<(fn(usize), usize)>,
    name: [AtomicU8; TASK_NAME_BYTES],
    /// Total time run, in ns.
    pub sum_exec_runtime: AtomicU64,
    /// When its run time was last accounted: while it runs, the start of the
    /// stretch not yet accounted; while it waits, when it stopped running
    /// (Linux's `se.exec_start`, which `task_hot` measures from); 0 after a
    /// migration (`migrate_task_rq_fair`: a task that moved is not cache hot).
    pub(crate) exec_start: AtomicU64,
    /// Times it was switched in.
    pub switches_in: AtomicU64,
    /// Times it was woken.
    pub wakeups: AtomicU64,
    /// Total wait from wake-up to running, in ns.
    pub wakeup_latency_total: AtomicU64,
    /// Longest wait from wake-up to running, in ns.
    pub wakeup_latency_max: AtomicU64,
    pub(crate) woken_at: AtomicU64,
    /// The latency of its last wake-up (wake-up to running), in ns.
    pub last_wakeup_latency: AtomicU64,
    /// When it last started waiting on a run queue (runnable, not running).
    pub(crate) wait_start: AtomicU64,
    /// Total time runnable but not running, in ns (Linux's `run_delay`).
    pub wait_total: AtomicU64,
    /// Times it moved to another CPU.
    pub migrations: AtomicU64,
    /// The CPUs it may run on.
    pub affinity: AtomicU64,
    /// Wake-up-to-run latencies (allocated the first time the slot is used).
    /// Boxed: they are the report's statistics, not what scheduling needs,
    /// so the slot stays small and they are counted apart
    /// ([`statistics_bytes`]).
    pub latency: IrqSpinLock<Option<alloc::boxed::Box<fairway_sched::stats::LatencyStats>>>,
    /// Its place in its run queue's member list.
    pub(crate) member_index: core::sync::atomic::AtomicU32,
    /// Its scheduling state in transit during a wake-up on another CPU.
    pub(crate) pending_migration: IrqSpinLock<Option<fairway_sched::run_queue::TaskMigration>>,
    /// The RT priority priority inheritance lends it ([`NO_BOOST`]: none).
    pub(crate) pi_priority: AtomicU8,
}

fn no_entry(_: usize) {}

impl Task {
    const fn new() -> Self {
        Task {
            state: AtomicU8::new(TaskState::Free as u8),
            on_rq: AtomicBool::new(false),
            on_cpu: AtomicBool::new(false),
            wake_list: AtomicU16::new(NOT_LISTED),
            cpu: AtomicU16::new(0),
            wait_next: AtomicU16::new(NO_TASK),
            context: TaskContext::new(),
            stack_base: AtomicUsize::new(0),
            entry: IrqSpinLock::new((no_entry, 0)),
            name: [const { AtomicU8::new(0) }; TASK_NAME_BYTES],
            sum_exec_runtime: AtomicU64::new(0),
            exec_start: AtomicU64::new(0),
            switches_in: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            wakeup_latency_total: AtomicU64::new(0),
            wakeup_latency_max: AtomicU64::new(0),
            woken_at: AtomicU64::new(0),
            last_wakeup_latency: AtomicU64::new(0),
            wait_start: AtomicU64::new(0),
            wait_total: AtomicU64::new(0),
            migrations: AtomicU64::new(0),
            affinity: AtomicU64::new(u64::MAX),
            member_index: core::sync::atomic::AtomicU32::new(0),
            latency: IrqSpinLock::new(None),
            pending_migration: IrqSpinLock::new(None),
            pi_priority: AtomicU8::new(NO_BOOST),
        }
    }

    /// The slot's state.
    pub fn state(&self) -> TaskState {
        TaskState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// The CPU whose run queue owns the task.
    pub fn cpu(&self) -> usize {
        self.cpu.load(Ordering::Acquire) as usize
    }

    /// The task's name (up to [`TASK_NAME_BYTES`] bytes).
    pub fn name(&self) -> heapless::String<TASK_NAME_BYTES> {
        let mut name = heapless::String::new();
        for byte in &self.name {
            let b = byte.load(Ordering::Relaxed);
            if b == 0 || name.push(b as char).is_err() {
                break;
            }
        }
        name
    }

    /// Names the task (the first [`TASK_NAME_BYTES`] ASCII bytes of `name`).
    pub(crate) fn set_name(&self, name: &str) {
        for (i, slot) in self.name.iter().enumerate() {
            let byte = name
                .as_bytes()
                .get(i)
                .copied()
                .filter(u8::is_ascii)
                .unwrap_or(0);
            slot.store(byte, Ordering::Relaxed);
        }
    }
}

/// Slots per chunk of the task table: small enough that a few tasks take
/// little memory, large enough that chunks are not allocated at every spawn.
pub const CHUNK_SLOTS: usize = 64;
/// The task table: slot `id` once its chunk was allocated (set once, with
/// Release, under `ALLOCATING`; read with one Acquire load).
static SLOTS: [OnceRef<'static, Task>; TASK_SLOTS] = [const { OnceRef::new() }; TASK_SLOTS];
/// Serialises chunk allocation, so that two CPUs creating tasks at once never
/// both allocate the same chunk.
static ALLOCATING: IrqSpinLock<()> = IrqSpinLock::new(());
/// Slots allocated so far.
static SLOTS_ALLOCATED: AtomicUsize = AtomicUsize::new(0);

/// Bytes of the task table: the slots allocated and the slot pointers.
pub(crate) fn task_table_bytes() -> usize {
    SLOTS_ALLOCATED.load(Ordering::Relaxed) * core::mem::size_of::<Task>()
        + core::mem::size_of_val(&SLOTS)
}

/// Task slots allocated so far.
pub fn task_slots_allocated() -> usize {
    SLOTS_ALLOCATED.load(Ordering::Relaxed)
}

/// The task in slot `id`. Only for a slot that was used (a task that exists or
/// existed, or an idle task).
#[inline(always)]
pub fn task(id: TaskId) -> &'static Task {
    match SLOTS.get(id.index()).and_then(OnceRef::get) {
        Some(slot) => slot,
        None => never_used(id),
    }
}

#[cold]
#[inline(never)]
fn never_used(id: TaskId) -> ! {
    panic!(
        "task slot {} was never used (its chunk is not allocated)",
        id.0
    )
}

/// Slot `index`, allocating its chunk if no slot of it was used yet (task
/// creation and boot, never a hot path).
pub(super) fn slot_or_allocate<S: Scheduler>(index: usize) -> Result<&'static Task, SpawnError> {
    if let Some(slot) = SLOTS[index].get() {
        return Ok(slot);
    }
    let _allocating = ALLOCATING.lock();
    if let Some(slot) = SLOTS[index].get() {
        return Ok(slot);
    }
    let start = index - index % CHUNK_SLOTS;
    let end = (start + CHUNK_SLOTS).min(TASK_SLOTS);
    // Room on the wake lists first: a task in the chunk can be woken as soon
    // as its slot pointer is visible.
    S::grow_wake_lists(SLOTS_ALLOCATED.load(Ordering::Relaxed) + end - start)
        .map_err(|bytes| SpawnError::OutOfMemory { bytes })?;
    let chunk = allocate_chunk(end - start)?;
    for (pointer, slot) in SLOTS[start..end].iter().zip(chunk) {
        if pointer.set(slot).is_err() {
            unreachable!("slot pointers are set under ALLOCATING");
        }
    }
    SLOTS_ALLOCATED.fetch_add(chunk.len(), Ordering::Relaxed);
    Ok(&chunk[index - start])
}

/// `slots` new free slots on the heap, never freed. Built slot by slot in
/// place, so that no chunk-sized value passes through the (small) task stack.
fn allocate_chunk(slots: usize) -> Result<&'static [Task], SpawnError> {
    let mut chunk = Vec::new();
    chunk
        .try_reserve_exact(slots)
        .map_err(|_| SpawnError::OutOfMemory {
            bytes: slots * core::mem::size_of::<Task>(),
        })?;
    for _ in 0..slots {
        chunk.push(Task::new());
    }
    Ok(Box::leak(chunk.into_boxed_slice()))
}

/// Allocates the chunks of the idle tasks and of the first tasks (boot core,
/// before the run queues are built: `current_task` starts at slot 0).
pub fn init_table<S: Scheduler>() {
    for index in core::iter::once(0).chain(MAX_TASKS..TASK_SLOTS) {
        if let Err(error) = slot_or_allocate::<S>(index) {
            panic!("task table: {}", error);
        }
    }
}

/// Why a task could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnError {
    /// All `MAX_TASKS` slots are in use.
    TooManyTasks {
        /// The limit.
        limit: usize,
    },
    /// No memory for the task's stack, or for the chunk of task slots (and
    /// wake-list room) its slot is in.
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
    /// The CPU asked for is not online.
    CpuOffline {
        /// The CPU asked for.
        cpu: usize,
    },
    /// The scheduling parameters were refused.
    InvalidParameters(ParamError),
    /// A task group could not be created or configured (the error was
    /// logged with the group's path).
    TaskGroup,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::TooManyTasks { limit } => {
                write!(f, "too many tasks: all {limit} task slots are in use")
            }
            SpawnError::OutOfMemory { bytes } => {
                write!(
                    f,
                    "out of memory: no {bytes} bytes for a task stack or task slots"
                )
            }
            SpawnError::CpuOffline { cpu } => write!(f, "CPU {cpu} is not online"),
            SpawnError::InvalidParameters(error) => write!(f, "{error}"),
            SpawnError::TaskGroup => write!(f, "a task group could not be set up"),
        }
    }
}

impl defmt::Format for SpawnError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", defmt::Display2Format(self));
    }
}

/// CPU `cpu`'s idle task.
pub const fn idle_task_id(cpu: usize) -> TaskId {
    TaskId((MAX_TASKS + cpu) as u16)
}

/// Wake-up latencies kept per task for exact quantiles.
pub(super) const LATENCY_SAMPLES: usize = 1024;

/// The heap one task's latency statistics take: the histogram and the
/// sampler's two buffers of `LATENCY_SAMPLES` values (kept and sorted).
pub(super) const LATENCY_STATS_BYTES: usize =
    core::mem::size_of::<fairway_sched::stats::LatencyStats>()
        + 2 * LATENCY_SAMPLES * core::mem::size_of::<u64>();

/// Heap taken by the tasks' statistics so far.
pub(super) static STATISTICS_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Heap the tasks' latency statistics take (allocated once per slot used,
/// never freed): the report's measurements, counted apart from the
/// scheduler's memory.
pub fn statistics_bytes() -> usize {
    STATISTICS_BYTES.load(Ordering::Relaxed)
}

/// Task `id`'s total runtime at `now` if it last ran on `cpu`, with the
/// stretch it is running there now: `sum_exec_runtime` is brought up to
/// date only at switches and ticks, so a task (or an idle task) read while
/// it runs would miss up to a tick. Read from another CPU, it may be off by
/// the few instructions of a switch under way.
pub fn runtime_ns_on(id: TaskId, cpu: usize, now: u64) -> u64 {
    let slot = task(id);
    let sum = slot.sum_exec_runtime.load(Ordering::Relaxed);
    if percpu::of(cpu).current_task.load(Ordering::Relaxed) == id.0 {
        sum + now.saturating_sub(slot.exec_start.load(Ordering::Relaxed))
    } else {
        sum
    }
}

/// The calling task's total runtime including the current stretch, in ns.
pub fn current_runtime_ns() -> u64 {
    let irq_state = crate::arch::cpu::irq_save();
    let slot = task(current());
    let now = crate::arch::timer::now_ns();
    let runtime = slot.sum_exec_runtime.load(Ordering::Relaxed)
        + now.saturating_sub(slot.exec_start.load(Ordering::Relaxed));
    crate::arch::cpu::irq_restore(irq_state);
    runtime
}

/// Visits every live task (not the idle tasks).
pub fn for_each_task(mut visit: impl FnMut(TaskId, &Task)) {
    for (index, slot) in SLOTS[..MAX_TASKS].iter().enumerate() {
        if let Some(slot) = slot.get()
            && !matches!(slot.state(), TaskState::Free | TaskState::Creating)
        {
            visit(TaskId(index as u16), slot);
        }
    }
}

/// Every live task (not the idle tasks), with its slot, in slot order: what
/// [`for_each_task`] visits, as an iterator (the observation floor is handed
/// the tasks' names this way).
pub fn live_tasks() -> impl Iterator<Item = (TaskId, &'static Task)> {
    SLOTS[..MAX_TASKS]
        .iter()
        .enumerate()
        .filter_map(|(index, slot)| {
            let slot = slot.get()?;
            (!matches!(slot.state(), TaskState::Free | TaskState::Creating))
                .then_some((TaskId(index as u16), slot))
        })
}

/// The task running on this CPU.
pub fn current() -> TaskId {
    let irq_state = crate::arch::cpu::irq_save();
    let id = percpu::this().current_task.load(Ordering::Relaxed);
    crate::arch::cpu::irq_restore(irq_state);
    TaskId(id)
}

/// Marks the calling task as sleeping (before it adds itself to a wait list
/// or arms its timer), and returns it.
pub fn set_current_sleeping() -> TaskId {
    let me = current();
    task(me)
        .state
        .store(TaskState::Sleeping as u8, Ordering::Release);
    me
}

/// Charges `id` the time it ran since its `exec_start` until `now`, and
/// restarts the stretch at `now` (at a switch and at the tick).
pub fn account_runtime(id: TaskId, now: u64) {
    account_runtime_of(task(id), now);
}

/// [`account_runtime`] for a task whose slot the caller already holds (the
/// switch, which reads the slot anyway). The caller holds the run-queue
/// lock of the CPU the task runs on, which every writer of the two fields
/// holds: plain loads and stores, without the exclusive-monitor loops of
/// `swap` and `fetch_add` (ARMv8.0 has no atomic swap or add).
#[inline(always)]
pub fn account_runtime_of(slot: &Task, now: u64) {
    let start = slot.exec_start.load(Ordering::Relaxed);
    slot.exec_start.store(now, Ordering::Relaxed);
    let sum = slot.sum_exec_runtime.load(Ordering::Relaxed);
    slot.sum_exec_runtime.store(
        sum.wrapping_add(now.saturating_sub(start)),
        Ordering::Relaxed,
    );
}
