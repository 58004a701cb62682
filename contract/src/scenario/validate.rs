//! Validation of a [`Scenario`] and its translation into [`TaskParams`], refusing bad values
//! with the field's path, the way `sched_setattr` refuses them with `EINVAL`.

use alloc::format;
use alloc::string::String;

use alloc::collections::BTreeSet;

use super::program::Cursor;
use super::{
    Attributes, CAPACITY_SCALE, Calibration, ErrorKind, Event, MAX_NAME_BYTES, MAX_TASK_GROUPS,
    MAX_TASKS, MEMORY_BYTES_PER_US, Phase, PolicyName, SHARES_RANGE, Scenario, ScenarioError,
    TaskGroup, TaskSpec,
};
use fairway_sched::task::{CpuId, CpuMask, MAX_CPUS, Policy, TaskParams};

/// The longest duration accepted in one field, in µs (about 11.6 days), so that every time
/// converts to nanoseconds in a `u64` with room to add.
pub const MAX_DURATION_US: i64 = 1_000_000_000_000;

fn out_of_range(path: String, value: i64, min: i64, max: i64) -> ScenarioError {
    ScenarioError::new(path, ErrorKind::OutOfRange { value, min, max })
}

fn check_range(
    path: impl FnOnce() -> String,
    value: i64,
    min: i64,
    max: i64,
) -> Result<(), ScenarioError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(out_of_range(path(), value, min, max))
    }
}

fn check_duration(path: impl FnOnce() -> String, us: i64) -> Result<(), ScenarioError> {
    if us < 0 {
        Err(ScenarioError::new(
            path(),
            ErrorKind::Negative { value: us },
        ))
    } else {
        check_range(path, us, 0, MAX_DURATION_US)
    }
}

/// Checks a group's `cpu.max` and `cpu.max.burst` as Linux's `tg_set_cfs_bandwidth`
/// does (docs/linux-sched-reference.md §4.1), naming the JSON field and the value in µs;
/// then each later change of them (`cpu.max.changes`), which must come in time order
/// within the run.
fn check_group_bandwidth(group: &TaskGroup, duration_s: i64) -> Result<(), ScenarioError> {
    let prefix = format!("global.taskgroups.{}", group.path);
    check_bandwidth(&prefix, group.quota_us, group.period_us, group.burst_us)?;
    // A change must fall inside the run (before its end when it has one).
    let last = if duration_s > 0 {
        duration_s.saturating_mul(1_000_000) - 1
    } else {
        MAX_DURATION_US
    };
    let mut earliest = 0;
    for (index, change) in group.changes.iter().enumerate() {
        let here = format!("{prefix}.cpu.max.changes.{index}");
        check_range(|| format!("{here}.at"), change.at_us, earliest, last)?;
        earliest = change.at_us.saturating_add(1);
        check_bandwidth(&here, change.quota_us, change.period_us, change.burst_us)?;
    }
    Ok(())
}

/// Checks one setting of `cpu.max` and `cpu.max.burst`, the fields under `prefix`.
fn check_bandwidth(
    prefix: &str,
    quota_us: Option<i64>,
    period_us: i64,
    burst_us: i64,
) -> Result<(), ScenarioError> {
    let path = |field: &str| format!("{prefix}.{field}");
    let negative = [
        ("cpu.max", quota_us.unwrap_or(0)),
        ("cpu.max", period_us),
        ("cpu.max.burst", burst_us),
    ];
    for (field, value) in negative {
        if value < 0 {
            return Err(ScenarioError::new(
                path(field),
                ErrorKind::Negative { value },
            ));
        }
    }
    let too_large = |value: i64| value > i64::MAX / 1000;
    if too_large(period_us) || quota_us.is_some_and(too_large) {
        return Err(ScenarioError::new(
            path("cpu.max"),
            ErrorKind::Bandwidth {
                field: if too_large(period_us) {
                    "period"
                } else {
                    "quota"
                },
                value_us: quota_us.unwrap_or(period_us).max(period_us),
                rule: "does not fit in nanoseconds",
            },
        ));
    }
    if too_large(burst_us) {
        return Err(ScenarioError::new(
            path("cpu.max.burst"),
            ErrorKind::Bandwidth {
                field: "burst",
                value_us: burst_us,
                rule: "does not fit in nanoseconds",
            },
        ));
    }
    super::bandwidth_ns(quota_us, period_us, burst_us)
        .validate()
        .map_err(|error| {
            let field = if error.field == "burst" {
                "cpu.max.burst"
            } else {
                "cpu.max"
            };
            ScenarioError::new(
                path(field),
                ErrorKind::Bandwidth {
                    field: error.field,
                    value_us: (error.value / 1000) as i64,
                    rule: error.rule,
                },
            )
        })
}

