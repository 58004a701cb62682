//! The fair scheduling class: one CPU's fair run queue, with the CFS or the
//! EEVDF pick chosen at construction, and task groups.
//!
//! Submodules, one concept each:
//! - [`timeline`]: the index-based red-black tree (cached leftmost, optional
//!   subtree-minimum-vruntime augmentation).
//! - [`entity`]: scheduling entities and the tunables.
//! - [`group`]: task groups, shares, per-group run queues, `calc_group_shares`.
//! - `queue`: the per-level operations common to both picks (update_curr,
//!   min_vruntime, enqueue/dequeue of one entity, set_next/put_prev, reweight).
//! - `cfs`: the CFS rules (§1.4): placement with sleeper credit, slice, tick and
//!   wake-up preemption, leftmost pick.
//! - `eevdf`: the EEVDF rules (§1.5): average vruntime, eligibility, deadlines,
//!   lag, placement, `pick_eevdf`, slice protection.
//! - `hierarchy`: the class operations walking the group hierarchy.
//! - `load`: PELT wiring (clock, update_load_avg call sites, util_est,
//!   propagation, blocked-load decay).
//! - `groups_api`: creating groups, setting shares, moving tasks, migration.
//! - `delay`: EEVDF delayed dequeue and the hierarchical dequeue.
//! - `hrtick`: when the running task's slice ends (`slice_remaining`).
//! - `throttle`: CFS bandwidth control in the run queues (§4.2): runtime
//!   charged at `update_curr`, throttling and unthrottling up the hierarchy.
//!
//! Entity numbering: the group entity of group `g` (`g ≥ 1`) is entity
//! `g - 1`, and task `t` is entity `max_groups - 1 + t`, after them, so that
//! the entity table grows at its end when tasks are created
//! ([`SchedClass::reserve_tasks`]; issue 15: memory in proportion to the
//! tasks). The timeline's node arena has all its 2^16 nodes from the start
//! (bounds-check-free node access, issue 3's budget). Storage is allocated in [`FairRunQueue::new`]
//! and by `reserve_tasks`; the class operations allocate nothing and cost
//! O(depth · log n).
//!
//! How the mechanism (kernel or simulator) drives it, per CPU (usually through
//! [`RunQueue`](crate::run_queue::RunQueue)):
//!
//! ```text
//!   boot:       new(pick, max_tasks, max_groups); set_cpu_capacity(..)
//!   cgroups:    create_group / set_group_shares / remove_group, same order on
//!               every CPU; set_task_group(task, group, now)
//!   every ~ms:  sum group_load_contribution(g) over CPUs, set_group_load_sum(g, sum)
//!               (only with several CPUs); update_blocked_averages(now)
//!   migration:  dequeue_task(.., migrating) or a sleeping task,
//!               migrate_task_out -> FairMigration -> migrate_task_in on the
//!               target, then enqueue_task(.., migrated)
//! ```
//!
//! Not implemented (Linux behaviour that differs): buddies (`NEXT_BUDDY`,
//! `LAST_BUDDY`; the CFS pick is strictly leftmost, the EEVDF pick strictly
//! `pick_eevdf`), `cpu.idle` groups, and the group entity slice as the minimum
//! of its children's (group entities request the base slice; a task's custom
//! slice, `sched_runtime`, applies at its own level only).

pub mod entity;
pub mod features;
pub mod group;
pub mod timeline;

mod cfs;
mod delay;
mod eevdf;
mod groups_api;
mod hierarchy;
mod hrtick;
mod load;
mod queue;
mod throttle;

#[cfg(test)]
mod delay_tests;
#[cfg(test)]
mod pelt_tests;
#[cfg(test)]
mod share_tests;
#[cfg(test)]
pub(crate) mod test_rng;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod throttle_tests;

use alloc::vec;
use alloc::vec::Vec;

pub use entity::{CfsTunables, EevdfTunables, Entity, EntityKind, FairPolicy};
pub use features::{Feature, FeatureSet, SchedFeatures};
pub use group::{DEFAULT_SHARES, GroupError, MAX_SHARES, MIN_SHARES, shares_from_cpu_weight};
pub use groups_api::FairMigration;

use crate::pelt::clock::PeltClock;
use crate::run_queue::CpuCapacity;
use crate::task::{GroupId, Nanoseconds, TaskId};
use group::{GroupInfo, GroupQueue};
use timeline::{TimelineNodes, TimelineStore};

/// Which pick the run queue uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickPolicy {
    /// CFS, leftmost vruntime (Linux ≤ v6.5, §1.4).
    Cfs(CfsTunables),
    /// EEVDF, earliest eligible virtual deadline (Linux ≥ v6.6, §1.5).
    Eevdf(EevdfTunables),
}

