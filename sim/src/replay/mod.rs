//! Replaying a kernel run through the simulator's drivers (issue 11, point 4;
//! docs/core-driver.md, "Replay").
//!
//! The kernel records every call into each CPU's `CpuCore` with its inputs and
//! the decision it returned (`record_core=N`). Here one `CpuCore` per CPU is
//! built as the kernel built its own (policy, tick, hrtick, uclamp, task and
//! group slots, capacities), each record's input is fed to it in the kernel's
//! order, and every decision is compared with the kernel's. The kernel's
//! mechanism (clock, locks, IPIs, timers) chose *when* each call happened; the
//! replay checks that the driver, given the same calls, decides the same thing:
//! one scheduler core, not two copies.
//!
//! Bandwidth control: the groups' pools are shared by the CPUs, and what a
//! pool answers one CPU depends on every CPU's order of access. The record
//! carries those answers (`Input::PoolAnswer`) and the calls the pools'
//! timers and settings make on a core (`DistributeRuntime`,
//! `SetGroupBandwidth`, `AttachBandwidth`); the replay builds its run queues
//! with bandwidth control, attaches them to no pools (each answer is the next
//! one recorded for that CPU), and reports a question the record does not
//! answer, or an answer nobody asked for, as a divergence.

use std::collections::BTreeMap;

use fairway_sched::bandwidth::pools::PoolMismatch;
use fairway_sched::boot_options::SchedConfig;
use fairway_sched::cpu_core::record::{Input, Output, Record};
use fairway_sched::cpu_core::{CpuCore, Leaving};
use fairway_sched::fair::timeline::MAX_ENTITIES;
use fairway_sched::run_queue::{CpuCapacity, RunQueue};
use fairway_sched::task::{GroupId, MAX_CPUS, TaskId};
use fairway_sched::topology::SCHED_CAPACITY_SCALE;

mod transcript;

pub use transcript::{Transcript, parse_kernel_lines};

/// How the kernel built its cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaySetup {
    /// The scheduler settings in force (`cfs_bandwidth`: the run queues were
    /// built with bandwidth control).
    pub config: SchedConfig,
    /// Task slots per run queue.
    pub tasks: usize,
    /// Group slots per run queue.
    pub groups: usize,
    /// Each CPU's `capacity_orig`.
    pub capacities: Vec<u32>,
}

/// The first decision that differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Its place among the records (in the kernel's order).
    pub index: usize,
    /// The kernel's record.
    pub record: Record,
    /// What the simulator's driver decided instead (its decision, when
    /// `pool` is set).
    pub replayed: Output,
    /// The replayed call used its groups' pools otherwise than the record
    /// says (it asked a question the record does not answer, or left a
    /// recorded answer unasked).
    pub pool: Option<PoolMismatch>,
}

/// What a replay found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// Records replayed with the same decision (all, without a divergence).
    pub agreeing: usize,
    /// Records in all.
    pub records: usize,
    /// Context switches among the agreeing records (a `schedule` that changed
    /// the running task).
    pub switches: usize,
    /// Records per input kind, by name.
    pub kinds: BTreeMap<&'static str, usize>,
    /// The first difference.
    pub divergence: Option<Divergence>,
}

