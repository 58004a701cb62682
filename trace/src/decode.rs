//! Reading a trace back ([`Trace::from_perfetto`]), untrusted: every
//! number that sizes something or names a CPU, task or group is checked
//! before it is used.

use protobuf::Message;

use crate::protos::perfetto_subset::{FtraceEvent, TracePacket};
use crate::{
    CounterTrack, CpuSignal, Event, GroupCpuSignal, MAX_CPUS, MAX_GROUPS, MAX_TASKS, PrevState,
    Record, TaskIndex, TaskInfo, TaskSignal, Trace,
};

impl Trace {
    /// Reads back a trace [`Trace::to_perfetto`] wrote (for `cargo xtask
    /// plot`): the tasks from the process tree, the events from the ftrace
    /// bundles, the task groups from their tracks' names, the counters from
    /// their tracks.
    ///
    /// The file is untrusted (a damaged or edited trace), so every number
    /// that sizes something or names a CPU, task or group is checked against
    /// [`MAX_CPUS`], [`MAX_TASKS`] and [`MAX_GROUPS`] before it is used, and
    /// every task an event names must be in the process tree: a trace that
    /// passes has `nr_cpus` at most [`MAX_CPUS`] and records whose CPUs are
    /// below it and whose tasks index [`Trace::tasks`]. A damaged file is
    /// refused with a message naming the field, its value and the byte
    /// offset of its packet.
    pub fn from_perfetto(bytes: &[u8]) -> Result<Trace, String> {
        let packets = packets(bytes)?;
        let mut trace = Trace::default();
        let mut tracks = std::collections::BTreeMap::new();
        // The process tree first: the events name its tasks.
        for (offset, packet) in &packets {
            let at = |message: String| format!("packet at byte {offset}: {message}");
            if !packet.has_process_tree() {
                continue;
            }
            for thread in &packet.process_tree().threads {
                let Some(task) = task_of(thread.tid(), "process tree thread tid").map_err(at)?
                else {
                    continue;
                };
                if trace.tasks.len() <= task {
                    trace.tasks.resize(
                        task + 1,
                        TaskInfo {
                            name: String::new(),
                            prio: 120,
                        },
                    );
                }
                trace.tasks[task].name = thread.name().to_string();
            }
        }
        for (offset, packet) in &packets {
            let at = |message: String| format!("packet at byte {offset}: {message}");
            if packet.has_ftrace_events() {
                let bundle = packet.ftrace_events();
                let cpu = bounded(
                    u64::from(bundle.cpu()),
                    MAX_CPUS,
                    "ftrace_events cpu",
                    "MAX_CPUS",
                )
                .map_err(at)?;
                trace.nr_cpus = trace.nr_cpus.max(cpu + 1);
                for event in &bundle.event {
                    if let Some(event_read) = Self::event_from(event).map_err(at)? {
                        check_tasks(&event_read, trace.tasks.len()).map_err(at)?;
                        trace.records.push(Record {
                            time_ns: event.timestamp(),
                            cpu,
                            event: event_read,
                        });
                    }
                }
            } else if packet.has_track_descriptor() {
                let descriptor = packet.track_descriptor();
                if descriptor.uuid() >> 32 == Self::group_uuid(0) >> 32 {
                    let group = bounded(
                        descriptor.uuid() & 0xffff_ffff,
                        MAX_GROUPS,
                        "track_descriptor group",
                        "MAX_GROUPS",
                    )
                    .map_err(at)?;
                    if trace.groups.len() <= group {
                        trace.groups.resize(group + 1, String::new());
                    }
                    trace.groups[group] = descriptor.name().to_string();
                } else if let Some(track) = Self::track_of(descriptor.uuid()).map_err(at)? {
                    if let CounterTrack::Task(task, _) = track
                        && task >= trace.tasks.len()
                    {
                        return Err(at(format!(
                            "counter track task={task} is not in the process tree ({} tasks)",
                            trace.tasks.len()
                        )));
                    }
                    tracks.insert(descriptor.uuid(), track);
                }
            } else if packet.has_track_event() {
                let event = packet.track_event();
                if let Some(&track) = tracks.get(&event.track_uuid()) {
                    trace.counter(packet.timestamp(), track, event.counter_value());
                }
            }
        }
        trace.records.sort_by_key(|r| r.time_ns);
        Ok(trace)
    }