/// The pick of a fair run queue as a type, chosen when the run queue is built:
/// [`CfsPick`] and [`EevdfPick`] for the kernel and the simulator, where each
/// run queue is compiled for its pick alone (the other pick's rules and the
/// other tree are not in its code), or [`PickPolicy`] itself, a run-time value,
/// for tests and tools that drive both picks through one type.
///
/// The fair code reads the rules' tunables through [`Pick::policy`]: for
/// `CfsPick` and `EevdfPick` it returns a constant variant, so each `match` on
/// it is decided at compile time and no policy test is left on the hot path.
pub trait Pick: Copy + core::fmt::Debug + PartialEq + 'static {
    /// The node arena: the CFS tree, the augmented EEVDF tree, or either.
    type Nodes: timeline::TimelineStore;
    /// The pick's rules and tunables.
    fn policy(&self) -> PickPolicy;
}

/// The CFS pick (Linux ≤ v6.5, §1.4), as a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsPick(pub CfsTunables);

/// The EEVDF pick (Linux ≥ v6.6, §1.5), as a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EevdfPick(pub EevdfTunables);

impl Pick for CfsPick {
    type Nodes = timeline::CfsNodes;
    #[inline(always)]
    fn policy(&self) -> PickPolicy {
        PickPolicy::Cfs(self.0)
    }
}

impl Pick for EevdfPick {
    type Nodes = timeline::EevdfNodes;
    #[inline(always)]
    fn policy(&self) -> PickPolicy {
        PickPolicy::Eevdf(self.0)
    }
}

impl Pick for PickPolicy {
    type Nodes = TimelineNodes;
    #[inline(always)]
    fn policy(&self) -> PickPolicy {
        *self
    }
}

/// One CPU's fair run queue with all its group run queues and entities, for
/// the pick `P` (a run-time [`PickPolicy`] unless given), with CFS bandwidth
/// control compiled in (`BANDWIDTH`, the default: [`FairRunQueue::new`]) or
/// out ([`FairRunQueue::without_bandwidth`]: every bandwidth step is then a
/// compile-time `false`, so a kernel that limits no group pays nothing for
/// it, Linux's `cfs_bandwidth_used()` static key made static).
#[derive(Debug)]
pub struct FairRunQueue<P: Pick = PickPolicy, const BANDWIDTH: bool = true> {
    pub(super) pick: P,
    /// Task ids below this have an entity slot here (grown by
    /// [`SchedClass::reserve_tasks`]).
    pub(super) max_tasks: usize,
    /// The entity number of task 0: the group entities come first.
    pub(super) task_base: u32,
    pub(super) entities: Vec<entity::Entity>,
    pub(super) queues: Vec<GroupQueue>,
    pub(super) groups: Vec<GroupInfo>,
    pub(super) nodes: P::Nodes,
    /// A reschedule found by `update_curr` outside the tick (§1.5: the deadline
    /// passed during an enqueue), reported at the next tick or wake-up check.
    pub(super) need_resched: bool,
    /// The CPU's PELT clock (§2.3).
    pub(super) clock: PeltClock,
    /// The capacity and frequency scale the PELT clock runs at.
    pub(super) capacity: CpuCapacity,
    /// The root run queue's utilization changed (schedutil hook, §2.6).
    pub(super) util_changed: bool,
    /// The latest time an operation was given (to complete delayed dequeues
    /// from calls that take no time).
    pub(super) last_now: Nanoseconds,
    /// The task a context switch put back at its own level only, whose
    /// group entities still run until the next task is known (`NIL`:
    /// none; `put_prev_task_for_switch`, `settle_switch`).
    pub(super) switching_out: u32,
    /// Brackets around the PELT updates (issue 4's cost counters).
    pub probe: crate::stats::probe::CostProbe,
    /// The groups' bandwidth pools and this CPU's number, once a group has
    /// a quota (`None` before: each bandwidth step costs one test, Linux's
    /// `cfs_bandwidth_used()`; always `None` without `BANDWIDTH`).
    pub(super) bandwidth: Option<throttle::BandwidthLink>,
    /// Timers this CPU's run queues asked to arm, for a mechanism that
    /// polls ([`FairRunQueue::take_bandwidth_timer`]).
    pub(super) bandwidth_timers: Vec<crate::bandwidth::pools::BandwidthTimer>,
    /// The mechanism's function that arms a requested timer at once, when
    /// it gave one ([`FairRunQueue::set_bandwidth_timer_hook`]): then no
    /// request waits for a poll, and the hot paths make none.
    pub(super) bandwidth_timer_hook: Option<fn(crate::bandwidth::pools::BandwidthTimer)>,
}

impl<P: Pick> FairRunQueue<P, true> {
    /// A run queue for task ids below `max_tasks` and up to `max_groups` groups
    /// (the root group included, so at least 1), with bandwidth control.
    pub fn new(pick: P, max_tasks: usize, max_groups: usize) -> Self {
        Self::build(pick, max_tasks, max_groups)
    }
}

