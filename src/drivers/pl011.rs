//! The Arm PL011 UART, transmit side: where the defmt log frames go.

use core::sync::atomic::{AtomicUsize, Ordering};

use tock_registers::interfaces::{ReadWriteable, Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite};
use tock_registers::{register_bitfields, register_structs};

use super::registers::DeviceRegisters;

register_bitfields! {
    u32,
    /// UARTFR, the flag register.
    FR [
        /// UART busy: a byte is still being shifted out.
        BUSY OFFSET(3) NUMBITS(1) [],
        /// Transmit FIFO full.
        TXFF OFFSET(5) NUMBITS(1) []
    ],
    /// UARTCR, the control register.
    CR [
        /// UART enable.
        UARTEN OFFSET(0) NUMBITS(1) [],
        /// Transmit enable.
        TXE OFFSET(8) NUMBITS(1) []
    ]
}

register_structs! {
    /// The PL011's 4 KiB window; only the registers the driver uses are named.
    Registers {
        /// UARTDR: a write transmits the low byte.
        (0x000 => dr: ReadWrite<u32>),
        (0x004 => _reserved0),
        (0x018 => fr: ReadOnly<u32, FR::Register>),
        (0x01c => _reserved1),
        (0x030 => cr: ReadWrite<u32, CR::Register>),
        (0x034 => _reserved2),
        (0x1000 => @END),
    }
}

/// The UART's base address; 0 means "no UART yet" and output is dropped.
static BASE: AtomicUsize = AtomicUsize::new(0);

/// Uses the PL011 at `base` from now on.
///
/// # Safety
/// `base` must be the register window of a PL011, identity mapped as Device memory.
pub unsafe fn init(base: usize) {
    // SAFETY: the caller vouches for the window.
    let uart = unsafe { DeviceRegisters::<Registers>::new(base) };
    uart.cr.modify(CR::UARTEN::SET + CR::TXE::SET);
    BASE.store(base, Ordering::Release);
}

/// Writes `bytes`, waiting while the transmit FIFO is full.
pub fn write_bytes(bytes: &[u8]) {
    let base = BASE.load(Ordering::Acquire);
    if base == 0 {
        return;
    }
    // SAFETY: `base` was stored by `init`, whose caller vouched for it.
    let uart = unsafe { DeviceRegisters::<Registers>::new(base) };
    for &byte in bytes {
        while uart.fr.is_set(FR::TXFF) {
            crate::arch::cpu::relax();
        }
        uart.dr.set(u32::from(byte));
    }
}

/// Waits until every byte written has left the UART, so that powering off
/// right after does not cut the last frame short on a board.
pub fn drain() {
    let base = BASE.load(Ordering::Acquire);
    if base == 0 {
        return;
    }
    // SAFETY: `base` was stored by `init`, whose caller vouched for it.
    let uart = unsafe { DeviceRegisters::<Registers>::new(base) };
    while uart.fr.is_set(FR::BUSY) {
        crate::arch::cpu::relax();
    }
}
