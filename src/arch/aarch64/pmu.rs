//! The PMU cycle counter, the instrument of Fairway's cost figures. Under QEMU
//! with `-icount shift=0` it counts instructions exactly; on boards, cycles.

/// Enables the cycle counter at EL1 on this core and resets it.
pub fn enable_cycle_counter() {
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
