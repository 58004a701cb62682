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
use fairway_trace::explain::{
    self, Candidate, Competitor, DomainCpuView, EnergyView, PlacementView, RrCandidate,
    ThrottleView,
};
use fairway_trace::{
    CounterTrack, CpuSignal, Event, GroupCpuSignal, PrevState, Record, TaskIndex, TaskInfo,
    TaskSignal, Trace,
};

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

/// One decision explain mode recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A pick among fair tasks.
    Pick {
        /// When, ns since the run's start.
        time_ns: u64,
        /// Where.
        cpu: usize,
        /// EEVDF's rule (else CFS's).
        eevdf: bool,
        /// The candidates.
        candidates: Vec<Candidate>,
        /// The task chosen (`None`: idle).
        chosen: Option<TaskIndex>,
    },
    /// A pick under round robin.
    RrPick {
        /// When, ns since the run's start.
        time_ns: u64,
        /// Where.
        cpu: usize,
        /// The time slice, ns.
        slice: u64,
        /// The candidates in FIFO order, head first.
        candidates: Vec<RrCandidate>,
        /// The task chosen (`None`: idle).
        chosen: Option<TaskIndex>,
    },
    /// A wake-up's placement.
    Wake {
        /// When.
        time_ns: u64,
        /// The task woken.
        task: TaskIndex,
        /// Where it last ran.
        previous: usize,
        /// Where it goes.
        target: usize,
        /// The CPUs as placement saw them.
        cpus: Vec<PlacementView>,
        /// Under EAS: the task's `task_util_est` and the energy estimates
        /// `find_energy_efficient_cpu` made, in order.
        energy: Option<(u64, Vec<EnergyView>)>,
    },
    /// A frequency change.
    Frequency {
        /// When.
        time_ns: u64,
        /// The performance domain.
        domain: usize,
        /// Its new frequency.
        khz: u64,
        /// Its CPUs.
        cpus: Vec<DomainCpuView>,
    },
    /// A throttle or unthrottle of a task group's run queue.
    Throttle {
        /// When.
        time_ns: u64,
        /// The numbers behind it.
        view: ThrottleView,
    },
}

/// Explain mode's decisions in a run's lines, with the tasks' names.
pub struct Explained {
    /// The decisions, in time order.
    pub decisions: Vec<Decision>,
    /// The tasks' names, by trace index.
    pub names: Vec<String>,
}

impl Explained {
    /// The decisions as the simulator prints them (`fairway_trace::explain`).
    pub fn lines(&self) -> Vec<String> {
        let name = |task: usize| self.names[task].clone();
        let mut lines = Vec::new();
        for decision in &self.decisions {
            match decision {
                Decision::Pick {
                    time_ns,
                    cpu,
                    eevdf,
                    candidates,
                    chosen,
                } => lines.extend(explain::pick_lines(
                    *time_ns, *cpu, *eevdf, candidates, name, *chosen,
                )),
                Decision::RrPick {
                    time_ns,
                    cpu,
                    slice,
                    candidates,
                    chosen,
                } => lines.extend(explain::rr_pick_lines(
                    *time_ns, *cpu, *slice, candidates, name, *chosen,
                )),
                Decision::Wake {
                    time_ns,
                    task,
                    previous,
                    target,
                    cpus,
                    energy,
                } => {
                    lines.extend(explain::wake_lines(*time_ns, &name(*task), *previous, cpus));
                    if let Some((task_util_est, estimates)) =
                        energy.as_ref().filter(|(_, e)| !e.is_empty())
                    {
                        lines.extend(explain::energy_lines(*task_util_est, *previous, estimates));
                    }
                    lines.push(explain::chose_cpu_line(*target));
                }
                Decision::Frequency {
                    time_ns,
                    domain,
                    khz,
                    cpus,
                } => lines.extend(explain::frequency_lines(*time_ns, *domain, *khz, cpus)),
                Decision::Throttle { time_ns, view } => {
                    lines.extend(explain::throttle_lines(*time_ns, view));
                }
            }
        }
        lines
    }
}

