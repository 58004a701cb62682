//! High-resolution timers: one queue per CPU, ordered by expiry (a binary
//! min-heap with each timer's position recorded, so start and cancel are
//! O(log n)), and the generic timer programmed for the earliest expiry.
//!
//! Rules:
//! - A timer is started on the calling CPU's queue (restarting it elsewhere first
//!   cancels it there). Cancel works from any CPU.
//! - Callbacks run in interrupt context on the timer's CPU, with IRQs masked and
//!   **no timer-queue lock held**: they may start timers (even themselves) and take
//!   any lock allowed in interrupt context (see `sync`), but must not sleep.
//! - One interrupt runs the timers that had expired when it sampled the clock,
//!   then programs the comparator once (see [`interrupt`]).
//! - Each timer is identified by a [`TimerId`]: every task owns one (for sleeping),
//!   every CPU owns its scheduler tick and one spare for the scheduler.

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU16, Ordering};

use super::sync::IrqSpinLock;
use crate::arch::cpu::this_cpu;
use crate::arch::timer;
use crate::config::{MAX_CPUS, MAX_GROUPS, TASK_SLOTS};

/// What a timer calls when it expires, with the argument it was started with.
pub type Callback = fn(usize);

/// A timer, by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
pub struct TimerId(pub u16);

/// Timers in all: one per task slot, then two per CPU, then the period and
/// slack timers of each task group's bandwidth pool, then the timer of a
/// run's scheduled limit changes, then one per performance domain (at most
/// one per CPU) for its frequency changes.
pub const TIMER_SLOTS: usize = TASK_SLOTS + 2 * MAX_CPUS + 2 * MAX_GROUPS + 1 + MAX_CPUS;

/// The sleep timer of task slot `task`.
pub const fn task_timer(task: usize) -> TimerId {
    TimerId(task as u16)
}

/// CPU `cpu`'s scheduler tick.
pub const fn tick_timer(cpu: usize) -> TimerId {
    TimerId((TASK_SLOTS + cpu) as u16)
}

/// CPU `cpu`'s spare scheduler timer (slice end, `hrtick`).
pub const fn scheduler_timer(cpu: usize) -> TimerId {
    TimerId((TASK_SLOTS + MAX_CPUS + cpu) as u16)
}

/// The timer that writes a run's scheduled `cpu.max` changes.
pub const fn limit_change_timer() -> TimerId {
    TimerId((TASK_SLOTS + 2 * MAX_CPUS + 2 * MAX_GROUPS) as u16)
}

/// Performance domain `domain`'s frequency change (after the transition
/// latency).
pub const fn cpufreq_timer(domain: usize) -> TimerId {
    TimerId((TASK_SLOTS + 2 * MAX_CPUS + 2 * MAX_GROUPS + 1 + domain) as u16)
}

/// Task group `group`'s bandwidth period timer (`slack`: its slack timer).
pub const fn bandwidth_timer(group: usize, slack: bool) -> TimerId {
    TimerId((TASK_SLOTS + 2 * MAX_CPUS + 2 * group + slack as usize) as u16)
}

const NOT_QUEUED: u32 = u32::MAX;
const NO_CPU: u16 = u16::MAX;

struct TimerQueue {
    /// Timer ids, a min-heap on `expires`.
    heap: Vec<u16>,
    /// Per timer id: expiry (ns), position in `heap`, callback.
    expires: Vec<u64>,
    position: Vec<u32>,
    callback: Vec<(Callback, usize)>,
    /// The timer interrupt is running this queue's callbacks (Linux's
    /// `hrtimer_cpu_base::in_hrtirq`): a timer they start is not programmed
    /// into the comparator, the interrupt does it once when they are done.
    in_interrupt: bool,
}

fn nothing(_: usize) {}

impl TimerQueue {
    fn new() -> Self {
        TimerQueue {
            heap: Vec::with_capacity(TIMER_SLOTS),
            expires: vec![0; TIMER_SLOTS],
            position: vec![NOT_QUEUED; TIMER_SLOTS],
            callback: vec![(nothing as Callback, 0); TIMER_SLOTS],
            in_interrupt: false,
        }
    }

    /// Expiry order, ties broken by timer id: at one instant a task's
    /// sleep timer runs before the tick, the tick before the slice-end timer,
    /// then the bandwidth, limit-change and frequency timers, the order in
    /// which the simulator handles one instant's timer events
    /// (`sim/src/engine/mod.rs`), so that both see the same state at each.
    fn earlier(&self, a: usize, b: usize) -> bool {
        let (a, b) = (self.heap[a] as usize, self.heap[b] as usize);
        (self.expires[a], a) < (self.expires[b], b)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.position[self.heap[a] as usize] = a as u32;
        self.position[self.heap[b] as usize] = b as u32;
    }

