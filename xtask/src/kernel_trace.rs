//! The kernel's tracepoint records (`src/task/tracepoint.rs`), read from a
//! decoded run's `tracepoint:` lines into a [`Trace`], the simulator's form,
//! for the runner's `--trace FILE` (docs/tracing.md, "The kernel's traces").
//!
//! The kernel prints its per-CPU buffers one after another; the records are
//! merged here by time (a stable sort: each CPU's own order, then CPU order,
//! among records of one instant). Kernel task ids become trace indices with
//! the run's reported tasks first, in the report's order (so the trace's
//! pid `i + 1` is the report's task `i`, as in the simulator's traces), then
//! the kernel's other tasks by id; the idle tasks are pid 0.

use std::collections::BTreeMap;

use fairway_trace::{
    CounterTrack, CpuSignal, Event, PrevState, Record, TaskIndex, TaskInfo, TaskSignal, Trace,
};

/// The kernel's "no task" (an idle task, or no waker).
const NO_TASK: u16 = u16::MAX;

/// A record as the kernel prints it.
#[derive(Clone, Copy, Debug)]
struct Line {
    kind: u8,
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
        .ok_or_else(|| format!("a malformed tracepoint line: {line:?}"))
}

fn parse_record(rest: &str, line: &str) -> Result<Line, String> {
    let mut words = rest.split_whitespace();
    Ok(Line {
        kind: number(words.next(), line)?,
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

/// The trace in a decoded run's lines; `None` when the kernel printed no
/// tracepoint records (it ran without `trace_records=`). A CPU whose buffer
/// filled up is an error: the trace would miss events.
pub fn from_lines(lines: &[String]) -> Result<Option<Trace>, String> {
    let mut records = Vec::new();
    let mut names = BTreeMap::new();
    let mut nr_cpus = 0;
    let mut end = None;
    for line in lines {
        if let Some(rest) = after(line, "tracepoint: ") {
            records.push(parse_record(rest, line)?);
        } else if let Some(rest) = after(line, "tracepoint-task: ") {
            let (id, name) = rest
                .split_once(' ')
                .ok_or_else(|| format!("a malformed tracepoint line: {line:?}"))?;
            names.insert(number::<u16>(Some(id), line)?, name.to_string());
        } else if let Some(rest) = after(line, "tracepoint-cpu: ") {
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
        } else if let Some(rest) = after(line, "tracepoint-end: ") {
            end = Some(number::<u64>(Some(rest.trim()), line)?);
        }
    }
    if end.is_none() {
        return Ok(None);
    }
    records.sort_by_key(|r| r.time_ns);
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
    let mut trace = Trace {
        nr_cpus,
        ..Trace::default()
    };
    for (index, &id) in order.iter().enumerate() {
        indices.insert(id, index);
        trace.tasks.push(TaskInfo {
            name: names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("task{id}")),
            prio: 120,
        });
    }
    let task = |id: u16| (id != NO_TASK).then(|| indices[&id]);
    for record in &records {
        convert(record, &task, &mut trace)?;
    }
    Ok(Some(trace))
}

/// The kernel task ids a record names.
fn task_ids(record: &Line) -> Vec<u16> {
    let ids = match record.kind {
        0 | 1 => vec![record.a, record.b],
        2..=4 | 7..=10 => vec![record.a],
        _ => vec![],
    };
    ids.into_iter().filter(|&id| id != NO_TASK).collect()
}

fn convert(
    record: &Line,
    task: &impl Fn(u16) -> Option<TaskIndex>,
    trace: &mut Trace,
) -> Result<(), String> {
    let (time, cpu) = (record.time_ns, record.cpu);
    let required =
        |id: u16| task(id).ok_or_else(|| format!("a record without its task: {record:?}"));
    let event = match record.kind {
        0 => {
            let prev = task(record.a);
            Event::Switch {
                prev,
                prev_state: match (prev, record.value) {
                    (None, _) => PrevState::Runnable,
                    (Some(_), 0) => PrevState::Preempted,
                    (Some(_), 1) => PrevState::Sleeping,
                    (Some(_), 2) => PrevState::Dead,
                    (Some(_), other) => return Err(format!("sched_switch state {other}")),
                },
                next: task(record.b),
            }
        }
        1 => Event::Waking {
            waker: task(record.b),
            task: required(record.a)?,
            target_cpu: record.value as usize,
        },
        2 => Event::Wakeup {
            task: required(record.a)?,
            target_cpu: record.value as usize,
        },
        3 => {
            let index = required(record.a)?;
            trace.tasks[index].prio = i32::from(record.b);
            Event::WakeupNew {
                task: index,
                target_cpu: record.value as usize,
            }
        }
        4 => Event::Migrate {
            task: required(record.a)?,
            orig_cpu: usize::from(record.b),
            dest_cpu: record.value as usize,
        },
        5 => Event::CpuFrequency { khz: record.value },
        6 => Event::CpuIdle {
            state: (record.value != u64::from(u32::MAX)).then_some(record.value as u32),
        },
        7 => Event::Exit {
            task: required(record.a)?,
        },
        kind => {
            let track = match kind {
                8 => CounterTrack::Task(required(record.a)?, TaskSignal::UtilAvg),
                9 => CounterTrack::Task(required(record.a)?, TaskSignal::UtilEst),
                10 => CounterTrack::Task(required(record.a)?, TaskSignal::LoadAvg),
                11 => CounterTrack::Cpu(cpu, CpuSignal::Util),
                12 => CounterTrack::Cpu(cpu, CpuSignal::Capacity),
                13 => CounterTrack::Cpu(cpu, CpuSignal::UclampMin),
                14 => CounterTrack::Cpu(cpu, CpuSignal::UclampMax),
                15 => CounterTrack::DomainEnergy(usize::from(record.a)),
                16 => CounterTrack::Overutilized,
                other => return Err(format!("a tracepoint record of unknown kind {other}")),
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
            "0.1 tracepoint: 3 0 500 5 120 0\n\
             0.1 tracepoint: 0 0 600 65535 5 0\n\
             tracepoint-cpu: 0 records=2 dropped=0\n\
             tracepoint: 3 1 100 7 100 1\n\
             tracepoint: 0 1 200 65535 7 0\n\
             tracepoint: 8 1 200 7 0 321\n\
             tracepoint-cpu: 1 records=3 dropped=0\n\
             tracepoint-task: 5 main\n\
             tracepoint-task: 7 rt\n\
             tracepoint-end: 1000\n\
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
    fn a_full_buffer_is_an_error_and_no_records_no_trace() {
        let full = from_lines(&lines(
            "tracepoint-cpu: 2 records=10 dropped=3\ntracepoint-end: 5",
        ));
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
