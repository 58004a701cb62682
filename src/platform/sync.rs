//! Locks. Every lock in Fairway may be taken from interrupt context, so each one
//! masks IRQs on its core while held (its name says so), which rules out the
//! deadlock of an interrupt handler spinning on a lock its own core holds.
//!
//! Lock order, outermost first (a lock may only be taken while holding locks
//! above it in this list):
//! 1. a pipe's or wait queue's lock, or the rt-app resources' lock (`workload::rtapp`);
//! 2. a CPU's run-queue lock; two at once only in CPU-number order (load
//!    balancing moving tasks between them, `task::balance`);
//! 3. a CPU's wake list, call-function mailbox, or high-resolution timer queue.
//!
//! High-resolution timer callbacks run with no timer-queue lock held, so they may
//! take any lock of levels 1-3.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU32, Ordering};

use crate::arch::cpu::{IrqState, irq_restore, irq_save};

/// A spin lock that masks IRQs on this core while held.
///
/// It is a ticket lock: CPUs get the lock in the order they asked for it. An
/// unfair test-and-set lock lets a CPU that takes and releases a lock in a loop
/// (a run queue's owner, scheduling) starve another CPU waiting for it (a load
/// balancer), which under QEMU icount also inflates every instruction count.
pub struct IrqSpinLock<T> {
    next_ticket: AtomicU32,
    now_serving: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, and at most one guard exists
// at a time: a guard exists from the moment `now_serving` equals its ticket
// (read with Acquire) until it advances `now_serving` (with Release).
unsafe impl<T: Send> Sync for IrqSpinLock<T> {}
// SAFETY: moving the lock moves the value; no guard can exist during a move.
unsafe impl<T: Send> Send for IrqSpinLock<T> {}

/// Proof that an [`IrqSpinLock`] is held; unlocks, then restores IRQs, on drop.
pub struct IrqSpinLockGuard<'a, T> {
    lock: &'a IrqSpinLock<T>,
    irq_state: IrqState,
}

impl<T> IrqSpinLock<T> {
    /// A new, unlocked lock.
    pub const fn new(value: T) -> Self {
        IrqSpinLock {
            next_ticket: AtomicU32::new(0),
            now_serving: AtomicU32::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// Masks IRQs, then spins until the lock is ours.
    #[inline]
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        let irq_state = irq_save();
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        while self.now_serving.load(Ordering::Acquire) != ticket {
            crate::arch::cpu::relax();
        }
        IrqSpinLockGuard {
            lock: self,
            irq_state,
        }
    }

    /// Spins until the lock is ours, IRQs already masked by the caller (who
    /// read something CPU-local, such as which lock to take, after masking
    /// them); the guard restores `irq_state`, the state before the caller
    /// masked them.
    #[inline]
    pub fn lock_masked(&self, irq_state: IrqState) -> IrqSpinLockGuard<'_, T> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        while self.now_serving.load(Ordering::Acquire) != ticket {
            crate::arch::cpu::relax();
        }
        IrqSpinLockGuard {
            lock: self,
            irq_state,
        }
    }

    /// Takes over a lock that this core holds without a guard (a guard was
    /// forgotten across a context switch); the new guard releases it on drop and
    /// then restores `irq_state`.
    ///
    /// # Safety
    /// The lock must be held by this core, with IRQs masked, and no guard for it
    /// may exist.
    pub unsafe fn adopt(&self, irq_state: IrqState) -> IrqSpinLockGuard<'_, T> {
        debug_assert_ne!(
            self.next_ticket.load(Ordering::Relaxed),
            self.now_serving.load(Ordering::Relaxed)
        );
        IrqSpinLockGuard {
            lock: self,
            irq_state,
        }
    }
}

impl<T> IrqSpinLockGuard<'_, T> {
    /// The IRQ state that dropping the guard restores.
    pub fn irq_state(&self) -> IrqState {
        self.irq_state
    }
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held, so no other reference exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and `&mut self` makes this the only use.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        // Only the holder writes `now_serving`, so a plain increment is enough.
        let serving = self.lock.now_serving.load(Ordering::Relaxed);
        self.lock
            .now_serving
            .store(serving.wrapping_add(1), Ordering::Release);
        irq_restore(self.irq_state);
    }
}
