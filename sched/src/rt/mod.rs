//! The real-time class: SCHED_FIFO and SCHED_RR tasks on one CPU, picked in
//! O(1) through a priority bitmap and one FIFO list per priority (Linux's
//! `rt_prio_array`; `sched(7)`, `sched_setscheduler(2)`).
//!
//! The rules (`sched(7)`):
//! - the highest RT priority (1..=99, higher first) with a runnable task runs;
//!   within a priority, tasks run in list order;
//! - a task that becomes runnable goes to the tail of its priority's list;
//! - a running task stays at the head of its list while it runs, so a task
//!   preempted by a higher priority resumes before its peers;
//! - SCHED_FIFO runs until it blocks or yields; a yield moves it to the tail;
//! - SCHED_RR also goes to the tail when its time slice (100 ms,
//!   `sched_rr_timeslice_ms`) is used up, if a peer waits; a preempted RR task
//!   later finishes the unexpired part of its slice.
//!
//! ```text
//!   bitmap: bit p set <=> list[p] non-empty        pick = head of list[highest bit]
//!   list[99]: -
//!   list[50]: A ⇄ B          (prev/next task ids in the per-task slots)
//!   list[10]: C
//! ```
//! Nothing allocates after [`RtClass::new`]; every operation is O(1).
//!
//! RT throttling ([`RtBandwidth`], `sched-rt-group.rst`) is opt-in: [`RtClass::new`]
//! has no limit, [`RtClass::with_bandwidth`] takes Linux's 950 ms per 1 s or others.

mod bandwidth;

pub use bandwidth::RtBandwidth;
use bandwidth::RtThrottle;

use alloc::vec;
use alloc::vec::Vec;

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::task::{Nanoseconds, ParamError, Policy, TaskId, TaskParams};

/// The default SCHED_RR time slice: 100 ms (`RR_TIMESLICE`).
pub const RR_TIMESLICE_NS: Nanoseconds = 100_000_000;

/// RT priorities are `0..MAX_RT_PRIO`; user priorities use `1..=99`.
pub const MAX_RT_PRIO: usize = 100;

/// The RT priority of `policy` (1..=99), or `None` for a fair policy.
pub const fn rt_priority(policy: Policy) -> Option<u8> {
    match policy {
        Policy::Fifo { priority } | Policy::RoundRobin { priority } => Some(priority),
        _ => None,
    }
}

/// A link of a priority list: a task, or none. Two bytes where an
/// `Option<TaskId>` takes four: a slot is kept per task per CPU (issue 15,
/// memory in proportion to the tasks), and no task id is `u16::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TaskLink(u16);

impl TaskLink {
    const NONE: TaskLink = TaskLink(u16::MAX);

    fn new(task: Option<TaskId>) -> Self {
        task.map_or(Self::NONE, |task| TaskLink(task.0))
    }

    fn get(self) -> Option<TaskId> {
        (self != Self::NONE).then_some(TaskId(self.0))
    }
}

impl Default for TaskLink {
    fn default() -> Self {
        Self::NONE
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    known: bool,
    queued: bool,
    round_robin: bool,
    priority: u8,
    previous: TaskLink,
    next: TaskLink,
    /// What is left of the SCHED_RR slice.
    time_slice: Nanoseconds,
    exec_start: Nanoseconds,
    sum_exec_runtime: Nanoseconds,
}

#[derive(Clone, Copy, Debug, Default)]
struct List {
    head: Option<TaskId>,
    tail: Option<TaskId>,
}

/// One CPU's RT run queue (Linux's `rt_rq` without RT group scheduling;
/// throttling as configured, none by default).
#[derive(Debug)]
pub struct RtClass {
    slots: Vec<Slot>,
    lists: [List; MAX_RT_PRIO],
    /// Bit `p` of the 128 bits is set when `lists[p]` is non-empty.
    bitmap: [u64; 2],
    current: Option<TaskId>,
    nr_running: usize,
    rr_timeslice: Nanoseconds,
    throttle: RtThrottle,
}

impl RtClass {
    /// A run queue for task ids below `max_tasks`, with the 100 ms RR slice.
    pub fn new(max_tasks: usize) -> Self {
        Self::with_rr_timeslice(max_tasks, RR_TIMESLICE_NS)
    }

