//! The one door to each CPU's scheduler driver (`fairway_sched::cpu_core::
//! CpuCore`): every CPU's run queue behind its lock, built at boot, and the
//! carrying-out of the driver's decisions (a reschedule, here or through the
//! reschedule IPI; the running task's slice end on the slice-end timer), with
//! what every run queue shares: the task ids they have room for, the task
//! groups in use and the groups' bandwidth pools.
//!
//! Policy is not decided here: every choice (what to run, whether a wake-up
//! preempts, when a slice ends) is asked of the CPU's driver, the one the
//! simulator uses too; the files of this floor carry its decisions out
//! (docs/core-driver.md). This file is the lowest of them but `settings` and
//! `energy`: the wake-up, the switch, the tick and the balancer call it, it
//! calls none of them.

use core::sync::atomic::{AtomicUsize, Ordering};

use alloc::sync::Arc;
use fairway_sched::bandwidth::pools::{BandwidthPools, BandwidthTimer};
use fairway_sched::cpu_core::{CpuCore, Decision, TimerRequest};
use fairway_sched::run_queue::{CpuCapacity, RunQueue};
use fairway_sched::task::{GroupId, TaskId};
use spin::Once;

use super::settings;
use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::config::{MAX_CPUS, MAX_GROUPS};
use crate::observe::costs;
use crate::observe::replay;
use crate::platform::irq::{Ipi, send_ipi};
use crate::platform::sync::IrqSpinLock;
use crate::platform::{hrtimer, percpu};
use crate::tasks::task;

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

    /// Records that this run queue owns `id`.
    #[track_caller]
    pub fn add_member(&mut self, id: TaskId) {
        debug_assert!(!self.members.contains(&id), "task {} added twice", id.0);
        task(id)
            .member_index
            .store(self.members.len() as u32, Ordering::Relaxed);
        debug_assert!(self.members.len() < self.members.capacity());
        self.members.push(id);
    }

    /// Records that this run queue no longer owns `id`.
    #[track_caller]
    pub fn remove_member(&mut self, id: TaskId) {
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

/// CPU `cpu`'s run queue, behind its lock.
pub fn run_queue(cpu: usize) -> &'static IrqSpinLock<CpuRunQueue> {
    RUN_QUEUES[cpu]
        .get()
        .expect("run queue used before scheduling::init_cpu")
}

/// Runs `f` on CPU `cpu`'s run queue, under its lock.
pub fn with_run_queue<R>(cpu: usize, f: impl FnOnce(&mut CpuRunQueue) -> R) -> R {
    f(&mut run_queue(cpu).lock())
}

/// Serialises the run queues' construction (their heap is measured) with
/// the growth of their task tables: a CPU built while a task is created
/// either is grown by [`reserve_task_ids`] or is built for the task.
/// Holds the task ids every run queue has room for.
static BUILDING: spin::Mutex<usize> = spin::Mutex::new(0);

/// Heap bytes the CPUs' run queues took when they were built.
static RUN_QUEUE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The run queues' heap (every CPU's core, classes, trees and records) and
/// the timeline arenas' RAM, for the scheduler's memory (issue 15).
pub fn run_queue_bytes() -> usize {
    RUN_QUEUE_BYTES.load(Ordering::Relaxed) + crate::arch::lazy::bytes()
}

/// Builds CPU `cpu`'s run queue, with `idle` as its idle task (each CPU
/// for itself while booting, IRQs masked).
pub fn build(cpu: usize, idle: TaskId) {
    let config = settings::config();
    // The heap this CPU's run queue takes (`memory_bytes`); one CPU builds
    // at a time, so that no other allocation falls in between. Built with
    // room for the task ids created so far (none, for the boot CPU), and
    // published before the lock is released: a task created meanwhile finds
    // it in `reserve_task_ids`, which grows it with the next ids.
    let building = BUILDING.lock();
    let reserved = *building;
    RUN_QUEUES[cpu].call_once(|| {
        let free_before = crate::platform::heap::free_bytes();
        // The timeline arena takes address space now and RAM as its
        // pages are written (`arch::lazy`).
        let mut queue = crate::arch::lazy::with_lazy_arenas(|| {
            RunQueue::build(
                settings::policy().for_cpu(cpu),
                reserved,
                MAX_GROUPS,
                config.uclamp == Some(true),
                config.cfs_bandwidth,
            )
        });
        queue.set_cpu_capacity(CpuCapacity {
            capacity_orig: percpu::of(cpu).capacity.load(Ordering::Relaxed),
            frequency_scale: 1024,
        });
        let mut core = CpuCore::new(cpu as u16, queue, reserved, config.hrtick);
        if costs::ENABLED {
            core.set_cost_counter(Some(costs::counter));
        }
        let records = replay::capacity();
        if records > 0 {
            core.start_recording(records, replay::next_sequence);
        }
        let run_queue = IrqSpinLock::new(CpuRunQueue {
            core,
            idle,
            members: alloc::vec::Vec::with_capacity(reserved),
        });
        RUN_QUEUE_BYTES.fetch_add(
            free_before - crate::platform::heap::free_bytes(),
            Ordering::Relaxed,
        );
        run_queue
    });
    drop(building);
}

