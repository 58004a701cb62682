//! Booting kernels: the runner command, QEMU and the boards, the progress
//! line, what a run's output is decoded into (report, trace records,
//! rt-app's logs, icount warnings), and the host tools and kernel builds
//! that running needs. Nothing here knows the test cases, the experiments
//! or the board runner (see the layers in `main.rs`).

pub mod board;
pub mod build;
pub mod icount_warnings;
pub mod kernel_trace;
pub mod progress;
pub mod qemu;
pub mod report;
pub mod rtapp_logs;
pub mod runner;
pub mod tools;
