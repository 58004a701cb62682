//! Each run queue's list of its queued tasks in the order they last ran, as
//! Linux's `rq->cfs_tasks`: a task goes to the head when it is enqueued
//! (`account_entity_enqueue`) and when it is picked (`pick_next_task_fair`),
//! and leaves at dequeue, so the tail holds the task that ran least recently.
//! Load balancing takes its candidates from the tail (`detach_tasks`), and a
//! candidate it looks at and skips goes back to the head (its `list_move`).
//! (Linux's kernel/sched/fair.c; the reference document has no section on
//! this list.)
//!
//! The links live in one array indexed by task id, sized when the run queue is
//! built; every operation is O(1) and allocates nothing; reading the `limit`
//! oldest entries is O(`limit`).

use alloc::vec::Vec;

use crate::task::TaskId;

/// "No task" in a link.
const NONE: u16 = u16::MAX;

/// One task's place in the list.
#[derive(Clone, Copy, Debug)]
struct Link {
    prev: u16,
    next: u16,
    listed: bool,
}

const UNLISTED: Link = Link {
    prev: NONE,
    next: NONE,
    listed: false,
};

/// The list of one run queue.
#[derive(Clone, Debug)]
pub struct CfsTasks {
    head: u16,
    tail: u16,
    links: Vec<Link>,
}

impl CfsTasks {
    /// An empty list for task ids below `max_tasks`.
    pub fn new(max_tasks: usize) -> Self {
        CfsTasks {
            head: NONE,
            tail: NONE,
            links: alloc::vec![UNLISTED; max_tasks],
        }
    }

    /// Makes room for task ids below `count` (see
    /// [`crate::class::SchedClass::reserve_tasks`]).
    pub fn reserve_tasks(&mut self, count: usize) {
        crate::task::grow_table(&mut self.links, count, UNLISTED);
    }

    /// The heap the list's links take.
    pub fn storage_bytes(&self) -> usize {
        crate::task::table_bytes(&self.links)
    }

    /// Whether `task` is on the list.
    pub fn contains(&self, task: TaskId) -> bool {
        self.links.get(task.index()).is_some_and(|link| link.listed)
    }

    /// Puts `task` at the head (most recently run), taking it out of its place
    /// first if it is on the list. Ids beyond the list's size are ignored.
    #[inline(always)]
    pub fn move_to_head(&mut self, task: TaskId) {
        if task.index() >= self.links.len() || (self.head == task.0 && self.contains(task)) {
            return;
        }
        self.remove(task);
        let old_head = self.head;
        self.links[task.index()] = Link {
            prev: NONE,
            next: old_head,
            listed: true,
        };
        if old_head == NONE {
            self.tail = task.0;
        } else {
            self.links[usize::from(old_head)].prev = task.0;
        }
        self.head = task.0;
    }

    /// Takes `task` off the list, if it is on it.
    pub fn remove(&mut self, task: TaskId) {
        if !self.contains(task) {
            return;
        }
        let Link { prev, next, .. } = self.links[task.index()];
        self.links[task.index()] = UNLISTED;
        if prev == NONE {
            self.head = next;
        } else {
            self.links[usize::from(prev)].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.links[usize::from(next)].prev = prev;
        }
    }

    /// The list from its tail (least recently run first), at most `limit`
    /// entries.
    pub fn from_tail(&self, limit: usize) -> impl Iterator<Item = TaskId> + '_ {
        let mut next = self.tail;
        let mut left = limit;
        core::iter::from_fn(move || {
            if next == NONE || left == 0 {
                return None;
            }
            left -= 1;
            let id = TaskId(next);
            next = self.links[usize::from(next)].prev;
            Some(id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(list: &CfsTasks) -> Vec<u16> {
        list.from_tail(100).map(|t| t.0).collect()
    }

    #[test]
    fn head_moves_removal_and_tail_order() {
        let mut list = CfsTasks::new(8);
        for id in [1, 2, 3] {
            list.move_to_head(TaskId(id));
        }
        // Enqueued 1, 2, 3: 1 ran least recently.
        assert_eq!(order(&list), [1, 2, 3]);
        list.move_to_head(TaskId(1));
        assert_eq!(order(&list), [2, 3, 1]);
        list.remove(TaskId(3));
        assert_eq!(order(&list), [2, 1]);
        list.remove(TaskId(3));
        list.move_to_head(TaskId(2));
        assert_eq!(order(&list), [1, 2]);
        assert_eq!(list.from_tail(1).count(), 1);
        list.remove(TaskId(1));
        list.remove(TaskId(2));
        assert_eq!(order(&list), [] as [u16; 0]);
        // Out of range: ignored, not a panic.
        list.move_to_head(TaskId(9));
        assert!(!list.contains(TaskId(9)));
    }
}
