//! rt-app's syntax as rt-app reads it (`docs/rtapp.md`: json-c's lenient mode and
//! workgen's repeated keys) and issue 10's bad inputs, each refused with its JSON path.
//! Expected texts are written by hand from the grammar, not printed by the code.

use fairway_contract::scenario::{Calibration, Event, MAX_NAME_BYTES, MAX_TASKS};
use fairway_rtapp::{parse, parse_and_validate, parse_with_notes};

fn refused(text: &str, cpus: usize) -> String {
    match parse_and_validate(text, cpus) {
        Ok(scenario) => panic!("accepted: {text}\n{scenario:?}"),
        Err(e) => e.to_string(),
    }
}

fn events(text: &str) -> Vec<(String, Event)> {
    let scenario = parse_and_validate(text, 1).unwrap();
    scenario.tasks[0].phases[0]
        .events
        .iter()
        .map(|e| (e.key.clone(), e.event.clone()))
        .collect()
}

#[test]
fn comments_and_trailing_commas_as_json_c_accepts_them() {
    let text = r#"/* rt-app tutorial style */
    {
        // one task
        "tasks": {
            "thread0": {
                "loop": 1, /* a block comment between members */
                "run": 1000, // a line comment
                "sleep": 2000,
            },
        },
        "global": { "duration": -1, "calibration": 90, },
    }"#;
    let scenario = parse_and_validate(text, 1).unwrap();
    assert_eq!(scenario.global.calibration, Calibration::NsPerLoop(90));
    assert_eq!(
        events(text),
        [
            ("run".to_string(), Event::Run { us: 1000 }),
            ("sleep".to_string(), Event::Sleep { us: 2000 })
        ]
    );
}

#[test]
fn what_json_c_refuses_stays_refused() {
    for text in [
        r#"{'tasks': {}}"#,
        r#"{tasks: {}}"#,
        r#"{"tasks": {"t": {"run": 0x10}}}"#,
        r#"{"tasks": {"t": {"run": +5}}}"#,
        r#"{"tasks": {"t": {"run": 5 "sleep": 5}}}"#,
        r#"{"tasks": {"t": {"run": 5,,}}}"#,
        r#"{"tasks": /* unterminated }"#,
    ] {
        assert!(
            refused(text, 1).starts_with("<root>: not valid JSON: "),
            "{text}"
        );
    }
    // The position is where the comma belongs: line 3, just after the `5` (column 18).
    assert_eq!(
        refused(
            "{\n  \"tasks\": {\n    \"t\": {\"run\": 5 \"sleep\": 5}}}",
            1
        ),
        "<root>: not valid JSON: Expected comma at line 3 column 19"
    );
    assert_eq!(
        refused("", 1),
        "<root>: not valid JSON: the file holds no JSON value"
    );
}

#[test]
fn a_repeated_event_key_is_one_more_event_in_file_order() {
    // workgen's rule: "run", "sleep", "run" is three events.
    let text = r#"{"tasks": {"t": {"loop": 1, "run": 10, "sleep": 5, "run": 20}}}"#;
    assert_eq!(
        events(text),
        [
            ("run".to_string(), Event::Run { us: 10 }),
            ("sleep".to_string(), Event::Sleep { us: 5 }),
            ("run".to_string(), Event::Run { us: 20 })
        ]
    );
}

/// json-c's note for a repeated key at `path`, written from the grammar.
fn replaced(path: &str) -> String {
    format!(
        "{path}: given twice; the later value replaces the earlier one, in the earlier \
         one's place, as rt-app's JSON reader (json-c) does"
    )
}

#[test]
fn a_repeated_key_that_is_not_an_event_takes_the_later_value_in_the_earlier_place() {
    // A repeated task name: json-c keeps the first place and the last value.
    let text = r#"{"tasks": {"a": {"loop": 1, "run": 1}, "b": {"loop": 1, "run": 3},
                            "a": {"loop": 1, "run": 2}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    let tasks: Vec<(&str, &Event)> = parsed
        .scenario
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), &t.phases[0].events[0].event))
        .collect();
    assert_eq!(
        tasks,
        [("a", &Event::Run { us: 2 }), ("b", &Event::Run { us: 3 })]
    );
    assert_eq!(parsed.reinterpreted, [replaced("tasks.a")]);

    // rt-app's spreading-tasks.json repeats a phase: the second `heavy1` runs in the
    // first one's place, and `light2` still follows it.
    let text = r#"{"tasks": {"thread2": {"loop": 1, "phases": {
        "light1": {"run": 10, "sleep": 90},
        "heavy1": {"run": 70, "sleep": 30},
        "light2": {"run": 20, "sleep": 80},
        "heavy1": {"run": 90, "sleep": 10}}}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    let phases: Vec<(&str, &Event)> = parsed.scenario.tasks[0]
        .phases
        .iter()
        .map(|p| (p.name.as_str(), &p.events[0].event))
        .collect();
    assert_eq!(
        phases,
        [
            ("light1", &Event::Run { us: 10 }),
            ("heavy1", &Event::Run { us: 90 }),
            ("light2", &Event::Run { us: 20 })
        ]
    );
    assert_eq!(
        parsed.reinterpreted,
        [replaced("tasks.thread2.phases.heavy1")]
    );

    // Task keys and attributes: the later value is in force.
    let text = r#"{"tasks": {"a": {"instance": 1, "instance": 2, "priority": 1,
                                   "priority": 2, "loop": 1, "run": 1}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    let task = &parsed.scenario.tasks[0];
    assert_eq!((task.instances, task.attributes.priority), (2, Some(2)));
    assert_eq!(
        parsed.reinterpreted,
        [replaced("tasks.a.instance"), replaced("tasks.a.priority")]
    );

    // A repeated `global` object: the later one, whole.
    let text = r#"{"global": {"duration": 5}, "global": {"calibration": 90},
                   "tasks": {"a": {"loop": 1, "run": 1}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    assert_eq!(parsed.scenario.global.duration_s, -1);
    assert_eq!(
        parsed.scenario.global.calibration,
        Calibration::NsPerLoop(90)
    );
    assert_eq!(parsed.reinterpreted, [replaced("global")]);
}

