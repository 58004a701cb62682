//! Writing a [`Trace`] in Perfetto's format ([`Trace::to_perfetto`]): the
//! system info and process tree, the ftrace bundles of the events, and a
//! track per counter.

use protobuf::{EnumOrUnknown, Message, MessageField};

use crate::protos::perfetto_subset::{
    CounterDescriptor, CpuFrequencyFtraceEvent, CpuIdleFtraceEvent, FtraceEvent, FtraceEventBundle,
    ProcessTree, SchedMigrateTaskFtraceEvent, SchedProcessExitFtraceEvent, SchedSwitchFtraceEvent,
    SchedWakeupFtraceEvent, SchedWakeupNewFtraceEvent, SchedWakingFtraceEvent, SystemInfo,
    ThreadDescriptor, Trace as PerfettoTrace, TracePacket, TrackDescriptor, TrackEvent, Utsname,
    process_tree, trace_packet, track_event,
};
use crate::{CounterTrack, Event, Record, TaskIndex, Trace};

/// The sequence of the ftrace bundles and process tree.
const FTRACE_SEQUENCE: u32 = 1;
/// The sequence of the counter tracks.
const COUNTER_SEQUENCE: u32 = 2;
/// Events per ftrace bundle packet.
const EVENTS_PER_BUNDLE: usize = 1024;
/// `TASK_COMM_LEN - 1`.
const COMM_LEN: usize = 15;

impl Trace {
    fn pid(task: Option<TaskIndex>) -> i32 {
        task.map_or(0, |t| t as i32 + 1)
    }

    fn comm(&self, task: Option<TaskIndex>, cpu: usize) -> String {
        match task {
            Some(t) => self.tasks[t].name.chars().take(COMM_LEN).collect(),
            None => format!("swapper/{cpu}"),
        }
    }

    fn prio(&self, task: Option<TaskIndex>) -> i32 {
        task.map_or(120, |t| self.tasks[t].prio)
    }

    fn ftrace_event(&self, record: &Record) -> FtraceEvent {
        let mut out = FtraceEvent::new();
        out.timestamp = Some(record.time_ns);
        let cpu = record.cpu;
        match record.event {
            Event::Switch {
                prev,
                prev_state,
                next,
            } => {
                out.pid = Some(Self::pid(prev) as u32);
                let mut e = SchedSwitchFtraceEvent::new();
                e.prev_comm = Some(self.comm(prev, cpu));
                e.prev_pid = Some(Self::pid(prev));
                e.prev_prio = Some(self.prio(prev));
                e.prev_state = Some(prev_state.value());
                e.next_comm = Some(self.comm(next, cpu));
                e.next_pid = Some(Self::pid(next));
                e.next_prio = Some(self.prio(next));
                out.set_sched_switch(e);
            }
            Event::Waking {
                waker,
                task,
                target_cpu,
            } => {
                out.pid = Some(Self::pid(waker) as u32);
                let mut e = SchedWakingFtraceEvent::new();
                e.comm = Some(self.comm(Some(task), cpu));
                e.pid = Some(Self::pid(Some(task)));
                e.prio = Some(self.prio(Some(task)));
                e.success = Some(1);
                e.target_cpu = Some(target_cpu as i32);
                out.set_sched_waking(e);
            }
            Event::Wakeup { task, target_cpu } => {
                let mut e = SchedWakeupFtraceEvent::new();
                e.comm = Some(self.comm(Some(task), cpu));
                e.pid = Some(Self::pid(Some(task)));
                e.prio = Some(self.prio(Some(task)));
                e.success = Some(1);
                e.target_cpu = Some(target_cpu as i32);
                out.set_sched_wakeup(e);
            }
            Event::WakeupNew { task, target_cpu } => {
                let mut e = SchedWakeupNewFtraceEvent::new();
                e.comm = Some(self.comm(Some(task), cpu));
                e.pid = Some(Self::pid(Some(task)));
                e.prio = Some(self.prio(Some(task)));
                e.success = Some(1);
                e.target_cpu = Some(target_cpu as i32);
                out.set_sched_wakeup_new(e);
            }
            Event::Migrate {
                task,
                orig_cpu,
                dest_cpu,
            } => {
                let mut e = SchedMigrateTaskFtraceEvent::new();
                e.comm = Some(self.comm(Some(task), cpu));
                e.pid = Some(Self::pid(Some(task)));
                e.prio = Some(self.prio(Some(task)));
                e.orig_cpu = Some(orig_cpu as i32);
                e.dest_cpu = Some(dest_cpu as i32);
                out.set_sched_migrate_task(e);
            }
            Event::CpuFrequency { khz } => {
                let mut e = CpuFrequencyFtraceEvent::new();
                e.state = Some(khz as u32);
                e.cpu_id = Some(cpu as u32);
                out.set_cpu_frequency(e);
            }
            Event::CpuIdle { state } => {
                let mut e = CpuIdleFtraceEvent::new();
                e.state = Some(state.unwrap_or(u32::MAX));
                e.cpu_id = Some(cpu as u32);
                out.set_cpu_idle(e);
            }
            Event::Exit { task } => {
                out.pid = Some(Self::pid(Some(task)) as u32);
                let mut e = SchedProcessExitFtraceEvent::new();
                e.comm = Some(self.comm(Some(task), cpu));
                e.pid = Some(Self::pid(Some(task)));
                e.tgid = Some(Self::pid(Some(task)));
                e.prio = Some(self.prio(Some(task)));
                out.set_sched_process_exit(e);
            }
        }
        out
    }