    /// As [`RtClass::new`] with another RR slice (`sched_rr_timeslice_ms`;
    /// 0 means the default, as writing 0 to the sysctl does).
    pub fn with_rr_timeslice(max_tasks: usize, rr_timeslice: Nanoseconds) -> Self {
        Self::with_bandwidth(max_tasks, rr_timeslice, RtBandwidth::UNLIMITED)
    }

    /// As [`RtClass::with_rr_timeslice`], throttled to `bandwidth`.
    pub fn with_bandwidth(
        max_tasks: usize,
        rr_timeslice: Nanoseconds,
        bandwidth: RtBandwidth,
    ) -> Self {
        RtClass {
            slots: vec![Slot::default(); max_tasks],
            lists: [List::default(); MAX_RT_PRIO],
            bitmap: [0; 2],
            current: None,
            nr_running: 0,
            rr_timeslice: if rr_timeslice == 0 {
                RR_TIMESLICE_NS
            } else {
                rr_timeslice
            },
            throttle: RtThrottle::new(bandwidth),
        }
    }

    /// The RT bandwidth settings.
    pub const fn bandwidth(&self) -> RtBandwidth {
        self.throttle.bandwidth()
    }

    /// Whether RT tasks are throttled now (they stay queued but are not picked).
    pub const fn is_throttled(&self) -> bool {
        self.throttle.is_throttled()
    }

    /// RT run time charged in the current period (`rt_rq->rt_time`).
    pub const fn rt_time(&self) -> Nanoseconds {
        self.throttle.rt_time()
    }

    /// When the RT period timer must fire next (`None`: stopped).
    pub const fn period_timer_deadline(&self) -> Option<Nanoseconds> {
        self.throttle.deadline()
    }