#[test]
fn an_unknown_global_key_is_ignored_and_said() {
    // rt-app's Android use cases (browser, mp3) carry `frag`, which rt-app ignores.
    let text = r#"{"global": {"duration": 2, "frag": 1, "calibration": "CPU0"},
                   "tasks": {"a": {"loop": 1, "run": 1}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    assert_eq!(parsed.scenario.global.duration_s, 2);
    assert_eq!(
        parsed.reinterpreted,
        ["global.frag: not a global key rt-app reads; ignored, as rt-app ignores it"]
    );
}

#[test]
fn an_event_read_by_its_prefix_is_said_unless_the_rest_is_an_index() {
    let text = r#"{"tasks": {"t": {"loop": 1, "runn": 10, "sleepy": 5, "run0": 1,
                                   "sleep12": 2, "runtime": 3, "runtime_x": 4}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    let events: Vec<&Event> = parsed.scenario.tasks[0].phases[0]
        .events
        .iter()
        .map(|e| &e.event)
        .collect();
    assert_eq!(
        events,
        [
            &Event::Run { us: 10 },
            &Event::Sleep { us: 5 },
            &Event::Run { us: 1 },
            &Event::Sleep { us: 2 },
            &Event::Runtime { us: 3 },
            &Event::Runtime { us: 4 }
        ]
    );
    let said = |key: &str, event: &str| {
        format!(
            "tasks.t.{key}: read as the event `{event}` (rt-app matches events by the start \
             of their key)"
        )
    };
    assert_eq!(
        parsed.reinterpreted,
        [
            said("runn", "run"),
            said("sleepy", "sleep"),
            said("runtime_x", "runtime")
        ]
    );
    // A file read as written says nothing.
    let plain = parse_with_notes(r#"{"tasks": {"t": {"loop": 1, "run": 1, "sleep": 2}}}"#);
    assert!(plain.unwrap().reinterpreted.is_empty());
}

#[test]
fn a_byte_order_mark_is_skipped_with_a_note() {
    let text = "\u{feff}{\"tasks\": {\"t\": {\"loop\": 1, \"run\": 5}}}";
    let parsed = parse_with_notes(text).unwrap();
    assert_eq!(parsed.scenario.tasks[0].name, "t");
    assert!(
        parsed.notes[0].contains("byte-order mark"),
        "{:?}",
        parsed.notes
    );
}

#[test]
fn host_only_options_are_accepted_with_a_note() {
    let text = r#"{"global": {"logdir": "./", "log_basename": "rt-app", "ftrace": "main,loop",
        "gnuplot": true, "lock_pages": true, "pi_enabled": false, "io_device": "/dev/null",
        "mem_buffer_size": 1048576, "calibration": "CPU0", "default_policy": "SCHED_OTHER"},
        "tasks": {"t": {"loop": 1, "run": 5}}}"#;
    let parsed = parse_with_notes(text).unwrap();
    assert_eq!(parsed.scenario.global.calibration, Calibration::Cpu(0));
    for option in [
        "logdir",
        "log_basename",
        "ftrace",
        "gnuplot",
        "lock_pages",
        "io_device",
        "mem_buffer_size",
    ] {
        assert!(
            parsed
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("global.{option}: "))),
            "no note for {option}: {:?}",
            parsed.notes
        );
    }
}

/// Issue 10: `instance: i64::MAX` plus another task panicked with "attempt to add
/// with overflow".
#[test]
fn a_huge_instance_count_is_refused_not_overflowed() {
    let text = r#"{"tasks":{"a":{"instance":9223372036854775807,"run":1},"b":{"run":1}}}"#;
    assert_eq!(
        refused(text, 1),
        format!("tasks.a.instance: 9223372036854775807 is outside 0..={MAX_TASKS}")
    );
    let text = r#"{"tasks":{"a":{"instance":92233720368547758070,"run":1}}}"#;
    assert_eq!(
        refused(text, 1),
        "tasks.a.instance: 92233720368547758070 does not fit in a 64-bit integer"
    );
}

