//! The mechanism half of scheduling: per-CPU run queues behind locks, `schedule()`
//! and the context switch, wake-ups (local, or remote through the wake-up IPI),
//! the periodic tick, sleeping on a high-resolution timer, and preemption on
//! return from interrupt.
//!
//! Policy is not decided here: every choice (what to run, whether a wake-up
//! preempts, when a slice ends) is asked of the CPU's driver,
//! `fairway_sched::cpu_core::CpuCore`, the one the simulator uses too; this
//! file carries its decisions out (docs/core-driver.md).
//!
//! `schedule()` keeps its CPU's run-queue lock across the switch; the task
//! switched to releases it in [`finish_task_switch`], and only then clears the
//! `on_cpu` flag of the task switched away from, so a task is never resumed on
//! one CPU before its registers are saved on another.

use core::sync::atomic::{AtomicUsize, Ordering};

use alloc::collections::VecDeque;
use fairway_sched::cpu_core::{CpuCore, Decision, Leaving, TimerRequest};
use fairway_sched::run_queue::{CpuCapacity, PolicyKind, RunQueue};
use fairway_sched::schedutil::UpdateSites;
use fairway_sched::task::ParamError;
use spin::Once;

use super::{TaskId, TaskParams, TaskState, idle_task_id, task, tracepoint};
use crate::arch::cpu::{IrqState, irq_disable, irq_enable, this_cpu, wait_for_interrupt};
use crate::arch::timer::now_ns;
use crate::config::{MAX_CPUS, TASK_SLOTS};
use crate::hrtimer;
use crate::instrument::{self, Op};
use crate::irq::{Ipi, send_ipi};
use crate::percpu;
use crate::sync::IrqSpinLock;

/// One CPU's scheduling state, behind that CPU's run-queue lock.
pub struct CpuRunQueue {
    /// The CPU's scheduler driver and its run queue.
    pub core: CpuCore,
    /// The CPU's idle task.
    pub idle: TaskId,
    /// Every task this run queue owns (queued or asleep). Its capacity is
    /// reserved at boot; it never grows.
    members: alloc::vec::Vec<TaskId>,
}

impl CpuRunQueue {
    /// The portable core's run queue, to read.
    pub fn queue(&self) -> &RunQueue {
        self.core.run_queue()
    }

    /// The task running on the CPU (its idle task when the core runs none).
    pub fn current(&self) -> TaskId {
        self.core.current().unwrap_or(self.idle)
    }

    /// Records what the last core call spent in `enqueue_task`,
    /// `dequeue_task` and the pick (`instrument`).
    pub(super) fn record_costs(&mut self, cpu: usize) {
        if !instrument::ENABLED {
            return;
        }
        let costs = self.core.take_op_costs();
        if let Some(cycles) = costs.enqueue {
            instrument::record(cpu, Op::EnqueueTask, cycles);
            instrument::record_internal(cpu, costs.enqueue_internal);
        }
        if let Some(cycles) = costs.dequeue {
            instrument::record(cpu, Op::DequeueTask, cycles);
            instrument::record_internal(cpu, costs.dequeue_internal);
        }
        if let Some(cycles) = costs.pick {
            instrument::record(cpu, Op::PickNextTask, cycles);
        }
        // Every other PELT update (a switch's group levels, the tick, the
        // blocked-load decay): the PELT histogram covers them all.
        instrument::record_internal(cpu, costs.other_internal);
    }

    /// Records that this run queue owns `id`.
    #[track_caller]
    pub(super) fn add_member(&mut self, id: TaskId) {
        debug_assert!(!self.members.contains(&id), "task {} added twice", id.0);
        task(id)
            .member_index
            .store(self.members.len() as u32, Ordering::Relaxed);
        debug_assert!(self.members.len() < self.members.capacity());
        self.members.push(id);
    }

    /// Records that this run queue no longer owns `id`.
    #[track_caller]
    pub(super) fn remove_member(&mut self, id: TaskId) {
        let slot = task(id);
        let index = slot.member_index.load(Ordering::Relaxed) as usize;
        assert!(
            self.members.get(index) == Some(&id),
            "task {} is not a member of CPU {}'s run queue (index {}, {} members, its cpu {})",
            id.0,
            self.idle.0 as usize - crate::config::MAX_TASKS,
            index,
            self.members.len(),
            slot.cpu()
        );
        self.members.swap_remove(index);
        if let Some(&moved) = self.members.get(index) {
            task(moved)
                .member_index
                .store(index as u32, Ordering::Relaxed);
        }
    }

    /// Makes room for `count` members (every task may come to this CPU), by
    /// whole blocks as the core's tables grow, so that adding one never
    /// allocates.
    fn reserve_members(&mut self, count: usize) {
        let capacity = self.members.capacity();
        if count > capacity {
            let target = fairway_sched::task::grown_length(capacity, count);
            self.members.reserve_exact(target - self.members.len());
        }
    }

    /// The heap the member list takes.
    fn members_bytes(&self) -> usize {
        fairway_sched::task::table_bytes(&self.members)
    }

    /// The tasks this run queue owns.
    pub fn members(&self) -> &[TaskId] {
        &self.members
    }
}

