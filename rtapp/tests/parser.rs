//! The rt-app parser and the scenario validation: example scenarios accepted, and every
//! bad input refused with the JSON path and the value (expected texts written by hand from
//! the limits in facts §1.1 (nice), §3.1 (uclamp 0..=1024), §9 (MIN/MAX_SHARES), and the
//! rt-app grammar of §8.3).

use fairway_contract::scenario::{Event, TimerMode};
use fairway_rtapp::{parse, parse_and_validate};

fn error(text: &str, cpus: usize) -> String {
    match parse_and_validate(text, cpus) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

fn load(name: &str) -> String {
    let path = format!("{}/../sim/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn periodic_example_is_parsed_as_written() {
    let scenario = parse_and_validate(&load("periodic-25.json"), 1).unwrap();
    assert_eq!(scenario.tasks.len(), 1);
    let task = &scenario.tasks[0];
    assert_eq!(task.name, "periodic");
    assert_eq!(task.loop_count, 1);
    assert_eq!(task.phases.len(), 1);
    let phase = &task.phases[0];
    assert_eq!((phase.name.as_str(), phase.loop_count), ("p000", 62));
    assert_eq!(phase.events[0].event, Event::Run { us: 4000 });
    assert_eq!(
        phase.events[1].event,
        Event::Timer {
            reference: "unique".into(),
            period_us: Some(16000),
            mode: TimerMode::Relative
        }
    );
}

#[test]
fn hog_and_group_examples_are_accepted() {
    let hogs = parse_and_validate(&load("mixed-nice-hogs.json"), 1).unwrap();
    let nice: Vec<_> = hogs.tasks.iter().map(|t| t.attributes.priority).collect();
    assert_eq!(nice, [Some(-5), Some(0), Some(5)]);
    let groups = parse_and_validate(&load("taskgroups.json"), 4).unwrap();
    assert_eq!(groups.global.capacities, [446, 1024, 1024, 446]);
    assert_eq!(groups.group_shares("/foreground"), 2048);
    assert_eq!(groups.group_shares("/background"), 512);
    assert_eq!(groups.group_shares("/elsewhere"), 1024);
    assert_eq!(groups.instance_count(), 4);
    assert_eq!(
        groups.tasks[1].attributes.taskgroup.as_deref(),
        Some("/background")
    );
}

#[test]
fn events_keep_document_order() {
    let text = r#"{"tasks": {"t": {"loop": 1, "sleep0": 10, "run1": 20, "runtime": 30, "timer": {"ref": "a", "period": 40, "mode": "absolute"}, "yield": ""}}}"#;
    let scenario = parse_and_validate(text, 1).unwrap();
    let events: Vec<_> = scenario.tasks[0].phases[0]
        .events
        .iter()
        .map(|e| e.event.clone())
        .collect();
    assert_eq!(
        events,
        [
            Event::Sleep { us: 10 },
            Event::Run { us: 20 },
            Event::Runtime { us: 30 },
            Event::Timer {
                reference: "a".into(),
                period_us: Some(40),
                mode: TimerMode::Absolute
            },
            Event::Yield,
        ]
    );
}

#[test]
fn negative_run_names_the_path() {
    let text = r#"{"tasks": {"thread0": {"phases": {"p1": {"run": -5}}}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.thread0.phases.p1.run: -5 is negative"
    );
}

#[test]
fn negative_sleep_in_a_task_without_phases() {
    let text = r#"{"tasks": {"t": {"run": 5, "sleep": -1}}}"#;
    assert_eq!(error(text, 1), "tasks.t.sleep: -1 is negative");
}

#[test]
fn unknown_event() {
    let text = r#"{"tasks": {"t": {"phases": {"p": {"jump": 5}}}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.phases.p.jump: unknown event or property"
    );
}

#[test]
fn unsupported_event() {
    // rt-app's finer memory workloads are not modelled.
    let text = r#"{"tasks": {"t": {"loop": 1, "memrun": {"size": 64}, "run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.memrun: event not supported by Fairway yet"
    );
}

