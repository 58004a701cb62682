//! The observation floor: what the kernel records about its own work, and
//! prints at the end of a run. It sits above the platform and below the
//! tasks and scheduling floors, which call it with values: nothing here reads
//! a run queue, a task slot or the scheduler's settings (as Linux's trace
//! events are called with the values they record). So observing cannot
//! change what it observes, and the scheduling floor's files never meet each
//! other through it.
//!
//! Observing has three words, trace (what happened), explain (why) and
//! replay (again); the costs are measured beside them:
//!
//! - [`trace`]: the scheduler's events and signals in per-CPU buffers
//!   (feature `trace`), for the runner's `--trace`;
//! - [`bandwidth`]: the trace events of CFS bandwidth control, recorded when
//!   the values change;
//! - [`switches`]: the switch trace, the first N context switches
//!   (`trace_switches=N`);
//! - [`explain`]: the numbers behind the first N decisions (`--explain N`),
//!   in the trace's buffers;
//! - [`replay`]: the record of every call into each CPU's scheduler driver,
//!   for `cargo xtask replay`;
//! - [`costs`]: cycle-counter costs of the hot paths (feature `costs`).

pub mod bandwidth;
pub mod costs;
pub mod explain;
pub mod replay;
pub mod switches;
pub mod trace;