static RUN_QUEUES: [Once<IrqSpinLock<CpuRunQueue>>; MAX_CPUS] = [const { Once::new() }; MAX_CPUS];
/// Tasks woken by other CPUs, per CPU. A task is on at most one list that
/// counts (its `wake_list`); stale entries elsewhere are skipped, so twice the
/// task count bounds a list: [`grow_wake_lists`] keeps every list's capacity
/// at twice the task slots allocated, as the task table grows (issue 15), so
/// that a push never allocates.
static WAKE_LISTS: [IrqSpinLock<VecDeque<TaskId>>; MAX_CPUS] =
    [const { IrqSpinLock::new(VecDeque::new()) }; MAX_CPUS];
/// Heap bytes the wake lists hold (outgrown buffers go back to the heap).
static WAKE_LIST_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Makes room on every CPU's wake list for twice `slots` task slots (when the
/// task table grows, before the new slots are visible). A list that grows at
/// least doubles, up to twice `TASK_SLOTS`, so that it is copied a bounded
/// number of times. On failure, the bytes that were asked for.
pub(super) fn grow_wake_lists(slots: usize) -> Result<(), usize> {
    let needed = 2 * slots;
    for list in &WAKE_LISTS[..percpu::nr_cpus().clamp(1, MAX_CPUS)] {
        let mut list = list.lock();
        if list.capacity() >= needed {
            continue;
        }
        let capacity = needed.max(2 * list.capacity()).min(2 * TASK_SLOTS);
        let bytes = capacity * core::mem::size_of::<TaskId>();
        let additional = capacity - list.len();
        let before = list.capacity();
        list.try_reserve_exact(additional).map_err(|_| bytes)?;
        WAKE_LIST_BYTES.fetch_add(
            (list.capacity() - before) * core::mem::size_of::<TaskId>(),
            Ordering::Relaxed,
        );
    }
    Ok(())
}

/// `Task::wake_list` when the task is on no wake list.
pub(super) const NOT_LISTED: u16 = u16::MAX;
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
fn next_tick_after(cpu: usize, now: u64) -> u64 {
    let period = tick_period_ns();
    let offset = tick_offset_ns(cpu);
    (now.saturating_sub(offset) / period + 1) * period + offset
}

/// Carries out the core's slice-end timer request on this CPU's timer.
fn carry_out_hrtick(request: TimerRequest, cpu: usize) {
    let timer = hrtimer::scheduler_timer(cpu);
    match request {
        TimerRequest::Keep => {}
        TimerRequest::Arm(at) => hrtimer::start(timer, at, hrtick, cpu),
        TimerRequest::Cancel => {
            hrtimer::cancel(timer);
        }
    }
}

/// The slice-end timer: the core decides whether the running task's slice is
/// over, or re-arms the timer for what is left.
fn hrtick(cpu: usize) {
    let mut rq = run_queue(cpu).lock();
    let decision = rq.core.hrtick(now_ns());
    if decision.resched {
        percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
    }
    carry_out_hrtick(decision.hrtick, cpu);
}

/// Re-evaluates this CPU's slice-end timer (sent through the call-function IPI
/// when another CPU queued a task here).
fn hrtick_update_here(cpu: usize) {
    let mut rq = run_queue(cpu).lock();
    let request = rq.core.hrtick_update(now_ns());
    carry_out_hrtick(request, cpu);
}

pub(super) fn run_queue(cpu: usize) -> &'static IrqSpinLock<CpuRunQueue> {
    RUN_QUEUES[cpu]
        .get()
        .expect("run queue used before scheduler::init_cpu")
}

/// Runs `f` on CPU `cpu`'s run queue, under its lock.
pub fn with_run_queue<R>(cpu: usize, f: impl FnOnce(&mut CpuRunQueue) -> R) -> R {
    f(&mut run_queue(cpu).lock())
}

/// The scheduler tick period in ns.
pub fn tick_period_ns() -> u64 {
    config().tick_ns()
}

/// Serialises the run queues' construction (their heap is measured) with
/// the growth of their task tables: a CPU built while a task is created
/// either is grown by [`reserve_task_tables`] or is built for the task.
/// Holds the task ids every run queue has room for.
static BUILDING: spin::Mutex<usize> = spin::Mutex::new(0);