    fn packet(sequence: u32) -> TracePacket {
        let mut packet = TracePacket::new();
        packet.set_trusted_packet_sequence_id(sequence);
        packet
    }

    /// The uuid of a task's thread track (counters hang below it).
    fn thread_uuid(task: TaskIndex) -> u64 {
        1 << 32 | task as u64
    }

    /// The uuid of a task group's track (its counters hang below it, and it
    /// carries the group's path as its name).
    pub(crate) fn group_uuid(group: usize) -> u64 {
        6 << 32 | group as u64
    }

    fn counter_uuid(track: CounterTrack) -> u64 {
        match track {
            CounterTrack::GroupCpu(group, cpu, signal) => {
                7 << 32 | (group as u64) << 16 | (cpu as u64) << 4 | signal as u64
            }
            CounterTrack::GroupRuntime(group) => 8 << 32 | group as u64,
            CounterTrack::Task(task, signal) => 2 << 32 | (task as u64) << 4 | signal as u64,
            CounterTrack::Cpu(cpu, signal) => 3 << 32 | (cpu as u64) << 4 | signal as u64,
            CounterTrack::DomainEnergy(domain) => 4 << 32 | domain as u64,
            CounterTrack::Overutilized => 5 << 32,
        }
    }

    /// The trace in Perfetto's format: a system-info packet, the process
    /// tree (one process per task), the ftrace events in per-CPU bundles,
    /// then the counter tracks and their values.
    pub fn to_perfetto(&self) -> Vec<u8> {
        let mut trace = PerfettoTrace::new();
        let mut info = Self::packet(FTRACE_SEQUENCE);
        let mut system = SystemInfo::new();
        let mut utsname = Utsname::new();
        // Perfetto reads `prev_state` by the kernel's version; the events'
        // encoding is that of v4.14 and later.
        utsname.sysname = Some("Linux".into());
        utsname.release = Some("6.12.0-fairway".into());
        utsname.machine = Some("aarch64".into());
        system.utsname = MessageField::some(utsname);
        info.set_system_info(system);
        trace.packet.push(info);

        let mut tree = ProcessTree::new();
        for (index, task) in self.tasks.iter().enumerate() {
            let pid = Self::pid(Some(index));
            let mut process = process_tree::Process::new();
            process.pid = Some(pid);
            process.ppid = Some(0);
            process.cmdline = vec![task.name.clone()];
            tree.processes.push(process);
            let mut thread = process_tree::Thread::new();
            thread.tid = Some(pid);
            thread.tgid = Some(pid);
            thread.name = Some(task.name.clone());
            tree.threads.push(thread);
        }
        let mut packet = Self::packet(FTRACE_SEQUENCE);
        packet.timestamp = Some(0);
        packet.set_process_tree(tree);
        trace.packet.push(packet);

        for cpu in 0..self.nr_cpus {
            let events: Vec<&Record> = self.records.iter().filter(|r| r.cpu == cpu).collect();
            for chunk in events.chunks(EVENTS_PER_BUNDLE) {
                let mut bundle = FtraceEventBundle::new();
                bundle.cpu = Some(cpu as u32);
                bundle.event = chunk.iter().map(|r| self.ftrace_event(r)).collect();
                let mut packet = Self::packet(FTRACE_SEQUENCE);
                packet.set_ftrace_events(bundle);
                trace.packet.push(packet);
            }
        }

        let mut tracks: Vec<CounterTrack> = self.counters.iter().map(|c| c.track).collect();
        tracks.sort();
        tracks.dedup();
        let mut first = true;
        let mut threads_described = vec![false; self.tasks.len()];
        for (group, path) in self.groups.iter().enumerate() {
            let mut descriptor = TrackDescriptor::new();
            descriptor.uuid = Some(Self::group_uuid(group));
            descriptor.set_name(path.clone());
            trace
                .packet
                .push(self.descriptor_packet(descriptor, &mut first));
        }
        for &track in &tracks {
            if let CounterTrack::Task(task, _) = track
                && !threads_described[task]
            {
                threads_described[task] = true;
                let mut descriptor = TrackDescriptor::new();
                descriptor.uuid = Some(Self::thread_uuid(task));
                let mut thread = ThreadDescriptor::new();
                thread.pid = Some(Self::pid(Some(task)));
                thread.tid = Some(Self::pid(Some(task)));
                thread.thread_name = Some(self.tasks[task].name.clone());
                descriptor.thread = MessageField::some(thread);
                trace
                    .packet
                    .push(self.descriptor_packet(descriptor, &mut first));
            }
            let mut descriptor = TrackDescriptor::new();
            descriptor.uuid = Some(Self::counter_uuid(track));
            descriptor.set_name(track.name());
            match track {
                CounterTrack::Task(task, _) => {
                    descriptor.parent_uuid = Some(Self::thread_uuid(task));
                }
                CounterTrack::GroupCpu(group, ..) | CounterTrack::GroupRuntime(group) => {
                    descriptor.parent_uuid = Some(Self::group_uuid(group));
                }
                _ => {}
            }
            descriptor.counter = MessageField::some(CounterDescriptor::new());
            trace
                .packet
                .push(self.descriptor_packet(descriptor, &mut first));
        }
        for sample in &self.counters {
            let mut event = TrackEvent::new();
            event.type_ = Some(EnumOrUnknown::new(track_event::Type::TYPE_COUNTER));
            event.track_uuid = Some(Self::counter_uuid(sample.track));
            event.set_counter_value(sample.value);
            let mut packet = Self::packet(COUNTER_SEQUENCE);
            packet.timestamp = Some(sample.time_ns);
            packet.set_track_event(event);
            trace.packet.push(packet);
        }
        trace
            .write_to_bytes()
            .expect("a trace of set fields always encodes")
    }

    fn descriptor_packet(&self, descriptor: TrackDescriptor, first: &mut bool) -> TracePacket {
        let mut packet = Self::packet(COUNTER_SEQUENCE);
        if *first {
            packet.sequence_flags =
                Some(trace_packet::SequenceFlags::SEQ_INCREMENTAL_STATE_CLEARED as u32);
            *first = false;
        }
        packet.set_track_descriptor(descriptor);
        packet
    }
}
