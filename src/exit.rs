//! Leaving the kernel: under QEMU through semihosting (the runner gets the exit
//! status), on boards through PSCI SYSTEM_OFF.

use core::sync::atomic::{AtomicBool, Ordering};

/// The kernel's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything asked of the kernel was done.
    Success,
    /// Something failed (a test, a panic, an unexpected exception).
    Failure,
}

static SEMIHOSTING: AtomicBool = AtomicBool::new(false);

/// Allows the semihosting exit; boot enables it only when the device tree says
/// the machine is QEMU (`linux,dummy-virt`), since on a board without a debugger
/// the semihosting instruction traps.
pub fn allow_semihosting(allowed: bool) {
    SEMIHOSTING.store(allowed, Ordering::Relaxed);
}

/// Stops the machine with `code`.
///
/// The last frame on the console says the verdict (`exit: success` or
/// `exit: failure`): on a board there is no semihosting to carry the status, so a
/// host reading the serial line (`cargo xtask hil`) takes it from this line. The
/// UART is drained before power goes off.
pub fn exit(code: ExitCode) -> ! {
    crate::arch::cpu::irq_disable();
    defmt::info!(
        "exit: {=str}",
        match code {
            ExitCode::Success => "success",
            ExitCode::Failure => "failure",
        }
    );
    crate::drivers::console::drain();
    if SEMIHOSTING.load(Ordering::Relaxed) {
        use qemu_exit::QEMUExit;
        let handle = qemu_exit::AArch64::new();
        match code {
            ExitCode::Success => handle.exit_success(),
            ExitCode::Failure => handle.exit_failure(),
        }
    }
    crate::arch::psci::system_off();
    crate::arch::cpu::halt()
}
