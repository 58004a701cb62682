//! Interrupt dispatch: SGIs (inter-processor requests) and the timer PPI,
//! through a table of handlers filled at boot.
//!
//! The table is why this floor never names what runs above it: the
//! scheduling floor registers its wake-up IPI handler, the timer queue
//! registers the timer PPI's, and dispatch only looks the number up (as
//! rust-raspberrypi-OS-tutorials' `irq_manager().register_handler` and
//! Linux's `request_irq` do).
//!
//! ```text
//!   vector ─► handle_irq ─► GIC acknowledge ─► HANDLERS[intid]() ─► GIC end of interrupt
//!     └──► the way-out hook (exception::set_irq_exit: preemption)
//!                                               registered at boot:
//!                                                 SGI 0 reschedule  (percpu flag)
//!                                                 SGI 1 wake-up     (scheduling)
//!                                                 SGI 2 call-function (smp)
//!                                                 SGI 3 stop        (arch halt)
//!                                                 timer PPI         (hrtimer)
//! ```

use core::sync::atomic::{AtomicU32, Ordering};

use spin::Once;

use super::percpu;
use crate::drivers::gic::GIC;

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

/// What an interrupt runs: in interrupt context, IRQs masked, on the CPU
/// that took it.
pub type Handler = fn();

/// Interrupt IDs with a handler: the SGIs (0..16) and the PPIs (16..32),
/// the only interrupts Fairway takes.
pub const HANDLED_INTIDS: usize = 32;

/// The handlers, by interrupt ID, each set once at boot.
static HANDLERS: [Once<Handler>; HANDLED_INTIDS] = [const { Once::new() }; HANDLED_INTIDS];

/// A handler was registered twice for one interrupt, or for one beyond
/// [`HANDLED_INTIDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
pub struct RegisterError {
    /// The interrupt ID.
    pub intid: u32,
}

/// Registers `handler` for interrupt `intid` (boot core, before any CPU
/// unmasks IRQs). Each interrupt has one handler, set once.
pub fn register_handler(intid: u32, handler: Handler) -> Result<(), RegisterError> {
    let slot = HANDLERS
        .get(intid as usize)
        .ok_or(RegisterError { intid })?;
    let mut registered = false;
    slot.call_once(|| {
        registered = true;
        handler
    });
    if registered {
        Ok(())
    } else {
        Err(RegisterError { intid })
    }
}

/// The reschedule IPI's handler: sets this CPU's `need_resched`, which the
/// return from the interrupt reads.
pub fn set_need_resched() {
    percpu::this().need_resched.store(true, Ordering::Relaxed);
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
/// the preemption on return from interrupt, and whatever is still pending is
/// taken as soon as IRQs are unmasked again (at the latest in the next task).
/// Acknowledging on while a reschedule waits would let a timer that keeps
/// falling due (see `hrtimer::interrupt`) postpone the preemption
/// indefinitely.
pub fn handle_irq() {
    let Some(gic) = GIC.get() else { return };
    let this = percpu::this();
    // Only this CPU writes its counters, and IRQs are masked: plain loads
    // and stores (ARMv8.0 has no atomic add; `fetch_add` is a loop on the
    // exclusive monitor).
    let depth = this.irq_depth.load(Ordering::Relaxed);
    this.irq_depth.store(depth + 1, Ordering::Relaxed);
    while let Some(intid) = gic.acknowledge() {
        let interrupts = this.interrupts.load(Ordering::Relaxed);
        this.interrupts
            .store(interrupts.wrapping_add(1), Ordering::Relaxed);
        match HANDLERS.get(intid as usize).and_then(Once::get) {
            Some(handler) => handler(),
            None => defmt::warn!("unexpected interrupt {=u32}", intid),
        }
        gic.end_of_interrupt(intid);
        if this.need_resched.load(Ordering::Relaxed) {
            break;
        }
    }
    this.irq_depth.store(depth, Ordering::Relaxed);
}
