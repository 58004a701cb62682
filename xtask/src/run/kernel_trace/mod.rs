//! The kernel's trace records (`src/observe/trace.rs`), read from a
//! decoded run's `trace-record:` lines into a [`Trace`], the simulator's form,
//! for the runner's `--trace FILE` (docs/tracing.md, "The kernel's traces").
//!
//! The kernel prints its per-CPU buffers one after another; the records are
//! merged here by time (a stable sort: each CPU's own order, then CPU order,
//! among records of one instant). Kernel task ids become trace indices with
//! the run's reported tasks first, in the report's order (so the trace's
//! pid `i + 1` is the report's task `i`, as in the simulator's traces), then
//! the kernel's other tasks by id; the idle tasks are pid 0.

use std::collections::BTreeMap;

use fairway_contract::trace::{Kind, PrevState as KernelPrevState};
use fairway_trace::{
    CounterTrack, CpuSignal, Event, GroupCpuSignal, PrevState, Record, TaskIndex, TaskInfo,
    TaskSignal, Trace,
};

mod explain;

pub use explain::{Decision, Explained, explained};

/// The kernel's "no task" (an idle task, or no waker).
const NO_TASK: u16 = u16::MAX;

/// A record as the kernel prints it.
#[derive(Clone, Copy, Debug)]
struct Line {
    kind: Kind,
    cpu: usize,
    time_ns: u64,
    a: u16,
    b: u16,
    value: u64,
}

/// The text after `marker` in `line`, when `line` has it.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

fn number<T: std::str::FromStr>(word: Option<&str>, line: &str) -> Result<T, String> {
    word.and_then(|w| w.parse().ok())
        .ok_or_else(|| format!("a malformed trace line: {line:?}"))
}

fn parse_record(rest: &str, line: &str) -> Result<Line, String> {
    let mut words = rest.split_whitespace();
    Ok(Line {
        kind: Kind::from_number(number(words.next(), line)?)
            .ok_or_else(|| format!("a trace record of unknown kind: {line:?}"))?,
        cpu: number(words.next(), line)?,
        time_ns: number(words.next(), line)?,
        a: number(words.next(), line)?,
        b: number(words.next(), line)?,
        value: number(words.next(), line)?,
    })
}

/// The reported tasks' kernel ids, in the report's order (`report: task
/// id=N ...` lines).
fn reported_ids(lines: &[String]) -> Vec<u16> {
    lines
        .iter()
        .filter_map(|line| after(line, "report: task "))
        .filter_map(|rest| {
            rest.split_whitespace()
                .find_map(|pair| pair.strip_prefix("id="))
                .and_then(|id| id.parse().ok())
        })
        .collect()
}

/// The records of a run, merged by time, with the trace's task list.
struct Parsed {
    records: Vec<Line>,
    nr_cpus: usize,
    tasks: Vec<TaskInfo>,
    indices: BTreeMap<u16, TaskIndex>,
    /// The task groups' paths by kernel index (`trace-group:`).
    groups: BTreeMap<u16, String>,
    /// The groups with bandwidth counters, by kernel index: a group's trace
    /// index is its place here.
    limited: Vec<u16>,
}

impl Parsed {
    /// Kernel task `id` as a trace index (`None`: the idle task).
    fn task(&self, id: u16) -> Option<TaskIndex> {
        (id != NO_TASK).then(|| self.indices[&id])
    }

    /// Kernel group index `group` as the trace's group index.
    fn group(&self, group: u16) -> Result<usize, String> {
        self.limited
            .iter()
            .position(|index| *index == group)
            .ok_or_else(|| format!("a record of task group {group} without counters"))
    }

    /// Kernel group index `group`'s path.
    fn group_path(&self, group: u16) -> Result<String, String> {
        self.groups
            .get(&group)
            .cloned()
            .ok_or_else(|| format!("task group {group}, which no trace-group line names"))
    }
}

