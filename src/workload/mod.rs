//! Workloads the kernel runs: rt-app scenarios ([`rtapp`]) and results reporting.
//!
//! Results are printed as `report:` lines (the format of `docs/report-format.md`),
//! which the host runner turns into a summary and a JSON report.

pub mod hackbench;
pub mod limits;
pub mod report;
pub mod rtapp;
pub mod rtapp_log;
pub mod sched_pipe;
pub mod summary;

/// Iterations of a busy loop between two `YIELD` hints ([`BusyLoop`]).
///
/// An rt-app `run` iteration is about 50 instructions plus the
/// [`BUSY_LOOP_SPIN`] `NOP`s, so this hands the turn on about every 14 µs of
/// virtual time under icount (as 256 iterations of 50 instructions did before
/// the `NOP`s): well inside a tick, and rare enough that QEMU's turn changes
/// cost little wall time (every iteration made the same runs 4.8 times
/// slower, docs/icount.md).
pub const BUSY_LOOP_PAUSE_EVERY: u32 = 32;

/// `NOP`s ([`crate::arch::cpu::nops`]) between two reads of the clock in a
/// busy loop.
///
/// A read of the task's runtime masks interrupts and reads the counter, and
/// under QEMU each of those ends a translated block: with a read every 50
/// instructions QEMU spent most of its wall time leaving and entering blocks,
/// while a run of `NOP`s costs it almost nothing. With 384 a 10 s CPU-bound
/// run on 4 CPUs took 6.7 s of wall time instead of 44 (docs/icount.md); a
/// `run` event ends at most one iteration late, under 0.5 µs of virtual time.
pub const BUSY_LOOP_SPIN: usize = 384;

/// The pause of a workload's busy loop (rt-app's `run`, the demo's hogs).
///
/// Under icount QEMU runs one vCPU at a time, and a vCPU keeps its turn until
/// it executes `YIELD` or `WFI`, writes its timer comparator, or reaches the
/// machine's next timer deadline (docs/icount.md, "Busy loops hand the turn
/// on"). A loop that never pauses holds the turn for milliseconds while the
/// virtual clock runs on for every CPU, and a task another CPU has just
/// switched in is charged that time without running. `YIELD` is a hint that
/// costs nothing on hardware, so busy loops give it every
/// [`BUSY_LOOP_PAUSE_EVERY`] iterations (`core::hint::spin_loop` is `ISB`,
/// which does not end a turn).
#[derive(Debug, Default)]
pub struct BusyLoop {
    iterations: u32,
}

impl BusyLoop {
    /// A loop that has not paused yet.
    pub const fn new() -> Self {
        Self { iterations: 0 }
    }

    /// One iteration's pause: [`BUSY_LOOP_SPIN`] `NOP`s, and the `YIELD` hint every [`BUSY_LOOP_PAUSE_EVERY`] calls.
    #[inline(always)]
    pub fn pause(&mut self) {
        crate::arch::cpu::nops::<BUSY_LOOP_SPIN>();
        self.iterations += 1;
        if self.iterations == BUSY_LOOP_PAUSE_EVERY {
            self.iterations = 0;
            crate::arch::cpu::relax();
        }
    }
}

/// The rate at which CPU `cpu` does work now, × 2^20: its capacity times its
/// frequency scale (§7.1, §2.3). A task that runs t ns there does
/// `t × work_rate / 2^20` ns of work at capacity 1024 and the highest
/// frequency, rt-app's unit (docs/boards.md).
pub fn work_rate(cpu: usize) -> u64 {
    let cpu = crate::platform::percpu::of(cpu);
    u64::from(cpu.capacity.load(core::sync::atomic::Ordering::Relaxed))
        * u64::from(
            cpu.frequency_scale
                .load(core::sync::atomic::Ordering::Relaxed),
        )
}