    /// The RT period timer fires at `now`: replenishes, and asks for a
    /// reschedule when that unthrottles queued RT tasks.
    #[must_use = "an unthrottle must reschedule the CPU"]
    pub fn period_timer(&mut self, now: Nanoseconds) -> Resched {
        let rt_queued = self.nr_running > 0;
        if self.throttle.period_timer(now, rt_queued) && rt_queued {
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    /// The RR time slice in use.
    pub const fn rr_timeslice(&self) -> Nanoseconds {
        self.rr_timeslice
    }

    /// `task`'s RT priority, if it is known here.
    pub fn priority(&self, task: TaskId) -> Option<u8> {
        let slot = self.slots.get(task.index())?;
        slot.known.then_some(slot.priority)
    }

    /// What is left of `task`'s RR slice (`sched_rr_get_interval`); 0 for
    /// FIFO and unknown tasks.
    pub fn time_slice(&self, task: TaskId) -> Nanoseconds {
        match self.slots.get(task.index()) {
            Some(slot) if slot.known && slot.round_robin => slot.time_slice,
            _ => 0,
        }
    }

    /// Total time `task` has run here (`sum_exec_runtime`); 0 if unknown.
    pub fn sum_exec_runtime(&self, task: TaskId) -> Nanoseconds {
        self.slots
            .get(task.index())
            .map_or(0, |slot| slot.sum_exec_runtime)
    }

    /// Priority inheritance changes `task`'s RT priority (`rt_mutex_setprio`
    /// within the RT class, docs/linux-sched-reference.md §1.6): a queued task
    /// moves to its new priority's list, at the tail when raised and at the
    /// head when lowered (Linux's `ENQUEUE_HEAD` for a deboost, so the owner
    /// that just released the lock runs first among its new peers). Its RR
    /// slice and run time are kept.
    pub fn change_priority(&mut self, task: TaskId, priority: u8) {
        let Some(slot) = self.slots.get(task.index()) else {
            return;
        };
        if !slot.known || slot.priority == priority {
            return;
        }
        let lowered = priority < slot.priority;
        let queued = slot.queued;
        if queued {
            self.unlink(task);
        }
        self.slots[task.index()].priority = priority;
        if queued {
            if lowered {
                self.push_front(task);
            } else {
                self.push_back(task);
            }
        }
    }

    /// The highest RT priority with a queued task (the running one included:
    /// it stays on its list), Linux's `rt_rq->highest_prio.curr`.
    pub fn highest_queued_priority(&self) -> Option<u8> {
        self.highest_priority().map(|priority| priority as u8)
    }

    /// The highest priority with a queued task.
    fn highest_priority(&self) -> Option<usize> {
        if self.bitmap[1] != 0 {
            Some(127 - self.bitmap[1].leading_zeros() as usize)
        } else if self.bitmap[0] != 0 {
            Some(63 - self.bitmap[0].leading_zeros() as usize)
        } else {
            None
        }
    }

    fn push_back(&mut self, task: TaskId) {
        let priority = self.slots[task.index()].priority as usize;
        let list = &mut self.lists[priority];
        let old_tail = list.tail;
        list.tail = Some(task);
        match old_tail {
            Some(tail) => self.slots[tail.index()].next = TaskLink::new(Some(task)),
            None => {
                list.head = Some(task);
                self.bitmap[priority / 64] |= 1 << (priority % 64);
            }
        }
        let slot = &mut self.slots[task.index()];
        slot.previous = TaskLink::new(old_tail);
        slot.next = TaskLink::NONE;
    }

    fn push_front(&mut self, task: TaskId) {
        let priority = self.slots[task.index()].priority as usize;
        let list = &mut self.lists[priority];
        let old_head = list.head;
        list.head = Some(task);
        match old_head {
            Some(head) => self.slots[head.index()].previous = TaskLink::new(Some(task)),
            None => {
                list.tail = Some(task);
                self.bitmap[priority / 64] |= 1 << (priority % 64);
            }
        }
        let slot = &mut self.slots[task.index()];
        slot.previous = TaskLink::NONE;
        slot.next = TaskLink::new(old_head);
    }

    fn unlink(&mut self, task: TaskId) {
        let Slot {
            priority,
            previous,
            next,
            ..
        } = self.slots[task.index()];
        let priority = priority as usize;
        match previous.get() {
            Some(p) => self.slots[p.index()].next = next,
            None => self.lists[priority].head = next.get(),
        }
        match next.get() {
            Some(n) => self.slots[n.index()].previous = previous,
            None => self.lists[priority].tail = previous.get(),
        }
        if self.lists[priority].head.is_none() {
            self.bitmap[priority / 64] &= !(1 << (priority % 64));
        }
        let slot = &mut self.slots[task.index()];
        slot.previous = TaskLink::NONE;
        slot.next = TaskLink::NONE;
    }

    /// `requeue_task_rt(.., head = false)`: to the tail of its list.
    fn requeue_tail(&mut self, task: TaskId) {
        if self.slots[task.index()].queued {
            self.unlink(task);
            self.push_back(task);
        }
    }

    /// `update_curr_rt`: charges the time since `exec_start` to `task` and to
    /// the RT bandwidth; true when that throttles the class.
    fn update_curr(&mut self, task: TaskId, now: Nanoseconds) -> bool {
        let slot = &mut self.slots[task.index()];
        let ran = now.saturating_sub(slot.exec_start);
        slot.exec_start = now;
        slot.sum_exec_runtime += ran;
        if slot.round_robin {
            slot.time_slice = slot.time_slice.saturating_sub(ran);
        }
        self.throttle.charge(ran)
    }
}

impl SchedClass for RtClass {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        _now: Nanoseconds,
    ) -> Result<(), ParamError> {
        params.validate()?;
        let Some(priority) = rt_priority(params.policy) else {
            return Err(ParamError::OutOfRange {
                field: "policy",
                value: linux_policy_number(params.policy),
                min: 1, // SCHED_FIFO
                max: 2, // SCHED_RR
            });
        };
        let capacity = self.slots.len();
        let rr_timeslice = self.rr_timeslice;
        let slot = self
            .slots
            .get_mut(task.index())
            .ok_or(ParamError::TooManyTasks {
                task: task.0,
                capacity,
            })?;
        *slot = Slot {
            known: true,
            round_robin: matches!(params.policy, Policy::RoundRobin { .. }),
            priority,
            time_slice: rr_timeslice,
            ..Slot::default()
        };
        Ok(())
    }

    fn task_dead(&mut self, task: TaskId) {
        debug_assert!(!self.slots[task.index()].queued);
        self.slots[task.index()].known = false;
    }

    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, _flags: EnqueueFlags) {
        let slot = &mut self.slots[task.index()];
        debug_assert!(slot.known && !slot.queued, "enqueue of {task:?}");
        slot.queued = true;
        self.nr_running += 1;
        self.push_back(task);
        self.throttle.start(now);
    }

