//! The machine's one timeline arena ([`SharedArena`]) and where each CPU's
//! entities sit in it.
//!
//! The CPUs share one node arena (issue 15: the scheduler's memory must not
//! grow with its CPUs), so each entity of the machine needs a node of its own.
//! A run queue keeps numbering its entities as alone (task `t` is entity `t`,
//! group `g`'s entity is `max_tasks + g − 1`), and its tree operations place
//! an entity at node number
//!
//! ```text
//!   t                                      task t, on every CPU
//!   max_tasks + c·(max_groups − 1) + g − 1 group g's entity on CPU c (g ≥ 1)
//! ```
//!
//! A task's node is the same on every CPU, which is sound because a task is in
//! at most one CPU's tree at a time (it leaves the source's tree before it
//! migrates; in builds with debug assertions the tree checks it); a group has
//! an entity per CPU, each in its CPU's parent queue, so each CPU's group
//! entities have nodes of their own. Only the tree operations translate
//! (`FairRunQueue::node_of`, `entity_of`: a compare and a conditional add):
//! the run queue's entity storage and its hundred-odd entity accesses are
//! those of a run queue alone, and do not grow with the number of CPUs.
//! (Numbering the entities themselves machine-wide, with a table that maps
//! a CPU's group entities to its storage, put that compare on every entity
//! access: measured, 7,433 → 8,190 instructions per pinned sched-pipe round
//! trip.)

use super::timeline::{MAX_ENTITIES, TimelineNodes};

/// What CPU `cpu`'s group entity numbers are shifted by to make their node
/// numbers: the other CPUs' group entities before its own (`max_groups`
/// counts the root, which has no entity).
pub(super) fn node_offset(max_groups: usize, cpu: usize) -> u32 {
    (cpu * (max_groups - 1)) as u32
}

/// The node numbers `cpus` CPUs use.
fn entity_count(max_tasks: usize, max_groups: usize, cpus: usize) -> usize {
    max_tasks + cpus * (max_groups - 1)
}

/// The machine needs more entity numbers than an arena has nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyEntities {
    /// Task slots.
    pub max_tasks: usize,
    /// Group slots per CPU, the root included.
    pub max_groups: usize,
    /// CPUs.
    pub cpus: usize,
}

impl core::fmt::Display for TooManyEntities {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} tasks and {} task groups on {} CPU{} need {} scheduling entities \
             (a task has one, a group one per CPU); the limit is {}",
            self.max_tasks,
            self.max_groups - 1,
            self.cpus,
            if self.cpus == 1 { "" } else { "s" },
            entity_count(self.max_tasks, self.max_groups, self.cpus),
            MAX_ENTITIES
        )
    }
}

/// The timeline node arena of a machine, which all its CPUs' fair run queues
/// share ([`FairRunQueue::sharing`](super::FairRunQueue::sharing)), sized
/// for `max_tasks` tasks and `max_groups` group slots (the root included) on
/// each of `cpus` CPUs.
#[derive(Debug)]
pub struct SharedArena {
    /// `None` for a machine with no fair run queue (round robin).
    nodes: Option<TimelineNodes>,
    max_tasks: usize,
    max_groups: usize,
    cpus: usize,
}

impl SharedArena {
    /// Allocates the arena (1 MiB for the CFS tree, 2 MiB for EEVDF's,
    /// `augmented`), or says why the entities do not fit in one.
    pub fn new(
        augmented: bool,
        max_tasks: usize,
        max_groups: usize,
        cpus: usize,
    ) -> Result<Self, TooManyEntities> {
        Self::sized(Some(augmented), max_tasks, max_groups, cpus)
    }

    /// The same slots with no arena, for a machine whose CPUs have no tree
    /// (round robin); the same limit, so that a configuration does not
    /// depend on the policy to be accepted.
    pub fn without_nodes(
        max_tasks: usize,
        max_groups: usize,
        cpus: usize,
    ) -> Result<Self, TooManyEntities> {
        Self::sized(None, max_tasks, max_groups, cpus)
    }

    fn sized(
        augmented: Option<bool>,
        max_tasks: usize,
        max_groups: usize,
        cpus: usize,
    ) -> Result<Self, TooManyEntities> {
        let max_groups = max_groups.max(1);
        let count = entity_count(max_tasks, max_groups, cpus);
        if count > MAX_ENTITIES {
            return Err(TooManyEntities {
                max_tasks,
                max_groups,
                cpus,
            });
        }
        Ok(SharedArena {
            nodes: augmented.map(|augmented| TimelineNodes::new(count, augmented)),
            max_tasks,
            max_groups,
            cpus,
        })
    }

    /// The nodes (a run queue takes a handle on them), if allocated.
    pub(super) fn nodes(&self) -> Option<&TimelineNodes> {
        self.nodes.as_ref()
    }

    /// Task slots.
    pub fn max_tasks(&self) -> usize {
        self.max_tasks
    }

    /// Group slots per CPU, the root included.
    pub fn max_groups(&self) -> usize {
        self.max_groups
    }

    /// CPUs it has entity numbers for.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// Whether it is the EEVDF tree (`None`: no tree).
    pub fn augmented(&self) -> Option<bool> {
        self.nodes.as_ref().map(TimelineNodes::augmented)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_entities_have_nodes_per_cpu() {
        // 10 tasks, 3 groups besides the root, 4 CPUs: CPU 2's group
        // entities 10, 11, 12 are nodes 16, 17, 18; 4 CPUs use 22 nodes.
        assert_eq!(10 + node_offset(4, 2), 16);
        assert_eq!(12 + node_offset(4, 3), 21);
        assert_eq!(entity_count(10, 4, 4), 22);
    }

    #[test]
    fn arena_refuses_more_entities_than_nodes() {
        assert!(SharedArena::new(false, 10_020, 64, 8).is_ok());
        let error = SharedArena::new(true, 60_000, 64, 100).unwrap_err();
        assert_eq!(error.cpus, 100);
        assert_eq!(
            alloc::format!("{error}"),
            "60000 tasks and 63 task groups on 100 CPUs need 66300 scheduling entities \
             (a task has one, a group one per CPU); the limit is 65535"
        );
    }
}
