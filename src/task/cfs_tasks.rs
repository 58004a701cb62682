//! Each run queue's list of its queued tasks in the order they last ran, as
//! Linux's `rq->cfs_tasks`: a task goes to the head when it is enqueued
//! (`account_entity_enqueue`) and when it is picked (`pick_next_task_fair`),
//! and leaves at dequeue, so the tail holds the task that ran least recently.
//! Load balancing takes its candidates from the tail (`detach_tasks`), and a
//! candidate it looks at and skips goes back to the head (its `list_move`).
//!
//! The list is intrusive (two 16-bit links in each task slot) and every
//! operation is O(1) under the run-queue lock; reading the `NR_MIGRATE`
//! oldest entries is O(`NR_MIGRATE`).

use core::sync::atomic::Ordering;

use super::scheduler::CpuRunQueue;
use super::{NO_TASK, TaskId, task};

/// The head and tail of one run queue's list (`NO_TASK` when empty).
#[derive(Clone, Copy, Debug)]
pub struct CfsTasks {
    head: u16,
    tail: u16,
}

impl Default for CfsTasks {
    /// An empty list.
    fn default() -> Self {
        CfsTasks {
            head: NO_TASK,
            tail: NO_TASK,
        }
    }
}

impl CpuRunQueue {
    /// Puts `id` at the head of the list (most recently run), taking it out
    /// of its place first if it is on the list.
    pub(super) fn cfs_tasks_move_to_head(&mut self, id: TaskId) {
        let slot = task(id);
        if self.cfs_tasks.head == id.0 && slot.on_cfs_tasks.load(Ordering::Relaxed) {
            return;
        }
        self.cfs_tasks_remove(id);
        let old_head = self.cfs_tasks.head;
        slot.lru_prev.store(NO_TASK, Ordering::Relaxed);
        slot.lru_next.store(old_head, Ordering::Relaxed);
        if old_head == NO_TASK {
            self.cfs_tasks.tail = id.0;
        } else {
            task(TaskId(old_head))
                .lru_prev
                .store(id.0, Ordering::Relaxed);
        }
        self.cfs_tasks.head = id.0;
        slot.on_cfs_tasks.store(true, Ordering::Relaxed);
    }

    /// Takes `id` off the list, if it is on it.
    pub(super) fn cfs_tasks_remove(&mut self, id: TaskId) {
        let slot = task(id);
        // Under the run-queue lock: a load and a store, no atomic swap.
        if !slot.on_cfs_tasks.load(Ordering::Relaxed) {
            return;
        }
        slot.on_cfs_tasks.store(false, Ordering::Relaxed);
        let prev = slot.lru_prev.load(Ordering::Relaxed);
        let next = slot.lru_next.load(Ordering::Relaxed);
        if prev == NO_TASK {
            self.cfs_tasks.head = next;
        } else {
            task(TaskId(prev)).lru_next.store(next, Ordering::Relaxed);
        }
        if next == NO_TASK {
            self.cfs_tasks.tail = prev;
        } else {
            task(TaskId(next)).lru_prev.store(prev, Ordering::Relaxed);
        }
    }

    /// The list from its tail (least recently run first), at most `limit`
    /// entries.
    pub(super) fn cfs_tasks_from_tail(&self, limit: usize) -> impl Iterator<Item = TaskId> + '_ {
        let mut next = self.cfs_tasks.tail;
        let mut left = limit;
        core::iter::from_fn(move || {
            if next == NO_TASK || left == 0 {
                return None;
            }
            left -= 1;
            let id = TaskId(next);
            next = task(id).lru_prev.load(Ordering::Relaxed);
            Some(id)
        })
    }
}