    fn dequeue_task(&mut self, task: TaskId, _now: Nanoseconds, _flags: DequeueFlags) {
        debug_assert!(self.slots[task.index()].queued, "dequeue of {task:?}");
        self.unlink(task);
        self.slots[task.index()].queued = false;
        self.nr_running -= 1;
    }

    fn pick_next_task(&mut self, _now: Nanoseconds) -> Option<TaskId> {
        if self.throttle.is_throttled() {
            return None;
        }
        self.lists[self.highest_priority()?].head
    }

    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        debug_assert_eq!(self.current, Some(task));
        // A throttle found here takes effect at this very schedule().
        let _throttled = self.update_curr(task, now);
        self.current = None;
    }

    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.slots[task.index()].exec_start = now;
        self.current = Some(task);
    }

    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        let throttled = if self.update_curr(task, now) {
            Resched::Reschedule
        } else {
            Resched::Keep
        };
        let slot = &mut self.slots[task.index()];
        if !slot.round_robin || slot.time_slice > 0 {
            return throttled;
        }
        slot.time_slice = self.rr_timeslice;
        let list = self.lists[slot.priority as usize];
        if list.head == list.tail {
            // Alone at its priority: a fresh slice and carry on.
            return throttled;
        }
        self.requeue_tail(task);
        Resched::Reschedule
    }

    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, _now: Nanoseconds) -> Resched {
        if self.slots[woken.index()].priority > self.slots[current.index()].priority {
            Resched::Reschedule
        } else {
            Resched::Keep
        }
    }

    fn yield_task(&mut self, task: TaskId, _now: Nanoseconds) {
        self.requeue_tail(task);
    }

    fn nr_running(&self) -> usize {
        self.nr_running
    }

    fn reserve_tasks(&mut self, count: usize) {
        crate::task::grow_table(&mut self.slots, count, Slot::default());
    }

    fn task_storage_bytes(&self) -> usize {
        crate::task::table_bytes(&self.slots)
    }

    /// SCHED_RR: what is left of the running task's slice while a peer of its
    /// priority waits (only then does the slice end, at the tick that finds it
    /// used up); SCHED_FIFO has no slice.
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        let slot = self.slots.get(task.index())?;
        if !slot.known || !slot.queued || !slot.round_robin {
            return None;
        }
        let list = self.lists[slot.priority as usize];
        if list.head == list.tail {
            return None;
        }
        let ran = if self.current == Some(task) {
            now.saturating_sub(slot.exec_start)
        } else {
            0
        };
        Some(slot.time_slice.saturating_sub(ran))
    }
}

/// The `SCHED_*` number of a policy, for error reports.
const fn linux_policy_number(policy: Policy) -> i64 {
    match policy {
        Policy::Normal { .. } => 0,
        Policy::Fifo { .. } => 1,
        Policy::RoundRobin { .. } => 2,
        Policy::Batch { .. } => 3,
        Policy::Idle => 5,
    }
}

#[cfg(test)]
mod tests;
