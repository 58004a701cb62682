//! The platform floor, the lowest of the kernel's floors (with [`crate::arch`],
//! [`crate::drivers`], [`crate::config`] and [`crate::board`]): what every
//! other floor stands on, and nothing that knows about tasks or scheduling.
//!
//! Locks ([`sync`]), per-CPU data ([`percpu`]), the heap ([`heap`]), interrupt
//! dispatch through a table of handlers registered at boot ([`irq`]), IPIs and
//! secondary start ([`smp`]), high-resolution timers ([`hrtimer`]), logging
//! ([`logger`]) and the end of a run ([`exit`]).
//!
//! Code here calls nothing above it by name: what the floors above want run
//! on an interrupt or a timer, they register (a handler in the IRQ table, a
//! callback with its timer), so control comes back up only through a
//! function pointer the upper floor handed down.

pub mod exit;
pub mod heap;
pub mod hrtimer;
pub mod irq;
mod logger;
pub mod percpu;
pub mod smp;
pub mod sync;

use irq::{Ipi, RegisterError, register_handler};

/// Registers the interrupt handlers this floor owns (boot core, once, before
/// any CPU unmasks IRQs): the reschedule IPI (it only sets the CPU's
/// `need_resched`), the call-function IPI, the stop IPI and the timer PPI,
/// `timer_intid` (from the device tree).
pub fn register_interrupt_handlers(timer_intid: u32) -> Result<(), RegisterError> {
    irq::set_timer_intid(timer_intid);
    register_handler(Ipi::Reschedule as u32, irq::set_need_resched)?;
    register_handler(Ipi::CallFunction as u32, smp::process_calls)?;
    register_handler(Ipi::Stop as u32, || crate::arch::cpu::halt())?;
    register_handler(timer_intid, hrtimer::interrupt)
}