    /// The event an ftrace event stands for (`None`: one Fairway does not
    /// write, or a task event for the idle task); its CPUs checked against
    /// [`MAX_CPUS`] and its tasks against [`MAX_TASKS`].
    fn event_from(event: &FtraceEvent) -> Result<Option<Event>, String> {
        let cpu = |value: i32, field: &str| {
            let value = u64::try_from(value).map_err(|_| format!("{field}={value} is negative"))?;
            bounded(value, MAX_CPUS, field, "MAX_CPUS")
        };
        // An event for the idle task (pid 0) is not read.
        macro_rules! task {
            ($pid:expr, $field:expr) => {
                match task_of($pid, $field)? {
                    Some(task) => task,
                    None => return Ok(None),
                }
            };
        }
        if event.has_sched_switch() {
            let e = event.sched_switch();
            let prev_state = match e.prev_state() {
                1 => PrevState::Sleeping,
                0x10 => PrevState::Dead,
                0x100 => PrevState::Preempted,
                _ => PrevState::Runnable,
            };
            return Ok(Some(Event::Switch {
                prev: task_of(e.prev_pid(), "sched_switch prev_pid")?,
                prev_state,
                next: task_of(e.next_pid(), "sched_switch next_pid")?,
            }));
        }
        if event.has_cpu_frequency() {
            return Ok(Some(Event::CpuFrequency {
                khz: u64::from(event.cpu_frequency().state()),
            }));
        }
        if event.has_cpu_idle() {
            let state = event.cpu_idle().state();
            return Ok(Some(Event::CpuIdle {
                state: (state != u32::MAX).then_some(state),
            }));
        }
        if event.has_sched_waking() {
            let e = event.sched_waking();
            // The waker is the event's `common_pid`, a u32 in the format.
            let waker = i32::try_from(event.pid()).map_err(|_| {
                format!("sched_waking common pid={} is above i32::MAX", event.pid())
            })?;
            return Ok(Some(Event::Waking {
                waker: task_of(waker, "sched_waking common pid")?,
                task: task!(e.pid(), "sched_waking pid"),
                target_cpu: cpu(e.target_cpu(), "sched_waking target_cpu")?,
            }));
        }
        if event.has_sched_wakeup() {
            let e = event.sched_wakeup();
            return Ok(Some(Event::Wakeup {
                task: task!(e.pid(), "sched_wakeup pid"),
                target_cpu: cpu(e.target_cpu(), "sched_wakeup target_cpu")?,
            }));
        }
        if event.has_sched_wakeup_new() {
            let e = event.sched_wakeup_new();
            return Ok(Some(Event::WakeupNew {
                task: task!(e.pid(), "sched_wakeup_new pid"),
                target_cpu: cpu(e.target_cpu(), "sched_wakeup_new target_cpu")?,
            }));
        }
        if event.has_sched_process_exit() {
            return Ok(Some(Event::Exit {
                task: task!(event.sched_process_exit().pid(), "sched_process_exit pid"),
            }));
        }
        if event.has_sched_migrate_task() {
            let e = event.sched_migrate_task();
            return Ok(Some(Event::Migrate {
                task: task!(e.pid(), "sched_migrate_task pid"),
                orig_cpu: cpu(e.orig_cpu(), "sched_migrate_task orig_cpu")?,
                dest_cpu: cpu(e.dest_cpu(), "sched_migrate_task dest_cpu")?,
            }));
        }
        Ok(None)
    }

    /// The counter a track uuid of [`Trace::counter_uuid`] stands for
    /// (`None`: a track Fairway does not write), its task, CPU, domain and
    /// group checked against the limits.
    fn track_of(uuid: u64) -> Result<Option<CounterTrack>, String> {
        let low = uuid & 0xffff_ffff;
        let task_signal = |s: u64| match s {
            0 => Some(TaskSignal::UtilAvg),
            1 => Some(TaskSignal::UtilEst),
            2 => Some(TaskSignal::LoadAvg),
            _ => None,
        };
        let cpu_signal = |s: u64| match s {
            0 => Some(CpuSignal::Util),
            1 => Some(CpuSignal::Capacity),
            2 => Some(CpuSignal::UclampMin),
            3 => Some(CpuSignal::UclampMax),
            _ => None,
        };
        let task = |value: u64| bounded(value, MAX_TASKS, "counter track task", "MAX_TASKS");
        let cpu = |value: u64| bounded(value, MAX_CPUS, "counter track cpu", "MAX_CPUS");
        let group = |value: u64| bounded(value, MAX_GROUPS, "counter track group", "MAX_GROUPS");
        Ok(match uuid >> 32 {
            2 => match task_signal(low & 15) {
                Some(signal) => Some(CounterTrack::Task(task(low >> 4)?, signal)),
                None => None,
            },
            3 => match cpu_signal(low & 15) {
                Some(signal) => Some(CounterTrack::Cpu(cpu(low >> 4)?, signal)),
                None => None,
            },
            // A performance domain holds at least one CPU.
            4 => Some(CounterTrack::DomainEnergy(bounded(
                low,
                MAX_CPUS,
                "counter track performance domain",
                "MAX_CPUS",
            )?)),
            5 => Some(CounterTrack::Overutilized),
            7 => {
                let signal = match low & 15 {
                    0 => GroupCpuSignal::Throttled,
                    1 => GroupCpuSignal::RuntimeRemaining,
                    _ => return Ok(None),
                };
                Some(CounterTrack::GroupCpu(
                    group(low >> 16)?,
                    cpu((low >> 4) & 0xfff)?,
                    signal,
                ))
            }
            8 => Some(CounterTrack::GroupRuntime(group(low)?)),
            _ => None,
        })
    }
}

