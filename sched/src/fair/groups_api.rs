//! The group and migration API the mechanism calls: create and remove groups,
//! set shares, move a task between groups (`sched_move_task`), exchange the
//! group-wide load sum (see [`group`](super::group)), and carry a task's fair
//! state from one CPU to another (vruntime offset for CFS, lag and relative
//! deadline for EEVDF, §1.4 step 5 and §1.5).
//!
//! Group calls must be made identically, in the same order, on every CPU: ids
//! are handed out lowest-free-first, so they then agree everywhere.

use super::Pick;
use super::entity::{Entity, EntityKind, FairPolicy};
use super::group::{GroupError, GroupInfo, GroupQueue, validate_shares};
use super::{FairRunQueue, PickPolicy};
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::pelt::SchedAvg;
use crate::pelt::update::UpdateFlags;
use crate::task::{GroupId, Nanoseconds, ParamError, TaskId};
use crate::weight::{LoadWeight, NICE_0_LOAD, scale_load, vtime_delta};

/// A task's fair state in transit between two CPUs' run queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FairMigration {
    /// The task's fair policy.
    pub policy: FairPolicy,
    /// Its weight.
    pub load: LoadWeight,
    /// Its group (ids agree on every CPU).
    pub group: GroupId,
    /// CFS: vruntime minus the old queue's min_vruntime.
    pub vruntime_offset: i64,
    /// EEVDF: the lag saved at dequeue.
    pub vlag: i64,
    /// EEVDF: `deadline - vruntime` when kept relative (non-sleep dequeue).
    pub relative_deadline: Option<u64>,
    /// EEVDF request size.
    pub slice: Nanoseconds,
    /// EEVDF custom slice, if the task has one.
    pub custom_slice: Option<Nanoseconds>,
    /// Total run time so far.
    pub sum_exec_runtime: Nanoseconds,
    /// PELT signals, detached (`last_update_time == 0`), to attach on arrival.
    pub avg: SchedAvg,
}

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    fn check_group(&self, group: GroupId) -> Result<(), GroupError> {
        if self.groups.get(group.index()).is_some_and(|g| g.exists) {
            Ok(())
        } else {
            Err(GroupError::NoSuchGroup { group: group.0 })
        }
    }

    /// Creates a child of `parent` with `shares` (`cpu.shares`, 2..=262144, §1.1);
    /// its group entity starts with a nice-0 weight and no load (§2.5).
    pub fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
        self.check_group(parent)?;
        let shares = validate_shares(shares)?;
        let slot = self
            .groups
            .iter()
            .position(|g| !g.exists)
            .ok_or(GroupError::TooManyGroups {
                capacity: self.groups.len(),
            })?;
        let group = GroupId(slot as u16);
        self.groups[slot] = GroupInfo {
            exists: true,
            parent,
            shares: scale_load(shares),
            depth: self.groups[parent.index()].depth + 1,
            children: 0,
            tasks: 0,
        };
        self.groups[parent.index()].children += 1;
        self.queues[slot] = GroupQueue::default();
        let slice = match self.pick.policy() {
            PickPolicy::Cfs(_) => 0,
            PickPolicy::Eevdf(tunables) => tunables.base_slice,
        };
        let e = self.group_entity(group);
        self.entities[e as usize] = Entity::new(
            EntityKind::Group(group),
            LoadWeight::from_scaled(NICE_0_LOAD),
            parent,
            slice,
        );
        // A group entity first joins its parent with the parent's base vruntime.
        self.entities[e as usize].vruntime = self.queues[parent.index()].min_vruntime;
        self.attach_new_group_entity(parent, e);
        Ok(group)
    }

    /// `attach_entity_cfs_rq` of a new group entity (`online_fair_sched_group`,
    /// §2.5): it is attached to its parent's PELT averages from birth, with
    /// zero load, at the run queue's current time (the last `now` it saw).
    ///
    /// A group entity is never attached later: its load reaches the parent only
    /// through propagation (§2.7). Left unattached, its first enqueue would
    /// both propagate its group's new load into the parent and then attach the
    /// entity carrying that same load (`DO_ATTACH`, §2.6), counting it twice in
    /// the parent; the excess then decays only with PELT's 32 ms half-life, so
    /// every CPU's load looked inflated to the balancer for ~200 ms.
    fn attach_new_group_entity(&mut self, parent: GroupId, e: u32) {
        let now = self.last_now;
        self.advance_clock(now);
        self.update_entity_load(
            parent,
            e,
            UpdateFlags {
                skip_age_load: true,
                do_attach: true,
                ..UpdateFlags::NONE
            },
            now,
        );
    }

    /// Removes an empty group (no tasks, no child groups).
    ///
    /// An empty group's entity may still be queued on its parent as a
    /// delayed dequeue (§1.5: its run queue emptied while it was not
    /// eligible). The removal completes that dequeue first, as Linux does when
    /// it unregisters a group; left queued, the freed slot would stay in the
    /// parent's timeline and count, and a pick would walk into an empty run
    /// queue.
    pub fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError> {
        self.check_group(group)?;
        if group == GroupId::ROOT {
            return Err(GroupError::RootGroup);
        }
        let info = self.groups[group.index()];
        if info.tasks != 0 || info.children != 0 {
            return Err(GroupError::GroupBusy { group: group.0 });
        }
        let e = self.group_entity(group);
        if self.entities[e as usize].delayed {
            let now = self.last_now;
            self.dequeue_entities(e, true, true, now);
        }
        self.groups[info.parent.index()].children -= 1;
        self.groups[group.index()] = GroupInfo::unused();
        self.entities[e as usize] = Entity::unused();
        Ok(())
    }

    /// Sets a group's `cpu.shares` (2..=262144, §1.1) and re-weighs its group
    /// entities up the hierarchy (`sched_group_set_shares`).
    pub fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        self.check_group(group)?;
        if group == GroupId::ROOT {
            return Err(GroupError::RootGroup);
        }
        let shares = validate_shares(shares)?;
        self.advance_clock(now);
        self.groups[group.index()].shares = scale_load(shares);
        let mut level = Some(self.group_entity(group));
        while let Some(se) = level {
            self.update_group_entity_weight(se, now);
            level = self.parent_entity(se);
        }
        Ok(())
    }

    /// The group a known task belongs to.
    pub fn task_group(&self, task: TaskId) -> Option<GroupId> {
        self.task_entity(task).map(|e| e.queue)
    }

    /// Moves `task` to `group` (`sched_move_task`): a queued task is dequeued
    /// and enqueued again (keeping its lag, or its relative vruntime), a running
    /// one is handed back and set running again.
    pub fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        self.check_group(group)?;
        let Some(entity) = self.task_entity(task) else {
            return Err(GroupError::UnknownTask { task: task.0 });
        };
        let old = entity.queue;
        if old == group {
            return Ok(());
        }
        let e = self.task_se(task);
        self.advance_clock(now);
        // A delayed task is asleep: finish its dequeue first.
        self.complete_delayed_task(e);
        let entity = &self.entities[e as usize];
        let queued = entity.on_rq;
        let running = self.queues[old.index()].curr == e;
        if queued {
            self.dequeue_task(task, now, DequeueFlags::default());
        }
        if running {
            self.put_prev_task(task, now);
        }
        // task_change_group_fair (§2.6): the signals leave with the task.
        self.detach_task_load(e, now);
        if matches!(self.pick.policy(), PickPolicy::Cfs(_)) && !self.entities[e as usize].relative {
            // A sleeping task's absolute vruntime moves to the new base.
            let base = self.queues[old.index()].min_vruntime;
            let entity = &mut self.entities[e as usize];
            entity.vruntime = entity.vruntime.wrapping_sub(base);
            entity.relative = true;
        }
        self.entities[e as usize].queue = group;
        self.groups[old.index()].tasks -= 1;
        self.groups[group.index()].tasks += 1;
        if queued {
            self.enqueue_task(task, now, EnqueueFlags::default());
        } else {
            self.attach_task_load(e, now);
        }
        if running {
            self.set_next_task(task, now);
        }
        Ok(())
    }

    /// This CPU's contribution to `group`'s group-wide load (`tg_load_avg_contrib`).
    pub fn group_load_contribution(&self, group: GroupId) -> u64 {
        self.queues
            .get(group.index())
            .map_or(0, |q| q.tg_load_avg_contrib)
    }

    /// Hands this CPU the group-wide load of `group` (`tg->load_avg`), the sum of
    /// [`group_load_contribution`](Self::group_load_contribution) over all CPUs.
    pub fn set_group_load_sum(&mut self, group: GroupId, sum: u64) {
        if let Some(queue) = self.queues.get_mut(group.index()) {
            queue.tg_load_avg = sum;
        }
    }

    /// Takes `task` (known, not queued) off this CPU, returning what the
    /// destination needs to keep its position (§1.4 step 5, §1.5 lag).
    pub fn migrate_task_out(&mut self, task: TaskId) -> Option<FairMigration> {
        self.task_entity(task)?;
        self.complete_delayed_task(self.task_se(task));
        let entity = *self.task_entity(task)?;
        if entity.on_rq {
            return None;
        }
        let base = self.queues[entity.queue.index()].min_vruntime;
        let vruntime_offset = if entity.relative {
            entity.vruntime as i64
        } else {
            vtime_delta(entity.vruntime, base)
        };
        let EntityKind::Task(policy) = entity.kind else {
            return None;
        };
        self.remove_task_load(self.task_se(task));
        let avg = self.entities[self.task_se(task) as usize].avg;
        self.task_dead(task);
        Some(FairMigration {
            policy,
            load: entity.load,
            group: entity.queue,
            vruntime_offset,
            vlag: entity.vlag,
            relative_deadline: entity.rel_deadline.then_some(entity.deadline),
            slice: entity.slice,
            custom_slice: entity.custom_slice.map(core::num::NonZeroU64::get),
            sum_exec_runtime: entity.sum_exec_runtime,
            avg,
        })
    }

    /// Makes a migrated task known here; enqueue it next with
    /// `EnqueueFlags { migrated: true, .. }`.
    pub fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &FairMigration,
        _now: Nanoseconds,
    ) -> Result<(), ParamError> {
        if task.index() >= self.max_tasks {
            return Err(ParamError::TooManyTasks {
                task: task.0,
                capacity: self.max_tasks,
            });
        }
        if self.check_group(migration.group).is_err() {
            return Err(ParamError::OutOfRange {
                field: "group",
                value: i64::from(migration.group.0),
                min: 0,
                max: self.groups.len() as i64 - 1,
            });
        }
        if self.entities[self.task_se(task) as usize].known {
            self.task_dead(task);
        }
        let mut entity = Entity::new(
            EntityKind::Task(migration.policy),
            migration.load,
            migration.group,
            migration.slice,
        );
        entity.custom_slice = migration.custom_slice.and_then(core::num::NonZeroU64::new);
        entity.vruntime = migration.vruntime_offset as u64;
        entity.relative = matches!(self.pick.policy(), PickPolicy::Cfs(_));
        entity.vlag = migration.vlag;
        entity.rel_deadline = migration.relative_deadline.is_some();
        entity.deadline = migration.relative_deadline.unwrap_or(0);
        entity.protected_deadline = entity.deadline.wrapping_add(1);
        entity.sum_exec_runtime = migration.sum_exec_runtime;
        entity.avg = migration.avg;
        entity.avg.last_update_time = 0;
        let e = self.task_se(task) as usize;
        self.entities[e] = entity;
        self.groups[migration.group.index()].tasks += 1;
        Ok(())
    }
}
