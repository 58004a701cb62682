//! Memory that takes pages only where it is written: the timeline arenas.
//!
//! Each CPU's timeline arena has all 2^16 nodes (1 MiB CFS, 2 MiB EEVDF), so
//! that a node is reached with a 16-bit link and no bounds check (the
//! timeline's budget, issue 3), but a CPU only ever writes the nodes of the
//! entities it queues. Like Linux's anonymous memory, such an arena is given
//! address space at once and RAM page by page (issue 15: memory in proportion
//! to the tasks):
//!
//! ```text
//!   VA 511 GiB   level-2 table: one 2 MiB slot per arena
//!     slot s     level-3 table (heap): every page maps ZERO_PAGE
//!                   built:   read-write, while the arena is filled with
//!                            its empty nodes (all zero bits)
//!                   sealed:  read-only (`seal`)
//!                   written: a write to a sealed page faults; `handle_fault`
//!                            gives the page a zeroed page of its own,
//!                            read-write (break-before-make)
//! ```
//!
//! The run queues are built while the window is armed (`with_lazy_arenas`):
//! the kernel heap hands an allocation of 1 or 2 MiB to `allocate` then.
//! Reads of a page not written yet return zeros, what the empty nodes are.
//! Arenas are never freed (run queues live as long as the kernel).

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use aarch64_cpu::asm::barrier;
use spin::Once;

use super::mmu::{LAZY_WINDOW_ENTRY, PageTable, install_level1_table};
use crate::platform::sync::IrqSpinLock;

const PAGE: u64 = 4096;
const SLOT: u64 = 2 << 20;
/// Slots in the window: one arena per CPU, and room to spare.
const SLOTS: usize = 2 * crate::config::MAX_CPUS;
/// The window's first address.
const WINDOW: u64 = (LAZY_WINDOW_ENTRY as u64) << 30;

const VALID_TABLE: u64 = 0b11;
const PAGE_DESCRIPTOR: u64 = 0b11;
const ATTR_NORMAL: u64 = 1 << 2;
const READ_ONLY: u64 = 1 << 7;
const INNER_SHAREABLE: u64 = 3 << 8;
const ACCESS_FLAG: u64 = 1 << 10;
const EXECUTE_NEVER: u64 = (1 << 53) | (1 << 54);
const ADDRESS: u64 = 0x0000_ffff_ffff_f000;

/// Normal memory, inner shareable, never executable.
const fn page_descriptor(address: u64, read_only: bool) -> u64 {
    address
        | PAGE_DESCRIPTOR
        | ATTR_NORMAL
        | INNER_SHAREABLE
        | ACCESS_FLAG
        | EXECUTE_NEVER
        | if read_only { READ_ONLY } else { 0 }
}

/// The window's level-2 table: entry `s` points to slot `s`'s level-3 table.
static LEVEL2: PageTable = PageTable::empty();
/// The page every page of an arena maps until it is written: zeros, and
/// read-only once the arena is sealed.
static ZERO_PAGE: PageTable = PageTable::empty();

/// Whether the run queue being built takes its arena from the window.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Pages given to written arena pages so far.
static PAGES: AtomicUsize = AtomicUsize::new(0);