/// The trace in a decoded run's lines; `None` when the kernel printed no
/// trace records (it ran without `trace_records=`). A CPU whose buffer
/// filled up is an error: the trace would miss events.
pub fn from_lines(lines: &[String]) -> Result<Option<Trace>, String> {
    let Some(parsed) = parse(lines)? else {
        return Ok(None);
    };
    let mut trace = Trace {
        nr_cpus: parsed.nr_cpus,
        tasks: parsed.tasks.clone(),
        groups: parsed
            .limited
            .iter()
            .map(|&index| parsed.group_path(index))
            .collect::<Result<_, _>>()?,
        ..Trace::default()
    };
    let task = |id: u16| parsed.task(id);
    let group = |index: u16| parsed.group(index);
    for record in parsed.records.iter().filter(|r| !r.kind.is_explain()) {
        convert(record, &task, &group, &mut trace)?;
    }
    Ok(Some(trace))
}

/// The trace lines of a run read and merged by time, with the trace's
/// tasks and groups; `None` without a `trace-end:` line.
fn parse(lines: &[String]) -> Result<Option<Parsed>, String> {
    let mut records = Vec::new();
    let mut names = BTreeMap::new();
    let mut nr_cpus = 0;
    let mut end = None;
    let mut groups = BTreeMap::new();
    for line in lines {
        if let Some(rest) = after(line, "trace-record: ") {
            records.push(parse_record(rest, line)?);
        } else if let Some(rest) = after(line, "trace-task: ") {
            let (id, name) = rest
                .split_once(' ')
                .ok_or_else(|| format!("a malformed trace line: {line:?}"))?;
            names.insert(number::<u16>(Some(id), line)?, name.to_string());
        } else if let Some(rest) = after(line, "trace-group: ") {
            let (index, path) = rest
                .split_once(' ')
                .ok_or_else(|| format!("a malformed trace line: {line:?}"))?;
            groups.insert(number::<u16>(Some(index), line)?, path.to_string());
        } else if let Some(rest) = after(line, "trace-cpu: ") {
            let mut words = rest.split_whitespace();
            let cpu: usize = number(words.next(), line)?;
            let dropped: u64 = number(words.find_map(|w| w.strip_prefix("dropped=")), line)?;
            if dropped > 0 {
                return Err(format!(
                    "cpu{cpu}'s trace buffer filled up: {dropped} records dropped \
                     (raise trace_records=, records per CPU)"
                ));
            }
            nr_cpus = nr_cpus.max(cpu + 1);
        } else if let Some(rest) = after(line, "trace-end: ") {
            end = Some(number::<u64>(Some(rest.trim()), line)?);
        }
    }
    if end.is_none() {
        return Ok(None);
    }
    records.sort_by_key(|r| r.time_ns);
    let mut limited: Vec<u16> = records
        .iter()
        .filter(|r| {
            matches!(
                r.kind,
                Kind::GroupThrottled | Kind::GroupRuntimeRemaining | Kind::GroupRuntime
            )
        })
        .map(|r| r.a)
        .collect();
    limited.sort_unstable();
    limited.dedup();
    let mut indices: BTreeMap<u16, TaskIndex> = BTreeMap::new();
    let mut order = reported_ids(lines);
    let others = names
        .keys()
        .copied()
        .chain(records.iter().flat_map(task_ids));
    for id in others.collect::<Vec<_>>() {
        if !order.contains(&id) {
            order.push(id);
        }
    }
    let mut tasks = Vec::new();
    for (index, &id) in order.iter().enumerate() {
        indices.insert(id, index);
        tasks.push(TaskInfo {
            name: names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("task{id}")),
            prio: 120,
        });
    }
    Ok(Some(Parsed {
        records,
        nr_cpus,
        tasks,
        indices,
        groups,
        limited,
    }))
}

/// The kernel task ids a record names.
fn task_ids(record: &Line) -> Vec<u16> {
    let ids = match record.kind {
        Kind::Switch | Kind::Waking => vec![record.a, record.b],
        // A candidate with flag bit 3 is a group's entity.
        Kind::ExplainCandidate | Kind::ExplainDeadline | Kind::ExplainLag if record.b & 8 != 0 => {
            vec![]
        }
        Kind::Wakeup
        | Kind::WakeupNew
        | Kind::Migrate
        | Kind::Exit
        | Kind::TaskUtilAvg
        | Kind::TaskUtilEst
        | Kind::TaskLoadAvg
        | Kind::ExplainPick
        | Kind::ExplainCandidate
        | Kind::ExplainDeadline
        | Kind::ExplainLag
        | Kind::ExplainWake
        | Kind::ExplainTaskUtil
        | Kind::ExplainRrPick
        | Kind::ExplainRrCandidate
        | Kind::ExplainPolicyPick
        | Kind::ExplainPolicyCandidate
        | Kind::ExplainPolicyLabel => vec![record.a],
        _ => vec![],
    };
    ids.into_iter().filter(|&id| id != NO_TASK).collect()
}

