//! The class in the fair slot of the class stack, chosen when the run queue is
//! built: round robin, or the fair class compiled for the CFS or the EEVDF pick
//! (`FairRunQueue<CfsPick>`, `FairRunQueue<EevdfPick>`). [`RunQueueOf`]
//! (super::RunQueueOf) is generic over it, so every class operation below the
//! driver is a static call into code that knows its policy.
//!
//! [`FairClass`] is what the run queue needs of that class besides the class
//! operations: task groups, PELT upkeep and migration state. Round robin keeps
//! none of it (it hands out group ids so that scenarios with groups still run).

use crate::bandwidth::pools::{BandwidthTimer, PoolMismatch, PoolSource};
use crate::bandwidth::runtime::PoolAnswer;
use crate::class::SchedClass;
use crate::fair::entity::Entity;
use crate::fair::group::GroupQueue;
use crate::fair::{FairMigration, FairRunQueue, GroupError, Pick};
use crate::round_robin::RoundRobin;
use crate::run_queue::CpuCapacity;
use crate::stats::probe::{CounterRead, ProbeCosts};
use crate::task::{GroupId, Nanoseconds, ParamError, TaskId};

/// What reports and signals read of a fair run queue, whichever its pick
/// (cold paths only: the class operations never go through it).
pub trait FairView {
    /// See [`FairRunQueue::task_entity`].
    fn task_entity(&self, task: TaskId) -> Option<&Entity>;
    /// See [`FairRunQueue::task_vruntime`].
    fn task_vruntime(&self, task: TaskId) -> u64;
    /// See [`FairRunQueue::group_entity_of`].
    fn group_entity_of(&self, group: GroupId) -> Option<&Entity>;
    /// See [`FairRunQueue::group_queue`].
    fn group_queue(&self, group: GroupId) -> Option<&GroupQueue>;
    /// Checks every invariant of the run queue (tests).
    #[cfg(test)]
    fn check_consistency(&self);
}

impl<'v> dyn FairView + 'v {
    /// The groups from `queue` up to the root, innermost first, the root
    /// not included: each group's entity is queued on its parent's queue
    /// (§2.6 of docs/linux-sched-reference.md). Explain mode walks it from
    /// a task's queue to list the group entities above the task.
    pub fn groups_above(&self, queue: GroupId) -> GroupsAbove<'_, 'v> {
        GroupsAbove {
            view: self,
            next: queue,
            steps: 0,
        }
    }
}

/// The iterator of `groups_above` on a [`FairView`].
pub struct GroupsAbove<'a, 'v> {
    view: &'a (dyn FairView + 'v),
    next: GroupId,
    steps: usize,
}

impl Iterator for GroupsAbove<'_, '_> {
    type Item = GroupId;

    fn next(&mut self) -> Option<GroupId> {
        // A hierarchy deeper than the group ids can name is a loop.
        if self.next == GroupId::ROOT || self.steps > usize::from(u16::MAX) {
            return None;
        }
        let group = self.next;
        self.next = self
            .view
            .group_entity_of(group)
            .map_or(GroupId::ROOT, |entity| entity.queue);
        self.steps += 1;
        Some(group)
    }
}

impl<P: Pick, const BW: bool> FairView for FairRunQueue<P, BW> {
    fn task_entity(&self, task: TaskId) -> Option<&Entity> {
        FairRunQueue::task_entity(self, task)
    }
    fn task_vruntime(&self, task: TaskId) -> u64 {
        FairRunQueue::task_vruntime(self, task)
    }
    fn group_entity_of(&self, group: GroupId) -> Option<&Entity> {
        FairRunQueue::group_entity_of(self, group)
    }
    fn group_queue(&self, group: GroupId) -> Option<&GroupQueue> {
        FairRunQueue::group_queue(self, group)
    }
    #[cfg(test)]
    fn check_consistency(&self) {
        FairRunQueue::check_consistency(self)
    }
}

