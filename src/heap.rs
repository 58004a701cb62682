//! The boot-time heap: a bump allocator over the RAM after the kernel image.
//!
//! Fairway allocates while it boots and when it creates tasks (stacks, run
//! queues, timer queues) and never frees: the hot paths of the scheduler allocate
//! nothing, so a general-purpose allocator would only add code. An allocation that
//! does not fit is an error the caller reports (task creation), or a clean panic.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

/// The bump allocator.
pub struct BumpAllocator {
    next: AtomicUsize,
    end: AtomicUsize,
}

#[global_allocator]
static HEAP: BumpAllocator = BumpAllocator {
    next: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
};

/// Hands `[start, end)` to the allocator (boot core, once).
pub fn init(start: usize, end: usize) {
    HEAP.next.store(start, Ordering::Relaxed);
    HEAP.end.store(end, Ordering::Release);
}

/// Bytes still free.
pub fn free_bytes() -> usize {
    HEAP.end.load(Ordering::Relaxed) - HEAP.next.load(Ordering::Relaxed)
}

/// Allocates `size` bytes aligned to `align`, or `None` when the heap is exhausted.
pub fn allocate(size: usize, align: usize) -> Option<usize> {
    let end = HEAP.end.load(Ordering::Acquire);
    let mut current = HEAP.next.load(Ordering::Relaxed);
    loop {
        let start = current.checked_add(align - 1)? & !(align - 1);
        let next = start.checked_add(size)?;
        if next > end {
            return None;
        }
        match HEAP
            .next
            .compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return Some(start),
            Err(actual) => current = actual,
        }
    }
}

// SAFETY: `alloc` returns distinct, suitably aligned ranges of RAM that nothing
// else uses (the compare-exchange hands each range out once); `dealloc` leaks.
unsafe impl GlobalAlloc for BumpAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocate(layout.size(), layout.align()).map_or(core::ptr::null_mut(), |a| a as *mut u8)
    }

    unsafe fn dealloc(&self, _pointer: *mut u8, _layout: Layout) {}
}
