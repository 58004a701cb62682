//! A device's register block, described by a `tock_registers::register_structs!`
//! type. Creating one is the only unsafe step: it asserts that the window at the
//! base address is that device's registers, mapped as Device memory.

use core::fmt;

/// The registers `T` (a `register_structs!` block, or a slice of equal frames)
/// of one device, for the kernel's lifetime.
pub struct DeviceRegisters<T: ?Sized + 'static> {
    registers: &'static T,
}

// SAFETY: `T` is made of tock-registers cells (`UnsafeCell`s), which are neither
// `Sync` nor `Send`; sharing them between cores is what a device's registers are
// for. Every access is one volatile load or store of the register's width, the
// same the device sees from a lone core, and which core may do what (banked GIC
// registers, the UART's FIFO) is the drivers' protocol, as it is in C.
unsafe impl<T: ?Sized> Sync for DeviceRegisters<T> {}
// SAFETY: as for `Sync`: the window does not belong to the core that made it.
unsafe impl<T: ?Sized> Send for DeviceRegisters<T> {}

impl<T> DeviceRegisters<T> {
    /// # Safety
    /// `[base, base + size_of::<T>())` must be the register window `T` describes
    /// of a device, aligned for `T`, identity mapped as Device memory for the
    /// kernel's lifetime, and every register `T` names must allow the access
    /// its type gives (width, read or write).
    pub unsafe fn new(base: usize) -> Self {
        // SAFETY: the caller vouches that `base` is `T`'s window, mapped for good;
        // `T` is interior-mutable cells only, so a shared reference is what
        // tock-registers expects.
        let registers = unsafe { &*(base as *const T) };
        DeviceRegisters { registers }
    }
}

impl<T> DeviceRegisters<[T]> {
    /// `count` register blocks `T` one after another from `base`, each
    /// `size_of::<T>()` bytes (GICv3 redistributor frames).
    ///
    /// # Safety
    /// As for [`DeviceRegisters::new`], for each of the `count` windows.
    pub unsafe fn array(base: usize, count: usize) -> Self {
        // SAFETY: the caller vouches for the `count` consecutive windows.
        let registers = unsafe { &*core::ptr::slice_from_raw_parts(base as *const T, count) };
        DeviceRegisters { registers }
    }
}

impl<T: ?Sized> core::ops::Deref for DeviceRegisters<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.registers
    }
}

/// The address, not the registers: reading some (GICC_IAR) has side effects.
impl<T: ?Sized> fmt::Debug for DeviceRegisters<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {:#x}",
            core::any::type_name::<T>(),
            (self.registers as *const T).cast::<u8>() as usize
        )
    }
}