/// How many task ids every run queue has room for ([`reserve_task_ids`]).
pub fn task_ids_reserved() -> usize {
    *BUILDING.lock()
}

/// Makes room for the task ids below `count` in every CPU's tables indexed
/// by task id (`CpuCore::reserve_tasks`) before such a task can be queued
/// anywhere: a wake-up may move it to any CPU, and no hot path allocates.
/// Not a hot path itself: each run queue locked in turn; tables grow by
/// whole blocks, so most calls find the room there. A batch of tasks created
/// together is given its room at once, so the tables grow once, to whole
/// blocks, rather than by a quarter at a time.
pub fn reserve_task_ids(count: usize) {
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

/// Carries out the core's decision for `cpu` (its run queue `rq` locked)
/// after a task was queued there: a reschedule (through the reschedule IPI
/// when `cpu` is another CPU), or the running task's new slice end (through
/// the call-function IPI when it is another CPU's timer).
#[inline(always)]
pub fn carry_out_decision(rq: &mut CpuRunQueue, cpu: usize, decision: Decision) {
    if decision.resched {
        percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
        if cpu != this_cpu() {
            send_ipi(cpu, Ipi::Reschedule);
        }
    } else if decision.hrtick != TimerRequest::Keep {
        if cpu == this_cpu() {
            carry_out_hrtick(decision.hrtick, cpu);
        } else if crate::platform::smp::call_function(cpu, hrtick_update_here, cpu).is_err() {
            // The mailbox is full: a reschedule re-evaluates the slice too.
            send_ipi(cpu, Ipi::Reschedule);
        }
    }
    let _ = rq;
}

/// Carries out the core's slice-end timer request on this CPU's timer.
pub fn carry_out_hrtick(request: TimerRequest, cpu: usize) {
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
pub fn hrtick_update_here(cpu: usize) {
    let mut rq = run_queue(cpu).lock();
    let request = rq.core.hrtick_update(now_ns());
    carry_out_hrtick(request, cpu);
}

/// Groups in use, the root included: every run queue has them (they are
/// created on all of them in the same order, `groups::create_group`).
static NR_GROUPS: AtomicUsize = AtomicUsize::new(1);

/// Groups in use, the root included: group indices run below it.
pub fn nr_groups() -> usize {
    NR_GROUPS.load(Ordering::Relaxed)
}

/// Counts `group`, just created on every run queue.
pub fn note_group_created(group: GroupId) {
    NR_GROUPS.fetch_max(group.index() + 1, Ordering::Relaxed);
}

/// The task groups' bandwidth pools, shared by every CPU's core, once a
/// group has a quota (§4.2).
static POOLS: Once<Arc<BandwidthPools>> = Once::new();

/// The groups' pools, once a group has a quota.
#[inline]
pub fn pools() -> Option<&'static BandwidthPools> {
    POOLS.get().map(|pools| &**pools)
}

/// The groups' pools, made and attached to every CPU's core the first time
/// (`cpus` of them), each core given `arm_timer` as its hook for the pools'
/// timers.
pub fn pools_attached(cpus: usize, arm_timer: fn(BandwidthTimer)) -> &'static BandwidthPools {
    POOLS.call_once(|| {
        let pools = Arc::new(BandwidthPools::new(MAX_GROUPS));
        for cpu in 0..cpus {
            let attached = with_run_queue(cpu, |rq| {
                rq.core.set_bandwidth_timer_hook(arm_timer);
                rq.core.attach_bandwidth(pools.clone())
            });
            debug_assert!(attached, "cfs_bandwidth=1 builds every run queue with it");
        }
        pools
    })
}