/// Heap bytes the CPUs' run queues took when they were built.
static RUN_QUEUE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The scheduler's memory (issue 15): the run queues' heap (every CPU's core,
/// classes, trees and records), and the tables that grow with the task slots
/// allocated (the task table with its slot pointers, and the CPUs' wake
/// lists); stacks are not counted.
pub fn memory_bytes() -> (usize, usize) {
    (
        RUN_QUEUE_BYTES.load(Ordering::Relaxed) + crate::arch::lazy::bytes(),
        core::mem::size_of_val(&WAKE_LISTS)
            + WAKE_LIST_BYTES.load(Ordering::Relaxed)
            + super::task_table_bytes(),
    )
}

/// Builds CPU `cpu`'s run queue with the calling context as its idle task
/// (each CPU calls this for itself while booting, IRQs masked).
pub fn init_cpu(cpu: usize) {
    let idle = idle_task_id(cpu);
    let settings = SETTINGS
        .get()
        .expect("settings fixed before the run queues are built");
    // The heap this CPU's run queue takes (`memory_bytes`); one CPU builds
    // at a time, so that no other allocation falls in between. Built with
    // room for the task ids created so far (none, for the boot CPU), and
    // published before the lock is released: a task created meanwhile finds
    // it in `reserve_task_tables`, which grows it with the next ids.
    let building = BUILDING.lock();
    let reserved = *building;
    RUN_QUEUES[cpu].call_once(|| {
        let free_before = crate::heap::free_bytes();
        // The timeline arena takes address space now and RAM as its
        // pages are written (`arch::lazy`).
        let mut queue = crate::arch::lazy::with_lazy_arenas(|| {
            RunQueue::build(
                settings.policy,
                reserved,
                MAX_GROUPS,
                settings.config.uclamp == Some(true),
                settings.config.cfs_bandwidth,
            )
        });
        queue.set_cpu_capacity(CpuCapacity {
            capacity_orig: percpu::of(cpu).capacity.load(Ordering::Relaxed),
            frequency_scale: 1024,
        });
        let mut core = CpuCore::new(cpu as u16, queue, reserved, settings.config.hrtick);
        if instrument::ENABLED {
            core.set_cost_counter(Some(instrument::counter));
        }
        let records = super::replay::capacity();
        if records > 0 {
            core.start_recording(records, super::replay::next_sequence);
        }
        let run_queue = IrqSpinLock::new(CpuRunQueue {
            core,
            idle,
            members: alloc::vec::Vec::with_capacity(reserved),
        });
        RUN_QUEUE_BYTES.fetch_add(free_before - crate::heap::free_bytes(), Ordering::Relaxed);
        run_queue
    });
    drop(building);
    instrument::init_cpu(cpu);
    let idle_task = task(idle);
    idle_task.set_name("idle");
    idle_task.cpu.store(cpu as u16, Ordering::Relaxed);
    idle_task.on_cpu.store(true, Ordering::Relaxed);
    idle_task
        .state
        .store(TaskState::Running as u8, Ordering::Release);
    idle_task.exec_start.store(now_ns(), Ordering::Relaxed);
    percpu::of(cpu)
        .current_task
        .store(idle.0, Ordering::Relaxed);
}

/// Starts CPU `cpu`'s periodic tick (on that CPU).
pub fn start_tick() {
    let cpu = this_cpu();
    hrtimer::start(
        hrtimer::tick_timer(cpu),
        now_ns() + tick_period_ns(),
        scheduler_tick,
        cpu,
    );
}

/// The task running on this CPU.
pub fn current() -> TaskId {
    let irq_state = crate::arch::cpu::irq_save();
    let id = percpu::this().current_task.load(Ordering::Relaxed);
    crate::arch::cpu::irq_restore(irq_state);
    TaskId(id)
}

fn account_runtime(id: TaskId, now: u64) {
    let slot = task(id);
    let start = slot.exec_start.swap(now, Ordering::Relaxed);
    slot.sum_exec_runtime
        .fetch_add(now.saturating_sub(start), Ordering::Relaxed);
}

/// Picks the next task on this CPU and switches to it. Call with no lock held;
/// IRQs may be masked or not (the state is restored on return).
pub fn schedule() {
    // IRQs are masked before the CPU number is read: an interrupt between the
    // two could preempt this task, let it migrate and resume it on another CPU,
    // which would then lock and switch on the first CPU's run queue and release
    // its own in `finish_task_switch`: the first CPU's lock was never released
    // (found as a hang of hackbench-4x10x50, every CPU spinning on run-queue
    // locks).
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    let mut rq = run_queue(cpu).lock_masked(irq_state);
    let irq_state = rq.irq_state();
    let now = now_ns();
    let previous = rq.current();
    account_runtime(previous, now);
    percpu::of(cpu).need_resched.store(false, Ordering::Relaxed);
    let previous_task = task(previous);
    // A task that set itself sleeping (or dead) and was not woken since
    // leaves the run queue now, as Linux's `__schedule` dequeues it.
    let leaving = match previous_task.state() {
        _ if previous == rq.idle || !previous_task.on_rq.load(Ordering::Relaxed) => {
            Leaving::Runnable
        }
        TaskState::Running => Leaving::Runnable,
        TaskState::Dead => Leaving::Dead,
        _ => Leaving::Sleeping,
    };
    if leaving != Leaving::Runnable {
        previous_task.on_rq.store(false, Ordering::Relaxed);
    } else {
        // An active balance asked to push the running task away: it leaves
        // the run queue now and moves once switched out.
        super::balance::take_push(cpu, &mut rq, previous, now);
    }
    let switch = rq.core.schedule(now, leaving);
    rq.record_costs(cpu);
    if crate::cpufreq::active() {
        let context_switch = switch.next.unwrap_or(rq.idle) != previous;
        governor_call(cpu, &mut rq, now, context_switch);
    }
    if previous != rq.idle && previous_task.on_rq.load(Ordering::Relaxed) {
        previous_task.wait_start.store(now, Ordering::Relaxed);
    }
    let next = switch.next.unwrap_or(rq.idle);
    if super::explain::explaining() {
        super::explain::pick(cpu, &rq, now, previous, next);
    }
    tracepoint::group_bandwidth(now, cpu, rq.core.run_queue());
    let next_task = task(next);
    next_task.exec_start.store(now, Ordering::Relaxed);
    carry_out_hrtick(switch.hrtick, cpu);
    super::balance::publish(cpu, &rq);
    if next == previous {
        return;
    }
    if next != rq.idle {
        let waited = now.saturating_sub(next_task.wait_start.load(Ordering::Relaxed));
        next_task.wait_total.fetch_add(waited, Ordering::Relaxed);
    }
    let woken_at = next_task.woken_at.swap(0, Ordering::Relaxed);
    if woken_at != 0 {
        let latency = now.saturating_sub(woken_at);
        next_task
            .last_wakeup_latency
            .store(latency, Ordering::Relaxed);
        next_task
            .wakeup_latency_total
            .fetch_add(latency, Ordering::Relaxed);
        next_task
            .wakeup_latency_max
            .fetch_max(latency, Ordering::Relaxed);
        if let Some(stats) = next_task.latency.lock().as_mut() {
            stats.record(latency);
        }
    }
    next_task.switches_in.fetch_add(1, Ordering::Relaxed);
    if tracepoint::recording() {
        trace_switch(cpu, &rq, now, previous, next, leaving);
    }
    super::trace::record(super::trace::Switch {
        time_ns: now,
        cpu: cpu as u16,
        previous,
        next,
    });
    next_task.on_cpu.store(true, Ordering::Relaxed);
    let this = percpu::of(cpu);
    this.current_task.store(next.0, Ordering::Relaxed);
    if switch.newidle_balance() {
        // The idle loop balances once it runs (no lock held).
        this.entered_idle.store(true, Ordering::Relaxed);
    }
    this.previous_task.store(previous.0, Ordering::Relaxed);
    this.context_switches.fetch_add(1, Ordering::Relaxed);
    // The lock stays held across the switch; `finish_task_switch` releases it.
    core::mem::forget(rq);
    if instrument::ENABLED {
        this.switch_start
            .store(instrument::counter(), Ordering::Relaxed);
    }
    // SAFETY: `previous` runs on this CPU (it is `current`); `next` is queued here
    // (or is this CPU's idle task), is not running (`on_cpu` was false: a queued
    // task's previous switch-out finished under this lock), and its context was
    // saved by `switch` or prepared by `spawn`.
    unsafe { previous_task.context.switch(&next_task.context) };
    finish_task_switch(irq_state);
}

/// The switch's tracepoints, as the simulator records them: leaving idle,
/// `sched_switch`, entering idle, then the counters of the CPU with those
/// of the task switched out (as its dequeue or put left them: a task going
/// to sleep is at its peak, so a chart drawn from switch-ins alone shows only
/// the troughs of a periodic task), and with those of the task switched in.
#[inline(never)]
fn trace_switch(
    cpu: usize,
    rq: &CpuRunQueue,
    now: u64,
    previous: TaskId,
    next: TaskId,
    leaving: Leaving,
) {
    use tracepoint::{Kind, PrevState, record, task_arg};
    if previous == rq.idle {
        record(now, cpu, Kind::CpuIdle, 0, 0, u64::from(u32::MAX));
    }
    let prev_state = match leaving {
        Leaving::Runnable => PrevState::Preempted,
        Leaving::Sleeping => PrevState::Sleeping,
        Leaving::Dead => PrevState::Dead,
    };
    record(
        now,
        cpu,
        Kind::Switch,
        task_arg(previous, rq.idle),
        task_arg(next, rq.idle),
        prev_state as u64,
    );
    if next == rq.idle {
        record(now, cpu, Kind::CpuIdle, 0, 0, 0);
    }
    if previous != rq.idle {
        tracepoint::signals(now, cpu, rq.core.run_queue(), Some(previous));
    }
    let next = (next != rq.idle).then_some(next);
    tracepoint::signals(now, cpu, rq.core.run_queue(), next);
}

/// Completes a switch on the CPU that made it: marks the task switched away from
/// as off-CPU, frees it if it died, and releases the run-queue lock that
/// `schedule()` kept, restoring `irq_state` (the resumed task's own).
pub fn finish_task_switch(irq_state: IrqState) {
    let cpu = this_cpu();
    // SAFETY: `schedule()` on this CPU locked this run queue and forgot its guard
    // before switching here, with IRQs masked.
    let mut rq = unsafe { run_queue(cpu).adopt(irq_state) };
    if instrument::ENABLED {
        let start = percpu::of(cpu).switch_start.swap(0, Ordering::Relaxed);
        if start != 0 {
            instrument::record(
                cpu,
                Op::ContextSwitch,
                instrument::counter().wrapping_sub(start),
            );
        }
    }
    let previous = TaskId(percpu::of(cpu).previous_task.load(Ordering::Relaxed));
    let previous_task = task(previous);
    previous_task.on_cpu.store(false, Ordering::Release);
    if previous_task.state() == TaskState::Dead {
        // The core forgot it at the switch (`Leaving::Dead`).
        rq.remove_member(previous);
        previous_task
            .state
            .store(TaskState::Free as u8, Ordering::Release);
    }
    drop(rq);
    // A task an active balance pushed away, now switched out.
    super::balance::finish_push(cpu);
    // Under icount, end this vCPU's turn (docs/icount.md, "Turns at
    // switches"): the other vCPUs run as they would beside it on hardware,
    // where `YIELD` is only a hint.
    crate::arch::cpu::relax();
}

/// The interrupts a batch of task creations owes other CPUs, sent together
/// by [`DeferredKicks::send`] once the whole batch is queued.
///
/// rt-app's instances are created at one instant (`src/workload/rtapp.rs`).
/// Kicking each CPU as its first instance is queued would let that CPU start
/// running while the creator is still creating: under `--icount` (one vCPU at
/// a time, docs/icount.md) the kick hands the turn to that CPU, whose hog then
/// runs a whole turn (about 3 ms) while the creator waits, and an idle CPU
/// whose own instances are not queued yet pulls a waiting one from the
/// creator's CPU at its tick (a 4-task CPU the balancer needs about 400 ms to
/// even out, found in `fairness-12-mixed-nice-4cpus-cfs`).
#[derive(Debug, Default)]
pub struct DeferredKicks {
    /// CPUs to send a reschedule IPI (their `need_resched` is already set).
    reschedule: u64,
    /// CPUs whose running task's slice end must be recomputed.
    hrtick: u64,
}

impl DeferredKicks {
    /// Sends the owed interrupts: a reschedule, which re-evaluates the slice
    /// too, else the slice update.
    pub fn send(self) {
        for cpu in 0..percpu::nr_cpus() {
            let bit = 1u64 << cpu;
            // A full call-function mailbox falls back to a reschedule.
            let reschedule = self.reschedule & bit != 0
                || (self.hrtick & bit != 0
                    && crate::smp::call_function(cpu, hrtick_update_here, cpu).is_err());
            if reschedule {
                send_ipi(cpu, Ipi::Reschedule);
            }
        }
    }
}

/// How many task ids every run queue has room for ([`reserve_task_tables`]).
pub fn task_ids_reserved() -> usize {
    *BUILDING.lock()
}

/// Makes room for task `id` in every CPU's tables indexed by task id
/// (`CpuCore::reserve_tasks`) before the task can be queued anywhere: a
/// wake-up may move it to any CPU, and no hot path allocates. Not a hot path
/// itself: once per task created, each run queue locked in turn; tables grow
/// by whole blocks, so most calls find the room there.
fn reserve_task_tables(id: TaskId) {
    reserve_task_ids(id.index() + 1);
}

/// Makes room for the task ids below `count` in every CPU's tables (see
/// [`reserve_task_tables`]); a batch of tasks created together is given its
/// room at once, so the tables grow once, to whole blocks, rather than by a
/// quarter at a time.
pub(super) fn reserve_task_ids(count: usize) {
    let mut reserved = BUILDING.lock();
    if count <= *reserved {
        return;
    }
    for run_queue in RUN_QUEUES.iter().filter_map(Once::get) {
        let mut rq = run_queue.lock();
        let before = rq.core.task_storage_bytes() + rq.members_bytes();
        rq.core.reserve_tasks(count);
        rq.reserve_members(count);
        let grown = rq.core.task_storage_bytes() + rq.members_bytes() - before;
        RUN_QUEUE_BYTES.fetch_add(grown, Ordering::Relaxed);
    }
    *reserved = count;
}

/// Registers a new task with CPU `cpu`'s run queue and makes it runnable;
/// another CPU is interrupted at once, or through `deferred` when given.
pub(super) fn activate_new(
    id: TaskId,
    cpu: usize,
    params: &TaskParams,
    deferred: Option<&mut DeferredKicks>,
) -> Result<(), ParamError> {
    reserve_task_tables(id);
    let mut rq = run_queue(cpu).lock();
    let now = now_ns();
    let decision = rq.core.wake_up_new_task(id, params, now)?;
    rq.record_costs(cpu);
    tracepoint::group_bandwidth(now, cpu, rq.core.run_queue());
    if tracepoint::recording() {
        let prio = prio(params.policy);
        tracepoint::record(
            now,
            cpu,
            tracepoint::Kind::WakeupNew,
            id.0,
            prio,
            cpu as u64,
        );
    }
    let slot = task(id);
    slot.state
        .store(TaskState::Running as u8, Ordering::Release);
    rq.add_member(id);
    slot.on_rq.store(true, Ordering::Relaxed);
    slot.wait_start.store(now, Ordering::Relaxed);
    match deferred {
        Some(kicks) if cpu != this_cpu() => {
            if decision.resched {
                percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
                kicks.reschedule |= 1 << cpu;
            } else if decision.hrtick != TimerRequest::Keep {
                kicks.hrtick |= 1 << cpu;
            }
        }
        _ => carry_out_decision(&mut rq, cpu, decision),
    }
    if crate::cpufreq::active() {
        governor_call(cpu, &mut rq, now, false);
    }
    super::balance::publish(cpu, &rq);
    Ok(())
}

/// Linux's `prio` of a policy (`p->prio`), as `sched_wakeup_new` reports
/// it: `120 + nice` for the fair policies (`SCHED_IDLE` reports 120),
/// `99 - rt_priority` for RT.
fn prio(policy: fairway_sched::task::Policy) -> u16 {
    use fairway_sched::task::Policy;
    match policy {
        Policy::Normal { nice } | Policy::Batch { nice } => (120 + i16::from(nice)) as u16,
        Policy::Idle => 120,
        Policy::Fifo { priority } | Policy::RoundRobin { priority } => 99 - u16::from(priority),
    }
}

/// Carries out the core's decision for `cpu` (its run queue `rq` locked)
/// after a task was queued there: a reschedule (through the reschedule IPI
/// when `cpu` is another CPU), or the running task's new slice end (through
/// the call-function IPI when it is another CPU's timer).
pub(super) fn carry_out_decision(rq: &mut CpuRunQueue, cpu: usize, decision: Decision) {
    if decision.resched {
        percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
        if cpu != this_cpu() {
            send_ipi(cpu, Ipi::Reschedule);
        }
    } else if decision.hrtick != TimerRequest::Keep {
        if cpu == this_cpu() {
            carry_out_hrtick(decision.hrtick, cpu);
        } else if crate::smp::call_function(cpu, hrtick_update_here, cpu).is_err() {
            // The mailbox is full: a reschedule re-evaluates the slice too.
            send_ipi(cpu, Ipi::Reschedule);
        }
    }
    let _ = rq;
}

/// Enqueues the woken `id` on this CPU's run queue (the local half of a wake-up).
fn activate(id: TaskId) {
    // Masked before the CPU number is read, as in `schedule()`.
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    let mut rq = run_queue(cpu).lock_masked(irq_state);
    let slot = task(id);
    // A task that never left the run queue (it was woken before it could
    // schedule out) or went back to sleep since (a stale wake-list entry) is
    // left alone.
    if slot.state() != TaskState::Running || slot.on_rq.load(Ordering::Relaxed) || slot.cpu() != cpu
    {
        return;
    }
    let now = now_ns();
    let migrated = super::balance::attach_pending(&mut rq, id, now);
    let decision = rq.core.try_to_wake_up(id, now, migrated);
    rq.record_costs(cpu);
    tracepoint::group_bandwidth(now, cpu, rq.core.run_queue());
    tracepoint::record(now, cpu, tracepoint::Kind::Wakeup, id.0, 0, cpu as u64);
    slot.on_rq.store(true, Ordering::Relaxed);
    slot.wait_start.store(now, Ordering::Relaxed);
    slot.woken_at.store(now.max(1), Ordering::Relaxed);
    carry_out_decision(&mut rq, cpu, decision);
    if crate::cpufreq::active() {
        governor_call(cpu, &mut rq, now, false);
    }
    super::balance::publish(cpu, &rq);
    if super::eas::active() {
        super::balance::note_overutilized(cpu);
    }
}

/// Wakes `id` if it sleeps; returns whether it did. A task owned by another CPU
/// is put on that CPU's wake list and the CPU is sent the wake-up IPI. Never
/// schedules: callers in task context follow with [`preempt_point`] once they
/// hold no lock.
pub fn wake_up(id: TaskId) -> bool {
    let slot = task(id);
    if slot
        .state
        .compare_exchange(
            TaskState::Sleeping as u8,
            TaskState::Running as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        return false;
    }
    slot.wakeups.fetch_add(1, Ordering::Relaxed);
    // `sched_waking` comes before the placement's `sched_migrate_task`, as
    // in Linux: its time is taken now, its target once placed.
    let waking_at = if tracepoint::recording() { now_ns() } else { 0 };
    let cpu = place_wakeup(id);
    if tracepoint::recording() {
        trace_waking(id, cpu, waking_at);
    }
    if cpu == this_cpu() {
        activate(id);
    } else if slot.wake_list.swap(cpu as u16, Ordering::AcqRel) != cpu as u16 {
        // An entry the task may still have on another CPU's list is now stale:
        // that CPU skips it (see `process_wake_list`).
        let mut list = WAKE_LISTS[cpu].lock();
        // Never grows here (no allocation on a hot path): see `WAKE_LISTS`.
        if list.len() == list.capacity() {
            panic!("wake list of CPU {} is full", cpu);
        }
        list.push_back(id);
        drop(list);
        send_ipi(cpu, Ipi::WakeUp);
    }
    true
}

/// `sched_waking` on the waker's CPU: the waker is the task running there,
/// none for a wake-up from an interrupt (a timer's) or from the idle task.
#[inline(never)]
fn trace_waking(id: TaskId, target: usize, at: u64) {
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    let waker = if percpu::in_interrupt() {
        tracepoint::NO_TASK
    } else {
        tracepoint::task_arg(current(), idle_task_id(cpu))
    };
    let kind = tracepoint::Kind::Waking;
    tracepoint::record(at, cpu, kind, id.0, waker, target as u64);
    crate::arch::cpu::irq_restore(irq_state);
}

/// Chooses the CPU a waking task runs on (Linux's `select_task_rq` at
/// `try_to_wake_up`) and detaches it from its old run queue when it moves.
/// A task that never left its run queue stays where it is.
fn place_wakeup(id: TaskId) -> usize {
    let slot = task(id);
    let prev = slot.cpu();
    let affinity = slot.affinity.load(Ordering::Relaxed);
    let allowed = affinity & (1 << prev) != 0;
    // Linux asks the class only of a task allowed on more than one CPU
    // (`select_task_rq` in core.c, `p->nr_cpus_allowed > 1`): a task pinned
    // to its previous CPU stays, without the placement's cost.
    if allowed && (affinity == 1 << prev || !super::balance::enabled()) {
        return prev;
    }
    let mut rq = run_queue(prev).lock();
    // Holding `prev`'s lock: no switch is in progress there, so a task that is
    // not queued has finished switching out (`on_cpu` is clear).
    if slot.on_rq.load(Ordering::Relaxed) || slot.cpu() != prev {
        return slot.cpu();
    }
    let target = super::balance::select_wake_cpu(id, prev, &rq);
    if target != prev && super::balance::detach_for_wakeup(id, &mut rq, target) {
        super::balance::publish(prev, &rq);
        target
    } else {
        prev
    }
}

/// Handles the wake-up IPI: enqueues the tasks other CPUs woke for this one.
pub fn process_wake_list() {
    let cpu = this_cpu();
    loop {
        let Some(id) = WAKE_LISTS[cpu].lock().pop_front() else {
            break;
        };
        // Only the entry on the list the task was last put on counts, and
        // only while the task belongs to this CPU.
        let slot = task(id);
        let claimed = slot
            .wake_list
            .compare_exchange(cpu as u16, NOT_LISTED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if claimed && slot.cpu() == cpu {
            activate(id);
        }
    }
}

/// Reschedules if asked to and not in an interrupt handler (a voluntary
/// preemption point for task context, after a wake-up for instance).
pub fn preempt_point() {
    if !percpu::in_interrupt() && percpu::this().need_resched.load(Ordering::Relaxed) {
        schedule();
    }
}

/// Called on the way out of every IRQ: preemption.
pub fn preempt_on_irq_return() {
    if percpu::this().need_resched.load(Ordering::Relaxed) {
        schedule();
    }
}

/// Gives up the CPU to the next queued task, if any.
pub fn yield_now() {
    {
        // Masked before the CPU number is read, as in `schedule()`: a task
        // migrated in between would mark another CPU's current task as yielded.
        let irq_state = crate::arch::cpu::irq_save();
        let cpu = this_cpu();
        run_queue(cpu)
            .lock_masked(irq_state)
            .core
            .yield_task(now_ns());
    }
    schedule();
}

fn wake_from_timer(id: usize) {
    wake_up(TaskId(id as u16));
}

/// Sleeps until the kernel clock reaches `deadline_ns`.
pub fn sleep_until(deadline_ns: u64) {
    irq_disable();
    sleep_masked(deadline_ns);
    irq_enable();
}

/// Sleeps until `deadline_ns` unless it has already come: returns whether
/// the task slept. Checked with interrupts masked, so neither the tick nor a
/// preemption can pass the deadline between the check and the sleep: a
/// deadline reached while the task was still running is no sleep, so no
/// wake-up and no latency (an rt-app timer event reached after its expiry,
/// docs/report-format.md, "Overruns"). `clock_nanosleep` of an absolute
/// time that has passed returns at once in the same way.
pub fn sleep_until_expiry(deadline_ns: u64) -> bool {
    irq_disable();
    let sleeps = now_ns() < deadline_ns;
    if sleeps {
        sleep_masked(deadline_ns);
    }
    irq_enable();
    sleeps
}

/// The sleep of [`sleep_until`] and [`sleep_until_expiry`], interrupts
/// masked: the current task marked sleeping, its timer armed for
/// `deadline_ns`, and the switch away; returns once the timer woke it.
fn sleep_masked(deadline_ns: u64) {
    let me = current();
    task(me)
        .state
        .store(TaskState::Sleeping as u8, Ordering::Release);
    hrtimer::start(
        hrtimer::task_timer(me.index()),
        deadline_ns,
        wake_from_timer,
        me.index(),
    );
    schedule();
}

/// Sleeps for `duration_ns`.
pub fn sleep_for(duration_ns: u64) {
    sleep_until(now_ns() + duration_ns);
}

/// Puts the calling task to sleep until a [`wake_up`]; the caller has recorded
/// where it waits (a wait list) under a lock it has now released.
pub(super) fn sleep_current() {
    schedule();
}

/// Marks the calling task as sleeping (before it adds itself to a wait list).
pub(super) fn set_current_sleeping() {
    task(current())
        .state
        .store(TaskState::Sleeping as u8, Ordering::Release);
}

/// Keeps the longest time between two ticks in which a task ran on `cpu`
/// (`running`: one runs now): a running task is charged at each tick and
/// when it leaves the CPU, so none ran longer without a charge. Kept at
/// the tick only, off the switch path.
fn note_tick_gap(cpu: usize, running: bool, now: u64) {
    let this = percpu::of(cpu);
    let last = this.last_tick_ns.swap(now, Ordering::Relaxed);
    let switches = this.context_switches.load(Ordering::Relaxed);
    let switched = this.switches_at_tick.swap(switches, Ordering::Relaxed) != switches;
    let gap = now.saturating_sub(last);
    if last != 0
        && (running || switched)
        && this.max_uncharged_ns.fetch_max(gap, Ordering::Relaxed) < gap
    {
        this.max_uncharged_end_ns.store(now, Ordering::Relaxed);
    }
}

/// The tick: accounts the running task and asks the policy whether its slice is over.
fn scheduler_tick(cpu: usize) {
    // Ticks fall on multiples of the period, as Linux's jiffies do, plus this
    // CPU's skew.
    let next = next_tick_after(cpu, now_ns());
    hrtimer::start(hrtimer::tick_timer(cpu), next, scheduler_tick, cpu);
    percpu::of(cpu).ticks.fetch_add(1, Ordering::Relaxed);
    let mut rq = run_queue(cpu).lock();
    // The clock is read under the lock, so that the run queue never sees time
    // go backwards (another CPU may have queued a task here meanwhile).
    let now = now_ns();
    note_tick_gap(cpu, rq.core.current().is_some(), now);
    account_runtime(rq.current(), now);
    let active = crate::cpufreq::active();
    if active {
        apply_frequency_scale(cpu, rq.core.run_queue_mut());
    }
    if rq.core.sched_tick(now).resched {
        percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
    }
    rq.core.update_blocked_averages(now);
    if tracepoint::recording() {
        tracepoint::signals(now, cpu, rq.core.run_queue(), rq.core.current());
        tracepoint::group_bandwidth(now, cpu, rq.core.run_queue());
    }
    super::groups::exchange_group_load(cpu, &mut rq.core, now);
    // The tick's PELT updates, in the PELT histogram.
    rq.record_costs(cpu);
    // schedutil's tick call, in both modes (after the tick's PELT and
    // blocked-load updates).
    let perf = active.then(|| {
        let queue = rq.core.run_queue_mut();
        let _ = queue.take_util_changed();
        cpu_perf_request(queue)
    });
    super::balance::publish(cpu, &rq);
    if super::eas::active() {
        super::balance::note_overutilized(cpu);
    }
    drop(rq);
    if let Some(perf) = perf {
        crate::cpufreq::update(cpu, perf, now);
    }
    // Grants whose call-function IPI found the mailbox full.
    super::bandwidth::apply_pending_grants(cpu);
    super::balance::periodic(cpu);
}

/// `arch_scale_freq_tick` (§2.3): the frequency scale in effect goes into
/// the run queue's PELT before the tick updates it.
fn apply_frequency_scale(cpu: usize, queue: &mut RunQueue) {
    let scale = percpu::of(cpu).frequency_scale.load(Ordering::Relaxed);
    let mut capacity = queue.cpu_capacity();
    if capacity.frequency_scale != scale {
        capacity.frequency_scale = scale;
        queue.set_cpu_capacity(capacity);
    }
}

/// schedutil's call from a scheduler path (`cpufreq_update_util`, §6.2), the
/// run queue locked: with `cpufreq_update=pelt` when the root run queue's
/// PELT signals changed since the last call site (a decay, attach or
/// detach; a migration's is seen at the CPU's next site), with
/// `cpufreq_update=switch` at a context switch.
/// Out of line: its callers test `cpufreq::active()` first, so that a board
/// without DVFS pays one load and branch per site.
#[inline(never)]
fn governor_call(cpu: usize, rq: &mut CpuRunQueue, now: u64, context_switch: bool) {
    let queue = rq.core.run_queue_mut();
    let util_changed = queue.take_util_changed();
    let call = match crate::cpufreq::update_sites() {
        UpdateSites::Pelt => util_changed,
        UpdateSites::ContextSwitch => context_switch,
    };
    if call {
        let perf = cpu_perf_request(queue);
        crate::cpufreq::update(cpu, perf, now);
    }
}

/// The CPU's performance request (`sugov_get_util`, §6.1).
fn cpu_perf_request(queue: &RunQueue) -> u64 {
    use fairway_sched::uclamp::ClampId;
    let capacity = queue.cpu_capacity();
    let uclamp = queue.uclamp_enabled().then(|| {
        [
            u64::from(queue.uclamp_value(ClampId::Min)),
            u64::from(queue.uclamp_value(ClampId::Max)),
        ]
    });
    fairway_sched::schedutil::cpu_perf(
        &queue.signals(),
        u64::from(capacity.capacity_orig),
        uclamp,
        queue.rt().highest_queued_priority().is_some(),
    )
}

/// This CPU's idle loop: wait for interrupts, schedule when asked.
pub fn idle_loop() -> ! {
    loop {
        // Newly-idle balancing once per entry into idle, as Linux does when
        // `schedule()` finds nothing to run (WFI may also return spuriously).
        if percpu::this().entered_idle.swap(false, Ordering::Relaxed)
            && !percpu::this().need_resched.load(Ordering::Relaxed)
        {
            super::balance::newly_idle(this_cpu());
        }
        irq_disable();
        if !percpu::this().need_resched.load(Ordering::Relaxed) {
            wait_for_interrupt();
            percpu::this().idle_wakeups.fetch_add(1, Ordering::Relaxed);
        }
        irq_enable();
        if percpu::this().need_resched.load(Ordering::Relaxed) {
            schedule();
        }
    }
}
