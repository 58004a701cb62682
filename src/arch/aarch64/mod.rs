//! AArch64: boot, exceptions, MMU, context switch, the generic timer, PSCI and the
//! PMU cycle counter. Everything that touches a system register lives below here.

pub mod boot;
pub mod context;
pub mod cpu;
pub mod exception;
pub mod lazy;
pub mod mmu;
pub mod pmu;
pub mod psci;
pub mod timer;
