//! Task groups in the kernel (Linux's cpu cgroup): creating a group on every
//! CPU's run queue, moving a task into one, and keeping each group's system-wide
//! load (`tg->load_avg`, §2.7) up to date from the CPUs' contributions.
//!
//! A group exists on every CPU (one group entity and group run queue per CPU);
//! groups are created on all run queues in the same order under a global lock,
//! so the ids agree. Each CPU publishes its contribution to a group's load at its
//! tick and reads back the sum (atomics, like Linux's `tg->load_avg`).

use core::sync::atomic::{AtomicU64, Ordering};

pub use fairway_sched::fair::GroupError;
pub use fairway_sched::task::GroupId;
use fairway_sched::task::TaskId;

use super::run_queue::{note_group_created, nr_groups, with_run_queue};
use crate::arch::timer::now_ns;
use crate::config::{MAX_CPUS, MAX_GROUPS};
use crate::platform::percpu;
use crate::platform::sync::IrqSpinLock;
use crate::tasks::task;

static CREATE_LOCK: IrqSpinLock<()> = IrqSpinLock::new(());
static GROUP_LOAD: [AtomicU64; MAX_GROUPS] = [const { AtomicU64::new(0) }; MAX_GROUPS];
static PUBLISHED: [[AtomicU64; MAX_GROUPS]; MAX_CPUS] =
    [const { [const { AtomicU64::new(0) }; MAX_GROUPS] }; MAX_CPUS];

/// Creates a group under `parent` with `shares` (Linux's range 2..=262144) on
/// every CPU.
pub fn create_group(parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
    let _serialised = CREATE_LOCK.lock();
    let mut created = None;
    for cpu in 0..percpu::nr_cpus() {
        let id = with_run_queue(cpu, |rq| rq.core.create_group(parent, shares, now_ns()))?;
        match created {
            None => created = Some(id),
            Some(first) => assert_eq!(first, id, "group ids agree on every CPU"),
        }
    }
    let id = created.unwrap_or(GroupId::ROOT);
    note_group_created(id);
    Ok(id)
}

/// Creates a chain of `depth` nested groups below the root (each with the
/// default shares) and returns its top and its deepest group (the root for
/// depth 0).
pub fn create_group_chain(depth: usize) -> Result<(GroupId, GroupId), GroupError> {
    let mut group = GroupId::ROOT;
    let mut top = GroupId::ROOT;
    for level in 0..depth {
        group = create_group(group, fairway_sched::fair::DEFAULT_SHARES)?;
        if level == 0 {
            top = group;
        }
    }
    Ok((top, group))
}

/// Moves `id` into `group` (on the CPU that owns it).
pub fn set_task_group(id: TaskId, group: GroupId) -> Result<(), GroupError> {
    let cpu = task(id).cpu();
    with_run_queue(cpu, |rq| rq.core.set_task_group(id, group, now_ns()))
}

/// At the tick of `cpu` (its run-queue lock held by the caller): publishes the
/// CPU's contribution to each group's load and hands the sums back.
pub fn exchange_group_load(cpu: usize, core: &mut fairway_sched::cpu_core::CpuCore, now: u64) {
    let groups = nr_groups();
    for index in 1..groups {
        let group = GroupId(index as u16);
        let contribution = core.run_queue().group_load_contribution(group);
        let previous = PUBLISHED[cpu][index].swap(contribution, Ordering::Relaxed);
        let sum = if contribution >= previous {
            GROUP_LOAD[index].fetch_add(contribution - previous, Ordering::Relaxed)
                + (contribution - previous)
        } else {
            GROUP_LOAD[index].fetch_sub(previous - contribution, Ordering::Relaxed)
                - (previous - contribution)
        };
        core.set_group_load_sum(group, sum, now);
    }
}
