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
                policy,
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

/// A kernel transcript's `core:` lines, read and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    /// How the kernel built its cores.
    pub setup: ReplaySetup,
    /// The records, in the transcript's order.
    pub records: Vec<Record>,
    /// Each record's line in the transcript (1 for the first line), for
    /// messages.
    pub lines: Vec<usize>,
    /// Records the kernel's buffers could not hold, over every CPU.
    pub dropped: u64,
}

/// One `core: cpu=N` line and the records counted under it.
struct CpuSection {
    cpu: usize,
    line: usize,
    announced: u64,
    present: u64,
}

/// Reads the kernel's `core:` lines (anything before `core: ` on a line, a
/// timestamp for instance, is ignored): the set-up and the records.
///
/// The transcript is untrusted (a file anyone can edit, or a run cut short),
/// so it is checked before anything is built from it, each error naming the
/// line, the field and its value: one `core: config` line, first, with task
/// and group slots within the scheduler's limits ([`check_setup`]); then,
/// for CPUs `0..cpus` in order, a `core: cpu=N capacity=C records=R
/// dropped=D` line followed by exactly its `R` records, each on that CPU and
/// naming ids below the slots ([`check_ids`]). Fewer records or CPU lines
/// than announced is a truncated transcript, refused: replaying the part
/// present would report agreement with a run it has not seen.
pub fn parse_kernel_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
) -> Result<Transcript, String> {
    let mut setup: Option<(ReplaySetup, Option<usize>, usize)> = None;
    let mut records = Vec::new();
    let mut record_lines = Vec::new();
    let mut sections: Vec<CpuSection> = Vec::new();
    let mut dropped: u64 = 0;
    for (index, line) in lines.into_iter().enumerate() {
        let number = index + 1;
        let at_line = |message: String| format!("line {number}: {message}");
        let Some(at) = line.find("core: ") else {
            continue;
        };
        let rest = &line[at + "core: ".len()..];
        if let Some(fields) = rest.strip_prefix("config ") {
            if let Some((_, _, first)) = &setup {
                return Err(at_line(format!(
                    "a second `core: config` line (the first is line {first})"
                )));
            }
            if !sections.is_empty() {
                return Err(at_line("`core: config` after a `core: cpu` line".into()));
            }
            let (config, tasks, groups, cpus) = parse_config(fields).map_err(at_line)?;
            let config_setup = ReplaySetup {
                config,
                tasks,
                groups,
                capacities: Vec::new(),
            };
            setup = Some((config_setup, cpus, number));
        } else if let Some(fields) = rest.strip_prefix("cpu=") {
            let Some((setup, cpus, _)) = &mut setup else {
                return Err(at_line("a `core: cpu` line before `core: config`".into()));
            };
            let value = |key: &str| -> Result<u64, String> {
                let word = fields
                    .split_ascii_whitespace()
                    .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                    .ok_or_else(|| format!("`core: cpu` line has no {key}="))?;
                word.parse().map_err(|e| format!("{key}={word}: {e}"))
            };
            let cpu_word = fields.split_ascii_whitespace().next().unwrap_or("");
            let cpu: u64 = cpu_word
                .parse()
                .map_err(|e| at_line(format!("cpu={cpu_word}: {e}")))?;
            let expected = sections.len();
            if cpu != expected as u64 {
                return Err(at_line(format!(
                    "cpu={cpu}, but the CPU lines so far announce cpu {expected} next"
                )));
            }
            if let Some(cpus) = *cpus
                && expected >= cpus
            {
                return Err(at_line(format!(
                    "cpu={cpu} is not below the config's cpus={cpus}"
                )));
            }
            check_cpus(expected + 1).map_err(at_line)?;
            check_section(sections.last())?;
            let capacity = value("capacity").map_err(at_line)?;
            check_capacity(expected, capacity).map_err(at_line)?;
            let announced = value("records").map_err(at_line)?;
            let cpu_dropped = value("dropped").map_err(at_line)?;
            dropped = dropped.saturating_add(cpu_dropped);
            setup.capacities.push(capacity as u32);
            sections.push(CpuSection {
                cpu: expected,
                line: number,
                announced,
                present: 0,
            });
        } else if let Some(words) = rest.strip_prefix("record ") {
            let Some((setup, _, _)) = &setup else {
                return Err(at_line("a record before `core: config`".into()));
            };
            let Some(section) = sections.last_mut() else {
                return Err(at_line("a record before any `core: cpu` line".into()));
            };
            let cpu = section.cpu;
            if section.present >= section.announced {
                return Err(at_line(format!(
                    "cpu {cpu} announces records={} (line {}), this is one more",
                    section.announced, section.line
                )));
            }
            section.present += 1;
            let numbers: Vec<u64> = words
                .split_ascii_whitespace()
                .map(|word| {
                    word.parse::<u64>()
                        .map_err(|e| at_line(format!("record word {word}: {e}")))
                })
                .collect::<Result<_, _>>()?;
            let count = numbers.len();
            let words: [u64; 10] = numbers.try_into().map_err(|_| {
                at_line(format!(
                    "a record of {count} numbers, not ten (a cut line?)"
                ))
            })?;
            let record = Record::decode(&words).map_err(|e| {
                at_line(format!("record: {}={} cannot be decoded", e.what, e.value))
            })?;
            if usize::from(record.cpu) != cpu {
                return Err(at_line(format!(
                    "record of cpu={} among cpu {cpu}'s records",
                    record.cpu
                )));
            }
            check_ids(setup, &record).map_err(|e| at_line(format!("record: {e}")))?;
            records.push(record);
            record_lines.push(number);
        }
    }
    let Some((mut setup, cpus, _)) = setup else {
        return Err("no `core: config` line (record_core=N?)".into());
    };
    check_section(sections.last())?;
    if sections.len() < cpus.unwrap_or(1) {
        return Err(format!(
            "transcript truncated: `core: config` announces cpus={}, {} `core: cpu` lines present",
            cpus.unwrap_or(1),
            sections.len()
        ));
    }
    setup.capacities.shrink_to_fit();
    check_setup(&setup)?;
    Ok(Transcript {
        setup,
        records,
        lines: record_lines,
        dropped,
    })
}

