//! 16550/8250-compatible UARTs, transmit side: the console of most Arm boards
//! (RK3399's DesignWare APB UART, `snps,dw-apb-uart`, among them).
//!
//! Written from the 16550's documented register set: THR (transmit holding
//! register) is register 0, LSR (line status) register 5, whose bit 5 (THRE)
//! says the transmitter can take a byte and bit 6 (TEMT) that the transmitter
//! is empty, shift register included. Register `n` is at `n << reg-shift` and
//! accessed `reg-io-width` bytes wide (`fairway_devicetree::Ns16550Layout`),
//! so the window has no fixed layout and the accesses are plain volatile
//! loads and stores rather than a `register_structs!` block.
//!
//! The driver never programs the baud rate, the line format or the FIFOs: the
//! firmware (U-Boot, TF-A) set the console up before the kernel started, and
//! reprogramming the divisor would need the UART's input clock, which the
//! device tree gives as a clock phandle Fairway does not follow.
//!
//! QEMU virt has no 16550: the case `hil-16550-console-raspi3b` runs this
//! driver on QEMU raspi3b's mini UART (16550 registers 4 bytes apart), and
//! its register arithmetic is host-tested in `fairway_devicetree`.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

pub use fairway_devicetree::Ns16550Layout;

/// THR: a write transmits the low byte.
const THR: usize = 0;
/// LSR: the line status.
const LSR: usize = 5;
/// LSR.THRE: the transmit holding register (or FIFO) is empty.
const LSR_THRE: u32 = 1 << 5;
/// LSR.TEMT: the holding register and the shift register are both empty.
const LSR_TEMT: u32 = 1 << 6;

/// The UART's base address; 0 means "no UART yet" and output is dropped.
static BASE: AtomicUsize = AtomicUsize::new(0);
/// `reg-shift`.
static REG_SHIFT: AtomicU8 = AtomicU8::new(0);
/// `reg-io-width` in bytes (1 or 4).
static REG_IO_WIDTH: AtomicU8 = AtomicU8::new(1);

/// Uses the 16550 at `base` with `layout` from now on.
///
/// # Safety
/// `base` must be the register window of a 16550-compatible UART laid out as
/// `layout` says, identity mapped as Device memory for the kernel's lifetime.
pub unsafe fn init(base: usize, layout: Ns16550Layout) {
    REG_SHIFT.store(layout.reg_shift, Ordering::Relaxed);
    REG_IO_WIDTH.store(layout.reg_io_width, Ordering::Relaxed);
    BASE.store(base, Ordering::Release);
}

/// The window, once `init` ran.
fn window() -> Option<(usize, Ns16550Layout)> {
    let base = BASE.load(Ordering::Acquire);
    (base != 0).then(|| {
        (
            base,
            Ns16550Layout {
                reg_shift: REG_SHIFT.load(Ordering::Relaxed),
                reg_io_width: REG_IO_WIDTH.load(Ordering::Relaxed),
            },
        )
    })
}

fn read(base: usize, layout: Ns16550Layout, register: usize) -> u32 {
    let access = layout.register(register);
    let address = base + access.offset;
    if access.width == 4 {
        // SAFETY: `init`'s caller vouched that the window holds the UART's
        // registers at `n << reg-shift`, 32 bits wide, in Device memory.
        unsafe { core::ptr::read_volatile(address as *const u32) }
    } else {
        // SAFETY: as above, 8 bits wide.
        u32::from(unsafe { core::ptr::read_volatile(address as *const u8) })
    }
}

fn write(base: usize, layout: Ns16550Layout, register: usize, value: u8) {
    let access = layout.register(register);
    let address = base + access.offset;
    if access.width == 4 {
        // SAFETY: as in `read`; THR takes a 32-bit write whose low byte is sent.
        unsafe { core::ptr::write_volatile(address as *mut u32, u32::from(value)) }
    } else {
        // SAFETY: as in `read`, 8 bits wide.
        unsafe { core::ptr::write_volatile(address as *mut u8, value) }
    }
}

/// Writes `bytes`, waiting for THRE before each.
pub fn write_bytes(bytes: &[u8]) {
    let Some((base, layout)) = window() else {
        return;
    };
    for &byte in bytes {
        while read(base, layout, LSR) & LSR_THRE == 0 {
            crate::arch::cpu::relax();
        }
        write(base, layout, THR, byte);
    }
}

/// Waits for TEMT: every byte written has left the UART, so that powering
/// off right after does not cut the last frame short.
pub fn drain() {
    let Some((base, layout)) = window() else {
        return;
    };
    while read(base, layout, LSR) & LSR_TEMT == 0 {
        crate::arch::cpu::relax();
    }
}