fn convert(
    record: &Line,
    task: &impl Fn(u16) -> Option<TaskIndex>,
    group: &impl Fn(u16) -> Result<usize, String>,
    trace: &mut Trace,
) -> Result<(), String> {
    let (time, cpu) = (record.time_ns, record.cpu);
    let required =
        |id: u16| task(id).ok_or_else(|| format!("a record without its task: {record:?}"));
    let event = match record.kind {
        Kind::Switch => {
            let prev = task(record.a);
            Event::Switch {
                prev,
                prev_state: match (prev, record.value) {
                    (None, _) => PrevState::Runnable,
                    (Some(_), v) if v == KernelPrevState::Preempted as u64 => PrevState::Preempted,
                    (Some(_), v) if v == KernelPrevState::Sleeping as u64 => PrevState::Sleeping,
                    (Some(_), v) if v == KernelPrevState::Dead as u64 => PrevState::Dead,
                    (Some(_), other) => return Err(format!("sched_switch state {other}")),
                },
                next: task(record.b),
            }
        }
        Kind::Waking => Event::Waking {
            waker: task(record.b),
            task: required(record.a)?,
            target_cpu: record.value as usize,
        },
        Kind::Wakeup => Event::Wakeup {
            task: required(record.a)?,
            target_cpu: record.value as usize,
        },
        Kind::WakeupNew => {
            let index = required(record.a)?;
            trace.tasks[index].prio = i32::from(record.b);
            Event::WakeupNew {
                task: index,
                target_cpu: record.value as usize,
            }
        }
        Kind::Migrate => Event::Migrate {
            task: required(record.a)?,
            orig_cpu: usize::from(record.b),
            dest_cpu: record.value as usize,
        },
        Kind::CpuFrequency => Event::CpuFrequency { khz: record.value },
        Kind::CpuIdle => Event::CpuIdle {
            state: (record.value != u64::from(u32::MAX)).then_some(record.value as u32),
        },
        Kind::Exit => Event::Exit {
            task: required(record.a)?,
        },
        kind => {
            let track = match kind {
                Kind::TaskUtilAvg => CounterTrack::Task(required(record.a)?, TaskSignal::UtilAvg),
                Kind::TaskUtilEst => CounterTrack::Task(required(record.a)?, TaskSignal::UtilEst),
                Kind::TaskLoadAvg => CounterTrack::Task(required(record.a)?, TaskSignal::LoadAvg),
                Kind::CpuUtil => CounterTrack::Cpu(cpu, CpuSignal::Util),
                Kind::CpuCapacity => CounterTrack::Cpu(cpu, CpuSignal::Capacity),
                Kind::CpuUclampMin => CounterTrack::Cpu(cpu, CpuSignal::UclampMin),
                Kind::CpuUclampMax => CounterTrack::Cpu(cpu, CpuSignal::UclampMax),
                Kind::DomainEnergy => CounterTrack::DomainEnergy(usize::from(record.a)),
                Kind::Overutilized => CounterTrack::Overutilized,
                Kind::GroupThrottled => {
                    CounterTrack::GroupCpu(group(record.a)?, cpu, GroupCpuSignal::Throttled)
                }
                Kind::GroupRuntimeRemaining => {
                    CounterTrack::GroupCpu(group(record.a)?, cpu, GroupCpuSignal::RuntimeRemaining)
                }
                Kind::GroupRuntime => CounterTrack::GroupRuntime(group(record.a)?),
                other => return Err(format!("an explain record among the trace's: {other:?}")),
            };
            trace.counter(time, track, record.value as i64);
            return Ok(());
        }
    };
    trace.records.push(Record {
        time_ns: time,
        cpu,
        event,
    });
    Ok(())
}

#[cfg(test)]
mod tests;
