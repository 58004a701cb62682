//! The trace's tests: events and group tracks written and read back,
//! damaged numbers refused.

use super::*;
use crate::protos::perfetto_subset::{
    FtraceEvent, FtraceEventBundle, SchedSwitchFtraceEvent, Trace as PerfettoTrace, TracePacket,
    TrackDescriptor,
};
use protobuf::Message;

#[test]
fn a_switch_decodes_back_with_linux_fields() {
    let mut trace = Trace {
        nr_cpus: 1,
        tasks: vec![TaskInfo {
            name: "a-name-longer-than-fifteen".into(),
            prio: 120,
        }],
        ..Trace::default()
    };
    trace.record(
        5,
        0,
        Event::Switch {
            prev: None,
            prev_state: PrevState::Runnable,
            next: Some(0),
        },
    );
    trace.counter(5, CounterTrack::Task(0, TaskSignal::UtilAvg), 17);
    let bytes = trace.to_perfetto();
    let decoded = PerfettoTrace::parse_from_bytes(&bytes).unwrap();
    let switch = decoded
        .packet
        .iter()
        .filter(|p| p.has_ftrace_events())
        .flat_map(|p| p.ftrace_events().event.iter())
        .find(|e| e.has_sched_switch())
        .unwrap();
    let e = switch.sched_switch();
    assert_eq!(switch.timestamp, Some(5));
    assert_eq!(e.prev_comm(), "swapper/0");
    assert_eq!(e.prev_pid(), 0);
    assert_eq!(e.next_comm(), "a-name-longer-t");
    assert_eq!(e.next_pid(), 1);
    let counter = decoded.packet.iter().find(|p| p.has_track_event()).unwrap();
    assert_eq!(counter.track_event().counter_value(), 17);
    let back = Trace::from_perfetto(&bytes).unwrap();
    assert_eq!(back.records, trace.records);
    assert_eq!(back.counters, trace.counters);
    assert_eq!(back.tasks[0].name, "a-name-longer-than-fifteen");
}

#[test]
fn group_tracks_hang_below_the_group_named_by_its_path_and_decode_back() {
    let mut trace = Trace {
        nr_cpus: 2,
        groups: vec!["/a".into(), "/b/c".into()],
        ..Trace::default()
    };
    let throttled = CounterTrack::GroupCpu(1, 1, GroupCpuSignal::Throttled);
    let remaining = CounterTrack::GroupCpu(1, 1, GroupCpuSignal::RuntimeRemaining);
    trace.counter(3, throttled, 1);
    trace.counter(3, remaining, -250_000);
    trace.counter(4, CounterTrack::GroupRuntime(1), 5_000_000);
    let bytes = trace.to_perfetto();
    let decoded = PerfettoTrace::parse_from_bytes(&bytes).unwrap();
    let descriptors: Vec<&TrackDescriptor> = decoded
        .packet
        .iter()
        .filter(|p| p.has_track_descriptor())
        .map(|p| p.track_descriptor())
        .collect();
    let group = descriptors.iter().find(|d| d.name() == "/b/c").unwrap();
    let named = |name: &str| descriptors.iter().find(|d| d.name() == name).unwrap();
    for name in ["cpu1 throttled", "cpu1 runtime_remaining", "runtime"] {
        assert_eq!(named(name).parent_uuid(), group.uuid(), "{name}");
    }
    let back = Trace::from_perfetto(&bytes).unwrap();
    assert_eq!(back.groups, trace.groups);
    assert_eq!(back.counters, trace.counters);
}

/// A bundle's CPU, a thread's pid and an event's pid beyond the
/// limits, or naming no task of the process tree, are refused with the
/// field and the value; nothing is sized by them.
#[test]
fn numbers_beyond_the_limits_are_refused_naming_the_field() {
    let one_task = || Trace {
        nr_cpus: 1,
        tasks: vec![TaskInfo {
            name: "a".into(),
            prio: 120,
        }],
        ..Trace::default()
    };
    let switch_to = |next| Event::Switch {
        prev: None,
        prev_state: PrevState::Runnable,
        next: Some(next),
    };
    // The writer loops over its own `nr_cpus`: a bundle on CPU 64.
    let mut trace = one_task();
    trace.nr_cpus = MAX_CPUS + 1;
    trace.record(5, MAX_CPUS, switch_to(0));
    let error = Trace::from_perfetto(&trace.to_perfetto()).unwrap_err();
    assert!(error.starts_with("packet at byte "), "{error}");
    assert!(
        error.ends_with(": ftrace_events cpu=64 is not below MAX_CPUS (64)"),
        "{error}"
    );
    // Task 65536 is pid 65537.
    let mut trace = one_task();
    trace.tasks.resize(
        MAX_TASKS + 1,
        TaskInfo {
            name: String::new(),
            prio: 120,
        },
    );
    let error = Trace::from_perfetto(&trace.to_perfetto()).unwrap_err();
    assert!(
        error.ends_with(
            ": process tree thread tid=65537 is above MAX_TASKS (65536; pid i + 1 is task i)"
        ),
        "{error}"
    );
    // An event naming task 1 (pid 2) when the tree lists one task: the
    // writer would not write it, so the bundle is built by hand.
    let mut bytes = one_task().to_perfetto();
    let mut switch = SchedSwitchFtraceEvent::new();
    switch.next_pid = Some(2);
    let mut event = FtraceEvent::new();
    event.set_sched_switch(switch);
    let mut bundle = FtraceEventBundle::new();
    bundle.cpu = Some(0);
    bundle.event.push(event);
    let mut packet = TracePacket::new();
    packet.set_ftrace_events(bundle);
    let mut extra = PerfettoTrace::new();
    extra.packet.push(packet);
    // Two encoded traces one after the other are one with both's packets.
    bytes.extend(extra.write_to_bytes().unwrap());
    let error = Trace::from_perfetto(&bytes).unwrap_err();
    assert!(
        error.ends_with(
            ": sched_switch names pid 2, which the process tree does not list (1 tasks)"
        ),
        "{error}"
    );
}
