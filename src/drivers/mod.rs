//! Device drivers: the PL011 UART and the GIC (v2 and v3).

pub mod gic;
pub mod pl011;
pub mod registers;