/// The `core: config` line's fields: the settings, task and group slots
/// (checked against the scheduler's limits) and `cpus=` when it is there.
fn parse_config(fields: &str) -> Result<(SchedConfig, usize, usize, Option<usize>), String> {
    let get = |key: &str| -> Result<&str, String> {
        fields
            .split_ascii_whitespace()
            .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| format!("`core: config` has no {key}="))
    };
    let flag =
        |key: &str| -> Result<&str, String> { Ok(if get(key)? == "true" { "1" } else { "0" }) };
    // Transcripts from before bandwidth control was recorded do not
    // name it: their run queues were built without it.
    let bandwidth = if get("cfs_bandwidth").is_ok() {
        flag("cfs_bandwidth")?
    } else {
        "0"
    };
    let line = format!(
        "sched={} hz={} hrtick={} slice_us={} uclamp={} cfs_bandwidth={bandwidth}",
        get("sched")?,
        get("hz")?,
        flag("hrtick")?,
        get("slice_us")?,
        flag("uclamp")?
    );
    let config = SchedConfig::parse(&line).map_err(|e| format!("`core: config`: {e}"))?;
    let number = |key: &str| -> Result<usize, String> {
        let word = get(key)?;
        word.parse().map_err(|e| format!("{key}={word}: {e}"))
    };
    let groups = number("groups")?;
    let tasks = number("tasks")?;
    check_slots(tasks, groups)?;
    let cpus = match get("cpus") {
        Ok(_) => {
            let cpus = number("cpus")?;
            check_cpus(cpus)?;
            Some(cpus)
        }
        Err(_) => None,
    };
    Ok((config, tasks, groups, cpus))
}

