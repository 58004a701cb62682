//! A round-robin policy: the simplest class that honours the interface.
//!
//! Queued tasks wait in FIFO order; the running task gets a fixed time slice and
//! goes to the back when it ends. It is what the kernel boots with before the fair
//! class, and the baseline the conformance tests check every policy against.
//! The queue is intrusive (a `next` index per task), so nothing allocates after
//! [`RoundRobin::new`].

use alloc::vec;
use alloc::vec::Vec;

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::task::{Nanoseconds, ParamError, TaskId, TaskParams};

/// The default slice: 4 ms, one tick at `HZ=250`.
pub const DEFAULT_SLICE_NS: Nanoseconds = 4_000_000;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    known: bool,
    queued: bool,
    /// In the FIFO (queued and not running).
    waiting: bool,
    next: Option<TaskId>,
    slice_start: Nanoseconds,
}

/// One CPU's round-robin run queue.
#[derive(Debug)]
pub struct RoundRobin {
    slots: Vec<Slot>,
    head: Option<TaskId>,
    tail: Option<TaskId>,
    current: Option<TaskId>,
    nr_running: usize,
    slice: Nanoseconds,
    /// When the running task's slice was found spent (the tick or timer at
    /// which [`SchedClass::task_tick`] asked for the switch): the next slice
    /// starts there, not at the switch that follows it.
    slice_ended_at: Option<Nanoseconds>,
    /// Task groups handed out so far, the root included (round robin has no
    /// groups of its own, but scenarios with groups still run under it).
    pub(crate) groups: usize,
    /// The most groups it hands out.
    pub(crate) max_groups: usize,
}

impl RoundRobin {
    /// A run queue for task ids below `max_tasks`, with time slice `slice`.
    pub fn new(max_tasks: usize, slice: Nanoseconds) -> Self {
        RoundRobin {
            slots: vec![Slot::default(); max_tasks],
            head: None,
            tail: None,
            current: None,
            nr_running: 0,
            slice,
            slice_ended_at: None,
            groups: 1,
            max_groups: crate::run_queue::DEFAULT_MAX_GROUPS,
        }
    }

    /// The same, handing out at most `max_groups` group ids (the root
    /// included).
    pub fn with_max_groups(mut self, max_groups: usize) -> Self {
        self.max_groups = max_groups.max(1);
        self
    }

    /// The tasks waiting in the FIFO, head first (the running task is not in
    /// it: it goes to the back when it is put back). Explain mode reads it
    /// right after a pick to name the order the pick followed.
    pub fn fifo(&self) -> impl Iterator<Item = TaskId> + '_ {
        let mut cursor = self.head;
        // At most one step per slot: a corrupt link cannot loop forever.
        (0..self.slots.len()).map_while(move |_| {
            let at = cursor?;
            cursor = self.slots[at.index()].next;
            Some(at)
        })
    }

    /// The task running from this queue (its last pick), if any.
    pub fn current(&self) -> Option<TaskId> {
        self.current
    }

    /// The time slice each task gets when it is picked.
    pub fn slice(&self) -> Nanoseconds {
        self.slice
    }

    /// When `task`'s last slice started (its last pick); `None` for a task
    /// it does not know. Kept after the task is put back, so the time it ran
    /// in that slice can be read at the next pick.
    pub fn slice_start(&self, task: TaskId) -> Option<Nanoseconds> {
        self.slots
            .get(task.index())
            .filter(|slot| slot.known)
            .map(|slot| slot.slice_start)
    }

    fn push_back(&mut self, task: TaskId) {
        let slot = &mut self.slots[task.index()];
        debug_assert!(!slot.waiting, "task {task:?} queued twice");
        slot.waiting = true;
        slot.next = None;
        match self.tail {
            Some(tail) => self.slots[tail.index()].next = Some(task),
            None => self.head = Some(task),
        }
        self.tail = Some(task);
    }

    /// Unlinks `task` from the FIFO; O(n) but only on dequeue of a waiting task,
    /// which the kernel's blocking paths never do (a task blocks while running).
    fn unlink(&mut self, task: TaskId) {
        let mut previous: Option<TaskId> = None;
        let mut cursor = self.head;
        while let Some(at) = cursor {
            let next = self.slots[at.index()].next;
            if at == task {
                match previous {
                    Some(p) => self.slots[p.index()].next = next,
                    None => self.head = next,
                }
                if self.tail == Some(task) {
                    self.tail = previous;
                }
                let slot = &mut self.slots[task.index()];
                slot.waiting = false;
                slot.next = None;
                return;
            }
            previous = Some(at);
            cursor = next;
        }
    }
}

