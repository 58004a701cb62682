//! The workload model: an rt-app scenario (facts §8.3) as plain data, shared by the host
//! simulator and the kernel.
//!
//! The model mirrors the rt-app JSON grammar (`global`, `tasks`, task and phase properties,
//! events in order) and keeps the values as written (signed integers), so that
//! [`Scenario::validate`] can refuse a bad one with the field's path and value, like
//! `EINVAL`. Parsing the JSON text is the host's job (`fairway-rtapp`); the kernel receives
//! the model already built.
//!
//! ```text
//!  Scenario ─ global: duration, calibration, default policy, CPU capacities, task groups
//!           └ tasks[] ─ name, instances, loop, delay, attributes (policy, priority, cpus,
//!                       util_min/util_max, taskgroup)
//!                     └ phases[] ─ name, loop, attributes (override the task's)
//!                                └ events[] ─ run | runtime | sleep | timer | yield |
//!                                             lock | unlock | wait | signal | broad |
//!                                             sync | barrier | suspend | resume |
//!                                             sem_post | sem_wait | fork | mem | iorun
//! ```

mod error;
pub mod program;
pub mod resources;
#[cfg(test)]
mod tests;
pub mod validate;
pub mod wire;

pub use error::{ErrorKind, ScenarioError};

use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The most task instances a scenario may create, started or forked: the one task
/// limit of Fairway, checked on the host before boot. The kernel keeps a few task
/// slots more for its own tasks (`src/config.rs`).
pub const MAX_TASKS: usize = 10_000;

/// The most task groups a scenario may create, the parents its paths imply included
/// (`/a/b` is two groups): the kernel's run queues hold these and the root (64, a
/// pick's groups are one 64-bit set), so the host refuses more before boot, and the
/// simulator takes what the kernel takes.
pub const MAX_TASK_GROUPS: usize = 63;

/// The longest task-instance name, in bytes (the kernel's task table keeps names
/// whole, so two instances never share a name by truncation).
pub const MAX_NAME_BYTES: usize = 32;

/// Linux's `MIN_SHARES` and `MAX_SHARES`, the range of a group's `cpu.shares` (§9).
pub const SHARES_RANGE: (i64, i64) = (2, 1 << 18);

/// The default shares of a task group (`NICE_0_LOAD` in user units, as `cpu.shares`).
pub const DEFAULT_SHARES: i64 = 1024;

/// The largest `util_min`/`util_max` and CPU capacity (`SCHED_CAPACITY_SCALE`, §9).
pub const CAPACITY_SCALE: i64 = 1024;

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The `global` object.
    pub global: Global,
    /// The `tasks` object, in document order.
    pub tasks: Vec<TaskSpec>,
}

/// How rt-app turns `run` into loops of its calibrated busy function (§8.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// `"CPUn"`: measure on CPU n at start.
    Cpu(i64),
    /// A fixed ns-per-loop value (LISA writes the fastest CPU's).
    NsPerLoop(i64),
}

/// The `global` object (§8.3), plus Fairway's topology extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Global {
    /// Seconds; -1 means "until every task has finished".
    pub duration_s: i64,
    /// Calibration; the simulator treats `run` as invariant work and only records it.
    pub calibration: Calibration,
    /// `default_policy`, used by tasks that name none.
    pub default_policy: PolicyName,
    /// Fairway extension `capacities`: `capacity_orig` of each CPU (§7.1); empty = all 1024.
    pub capacities: Vec<i64>,
    /// Fairway extension `frequency_scales`: `cur_freq * 1024 / max_freq` per CPU (§2.3);
    /// empty = all 1024.
    pub frequency_scales: Vec<i64>,
    /// Fairway extension `taskgroups`: `{ "/path": { "shares": n } }`. Groups named by a
    /// task but not listed here get [`DEFAULT_SHARES`].
    pub task_groups: Vec<TaskGroup>,
    /// `pi_enabled`: mutexes use priority inheritance (an RT waiter lends its
    /// priority to the holder, as Linux's rt_mutex does).
    pub pi_enabled: bool,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            duration_s: -1,
            calibration: Calibration::Cpu(0),
            default_policy: PolicyName::Other,
            capacities: Vec::new(),
            frequency_scales: Vec::new(),
            task_groups: Vec::new(),
            pi_enabled: false,
        }
    }
}

