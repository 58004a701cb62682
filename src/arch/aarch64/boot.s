// Fairway's first instructions, on every core.
//
// The boot core enters at _start (x0 = device tree address, or 0 for an ELF
// loaded by QEMU); the others enter at _secondary_start through PSCI CPU_ON, with
// their logical CPU number in x0. Both paths drop from EL2 to EL1 when entered at
// EL2, turn the MMU and caches on (identity map) before any Rust code runs, and
// only then set up a stack. No memory is written before the MMU is on, except by
// the boot core clearing BSS (plain aligned stores).

.section .text.boot, "ax"

// The arm64 Linux Image header (Documentation/arch/arm64/booting.rst), so that a
// flat binary of the kernel boots like Linux: 2 MiB above a 2 MiB-aligned base,
// with the device tree address in x0. An ELF boot simply branches over it. The
// kernel is not relocatable: it must run at its link address (RAM_START + 2 MiB,
// linker.ld), so flags bit 3 ("the base may be anywhere") tells U-Boot's booti to
// leave an Image loaded there where it is, instead of moving it to the start of
// the board's first DRAM bank.
.global _start
_start:
    b       primary_entry           // code0
    .word   0                       // code1
    .quad   0x200000                // text_offset: 2 MiB above the RAM base
    .quad   __kernel_image_size     // image_size, BSS included
    .quad   0xa                     // flags: little-endian, 4 KiB pages, base anywhere
    .quad   0, 0, 0                 // reserved
    .ascii  "ARM\x64"              // magic
    .word   0                       // reserved

primary_entry:
    mov     x19, x0                 // device tree address (0: at RAM base)
    mov     x20, #0                 // logical CPU 0
    mrs     x21, CurrentEL          // the exception level we were entered at
    bl      el1_with_mmu

    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
1:  cmp     x1, x2
    b.hs    2f
    stp     xzr, xzr, [x1], #16
    b       1b
2:  bl      set_boot_stack
    mov     x0, x19
    lsr     x1, x21, #2
    bl      kernel_init_primary
    b       park

.global _secondary_start
_secondary_start:
    mov     x20, x0                 // logical CPU number (PSCI context id)
    bl      el1_with_mmu
    bl      set_boot_stack
    mov     x0, x20
    bl      kernel_init_secondary
    b       park

// sp = BOOT_STACKS + (x20 + 1) * BOOT_STACK_SIZE
set_boot_stack:
    adrp    x1, {boot_stacks}
    add     x1, x1, :lo12:{boot_stacks}
    add     x2, x20, #1
    mov     x3, #{boot_stack_size}
    madd    x1, x2, x3, x1
    mov     sp, x1
    ret

park:
    wfe
    b       park

// Leaves the core at EL1h with interrupts masked and the MMU on.
el1_with_mmu:
    mrs     x0, CurrentEL
    lsr     x0, x0, #2
    cmp     x0, #2
    b.eq    from_el2
    cmp     x0, #1
    b.ne    park                    // EL3 is not supported (QEMU: do not use secure=on)
    b       at_el1

from_el2:
    mrs     x0, midr_el1            // EL1 reads of MIDR/MPIDR return these
    msr     vpidr_el2, x0
    mrs     x0, mpidr_el1
    msr     vmpidr_el2, x0
    mov     x0, #(1 << 31)          // HCR_EL2.RW: EL1 is AArch64; nothing trapped
    msr     hcr_el2, x0
    mov     x0, #3                  // CNTHCTL_EL2.EL1PCTEN | EL1PCEN: EL1 owns the physical timer
    msr     cnthctl_el2, x0
    msr     cntvoff_el2, xzr
    mov     x0, #0x33ff             // CPTR_EL2: RES1 bits, no traps
    msr     cptr_el2, x0
    mrs     x0, id_aa64pfr0_el1     // GIC system registers implemented?
    ubfx    x0, x0, #24, #4
    cbz     x0, 1f
    mrs     x0, S3_4_C12_C9_5       // ICC_SRE_EL2: SRE | DFB | DIB | Enable (EL1 may use SRE)
    orr     x0, x0, #0xf
    msr     S3_4_C12_C9_5, x0
    isb
1:  mov     x0, #0x0800             // SCTLR_EL1: RES1 bits only, MMU off
    movk    x0, #0x30d0, lsl #16
    msr     sctlr_el1, x0
    mov     x0, #0x3c5              // SPSR_EL2: EL1h, DAIF masked
    msr     spsr_el2, x0
    adr     x0, at_el1
    msr     elr_el2, x0
    eret

at_el1:
    msr     daifset, #0xf
    mov     x0, #0xff04             // MAIR: attr0 Device-nGnRE, attr1 Normal WB RA WA
    msr     mair_el1, x0
    // TCR: T0SZ=25 (39-bit VA, walk from level 1), IRGN0/ORGN0 WB WA, SH0 inner,
    // 4 KiB granule, EPD1 (no TTBR1 walks), IPS = the PA range the core has.
    mov     x0, #(25 | (1 << 8) | (1 << 10) | (3 << 12))
    orr     x0, x0, #(1 << 23)
    mrs     x1, id_aa64mmfr0_el1
    and     x1, x1, #7
    bfi     x0, x1, #32, #3
    msr     tcr_el1, x0
    adrp    x0, {boot_page_table}
    msr     ttbr0_el1, x0
    isb
    tlbi    vmalle1
    ic      iallu
    dsb     nsh
    isb
    mrs     x0, sctlr_el1
    mov     x1, #((1 << 0) | (1 << 2) | (1 << 12))   // M | C | I
    orr     x0, x0, x1
    msr     sctlr_el1, x0
    isb
    ret
