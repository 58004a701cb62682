//! A window of device registers. Creating one is the only unsafe step: it asserts
//! that the window is a device's registers, mapped as Device memory.

use core::ptr::{read_volatile, write_volatile};

/// Device registers at a fixed base address.
#[derive(Clone, Copy, Debug)]
pub struct Mmio {
    base: usize,
    size: usize,
}

impl Mmio {
    /// # Safety
    /// `[base, base + size)` must be a device's register window, identity mapped
    /// as Device memory, and every register access through it must be one the
    /// device allows (the drivers use the offsets of the device's manual).
    pub const unsafe fn new(base: usize, size: usize) -> Self {
        Mmio { base, size }
    }

    /// The base address.
    pub fn base(&self) -> usize {
        self.base
    }

    fn address(&self, offset: usize, width: usize) -> usize {
        assert!(
            offset + width <= self.size,
            "MMIO offset {offset:#x} out of window"
        );
        self.base + offset
    }

    /// Reads the 32-bit register at `offset`.
    #[inline]
    pub fn read32(&self, offset: usize) -> u32 {
        let address = self.address(offset, 4);
        // SAFETY: in the window `new`'s caller vouched for; aligned by the drivers.
        unsafe { read_volatile(address as *const u32) }
    }

    /// Writes the 32-bit register at `offset`.
    #[inline]
    pub fn write32(&self, offset: usize, value: u32) {
        let address = self.address(offset, 4);
        // SAFETY: as for `read32`.
        unsafe { write_volatile(address as *mut u32, value) }
    }

    /// Reads the 64-bit register at `offset`.
    #[inline]
    pub fn read64(&self, offset: usize) -> u64 {
        let address = self.address(offset, 8);
        // SAFETY: as for `read32`.
        unsafe { read_volatile(address as *const u64) }
    }

    /// Writes the 8-bit register at `offset` (GIC priority bytes).
    #[inline]
    pub fn write8(&self, offset: usize, value: u8) {
        let address = self.address(offset, 1);
        // SAFETY: as for `read32`; the GIC allows byte access to these registers.
        unsafe { write_volatile(address as *mut u8, value) }
    }
}
