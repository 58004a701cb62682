//! Leaving the kernel: under QEMU through semihosting (the runner gets the exit
//! status), on boards through PSCI SYSTEM_OFF or SYSTEM_RESET (`power_off=`),
//! and on a board without PSCI by parking every CPU.

use core::sync::atomic::{AtomicBool, Ordering};

use fairway_sched::boot_options::PowerOff;

/// The kernel's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything asked of the kernel was done.
    Success,
    /// Something failed (a test, a panic, an unexpected exception).
    Failure,
}

static SEMIHOSTING: AtomicBool = AtomicBool::new(false);
/// `power_off=reset`: SYSTEM_RESET instead of SYSTEM_OFF.
static RESET: AtomicBool = AtomicBool::new(false);

/// Chooses the PSCI call that ends the run (`power_off=`; boot sets it once
/// the command line is read, SYSTEM_OFF until then).
pub fn set_power_off(power_off: PowerOff) {
    RESET.store(power_off == PowerOff::Reset, Ordering::Relaxed);
}

/// Allows the semihosting exit; boot enables it only when the device tree says
/// the machine is QEMU (`linux,dummy-virt`), since on a board without a debugger
/// the semihosting instruction traps.
pub fn allow_semihosting(allowed: bool) {
    SEMIHOSTING.store(allowed, Ordering::Relaxed);
}

/// Stops the machine with `code`.
///
/// The other CPUs are parked first (the stop IPI), so that the verdict
/// (`exit: success` or `exit: failure`) is the last frame a run prints: on a
/// board there is no semihosting to carry the status, so a host reading the
/// serial line (`cargo xtask hil`) takes it from this line. The UART is
/// drained before power goes off. Without PSCI (no `/psci` node), or when the
/// firmware refuses the call, one more line says so and this CPU parks too;
/// the verdict line stands.
pub fn exit(code: ExitCode) -> ! {
    crate::arch::cpu::irq_disable();
    stop_other_cpus();
    print_turns();
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
    let psci = crate::arch::psci::available();
    if psci {
        let reset = RESET.load(Ordering::Relaxed);
        let status = if reset {
            crate::arch::psci::system_reset()
        } else {
            crate::arch::psci::system_off()
        };
        defmt::info!(
            "exit: PSCI {=str} returned {=i64}; CPUs parked",
            if reset { "SYSTEM_RESET" } else { "SYSTEM_OFF" },
            status
        );
    } else {
        defmt::info!("exit: no PSCI power-off; CPUs parked");
    }
    crate::drivers::console::drain();
    crate::arch::cpu::halt()
}

/// Prints, per online CPU, the longest time a task ran there without a tick
/// charging it, and when that ended: one tick period on hardware, more when
/// QEMU's icount ran the other vCPUs meanwhile (docs/icount.md). The runner
/// warns from these lines when emulation, not scheduling, shaped a run.
fn print_turns() {
    for cpu in 0..super::percpu::nr_cpus() {
        let this = super::percpu::of(cpu);
        if this.online.load(Ordering::Acquire) {
            defmt::println!(
                "turns: cpu={=usize} max_uncharged_ns={=u64} end_ns={=u64}",
                cpu,
                this.max_uncharged_ns.load(Ordering::Relaxed),
                this.max_uncharged_end_ns.load(Ordering::Relaxed)
            );
        }
    }
}

/// Sends the stop IPI to every other online CPU: each parks in
/// `arch::cpu::halt` (interrupts masked) when it takes it. A CPU spinning
/// with interrupts masked does not take it, but prints nothing either.
fn stop_other_cpus() {
    let this = crate::arch::cpu::this_cpu();
    for cpu in 0..super::percpu::nr_cpus() {
        if cpu != this && super::percpu::of(cpu).online.load(Ordering::Acquire) {
            super::irq::send_ipi(cpu, super::irq::Ipi::Stop);
        }
    }
}
