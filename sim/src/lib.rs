//! # fairway-sim: Fairway's host simulator
//!
//! Replays an rt-app scenario (facts §8.3) on the portable scheduling core
//! (`fairway-sched`) over N simulated CPUs in virtual time, deterministically: no wall
//! clock, no hash-map iteration order, one event order (time, kind, sequence).
//!
//! Scenarios are read by `fairway-rtapp` (rt-app JSON into
//! [`fairway_contract::scenario::Scenario`], errors naming the JSON path).
//!
//! - [`engine`]: the discrete-event driver of the run queues.
//! - [`sampler`]: the CSV of scheduler signals.
//! - [`results`]: per-task and per-CPU results, the context-switch trace, JSON output.
//! - [`judge`]: the energy of a run's task placement against the best one (EAS, issue 14).
//!
//! Task groups (`global.taskgroups`, the `taskgroup` attribute) are created on every
//! CPU's run queue in the same order, and the group-wide load sums are exchanged every
//! millisecond of virtual time (see [`engine`]).

use std::fmt;

use fairway_contract::scenario::ScenarioError;
use fairway_sched::boot_options::{PolicyChoice, SchedConfig};
use fairway_sched::run_queue::PolicyKind;
use fairway_sched::task::ParamError;

pub mod board;
pub mod cli;
pub mod engine;
pub mod judge;
pub mod replay;
pub mod results;
pub mod rtapp_log;
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
    /// Virtual time stopped: too many program steps, reschedules or events at
    /// one instant (a policy that never settles, or a timer re-armed for the
    /// instant it fires at).
    Stuck {
        /// The virtual time.
        time_ns: u64,
        /// The CPU where the limit was crossed, when the step or event has one.
        cpu: Option<usize>,
        /// What went over its limit, and the last of them.
        what: String,
    },
    /// A task misused a mutex (unlocked one it does not hold, locked one twice).
    Resource {
        /// The task instance.
        task: String,
        /// What it did.
        message: String,
        /// The virtual time.
        time_ns: u64,
    },
    /// Every live task is blocked on a resource and nothing ends the run.
    Deadlock {
        /// The blocked tasks.
        tasks: Vec<String>,
        /// The virtual time.
        time_ns: u64,
    },
    /// A bad command-line or configuration value.
    Config(String),
    /// Writing an output failed.
    Io(std::io::Error),
}

/// Whether uclamp is in use for `scenario` under `sched` (`--uclamp`), as the
/// kernel decides it: `auto` (the default) turns it on when the scenario
/// sets a clamp (Linux's `sched_uclamp_used`, §3.2); `--uclamp 0` refuses a
/// scenario with a clamp, as Linux without uclamp refuses one (`EOPNOTSUPP`).
pub fn uclamp_used(
    sched: &fairway_sched::boot_options::SchedConfig,
    scenario: &fairway_contract::scenario::Scenario,
) -> Result<bool, SimError> {
    let clamp = scenario.first_clamp();
    if let (Some(false), Some((field, value))) = (sched.uclamp, &clamp) {
        return Err(SimError::Config(format!(
            "{field}={value}: uclamp is off (--uclamp 0): give --uclamp 1 or auto"
        )));
    }
    Ok(sched.uclamp_used(clamp.is_some()))
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
            SimError::Stuck { time_ns, cpu, what } => {
                write!(f, "no progress at {time_ns} ns")?;
                if let Some(cpu) = cpu {
                    write!(f, " on cpu{cpu}")?;
                }
                write!(f, ": {what}")
            }
            SimError::Resource {
                task,
                message,
                time_ns,
            } => write!(f, "task {task} at {time_ns} ns: {message}"),
            SimError::Deadlock { tasks, time_ns } => write!(
                f,
                "deadlock at {time_ns} ns: every live task is blocked on a resource ({}) \
                 and global.duration does not end the run",
                tasks.join(", ")
            ),
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

/// The run-queue policy `sched=name` gives on `nr_cpus` CPUs with a `slice_ns`
/// round-robin slice and a `tick_ns` tick, for tests and tools that name a
/// policy: the mapping is `SchedConfig::policy_kind`'s, the names
/// `PolicyChoice::parse`'s (the kernel's command line parser's).
pub fn policy_kind(
    name: &str,
    slice_ns: u64,
    nr_cpus: usize,
    tick_ns: u64,
) -> Result<PolicyKind, SimError> {
    let policy = PolicyChoice::parse(name).ok_or_else(|| {
        let names: Vec<&str> = PolicyChoice::names().collect();
        SimError::Config(format!("sched={name}: must be one of {}", names.join(", ")))
    })?;
    let config = SchedConfig {
        policy,
        hz: 1_000_000_000 / tick_ns.max(1),
        slice_us: slice_ns / 1000,
        ..SchedConfig::DEFAULT
    };
    Ok(config.policy_kind(nr_cpus))
}

/// Quotes a CSV field if it holds a comma, a quote or a line break.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod uclamp_tests {
    use fairway_sched::boot_options::SchedConfig;

    /// `auto` follows the scenario, `1` and `0` decide, and `0` refuses a
    /// scenario that sets a clamp, naming the field and value.
    #[test]
    fn uclamp_auto_follows_the_scenario_and_off_refuses_a_clamp() {
        let plain = fairway_rtapp::parse(r#"{"tasks": {"t": {"loop": 1, "run": 1000}}}"#).unwrap();
        let clamped =
            fairway_rtapp::parse(r#"{"tasks": {"t": {"loop": 1, "run": 1000, "util_max": 300}}}"#)
                .unwrap();
        let config = |word: &str| SchedConfig::parse(word).unwrap();
        assert!(!super::uclamp_used(&config(""), &plain).unwrap());
        assert!(super::uclamp_used(&config(""), &clamped).unwrap());
        assert!(super::uclamp_used(&config("uclamp=1"), &plain).unwrap());
        assert!(!super::uclamp_used(&config("uclamp=0"), &plain).unwrap());
        assert_eq!(
            super::uclamp_used(&config("uclamp=0"), &clamped)
                .unwrap_err()
                .to_string(),
            "tasks.t.util_max=300: uclamp is off (--uclamp 0): give --uclamp 1 or auto"
        );
    }
}
