//! The boot identity map: one level-1 table of 1 GiB blocks, built at compile time
//! so that `boot.s` can turn the MMU and caches on before any Rust code (and any
//! lock) runs.
//!
//! ```text
//!  VA = PA     0 ─ 1 GiB      Device-nGnRE, never executable (GIC, UART, ...)
//!              1 ─ 256 GiB    Normal write-back, inner shareable (RAM)
//!            256 ─ 511 GiB    Device-nGnRE (QEMU virt's high MMIO)
//!  VA        511 ─ 512 GiB    the lazy window (`lazy`): unmapped at boot, then a
//!                             level-2 table installed by `lazy::init`
//! ```
//! This is QEMU virt's memory map; [`check_memory_is_mapped`] refuses a device
//! tree whose RAM lies outside the normal range.

use core::sync::atomic::{AtomicU64, Ordering};

/// Translation table entries: a 4 KiB-aligned table of 512 descriptors,
/// atomics so that an entry can be installed while the MMU walks the table.
#[repr(C, align(4096))]
pub struct PageTable(pub [AtomicU64; 512]);

impl PageTable {
    /// A table of invalid entries.
    pub const fn empty() -> Self {
        PageTable([const { AtomicU64::new(0) }; 512])
    }
}

const BLOCK: u64 = 0b01;
const ACCESS_FLAG: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 3 << 8;
const ATTR_DEVICE: u64 = 0 << 2;
const ATTR_NORMAL: u64 = 1 << 2;
const PRIVILEGED_EXECUTE_NEVER: u64 = 1 << 53;
const UNPRIVILEGED_EXECUTE_NEVER: u64 = 1 << 54;
const GIB: u64 = 1 << 30;

/// The level-1 entry of the lazy window (`lazy`): the last GiB of the 39-bit
/// address space, above QEMU virt's high MMIO (256 GiB + its GIC
/// redistributors and PCIe ECAM) and below its 512 GiB PCIe window.
pub const LAZY_WINDOW_ENTRY: usize = 511;

/// Installs `descriptor` (a table descriptor) in the boot table's `entry`,
/// which was invalid: the walker never cached it, so no TLB maintenance is
/// needed, only the barriers that make the store visible to the walks.
pub fn install_level1_table(entry: usize, descriptor: u64) {
    let slot = &BOOT_PAGE_TABLE.0[entry];
    assert_eq!(
        slot.load(Ordering::Relaxed),
        0,
        "level-1 entry {entry} is in use"
    );
    slot.store(descriptor, Ordering::Release);
    aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// First and one-past-last GiB mapped as normal memory.
pub const NORMAL_MEMORY: core::ops::Range<u64> = GIB..256 * GIB;

const fn identity_map() -> PageTable {
    let mut entries = PageTable::empty();
    let mut i = 0;
    while i < LAZY_WINDOW_ENTRY {
        let address = i as u64 * GIB;
        entries.0[i] = AtomicU64::new(
            if address >= NORMAL_MEMORY.start && address < NORMAL_MEMORY.end {
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
            },
        );
        i += 1;
    }
    entries
}

/// The table `boot.s` loads into TTBR0_EL1: built at compile time; after
/// boot only the lazy window's entry is written (`install_level1_table`).
#[unsafe(link_section = ".data.page_table")]
pub static BOOT_PAGE_TABLE: PageTable = identity_map();

/// Whether `address` is mapped as Device memory (outside the normal range and
/// below the lazy window), where a device's registers may be used.
pub fn is_device_memory(address: u64) -> bool {
    !NORMAL_MEMORY.contains(&address) && address < LAZY_WINDOW_ENTRY as u64 * GIB
}

/// Whether the RAM range `[start, end)` is mapped as normal memory.
pub fn check_memory_is_mapped(start: u64, end: u64) -> bool {
    start >= NORMAL_MEMORY.start && end <= NORMAL_MEMORY.end
}
