//! Locks. Every lock in Fairway may be taken from interrupt context, so each one
//! masks IRQs on its core while held (its name says so), which rules out the
//! deadlock of an interrupt handler spinning on a lock its own core holds.
//!
//! Lock order, outermost first (a lock may only be taken while holding locks
//! above it in this list):
//! 1. a pipe's or wait queue's lock;
//! 2. a CPU's run-queue lock (never two at once in this version);
//! 3. a CPU's wake list, call-function mailbox, or high-resolution timer queue.
//!
//! High-resolution timer callbacks run with no timer-queue lock held, so they may
//! take any lock of levels 1-3.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::cpu::{IrqState, irq_restore, irq_save};

/// A spin lock that masks IRQs on this core while held.
pub struct IrqSpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, and at most one guard exists
// at a time (the `locked` flag, acquired with Acquire and released with Release).
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
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Masks IRQs, then spins until the lock is ours.
    #[inline]
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        let irq_state = irq_save();
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
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
        debug_assert!(self.locked.load(Ordering::Relaxed));
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
        self.lock.locked.store(false, Ordering::Release);
        irq_restore(self.irq_state);
    }
}