#[test]
fn missing_and_negative_timer_period() {
    let text = r#"{"tasks": {"t": {"phases": {"p": {"run": 5, "timer": {"ref": "unique"}}}}}}"#;
    assert_eq!(error(text, 1), "tasks.t.phases.p.timer.period: missing");
    let text = r#"{"tasks": {"t": {"run": 5, "timer0": {"ref": "unique", "period": -16000}}}}"#;
    assert_eq!(error(text, 1), "tasks.t.timer0.period: -16000 is negative");
}

#[test]
fn nice_outside_minus_20_to_19() {
    // §1.1: the weight table covers nice -20..=19.
    let text = r#"{"tasks": {"t": {"priority": 20, "run": 5}}}"#;
    assert_eq!(error(text, 1), "tasks.t.priority: 20 is outside -20..=19");
    let text = r#"{"tasks": {"t": {"phases": {"p": {"priority": -21, "run": 5}}}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.phases.p.priority: -21 is outside -20..=19"
    );
}

#[test]
fn rt_priority_outside_1_to_99() {
    let text = r#"{"tasks": {"t": {"policy": "SCHED_FIFO", "priority": 0, "run": 5}}}"#;
    assert_eq!(error(text, 1), "tasks.t.priority: 0 is outside 1..=99");
    let text = r#"{"tasks": {"t": {"policy": "SCHED_RR", "priority": 100, "run": 5}}}"#;
    assert_eq!(error(text, 1), "tasks.t.priority: 100 is outside 1..=99");
}

#[test]
fn clamps_outside_range_or_inverted() {
    // §3.1 / §9: util clamps are in 0..=SCHED_CAPACITY_SCALE.
    let text = r#"{"tasks": {"t": {"util_min": 2000, "run": 5}}}"#;
    assert_eq!(error(text, 1), "tasks.t.util_min: 2000 is outside 0..=1024");
    let text = r#"{"tasks": {"t": {"util_max": -1, "run": 5}}}"#;
    assert_eq!(error(text, 1), "tasks.t.util_max: -1 is outside 0..=1024");
    let text = r#"{"tasks": {"t": {"util_min": 600, "util_max": 300, "run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.util_min: util_min 600 is above util_max 300"
    );
    let text =
        r#"{"tasks": {"t": {"util_min": 600, "phases": {"p": {"util_max": 300, "run": 5}}}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.phases.p.util_max: util_min 600 is above util_max 300"
    );
}

#[test]
fn shares_outside_linux_range() {
    // §9: MIN_SHARES = 2, MAX_SHARES = 1 << 18.
    let text = r#"{"global": {"taskgroups": {"/a": {"shares": 1}}}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "global.taskgroups./a.shares: 1 is outside 2..=262144"
    );
    let text =
        r#"{"global": {"taskgroups": {"/a": {"shares": 262145}}}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "global.taskgroups./a.shares: 262145 is outside 2..=262144"
    );
}

/// The root group has no limit to set (Linux's root cgroup has neither
/// `cpu.weight` nor `cpu.max`): each one is refused, naming the path.
#[test]
fn the_root_group_takes_no_limit() {
    for (key, value) in [
        ("shares", "1024"),
        ("cpu.max", "\"50000 100000\""),
        ("cpu.max.burst", "1000"),
        ("cpu.max.changes", "[]"),
    ] {
        let text = format!(
            r#"{{"global": {{"taskgroups": {{"/": {{"{key}": {value}}}}}}}, "tasks": {{"t": {{"run": 5}}}}}}"#
        );
        let message = error(&text, 1);
        assert!(
            message.starts_with(&format!(
                "global.taskgroups./.{key}: the root group \"/\" takes no limit"
            )),
            "{message}"
        );
    }
    // Naming "/" without a limit stays accepted (tasks placed there are in the root).
    let text =
        r#"{"global": {"duration": 1, "taskgroups": {"/": {}}}, "tasks": {"t": {"run": 5}}}"#;
    assert!(fairway_rtapp::parse_and_validate(text, 1).is_ok());
}