/// A short name for an input kind.
pub fn kind_name(input: &Input) -> &'static str {
    match input {
        Input::TaskNew { .. } => "task_new",
        Input::Wakeup { .. } => "wakeup",
        Input::Enqueue { .. } => "enqueue",
        Input::Dequeue { .. } => "dequeue",
        Input::Schedule { .. } => "schedule",
        Input::Tick => "tick",
        Input::Hrtick => "hrtick",
        Input::HrtickUpdate => "hrtick_update",
        Input::Yield => "yield",
        Input::MigrateOut { .. } => "migrate_out",
        Input::MigrateIn { .. } => "migrate_in",
        Input::UpdateBlockedAverages => "update_blocked_averages",
        Input::GroupLoadSum { .. } => "group_load_sum",
        Input::CreateGroup { .. } => "create_group",
        Input::SetTaskGroup { .. } => "set_task_group",
        Input::SetTaskUclamp { .. } => "set_task_uclamp",
        Input::RtMutexSetprio { .. } => "rt_mutex_setprio",
        Input::TaskDead { .. } => "task_dead",
        Input::CfsTasksRotate { .. } => "cfs_tasks_rotate",
        Input::AttachBandwidth => "attach_bandwidth",
        Input::SetGroupBandwidth { .. } => "set_group_bandwidth",
        Input::DistributeRuntime { .. } => "distribute_runtime",
        Input::PoolAnswer(_) => "pool_answer",
    }
}

/// The most task slots a run queue can have: task ids are 16 bits
/// ([`TaskId`]`(u16)`), so ids `0..=65535`.
pub const MAX_TASK_SLOTS: usize = 1 << u16::BITS;

/// The most group slots (the root included) a run queue can have: group ids
/// are 16 bits ([`GroupId`]`(u16)`).
pub const MAX_GROUP_SLOTS: usize = 1 << u16::BITS;

/// The most task slots a run queue with `groups` group slots can have: the
/// fair class numbers one timeline entity per group but the root and one
/// per task, at most [`MAX_ENTITIES`] of them (more panics in the timeline,
/// a configuration bug in the kernel, which the replay refuses instead).
pub fn task_limit(groups: usize) -> usize {
    let group_entities = groups.max(1) - 1;
    MAX_TASK_SLOTS.min(MAX_ENTITIES.saturating_sub(group_entities))
}

/// Whether `setup` describes cores the replay can build: task and group
/// slots within the scheduler's limits (checked before anything is
/// allocated: an edited transcript asking for 4 billion groups is refused,
/// not given 96 GB), 1 to [`MAX_CPUS`] CPUs of capacity 1 to
/// [`SCHED_CAPACITY_SCALE`]. The message names the field and its value.
pub fn check_setup(setup: &ReplaySetup) -> Result<(), String> {
    check_slots(setup.tasks, setup.groups)?;
    check_cpus(setup.capacities.len())?;
    for (cpu, &capacity) in setup.capacities.iter().enumerate() {
        check_capacity(cpu, u64::from(capacity))?;
    }
    Ok(())
}

fn check_slots(tasks: usize, groups: usize) -> Result<(), String> {
    if groups > MAX_GROUP_SLOTS {
        return Err(format!(
            "groups={groups} is above the limit of {MAX_GROUP_SLOTS} (group ids are 16 bits)"
        ));
    }
    let limit = task_limit(groups);
    if tasks > limit {
        return Err(format!(
            "tasks={tasks} is above the limit of {limit} (with groups={groups}: task ids are \
             16 bits, and a CPU's timeline holds at most MAX_ENTITIES = {MAX_ENTITIES} \
             entities, one per task and one per group but the root)"
        ));
    }
    Ok(())
}

fn check_cpus(cpus: usize) -> Result<(), String> {
    if !(1..=MAX_CPUS).contains(&cpus) {
        return Err(format!("cpus={cpus} is outside 1..={MAX_CPUS}"));
    }
    Ok(())
}

fn check_capacity(cpu: usize, capacity: u64) -> Result<(), String> {
    if !(1..=u64::from(SCHED_CAPACITY_SCALE)).contains(&capacity) {
        return Err(format!(
            "cpu {cpu}: capacity={capacity} is outside 1..={SCHED_CAPACITY_SCALE}"
        ));
    }
    Ok(())
}