/// `value` of `field` as an index below `limit` (named `limit_name`).
fn bounded(value: u64, limit: usize, field: &str, limit_name: &str) -> Result<usize, String> {
    match usize::try_from(value) {
        Ok(index) if index < limit => Ok(index),
        _ => Err(format!(
            "{field}={value} is not below {limit_name} ({limit})"
        )),
    }
}

/// The task a pid stands for (pid `i + 1` is task `i`), `None` for pid 0
/// (the idle task); a negative pid or one above [`MAX_TASKS`] is refused.
fn task_of(pid: i32, field: &str) -> Result<Option<TaskIndex>, String> {
    match pid {
        0 => Ok(None),
        pid if pid < 0 => Err(format!("{field}={pid} is negative")),
        pid if pid as usize <= MAX_TASKS => Ok(Some(pid as usize - 1)),
        pid => Err(format!(
            "{field}={pid} is above MAX_TASKS ({MAX_TASKS}; pid i + 1 is task i)"
        )),
    }
}

/// Whether every task `event` names is in the process tree (`tasks` long):
/// the readers of a [`Trace`] index [`Trace::tasks`] by them.
fn check_tasks(event: &Event, tasks: usize) -> Result<(), String> {
    match event
        .tasks()
        .into_iter()
        .flatten()
        .find(|&task| task >= tasks)
    {
        Some(task) => Err(format!(
            "{} names pid {}, which the process tree does not list ({tasks} tasks)",
            event_name(event),
            task + 1
        )),
        None => Ok(()),
    }
}

fn event_name(event: &Event) -> &'static str {
    match event {
        Event::Switch { .. } => "sched_switch",
        Event::Waking { .. } => "sched_waking",
        Event::Wakeup { .. } => "sched_wakeup",
        Event::WakeupNew { .. } => "sched_wakeup_new",
        Event::Migrate { .. } => "sched_migrate_task",
        Event::CpuFrequency { .. } => "cpu_frequency",
        Event::CpuIdle { .. } => "cpu_idle",
        Event::Exit { .. } => "sched_process_exit",
    }
}

/// A varint at `bytes[*at..]`, moving `at` past it.
fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let start = *at;
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = bytes.get(*at) else {
            return Err(format!(
                "not a Perfetto trace: a varint at byte {start} runs past the end"
            ));
        };
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(format!(
        "not a Perfetto trace: a varint at byte {start} is longer than ten bytes"
    ))
}

/// The trace's packets (field 1 of Perfetto's `Trace`), each with the byte
/// offset of its field, decoded one by one so that an error can say where;
/// other fields are skipped as protobuf skips unknown fields.
fn packets(bytes: &[u8]) -> Result<Vec<(usize, TracePacket)>, String> {
    let mut packets = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let offset = at;
        let key = varint(bytes, &mut at)?;
        let (field, wire_type) = (key >> 3, key & 7);
        let length = match wire_type {
            0 => {
                varint(bytes, &mut at)?;
                0
            }
            1 => 8,
            2 => varint(bytes, &mut at)?,
            5 => 4,
            _ => {
                return Err(format!(
                    "not a Perfetto trace: field {field} at byte {offset} has wire type {wire_type}"
                ));
            }
        };
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| at.checked_add(length))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| {
                format!(
                    "not a Perfetto trace: field {field} at byte {offset} has length {length}, \
                     past the end ({} bytes)",
                    bytes.len()
                )
            })?;
        if field == 1 && wire_type == 2 {
            let packet = TracePacket::parse_from_bytes(&bytes[at..end])
                .map_err(|e| format!("packet at byte {offset}: not a trace packet: {e}"))?;
            packets.push((offset, packet));
        }
        at = end;
    }
    Ok(packets)
}
