//! The context-switch trace: the first N switches (time, CPU, previous task,
//! next task), recorded under the run-queue lock and printed at the end of a
//! run as `trace: switch ...` lines, for comparison with the host simulator's
//! `--switches` output (`trace_switches=N` on the command line).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use spin::Once;

use fairway_sched::task::TaskId;

use crate::platform::sync::IrqSpinLock;

/// One recorded switch.
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// When, in ns since boot.
    pub time_ns: u64,
    /// On which CPU.
    pub cpu: u16,
    /// The task switched away from.
    pub previous: TaskId,
    /// The task switched to.
    pub next: TaskId,
}

static LIMIT: AtomicUsize = AtomicUsize::new(0);
static TRACE: Once<IrqSpinLock<Vec<Switch>>> = Once::new();

/// Starts recording the next `limit` switches (0: off). Allocates the buffer.
pub fn start(limit: usize) {
    let trace = TRACE.call_once(|| IrqSpinLock::new(Vec::with_capacity(limit)));
    trace.lock().clear();
    LIMIT.store(limit, Ordering::Release);
}

/// Records a switch if tracing and the buffer has room (no allocation).
#[inline]
pub fn record(switch: Switch) {
    if LIMIT.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Some(trace) = TRACE.get() {
        let mut trace = trace.lock();
        if trace.len() < trace.capacity() {
            trace.push(switch);
        }
    }
}

/// Prints the recorded switches, with `start_ns` as time zero, after a line
/// giving that origin and the tick period, `tick_ns`: the kernel ticks at
/// multiples of the period since boot, so a replay of the run (the host
/// simulator) needs both to put its ticks where the kernel's fell. `name`
/// names a task (the tasks floor's, handed down by the caller).
pub fn print<Name: AsRef<str>>(start_ns: u64, tick_ns: u64, name: impl Fn(TaskId) -> Name) {
    let Some(trace) = TRACE.get() else { return };
    let trace = trace.lock();
    defmt::println!(
        "trace: start boot_ns={=u64} tick_ns={=u64}",
        start_ns,
        tick_ns
    );
    for switch in trace.iter() {
        defmt::println!(
            "trace: switch time_ns={=u64} cpu={=u16} prev={=str} next={=str}",
            switch.time_ns.saturating_sub(start_ns),
            switch.cpu,
            name(switch.previous).as_ref(),
            name(switch.next).as_ref()
        );
    }
}
