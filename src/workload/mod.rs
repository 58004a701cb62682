//! Workloads the kernel runs: rt-app scenarios ([`rtapp`]) and results reporting.
//!
//! Results are printed as `report:` lines (the format of `docs/report-format.md`),
//! which the host runner turns into a summary and a JSON report.

pub mod hackbench;
pub mod limits;
pub mod report;
pub mod rtapp;
pub mod sched_pipe;
