//! The Arm PL011 UART, transmit side: where the defmt log frames go.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::mmio::Mmio;

const DATA: usize = 0x00;
const FLAGS: usize = 0x18;
const CONTROL: usize = 0x30;
const FLAG_TRANSMIT_FULL: u32 = 1 << 5;
const CONTROL_ENABLE: u32 = 1 << 0;
const CONTROL_TRANSMIT_ENABLE: u32 = 1 << 8;

/// The UART's base address; 0 means "no UART yet" and output is dropped.
static BASE: AtomicUsize = AtomicUsize::new(0);

/// Uses the PL011 at `base` from now on.
///
/// # Safety
/// `base` must be the register window of a PL011, identity mapped as Device memory.
pub unsafe fn init(base: usize) {
    // SAFETY: the caller vouches for the window; 4 KiB is the PL011's size.
    let uart = unsafe { Mmio::new(base, 0x1000) };
    let control = uart.read32(CONTROL);
    uart.write32(CONTROL, control | CONTROL_ENABLE | CONTROL_TRANSMIT_ENABLE);
    BASE.store(base, Ordering::Release);
}

/// Writes `bytes`, waiting while the transmit FIFO is full.
pub fn write_bytes(bytes: &[u8]) {
    let base = BASE.load(Ordering::Acquire);
    if base == 0 {
        return;
    }
    // SAFETY: `base` was stored by `init`, whose caller vouched for it.
    let uart = unsafe { Mmio::new(base, 0x1000) };
    for &byte in bytes {
        while uart.read32(FLAGS) & FLAG_TRANSMIT_FULL != 0 {
            crate::arch::cpu::relax();
        }
        uart.write32(DATA, u32::from(byte));
    }
}
