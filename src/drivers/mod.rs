//! Device drivers: the console UARTs (PL011, 16550) and the GIC (v2 and v3).

pub mod console;
pub mod gic;
pub mod pl011;
pub mod registers;
pub mod uart8250;