#[test]
fn task_names_are_printable_ascii_unique_and_short_enough() {
    assert_eq!(
        refused(r#"{"tasks": {"a b": {"loop": 1, "run": 1}}}"#, 1),
        "tasks.a b: a task name must be ASCII letters, digits and punctuation (no space, \
         control character, NUL or non-ASCII character)"
    );
    assert!(refused(r#"{"tasks": {"caf\u00e9": {"loop": 1, "run": 1}}}"#, 1).contains("ASCII"));
    assert!(refused(r#"{"tasks": {"a\u0000": {"loop": 1, "run": 1}}}"#, 1).contains("NUL"));
    assert!(refused(r#"{"tasks": {"": {"loop": 1, "run": 1}}}"#, 1).contains("ASCII"));
    // "a" with two instances makes a-0 and a-1; a task named a-1 collides.
    assert_eq!(
        refused(
            r#"{"tasks": {"a": {"instance": 2, "loop": 1, "run": 1}, "a-1": {"loop": 1, "run": 1}}}"#,
            1
        ),
        "tasks.a-1: two task instances would both be named \"a-1\""
    );
    let long = "n".repeat(MAX_NAME_BYTES - 1);
    let text = format!(r#"{{"tasks": {{"{long}": {{"instance": 2, "loop": 1, "run": 1}}}}}}"#);
    assert_eq!(
        refused(&text, 1),
        format!("tasks.{long}: instance name \"{long}-0\" is longer than {MAX_NAME_BYTES} bytes")
    );
}

/// Issue 10: a forever-looping task without a duration ran the kernel into the
/// runner's timeout; rt-app's rule is that only a positive duration stops tasks.
#[test]
fn a_run_that_would_never_end_is_refused() {
    for duration in ["0", "-1"] {
        let text =
            format!(r#"{{"global": {{"duration": {duration}}}, "tasks": {{"t": {{"run": 5}}}}}}"#);
        assert_eq!(
            refused(&text, 1),
            "tasks.t: loops forever, and nothing ends the run: give global.duration in \
             seconds (0 and -1 run until every task has finished, as in rt-app)"
        );
    }
    // Finite loops end by themselves with duration 0 or -1.
    let finite = r#"{"global": {"duration": 0}, "tasks": {"t": {"loop": 3, "run": 5}}}"#;
    assert!(parse_and_validate(finite, 1).is_ok());
    // run: 0 in a forever loop: no time passes, with or without a duration.
    let text = r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 0}}}"#;
    assert_eq!(
        refused(text, 1),
        "tasks.t: loops forever without an event that takes time (a positive run, runtime, \
         sleep, or a timer)"
    );
}

#[test]
fn pi_enabled_is_read_as_a_boolean() {
    for (text, on) in [
        (
            r#"{"global": {"pi_enabled": true}, "tasks": {"t": {"loop": 1, "run": 5}}}"#,
            true,
        ),
        (
            r#"{"global": {"pi_enabled": false}, "tasks": {"t": {"loop": 1, "run": 5}}}"#,
            false,
        ),
    ] {
        assert_eq!(parse_and_validate(text, 1).unwrap().global.pi_enabled, on);
    }
}

#[test]
fn sched_deadline_is_refused_naming_the_policy() {
    let text = r#"{"tasks": {"t": {"policy": "SCHED_DEADLINE", "loop": 1, "run": 5}}}"#;
    assert_eq!(
        refused(text, 1),
        "tasks.t.policy: SCHED_DEADLINE is not supported: Fairway has no deadline class"
    );
}

#[test]
fn parsing_alone_keeps_values_for_the_validator() {
    assert!(parse(r#"{"tasks": {"t": {"priority": 99, "run": 5}}}"#).is_ok());
}

/// Linux 6.12: `dl-runtime` of a fair task is its custom EEVDF slice; RT policies
/// ignore it; a phase may not change it (not applied at a phase start yet).
#[test]
fn dl_runtime_of_a_fair_task_is_its_custom_slice() {
    let text = r#"{"tasks": {"t": {"loop": 1, "dl-runtime": 3000, "run": 5},
                   "r": {"loop": 1, "policy": "SCHED_FIFO", "dl-runtime": 3000, "run": 5}}}"#;
    let scenario = parse_and_validate(text, 1).unwrap();
    let params = |i: usize| scenario.task_params(&scenario.tasks[i].attributes);
    assert_eq!(params(0).custom_slice, Some(3_000_000));
    assert_eq!(params(1).custom_slice, None);
    let text = r#"{"tasks": {"t": {"loop": 1, "phases": {"p": {"dl-runtime": 3000, "run": 5}}}}}"#;
    assert_eq!(
        refused(text, 1),
        "tasks.t.phases.p.dl-runtime: changing the policy, priority or dl-runtime at a phase \
         start is not supported by Fairway yet"
    );
}
