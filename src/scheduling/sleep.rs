//! Sleeping until a time: the calling task marked sleeping, its own
//! high-resolution timer armed to wake it (`wakeup::wake_from_timer`), and
//! the switch away.

use core::sync::atomic::Ordering;

use super::switch::schedule;
use super::wakeup::wake_from_timer;
use crate::arch::cpu::{irq_disable, irq_enable};
use crate::arch::timer::now_ns;
use crate::platform::hrtimer;
use crate::tasks::{TaskState, current, task};

/// Sleeps until the kernel clock reaches `deadline_ns`.
pub fn sleep_until(deadline_ns: u64) {
    irq_disable();
    sleep_masked(deadline_ns);
    irq_enable();
}

/// Sleeps until `deadline_ns` unless it has already come: returns whether
/// the task slept. Checked with interrupts masked, so neither the tick nor a
/// preemption can pass the deadline between the check and the sleep: a
/// deadline reached while the task was still running is no sleep, so no
/// wake-up and no latency (an rt-app timer event reached after its expiry,
/// docs/report-format.md, "Overruns"). `clock_nanosleep` of an absolute
/// time that has passed returns at once in the same way.
pub fn sleep_until_expiry(deadline_ns: u64) -> bool {
    irq_disable();
    let sleeps = now_ns() < deadline_ns;
    if sleeps {
        sleep_masked(deadline_ns);
    }
    irq_enable();
    sleeps
}

/// The sleep of [`sleep_until`] and [`sleep_until_expiry`], interrupts
/// masked: the current task marked sleeping, its timer armed for
/// `deadline_ns`, and the switch away; returns once the timer woke it.
fn sleep_masked(deadline_ns: u64) {
    let me = current();
    task(me)
        .state
        .store(TaskState::Sleeping as u8, Ordering::Release);
    hrtimer::start(
        hrtimer::task_timer(me.index()),
        deadline_ns,
        wake_from_timer,
        me.index(),
    );
    schedule();
}

/// Sleeps for `duration_ns`.
pub fn sleep_for(duration_ns: u64) {
    sleep_until(now_ns() + duration_ns);
}