/// The class of the fair slot, with what the run queue needs of it besides
/// the class operations.
pub trait FairClass: SchedClass + core::fmt::Debug {
    /// Whether it keeps fair state (entities, groups, PELT): the fair class.
    const IS_FAIR: bool;
    /// What reports read (`None`: round robin).
    fn view(&self) -> Option<&dyn FairView>;
    /// V of `group`'s queue (`avg_vruntime`, §1.5), for explain mode; `None`
    /// for round robin. A static call: nothing is built for a caller that
    /// does not use it (the kernel).
    fn avg_vruntime(&self, group: GroupId) -> Option<u64> {
        let _ = group;
        None
    }
    /// Installs the counter of the PELT cost probe.
    fn set_cost_counter(&mut self, counter: Option<CounterRead>);
    /// The PELT probe's counts since the last call.
    fn take_pelt_costs(&mut self) -> Option<ProbeCosts>;
    /// A new group under `parent` (ids agree on every CPU).
    fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError>;
    /// Removes an empty group.
    fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError>;
    /// Sets a group's `cpu.shares`.
    fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError>;
    /// Moves a fair task to `group`.
    fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError>;
    /// Whether `group` exists here.
    fn group_exists(&self, group: GroupId) -> bool;
    /// This CPU's part of a group's load.
    fn group_load_contribution(&self, group: GroupId) -> u64;
    /// A group's load summed over every CPU.
    fn set_group_load_sum(&mut self, group: GroupId, sum: u64);
    /// `update_blocked_averages`.
    fn update_blocked_averages(&mut self, now: Nanoseconds);
    /// Whether the root utilization changed since the last call.
    fn take_util_changed(&mut self) -> bool;
    /// Takes a fair task that is not queued out, with its fair state.
    fn migrate_task_out(&mut self, task: TaskId) -> Option<FairMigration>;
    /// Makes a task known with the fair state it left its last CPU with.
    fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &FairMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError>;
    /// The capacity and frequency the PELT clock runs at.
    fn set_cpu_capacity(&mut self, capacity: CpuCapacity);
    /// Connects the run queue to the groups' bandwidth pools as `source`
    /// says (§4.2; the fair class only: round robin has no bandwidth
    /// control). Returns whether it has bandwidth control.
    fn attach_bandwidth(&mut self, _source: PoolSource, _cpu: u16) -> bool {
        false
    }
    /// Queues a recorded pool answer for a replaying link (false: none).
    fn queue_pool_answer(&mut self, _answer: PoolAnswer) -> bool {
        false
    }
    /// After a replayed call: what of the pools' use the record contradicts.
    fn take_pool_mismatch(&mut self) -> Option<PoolMismatch> {
        None
    }
    /// A group's limit was set or lifted (`tg_set_cfs_bandwidth`).
    fn set_group_bandwidth(
        &mut self,
        _group: GroupId,
        _limited: bool,
        _now: Nanoseconds,
    ) -> Result<(), GroupError> {
        Ok(())
    }
    /// Runtime granted by a pool's timer; whether the run queue came back.
    fn distribute_runtime(
        &mut self,
        _group: GroupId,
        _amount: Nanoseconds,
        _unthrottle: bool,
        _now: Nanoseconds,
    ) -> bool {
        false
    }
    /// The next bandwidth timer the run queues asked for.
    fn take_bandwidth_timer(&mut self) -> Option<BandwidthTimer> {
        None
    }
    /// The mechanism's function that arms a requested bandwidth timer at
    /// once (none is ever requested without bandwidth control).
    fn set_bandwidth_timer_hook(&mut self, _hook: fn(BandwidthTimer)) {}
    /// Whether `task` sits in a throttled hierarchy here.
    fn task_throttled(&self, _task: TaskId) -> bool {
        false
    }
}

impl<P: Pick, const BW: bool> FairClass for FairRunQueue<P, BW> {
    const IS_FAIR: bool = true;

    fn view(&self) -> Option<&dyn FairView> {
        Some(self)
    }
    fn avg_vruntime(&self, group: GroupId) -> Option<u64> {
        Some(FairRunQueue::avg_vruntime(self, group))
    }
    fn set_cost_counter(&mut self, counter: Option<CounterRead>) {
        self.probe.set_counter(counter);
    }
    fn take_pelt_costs(&mut self) -> Option<ProbeCosts> {
        Some(self.probe.take())
    }
    fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
        FairRunQueue::create_group(self, parent, shares)
    }
    fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError> {
        FairRunQueue::remove_group(self, group)
    }
    fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        FairRunQueue::set_group_shares(self, group, shares, now)
    }
    fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        FairRunQueue::set_task_group(self, task, group, now)
    }
    fn group_exists(&self, group: GroupId) -> bool {
        FairRunQueue::group_queue(self, group).is_some()
    }
    fn group_load_contribution(&self, group: GroupId) -> u64 {
        FairRunQueue::group_load_contribution(self, group)
    }
    fn set_group_load_sum(&mut self, group: GroupId, sum: u64) {
        FairRunQueue::set_group_load_sum(self, group, sum)
    }
    fn update_blocked_averages(&mut self, now: Nanoseconds) {
        FairRunQueue::update_blocked_averages(self, now)
    }
    fn take_util_changed(&mut self) -> bool {
        FairRunQueue::take_util_changed(self)
    }
    fn migrate_task_out(&mut self, task: TaskId) -> Option<FairMigration> {
        FairRunQueue::migrate_task_out(self, task)
    }
    fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &FairMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        FairRunQueue::migrate_task_in(self, task, migration, now)
    }
    fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        FairRunQueue::set_cpu_capacity(self, capacity)
    }
    fn attach_bandwidth(&mut self, source: PoolSource, cpu: u16) -> bool {
        FairRunQueue::attach_bandwidth_with(self, source, cpu)
    }
    fn queue_pool_answer(&mut self, answer: PoolAnswer) -> bool {
        FairRunQueue::queue_pool_answer(self, answer)
    }
    fn take_pool_mismatch(&mut self) -> Option<PoolMismatch> {
        FairRunQueue::take_pool_mismatch(self)
    }
    fn set_group_bandwidth(
        &mut self,
        group: GroupId,
        limited: bool,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        FairRunQueue::set_group_bandwidth(self, group, limited, now)
    }
    fn distribute_runtime(
        &mut self,
        group: GroupId,
        amount: Nanoseconds,
        unthrottle: bool,
        now: Nanoseconds,
    ) -> bool {
        FairRunQueue::distribute_runtime(self, group, amount, unthrottle, now)
    }
    fn take_bandwidth_timer(&mut self) -> Option<BandwidthTimer> {
        FairRunQueue::take_bandwidth_timer(self)
    }
    fn set_bandwidth_timer_hook(&mut self, hook: fn(BandwidthTimer)) {
        FairRunQueue::set_bandwidth_timer_hook(self, hook)
    }
    fn task_throttled(&self, task: TaskId) -> bool {
        FairRunQueue::task_throttled(self, task)
    }
}