/// A CPU's records end where the next CPU's line or the transcript does:
/// fewer than it announced means the transcript was cut.
fn check_section(section: Option<&CpuSection>) -> Result<(), String> {
    match section {
        Some(section) if section.present < section.announced => Err(format!(
            "transcript truncated: cpu {} announces records={} (line {}), {} present",
            section.cpu, section.announced, section.line, section.present
        )),
        _ => Ok(()),
    }
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
mod tests {
    use super::*;
    use fairway_sched::task::{TaskId, TaskParams};

    fn sequence() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// A small two-CPU run recorded, printed as the kernel prints it, read
    /// back and replayed: every decision agrees; one changed decision is found.
    #[test]
    fn a_printed_record_replays_and_a_changed_decision_is_found() {
        let setup = ReplaySetup {
            // The cores below end slices on the high-resolution timer.
            config: SchedConfig {
                hrtick: true,
                // As the kernel records it: resolved at boot.
                uclamp: Some(true),
                ..SchedConfig::DEFAULT
            },
            tasks: 8,
            groups: 4,
            capacities: vec![1024, 1024],
        };
        let policy = setup.config.policy_kind(2);
        let mut cores: Vec<CpuCore> = (0..2)
            .map(|cpu| {
                let queue = RunQueue::with_options(policy, 8, 4, true);
                let mut core = CpuCore::new(cpu, queue, 8, true);
                core.start_recording(100, sequence);
                core
            })
            .collect();
        let ms = 1_000_000;
        for task in 1..=3 {
            let _ = cores[0].wake_up_new_task(TaskId(task), &TaskParams::default(), 0);
        }
        let _ = cores[0].schedule(0, Leaving::Runnable);
        let _ = cores[0].sched_tick(4 * ms);
        let _ = cores[0].schedule(4 * ms, Leaving::Runnable);
        // Task 3 moves to CPU 1 (balancing).
        let migration = cores[0].detach_task(TaskId(3), 5 * ms).expect("movable");
        cores[1]
            .migrate_task_in(TaskId(3), &migration, 5 * ms)
            .unwrap();
        let _ = cores[1].attach_task(TaskId(3), 5 * ms);
        let _ = cores[1].schedule(5 * ms, Leaving::Runnable);
        let _ = cores[0].schedule(6 * ms, Leaving::Sleeping);
        let mut lines = vec![
            "core: config sched=eevdf hz=250 hrtick=true slice_us=4000 uclamp=true tasks=8 \
             groups=4 cpus=2"
                .to_string(),
        ];
        for core in &mut cores {
            let (records, dropped) = core.take_records();
            lines.push(format!(
                "core: cpu={} capacity=1024 records={} dropped={dropped}",
                core.cpu(),
                records.len()
            ));
            for record in records {
                let words: Vec<String> = record.encode().iter().map(u64::to_string).collect();
                lines.push(format!("12.5 core: record {}", words.join(" ")));
            }
        }
        let transcript = parse_kernel_lines(lines.iter().map(String::as_str)).unwrap();
        assert_eq!(transcript.setup, setup);
        assert_eq!(transcript.dropped, 0);
        let records = transcript.records;
        // CPU 0: three new tasks, schedule, tick, schedule, the detach (dequeue and
        // migrate_out), schedule; CPU 1: migrate_in, attach, schedule.
        assert_eq!(records.len(), 12);
        let outcome = replay(&setup, &records).unwrap();
        assert_eq!(outcome.divergence, None);
        assert_eq!(outcome.agreeing, 12);
        // Idle -> task, task -> task on CPU 0, idle -> task 3 on CPU 1, and
        // CPU 0's last switch.
        assert_eq!(outcome.switches, 4);
        // A decision the kernel recorded differently is caught where it is.
        let mut changed = records.clone();
        let at = changed
            .iter()
            .position(|r| matches!(r.input, Input::Tick))
            .unwrap();
        changed[at].output.resched = !changed[at].output.resched;
        let outcome = replay(&setup, &changed).unwrap();
        let divergence = outcome.divergence.expect("found");
        assert_eq!(divergence.record, changed[at]);
        assert_eq!(outcome.agreeing, at);
    }

    /// A two-CPU run with two limited groups (CPU-bound tasks throttled,
    /// periodic ones that wake on either CPU, balancing moves), driven
    /// through the cores with shared pools and their timers, recorded and
    /// printed as the kernel prints it.
    fn bandwidth_run(policy: &str) -> (Vec<String>, ReplaySetup) {
        bandwidth_run_for(policy, 1000)
    }

    /// [`bandwidth_run`] for `duration_ms` milliseconds.
    fn bandwidth_run_for(policy: &str, duration_ms: u64) -> (Vec<String>, ReplaySetup) {
        use fairway_sched::bandwidth::Bandwidth;
        use fairway_sched::bandwidth::pools::{BandwidthPools, BandwidthTimer, BandwidthTimerKind};
        use fairway_sched::cpu_core::Decision;
        use fairway_sched::task::GroupId;
        use std::sync::Arc;

        const MS: u64 = 1_000_000;
        const STEP: u64 = MS / 4;
        const TASKS: usize = 8;
        const GROUPS: usize = 4;
        let config = SchedConfig::parse(&format!(
            "sched={policy} hz=1000 hrtick=0 uclamp=1 cfs_bandwidth=1"
        ))
        .unwrap();
        let setup = ReplaySetup {
            config,
            tasks: TASKS,
            groups: GROUPS,
            capacities: vec![1024, 1024],
        };
        let kind = config.policy_kind(2);
        let mut cores: Vec<CpuCore> = (0..2)
            .map(|cpu| {
                let queue = RunQueue::build(kind, TASKS, GROUPS, true, true);
                let mut core = CpuCore::new(cpu, queue, TASKS, false);
                core.start_recording(40_000, sequence);
                core
            })
            .collect();
        let create = |cores: &mut Vec<CpuCore>| {
            let ids: Vec<GroupId> = cores
                .iter_mut()
                .map(|core| core.create_group(GroupId::ROOT, 1024, 0).unwrap())
                .collect();
            ids[0]
        };
        let a = create(&mut cores);
        let b = create(&mut cores);
        let pools = Arc::new(BandwidthPools::new(GROUPS));
        let limit = |period, quota| Bandwidth {
            period,
            quota: Some(quota),
            burst: 0,
        };
        pools.set(a, limit(20 * MS, 7 * MS), 0, 2);
        pools.set(b, limit(10 * MS, 4 * MS), 3 * MS, 2);
        for core in &mut cores {
            assert!(core.attach_bandwidth(pools.clone()));
            let _ = core.set_group_bandwidth(a, true, 0).unwrap();
            let _ = core.set_group_bandwidth(b, true, 0).unwrap();
        }
        /// A task: its group, its first CPU, and (periodic) its run and sleep.
        type Spec = (GroupId, usize, Option<(u64, u64)>);
        let tasks: [Spec; 6] = [
            (a, 0, None),
            (a, 1, None),
            (b, 0, None),
            (b, 1, Some((3 * MS / 2, 4 * MS))),
            (b, 0, Some((MS, 3 * MS))),
            (GroupId::ROOT, 1, Some((MS, 2 * MS))),
        ];
        let mut cpu_of: Vec<usize> = tasks.iter().map(|t| t.1).collect();
        let mut left: Vec<u64> = tasks.iter().map(|t| t.2.map_or(0, |p| p.0)).collect();
        let mut asleep: Vec<Option<u64>> = vec![None; tasks.len()];
        let mut timers: Vec<(BandwidthTimer, usize)> = Vec::new();
        let mut wakes = 0;

        // Carries out a decision: timers armed on that CPU, a resched at once.
        fn carry_out(
            cores: &mut [CpuCore],
            timers: &mut Vec<(BandwidthTimer, usize)>,
            cpu: usize,
            decision: Decision,
            now: u64,
        ) {
            while let Some(timer) = cores[cpu].take_bandwidth_timer() {
                timers.push((timer, cpu));
            }
            if decision.resched {
                let _ = cores[cpu].schedule(now, Leaving::Runnable);
                while let Some(timer) = cores[cpu].take_bandwidth_timer() {
                    timers.push((timer, cpu));
                }
            }
        }

        for (t, &(group, cpu, _)) in tasks.iter().enumerate() {
            let params = TaskParams {
                group,
                ..TaskParams::default()
            };
            let decision = cores[cpu]
                .wake_up_new_task(TaskId(t as u16), &params, 0)
                .unwrap();
            carry_out(&mut cores, &mut timers, cpu, decision, 0);
        }
        let mut now = 0;
        while now < duration_ms * MS {
            now += STEP;
            // The pools' timers due, earliest first.
            timers.sort_by_key(|(timer, _)| timer.expires);
            while timers
                .first()
                .is_some_and(|(timer, _)| timer.expires <= now)
            {
                let (timer, armed_on) = timers.remove(0);
                let at = timer.expires;
                let grants = match timer.kind {
                    BandwidthTimerKind::Period => {
                        let outcome = pools.with(timer.group, |p| p.period_timer(|| at)).unwrap();
                        if let Some(expires) = outcome.rearm {
                            timers.push((BandwidthTimer { expires, ..timer }, armed_on));
                        }
                        outcome.grants
                    }
                    BandwidthTimerKind::Slack => {
                        pools.with(timer.group, |p| p.slack_timer(at)).unwrap()
                    }
                };
                for grant in grants {
                    let cpu = usize::from(grant.cpu);
                    let decision = cores[cpu].distribute_runtime(
                        timer.group,
                        grant.amount,
                        grant.unthrottle,
                        now,
                    );
                    carry_out(&mut cores, &mut timers, cpu, decision, now);
                }
                timers.sort_by_key(|(timer, _)| timer.expires);
            }
            // Wake-ups: every third on the other CPU.
            for t in 0..tasks.len() {
                if asleep[t].is_none_or(|until| until > now) {
                    continue;
                }
                asleep[t] = None;
                left[t] = tasks[t].2.unwrap().0;
                wakes += 1;
                let id = TaskId(t as u16);
                let migrated = wakes % 3 == 0;
                if migrated {
                    let from = cpu_of[t];
                    let to = 1 - from;
                    let migration = cores[from].migrate_task_out(id, now).unwrap();
                    cores[to].migrate_task_in(id, &migration, now).unwrap();
                    cpu_of[t] = to;
                }
                let cpu = cpu_of[t];
                let decision = cores[cpu].try_to_wake_up(id, now, migrated);
                carry_out(&mut cores, &mut timers, cpu, decision, now);
            }
            for cpu in 0..2 {
                // The running periodic task's burst, then its sleep.
                if let Some(current) = cores[cpu].current()
                    && let Some((_, sleep)) = tasks[current.index()].2
                {
                    let t = current.index();
                    left[t] = left[t].saturating_sub(STEP);
                    if left[t] == 0 {
                        asleep[t] = Some(now + sleep);
                        let _ = cores[cpu].schedule(now, Leaving::Sleeping);
                        carry_out(&mut cores, &mut timers, cpu, Decision::default(), now);
                    }
                }
                // The 1 ms tick, CPU 1's half a tick after CPU 0's.
                if now % MS == cpu as u64 * MS / 2 {
                    let decision = cores[cpu].sched_tick(now);
                    carry_out(&mut cores, &mut timers, cpu, decision, now);
                }
            }
            // Balancing moves a waiting CPU-bound task every 25 ms.
            if now % (25 * MS) == 0 {
                let t = (now / (25 * MS)) as usize % 3;
                let id = TaskId(t as u16);
                let from = cpu_of[t];
                if cores[from].current() != Some(id)
                    && let Some(migration) = cores[from].detach_task(id, now)
                {
                    let to = 1 - from;
                    cores[to].migrate_task_in(id, &migration, now).unwrap();
                    let decision = cores[to].attach_task(id, now);
                    carry_out(&mut cores, &mut timers, to, decision, now);
                    cpu_of[t] = to;
                }
            }
        }
        let mut lines = vec![format!(
            "core: config sched={policy} hz=1000 hrtick=false slice_us=4000 uclamp=true \
             cfs_bandwidth=true tasks={TASKS} groups={GROUPS} cpus=2"
        )];
        for core in &mut cores {
            let (records, dropped) = core.take_records();
            lines.push(format!(
                "core: cpu={} capacity=1024 records={} dropped={dropped}",
                core.cpu(),
                records.len()
            ));
            for record in records {
                let words: Vec<String> = record.encode().iter().map(u64::to_string).collect();
                lines.push(format!("core: record {}", words.join(" ")));
            }
        }
        (lines, setup)
    }

    /// The recorded two-CPU bandwidth run replays with every decision the
    /// same, under EEVDF and CFS, each pool answer taken from the record.
    #[test]
    fn a_recorded_bandwidth_run_replays_without_the_pools() {
        for policy in ["eevdf", "cfs"] {
            let (lines, setup) = bandwidth_run(policy);
            let transcript = parse_kernel_lines(lines.iter().map(String::as_str)).unwrap();
            assert_eq!(transcript.setup, setup);
            assert_eq!(transcript.dropped, 0);
            let records = transcript.records;
            let outcome = replay(&setup, &records).unwrap();
            assert_eq!(outcome.divergence, None, "{policy}");
            assert_eq!(outcome.agreeing, records.len());
            assert!(
                outcome.switches > 1000,
                "{policy}: {} switches",
                outcome.switches
            );
            for kind in [
                "attach_bandwidth",
                "set_group_bandwidth",
                "distribute_runtime",
                "pool_answer",
                "migrate_in",
            ] {
                assert!(
                    outcome.kinds.get(kind).is_some_and(|&n| n > 0),
                    "{policy}: no {kind} in {:?}",
                    outcome.kinds
                );
            }
            let throttling_grants = records
                .iter()
                .filter(|r| {
                    matches!(
                        r.input,
                        Input::DistributeRuntime {
                            unthrottle: true,
                            ..
                        }
                    )
                })
                .count();
            assert!(
                throttling_grants > 20,
                "{policy}: {throttling_grants} unthrottles"
            );
        }
    }

    /// A pool answer changed in the record is found: a decision differs, or
    /// the replayed core asks its pools otherwise, at that answer's call or
    /// later; a removed answer is found at its own call, as a pool mismatch.
    #[test]
    fn a_changed_pool_answer_is_reported() {
        use fairway_sched::bandwidth::runtime::PoolCall;
        let (lines, setup) = bandwidth_run("eevdf");
        let mut records = parse_kernel_lines(lines.iter().map(String::as_str))
            .unwrap()
            .records;
        records.sort_by_key(|record| record.sequence);
        let at = records
            .iter()
            .enumerate()
            .skip(records.len() / 2)
            .find(|(_, r)| matches!(r.input, Input::PoolAnswer(a) if a.call == PoolCall::Assign && a.amount > 0))
            .map(|(index, _)| index)
            .unwrap();
        let mut changed = records.clone();
        if let Input::PoolAnswer(answer) = &mut changed[at].input {
            answer.amount = 0;
        }
        let outcome = replay(&setup, &changed).unwrap();
        let divergence = outcome.divergence.expect("a refused grant is found");
        assert!(divergence.index > at, "{divergence:?} before {at}");
        let mut removed = records.clone();
        let answer = removed.remove(at);
        let call = at
            + removed[at..]
                .iter()
                .position(|r| r.cpu == answer.cpu && !matches!(r.input, Input::PoolAnswer(_)))
                .unwrap();
        let outcome = replay(&setup, &removed).unwrap();
        let divergence = outcome.divergence.expect("a missing answer is found");
        assert_eq!(divergence.index, call);
        assert!(divergence.pool.is_some(), "{divergence:?}");
    }

    /// The fixture of the replay reader's tests and fuzz target
    /// (`sim/tests/fixtures/replay-bandwidth-eevdf.txt`): 100 ms of
    /// [`bandwidth_run`] under EEVDF, printed as the kernel prints it.
    /// Run with `--ignored` to write it again (the sequence numbers come
    /// from a counter every test shares, so a new one differs in them).
    #[test]
    #[ignore = "writes the fixture"]
    fn write_the_replay_fixture() {
        let (lines, _) = bandwidth_run_for("eevdf", 100);
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/replay-bandwidth-eevdf.txt"
        );
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }
}
