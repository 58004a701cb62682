//! # Fairway: a scheduler micro-kernel for AArch64
//!
//! Fairway boots on every core of an AArch64 machine (QEMU `virt` or a board),
//! runs kernel tasks, and schedules them with Linux's fair-scheduling machinery,
//! which lives in the portable crate `fairway_sched` (`sched/`). This crate is the
//! *mechanism*: it carries out the policy's decisions. What it receives from the
//! host and prints for it (the rt-app scenario blob, the `report:` lines) is the
//! contract crate `fairway_contract` (`contract/`).
//!
//! The mechanism is built in floors, each importing only the floors below it
//! (ARCHITECTURE.md, "The kernel in floors"; `cargo xtask lint` fails on an
//! import that points up a floor):
//!
//! ```text
//!   workloads   workload/, main.rs, lib.rs   rt-app, sched-pipe, hackbench, the demo
//!   boot        init.rs                      the ordered boot of each core; wires the floors
//!   scheduling  scheduling/                  the door to CpuCore and the files that carry
//!                                            its decisions out: wake-up, switch, tick, sleep,
//!                                            balance, EAS, bandwidth, groups, PI, cpufreq
//!   tasks       tasks/                       the task table, spawn and exit, wait queues, pipes
//!   observe     observe/                     trace events, explain, replay records, the switch
//!                                            trace, cost counters: handed values by callers
//!   platform    platform/, arch/, drivers/,  exceptions, IRQ dispatch through a handler table,
//!               config.rs, board.rs          IPIs, timers, per-CPU data, locks, heap, drivers
//! ```
//!
//! A lower floor reaches a higher one only through what the higher one handed
//! it: a handler in the IRQ table, a callback with its timer, the vector's
//! way-out hook, an interface it implements (the tasks floor's
//! [`tasks::Scheduler`]), a task's entry point.
//!
//! Unsafe code is confined to `arch`, `drivers`, `init` (boot), the locks in
//! [`platform::sync`], the heap, the logger and the context switch of
//! [`scheduling::switch`]; each block says why it is sound.
//!
//! An application (the demo in `src/main.rs`, each QEMU test in `tests/`) names
//! its main function with [`entry!`]; it runs as the first task, on CPU 0, and the
//! [`ExitCode`] it returns becomes QEMU's exit status.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

pub mod arch;
pub mod board;
pub mod config;
pub mod drivers;
pub mod init;
pub mod observe;
pub mod platform;
pub mod scheduling;
pub mod tasks;
pub mod workload;

pub use init::{boot_options, system};
pub use platform::exit::ExitCode;

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
