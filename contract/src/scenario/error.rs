//! The typed error of a scenario: which field (as a dotted path) and what is wrong with its value.

use alloc::string::String;
use core::fmt::{self, Write as _};

/// What is wrong with the field at [`ScenarioError::path`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is not well-formed JSON (or not the expected document shape).
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// The field has the wrong JSON type.
    WrongType {
        /// What was expected, e.g. "an integer".
        expected: &'static str,
        /// What was found, rendered as text.
        found: String,
    },
    /// A required field is missing (e.g. a timer's `period`).
    Missing,
    /// A key that is neither an event nor a property of this object.
    UnknownEvent,
    /// An rt-app event this model does not support yet (lock, wait, barrier, fork...).
    UnsupportedEvent,
    /// A duration (µs) below zero.
    Negative {
        /// The value given.
        value: i64,
    },
    /// A value outside `min..=max`.
    OutOfRange {
        /// The value given.
        value: i64,
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// `util_min` is above `util_max`.
    ClampOrder {
        /// The effective `util_min`.
        util_min: i64,
        /// The effective `util_max`.
        util_max: i64,
    },
    /// An affinity list that names no CPU.
    EmptyAffinity,
    /// More task instances than the model allows.
    TooManyTasks {
        /// Instances asked for, summed over all tasks.
        count: i64,
        /// The limit, [`super::MAX_TASKS`].
        max: usize,
    },
    /// More task groups than the model allows.
    TooManyGroups {
        /// Groups the scenario creates, the parents its paths imply included.
        count: usize,
        /// The limit, [`super::MAX_TASK_GROUPS`].
        max: usize,
        /// The first group past the limit, in creation order (parents first).
        first_beyond: String,
    },
    /// A policy name rt-app does not know, or one Fairway does not model (`SCHED_DEADLINE`).
    UnknownPolicy {
        /// The name given.
        name: String,
    },
    /// A policy rt-app knows that Fairway does not model.
    UnsupportedPolicy {
        /// The name given.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A task-group path that is not absolute or has an empty component.
    BadTaskGroupPath {
        /// The path given.
        path: String,
    },
    /// A per-CPU list (`global.capacities`, `global.frequency_scales`) whose
    /// length is not the machine's CPU count.
    ListLength {
        /// The list's length.
        len: usize,
        /// The machine's CPUs.
        cpus: usize,
    },
    /// A limit set on the root task group, which (as Linux's root cgroup) has
    /// none.
    RootGroupLimit,
    /// The scenario has no task.
    NoTasks,
    /// A task name that is empty or has a character other than ASCII letters,
    /// digits and punctuation (a space, a control character, NUL, non-ASCII).
    BadName,
    /// A task name too long for the kernel's task table, with its instance number.
    NameTooLong {
        /// The longest instance name, as the kernel would name it.
        instance_name: String,
        /// The limit in bytes, [`super::MAX_NAME_BYTES`].
        max: usize,
    },
    /// Two task instances would have the same name.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A task loops forever and nothing ends the run (`global.duration` ≤ 0 runs
    /// until every task has finished, as in rt-app).
    RunsForever,
    /// A task loops forever without an event that takes time (a positive run,
    /// runtime or sleep, or a timer): it could never be stopped or simulated.
    NoProgress,
    /// A feature of rt-app that Fairway does not model yet.
    Unsupported {
        /// What.
        what: &'static str,
    },
    /// An empty name of a mutex, condition, barrier, semaphore or task.
    EmptyName,
    /// A `resume` or `fork` names no task of the scenario.
    NoSuchTask {
        /// The name given.
        name: String,
    },
    /// A barrier used by a task started by `fork` (its users are counted from the
    /// file, as rt-app does).
    BarrierWithFork,
    /// An integer too large for 64 bits.
    TooLarge {
        /// The number as written.
        written: String,
    },
    /// A phase (or a task without phases) has no event.
    NoEvents,
    /// A bandwidth setting Linux's `tg_set_cfs_bandwidth` refuses (`EINVAL`).
    Bandwidth {
        /// `quota`, `period` or `burst`.
        field: &'static str,
        /// The value given, in µs.
        value_us: i64,
        /// The rule it breaks.
        rule: &'static str,
    },
}

/// A scenario field Fairway refuses, named by its JSON path
/// (e.g. `tasks.thread0.phases.p1.run`), like `EINVAL` with a reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// Dotted path of the offending field, from the document root.
    pub path: String,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl ScenarioError {
    /// An error of `kind` at `path`.
    pub fn new(path: impl Into<String>, kind: ErrorKind) -> Self {
        ScenarioError {
            path: path.into(),
            kind,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names and keys come from the file: a control character (NUL, an
        // escape sequence) is shown escaped, never sent to the terminal.
        let f = &mut Escaped(formatter);
        let path = if self.path.is_empty() {
            "<root>"
        } else {
            self.path.as_str()
        };
        write!(f, "{path}: ")?;
        match &self.kind {
            ErrorKind::Syntax { message } => write!(f, "not valid JSON: {message}"),
            ErrorKind::WrongType { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ErrorKind::Missing => write!(f, "missing"),
            ErrorKind::UnknownEvent => write!(f, "unknown event or property"),
            ErrorKind::UnsupportedEvent => write!(f, "event not supported by Fairway yet"),
            ErrorKind::Negative { value } => write!(f, "{value} is negative"),
            ErrorKind::OutOfRange { value, min, max } => {
                write!(f, "{value} is outside {min}..={max}")
            }
            ErrorKind::ClampOrder { util_min, util_max } => {
                write!(f, "util_min {util_min} is above util_max {util_max}")
            }
            ErrorKind::EmptyAffinity => write!(f, "affinity names no CPU"),
            ErrorKind::TooManyTasks { count, max } => {
                write!(f, "{count} task instances, at most {max} are supported")
            }
            ErrorKind::TooManyGroups {
                count,
                max,
                first_beyond,
            } => write!(
                f,
                "{count} task groups (the parents of nested paths included), at most {max} \
                 are supported (the kernel's run queues hold {max} and the root); \
                 {first_beyond} is the first beyond the limit"
            ),
            ErrorKind::UnknownPolicy { name } => write!(f, "unknown policy \"{name}\""),
            ErrorKind::UnsupportedPolicy { name, reason } => {
                write!(f, "{name} is not supported: {reason}")
            }
            ErrorKind::BadTaskGroupPath { path } => write!(
                f,
                "task-group path \"{path}\" must start with '/' and have no empty component"
            ),
            ErrorKind::ListLength { len, cpus } => write!(
                f,
                "the list has {len} values for a machine of {cpus} CPUs: one per CPU"
            ),
            ErrorKind::RootGroupLimit => write!(
                f,
                "the root group \"/\" takes no limit (as Linux's root cgroup has neither \
                 cpu.weight nor cpu.max); put the tasks in a group below it"
            ),
            ErrorKind::NoTasks => write!(f, "the scenario has no task"),
            ErrorKind::NoEvents => write!(f, "no event"),
            ErrorKind::Bandwidth {
                field,
                value_us,
                rule,
            } => write!(f, "{field} {value_us} us: {rule}"),
            ErrorKind::EmptyName => write!(f, "the name is empty"),
            ErrorKind::Unsupported { what } => {
                write!(f, "{what} is not supported by Fairway yet")
            }
            ErrorKind::NoSuchTask { name } => write!(f, "no task is named \"{name}\""),
            ErrorKind::BarrierWithFork => write!(
                f,
                "a barrier cannot be used by a task started by fork (rt-app counts a \
                 barrier's users from the file)"
            ),
            ErrorKind::TooLarge { written } => {
                write!(f, "{written} does not fit in a 64-bit integer")
            }
            ErrorKind::BadName => write!(
                f,
                "a task name must be ASCII letters, digits and punctuation (no space, \
                 control character, NUL or non-ASCII character)"
            ),
            ErrorKind::NameTooLong { instance_name, max } => write!(
                f,
                "instance name \"{instance_name}\" is longer than {max} bytes"
            ),
            ErrorKind::DuplicateName { name } => {
                write!(f, "two task instances would both be named \"{name}\"")
            }
            ErrorKind::RunsForever => write!(
                f,
                "loops forever, and nothing ends the run: give global.duration in seconds \
                 (0 and -1 run until every task has finished, as in rt-app)"
            ),
            ErrorKind::NoProgress => write!(
                f,
                "loops forever without an event that takes time (a positive run, runtime, \
                 sleep, or a timer)"
            ),
        }
    }
}

/// A writer that passes text on with control characters (other than a line
/// break) escaped as `\u{..}`, `\t`, `\r`.
struct Escaped<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for Escaped<'_, '_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for c in text.chars() {
            if c.is_control() && c != '\n' {
                write!(self.0, "{}", c.escape_default())?;
            } else {
                fmt::Write::write_char(self.0, c)?;
            }
        }
        Ok(())
    }
}
