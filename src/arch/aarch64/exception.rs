//! The exception vector table. IRQs go to the interrupt dispatch
//! (`platform::irq`, through its table of handlers), then to the hook
//! registered at boot for the way out ([`set_irq_exit`]: the scheduling
//! floor's preemption on return from interrupt); anything else is unexpected
//! in a kernel without user space, and is reported with the core, ESR, FAR
//! and ELR before the kernel stops with a failing status.

use core::arch::global_asm;

use aarch64_cpu::registers::{ESR_EL1, FAR_EL1, VBAR_EL1};
use spin::Once;
use tock_registers::interfaces::{Readable, Writeable};

/// Registers saved on the interrupted stack at exception entry.
#[repr(C)]
#[derive(Debug)]
pub struct TrapFrame {
    /// x0..x30, of which entry saves the caller-saved ones only: x0..x18
    /// and x30. The slots of x19..x29 are left unwritten, as the handler,
    /// an AAPCS64 function, preserves those registers itself (and a switch
    /// inside it saves them in the task's context); the return restores the
    /// ones saved.
    pub registers: [u64; 31],
    /// ELR_EL1: where the exception returns to.
    pub exception_link_register: u64,
    /// SPSR_EL1: the interrupted PSTATE.
    pub saved_program_status: u64,
    padding: u64,
}

const _: () = assert!(core::mem::size_of::<TrapFrame>() == 272);

global_asm!(
    r#"
.macro VECTOR kind
.balign 0x80
    sub     sp, sp, #272
    stp     x0, x1, [sp, #0]
    mov     x1, #\kind
    b       exception_common
.endm

.section .text.vectors, "ax"
.balign 0x800
.global exception_vector_table
exception_vector_table:
    VECTOR 0
    VECTOR 1
    VECTOR 2
    VECTOR 3
    VECTOR 4
    VECTOR 5
    VECTOR 6
    VECTOR 7
    VECTOR 8
    VECTOR 9
    VECTOR 10
    VECTOR 11
    VECTOR 12
    VECTOR 13
    VECTOR 14
    VECTOR 15

// Only the caller-saved registers: exception_dispatch, an AAPCS64
// function, preserves x19..x29 (see TrapFrame).
exception_common:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    str     x18, [sp, #144]
    mrs     x2, elr_el1
    stp     x30, x2, [sp, #240]
    mrs     x2, spsr_el1
    str     x2, [sp, #256]
    mov     x0, sp
    bl      {dispatch}
    ldr     x2, [sp, #256]
    msr     spsr_el1, x2
    ldp     x30, x2, [sp, #240]
    msr     elr_el1, x2
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldr     x18, [sp, #144]
    add     sp, sp, #272
    eret
"#,
    dispatch = sym exception_dispatch,
);

unsafe extern "C" {
    static exception_vector_table: u8;
}

/// Installs the vector table on this core.
pub fn install_vector_table() {
    let table = (&raw const exception_vector_table) as u64;
    VBAR_EL1.set(table);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// What runs on the way out of every IRQ, set once at boot.
static IRQ_EXIT: Once<fn()> = Once::new();

/// Sets what runs on the way out of every IRQ, once its interrupts are
/// handled (boot core, once, before any CPU unmasks IRQs): the scheduling
/// floor's preemption (Linux's `arm64_preempt_schedule_irq`). Registered
/// rather than named, so that the vector, at the bottom of the kernel,
/// calls nothing above it by name.
pub fn set_irq_exit(exit: fn()) {
    IRQ_EXIT.call_once(|| exit);
}

const KIND_NAMES: [&str; 4] = ["synchronous", "IRQ", "FIQ", "SError"];
const ORIGIN_NAMES: [&str; 4] = ["EL1 with SP0", "EL1", "EL0 (AArch64)", "EL0 (AArch32)"];

extern "C" fn exception_dispatch(frame: &mut TrapFrame, kind: u64) {
    match kind {
        // IRQ taken at EL1 with SP_EL1, which is how every task runs.
        5 => {
            crate::platform::irq::handle_irq();
            if let Some(exit) = IRQ_EXIT.get() {
                exit();
            }
        }
        // A synchronous exception at EL1 with SP_EL1: a data abort in the
        // lazy window is the first write to an arena page (`lazy`).
        4 if (ESR_EL1.get() >> 26) & 0x3f == 0x25
            && super::lazy::handle_fault(FAR_EL1.get(), ESR_EL1.get() & 0x3f) => {}
        _ => unexpected_exception(frame, kind),
    }
}

fn unexpected_exception(frame: &TrapFrame, kind: u64) -> ! {
    let esr = ESR_EL1.get();
    let exception_class = (esr >> 26) & 0x3f;
    defmt::error!(
        "unexpected {=str} exception from {=str} on CPU {=usize}: ESR={=u64:#x} (EC={=u64:#x}: {=str}) FAR={=u64:#x} ELR={=u64:#x} SPSR={=u64:#x}",
        KIND_NAMES[(kind & 3) as usize],
        ORIGIN_NAMES[((kind >> 2) & 3) as usize],
        crate::arch::cpu::this_cpu(),
        esr,
        exception_class,
        exception_class_name(exception_class),
        FAR_EL1.get(),
        frame.exception_link_register,
        frame.saved_program_status
    );
    crate::platform::exit::exit(crate::platform::exit::ExitCode::Failure)
}

fn exception_class_name(exception_class: u64) -> &'static str {
    match exception_class {
        0x00 => "unknown reason",
        0x01 => "WFI/WFE trapped",
        0x07 => "FP/SIMD access trapped (the kernel is soft-float)",
        0x0e => "illegal execution state",
        0x15 => "SVC",
        0x16 => "HVC",
        0x17 => "SMC",
        0x18 => "system register access trapped",
        0x20 | 0x21 => "instruction abort",
        0x22 => "PC alignment fault",
        0x24 | 0x25 => "data abort",
        0x26 => "SP alignment fault",
        0x2f => "SError",
        0x3c => "BRK",
        _ => "other",
    }
}

/// Executes a BRK instruction: an unexpected exception, for the test that shows
/// how one is reported.
pub fn trigger_breakpoint() {
    // SAFETY: BRK only raises a synchronous exception, which the vector table
    // reports before stopping the kernel; no memory is touched.
    unsafe { core::arch::asm!("brk #0x42", options(nomem, nostack)) };
}
