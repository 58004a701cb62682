//! defmt logging over the console UART (`drivers::console`), and the panic handler.
//!
//! Frames are rzCOBS-encoded defmt frames; the host runner (`xtask`) decodes them
//! with the kernel image's symbol table. One global lock (IRQs masked, so an
//! interrupt handler may log) keeps frames of different cores whole; a core that
//! panics while it holds the lock goes on, so that its last words come out.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::cpu::{IrqState, irq_restore, irq_save, this_cpu};

const NO_OWNER: usize = usize::MAX;

struct LoggerState {
    owner: AtomicUsize,
    encoder: UnsafeCell<defmt::Encoder>,
    irq_state: UnsafeCell<Option<IrqState>>,
}

// SAFETY: `encoder` and `irq_state` are only touched by the core recorded in
// `owner`, between `acquire` and `release`.
unsafe impl Sync for LoggerState {}

static STATE: LoggerState = LoggerState {
    owner: AtomicUsize::new(NO_OWNER),
    encoder: UnsafeCell::new(defmt::Encoder::new()),
    irq_state: UnsafeCell::new(None),
};

#[defmt::global_logger]
struct Logger;

// SAFETY: `acquire` takes a lock that `release` releases; `write` and `flush` are
// only called in between, by the owning core, as defmt guarantees.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        let irq_state = irq_save();
        let cpu = this_cpu();
        if STATE.owner.load(Ordering::Relaxed) != cpu {
            while STATE
                .owner
                .compare_exchange_weak(NO_OWNER, cpu, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                crate::arch::cpu::relax();
            }
        }
        // SAFETY: this core owns the logger now.
        unsafe {
            *STATE.irq_state.get() = Some(irq_state);
            (*STATE.encoder.get()).start_frame(crate::drivers::console::write_bytes);
        }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: called by the owning core after `acquire`.
        let irq_state = unsafe {
            (*STATE.encoder.get()).end_frame(crate::drivers::console::write_bytes);
            (*STATE.irq_state.get()).take()
        };
        STATE.owner.store(NO_OWNER, Ordering::Release);
        if let Some(state) = irq_state {
            irq_restore(state);
        }
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: called by the owning core between `acquire` and `release`.
        unsafe { (*STATE.encoder.get()).write(bytes, crate::drivers::console::write_bytes) };
    }
}

defmt::timestamp!("{=u64:us}", crate::arch::timer::now_ns() / 1000);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    crate::arch::cpu::irq_disable();
    match info.location() {
        Some(location) => defmt::error!(
            "panic on CPU {=usize} at {=str}:{=u32}: {}",
            this_cpu(),
            location.file(),
            location.line(),
            defmt::Display2Format(&info.message())
        ),
        None => defmt::error!(
            "panic on CPU {=usize}: {}",
            this_cpu(),
            defmt::Display2Format(&info.message())
        ),
    }
    super::exit::exit(super::exit::ExitCode::Failure)
}

#[defmt::panic_handler]
fn defmt_panic() -> ! {
    core::panic!("defmt panic")
}
