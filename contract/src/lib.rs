//! # Fairway's contract between the kernel and the host
//!
//! What the bare-metal kernel (`src/`) and the host tooling (the simulator `sim/`,
//! `xtask/`) exchange, in one small crate that both build: the policy crate
//! (`fairway-sched`) holds the scheduling rules, this one the data that crosses the
//! boundary between the two sides, and neither side needs the other to read it.
//!
//! ```text
//!   host (xtask, fairway-sim)                  kernel (src/)
//!   -------------------------                  -------------
//!   rt-app JSON --fairway-rtapp--> Scenario
//!   scenario::wire::encode ------> blob in RAM --> scenario::wire::decode_and_validate
//!   xtask/src/run/report/ <------- `report: ` lines <-- report::RunLine, TaskLine ...
//! ```
//!
//! Like `fairway-sched`, it is `no_std` with `alloc`, without unsafe code, and
//! host-tested; it depends on `fairway-sched` only for the policy types it names
//! (`Policy`, `TaskParams`, `CpuMask`, `GroupId`, `CpuId`, `TaskId`) and the
//! statistics the report prints (`Log2Histogram`, `Summary`). The rt-app JSON
//! reader, which needs `std`, is the host crate `fairway-rtapp` (`rtapp/`).
//!
//! Section marks in this crate's docs (`§8.3`) cite `docs/linux-sched-reference.md`,
//! the repository's reference of Linux's scheduler rules and numbers (`cargo xtask
//! lint` checks that each one resolves).
//!
//! Module map:
//! - [`scenario`]: the rt-app workload model, its validation (§8.3), the resource
//!   state machine both sides run, and the binary wire format the kernel receives.
//! - [`report`]: the kernel side of the report's line protocol
//!   (`docs/report-format.md`).
//! - [`rtapp_log`]: rt-app's per-task logs, the rows both the simulator and the
//!   kernel's rt-app executor record (docs/tracing.md, "rt-app's logs").
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod report;
pub mod rtapp_log;
pub mod scenario;
pub mod trace;
