//! Device drivers: the PL011 UART and the GIC (v2 and v3).

pub mod gic;
pub mod mmio;
pub mod pl011;
