//! What the scenario reader's fuzz target (`tests/fuzz_scenario.rs`) found, as the
//! smallest input that shows it, and a gap found reading the code beside it. The
//! target's seed is in `proptest-regressions/scenario.txt`; these tests keep the
//! inputs themselves, which stay valid when the target's strategies change.

use fairway_rtapp::parse_and_validate;

fn refusal(text: &str) -> String {
    match parse_and_validate(text, 1) {
        Ok(scenario) => panic!("accepted: {scenario:?}"),
        Err(error) => error.to_string(),
    }
}

/// A member named `""` of the root had the root's own empty path, so the message
/// blamed `<root>` rather than the member. An empty key is now written `""`.
#[test]
fn an_empty_key_is_named_in_the_path() {
    assert_eq!(refusal(r#"{"": 0}"#), r#""": unknown event or property"#);
    assert_eq!(
        refusal(r#"{"tasks": {"t": {"": 1}}}"#),
        r#"tasks.t."": unknown event or property"#
    );
}

/// Found reading the code near the above: a phase named `""` in `phases` is taken
/// for the implicit phase of a task without `phases`, whose loop was not checked,
/// so `"loop": -5` was accepted (and the phase skipped). Every phase's loop is
/// checked now; such a phase has its task's path.
#[test]
fn a_phase_named_empty_has_its_loop_checked() {
    assert_eq!(
        refusal(
            r#"{"global": {"duration": 1}, "tasks": {"t": {"phases": {"": {"loop": -5, "run": 10}}}}}"#
        ),
        "tasks.t.loop: -5 is outside -1..=9223372036854775807"
    );
}