/// Checks the name of a mutex, condition, barrier, semaphore or task: not empty.
fn check_name(path: impl FnOnce() -> String, name: &str) -> Result<(), ScenarioError> {
    if name.is_empty() {
        Err(ScenarioError::new(path(), ErrorKind::EmptyName))
    } else {
        Ok(())
    }
}

/// Checks a task-group path: absolute, no empty component (`/` alone is the root group).
pub fn check_group_path(path: &str, field: impl FnOnce() -> String) -> Result<(), ScenarioError> {
    let ok = path == "/" || (path.starts_with('/') && path[1..].split('/').all(|c| !c.is_empty()));
    if ok {
        Ok(())
    } else {
        Err(ScenarioError::new(
            field(),
            ErrorKind::BadTaskGroupPath { path: path.into() },
        ))
    }
}

impl Scenario {
    /// Checks every field for a machine with `nr_cpus` CPUs, and that the run ends;
    /// the first bad one is returned.
    pub fn validate(&self, nr_cpus: usize) -> Result<(), ScenarioError> {
        self.validate_for(nr_cpus, false)
    }

    /// [`Scenario::validate`], where `ended_elsewhere` says whether the caller ends
    /// the run itself (the simulator's `--duration`), whatever `global.duration`.
    pub fn validate_for(&self, nr_cpus: usize, ended_elsewhere: bool) -> Result<(), ScenarioError> {
        self.validate_global(nr_cpus)?;
        if self.tasks.is_empty() {
            return Err(ScenarioError::new("tasks", ErrorKind::NoTasks));
        }
        for task in &self.tasks {
            let path = Self::task_path(task);
            check_range(
                || format!("{path}.instance"),
                task.instances,
                0,
                MAX_TASKS as i64,
            )?;
        }
        let count = self.instance_count();
        if count > MAX_TASKS as i64 {
            return Err(ScenarioError::new(
                "tasks",
                ErrorKind::TooManyTasks {
                    count,
                    max: MAX_TASKS,
                },
            ));
        }
        self.validate_group_count()?;
        for task in &self.tasks {
            self.validate_task(task, nr_cpus)?;
        }
        self.validate_names()?;
        self.validate_end(ended_elsewhere)
    }

    /// At most [`MAX_TASK_GROUPS`] groups, counted as they are created (parents
    /// first); the error's path is where the first group past the limit is named.
    fn validate_group_count(&self) -> Result<(), ScenarioError> {
        let paths = self.group_paths();
        let Some(first_beyond) = paths.get(MAX_TASK_GROUPS) else {
            return Ok(());
        };
        let declared =
            |path: &str| path == first_beyond || path.starts_with(&format!("{first_beyond}/"));
        let field = if self.global.task_groups.iter().any(|g| declared(&g.path)) {
            String::from("global.taskgroups")
        } else {
            self.tasks
                .iter()
                .find(|t| {
                    t.attributes.taskgroup.as_deref().is_some_and(declared)
                        || t.phases
                            .iter()
                            .any(|p| p.attributes.taskgroup.as_deref().is_some_and(declared))
                })
                .map_or_else(|| String::from("tasks"), |t| format!("tasks.{}", t.name))
        };
        Err(ScenarioError::new(
            field,
            ErrorKind::TooManyGroups {
                count: paths.len(),
                max: MAX_TASK_GROUPS,
                first_beyond: first_beyond.clone(),
            },
        ))
    }

