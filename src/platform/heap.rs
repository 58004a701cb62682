//! The kernel heap: a first-fit free-list allocator
//! ([`linked_list_allocator`]) over the RAM after the kernel image.
//!
//! Fairway allocates while it boots and when it creates tasks (stacks, run
//! queues and their tables, timer queues); the hot paths of the scheduler
//! allocate nothing. Tables that grow with the tasks (issue 15) give their
//! outgrown buffers back, so what the scheduler holds is what it took: a bump
//! allocator that never freed kept every outgrown buffer. An allocation that
//! does not fit is an error the caller reports (task creation), or a clean
//! panic.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;

use linked_list_allocator::Heap;

use super::sync::IrqSpinLock;

/// The kernel's allocator: the free list under a lock that masks IRQs, so
/// that an allocation can never be interrupted by one on the same core.
pub struct KernelHeap {
    heap: IrqSpinLock<Heap>,
}

impl KernelHeap {
    /// The first free block that fits `layout`, taken from the list.
    fn first_fit(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.heap.lock().allocate_first_fit(layout).ok()
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap {
    heap: IrqSpinLock::new(Heap::empty()),
};

/// Hands `[start, end)` to the allocator (boot core, once, before anything
/// allocates).
pub fn init(start: usize, end: usize) {
    let mut heap = HEAP.heap.lock();
    assert_eq!(heap.size(), 0, "heap::init called twice");
    // SAFETY: `[start, end)` is RAM after the kernel image that nothing else
    // uses (the boot code computed it from the linker's end symbol and the
    // device tree's memory node), and the heap is given it once.
    unsafe { heap.init(start as *mut u8, end - start) };
}

/// Bytes still free.
pub fn free_bytes() -> usize {
    HEAP.heap.lock().free()
}

/// Allocates `size` bytes aligned to `align`, never freed (task stacks), or
/// `None` when the heap has no room.
pub fn allocate(size: usize, align: usize) -> Option<usize> {
    let layout = Layout::from_size_align(size, align).ok()?;
    HEAP.first_fit(layout)
        .map(|pointer| pointer.as_ptr() as usize)
}

// SAFETY: the free list hands out distinct, suitably aligned ranges of the RAM
// given to `init`, and takes back only ranges it handed out (`dealloc` is only
// called with a pointer and layout `alloc` returned, per `GlobalAlloc`'s
// contract); the lock serialises every change to the list.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(arena) = crate::arch::lazy::allocate(layout.size(), layout.align()) {
            return arena;
        }
        self.first_fit(layout)
            .map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        if crate::arch::lazy::contains(pointer as usize) {
            // A timeline arena's window: never freed (the run queues live
            // as long as the kernel).
            return;
        }
        if let Some(pointer) = NonNull::new(pointer) {
            // SAFETY: `pointer` was returned by `alloc` with this `layout`
            // (the caller's contract) and is not used again.
            unsafe { self.heap.lock().deallocate(pointer, layout) };
        }
    }
}
