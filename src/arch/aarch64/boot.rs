//! Entry points: the boot core's `_start` and the secondaries' `_secondary_start`
//! (see `boot.s`), per-core boot stacks, and the hand-over to Rust.

use core::arch::global_asm;

use crate::config::MAX_CPUS;

/// Size of each core's boot stack, which becomes that core's idle-task stack.
pub const BOOT_STACK_SIZE: usize = 64 * 1024;

/// One boot stack per possible core, in BSS.
#[repr(C, align(16))]
pub struct BootStacks([[u8; BOOT_STACK_SIZE]; MAX_CPUS]);

/// The boot stacks; only `boot.s` names them (it computes each core's top).
pub static BOOT_STACKS: BootStacks = BootStacks([[0; BOOT_STACK_SIZE]; MAX_CPUS]);

global_asm!(
    include_str!("boot.s"),
    boot_stacks = sym BOOT_STACKS,
    boot_stack_size = const BOOT_STACK_SIZE,
    boot_page_table = sym super::mmu::BOOT_PAGE_TABLE,
);

// `boot.s` enters Rust at `kernel_init_primary` and `kernel_init_secondary`,
// by symbol: the boot code at the bottom of the kernel hands control to the
// ordered boot at the top (`crate::init`, which exports the two names), as
// Linux's `head.S` enters `start_kernel`, without this floor naming the one
// above it.

unsafe extern "C" {
    /// The secondary cores' entry point, handed to PSCI CPU_ON.
    pub fn _secondary_start();
}

/// The physical address at which secondary cores start (identity mapped).
pub fn secondary_entry_address() -> u64 {
    _secondary_start as *const () as u64
}
