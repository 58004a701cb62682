//! PSCI (Arm's Power State Coordination Interface): starting cores and powering
//! the system off, through the conduit the device tree names (`hvc` or `smc`).

use core::sync::atomic::{AtomicU8, Ordering};

const PSCI_VERSION: u64 = 0x8400_0000;
const CPU_ON_64: u64 = 0xc400_0003;
const SYSTEM_OFF: u64 = 0x8400_0008;
const SYSTEM_RESET: u64 = 0x8400_0009;

/// How PSCI calls reach the firmware, as the device tree's `/psci/method` names it.
pub use fairway_devicetree::Conduit;

static CONDUIT: AtomicU8 = AtomicU8::new(0);

/// Chooses the conduit for all later calls.
pub fn set_conduit(conduit: Conduit) {
    CONDUIT.store(
        match conduit {
            Conduit::Hvc => 1,
            Conduit::Smc => 2,
        },
        Ordering::Relaxed,
    );
}

fn call(function: u64, argument1: u64, argument2: u64, argument3: u64) -> i64 {
    let mut result = function;
    match CONDUIT.load(Ordering::Relaxed) {
        // SAFETY: a PSCI call per the SMC calling convention: x0-x3 in, x0 out,
        // x4-x17 may be clobbered by the firmware; no memory of ours is touched.
        1 => unsafe {
            core::arch::asm!("hvc #0", inout("x0") result, inout("x1") argument1 => _,
                inout("x2") argument2 => _, inout("x3") argument3 => _,
                out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _,
                out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
        // SAFETY: as above, through the secure monitor.
        2 => unsafe {
            core::arch::asm!("smc #0", inout("x0") result, inout("x1") argument1 => _,
                inout("x2") argument2 => _, inout("x3") argument3 => _,
                out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _,
                out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
        _ => return -1,
    }
    result as i64
}

/// The PSCI version as (major, minor), or `None` without a conduit.
pub fn version() -> Option<(u16, u16)> {
    let version = call(PSCI_VERSION, 0, 0, 0);
    (version >= 0).then_some(((version >> 16) as u16, version as u16))
}

/// Starts the core `mpidr` at physical address `entry` with `x0 = context`.
/// Returns PSCI's status (0 is success).
pub fn cpu_on(mpidr: u64, entry: u64, context: u64) -> i64 {
    call(CPU_ON_64, mpidr, entry, context)
}

/// Forgets the conduit (`psci=0`): later calls reach no firmware, as on a
/// board whose device tree has no `/psci`.
pub fn disable() {
    CONDUIT.store(0, Ordering::Relaxed);
}

/// Whether the device tree named a conduit (a `/psci` node): without one, no
/// call reaches firmware.
pub fn available() -> bool {
    CONDUIT.load(Ordering::Relaxed) != 0
}

/// Powers the system off; returns (PSCI's status) only if the firmware
/// refuses or there is no conduit.
pub fn system_off() -> i64 {
    call(SYSTEM_OFF, 0, 0, 0)
}

/// Resets the system; returns (PSCI's status) only if the firmware refuses
/// or there is no conduit. QEMU reboots the machine, or exits with status 0
/// when started with `-no-reboot`.
pub fn system_reset() -> i64 {
    call(SYSTEM_RESET, 0, 0, 0)
}