    fn sift_up(&mut self, mut at: usize) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if !self.earlier(at, parent) {
                break;
            }
            self.swap(at, parent);
            at = parent;
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut smallest = at;
            if left < self.heap.len() && self.earlier(left, smallest) {
                smallest = left;
            }
            if right < self.heap.len() && self.earlier(right, smallest) {
                smallest = right;
            }
            if smallest == at {
                break;
            }
            self.swap(at, smallest);
            at = smallest;
        }
    }

    fn insert(&mut self, id: u16, expires: u64, callback: Callback, argument: usize) {
        self.expires[id as usize] = expires;
        self.callback[id as usize] = (callback, argument);
        self.position[id as usize] = self.heap.len() as u32;
        self.heap.push(id);
        self.sift_up(self.heap.len() - 1);
    }

    fn remove(&mut self, id: u16) -> bool {
        let at = self.position[id as usize];
        if at == NOT_QUEUED {
            return false;
        }
        let at = at as usize;
        let last = self.heap.len() - 1;
        self.swap(at, last);
        self.heap.pop();
        self.position[id as usize] = NOT_QUEUED;
        if at < self.heap.len() {
            self.sift_down(at);
            self.sift_up(at);
        }
        true
    }

    fn earliest(&self) -> Option<u64> {
        self.heap.first().map(|&id| self.expires[id as usize])
    }

    fn pop_expired(&mut self, now: u64) -> Option<(u16, Callback, usize)> {
        let &id = self.heap.first()?;
        if self.expires[id as usize] > now {
            return None;
        }
        self.remove(id);
        let (callback, argument) = self.callback[id as usize];
        Some((id, callback, argument))
    }

    fn program(&self) {
        match self.earliest() {
            Some(expires) => timer::program_oneshot(expires),
            None => timer::disarm(),
        }
    }
}

static QUEUES: [IrqSpinLock<Option<TimerQueue>>; MAX_CPUS] =
    [const { IrqSpinLock::new(None) }; MAX_CPUS];
static TIMER_CPU: [AtomicU16; TIMER_SLOTS] = [const { AtomicU16::new(NO_CPU) }; TIMER_SLOTS];

/// Allocates the queues of `cpus` CPUs (boot core, once).
pub fn init(cpus: usize) {
    for queue in QUEUES.iter().take(cpus) {
        *queue.lock() = Some(TimerQueue::new());
    }
}

/// Starts (or restarts) `timer` on this CPU to call `callback(argument)` at
/// `expires` (ns on the kernel clock).
pub fn start(timer: TimerId, expires: u64, callback: Callback, argument: usize) {
    // IRQs are masked before the CPU number is read: a task preempted and
    // migrated in between would queue the timer on its old CPU and program its
    // new CPU's comparator for it (see `scheduling::switch::schedule`).
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    cancel(timer);
    let mut guard = QUEUES[cpu].lock_masked(irq_state);
    let queue = guard
        .as_mut()
        .expect("timer queue used before hrtimer::init");
    queue.insert(timer.0, expires, callback, argument);
    TIMER_CPU[timer.0 as usize].store(cpu as u16, Ordering::Release);
    if queue.heap[0] == timer.0 && !queue.in_interrupt {
        queue.program();
    }
}

/// Stops `timer` if it is queued; returns whether it was.
pub fn cancel(timer: TimerId) -> bool {
    loop {
        let cpu = TIMER_CPU[timer.0 as usize].load(Ordering::Acquire);
        if cpu == NO_CPU {
            return false;
        }
        let mut guard = QUEUES[cpu as usize].lock();
        // The timer may have expired or moved since we read its CPU.
        if TIMER_CPU[timer.0 as usize].load(Ordering::Acquire) != cpu {
            continue;
        }
        TIMER_CPU[timer.0 as usize].store(NO_CPU, Ordering::Release);
        return guard.as_mut().is_some_and(|q| q.remove(timer.0));
    }
}

/// The timer interrupt: runs the callbacks of the timers that had expired when
/// it read the clock on entry, then programs the comparator for the next
/// expiry, once. This is how Linux's `hrtimer_interrupt` bounds its work:
/// `__hrtimer_run_queues` runs the timers expired at the time sampled on entry
/// (a timer that falls due while the callbacks run waits for the next
/// interrupt), and a timer a callback starts does not reprogram the clock
/// event device while `in_hrtirq` is set (`hrtimer_reprogram`).
///
/// Why it matters: re-reading the clock after every callback lets the loop
/// chase timers that fall due while it runs, and then it never returns, so
/// the reschedule a tick asked for waits (`preempt_on_irq_return`). Under
/// QEMU icount with every CPU busy, writing the comparator can cost the
/// writing vCPU 4-8 ms of virtual time (QEMU's round-robin moves on to the
/// other vCPUs when a timer deadline changes), more than a 4 ms tick period:
/// the old loop then ran tick after tick for up to ~100 ms (QEMU's
/// round-robin kick period) while the running task kept the CPU, which put
/// CFS up to 4 % off its weights on 4 CPUs (issue 4). A timer already due
/// when the comparator is programmed raises the interrupt again at once,
/// after `irq::handle_irq` has let the pending reschedule happen.
pub fn interrupt() {
    let cpu = this_cpu();
    let now = timer::now_ns();
    {
        let mut guard = QUEUES[cpu].lock();
        let Some(queue) = guard.as_mut() else {
            timer::disarm();
            return;
        };
        queue.in_interrupt = true;
    }
    loop {
        let expired = {
            let mut guard = QUEUES[cpu].lock();
            let queue = guard.as_mut().expect("the queue existed on entry");
            match queue.pop_expired(now) {
                Some((id, callback, argument)) => {
                    TIMER_CPU[id as usize].store(NO_CPU, Ordering::Release);
                    Some((callback, argument))
                }
                None => {
                    queue.in_interrupt = false;
                    queue.program();
                    None
                }
            }
        };
        match expired {
            Some((callback, argument)) => callback(argument),
            None => return,
        }
    }
}