/// A per-CPU list of the wrong length says that it is the list's length that
/// is wrong, and the machine's count.
#[test]
fn a_per_cpu_list_of_the_wrong_length_names_both_counts() {
    let text = r#"{"global": {"capacities": [1024, 512]}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(
        error(text, 4),
        "global.capacities: the list has 2 values for a machine of 4 CPUs: one per CPU"
    );
    let text = r#"{"global": {"frequency_scales": [1024, 512, 512]}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(
        error(text, 2),
        "global.frequency_scales: the list has 3 values for a machine of 2 CPUs: one per CPU"
    );
}

/// cgroup v2's `cpu.max` ("QUOTA PERIOD" in µs, `max` for no quota, the period
/// optional) and `cpu.max.burst`.
#[test]
fn cpu_max_and_burst_are_read_as_cgroup_v2_writes_them() {
    let group = |fields: &str| {
        let text = format!(
            r#"{{"global": {{"taskgroups": {{"/a": {{{fields}}}}}}}, "tasks": {{"t": {{"loop": 1, "run": 5}}}}}}"#
        );
        let scenario = parse_and_validate(&text, 1).unwrap();
        let g = &scenario.global.task_groups[0];
        (g.quota_us, g.period_us, g.burst_us)
    };
    assert_eq!(
        group(r#""cpu.max": "25000 100000""#),
        (Some(25_000), 100_000, 0)
    );
    assert_eq!(group(r#""cpu.max": "max 50000""#), (None, 50_000, 0));
    assert_eq!(group(r#""cpu.max": "max""#), (None, 100_000, 0));
    assert_eq!(group(r#""cpu.max": "30000""#), (Some(30_000), 100_000, 0));
    assert_eq!(
        group(r#""cpu.max": "20000 100000", "cpu.max.burst": 20000"#),
        (Some(20_000), 100_000, 20_000)
    );
    assert_eq!(group(r#""shares": 512"#), (None, 100_000, 0));
}

/// Linux's `tg_set_cfs_bandwidth` refusals (docs/linux-sched-reference.md §4.1),
/// each naming the JSON field and the value.
#[test]
fn bandwidth_outside_linux_rules_is_refused() {
    let refused = |fields: &str| {
        let text = format!(
            r#"{{"global": {{"taskgroups": {{"/a": {{{fields}}}}}}}, "tasks": {{"t": {{"loop": 1, "run": 5}}}}}}"#
        );
        error(&text, 1)
    };
    assert_eq!(
        refused(r#""cpu.max": "500 100000""#),
        "global.taskgroups./a.cpu.max: quota 500 us: must be at least 1 ms, or max"
    );
    assert_eq!(
        refused(r#""cpu.max": "25000 999""#),
        "global.taskgroups./a.cpu.max: period 999 us: must lie in 1 ms..=1 s"
    );
    assert_eq!(
        refused(r#""cpu.max": "25000 1000001""#),
        "global.taskgroups./a.cpu.max: period 1000001 us: must lie in 1 ms..=1 s"
    );
    assert_eq!(
        refused(r#""cpu.max": "20000 100000", "cpu.max.burst": 20001"#),
        "global.taskgroups./a.cpu.max.burst: burst 20001 us: must not exceed the quota"
    );
    assert_eq!(
        refused(r#""cpu.max": "-5 100000""#),
        "global.taskgroups./a.cpu.max: -5 is negative"
    );
    assert_eq!(
        refused(r#""cpu.max": "a quarter""#),
        "global.taskgroups./a.cpu.max: expected \"QUOTA PERIOD\" in microseconds, QUOTA a \
         number or max, found \"a quarter\""
    );
    assert_eq!(
        refused(r#""cpu.max": 25000"#),
        "global.taskgroups./a.cpu.max: expected a string, found 25000"
    );
}

/// `cpu.max.changes`: limits written during the run, each keeping what it leaves out
/// from the setting before it, checked as the first one is, in time order and inside
/// the run.
#[test]
fn limit_changes_are_resolved_in_order_and_checked() {
    let text = |changes: &str| {
        format!(
            r#"{{"global": {{"duration": 2, "taskgroups": {{"/a": {{"cpu.max": "20000 100000",
                "cpu.max.changes": [{changes}]}}}}}}, "tasks": {{"t": {{"run": 5}}}}}}"#
        )
    };
    let scenario = parse_and_validate(
        &text(
            r#"{"at": 500000, "cpu.max": "40000 50000"}, {"at": 700000, "cpu.max.burst": 10000},
               {"at": 900000, "cpu.max": "max"}"#,
        ),
        1,
    )
    .unwrap();
    let got: Vec<(i64, Option<i64>, i64, i64)> = scenario.global.task_groups[0]
        .changes
        .iter()
        .map(|c| (c.at_us, c.quota_us, c.period_us, c.burst_us))
        .collect();
    assert_eq!(
        got,
        [
            (500_000, Some(40_000), 50_000, 0),
            (700_000, Some(40_000), 50_000, 10_000),
            (900_000, None, 50_000, 10_000),
        ]
    );
    assert!(scenario.global.task_groups[0].ever_limited());
    for (changes, message) in [
        (
            r#"{"at": 500000, "cpu.max": "500 100000"}"#,
            "global.taskgroups./a.cpu.max.changes.0.cpu.max: quota 500 us: must be at least \
             1 ms, or max",
        ),
        (
            r#"{"at": 500000, "cpu.max.burst": 30000}"#,
            "global.taskgroups./a.cpu.max.changes.0.cpu.max.burst: burst 30000 us: must not \
             exceed the quota",
        ),
        (
            r#"{"at": 500000, "cpu.max": "max"}, {"at": 400000, "cpu.max": "max"}"#,
            "global.taskgroups./a.cpu.max.changes.1.at: 400000 is outside 500001..=1999999",
        ),
        (
            r#"{"at": 2000000, "cpu.max": "max"}"#,
            "global.taskgroups./a.cpu.max.changes.0.at: 2000000 is outside 0..=1999999",
        ),
        (
            r#"{"cpu.max": "max"}"#,
            "global.taskgroups./a.cpu.max.changes.0.at: missing",
        ),
        (
            r#"{"at": 5, "shares": 2}"#,
            "global.taskgroups./a.cpu.max.changes.0.shares: unknown event or property",
        ),
    ] {
        assert_eq!(error(&text(changes), 1), message, "{changes}");
    }
}

#[test]
fn bad_group_path() {
    let text = r#"{"tasks": {"t": {"taskgroup": "fg", "run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.taskgroup: task-group path \"fg\" must start with '/' and have no empty component"
    );
    let text = r#"{"tasks": {"t": {"taskgroup": "", "loop": 1, "run": 5}}}"#;
    assert!(
        parse_and_validate(text, 1).is_ok(),
        "\"\" means no group (rt-app)"
    );
}

#[test]
fn empty_or_out_of_range_affinity() {
    let text = r#"{"tasks": {"t": {"cpus": [], "run": 5}}}"#;
    assert_eq!(error(text, 2), "tasks.t.cpus: affinity names no CPU");
    let text = r#"{"tasks": {"t": {"cpus": [0, 5], "run": 5}}}"#;
    assert_eq!(error(text, 2), "tasks.t.cpus.1: 5 is outside 0..=1");
}

#[test]
fn too_many_tasks() {
    // The one task limit, fairway_contract::scenario::MAX_TASKS = 10,000.
    let text =
        r#"{"tasks": {"a": {"instance": 6000, "run": 5}, "b": {"instance": 6000, "run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks: 12000 task instances, at most 10000 are supported"
    );
}

#[test]
fn too_many_groups() {
    // The one group limit, fairway_contract::scenario::MAX_TASK_GROUPS = 63 (the
    // kernel's 64 group slots per run queue, less the root).
    let nested = |depth: usize| {
        let path: String = (1..=depth).map(|level| format!("/g{level}")).collect();
        format!(r#"{{"tasks": {{"t": {{"taskgroup": "{path}", "loop": 1, "run": 5}}}}}}"#)
    };
    // 63 nested groups: /g1, /g1/g2, ... are 63 groups, the limit.
    parse_and_validate(&nested(63), 1).unwrap();
    let deepest: String = (1..=64).map(|level| format!("/g{level}")).collect();
    assert_eq!(
        error(&nested(64), 1),
        format!(
            "tasks.t: 64 task groups (the parents of nested paths included), at most 63 are \
             supported (the kernel's run queues hold 63 and the root); {deepest} is the first \
             beyond the limit"
        )
    );
    // 64 declared groups, side by side: created in path order, /g63 is the 64th.
    let groups: Vec<String> = (0..64).map(|i| format!(r#""/g{i:02}": {{}}"#)).collect();
    let text = format!(
        r#"{{"global": {{"taskgroups": {{{}}}}}, "tasks": {{"t": {{"loop": 1, "run": 5}}}}}}"#,
        groups.join(", ")
    );
    assert_eq!(
        error(&text, 1),
        "global.taskgroups: 64 task groups (the parents of nested paths included), at most 63 \
         are supported (the kernel's run queues hold 63 and the root); /g63 is the first beyond \
         the limit"
    );
}

#[test]
fn unknown_policy_and_wrong_types() {
    let text = r#"{"tasks": {"t": {"policy": "SCHED_EDF", "run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.policy: unknown policy \"SCHED_EDF\""
    );
    let text = r#"{"tasks": {"t": {"run": "abc"}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.run: expected an integer, found \"abc\""
    );
    let text = r#"{"tasks": {"t": {"run": 1.5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.run: expected an integer, found 1.5"
    );
    let text = r#"{"tasks": {"t": {"cpus": 3, "run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "tasks.t.cpus: expected an array of integers, found 3"
    );
}

#[test]
fn malformed_json_and_empty_scenarios() {
    assert!(error("{\"tasks\": ", 1).starts_with("<root>: not valid JSON: "));
    assert_eq!(
        error(r#"{"tasks": {}}"#, 1),
        "tasks: the scenario has no task"
    );
    assert_eq!(
        error(r#"{"tasks": {"t": {"phases": {"p": {"loop": 2}}}}}"#, 1),
        "tasks.t.phases.p: no event"
    );
    assert_eq!(
        error(r#"{"tasks": {"t": {"loop": 1}}}"#, 1),
        "tasks.t: no event"
    );
    assert_eq!(
        error(r#"{"nonsense": 1, "tasks": {}}"#, 1),
        "nonsense: unknown event or property"
    );
}

#[test]
fn global_fields_are_checked() {
    let text = r#"{"global": {"duration": -2}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "global.duration: -2 is outside -1..=1000000"
    );
    let text = r#"{"global": {"capacities": [1024, 0]}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(error(text, 2), "global.capacities.1: 0 is outside 1..=1024");
    let text = r#"{"global": {"calibration": "GPU0"}, "tasks": {"t": {"run": 5}}}"#;
    assert_eq!(
        error(text, 1),
        "global.calibration: expected \"CPUn\" or an integer, found \"GPU0\""
    );
}

#[test]
fn events_with_phases_cannot_also_sit_in_the_task() {
    let text = r#"{"tasks": {"t": {"run": 5, "phases": {"p": {"run": 5}}}}}"#;
    assert_eq!(error(text, 1), "tasks.t.run: unknown event or property");
    // Parsing alone (no validation) keeps out-of-range values for the validator.
    assert!(parse(r#"{"tasks": {"t": {"priority": 99, "run": 5}}}"#).is_ok());
}

/// A control character in a name (NUL, an escape sequence) is shown escaped
/// in the message, never written raw to the terminal.
#[test]
fn control_characters_in_a_name_are_escaped_in_the_message() {
    let text = r#"{"global": {"duration": 1}, "tasks": {"a\u0000b\u001b[31m": {"run": 5}}}"#;
    let message = error(text, 1);
    assert!(
        message.starts_with(r"tasks.a\u{0}b\u{1b}[31m: "),
        "{message}"
    );
    assert!(!message.chars().any(|c| c.is_control()), "{message:?}");
}