/// A task group (cgroup): its `cpu.shares`, and its bandwidth limit as cgroup v2's
/// `cpu.max` ("quota period", quota `max` for none) and `cpu.max.burst`, in µs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskGroup {
    /// Absolute path, e.g. `/apps/background`.
    pub path: String,
    /// `cpu.shares`, in [`SHARES_RANGE`].
    pub shares: i64,
    /// The quota per period in µs; `None`: `max` (no limit).
    pub quota_us: Option<i64>,
    /// The period in µs (100,000 by default).
    pub period_us: i64,
    /// `cpu.max.burst` in µs (0 by default).
    pub burst_us: i64,
    /// Limits written later in the run (`cpu.max.changes`), in time order.
    pub changes: Vec<BandwidthChange>,
}

/// A group's `cpu.max` and `cpu.max.burst` as written at `at_us` µs after the run's
/// start (`cpu.max.changes`, Fairway's extension: a script writing the cgroup files
/// mid-run). A field the change leaves out keeps its value from before; the model holds
/// the resolved values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandwidthChange {
    /// When, in µs from the run's start.
    pub at_us: i64,
    /// The quota per period in µs; `None`: `max`.
    pub quota_us: Option<i64>,
    /// The period in µs.
    pub period_us: i64,
    /// `cpu.max.burst` in µs.
    pub burst_us: i64,
}

impl BandwidthChange {
    /// Its settings in ns, for the scheduling core (validated values).
    pub fn bandwidth(&self) -> fairway_sched::bandwidth::Bandwidth {
        bandwidth_ns(self.quota_us, self.period_us, self.burst_us)
    }
}

/// Bandwidth settings in ns from µs (validated values; a negative one reads as 0).
pub(crate) fn bandwidth_ns(
    quota_us: Option<i64>,
    period_us: i64,
    burst_us: i64,
) -> fairway_sched::bandwidth::Bandwidth {
    let ns = |us: i64| (us.max(0) as u64).saturating_mul(1000);
    fairway_sched::bandwidth::Bandwidth {
        period: ns(period_us),
        quota: quota_us.map(ns),
        burst: ns(burst_us),
    }
}

impl TaskGroup {
    /// A group with `shares` and no bandwidth limit.
    pub fn with_shares(path: String, shares: i64) -> Self {
        TaskGroup {
            path,
            shares,
            quota_us: None,
            period_us: DEFAULT_PERIOD_US,
            burst_us: 0,
            changes: Vec::new(),
        }
    }

    /// Its bandwidth settings in ns, for the scheduling core (validated values).
    pub fn bandwidth(&self) -> fairway_sched::bandwidth::Bandwidth {
        bandwidth_ns(self.quota_us, self.period_us, self.burst_us)
    }

    /// Whether it has a quota at some time of the run: its run queues need
    /// bandwidth control.
    pub fn ever_limited(&self) -> bool {
        self.quota_us.is_some() || self.changes.iter().any(|c| c.quota_us.is_some())
    }
}

/// The default `cpu.max` period: 100,000 µs (`default_cfs_period()`, §4.1).
pub const DEFAULT_PERIOD_US: i64 = 100_000;

/// The policies rt-app names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyName {
    /// `SCHED_OTHER` (`SCHED_NORMAL`); `priority` is the nice value.
    Other,
    /// `SCHED_BATCH`; `priority` is the nice value.
    Batch,
    /// `SCHED_IDLE`; `priority` is ignored.
    Idle,
    /// `SCHED_FIFO`; `priority` is the RT priority.
    Fifo,
    /// `SCHED_RR`; `priority` is the RT priority.
    RoundRobin,
}

