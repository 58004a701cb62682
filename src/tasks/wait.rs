//! Waiting: intrusive wait lists (the link lives in the task slot, so waiting
//! allocates nothing), wait queues, and completions. Generic over the
//! [`Scheduler`] that sleeps and wakes (the scheduling floor's, which names
//! [`WaitQueue`] and [`Completion`] with it).

use core::marker::PhantomData;
use core::sync::atomic::Ordering;

use fairway_sched::task::TaskId;

use super::scheduler::Scheduler;
use super::table::{NO_TASK, set_current_sleeping, task};
use crate::platform::sync::{IrqSpinLock, IrqSpinLockGuard};

/// A FIFO of sleeping tasks, protected by whatever lock its owner holds.
#[derive(Debug)]
pub struct WaitList {
    head: u16,
    tail: u16,
}

impl Default for WaitList {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitList {
    /// An empty list.
    pub const fn new() -> Self {
        WaitList {
            head: NO_TASK,
            tail: NO_TASK,
        }
    }

    /// Appends `id` (which is on no other list).
    pub fn push(&mut self, id: TaskId) {
        task(id).wait_next.store(NO_TASK, Ordering::Relaxed);
        if self.tail == NO_TASK {
            self.head = id.0;
        } else {
            task(TaskId(self.tail))
                .wait_next
                .store(id.0, Ordering::Relaxed);
        }
        self.tail = id.0;
    }

    /// Removes and returns the first task.
    pub fn pop(&mut self) -> Option<TaskId> {
        if self.head == NO_TASK {
            return None;
        }
        let id = TaskId(self.head);
        self.head = task(id).wait_next.swap(NO_TASK, Ordering::Relaxed);
        if self.head == NO_TASK {
            self.tail = NO_TASK;
        }
        Some(id)
    }

    /// Whether no task waits.
    pub fn is_empty(&self) -> bool {
        self.head == NO_TASK
    }

    /// Wakes the first waiter; returns whether there was one.
    pub fn wake_one<S: Scheduler>(&mut self) -> bool {
        match self.pop() {
            Some(id) => {
                S::wake_up(id);
                true
            }
            None => false,
        }
    }

    /// Wakes every waiter.
    pub fn wake_all<S: Scheduler>(&mut self) {
        while self.wake_one::<S>() {}
    }
}

/// Sleeps on `list` (under `guard`, its owner's lock) until `condition(&mut *guard)`
/// holds, re-taking the lock after each wake-up; returns with the lock held.
pub fn wait_until<'a, S: Scheduler, T>(
    lock: &'a IrqSpinLock<T>,
    mut guard: IrqSpinLockGuard<'a, T>,
    list: impl Fn(&mut T) -> &mut WaitList,
    mut condition: impl FnMut(&mut T) -> bool,
) -> IrqSpinLockGuard<'a, T> {
    while !condition(&mut guard) {
        let me = set_current_sleeping();
        list(&mut guard).push(me);
        drop(guard);
        S::schedule();
        guard = lock.lock();
    }
    guard
}

/// Sleeps until `condition(&mut *guard)` holds, on no wait list: the waker knows
/// the task (rt-app's resources name the instances to wake), changes the state
/// under `lock` and then calls `wake_up`. The task is marked sleeping before the
/// lock is dropped, so a wake-up between the drop and the switch is not lost.
pub fn park_until<'a, S: Scheduler, T>(
    lock: &'a IrqSpinLock<T>,
    mut guard: IrqSpinLockGuard<'a, T>,
    mut condition: impl FnMut(&mut T) -> bool,
) -> IrqSpinLockGuard<'a, T> {
    while !condition(&mut guard) {
        set_current_sleeping();
        drop(guard);
        S::schedule();
        guard = lock.lock();
    }
    guard
}

/// A wait queue with its own lock.
pub struct WaitQueue<S> {
    list: IrqSpinLock<WaitList>,
    scheduler: PhantomData<fn() -> S>,
}

impl<S: Scheduler> Default for WaitQueue<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Scheduler> WaitQueue<S> {
    /// An empty wait queue.
    pub const fn new() -> Self {
        WaitQueue {
            list: IrqSpinLock::new(WaitList::new()),
            scheduler: PhantomData,
        }
    }

    /// Sleeps until `condition()` holds; `condition` runs under the queue's lock,
    /// so a waker that changes the state and then wakes cannot be missed.
    pub fn wait_until(&self, mut condition: impl FnMut() -> bool) {
        let guard = self.list.lock();
        drop(wait_until::<S, _>(
            &self.list,
            guard,
            |list| list,
            |_| condition(),
        ));
    }

    /// Wakes one waiter.
    pub fn wake_one(&self) -> bool {
        let woke = self.list.lock().wake_one::<S>();
        S::preempt_point();
        woke
    }

    /// Wakes every waiter.
    pub fn wake_all(&self) {
        self.list.lock().wake_all::<S>();
        S::preempt_point();
    }
}

/// A counter that tasks can wait on reaching a value (Linux's `completion`, counted).
pub struct Completion<S> {
    state: IrqSpinLock<(u64, WaitList)>,
    scheduler: PhantomData<fn() -> S>,
}

impl<S: Scheduler> Default for Completion<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Scheduler> Completion<S> {
    /// A completion at zero.
    pub const fn new() -> Self {
        Completion {
            state: IrqSpinLock::new((0, WaitList::new())),
            scheduler: PhantomData,
        }
    }

    /// Adds one and wakes the waiters.
    pub fn complete(&self) {
        {
            let mut state = self.state.lock();
            state.0 += 1;
            state.1.wake_all::<S>();
        }
        S::preempt_point();
    }

    /// Sleeps until the count reaches `target`.
    pub fn wait_for(&self, target: u64) {
        let guard = self.state.lock();
        drop(wait_until::<S, _>(
            &self.state,
            guard,
            |state| &mut state.1,
            |state| state.0 >= target,
        ));
    }

    /// The count.
    pub fn count(&self) -> u64 {
        self.state.lock().0
    }
}
