//! The boot identity map, built at compile time so that `boot.s` can turn the
//! MMU and caches on before any Rust code (and any lock) runs.
//!
//! ```text
//!  VA = PA     RAM (FAIRWAY_RAM)     Normal write-back, inner shareable
//!              the rest, to 511 GiB  Device-nGnRE, never executable (GIC, UART, ...)
//!  VA        511 ─ 512 GiB           the lazy window (`lazy`): unmapped at boot, then
//!                                    a level-2 table installed by `lazy::init`
//! ```
//! RAM is the window `FAIRWAY_RAM=START..END` the kernel was built for
//! (build.rs; QEMU virt's 1 GiB to 256 GiB by default, a board's from its
//! notes). The level-1 table maps 1 GiB blocks; a GiB that RAM only partly
//! covers (its START or END is not GiB-aligned, as Juno r2's RAM ends at
//! 0xff00_0000 below its 4 GiB) goes through a level-2 table of 2 MiB
//! blocks, so RAM's ends need only be 2 MiB-aligned. [`check_memory_is_mapped`]
//! refuses a device tree or blob outside RAM, and [`is_device_memory`] a UART
//! inside it.

use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

include!(concat!(env!("OUT_DIR"), "/ram.rs"));

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

/// The boot level-1 table. Its entries are descriptors held as pointers,
/// because an entry that points to a boot level-2 table holds that table's
/// address, which a constant can hold only as a pointer (a relocation the
/// linker resolves); the other entries are plain numbers cast to pointers.
#[repr(C, align(4096))]
pub struct BootTable([AtomicPtr<u8>; 512]);

const BLOCK: u64 = 0b01;
const TABLE: usize = 0b11;
const ACCESS_FLAG: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 3 << 8;
const ATTR_DEVICE: u64 = 0 << 2;
const ATTR_NORMAL: u64 = 1 << 2;
const PRIVILEGED_EXECUTE_NEVER: u64 = 1 << 53;
const UNPRIVILEGED_EXECUTE_NEVER: u64 = 1 << 54;
const GIB: u64 = 1 << 30;
const TWO_MIB: u64 = 2 << 20;

/// The level-1 entry of the lazy window (`lazy`): the last GiB of the 39-bit
/// address space, above QEMU virt's high MMIO (256 GiB + its GIC
/// redistributors and PCIe ECAM) and below its 512 GiB PCIe window.
pub const LAZY_WINDOW_ENTRY: usize = 511;

/// Installs `descriptor` (a table descriptor) in the boot table's `entry`,
/// which was invalid: the walker never cached it, so no TLB maintenance is
/// needed, only the barriers that make the store visible to the walks.
pub fn install_level1_table(entry: usize, descriptor: u64) {
    let slot = &BOOT_PAGE_TABLE.0[entry];
    assert!(
        slot.load(Ordering::Relaxed).is_null(),
        "level-1 entry {entry} is in use"
    );
    slot.store(
        core::ptr::without_provenance_mut(descriptor as usize),
        Ordering::Release,
    );
    aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// A block descriptor (level 1 or 2, same bits) for the block at `address`:
/// normal memory inside RAM, Device memory outside. RAM's ends are 2 MiB
/// multiples (build.rs), so a block is wholly in or out.
const fn block(address: u64) -> u64 {
    if address >= RAM.start && address < RAM.end {
        address | BLOCK | ACCESS_FLAG | INNER_SHAREABLE | ATTR_NORMAL | UNPRIVILEGED_EXECUTE_NEVER
    } else {
        address
            | BLOCK
            | ACCESS_FLAG
            | ATTR_DEVICE
            | PRIVILEGED_EXECUTE_NEVER
            | UNPRIVILEGED_EXECUTE_NEVER
    }
}

/// The GiBs RAM covers only in part (at most its first and its last), in
/// the order of [`BOOT_LEVEL2`].
const SPLIT_GIBS: [Option<u64>; 2] = {
    let first = if !RAM.start.is_multiple_of(GIB) {
        Some(RAM.start / GIB)
    } else {
        None
    };
    // The last GiB, unless it is the first (RAM starts and ends in it).
    let last =
        if !RAM.end.is_multiple_of(GIB) && !matches!(first, Some(gib) if gib == RAM.end / GIB) {
            Some(RAM.end / GIB)
        } else {
            None
        };
    [first, last]
};

/// The level-2 table of 2 MiB blocks of a GiB split by RAM's ends (empty
/// when there is none).
const fn level2(gib: Option<u64>) -> PageTable {
    let mut table = PageTable::empty();
    let Some(gib) = gib else { return table };
    let mut i = 0;
    while i < 512 {
        table.0[i] = AtomicU64::new(block(gib * GIB + i as u64 * TWO_MIB));
        i += 1;
    }
    table
}

/// The boot map's level-2 tables, one per split GiB.
#[unsafe(link_section = ".data.page_table")]
static BOOT_LEVEL2: [PageTable; 2] = [level2(SPLIT_GIBS[0]), level2(SPLIT_GIBS[1])];

const fn identity_map(level2: *const [PageTable; 2]) -> BootTable {
    let mut entries = BootTable([const { AtomicPtr::new(core::ptr::null_mut()) }; 512]);
    let mut i = 0;
    while i < LAZY_WINDOW_ENTRY {
        let mut descriptor = AtomicPtr::new(core::ptr::without_provenance_mut(
            block(i as u64 * GIB) as usize,
        ));
        let mut k = 0;
        while k < 2 {
            if matches!(SPLIT_GIBS[k], Some(gib) if gib == i as u64) {
                // A table descriptor: the level-2 table's address, plus 0b11.
                let table = level2.cast::<PageTable>().wrapping_add(k);
                descriptor = AtomicPtr::new(table.cast::<u8>().cast_mut().wrapping_add(TABLE));
            }
            k += 1;
        }
        entries.0[i] = descriptor;
        i += 1;
    }
    entries
}

/// The table `boot.s` loads into TTBR0_EL1: built at compile time; after
/// boot only the lazy window's entry is written (`install_level1_table`).
#[unsafe(link_section = ".data.page_table")]
pub static BOOT_PAGE_TABLE: BootTable = identity_map(&raw const BOOT_LEVEL2);

/// Whether `address` is mapped as Device memory (outside RAM and below the
/// lazy window), where a device's registers may be used.
pub fn is_device_memory(address: u64) -> bool {
    !RAM.contains(&address) && address < LAZY_WINDOW_ENTRY as u64 * GIB
}

/// Whether the range `[start, end)` lies in RAM, mapped as normal memory.
pub fn check_memory_is_mapped(start: u64, end: u64) -> bool {
    start >= RAM.start && end <= RAM.end
}
