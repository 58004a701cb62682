//! The boot identity map: one level-1 table of 1 GiB blocks, built at compile time
//! so that `boot.s` can turn the MMU and caches on before any Rust code (and any
//! lock) runs.
//!
//! ```text
//!  VA = PA     0 ─ 1 GiB      Device-nGnRE, never executable (GIC, UART, ...)
//!              1 ─ 256 GiB    Normal write-back, inner shareable (RAM)
//!            256 ─ 512 GiB    Device-nGnRE (QEMU virt's high MMIO)
//! ```
//! This is QEMU virt's memory map; [`check_memory_is_mapped`] refuses a device
//! tree whose RAM lies outside the normal range.

/// Translation table entries: a 4 KiB-aligned level-1 table.
#[repr(C, align(4096))]
pub struct PageTable(pub [u64; 512]);

const BLOCK: u64 = 0b01;
const ACCESS_FLAG: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 3 << 8;
const ATTR_DEVICE: u64 = 0 << 2;
const ATTR_NORMAL: u64 = 1 << 2;
const PRIVILEGED_EXECUTE_NEVER: u64 = 1 << 53;
const UNPRIVILEGED_EXECUTE_NEVER: u64 = 1 << 54;
const GIB: u64 = 1 << 30;

/// First and one-past-last GiB mapped as normal memory.
pub const NORMAL_MEMORY: core::ops::Range<u64> = GIB..256 * GIB;

const fn identity_map() -> PageTable {
    let mut entries = [0u64; 512];
    let mut i = 0;
    while i < 512 {
        let address = i as u64 * GIB;
        entries[i] = if address >= NORMAL_MEMORY.start && address < NORMAL_MEMORY.end {
            address
                | BLOCK
                | ACCESS_FLAG
                | INNER_SHAREABLE
                | ATTR_NORMAL
                | UNPRIVILEGED_EXECUTE_NEVER
        } else {
            address
                | BLOCK
                | ACCESS_FLAG
                | ATTR_DEVICE
                | PRIVILEGED_EXECUTE_NEVER
                | UNPRIVILEGED_EXECUTE_NEVER
        };
        i += 1;
    }
    PageTable(entries)
}

/// The table `boot.s` loads into TTBR0_EL1. Read-only after build.
#[unsafe(link_section = ".data.page_table")]
pub static BOOT_PAGE_TABLE: PageTable = identity_map();

/// Whether the RAM range `[start, end)` is mapped as normal memory.
pub fn check_memory_is_mapped(start: u64, end: u64) -> bool {
    start >= NORMAL_MEMORY.start && end <= NORMAL_MEMORY.end
}