impl PolicyName {
    /// The policy for an rt-app name (`SCHED_OTHER`, ...), or `None`.
    pub fn from_rt_app(name: &str) -> Option<PolicyName> {
        Some(match name {
            "SCHED_OTHER" | "SCHED_NORMAL" => PolicyName::Other,
            "SCHED_BATCH" => PolicyName::Batch,
            "SCHED_IDLE" => PolicyName::Idle,
            "SCHED_FIFO" => PolicyName::Fifo,
            "SCHED_RR" => PolicyName::RoundRobin,
            _ => return None,
        })
    }

    /// rt-app's default priority: 0 for fair policies, 10 for RT ones.
    pub const fn default_priority(self) -> i64 {
        match self {
            PolicyName::Fifo | PolicyName::RoundRobin => 10,
            _ => 0,
        }
    }
}

/// Scheduling attributes settable at task and at phase level; `None` = inherit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `policy`.
    pub policy: Option<PolicyName>,
    /// `priority`: nice for fair policies, RT priority for FIFO/RR.
    pub priority: Option<i64>,
    /// `cpus`: the affinity.
    pub cpus: Option<Vec<i64>>,
    /// `util_min` (uclamp, §3).
    pub util_min: Option<i64>,
    /// `util_max` (uclamp, §3).
    pub util_max: Option<i64>,
    /// `taskgroup` path; `""` means none.
    pub taskgroup: Option<String>,
    /// `dl-runtime` of a fair task (µs): its EEVDF request size, Linux 6.12's custom
    /// slice (`sched_attr.sched_runtime` of SCHED_NORMAL), clamped to 0.1..=100 ms.
    pub custom_slice_us: Option<i64>,
}

impl Attributes {
    /// `self` with every unset field taken from `parent`.
    pub fn inherit(&self, parent: &Attributes) -> Attributes {
        Attributes {
            policy: self.policy.or(parent.policy),
            priority: self.priority.or(parent.priority),
            cpus: self.cpus.clone().or_else(|| parent.cpus.clone()),
            util_min: self.util_min.or(parent.util_min),
            util_max: self.util_max.or(parent.util_max),
            taskgroup: self.taskgroup.clone().or_else(|| parent.taskgroup.clone()),
            custom_slice_us: self.custom_slice_us.or(parent.custom_slice_us),
        }
    }

    /// Whether any scheduling attribute is set (a phase then changes them when it starts).
    pub fn is_empty(&self) -> bool {
        *self == Attributes::default()
    }
}

/// One task object; it creates `instances` threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    /// The key in `tasks`.
    pub name: String,
    /// `instance` (default 1; 0 creates none).
    pub instances: i64,
    /// `loop`: how often the phases run in sequence; -1 (the default) is forever.
    pub loop_count: i64,
    /// `delay` in µs before the first phase.
    pub delay_us: i64,
    /// Task-level attributes.
    pub attributes: Attributes,
    /// Phases, in document order. A task with events directly in it has one implicit phase.
    pub phases: Vec<Phase>,
}

/// One phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The key in `phases`; empty for the implicit phase of a task without `phases`.
    pub name: String,
    /// `loop` (default 1).
    pub loop_count: i64,
    /// Phase-level attributes (override the task's from this phase on).
    pub attributes: Attributes,
    /// Events in document order.
    pub events: Vec<NamedEvent>,
}

/// An event and its key as written (`run0`, `timer1`...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedEvent {
    /// The key in the phase object.
    pub key: String,
    /// The event.
    pub event: Event,
}

/// rt-app's timer modes (rt-app `doc/tutorial.txt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimerMode {
    /// After an overrun the timer restarts from now (the default).
    #[default]
    Relative,
    /// The timer keeps its grid; overruns can cascade.
    Absolute,
}

