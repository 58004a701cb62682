//! The experiment's tests: the phase sweep, the scenario, the grid offsets
//! and the document's markers.

use super::document::{offsets, replace_generated};
use super::measure::{Class, Event, phase};
use super::*;

fn event(time_ns: u64, cpu: usize, previous: Class, next: Class) -> Event {
    Event {
        time_ns,
        cpu,
        previous,
        next,
    }
}

#[test]
fn phase_sweeps_all_idle_and_overlap() {
    use Class::{Group, Idle};
    // cpu0: g0 0-30, idle 30-100; cpu1: idle 0-10, g1 10-50, idle after.
    // All idle 50-100; both groups on CPUs 10-30. Window [20, 80).
    let events = vec![
        event(0, 0, Idle, Group(0)),
        event(30, 0, Group(0), Idle),
        event(10, 1, Idle, Group(1)),
        event(50, 1, Group(1), Idle),
    ];
    let p = phase(2, events, 100, (20, 80));
    assert_eq!(p.all_idle_ns, 50);
    assert_eq!(p.steady_all_idle_ns, 30);
    assert_eq!(p.steady_overlap_ns, 10);
    assert_eq!(p.steady_active_ns, 10);
    // In [20, 80): g0 20-30 and g1 20-50.
    assert_eq!(p.steady_work_ns, 10 + 30);
}

#[test]
fn run_phases_bridge_short_gaps_only() {
    use Class::{Group, Idle};
    // One CPU alternating g0 and g1 every 3 ms for 30 ms, then idle 60 ms,
    // then g0 alone 10 ms: both groups are in their run phase 0-30 (a
    // 3 ms wait is bridged), and g0 is alone in its second.
    let mut events = Vec::new();
    let mut previous = Idle;
    for k in 0..10 {
        let next = Group(k % 2);
        events.push(event(k as u64 * 3 * MS, 0, previous, next));
        previous = next;
    }
    events.push(event(30 * MS, 0, previous, Idle));
    events.push(event(90 * MS, 0, Idle, Group(0)));
    events.push(event(100 * MS, 0, Group(0), Idle));
    let p = phase(1, events, 120 * MS, (0, 120 * MS));
    assert_eq!(p.steady_overlap_ns, 0, "one CPU never runs both");
    // g0 runs 0-27 bridged (its last stretch 24-27), g1 3-30: 3-27.
    assert_eq!(p.steady_active_ns, 24 * MS);
    assert_eq!(p.steady_all_idle_ns, 60 * MS + 20 * MS);
}

#[test]
fn the_scenario_is_valid_and_sized() {
    let point = Point {
        groups: 2,
        cpus: 4,
        mode: Mode::Random,
        seed: 1,
        duration_s: 2,
    };
    let scenario = fairway_rtapp::parse_and_validate(&point.scenario(), 4).unwrap();
    assert_eq!(point.quota_us(), 100_000);
    assert!((point.quota_sum() - 2.0).abs() < 1e-9);
    assert!(format!("{scenario:?}").contains("/g1"));
    assert_eq!(point.to_string(), "G=2 N=4 bw_timer=random bw_seed=1");
}

#[test]
fn offsets_name_each_start() {
    let text = offsets(&[1]);
    assert!(text.contains("aligned: 0.000 ms, 0.000 ms"), "{text}");
    assert!(text.contains("period10: 10.000 ms, 20.000 ms"), "{text}");
    assert!(text.contains("random, bw_seed=1: "), "{text}");
}

#[test]
fn the_document_keeps_what_lies_outside_the_markers() {
    let text = format!("head\n{BEGIN}\nold\n{END}\ntail\n");
    let new = replace_generated(&text, &format!("{BEGIN}\nnew\n{END}\n")).unwrap();
    assert_eq!(new, format!("head\n{BEGIN}\nnew\n{END}\ntail\n"));
    assert!(replace_generated("no markers", "x").is_err());
}
