//! # Fairway: a scheduler micro-kernel for AArch64
//!
//! Fairway boots on every core of an AArch64 machine (QEMU `virt` or a board),
//! runs kernel tasks, and schedules them with Linux's fair-scheduling machinery,
//! which lives in the portable crate `fairway_sched` (`sched/`). This crate is the
//! *mechanism*: it carries out the policy's decisions. What it receives from the
//! host and prints for it (the rt-app scenario blob, the `report:` lines) is the
//! contract crate `fairway_contract` (`contract/`).
//!
//! ```text
//!  boot.s ─► init (device tree ─► UART, heap, GIC, timer, PSCI) ─► every CPU's idle loop
//!                                                                    │ IRQ
//!  ┌─────────────── task::scheduler ◄─── irq ◄── GIC ◄── SGIs (IPIs), timer PPI
//!  │ schedule(), wake_up(), tick                 hrtimer queue ◄─┘
//!  ▼
//!  fairway_sched::RunQueue (policy: pure functions of time and events)
//! ```
//!
//! Layers (ARCHITECTURE.md, "Layout"): boot and arch code in [`arch`], board discovery in
//! [`board`], drivers in [`drivers`], kernel services (per-CPU data, interrupts,
//! high-resolution timers, SMP, tasks, wait queues, pipes) in the other modules.
//! Unsafe code is confined to `arch`, `drivers`, `init` (boot), the locks in
//! [`sync`], the heap, the logger and the two context-switch steps of the
//! scheduler; each block says why it is sound.
//!
//! An application (the demo in `src/main.rs`, each QEMU test in `tests/`) names
//! its main function with [`entry!`]; it runs as the first task, on CPU 0, and the
//! [`exit::ExitCode`] it returns becomes QEMU's exit status.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

pub mod arch;
pub mod board;
pub mod config;
pub mod cpufreq;
pub mod drivers;
pub mod energy;
pub mod exit;
pub mod heap;
pub mod hrtimer;
pub mod init;
pub mod instrument;
pub mod irq;
mod logger;
pub mod percpu;
pub mod report;
pub mod smp;
pub mod sync;
pub mod task;
pub mod workload;

pub use exit::ExitCode;
pub use init::{boot_options, system};

/// Time since boot in nanoseconds.
pub fn now_ns() -> u64 {
    arch::timer::now_ns()
}

/// Names the application's main function: `fairway::entry!(main)` with
/// `fn main() -> fairway::ExitCode`. It runs as a task on CPU 0 once every CPU
/// is up; its result is the kernel's exit status.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(export_name = "fairway_main")]
        fn __fairway_main() -> $crate::ExitCode {
            let main: fn() -> $crate::ExitCode = $main;
            main()
        }
    };
}