/// One event (§8.3); times in µs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Capacity-invariant work: µs at capacity 1024 and maximum frequency.
    Run {
        /// µs of work.
        us: i64,
    },
    /// Busy for wall time, whatever the capacity.
    Runtime {
        /// µs of wall time.
        us: i64,
    },
    /// Sleep, relative to now.
    Sleep {
        /// µs.
        us: i64,
    },
    /// Sleep to the timer's next period boundary: `next = previous + period`.
    Timer {
        /// The timer's name; names starting with `unique` are private to each instance.
        reference: String,
        /// The period in µs (`None` if the JSON lacks it: refused by validation).
        period_us: Option<i64>,
        /// What happens after an overrun.
        mode: TimerMode,
    },
    /// Give up the CPU (`sched_yield`).
    Yield,
    /// Take a mutex, sleeping while another task holds it; waiters take it in
    /// arrival order (`docs/rtapp.md`, "Resources").
    Lock {
        /// The mutex's name.
        mutex: String,
    },
    /// Release a mutex the task holds; the first waiter takes it.
    Unlock {
        /// The mutex's name.
        mutex: String,
    },
    /// Condition wait: release `mutex`, sleep until `condition` is signalled, take
    /// `mutex` again.
    Wait {
        /// The condition's name (rt-app's `ref`).
        condition: String,
        /// The mutex the task holds.
        mutex: String,
    },
    /// Wake the first task waiting on a condition (lost if none waits).
    Signal {
        /// The condition's name.
        condition: String,
    },
    /// Wake every task waiting on a condition (rt-app's `broad`).
    Broadcast {
        /// The condition's name.
        condition: String,
    },
    /// Take `mutex`, signal `condition`, wait on it, release `mutex`: wake a
    /// partner and block, atomically.
    Sync {
        /// The condition's name.
        condition: String,
        /// The mutex.
        mutex: String,
    },
    /// Meet every other task that uses the same barrier; the last to arrive
    /// releases the others.
    Barrier {
        /// The barrier's name.
        name: String,
    },
    /// Block until another task resumes this one.
    Suspend,
    /// Wake the named task (every instance of it) if it is suspended.
    Resume {
        /// A task's name (as in `tasks`) or an instance's (`name-i`).
        task: String,
    },
    /// Add one to a counting semaphore (starting at 0), waking its first waiter.
    SemPost {
        /// The semaphore's name.
        name: String,
    },
    /// Take one from a counting semaphore, sleeping while it is 0.
    SemWait {
        /// The semaphore's name.
        name: String,
    },
    /// Start one more instance of a task now.
    Fork {
        /// The task's name in `tasks`.
        task: String,
    },
    /// Write `bytes` to a per-task buffer: here, CPU work of
    /// `bytes / MEMORY_BYTES_PER_US` µs (`docs/rtapp.md`).
    Mem {
        /// Bytes.
        bytes: i64,
    },
    /// Write `bytes` to the I/O device: here, CPU work of
    /// `bytes / MEMORY_BYTES_PER_US` µs (`docs/rtapp.md`).
    IoRun {
        /// Bytes.
        bytes: i64,
    },
}

/// How fast `mem` and `iorun` write, as capacity-invariant work: 1,000 bytes per
/// µs at capacity 1024 and maximum frequency (1 GB/s, the order of a memcpy of a
/// buffer that misses the caches). Fairway has no memory hierarchy or I/O device
/// to model, so the events cost CPU time proportional to their size.
pub const MEMORY_BYTES_PER_US: i64 = 1000;

impl Event {
    /// The capacity-invariant work of a busy event in µs (`run`, `mem`, `iorun`).
    pub fn work_us(&self) -> Option<i64> {
        match *self {
            Event::Run { us } => Some(us),
            Event::Mem { bytes } | Event::IoRun { bytes } => {
                Some(bytes.max(0).saturating_add(MEMORY_BYTES_PER_US - 1) / MEMORY_BYTES_PER_US)
            }
            _ => None,
        }
    }
}