impl SchedClass for RoundRobin {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        _now: Nanoseconds,
    ) -> Result<(), ParamError> {
        params.validate()?;
        let capacity = self.slots.len();
        let slot = self
            .slots
            .get_mut(task.index())
            .ok_or(ParamError::TooManyTasks {
                task: task.0,
                capacity,
            })?;
        *slot = Slot {
            known: true,
            ..Slot::default()
        };
        Ok(())
    }

    fn task_dead(&mut self, task: TaskId) {
        debug_assert!(!self.slots[task.index()].queued);
        self.slots[task.index()].known = false;
    }

    fn enqueue_task(&mut self, task: TaskId, _now: Nanoseconds, _flags: EnqueueFlags) {
        let slot = &mut self.slots[task.index()];
        debug_assert!(slot.known && !slot.queued, "enqueue of {task:?}");
        slot.queued = true;
        self.nr_running += 1;
        if self.current != Some(task) {
            self.push_back(task);
        }
    }

    fn dequeue_task(&mut self, task: TaskId, _now: Nanoseconds, _flags: DequeueFlags) {
        debug_assert!(self.slots[task.index()].queued, "dequeue of {task:?}");
        self.slots[task.index()].queued = false;
        self.nr_running -= 1;
        if self.slots[task.index()].waiting {
            self.unlink(task);
        }
    }

    fn pick_next_task(&mut self, _now: Nanoseconds) -> Option<TaskId> {
        self.head
    }

    #[inline]
    fn put_prev_task(&mut self, task: TaskId, _now: Nanoseconds) {
        debug_assert_eq!(self.current, Some(task));
        self.current = None;
        if self.slots[task.index()].queued {
            self.push_back(task);
        }
    }

    /// A slice that ended at a tick (or its timer) hands the next one its
    /// start at that instant, so that slices follow each other back to back
    /// whatever the switch between them costs: a kernel switches some µs
    /// after the tick that asked for it, and a slice of one tick measured
    /// from the switch would be found a few ns short at the next tick and run
    /// to the one after (8 ms instead of 4 at HZ 250), while the simulator,
    /// whose switches take no time, rotated every tick. A task picked for
    /// another reason (its predecessor blocked or yielded) starts its slice
    /// when it is switched in; so does one picked a slice or more after the
    /// end was found (a real-time task ran in between).
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        if self.slots[task.index()].waiting {
            self.unlink(task);
        }
        let start = self
            .slice_ended_at
            .take()
            .filter(|&at| at <= now && now - at < self.slice);
        self.slots[task.index()].slice_start = start.unwrap_or(now);
        self.current = Some(task);
    }

    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        let ran = now.saturating_sub(self.slots[task.index()].slice_start);
        if ran >= self.slice && self.head.is_some() {
            self.slice_ended_at = Some(now);
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    fn wakeup_preempt(&mut self, _current: TaskId, _woken: TaskId, _now: Nanoseconds) -> Resched {
        Resched::Keep
    }

    fn yield_task(&mut self, _task: TaskId, _now: Nanoseconds) {}

    fn nr_running(&self) -> usize {
        self.nr_running
    }

    fn reserve_tasks(&mut self, count: usize) {
        crate::task::grow_table(&mut self.slots, count, Slot::default());
    }

    fn task_storage_bytes(&self) -> usize {
        crate::task::table_bytes(&self.slots)
    }

    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        self.head?;
        let ran = now.saturating_sub(self.slots[task.index()].slice_start);
        Some(self.slice.saturating_sub(ran))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(n: u16) -> RoundRobin {
        let mut rr = RoundRobin::new(8, 10);
        for t in 0..n {
            rr.task_new(TaskId(t), &TaskParams::default(), 0).unwrap();
            rr.enqueue_task(TaskId(t), 0, EnqueueFlags::default());
        }
        rr
    }

    fn run_next(rr: &mut RoundRobin, now: Nanoseconds) -> Option<TaskId> {
        let next = rr.pick_next_task(now)?;
        rr.set_next_task(next, now);
        Some(next)
    }

    /// A slice found spent at a tick hands the next task its start at that
    /// tick: with a 10 ns slice and ticks every 10 ns, a switch 3 ns after
    /// each tick still rotates at every tick (measured from the switch, the
    /// next tick would find 7 ns run and keep the task a second slice).
    #[test]
    fn slices_follow_each_other_back_to_back_whatever_the_switch_costs() {
        let mut rr = queue(2);
        assert_eq!(run_next(&mut rr, 0), Some(TaskId(0)));
        for tick in 1..=4u64 {
            let now = 10 * tick;
            let running = rr.current.unwrap();
            assert_eq!(
                rr.task_tick(running, now),
                Resched::Reschedule,
                "tick {tick}"
            );
            rr.put_prev_task(running, now + 3);
            let next = run_next(&mut rr, now + 3).unwrap();
            assert_ne!(next, running, "tick {tick}: the other task runs");
        }
        // A switch for another reason (the task blocked) starts afresh.
        let running = rr.current.unwrap();
        rr.dequeue_task(running, 45, DequeueFlags::default());
        rr.put_prev_task(running, 45);
        let next = run_next(&mut rr, 45).unwrap();
        assert_eq!(rr.task_tick(next, 50), Resched::Keep, "alone");
        rr.enqueue_task(running, 51, EnqueueFlags::default());
        assert_eq!(rr.task_tick(next, 54), Resched::Keep, "9 ns of 10 run");
        assert_eq!(rr.task_tick(next, 55), Resched::Reschedule);
    }

    #[test]
    fn tasks_run_in_turn() {
        let mut rr = queue(3);
        let mut order = alloc::vec::Vec::new();
        for step in 0..6 {
            let t = run_next(&mut rr, step * 10).unwrap();
            order.push(t.0);
            assert!(rr.task_tick(t, step * 10 + 10).is_needed());
            rr.put_prev_task(t, step * 10 + 10);
        }
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn blocked_task_leaves_and_comes_back_last() {
        let mut rr = queue(3);
        let t0 = run_next(&mut rr, 0).unwrap();
        rr.dequeue_task(
            t0,
            5,
            DequeueFlags {
                sleep: true,
                ..Default::default()
            },
        );
        rr.put_prev_task(t0, 5);
        assert_eq!(rr.nr_running(), 2);
        rr.enqueue_task(
            t0,
            6,
            EnqueueFlags {
                wakeup: true,
                ..Default::default()
            },
        );
        assert_eq!(run_next(&mut rr, 6), Some(TaskId(1)));
        rr.put_prev_task(TaskId(1), 7);
        assert_eq!(run_next(&mut rr, 7), Some(TaskId(2)));
        rr.put_prev_task(TaskId(2), 8);
        assert_eq!(run_next(&mut rr, 8), Some(TaskId(0)));
    }

    #[test]
    fn no_preemption_before_slice_or_when_alone() {
        let mut rr = queue(1);
        let t = run_next(&mut rr, 0).unwrap();
        assert!(!rr.task_tick(t, 100).is_needed(), "alone: never preempted");
        let mut rr = queue(2);
        let t = run_next(&mut rr, 0).unwrap();
        assert!(!rr.task_tick(t, 9).is_needed());
        assert!(rr.task_tick(t, 10).is_needed());
    }

    #[test]
    fn slice_remaining_counts_down_only_with_competition() {
        let mut rr = queue(1);
        let t = run_next(&mut rr, 0).unwrap();
        assert_eq!(rr.slice_remaining(t, 3), None, "alone: no slice end");
        rr.task_new(TaskId(1), &TaskParams::default(), 3).unwrap();
        rr.enqueue_task(TaskId(1), 3, EnqueueFlags::default());
        assert_eq!(rr.slice_remaining(t, 3), Some(7));
        assert_eq!(rr.slice_remaining(t, 12), Some(0));
    }

    #[test]
    fn fifo_lists_the_waiting_tasks_head_first_and_the_put_back_task_last() {
        let mut rr = queue(3);
        let t0 = run_next(&mut rr, 0).unwrap();
        assert_eq!(rr.fifo().collect::<Vec<_>>(), [TaskId(1), TaskId(2)]);
        rr.put_prev_task(t0, 10);
        let t1 = run_next(&mut rr, 10).unwrap();
        assert_eq!(t1, TaskId(1));
        assert_eq!(rr.fifo().collect::<Vec<_>>(), [TaskId(2), TaskId(0)]);
        // t0's slice started at 0: it ran 10 ns of it before it went back.
        assert_eq!(rr.slice_start(t0), Some(0));
        assert_eq!(rr.slice_start(t1), Some(10));
        assert_eq!(rr.slice(), 10);
    }

    #[test]
    fn empty_queue_picks_nothing_and_too_many_tasks_is_an_error() {
        let mut rr = RoundRobin::new(2, 10);
        assert_eq!(rr.pick_next_task(0), None);
        let err = rr
            .task_new(TaskId(2), &TaskParams::default(), 0)
            .unwrap_err();
        assert_eq!(
            err,
            ParamError::TooManyTasks {
                task: 2,
                capacity: 2
            }
        );
    }
}