/// Whether every id `record` names is one the cores have a slot for: its
/// CPU, its task (and the task its decision names), its group. A record
/// that passes can reach the scheduling core without indexing out of its
/// tables.
pub fn check_ids(setup: &ReplaySetup, record: &Record) -> Result<(), String> {
    let cpus = setup.capacities.len();
    if usize::from(record.cpu) >= cpus {
        return Err(format!("cpu={} is not below cpus={cpus}", record.cpu));
    }
    let task_ok = |task: TaskId, what: &str| {
        if task.index() < setup.tasks {
            Ok(())
        } else {
            Err(format!(
                "{what}={} is not below tasks={}",
                task.0, setup.tasks
            ))
        }
    };
    let group_ok = |group: GroupId, what: &str| {
        if group.index() < setup.groups.max(1) {
            Ok(())
        } else {
            Err(format!(
                "{what}={} is not below groups={}",
                group.0,
                setup.groups.max(1)
            ))
        }
    };
    match record.input {
        Input::TaskNew { task, params } => {
            task_ok(task, "task")?;
            group_ok(params.group, "group")?;
        }
        Input::Wakeup { task, .. }
        | Input::Enqueue { task, .. }
        | Input::Dequeue { task, .. }
        | Input::MigrateOut { task }
        | Input::MigrateIn { task }
        | Input::SetTaskUclamp { task, .. }
        | Input::RtMutexSetprio { task, .. }
        | Input::TaskDead { task }
        | Input::CfsTasksRotate { task } => task_ok(task, "task")?,
        Input::SetTaskGroup { task, group } => {
            task_ok(task, "task")?;
            group_ok(group, "group")?;
        }
        Input::GroupLoadSum { group, .. }
        | Input::SetGroupBandwidth { group, .. }
        | Input::DistributeRuntime { group, .. } => group_ok(group, "group")?,
        Input::PoolAnswer(answer) => group_ok(answer.group, "group")?,
        Input::CreateGroup { parent, .. } => group_ok(parent, "parent")?,
        Input::Schedule { .. }
        | Input::Tick
        | Input::Hrtick
        | Input::HrtickUpdate
        | Input::Yield
        | Input::UpdateBlockedAverages
        | Input::AttachBandwidth => {}
    }
    if let Some(next) = record.output.next {
        task_ok(next, "next")?;
    }
    Ok(())
}

/// Why `record`, well-formed, cannot happen to `core` in the state the
/// records before it left it: a task enqueued twice, dequeued while not
/// queued, woken on a CPU that does not know it... The kernel never records
/// such a call (the scheduling core asserts against each), so the
/// transcript was edited or damaged; the replay refuses it here, before the
/// core's assertions would stop the host tool.
fn impossible(core: &CpuCore, record: &Record) -> Option<String> {
    let known = |task: TaskId| core.run_queue().task_class(task).is_some();
    let queued = |task: TaskId| core.cfs_tasks().contains(task);
    let name = kind_name(&record.input);
    let problem = |task: TaskId, what: &str| Some(format!("{name} of task {}, {what}", task.0));
    match record.input {
        Input::TaskNew { task, .. } if queued(task) => problem(task, "which is queued"),
        Input::Wakeup { task, .. } | Input::Enqueue { task, .. } if !known(task) => {
            problem(task, "which this CPU does not have")
        }
        Input::Wakeup { task, .. } | Input::Enqueue { task, .. } if queued(task) => {
            problem(task, "which is already queued")
        }
        Input::Dequeue { task, .. } if !known(task) || !queued(task) => {
            problem(task, "which is not queued")
        }
        Input::TaskDead { task } | Input::MigrateOut { task } if !known(task) => {
            problem(task, "which this CPU does not have")
        }
        Input::TaskDead { task } | Input::MigrateOut { task } if queued(task) => {
            problem(task, "which is queued")
        }
        Input::MigrateIn { task } if known(task) => problem(task, "which this CPU already has"),
        _ => None,
    }
}