impl Scenario {
    /// The path of a task, `tasks.<name>`.
    pub fn task_path(task: &TaskSpec) -> String {
        let mut path = String::from("tasks.");
        path.push_str(&task.name);
        path
    }

    /// The path of a phase; the implicit phase's path is its task's.
    pub fn phase_path(task: &TaskSpec, phase: &Phase) -> String {
        let mut path = Self::task_path(task);
        if !phase.name.is_empty() {
            path.push_str(".phases.");
            path.push_str(&phase.name);
        }
        path
    }

    /// The first clamp the scenario sets (`util_min` or `util_max`, at task or
    /// phase level), as its field path and value: a scenario with one uses
    /// uclamp, which `uclamp=auto` turns on for it (Linux's
    /// `sched_uclamp_used`, §3.2), and `uclamp=0` cannot run (Linux without
    /// uclamp refuses the clamp, `EOPNOTSUPP`).
    pub fn first_clamp(&self) -> Option<(String, i64)> {
        self.tasks.iter().find_map(|task| {
            let levels = core::iter::once((Self::task_path(task), &task.attributes)).chain(
                task.phases
                    .iter()
                    .map(|phase| (Self::phase_path(task, phase), &phase.attributes)),
            );
            levels.into_iter().find_map(|(mut path, attributes)| {
                let (field, value) = match (attributes.util_min, attributes.util_max) {
                    (Some(value), _) => ("util_min", value),
                    (None, Some(value)) => ("util_max", value),
                    (None, None) => return None,
                };
                path.push('.');
                path.push_str(field);
                Some((path, value))
            })
        })
    }

    /// The total number of task instances (saturating: a count this large is
    /// refused by [`Scenario::validate`], never wrapped).
    pub fn instance_count(&self) -> i64 {
        self.tasks
            .iter()
            .fold(0i64, |sum, t| sum.saturating_add(t.instances.max(0)))
    }

    /// The name of instance `index` of `task`, as the kernel and the simulator
    /// name it: the task's name alone, or `name-index` when it has several.
    pub fn instance_name(task: &TaskSpec, index: i64) -> String {
        if task.instances == 1 {
            task.name.clone()
        } else {
            alloc::format!("{}-{index}", task.name)
        }
    }

    /// Every group path the scenario names (in `global.taskgroups` or a `taskgroup`
    /// attribute of a task or phase) with its ancestors, parents before children.
    pub fn group_paths(&self) -> Vec<String> {
        let mut paths = BTreeSet::new();
        let named = self
            .global
            .task_groups
            .iter()
            .map(|g| g.path.as_str())
            .chain(self.tasks.iter().flat_map(|t| {
                t.attributes.taskgroup.as_deref().into_iter().chain(
                    t.phases
                        .iter()
                        .filter_map(|p| p.attributes.taskgroup.as_deref()),
                )
            }));
        for path in named {
            let mut end = path.len();
            while end > 1 {
                paths.insert(path[..end].to_string());
                end = path[..end].rfind('/').unwrap_or(0);
            }
        }
        let mut paths: Vec<String> = paths.into_iter().collect();
        paths.sort_by_key(|p| (p.matches('/').count(), p.clone()));
        paths
    }

    /// The bandwidth limit of the group at `path` (listed in `global.taskgroups`, else
    /// none).
    pub fn group_bandwidth(&self, path: &str) -> fairway_sched::bandwidth::Bandwidth {
        self.global
            .task_groups
            .iter()
            .find(|g| g.path == path)
            .map_or(
                fairway_sched::bandwidth::Bandwidth::UNLIMITED,
                TaskGroup::bandwidth,
            )
    }

    /// The shares of the group at `path` (listed in `global.taskgroups`, else the default).
    pub fn group_shares(&self, path: &str) -> i64 {
        self.global
            .task_groups
            .iter()
            .find(|g| g.path == path)
            .map_or(DEFAULT_SHARES, |g| g.shares)
    }
}