struct Window {
    /// Slots handed out.
    used: usize,
    /// Slots handed out since the window was armed (sealed together).
    first_unsealed: usize,
    /// Each slot's level-3 table.
    tables: [Option<&'static PageTable>; SLOTS],
}

static WINDOW_STATE: IrqSpinLock<Window> = IrqSpinLock::new(Window {
    used: 0,
    first_unsealed: 0,
    tables: [None; SLOTS],
});

/// Where the window's pages and level-3 tables come from: `allocate(size,
/// align)`, the kernel heap's, handed down at boot so that this file names
/// nothing above it (the heap is built on this window's hook, `allocate`).
pub type PageSource = fn(usize, usize) -> Option<usize>;

static PAGE_SOURCE: Once<PageSource> = Once::new();

/// Installs the window's level-2 table, with `page_source` as where its
/// pages come from (boot core, once, before any run queue is built).
pub fn init(page_source: PageSource) {
    PAGE_SOURCE.call_once(|| page_source);
    install_level1_table(LAZY_WINDOW_ENTRY, table_address(&LEVEL2) | VALID_TABLE);
}

fn table_address(table: &PageTable) -> u64 {
    table as *const PageTable as u64
}

/// The descriptor of a page not written yet: the zero page.
fn zero_page(read_only: bool) -> u64 {
    page_descriptor(table_address(&ZERO_PAGE), read_only)
}

/// Runs `build` with the window armed: an allocation of 1 or 2 MiB it makes
/// (its timeline arena) comes from the window, and is sealed read-only when
/// `build` returns, having been filled with zero bits.
pub fn with_lazy_arenas<R>(build: impl FnOnce() -> R) -> R {
    ARMED.store(true, Ordering::Relaxed);
    let result = build();
    ARMED.store(false, Ordering::Relaxed);
    seal();
    result
}

/// The heap's hook: an arena-sized allocation while the window is armed, or
/// `None` (the heap serves it).
pub fn allocate(size: usize, align: usize) -> Option<*mut u8> {
    let size = size as u64;
    if !ARMED.load(Ordering::Relaxed) || !(size == SLOT || size == SLOT / 2) || align as u64 > PAGE
    {
        return None;
    }
    let mut window = WINDOW_STATE.lock();
    let slot = window.used;
    if slot == SLOTS {
        return None;
    }
    let table = new_page()? as *const PageTable;
    // SAFETY: `new_page` returned a zeroed, page-aligned page of the heap
    // that nothing else uses; it lives as long as the kernel (never freed).
    let table: &'static PageTable = unsafe { &*table };
    for entry in &table.0[..(size / PAGE) as usize] {
        entry.store(zero_page(false), Ordering::Relaxed);
    }
    LEVEL2.0[slot].store(table_address(table) | VALID_TABLE, Ordering::Release);
    window.tables[slot] = Some(table);
    window.used += 1;
    barrier::dsb(barrier::ISHST);
    barrier::isb(barrier::SY);
    Some((WINDOW + slot as u64 * SLOT) as *mut u8)
}

/// Whether `address` is in the window (the heap never frees it).
pub fn contains(address: usize) -> bool {
    let address = address as u64;
    (WINDOW..WINDOW + SLOTS as u64 * SLOT).contains(&address)
}

/// Makes the zero page read-only in the slots handed out since the last
/// seal: from now on a write to one of their pages faults and gets a page
/// of its own.
fn seal() {
    let mut window = WINDOW_STATE.lock();
    for table in window.tables[window.first_unsealed..window.used]
        .iter()
        .flatten()
    {
        for entry in &table.0 {
            if entry.load(Ordering::Relaxed) == zero_page(false) {
                entry.store(zero_page(true), Ordering::Relaxed);
            }
        }
    }
    window.first_unsealed = window.used;
    // A permission change needs no break-before-make, only the TLBs of
    // every core forgetting the read-write entries.
    barrier::dsb(barrier::ISHST);
    // SAFETY: TLB maintenance only: every core re-reads the tables.
    unsafe { core::arch::asm!("tlbi vmalle1is", options(nostack)) };
    barrier::dsb(barrier::ISH);
    barrier::isb(barrier::SY);
}

/// A zeroed heap page.
fn new_page() -> Option<usize> {
    let page = PAGE_SOURCE.get()?(PAGE as usize, PAGE as usize)?;
    // SAFETY: the page source (the kernel heap, given to `init`) just handed
    // out these 4 KiB, aligned, to us alone.
    unsafe { core::ptr::write_bytes(page as *mut u8, 0, PAGE as usize) };
    Some(page)
}

/// The RAM the window takes besides the level-3 tables (which come from the
/// heap while a run queue is built, and are counted with it): the pages
/// written, the level-2 table and the zero page.
pub fn bytes() -> usize {
    (PAGES.load(Ordering::Relaxed) + 2) * PAGE as usize
}

/// Handles a data abort at `address` with fault status `status` (ESR's
/// DFSC): a write to a page of a sealed arena that still maps the zero page
/// gets a zeroed page of its own. Returns whether the access can be retried.
pub fn handle_fault(address: u64, status: u64) -> bool {
    const TRANSLATION_LEVEL3: u64 = 0b00_0111;
    const PERMISSION_LEVEL3: u64 = 0b00_1111;
    if !contains(address as usize) || !(status == PERMISSION_LEVEL3 || status == TRANSLATION_LEVEL3)
    {
        return false;
    }
    let window = WINDOW_STATE.lock();
    let index = (address - WINDOW) / PAGE;
    let Some(table) = window.tables[(index / 512) as usize] else {
        return false;
    };
    let entry = &table.0[(index % 512) as usize];
    let descriptor = entry.load(Ordering::Relaxed);
    if descriptor == zero_page(true) {
        let Some(page) = new_page() else {
            return false;
        };
        PAGES.fetch_add(1, Ordering::Relaxed);
        // Break-before-make: the entry is invalid, and no TLB holds the
        // read-only one, before the new page is mapped (another core
        // faulting meanwhile waits on the lock, then retries).
        entry.store(0, Ordering::Relaxed);
        barrier::dsb(barrier::ISHST);
        let page_number = (address & ADDRESS) >> 12;
        // SAFETY: TLB maintenance of one page on every core.
        unsafe { core::arch::asm!("tlbi vae1is, {0}", in(reg) page_number, options(nostack)) };
        barrier::dsb(barrier::ISH);
        entry.store(page_descriptor(page as u64, false), Ordering::Relaxed);
        barrier::dsb(barrier::ISHST);
        barrier::isb(barrier::SY);
        return true;
    }
    // Mapped by another core while this one faulted: retry. Anything else
    // (an address the arena never had) is a bug to report.
    descriptor & PAGE_DESCRIPTOR == PAGE_DESCRIPTOR
}