/// The decisions explain mode recorded (`explain=N`), `None` without
/// trace records.
pub fn explained(lines: &[String]) -> Result<Option<Explained>, String> {
    let Some(parsed) = parse(lines)? else {
        return Ok(None);
    };
    let required = |id: u16| {
        parsed
            .task(id)
            .ok_or_else(|| "an explain record without its task".to_string())
    };
    let mut decisions = Vec::new();
    let mut records = parsed
        .records
        .iter()
        .filter(|r| r.kind.is_explain())
        .peekable();
    let malformed = |r: &Line| format!("a malformed explain record: {r:?}");
    // A wake-up's energy records come before its own (feec runs inside the
    // placement): kept for the wake-up that follows on the same CPU.
    let mut energy: BTreeMap<usize, (u16, u64, Vec<EnergyView>)> = BTreeMap::new();
    while let Some(head) = records.next() {
        let (time_ns, cpu) = (head.time_ns, head.cpu);
        if head.kind == Kind::ExplainTaskUtil {
            energy.insert(cpu, (head.a, head.value, Vec::new()));
            continue;
        }
        if head.kind == Kind::ExplainEnergy {
            let utils = records
                .next_if(|r| {
                    r.kind == Kind::ExplainEnergyUtil
                        && r.cpu == cpu
                        && r.a == head.a
                        && r.b == head.b
                })
                .copied()
                .ok_or_else(|| malformed(head))?;
            let Some((_, _, estimates)) = energy.get_mut(&cpu) else {
                return Err(malformed(head));
            };
            estimates.push(EnergyView {
                domain: usize::from(head.a),
                dst: (head.b != NO_TASK).then_some(usize::from(head.b)),
                max_util: utils.value >> 24 & 0xff_ffff,
                sum_util: utils.value & 0xff_ffff,
                cpu_cap: utils.value >> 48,
                energy: head.value,
            });
            continue;
        }
        let mut next = |kind: Kind| {
            records
                .next_if(|r| r.kind == kind && r.time_ns == time_ns && r.cpu == cpu)
                .copied()
                .ok_or_else(|| malformed(head))
        };
        decisions.push(match head.kind {
            Kind::ExplainPick => {
                let mut candidates = Vec::new();
                for _ in 0..head.b {
                    let vruntime = next(Kind::ExplainCandidate)?;
                    let (deadline, lag) = (next(Kind::ExplainDeadline)?, next(Kind::ExplainLag)?);
                    let flags = vruntime.b;
                    let queue = flags >> 8;
                    candidates.push(Candidate {
                        who: if flags & 8 != 0 {
                            Competitor::Group(parsed.group_path(vruntime.a)?)
                        } else {
                            Competitor::Task(required(vruntime.a)?)
                        },
                        queue: (queue != 0).then(|| parsed.group_path(queue)).transpose()?,
                        vruntime: vruntime.value,
                        deadline: deadline.value,
                        lag: lag.value as i64,
                        eligible: flags & 1 != 0,
                        protected: (flags & 2 != 0).then_some(flags & 4 != 0),
                    });
                }
                Decision::Pick {
                    time_ns,
                    cpu,
                    eevdf: head.value == 1,
                    candidates,
                    chosen: parsed.task(head.a),
                }
            }
            Kind::ExplainRrPick => {
                let mut candidates = Vec::new();
                for _ in 0..head.b {
                    let record = next(Kind::ExplainRrCandidate)?;
                    candidates.push(RrCandidate {
                        task: required(record.a)?,
                        ran: (record.b & 1 != 0).then_some(record.value),
                    });
                }
                Decision::RrPick {
                    time_ns,
                    cpu,
                    slice: head.value,
                    candidates,
                    chosen: parsed.task(head.a),
                }
            }
            Kind::ExplainWake => {
                let mut cpus = Vec::new();
                while let Ok(view) = next(Kind::ExplainPlacement) {
                    cpus.push(PlacementView {
                        cpu: usize::from(view.a),
                        capacity: view.value >> 32,
                        util: view.value & 0xffff_ffff,
                        nr_running: u64::from(view.b & 0x7fff),
                        idle: view.b & 0x8000 != 0,
                    });
                }
                // The estimates recorded on this CPU for this task.
                let energy = energy
                    .remove(&cpu)
                    .filter(|(task, _, _)| *task == head.a)
                    .map(|(_, util, estimates)| (util, estimates));
                Decision::Wake {
                    time_ns,
                    task: required(head.a)?,
                    previous: usize::from(head.b),
                    target: head.value as usize,
                    cpus,
                    energy,
                }
            }
            Kind::ExplainFrequency => {
                let mut cpus = Vec::new();
                for _ in 0..head.b {
                    let view = next(Kind::ExplainDomainCpu)?;
                    cpus.push(DomainCpuView {
                        cpu: usize::from(view.a),
                        capacity_orig: view.value >> 48,
                        util_avg: view.value >> 24 & 0xff_ffff,
                        util_est: view.value & 0xff_ffff,
                    });
                }
                Decision::Frequency {
                    time_ns,
                    domain: usize::from(head.a),
                    khz: head.value,
                    cpus,
                }
            }
            Kind::ExplainThrottle => {
                let remaining = next(Kind::ExplainThrottleRemaining)?;
                let pool = next(Kind::ExplainThrottlePool)?;
                let quota = next(Kind::ExplainThrottleQuota)?;
                let (period, burst) = (
                    next(Kind::ExplainThrottlePeriod)?,
                    next(Kind::ExplainThrottleBurst)?,
                );
                Decision::Throttle {
                    time_ns,
                    view: ThrottleView {
                        group: parsed.group_path(head.a)?,
                        cpu,
                        throttled: head.value == 1,
                        runtime_remaining: remaining.value as i64,
                        pool_runtime: (pool.value != u64::MAX).then_some(pool.value),
                        quota: (quota.value != u64::MAX).then_some(quota.value),
                        period: period.value,
                        burst: burst.value,
                    },
                }
            }
            _ => return Err(malformed(head)),
        });
    }
    let names = parsed.tasks.iter().map(|t| t.name.clone()).collect();
    Ok(Some(Explained { decisions, names }))
}

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
        | Kind::ExplainRrCandidate => vec![record.a],
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
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn records_merge_by_time_and_tasks_follow_the_report() {
        // CPU 1's buffer is printed after CPU 0's but holds the earlier
        // records; task 7 is the report's first task, 5 a kernel task.
        let trace = from_lines(&lines(
            "0.1 trace-record: 3 0 500 5 120 0\n\
             0.1 trace-record: 0 0 600 65535 5 0\n\
             trace-cpu: 0 records=2 dropped=0\n\
             trace-record: 3 1 100 7 100 1\n\
             trace-record: 0 1 200 65535 7 0\n\
             trace-record: 8 1 200 7 0 321\n\
             trace-cpu: 1 records=3 dropped=0\n\
             trace-task: 5 main\n\
             trace-task: 7 rt\n\
             trace-end: 1000\n\
             report: task id=7 name=rt cpu=1",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(trace.nr_cpus, 2);
        let names: Vec<_> = trace
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), t.prio))
            .collect();
        assert_eq!(names, [("rt", 100), ("main", 120)]);
        let times: Vec<_> = trace.records.iter().map(|r| (r.time_ns, r.cpu)).collect();
        assert_eq!(times, [(100, 1), (200, 1), (500, 0), (600, 0)]);
        assert_eq!(
            trace.records[1].event,
            Event::Switch {
                prev: None,
                prev_state: PrevState::Runnable,
                next: Some(0)
            }
        );
        assert_eq!(
            trace.counters[0].track,
            CounterTrack::Task(0, TaskSignal::UtilAvg)
        );
        assert_eq!(trace.counters[0].value, 321);
    }

    #[test]
    fn explain_records_decode_into_the_decisions_they_pack() {
        let k = |kind: Kind| kind as u8;
        // CPU 0 at 100 ns: a pick of task 7 among 7 (running, eligible,
        // protected) and 5 (lag -3, not eligible); CPU 1 at 50 ns: task 5's wake-up from
        // CPU 1 to 0 after one energy estimate; CPU 1 at 70 ns: domain 0 to
        // 950 MHz with CPU 0's numbers.
        let text = format!(
            "trace-record: {} 0 100 7 2 1\n\
             trace-record: {} 0 100 7 7 1000\n\
             trace-record: {} 0 100 7 0 1500\n\
             trace-record: {} 0 100 7 0 0\n\
             trace-record: {} 0 100 5 0 1003\n\
             trace-record: {} 0 100 5 0 1200\n\
             trace-record: {} 0 100 5 0 {}\n\
             trace-cpu: 0 records=7 dropped=0\n\
             trace-record: {} 1 40 5 0 191\n\
             trace-record: {} 1 45 0 65535 2025423\n\
             trace-record: {} 1 45 0 65535 {}\n\
             trace-record: {} 1 50 5 1 0\n\
             trace-record: {} 1 50 0 {} {}\n\
             trace-record: {} 1 70 0 1 950000\n\
             trace-record: {} 1 70 0 0 {}\n\
             trace-cpu: 1 records=7 dropped=0\n\
             trace-task: 5 b\n\
             trace-task: 7 a\n\
             trace-end: 200\n\
             report: task id=7 name=a cpu=0",
            k(Kind::ExplainPick),
            k(Kind::ExplainCandidate),
            k(Kind::ExplainDeadline),
            k(Kind::ExplainLag),
            k(Kind::ExplainCandidate),
            k(Kind::ExplainDeadline),
            k(Kind::ExplainLag),
            (-3i64) as u64,
            k(Kind::ExplainTaskUtil),
            k(Kind::ExplainEnergy),
            k(Kind::ExplainEnergyUtil),
            383u64 << 48 | 306 << 24 | 719,
            k(Kind::ExplainWake),
            k(Kind::ExplainPlacement),
            0x8000 | 2,
            383u64 << 32 | 300,
            k(Kind::ExplainFrequency),
            k(Kind::ExplainDomainCpu),
            383u64 << 48 | 120 << 24 | 130,
        );
        let explained = explained(&lines(&text)).unwrap().unwrap();
        assert_eq!(explained.names, ["a", "b"]);
        let [wake, frequency, pick] = &explained.decisions[..] else {
            panic!("{:?}", explained.decisions);
        };
        assert_eq!(
            *wake,
            Decision::Wake {
                time_ns: 50,
                task: 1,
                previous: 1,
                target: 0,
                cpus: vec![PlacementView {
                    cpu: 0,
                    capacity: 383,
                    util: 300,
                    nr_running: 2,
                    idle: true
                }],
                energy: Some((
                    191,
                    vec![EnergyView {
                        domain: 0,
                        dst: None,
                        max_util: 306,
                        sum_util: 719,
                        cpu_cap: 383,
                        energy: 2025423
                    }]
                )),
            }
        );
        assert_eq!(
            *frequency,
            Decision::Frequency {
                time_ns: 70,
                domain: 0,
                khz: 950000,
                cpus: vec![DomainCpuView {
                    cpu: 0,
                    capacity_orig: 383,
                    util_avg: 120,
                    util_est: 130
                }],
            }
        );
        let Decision::Pick {
            cpu: 0,
            eevdf: true,
            candidates,
            chosen: Some(0),
            ..
        } = pick
        else {
            panic!("{pick:?}");
        };
        assert_eq!(candidates[0].protected, Some(true));
        assert!(candidates[0].eligible);
        assert_eq!((candidates[1].task(), candidates[1].lag), (Some(1), -3));
        assert_eq!(
            (candidates[1].protected, candidates[1].eligible),
            (None, false)
        );
        let printed = explained.lines();
        assert!(printed.iter().any(|l| l.contains("pd0 without the task")));
        assert!(printed.iter().any(|l| l.contains("chose a")));
    }

    #[test]
    fn round_robin_pick_records_decode_in_fifo_order() {
        let k = |kind: Kind| kind as u8;
        // CPU 0 at 100 ns: a round-robin pick of task 5 (the head) among 5
        // and 7, which was running and ran 4,000,000 ns of a 4,000,000 ns
        // slice.
        let text = format!(
            "trace-record: {} 0 100 5 2 4000000\n\
             trace-record: {} 0 100 5 0 0\n\
             trace-record: {} 0 100 7 1 4000000\n\
             trace-cpu: 0 records=3 dropped=0\n\
             trace-task: 5 b\n\
             trace-task: 7 a\n\
             trace-end: 200\n\
             report: task id=7 name=a cpu=0",
            k(Kind::ExplainRrPick),
            k(Kind::ExplainRrCandidate),
            k(Kind::ExplainRrCandidate),
        );
        let explained = explained(&lines(&text)).unwrap().unwrap();
        assert_eq!(explained.names, ["a", "b"]);
        assert_eq!(
            explained.decisions,
            [Decision::RrPick {
                time_ns: 100,
                cpu: 0,
                slice: 4_000_000,
                candidates: vec![
                    RrCandidate { task: 1, ran: None },
                    RrCandidate {
                        task: 0,
                        ran: Some(4_000_000)
                    },
                ],
                chosen: Some(1),
            }]
        );
        let printed = explained.lines();
        assert!(printed[1].contains(" 1 b ") && printed[1].ends_with("head of the FIFO"));
        assert!(printed[2].contains(" 2 a ") && printed[2].ends_with("rotated to the back"));
        assert!(printed[3].starts_with("explain:   chose b:"));
    }

    #[test]
    fn a_full_buffer_is_an_error_and_no_records_no_trace() {
        let full = from_lines(&lines("trace-cpu: 2 records=10 dropped=3\ntrace-end: 5"));
        assert!(
            full.unwrap_err()
                .contains("cpu2's trace buffer filled up: 3 records dropped")
        );
        assert_eq!(
            from_lines(&lines("report: task id=1 name=a")).unwrap(),
            None
        );
    }
}