/// `FairClass` for a policy in the fair slot that keeps no fair state (round
/// robin, the registered policies' `PolicyClass`): group ids are handed out,
/// up to `max_groups`, so that scenarios with groups still run, and every
/// group, PELT and migration call is ignored. The type needs `groups` and
/// `max_groups` fields (`usize`).
macro_rules! fair_class_without_groups {
    ($policy:ty) => {
        impl $crate::run_queue::FairClass for $policy {
            const IS_FAIR: bool = false;
            fn view(&self) -> Option<&dyn $crate::run_queue::FairView> {
                None
            }
            fn set_cost_counter(&mut self, _counter: Option<$crate::stats::probe::CounterRead>) {}
            fn take_pelt_costs(&mut self) -> Option<$crate::stats::probe::ProbeCosts> {
                None
            }
            fn create_group(
                &mut self,
                parent: $crate::task::GroupId,
                shares: u64,
            ) -> Result<$crate::task::GroupId, $crate::fair::GroupError> {
                if parent.index() >= self.groups {
                    return Err($crate::fair::GroupError::NoSuchGroup { group: parent.0 });
                }
                $crate::fair::group::validate_shares(shares)?;
                if self.groups >= self.max_groups {
                    return Err($crate::fair::GroupError::TooManyGroups {
                        capacity: self.max_groups,
                    });
                }
                self.groups += 1;
                Ok($crate::task::GroupId((self.groups - 1) as u16))
            }
            fn remove_group(
                &mut self,
                _group: $crate::task::GroupId,
            ) -> Result<(), $crate::fair::GroupError> {
                Ok(())
            }
            fn set_group_shares(
                &mut self,
                _group: $crate::task::GroupId,
                shares: u64,
                _now: $crate::task::Nanoseconds,
            ) -> Result<(), $crate::fair::GroupError> {
                $crate::fair::group::validate_shares(shares).map(|_| ())
            }
            fn set_task_group(
                &mut self,
                _task: $crate::task::TaskId,
                _group: $crate::task::GroupId,
                _now: $crate::task::Nanoseconds,
            ) -> Result<(), $crate::fair::GroupError> {
                Ok(())
            }
            fn group_exists(&self, group: $crate::task::GroupId) -> bool {
                group.index() < self.groups
            }
            fn group_load_contribution(&self, _group: $crate::task::GroupId) -> u64 {
                0
            }
            fn set_group_load_sum(&mut self, _group: $crate::task::GroupId, _sum: u64) {}
            fn update_blocked_averages(&mut self, _now: $crate::task::Nanoseconds) {}
            fn take_util_changed(&mut self) -> bool {
                false
            }
            fn migrate_task_out(
                &mut self,
                _task: $crate::task::TaskId,
            ) -> Option<$crate::fair::FairMigration> {
                None
            }
            fn migrate_task_in(
                &mut self,
                _task: $crate::task::TaskId,
                _migration: &$crate::fair::FairMigration,
                _now: $crate::task::Nanoseconds,
            ) -> Result<(), $crate::task::ParamError> {
                Ok(())
            }
            fn set_cpu_capacity(&mut self, _capacity: $crate::run_queue::CpuCapacity) {}
        }
    };
}
pub(crate) use fair_class_without_groups;

fair_class_without_groups!(RoundRobin);
