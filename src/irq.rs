//! Interrupt dispatch: SGIs (inter-processor requests) and the timer PPI.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::drivers::gic::GIC;
use crate::percpu;

/// The inter-processor requests, one SGI each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
#[repr(u32)]
pub enum Ipi {
    /// Call `schedule()` on return from the interrupt.
    Reschedule = 0,
    /// Enqueue the tasks on this CPU's wake list (remote wake-up).
    WakeUp = 1,
    /// Run the functions in this CPU's call-function mailbox.
    CallFunction = 2,
    /// Stop for good (`exit` parks the other CPUs before its last lines,
    /// so that nothing is printed after the verdict).
    Stop = 3,
}

static TIMER_INTID: AtomicU32 = AtomicU32::new(30);

/// Sets the timer's interrupt ID (from the device tree).
pub fn set_timer_intid(intid: u32) {
    TIMER_INTID.store(intid, Ordering::Relaxed);
}

/// The timer's interrupt ID.
pub fn timer_intid() -> u32 {
    TIMER_INTID.load(Ordering::Relaxed)
}

/// Sends `ipi` to `cpu`.
pub fn send_ipi(cpu: usize, ipi: Ipi) {
    if let Some(gic) = GIC.get() {
        gic.send_sgi(cpu, ipi as u32);
    }
}

/// Handles the pending interrupts (called from the IRQ vector, IRQs masked),
/// until one of them asks for a reschedule: the vector then returns through
/// `preempt_on_irq_return`, and whatever is still pending is taken as soon as
/// IRQs are unmasked again (at the latest in the next task). Acknowledging on
/// while a reschedule waits would let a timer that keeps falling due (see
/// `hrtimer::interrupt`) postpone the preemption indefinitely.
pub fn handle_irq() {
    let Some(gic) = GIC.get() else { return };
    let this = percpu::this();
    this.irq_depth.fetch_add(1, Ordering::Relaxed);
    while let Some(intid) = gic.acknowledge() {
        this.interrupts.fetch_add(1, Ordering::Relaxed);
        match intid {
            0 => this.need_resched.store(true, Ordering::Relaxed),
            1 => crate::task::process_wake_list(),
            2 => crate::smp::process_calls(),
            3 => crate::arch::cpu::halt(),
            id if id == timer_intid() => crate::hrtimer::interrupt(),
            other => defmt::warn!("unexpected interrupt {=u32}", other),
        }
        gic.end_of_interrupt(intid);
        if this.need_resched.load(Ordering::Relaxed) {
            break;
        }
    }
    this.irq_depth.fetch_sub(1, Ordering::Relaxed);
}