/// Builds the cores as the kernel did and replays `records` (any order: they
/// are sorted by their sequence numbers) until the first difference. The run
/// queues have bandwidth control when the kernel's had (`cfs_bandwidth`) or
/// when the record has a bandwidth input. A set-up beyond the scheduler's
/// limits ([`check_setup`]), a record naming an id without a slot
/// ([`check_ids`]) or a call impossible in the state reached (a dequeue of
/// a task that is not queued...) is an error naming the record.
pub fn replay(setup: &ReplaySetup, records: &[Record]) -> Result<ReplayOutcome, String> {
    replay_numbered(setup, records, None)
}

/// As [`replay`], for a parsed transcript: the errors name the record's line.
pub fn replay_transcript(transcript: &Transcript) -> Result<ReplayOutcome, String> {
    replay_numbered(
        &transcript.setup,
        &transcript.records,
        Some(&transcript.lines),
    )
}

fn replay_numbered(
    setup: &ReplaySetup,
    records: &[Record],
    lines: Option<&[usize]>,
) -> Result<ReplayOutcome, String> {
    check_setup(setup)?;
    let policy = setup.config.policy_kind(setup.capacities.len());
    let bandwidth =
        setup.config.cfs_bandwidth || records.iter().any(|record| record.input.is_bandwidth());
    let mut cores: Vec<CpuCore> = setup
        .capacities
        .iter()
        .enumerate()
        .map(|(cpu, &capacity)| {
            let mut queue = RunQueue::build(
                policy.for_cpu(cpu),
                setup.tasks,
                setup.groups,
                setup.config.uclamp == Some(true),
                bandwidth,
            );
            queue.set_cpu_capacity(CpuCapacity {
                capacity_orig: capacity,
                frequency_scale: 1024,
            });
            CpuCore::new(cpu as u16, queue, setup.tasks, setup.config.hrtick)
        })
        .collect();
    let mut ordered: Vec<(usize, &Record)> = records.iter().enumerate().collect();
    ordered.sort_by_key(|(_, record)| record.sequence);
    let mut outcome = ReplayOutcome {
        records: ordered.len(),
        ..ReplayOutcome::default()
    };
    let mut migrations = BTreeMap::new();
    for (index, (position, record)) in ordered.into_iter().enumerate() {
        let place = || match lines.and_then(|lines| lines.get(position)) {
            Some(line) => format!("line {line}: record {index} (#{})", record.sequence),
            None => format!("record {index} (#{})", record.sequence),
        };
        check_ids(setup, record).map_err(|e| format!("{}: {e}", place()))?;
        let core = &mut cores[usize::from(record.cpu)];
        if let Some(problem) = impossible(core, record) {
            return Err(format!(
                "{}: {problem}: impossible on cpu {} at this point of the run",
                place(),
                record.cpu
            ));
        }
        let before = core.current();
        let (replayed, pool) = match core.replay(record.now, &record.input, &mut migrations) {
            Ok(replayed) => (replayed, None),
            Err(mismatch) => (Output::default(), Some(mismatch)),
        };
        if pool.is_some() || replayed != record.output {
            outcome.divergence = Some(Divergence {
                index,
                record: *record,
                replayed,
                pool,
            });
            break;
        }
        outcome.agreeing += 1;
        *outcome.kinds.entry(kind_name(&record.input)).or_default() += 1;
        if let Input::Schedule { .. } = record.input
            && replayed.next != before
        {
            outcome.switches += 1;
        }
    }
    Ok(outcome)
}

/// A record in words for a report.
pub fn describe(record: &Record) -> String {
    let leaving = match record.input {
        Input::Schedule {
            leaving: Leaving::Sleeping,
        } => " (sleeping)",
        Input::Schedule {
            leaving: Leaving::Dead,
        } => " (dead)",
        _ => "",
    };
    format!(
        "#{} cpu{} t={} ns {:?}{leaving} -> {:?}",
        record.sequence, record.cpu, record.now, record.input, record.output
    )
}

#[cfg(test)]
mod tests;