    /// Task names: printable ASCII, instance names within [`MAX_NAME_BYTES`] and
    /// unique (`a` with two instances makes `a-0` and `a-1`, which a task named
    /// `a-1` would collide with).
    fn validate_names(&self) -> Result<(), ScenarioError> {
        let mut names = BTreeSet::new();
        for task in &self.tasks {
            let path = Self::task_path(task);
            if task.name.is_empty() || !task.name.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ScenarioError::new(path, ErrorKind::BadName));
            }
            for index in 0..task.instances {
                let name = Self::instance_name(task, index);
                if name.len() > MAX_NAME_BYTES {
                    return Err(ScenarioError::new(
                        path,
                        ErrorKind::NameTooLong {
                            instance_name: name,
                            max: MAX_NAME_BYTES,
                        },
                    ));
                }
                if !names.insert(name.clone()) {
                    return Err(ScenarioError::new(path, ErrorKind::DuplicateName { name }));
                }
            }
        }
        Ok(())
    }

    /// Whether the run ends: a task that loops forever needs time to pass in each
    /// pass (else neither the kernel nor the simulator could stop it), and a
    /// positive `global.duration`, unless the caller ends the run itself
    /// (`ended_elsewhere`: the simulator's `--duration`).
    fn validate_end(&self, ended_elsewhere: bool) -> Result<(), ScenarioError> {
        for task in &self.tasks {
            if !Cursor::runs_forever(task) {
                continue;
            }
            let path = Self::task_path(task);
            if !Cursor::makes_progress(task) {
                return Err(ScenarioError::new(path, ErrorKind::NoProgress));
            }
            if self.global.duration_s <= 0 && !ended_elsewhere {
                return Err(ScenarioError::new(path, ErrorKind::RunsForever));
            }
        }
        Ok(())
    }

    fn validate_global(&self, nr_cpus: usize) -> Result<(), ScenarioError> {
        let global = &self.global;
        check_range(
            || "global.duration".into(),
            global.duration_s,
            -1,
            MAX_DURATION_US / 1_000_000,
        )?;
        match global.calibration {
            Calibration::Cpu(cpu) => {
                check_range(|| "global.calibration".into(), cpu, 0, nr_cpus as i64 - 1)?
            }
            Calibration::NsPerLoop(ns) => {
                check_range(|| "global.calibration".into(), ns, 1, i64::MAX)?
            }
        }
        for (field, values) in [
            ("capacities", &global.capacities),
            ("frequency_scales", &global.frequency_scales),
        ] {
            if values.is_empty() {
                continue;
            }
            if values.len() != nr_cpus {
                return Err(ScenarioError::new(
                    format!("global.{field}"),
                    ErrorKind::ListLength {
                        len: values.len(),
                        cpus: nr_cpus,
                    },
                ));
            }
            for (index, &value) in values.iter().enumerate() {
                check_range(
                    || format!("global.{field}.{index}"),
                    value,
                    1,
                    CAPACITY_SCALE,
                )?;
            }
        }
        for group in &global.task_groups {
            check_group_path(&group.path, || format!("global.taskgroups.{}", group.path))?;
            check_range(
                || format!("global.taskgroups.{}.shares", group.path),
                group.shares,
                SHARES_RANGE.0,
                SHARES_RANGE.1,
            )?;
            check_group_bandwidth(group, global.duration_s)?;
        }
        Ok(())
    }

    fn validate_task(&self, task: &TaskSpec, nr_cpus: usize) -> Result<(), ScenarioError> {
        let path = Self::task_path(task);
        check_range(|| format!("{path}.loop"), task.loop_count, -1, i64::MAX)?;
        check_duration(|| format!("{path}.delay"), task.delay_us)?;
        self.validate_attributes(&task.attributes, &Attributes::default(), &path, nr_cpus)?;
        if task.phases.is_empty() {
            return Err(ScenarioError::new(
                format!("{path}.phases"),
                ErrorKind::NoEvents,
            ));
        }
        for phase in &task.phases {
            let phase_path = Self::phase_path(task, phase);
            self.validate_attributes(&phase.attributes, &task.attributes, &phase_path, nr_cpus)?;
            // Neither mechanism applies a policy, priority or slice change at a phase
            // start yet (no `sched_setattr` for them in the run-queue interface).
            let own = &phase.attributes;
            let fixed = [
                (
                    "policy",
                    own.policy.is_some() && own.policy != task.attributes.policy,
                ),
                (
                    "priority",
                    own.priority.is_some() && own.priority != task.attributes.priority,
                ),
                (
                    "dl-runtime",
                    own.custom_slice_us.is_some()
                        && own.custom_slice_us != task.attributes.custom_slice_us,
                ),
            ];
            if let Some((field, _)) = fixed.iter().find(|(_, changes)| *changes) {
                return Err(ScenarioError::new(
                    format!("{phase_path}.{field}"),
                    ErrorKind::Unsupported {
                        what: "changing the policy, priority or dl-runtime at a phase start",
                    },
                ));
            }
            // Every phase, the implicit one included (the JSON reader gives it
            // loop 1): a phase named "" in `phases` takes the implicit phase's
            // path, and its loop went unchecked (`"loop": -5` was accepted).
            check_range(
                || format!("{phase_path}.loop"),
                phase.loop_count,
                -1,
                i64::MAX,
            )?;
            if phase.events.is_empty() {
                return Err(ScenarioError::new(phase_path, ErrorKind::NoEvents));
            }
            for named in &phase.events {
                let event_path = || format!("{phase_path}.{}", named.key);
                match named.event {
                    Event::Run { us } | Event::Runtime { us } | Event::Sleep { us } => {
                        check_duration(event_path, us)?
                    }
                    Event::Timer { period_us, .. } => match period_us {
                        None => {
                            return Err(ScenarioError::new(
                                format!("{}.period", event_path()),
                                ErrorKind::Missing,
                            ));
                        }
                        Some(us) => {
                            let field = || format!("{}.period", event_path());
                            check_duration(field, us)?;
                            check_range(field, us, 1, MAX_DURATION_US)?;
                        }
                    },
                    Event::Yield | Event::Suspend => {}
                    Event::Mem { bytes } | Event::IoRun { bytes } => {
                        check_duration(event_path, bytes)?;
                        check_range(event_path, bytes, 0, MAX_DURATION_US * MEMORY_BYTES_PER_US)?;
                    }
                    Event::Lock { ref mutex } | Event::Unlock { ref mutex } => {
                        check_name(event_path, mutex)?
                    }
                    Event::Signal { ref condition } | Event::Broadcast { ref condition } => {
                        check_name(event_path, condition)?
                    }
                    Event::Wait {
                        ref condition,
                        ref mutex,
                    }
                    | Event::Sync {
                        ref condition,
                        ref mutex,
                    } => {
                        check_name(|| format!("{}.ref", event_path()), condition)?;
                        check_name(|| format!("{}.mutex", event_path()), mutex)?;
                    }
                    Event::Barrier { ref name } => {
                        check_name(event_path, name)?;
                        if task.instances == 0 || self.is_forked(&task.name) {
                            return Err(ScenarioError::new(
                                event_path(),
                                ErrorKind::BarrierWithFork,
                            ));
                        }
                    }
                    Event::SemPost { ref name } | Event::SemWait { ref name } => {
                        check_name(event_path, name)?
                    }
                    Event::Resume { task: ref target } => {
                        check_name(event_path, target)?;
                        if self.resume_targets(target).next().is_none() {
                            return Err(ScenarioError::new(
                                event_path(),
                                ErrorKind::NoSuchTask {
                                    name: target.clone(),
                                },
                            ));
                        }
                    }
                    Event::Fork { task: ref target } => {
                        check_name(event_path, target)?;
                        if !self.tasks.iter().any(|t| t.name == *target) {
                            return Err(ScenarioError::new(
                                event_path(),
                                ErrorKind::NoSuchTask {
                                    name: target.clone(),
                                },
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks `own` (set at `path`) as it takes effect over `parent`.
    fn validate_attributes(
        &self,
        own: &Attributes,
        parent: &Attributes,
        path: &str,
        nr_cpus: usize,
    ) -> Result<(), ScenarioError> {
        let effective = own.inherit(parent);
        let policy = effective.policy.unwrap_or(self.global.default_policy);
        if let Some(priority) = own.priority.or(if own.policy.is_some() {
            effective.priority
        } else {
            None
        }) {
            let field = || format!("{path}.priority");
            match policy {
                PolicyName::Other | PolicyName::Batch => check_range(field, priority, -20, 19)?,
                PolicyName::Fifo | PolicyName::RoundRobin => check_range(field, priority, 1, 99)?,
                PolicyName::Idle => {}
            }
        }
        if let Some(cpus) = &own.cpus {
            if cpus.is_empty() {
                return Err(ScenarioError::new(
                    format!("{path}.cpus"),
                    ErrorKind::EmptyAffinity,
                ));
            }
            let last = nr_cpus.min(MAX_CPUS) as i64 - 1;
            for (index, &cpu) in cpus.iter().enumerate() {
                check_range(|| format!("{path}.cpus.{index}"), cpu, 0, last)?;
            }
        }
        for (field, value) in [("util_min", own.util_min), ("util_max", own.util_max)] {
            if let Some(value) = value {
                check_range(|| format!("{path}.{field}"), value, 0, CAPACITY_SCALE)?;
            }
        }
        if own.util_min.is_some() || own.util_max.is_some() {
            let util_min = effective.util_min.unwrap_or(0);
            let util_max = effective.util_max.unwrap_or(CAPACITY_SCALE);
            if util_min > util_max {
                let field = if own.util_min.is_some() {
                    "util_min"
                } else {
                    "util_max"
                };
                return Err(ScenarioError::new(
                    format!("{path}.{field}"),
                    ErrorKind::ClampOrder { util_min, util_max },
                ));
            }
        }
        if let Some(group) = &own.taskgroup
            && !group.is_empty()
        {
            check_group_path(group, || format!("{path}.taskgroup"))?;
        }
        if let Some(slice) = own.custom_slice_us {
            check_duration(|| format!("{path}.dl-runtime"), slice)?;
            check_range(|| format!("{path}.dl-runtime"), slice, 0, MAX_DURATION_US)?;
        }
        Ok(())
    }

    /// Whether some task forks `name`.
    pub fn is_forked(&self, name: &str) -> bool {
        self.tasks.iter().any(|t| {
            t.phases.iter().any(|p| {
                p.events
                    .iter()
                    .any(|e| matches!(&e.event, Event::Fork { task } if task == name))
            })
        })
    }

    /// The tasks (index, instance or `None` for all) a `resume` names: a task's
    /// name (every instance) or an instance's (`name-i`).
    pub fn resume_targets<'a>(
        &'a self,
        target: &'a str,
    ) -> impl Iterator<Item = (usize, Option<i64>)> + 'a {
        self.tasks
            .iter()
            .enumerate()
            .filter_map(move |(index, task)| {
                if task.name == target {
                    return Some((index, None));
                }
                let instance = target.strip_prefix(task.name.as_str())?.strip_prefix('-')?;
                let instance: i64 = instance.parse().ok()?;
                (task.instances > 1 && (0..task.instances).contains(&instance))
                    .then_some((index, Some(instance)))
            })
    }

    /// The attributes in force during `phase` of `task`: the phase's, else the task's
    /// (rt-app's `cpus` rule: a phase that sets none runs with the task's).
    pub fn effective_attributes(task: &TaskSpec, phase: &Phase) -> Attributes {
        phase.attributes.inherit(&task.attributes)
    }

    /// The core's [`TaskParams`] for attributes that passed [`Scenario::validate`].
    pub fn task_params(&self, attributes: &Attributes) -> TaskParams {
        let policy_name = attributes.policy.unwrap_or(self.global.default_policy);
        let priority = attributes
            .priority
            .unwrap_or(policy_name.default_priority());
        let policy = match policy_name {
            PolicyName::Other => Policy::Normal {
                nice: priority.clamp(-20, 19) as i8,
            },
            PolicyName::Batch => Policy::Batch {
                nice: priority.clamp(-20, 19) as i8,
            },
            PolicyName::Idle => Policy::Idle,
            PolicyName::Fifo => Policy::Fifo {
                priority: priority.clamp(1, 99) as u8,
            },
            PolicyName::RoundRobin => Policy::RoundRobin {
                priority: priority.clamp(1, 99) as u8,
            },
        };
        let affinity = match &attributes.cpus {
            None => CpuMask::ALL,
            Some(cpus) => CpuMask(
                cpus.iter()
                    .filter(|&&c| (0..MAX_CPUS as i64).contains(&c))
                    .fold(0, |mask, &c| mask | CpuMask::only(CpuId(c as u16)).0),
            ),
        };
        TaskParams {
            policy,
            affinity,
            uclamp_min: attributes.util_min.map(|v| v.clamp(0, 1024) as u16),
            uclamp_max: attributes.util_max.map(|v| v.clamp(0, 1024) as u16),
            group: fairway_sched::task::GroupId::ROOT,
            // Linux 6.12 reads `sched_runtime` of a fair task as its slice; RT
            // policies ignore it.
            custom_slice: match policy_name {
                PolicyName::Other | PolicyName::Batch | PolicyName::Idle => attributes
                    .custom_slice_us
                    .map(|us| (us.clamp(0, MAX_DURATION_US) as u64) * 1000),
                PolicyName::Fifo | PolicyName::RoundRobin => None,
            },
        }
    }
}
