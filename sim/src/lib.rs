//! # fairway-sim: Fairway's host simulator
//!
//! Replays an rt-app scenario (facts §8.3) on the portable scheduling core
//! (`fairway-sched`) over N simulated CPUs in virtual time, deterministically: no wall
//! clock, no hash-map iteration order, one event order (time, kind, sequence).
//!
//! - [`parse`]: rt-app JSON into [`fairway_sched::scenario::Scenario`], errors naming
//!   the JSON path.
//! - [`engine`]: the discrete-event driver of the run queues.
//! - [`sampler`]: the CSV of scheduler signals.
//! - [`results`]: per-task and per-CPU results, the context-switch trace, JSON output.
//!
//! Task groups are parsed into the model (`taskgroup`, `global.taskgroups` shares) but not
//! yet wired into the run queues: that waits for the fair class's group API. The hook is
//! [`engine::Simulation::new`], where each task's group path is known
//! (`Scenario::effective_attributes(..).taskgroup`) before the run queues are built.

use std::fmt;

use fairway_sched::run_queue::PolicyKind;
use fairway_sched::scenario::ScenarioError;
use fairway_sched::task::ParamError;

pub mod cli;
pub mod engine;
pub mod parse;
pub mod results;
pub mod sampler;

pub use engine::{Config, Simulation};
pub use results::Results;
pub use sampler::Sampler;

/// Why a simulation could not run.
#[derive(Debug)]
pub enum SimError {
    /// The scenario is refused (field path and value).
    Scenario(ScenarioError),
    /// The run queue refused a task's parameters.
    Params {
        /// The task instance.
        task: String,
        /// The core's error.
        error: ParamError,
    },
    /// A task loops forever and no duration bounds the run.
    Forever {
        /// The task.
        task: String,
    },
    /// A task loops forever without spending time (no positive run/runtime/sleep, no timer).
    NoProgress {
        /// The task.
        task: String,
    },
    /// Too many zero-time steps at one instant (a policy that never settles).
    Stuck {
        /// The virtual time.
        time_ns: u64,
    },
    /// A bad command-line or configuration value.
    Config(String),
    /// Writing an output failed.
    Io(std::io::Error),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Scenario(e) => write!(f, "{e}"),
            SimError::Params { task, error } => write!(f, "task {task}: {error}"),
            SimError::Forever { task } => write!(
                f,
                "tasks.{task} loops forever and global.duration is -1: give --duration"
            ),
            SimError::NoProgress { task } => write!(
                f,
                "tasks.{task} loops forever without a positive run, runtime, sleep or a timer"
            ),
            SimError::Stuck { time_ns } => {
                write!(f, "no progress at {time_ns} ns: too many zero-time steps")
            }
            SimError::Config(message) => write!(f, "{message}"),
            SimError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<ScenarioError> for SimError {
    fn from(e: ScenarioError) -> Self {
        SimError::Scenario(e)
    }
}

impl From<std::io::Error> for SimError {
    fn from(e: std::io::Error) -> Self {
        SimError::Io(e)
    }
}

/// The run-queue policy for a `--policy` name; `slice_ns` is the round-robin slice.
///
/// `cfs` and `eevdf` map to `PolicyKind::Cfs`/`PolicyKind::Eevdf` once the fair class
/// lands in `fairway-sched`; until then they are refused with a clear message.
pub fn policy_kind(name: &str, slice_ns: u64) -> Result<PolicyKind, SimError> {
    match name {
        "rr" | "round-robin" => Ok(PolicyKind::RoundRobin { slice: slice_ns }),
        "cfs" | "eevdf" => Err(SimError::Config(format!(
            "--policy {name}: fairway-sched has no PolicyKind for the fair class yet \
             (only rr is available)"
        ))),
        _ => Err(SimError::Config(format!(
            "--policy {name}: unknown policy (rr, cfs, eevdf)"
        ))),
    }
}

/// Quotes a CSV field if it holds a comma, a quote or a line break.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}
