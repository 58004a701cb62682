//! Per-core operations: which core am I, interrupt masking, waiting.

use aarch64_cpu::asm;
use aarch64_cpu::registers::{DAIF, MPIDR_EL1, TPIDR_EL1};
use tock_registers::interfaces::{Readable, Writeable};

/// This core's logical number (set at boot in TPIDR_EL1).
#[inline(always)]
pub fn this_cpu() -> usize {
    TPIDR_EL1.get() as usize
}

/// Records this core's logical number; called once per core at boot.
pub fn set_this_cpu(cpu: usize) {
    TPIDR_EL1.set(cpu as u64);
}

/// This core's affinity fields of MPIDR_EL1 (Aff3..Aff0), as the device tree's
/// `cpu` nodes give them in `reg`.
pub fn mpidr() -> u64 {
    MPIDR_EL1.get() & 0xff_00ff_ffff
}

/// The interrupt mask state saved by [`irq_save`].
#[derive(Clone, Copy, Debug)]
pub struct IrqState(u64);

impl IrqState {
    /// The current state with IRQs unmasked: what a new task starts with.
    pub fn enabled() -> Self {
        IrqState(DAIF.get() & !(1 << 7))
    }
}

/// Masks IRQs on this core and returns the previous state.
#[inline(always)]
pub fn irq_save() -> IrqState {
    let state = IrqState(DAIF.get());
    // SAFETY: `msr daifset` only masks interrupts on this core; no memory is touched.
    unsafe { core::arch::asm!("msr daifset, #2", options(nomem, nostack, preserves_flags)) };
    state
}

/// Restores the IRQ mask state saved by [`irq_save`].
#[inline(always)]
pub fn irq_restore(state: IrqState) {
    // The compiler must not move memory accesses of the critical section past this.
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    DAIF.set(state.0);
}

/// Unmasks IRQs on this core.
#[inline(always)]
pub fn irq_enable() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    // SAFETY: `msr daifclr` only unmasks interrupts on this core.
    unsafe { core::arch::asm!("msr daifclr, #2", options(nomem, nostack, preserves_flags)) };
}

/// Masks IRQs on this core.
#[inline(always)]
pub fn irq_disable() {
    // SAFETY: `msr daifset` only masks interrupts on this core.
    unsafe { core::arch::asm!("msr daifset, #2", options(nomem, nostack, preserves_flags)) };
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// The pause inside a spin loop: the `YIELD` hint. On hardware it is a hint
/// for SMT siblings; under QEMU's single-threaded round-robin (icount) it ends
/// the spinning vCPU's turn, so the CPU holding the lock gets to run and release
/// it instead of the spinner burning its whole time budget (`isb`, which
/// `core::hint::spin_loop` emits, does not).
#[inline(always)]
pub fn relax() {
    // SAFETY: YIELD is a hint with no architectural effect on state or memory.
    unsafe { core::arch::asm!("yield", options(nomem, nostack, preserves_flags)) };
}

/// `COUNT` `NOP` instructions in a row: `COUNT` instructions of time that
/// touch no memory, no system register and no interrupt mask.
///
/// Busy loops put them between two reads of the clock. Under QEMU's TCG a
/// read of the task's runtime (the counter, with interrupts masked around it)
/// ends a translated block and goes back to QEMU's loop, which costs far more
/// host time than the instructions themselves, while a straight run of `NOP`s
/// is one block that QEMU translates to nothing but its instruction count
/// (docs/icount.md, "Busy loops hand the turn on").
#[inline(always)]
pub fn nops<const COUNT: usize>() {
    // SAFETY: NOP has no architectural effect on state or memory.
    unsafe {
        core::arch::asm!(
            ".rept {count}",
            "nop",
            ".endr",
            count = const COUNT,
            options(nomem, nostack, preserves_flags),
        )
    };
}

/// Waits for an interrupt (returns at once if one is pending, even masked).
#[inline(always)]
pub fn wait_for_interrupt() {
    asm::wfi();
}

/// Stops this core for good.
pub fn halt() -> ! {
    loop {
        irq_disable();
        asm::wfe();
    }
}