impl<P: Pick> FairRunQueue<P, false> {
    /// As [`FairRunQueue::new`], with bandwidth control compiled out.
    pub fn without_bandwidth(pick: P, max_tasks: usize, max_groups: usize) -> Self {
        Self::build(pick, max_tasks, max_groups)
    }
}

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    fn build(pick: P, max_tasks: usize, max_groups: usize) -> Self {
        let max_groups = max_groups.max(1);
        let task_base = max_groups - 1;
        let entity_count = task_base + max_tasks;
        let mut groups = vec![GroupInfo::unused(); max_groups];
        groups[0] = GroupInfo::root();
        FairRunQueue {
            pick,
            max_tasks,
            task_base: task_base as u32,
            entities: vec![entity::Entity::unused(); entity_count],
            queues: vec![GroupQueue::default(); max_groups],
            groups,
            nodes: P::Nodes::build(entity_count, matches!(pick.policy(), PickPolicy::Eevdf(_))),
            need_resched: false,
            clock: PeltClock::new(load::PELT_EPOCH),
            capacity: CpuCapacity::default(),
            util_changed: false,
            last_now: 0,
            switching_out: timeline::NIL,
            probe: crate::stats::probe::CostProbe::default(),
            bandwidth: None,
            bandwidth_timers: Vec::with_capacity(2 * max_groups),
            bandwidth_timer_hook: None,
        }
    }

    /// Whether bandwidth control is compiled in and some group has a quota:
    /// the test every bandwidth step makes (a constant `false` without it).
    #[inline(always)]
    pub(super) fn bandwidth_used(&self) -> bool {
        BW && self.bandwidth.is_some()
    }

    /// See [`SchedClass::reserve_tasks`]: the task entities sit after the
    /// group entities, so the entity table grows at its end, by the core's
    /// block policy ([`crate::task::grow_table`]); the node arena only checks
    /// that it can number them.
    pub(super) fn reserve_task_entities(&mut self, count: usize) {
        if count <= self.max_tasks {
            return;
        }
        let base = self.task_base as usize;
        crate::task::grow_table(&mut self.entities, base + count, entity::Entity::unused());
        self.max_tasks = self.entities.len() - base;
        self.nodes.reserve(self.entities.len());
    }

    /// The entity number of `task` (`task_se`, Linux's `&p->se`).
    #[inline(always)]
    pub(super) fn task_se(&self, task: TaskId) -> u32 {
        self.task_base + u32::from(task.0)
    }

    /// The task entity `e` stands for (a task entity).
    #[inline(always)]
    pub(super) fn se_task(&self, e: u32) -> TaskId {
        debug_assert!(e >= self.task_base, "entity {e} is a group entity");
        TaskId((e - self.task_base) as u16)
    }

    /// The bytes of the entity table (task and group entities).
    pub(super) fn task_entity_bytes(&self) -> usize {
        crate::task::table_bytes(&self.entities) + self.nodes.bytes()
    }

    /// The entity number of `group`'s group entity (`group` ≠ root).
    pub(super) fn group_entity(&self, group: GroupId) -> u32 {
        debug_assert_ne!(group, GroupId::ROOT);
        (group.index() - 1) as u32
    }

    /// The entity one level up (the group entity of the queue `e` is on).
    pub(super) fn parent_entity(&self, e: u32) -> Option<u32> {
        self.queue_parent(self.entities[e as usize].queue)
    }

    /// The entity one level up from an entity on `q` (`q`'s group entity;
    /// none for the root): what [`Self::parent_entity`] gives, for a walk
    /// that has read the entity's queue already (no second look-up).
    #[inline(always)]
    pub(super) fn queue_parent(&self, q: GroupId) -> Option<u32> {
        (q != GroupId::ROOT).then(|| self.group_entity(q))
    }

    /// The run queue a group entity owns (`group_cfs_rq(se)`). The group
    /// entities are numbered below the tasks' (group g's is g − 1,
    /// [`Self::group_entity`]), so the number answers without a look-up of
    /// the entity (its kind says the same, checked in debug builds).
    pub(super) fn owned_queue(&self, e: u32) -> Option<GroupId> {
        let owned = (e < self.task_base).then(|| GroupId((e + 1) as u16));
        debug_assert_eq!(
            owned,
            match self.entities[e as usize].kind {
                EntityKind::Group(group) => Some(group),
                EntityKind::Task(_) => None,
            },
            "entity {e}'s kind and number disagree"
        );
        owned
    }

    /// The entity of `task`, if known here.
    pub fn task_entity(&self, task: TaskId) -> Option<&entity::Entity> {
        self.entities
            .get(self.task_se(task) as usize)
            .filter(|e| e.known)
    }

    /// The absolute vruntime of `task` (relative values made absolute).
    pub fn task_vruntime(&self, task: TaskId) -> u64 {
        let entity = &self.entities[self.task_se(task) as usize];
        if entity.relative {
            entity
                .vruntime
                .wrapping_add(self.queues[entity.queue.index()].min_vruntime)
        } else {
            entity.vruntime
        }
    }

    /// The group entity of `group` on this CPU (none for the root), for
    /// reports and tests.
    pub fn group_entity_of(&self, group: GroupId) -> Option<&entity::Entity> {
        if group == GroupId::ROOT || !self.groups.get(group.index())?.exists {
            return None;
        }
        self.entities.get(self.group_entity(group) as usize)
    }

    /// The group's run queue on this CPU, for reports and tests.
    pub fn group_queue(&self, group: GroupId) -> Option<&GroupQueue> {
        self.groups
            .get(group.index())
            .filter(|g| g.exists)
            .map(|_| &self.queues[group.index()])
    }
}
