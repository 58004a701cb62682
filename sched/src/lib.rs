//! # Fairway's portable scheduling core
//!
//! This crate is the policy half of Fairway (ARCHITECTURE.md, "How it fits together"): Linux's
//! scheduling rules as pure, deterministic logic over plain data. It never reads a
//! clock, takes a lock, switches context or touches a register. Time (in
//! nanoseconds), CPU ids and capacities come in as values; decisions come out as
//! values (`#[must_use]`) that the mechanism (the kernel in `src/`, or the host
//! simulator) carries out.
//!
//! ```text
//!   mechanism (kernel / simulator)            policy (this crate)
//!   ------------------------------            -------------------
//!   wake-up, block, timer tick,   --------->  RunQueue::enqueue_task / dequeue_task /
//!   schedule() at time `now`                  task_tick / pick_next_task ...
//!   switch to task, program timer <---------  TaskId to run, Resched decisions
//! ```
//!
//! Storage is sized once, when a run queue is built (the only allocation); the hot
//! paths (enqueue, dequeue, pick, tick, wake-up) allocate nothing.
//!
//! Section marks in this crate's docs (`§2.7`, `Appendix A §5`) cite
//! `docs/linux-sched-reference.md`, the repository's reference of Linux's scheduler
//! rules and numbers (`cargo xtask lint` checks that each one resolves).
//!
//! Module map:
//! - [`task`]: task ids, CPU ids, scheduling parameters and their validation.
//! - [`class`]: the scheduling-class interface, shaped like Linux's `sched_class`.
//! - [`class_stack`]: RT, fair and idle classes in Linux's pick order, with uclamp accounting.
//! - [`idle_class`]: the per-CPU idle slot below every class.
//! - [`cpu_core`]: one CPU's scheduler driver (Linux's `core.c`): schedule, wake-up, tick,
//!   hrtick, shared by the kernel and the simulator, with a record of its calls for replay.
//! - [`run_queue`]: one CPU's run queue, the type the mechanism holds behind a lock:
//!   the class stack (RT, the fair slot chosen at boot, idle) with uclamp accounting.
//! - [`pelt`]: Linux's integer PELT load tracking and util_est (§2).
//! - [`round_robin`]: the simple round-robin policy the kernel first boots with.
//! - [`policies`]: policies in one file each (lottery, stride, a template), run through
//!   one `Policy` trait and registered by one line (docs/policies.md).
//! - [`rt`]: the real-time class (SCHED_FIFO, SCHED_RR) above fair.
//! - [`uclamp`]: utilization clamping: requests, effective values, run-queue buckets.
//! - [`topology`]: CPU capacities, clusters and the scheduling-domain levels (§7).
//! - [`balance`]: wake-up CPU selection and load balancing between CPUs (§5.5).
//! - [`eas`]: energy-aware wake-up placement: when it runs, and `find_energy_efficient_cpu` (§5).
//! - [`bandwidth`]: CFS bandwidth control: quota, period and burst per group (§4).
//! - [`boot_options`]: the kernel command line, every option checked (host and kernel).
//! - [`weight`]: nice → weight tables and the fixed-point `__calc_delta`.
//! - [`fair`]: the fair class (CFS or EEVDF pick) with task groups.
//! - [`stats`]: histograms, exact quantile samplers, operation cost and wake-up latency.
//!
//! What the kernel and the host exchange (the rt-app scenario model, its validation and
//! wire format, the report's line protocol) is not policy: it is the crate
//! `fairway-contract` (`contract/`), which depends on this one.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod balance;
pub mod bandwidth;
pub mod boot_options;
pub mod class;
pub mod class_stack;
pub mod cpu_core;
pub mod cpufreq;
pub mod eas;
pub mod energy;
pub mod fair;
pub mod idle_class;
pub mod pelt;
pub mod policies;
pub mod round_robin;
pub mod rt;
pub mod run_queue;
pub mod schedutil;
pub mod stats;
pub mod task;
pub mod topology;
pub mod uclamp;
pub mod weight;
