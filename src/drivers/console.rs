//! The console: the UART boot chose from the device tree (a PL011 or a
//! 16550), behind one `write_bytes` and one `drain` for the logger and exit.

use core::sync::atomic::{AtomicU8, Ordering};

use fairway_devicetree::{Uart, UartKind};

use super::{pl011, uart8250};

const NONE: u8 = 0;
const PL011: u8 = 1;
const NS16550: u8 = 2;

/// Which driver the console uses; `NONE` drops output.
static KIND: AtomicU8 = AtomicU8::new(NONE);

/// Makes `uart` the console.
///
/// # Safety
/// `uart.base` must be the register window of the UART `uart.kind` names,
/// identity mapped as Device memory for the kernel's lifetime.
pub unsafe fn init(uart: Uart) {
    match uart.kind {
        UartKind::Pl011 => {
            // SAFETY: the caller vouches for a PL011 window.
            unsafe { pl011::init(uart.base as usize) };
            KIND.store(PL011, Ordering::Release);
        }
        UartKind::Ns16550(layout) => {
            // SAFETY: the caller vouches for a 16550 window with this layout.
            unsafe { uart8250::init(uart.base as usize, layout) };
            KIND.store(NS16550, Ordering::Release);
        }
    }
}

/// Writes `bytes` to the console (dropped before `init`).
pub fn write_bytes(bytes: &[u8]) {
    match KIND.load(Ordering::Acquire) {
        PL011 => pl011::write_bytes(bytes),
        NS16550 => uart8250::write_bytes(bytes),
        _ => {}
    }
}

/// Waits until every byte written has left the console's UART.
pub fn drain() {
    match KIND.load(Ordering::Acquire) {
        PL011 => pl011::drain(),
        NS16550 => uart8250::drain(),
        _ => {}
    }
}
