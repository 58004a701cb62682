//! Kernel tasks: the task table, creation, exit and the first instructions of a
//! new task. Scheduling is in [`scheduler`], blocking in [`wait`], pipes in [`pipe`].
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

pub mod balance;
pub mod bandwidth;
pub mod eas;
pub mod explain;
pub mod groups;
pub mod pi;
pub mod pipe;
pub mod replay;
pub mod scheduler;
pub mod trace;
pub mod tracepoint;
pub mod wait;

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU64, AtomicUsize, Ordering};

use fairway_sched::task::ParamError;
pub use fairway_sched::task::{CpuMask, Policy, TaskId, TaskParams};

use alloc::boxed::Box;
use alloc::vec::Vec;
use once_cell::race::OnceRef;

use crate::arch::context::TaskContext;
use crate::config::{MAX_CPUS, MAX_TASKS, TASK_SLOTS, TASK_STACK_SIZE};

/// The longest task name kept, in bytes: a scenario's instance names are checked
/// against the same limit on the host, so no two are cut to the same name.
pub const TASK_NAME_BYTES: usize = fairway_contract::scenario::MAX_NAME_BYTES;
use crate::sync::IrqSpinLock;

pub use scheduler::{
    DeferredKicks, current, preempt_on_irq_return, preempt_point, process_wake_list, schedule,
    sleep_for, sleep_until, sleep_until_expiry, wake_up, yield_now,
};

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
    fn from_u8(value: u8) -> Self {
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

/// One slot of the task table.
pub struct Task {
    state: AtomicU8,
    /// Queued on its CPU's run queue; changed only under that run queue's lock.
    pub(crate) on_rq: AtomicBool,
    /// Its registers are live on a CPU (cleared after the switch away completes).
    on_cpu: AtomicBool,
    /// The CPU whose wake list holds the task's live entry (`NOT_LISTED` if none).
    wake_list: AtomicU16,
    /// The CPU whose run queue owns the task.
    cpu: AtomicU16,
    /// Next task in the wait list the task sleeps on.
    pub(crate) wait_next: AtomicU16,
    pub(crate) context: TaskContext,
    stack_base: AtomicUsize,
    entry: IrqSpinLock<(fn(usize), usize)>,
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
    /// The RT priority priority inheritance lends it (`pi::NO_BOOST`: none).
    pub(crate) pi_priority: AtomicU8,
}

fn no_entry(_: usize) {}

impl Task {
    const fn new() -> Self {
        Task {
            state: AtomicU8::new(TaskState::Free as u8),
            on_rq: AtomicBool::new(false),
            on_cpu: AtomicBool::new(false),
            wake_list: AtomicU16::new(scheduler::NOT_LISTED),
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
            pi_priority: AtomicU8::new(pi::NO_BOOST),
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

    fn set_name(&self, name: &str) {
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

/// Where [`spawn`] starts looking for a free task slot.
static NEXT_FREE_SLOT: AtomicUsize = AtomicUsize::new(0);

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
fn slot_or_allocate(index: usize) -> Result<&'static Task, SpawnError> {
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
    scheduler::grow_wake_lists(SLOTS_ALLOCATED.load(Ordering::Relaxed) + end - start)
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
pub fn init_table() {
    for index in core::iter::once(0).chain(MAX_TASKS..TASK_SLOTS) {
        if let Err(error) = slot_or_allocate(index) {
            panic!("task table: {}", error);
        }
    }
}

/// CPU `cpu`'s idle task.
pub const fn idle_task_id(cpu: usize) -> TaskId {
    TaskId((MAX_TASKS + cpu) as u16)
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

/// Wake-up latencies kept per task for exact quantiles.
const LATENCY_SAMPLES: usize = 1024;

/// The heap one task's latency statistics take: the histogram and the
/// sampler's two buffers of `LATENCY_SAMPLES` values (kept and sorted).
const LATENCY_STATS_BYTES: usize = core::mem::size_of::<fairway_sched::stats::LatencyStats>()
    + 2 * LATENCY_SAMPLES * core::mem::size_of::<u64>();

/// Heap taken by the tasks' statistics so far.
static STATISTICS_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Heap the tasks' latency statistics take (allocated once per slot used,
/// never freed): the report's measurements, counted apart from the
/// scheduler's memory.
pub fn statistics_bytes() -> usize {
    STATISTICS_BYTES.load(Ordering::Relaxed)
}

/// Makes room in every run queue for the next `count` tasks to be created,
/// at once (a workload that creates a batch of tasks calls it first: the
/// run queues' tables then grow once, to whole blocks of ids, and not by a
/// quarter at a time as single creations do). Ids are given out in order
/// from the last one taken, so the next `count` are known; should some be
/// taken meanwhile, creation still grows the tables as it goes.
pub fn reserve_for_spawns(count: usize) {
    let next = NEXT_FREE_SLOT.load(Ordering::Relaxed) % MAX_TASKS;
    scheduler::reserve_task_ids((next + count).min(MAX_TASKS));
}

/// Creates a task that runs `entry(argument)` on `cpu` with `params`, and makes
/// it runnable.
pub fn spawn(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
) -> Result<TaskId, SpawnError> {
    spawn_task(name, entry, argument, cpu, params, None)
}

/// [`spawn`] for one task of a batch created at one instant: the interrupt
/// another CPU needs is added to `kicks`, for the creator to send once the
/// whole batch is queued ([`DeferredKicks::send`]).
pub fn spawn_deferred(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
    kicks: &mut DeferredKicks,
) -> Result<TaskId, SpawnError> {
    spawn_task(name, entry, argument, cpu, params, Some(kicks))
}

fn spawn_task(
    name: &str,
    entry: fn(usize),
    argument: usize,
    cpu: usize,
    params: TaskParams,
    kicks: Option<&mut DeferredKicks>,
) -> Result<TaskId, SpawnError> {
    if cpu >= MAX_CPUS || !crate::percpu::of(cpu).online.load(Ordering::Acquire) {
        return Err(SpawnError::CpuOffline { cpu });
    }
    params.validate().map_err(SpawnError::InvalidParameters)?;
    // The search for a free slot starts after the last one taken (cyclically,
    // as Linux allocates pids): creating n tasks in a row costs O(n), not the
    // O(n^2) of scanning from slot 0 each time (10,000 rt-app instances took
    // 2.3 s of the run's virtual time to create that way).
    // A chunk not allocated yet is allocated when the search reaches it: its
    // first slot is free, so a search allocates at most one chunk.
    let first = NEXT_FREE_SLOT.load(Ordering::Relaxed) % MAX_TASKS;
    let mut found = None;
    for index in (first..MAX_TASKS).chain(0..first) {
        let slot = slot_or_allocate(index)?;
        if slot
            .state
            .compare_exchange(
                TaskState::Free as u8,
                TaskState::Creating as u8,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            found = Some((index, slot));
            break;
        }
    }
    let (id, slot) = found.ok_or(SpawnError::TooManyTasks { limit: MAX_TASKS })?;
    NEXT_FREE_SLOT.store(id + 1, Ordering::Relaxed);
    let id = TaskId(id as u16);
    if slot.stack_base.load(Ordering::Relaxed) == 0 {
        match crate::heap::allocate(TASK_STACK_SIZE, 16) {
            Some(base) => slot.stack_base.store(base, Ordering::Relaxed),
            None => {
                slot.state.store(TaskState::Free as u8, Ordering::Release);
                return Err(SpawnError::OutOfMemory {
                    bytes: TASK_STACK_SIZE,
                });
            }
        }
    }
    {
        let mut latency = slot.latency.lock();
        match latency.as_mut() {
            Some(stats) => {
                stats.histogram.clear();
                stats.sampler.clear();
            }
            None => {
                *latency = Some(alloc::boxed::Box::new(
                    fairway_sched::stats::LatencyStats::new(LATENCY_SAMPLES)
                        .expect("latency sample capacity"),
                ));
                STATISTICS_BYTES.fetch_add(LATENCY_STATS_BYTES, Ordering::Relaxed);
            }
        }
    }
    slot.set_name(name);
    *slot.entry.lock() = (entry, argument);
    for counter in [
        &slot.sum_exec_runtime,
        &slot.switches_in,
        &slot.wakeups,
        &slot.wakeup_latency_total,
        &slot.wakeup_latency_max,
        &slot.last_wakeup_latency,
        &slot.wait_total,
        &slot.migrations,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    slot.wait_next.store(NO_TASK, Ordering::Relaxed);
    slot.pi_priority.store(pi::NO_BOOST, Ordering::Relaxed);
    slot.affinity.store(params.affinity.0, Ordering::Relaxed);
    if !params
        .affinity
        .contains(fairway_sched::task::CpuId(cpu as u16))
    {
        slot.state.store(TaskState::Free as u8, Ordering::Release);
        return Err(SpawnError::InvalidParameters(ParamError::EmptyAffinity));
    }
    let stack_top = (slot.stack_base.load(Ordering::Relaxed) + TASK_STACK_SIZE) as u64;
    slot.context.prepare_new_task(stack_top, u64::from(id.0), 0);
    slot.cpu.store(cpu as u16, Ordering::Release);
    if let Err(error) = scheduler::activate_new(id, cpu, &params, kicks) {
        slot.state.store(TaskState::Free as u8, Ordering::Release);
        return Err(SpawnError::InvalidParameters(error));
    }
    Ok(id)
}

/// Where every new task starts (called from `task_trampoline` in `context.rs`).
pub extern "C" fn task_entry(id: u64, _unused: u64) -> ! {
    scheduler::finish_task_switch(crate::arch::cpu::IrqState::enabled());
    let (entry, argument) = *task(TaskId(id as u16)).entry.lock();
    entry(argument);
    exit()
}

/// Ends the calling task.
pub fn exit() -> ! {
    let me = current();
    crate::arch::cpu::irq_disable();
    if tracepoint::recording() {
        let cpu = crate::arch::cpu::this_cpu();
        let now = crate::arch::timer::now_ns();
        tracepoint::record(now, cpu, tracepoint::Kind::Exit, me.0, 0, 0);
    }
    task(me)
        .state
        .store(TaskState::Dead as u8, Ordering::Release);
    schedule();
    unreachable!("a dead task was scheduled again")
}

/// Changes the CPUs `id` may run on. A task that is not allowed where it is
/// moves at its next wake-up (the scheduler places it on an allowed CPU).
pub fn set_affinity(id: TaskId, affinity: CpuMask) -> Result<(), ParamError> {
    if affinity.0 & ((1u64 << crate::percpu::nr_cpus()) - 1) == 0 {
        return Err(ParamError::EmptyAffinity);
    }
    task(id).affinity.store(affinity.0, Ordering::Release);
    Ok(())
}

/// Task `id`'s total runtime at `now` if it last ran on `cpu`, with the
/// stretch it is running there now: `sum_exec_runtime` is brought up to
/// date only at switches and ticks, so a task (or an idle task) read while
/// it runs would miss up to a tick. Read from another CPU, it may be off by
/// the few instructions of a switch under way.
pub fn runtime_ns_on(id: TaskId, cpu: usize, now: u64) -> u64 {
    let slot = task(id);
    let sum = slot.sum_exec_runtime.load(Ordering::Relaxed);
    if crate::percpu::of(cpu).current_task.load(Ordering::Relaxed) == id.0 {
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
