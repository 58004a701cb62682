//! Secondary CPUs: starting them through PSCI, and running a function on another
//! CPU through the call-function IPI.

use core::sync::atomic::Ordering;

use heapless::Deque;

use super::irq::{Ipi, send_ipi};
use super::percpu;
use super::sync::IrqSpinLock;
use crate::arch::{psci, timer};
use crate::config::MAX_CPUS;

/// A function to run on another CPU, with its argument.
pub type CallFunction = fn(usize);

const MAILBOX_SLOTS: usize = 16;

static MAILBOXES: [IrqSpinLock<Deque<(CallFunction, usize), MAILBOX_SLOTS>>; MAX_CPUS] =
    [const { IrqSpinLock::new(Deque::new()) }; MAX_CPUS];

/// A CPU's call-function mailbox is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
pub struct MailboxFull {
    /// The CPU asked.
    pub cpu: usize,
}

/// Asks `cpu` to run `function(argument)` in interrupt context. Fails when its
/// mailbox is full.
pub fn call_function(
    cpu: usize,
    function: CallFunction,
    argument: usize,
) -> Result<(), MailboxFull> {
    MAILBOXES[cpu]
        .lock()
        .push_back((function, argument))
        .map_err(|_| MailboxFull { cpu })?;
    send_ipi(cpu, Ipi::CallFunction);
    Ok(())
}

/// Runs this CPU's queued calls (the call-function IPI handler).
pub fn process_calls() {
    let cpu = crate::arch::cpu::this_cpu();
    loop {
        let Some((function, argument)) = MAILBOXES[cpu].lock().pop_front() else {
            break;
        };
        function(argument);
    }
}

/// Starts CPU `cpu` (MPIDR `mpidr`) and waits up to 1 s for it to come online.
pub fn start_cpu(cpu: usize, mpidr: u64) -> Result<(), i64> {
    let entry = crate::arch::boot::secondary_entry_address();
    let status = psci::cpu_on(mpidr, entry, cpu as u64);
    if status != 0 {
        return Err(status);
    }
    let deadline = timer::now_ns() + 1_000_000_000;
    while !percpu::of(cpu).online.load(Ordering::Acquire) {
        if timer::now_ns() > deadline {
            return Err(-9999);
        }
        crate::arch::cpu::relax();
    }
    Ok(())
}
