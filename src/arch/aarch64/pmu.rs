//! The PMU cycle counter, the source of Fairway's cost figures. Under QEMU
//! with `-icount shift=0` it counts instructions exactly; on boards, cycles.

use core::sync::atomic::{AtomicBool, Ordering};

/// Whether the boot core found a PMU (ID_AA64DFR0_EL1.PMUVer).
static AVAILABLE: AtomicBool = AtomicBool::new(false);

/// Whether this CPU has an architected PMU: ID_AA64DFR0_EL1.PMUVer (bits
/// 11:8) is neither 0 (none) nor 0xf (an implementation-defined one).
fn pmu_implemented() -> bool {
    let dfr0: u64;
    // SAFETY: reads an ID register, always readable at EL1, no side effect.
    unsafe {
        core::arch::asm!("mrs {v}, id_aa64dfr0_el1", v = out(reg) dfr0, options(nostack, nomem))
    };
    !matches!((dfr0 >> 8) & 0xf, 0 | 0xf)
}

/// Whether the cycle counter counts (reported as the report's
/// `cycle_counter`): set once the boot core enabled it.
pub fn cycle_counter_available() -> bool {
    AVAILABLE.load(Ordering::Relaxed)
}

/// Enables the cycle counter at EL1 on this core and resets it, when the CPU
/// has a PMU (without one the PMU registers are undefined and left alone;
/// the cost figures then read whatever `cycles` gives, see
/// [`cycle_counter_available`]).
pub fn enable_cycle_counter() {
    if !pmu_implemented() {
        return;
    }
    AVAILABLE.store(true, Ordering::Relaxed);
    // SAFETY: PMU configuration registers of this core only: PMCR_EL0.E|C (enable,
    // reset the cycle counter), PMCCFILTR_EL0 = count at EL1 (and EL2), PMCNTENSET_EL0.C.
    unsafe {
        core::arch::asm!(
            "msr pmccfiltr_el0, xzr",
            "mrs {tmp}, pmcr_el0",
            "mov {bits}, #5",
            "orr {tmp}, {tmp}, {bits}",
            "msr pmcr_el0, {tmp}",
            "mov {tmp}, #(1 << 31)",
            "msr pmcntenset_el0, {tmp}",
            "isb",
            tmp = out(reg) _,
            bits = out(reg) _,
            options(nostack)
        )
    };
}

/// The cycle counter (instructions under QEMU icount).
#[inline(always)]
pub fn cycles() -> u64 {
    let value: u64;
    // SAFETY: reads PMCCNTR_EL0, a side-effect-free read of this core's counter;
    // the `isb` keeps earlier instructions from being counted late.
    unsafe {
        core::arch::asm!("isb", "mrs {v}, pmccntr_el0", v = out(reg) value, options(nostack, nomem))
    };
    value
}
