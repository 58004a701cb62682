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

use std::collections::BTreeMap;

use fairway_sched::boot_options::SchedConfig;
use fairway_sched::cpu_core::record::{Input, Output, Record};
use fairway_sched::cpu_core::{CpuCore, Leaving};
use fairway_sched::run_queue::{CpuCapacity, RunQueue};

/// How the kernel built its cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaySetup {
    /// The scheduler settings in force.
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
    /// What the simulator's driver decided instead.
    pub replayed: Output,
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
    }
}

/// Builds the cores as the kernel did and replays `records` (any order: they
/// are sorted by their sequence numbers) until the first difference.
pub fn replay(setup: &ReplaySetup, records: &[Record]) -> Result<ReplayOutcome, String> {
    let policy = setup.config.policy_kind(setup.capacities.len());
    let mut cores: Vec<CpuCore> = setup
        .capacities
        .iter()
        .enumerate()
        .map(|(cpu, &capacity)| {
            let mut queue =
                RunQueue::with_options(policy, setup.tasks, setup.groups, setup.config.uclamp);
            queue.set_cpu_capacity(CpuCapacity {
                capacity_orig: capacity,
                frequency_scale: 1024,
            });
            CpuCore::new(cpu as u16, queue, setup.tasks, setup.config.hrtick)
        })
        .collect();
    let mut ordered: Vec<&Record> = records.iter().collect();
    ordered.sort_by_key(|record| record.sequence);
    let mut outcome = ReplayOutcome {
        records: ordered.len(),
        ..ReplayOutcome::default()
    };
    let mut migrations = BTreeMap::new();
    for (index, record) in ordered.into_iter().enumerate() {
        let core = cores
            .get_mut(usize::from(record.cpu))
            .ok_or_else(|| format!("record {index} names cpu {}", record.cpu))?;
        let before = core.current();
        let replayed = core.replay(record.now, &record.input, &mut migrations);
        if replayed != record.output {
            outcome.divergence = Some(Divergence {
                index,
                record: *record,
                replayed,
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

/// Reads the kernel's `core:` lines (anything before `core: ` on a line, a
/// timestamp for instance, is ignored): the set-up and the records.
pub fn parse_kernel_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
) -> Result<(ReplaySetup, Vec<Record>, u64), String> {
    let mut setup = None;
    let mut records = Vec::new();
    let mut capacities = Vec::new();
    let mut dropped = 0;
    for line in lines {
        let Some(at) = line.find("core: ") else {
            continue;
        };
        let rest = &line[at + "core: ".len()..];
        if let Some(fields) = rest.strip_prefix("config ") {
            let get = |key: &str| -> Result<&str, String> {
                fields
                    .split_ascii_whitespace()
                    .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                    .ok_or_else(|| format!("core: config has no {key}: {fields}"))
            };
            let flag = |key: &str| -> Result<&str, String> {
                Ok(if get(key)? == "true" { "1" } else { "0" })
            };
            let line = format!(
                "sched={} hz={} hrtick={} slice_us={} uclamp={}",
                get("sched")?,
                get("hz")?,
                flag("hrtick")?,
                get("slice_us")?,
                flag("uclamp")?
            );
            let config = SchedConfig::parse(&line).map_err(|e| e.to_string())?;
            let number = |key: &str| -> Result<usize, String> {
                get(key)?
                    .parse()
                    .map_err(|e| format!("core: config {key}: {e}"))
            };
            setup = Some((config, number("tasks")?, number("groups")?));
        } else if let Some(fields) = rest.strip_prefix("cpu=") {
            let value = |key: &str| -> Result<u64, String> {
                fields
                    .split_ascii_whitespace()
                    .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                    .ok_or_else(|| format!("core: cpu line has no {key}"))?
                    .parse()
                    .map_err(|e| format!("core: cpu line {key}: {e}"))
            };
            capacities.push(value("capacity")? as u32);
            dropped += value("dropped")?;
        } else if let Some(words) = rest.strip_prefix("record ") {
            let numbers: Vec<u64> = words
                .split_ascii_whitespace()
                .map(|word| word.parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("core: record {words}: {e}"))?;
            let words: [u64; 10] = numbers
                .try_into()
                .map_err(|_| format!("core: record {words}: not ten numbers"))?;
            records.push(Record::decode(&words).map_err(|e| format!("core: record: {e:?}"))?);
        }
    }
    let (config, tasks, groups) = setup.ok_or("no `core: config` line (record_core=N?)")?;
    Ok((
        ReplaySetup {
            config,
            tasks,
            groups,
            capacities,
        },
        records,
        dropped,
    ))
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
            config: SchedConfig::DEFAULT,
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
        let (parsed_setup, records, dropped) =
            parse_kernel_lines(lines.iter().map(String::as_str)).unwrap();
        assert_eq!(parsed_setup, setup);
        assert_eq!(dropped, 0);
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
}
