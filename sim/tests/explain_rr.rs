//! Explain mode under round robin (`--sched rr --explain N`): each pick among
//! two or more tasks names the FIFO run queue in order, head first, and the
//! task chosen is its head; the task that was running is at the tail with
//! the time it ran of its slice. The expected picks are the round-robin
//! rule's arithmetic on `tests/scenarios/explain-rr-1cpu.json` (three tasks
//! that never sleep on one CPU, a 4 ms slice checked at each 4 ms tick, so
//! each tick from 4 ms rotates the FIFO by one), not what a run printed.
//! The kernel's test boots the same file (`kernel-explain-rr`).

use fairway_rtapp::parse_and_validate;
use fairway_sched::round_robin::DEFAULT_SLICE_NS;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::{Config, Simulation};
use fairway_trace::explain_rule::{check_rr_pick, check_rr_rotation};

const MS: u64 = 1_000_000;

fn round_robin() -> Config {
    Config {
        policy: PolicyKind::RoundRobin {
            slice: DEFAULT_SLICE_NS,
        },
        policy_name: "rr".into(),
        capacities: vec![CpuCapacity::default()],
        tick_ns: 4 * MS,
        duration_ns: None,
        sample_interval_ns: MS,
        hrtick: false,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        uclamp: false,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    }
}

const SCENARIO: &str = include_str!("../../tests/scenarios/explain-rr-1cpu.json");

#[test]
fn every_round_robin_pick_takes_the_fifo_head_and_rotates_at_slice_expiry() {
    let scenario = parse_and_validate(SCENARIO, 1).unwrap();
    let results = Simulation::new(&scenario, round_robin())
        .unwrap()
        .with_explain(1_000)
        .run(None)
        .unwrap();
    let picks = &results.explained_rr_picks;
    assert!(results.explained_picks.is_empty(), "no fair picks under rr");
    let mut rotations = Vec::new();
    for (index, (candidates, chosen)) in picks.iter().enumerate() {
        assert_eq!(candidates.len(), 3, "pick {index}: three tasks queued");
        if check_rr_pick(candidates, *chosen, DEFAULT_SLICE_NS, true)
            .unwrap_or_else(|e| panic!("pick {index}: {e}"))
        {
            // Exactly one slice: picked at a tick, rotated at the next.
            assert_eq!(candidates[2].ran, Some(4 * MS), "pick {index}");
            rotations.push(candidates);
        }
    }
    for pair in rotations.windows(2) {
        check_rr_rotation(pair[0], pair[1]).unwrap();
    }
    // A rotation at each tick from 4 ms to 996 ms: 249 (the run ends at
    // 1000 ms).
    assert_eq!(rotations.len(), 249);
    // The first: a ran from 0 to 4 ms; b, then c, then a.
    let names = |c: &[fairway_trace::explain::RrCandidate]| {
        c.iter()
            .map(|c| results.tasks[c.task].name.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(rotations[0]), ["b", "c", "a"]);
    assert_eq!(names(rotations[1]), ["c", "a", "b"]);
}

#[test]
fn explain_prints_the_fifo_order_of_each_round_robin_pick() {
    let scenario = format!(
        "{}/../tests/scenarios/explain-rr-1cpu.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fairway-sim"))
        .args([&scenario, "--sched", "rr", "--cpus", "1", "--quiet"])
        .args(["--explain", "3", "--duration", "20ms"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("explain:")).collect();
    // --explain 3: the picks at 0 (the three tasks started together), 4 and
    // 8 ms, each a block of a header, the three tasks and the choice.
    let headers: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(" pick (round robin: "))
        .collect();
    assert_eq!(headers, [0, 5, 10], "in:\n{text}");
    assert_eq!(lines.len(), 15, "in:\n{text}");
    // The picks at 4 and 8 ms: the head chosen, the rotated task last, its
    // slice spent.
    let head = "pick (round robin: the head of the FIFO run queue), 3 candidates in FIFO order (slice 4000000 ns):";
    let at = |ns: u64| {
        lines
            .iter()
            .position(|l| *l == format!("explain: {ns} ns cpu0 {head}"))
            .unwrap_or_else(|| panic!("no pick explained at {ns} ns in:\n{text}"))
    };
    let expired = "ran 4000000 ns of its 4000000 ns slice: expired, rotated to the back";
    for (ns, order) in [(4 * MS, ["b", "c", "a"]), (8 * MS, ["c", "a", "b"])] {
        let first = at(ns);
        let fields = |line: &str| {
            line.trim_start_matches("explain:")
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        for (position, task) in order.iter().enumerate() {
            let line = fields(lines[first + 1 + position]);
            assert_eq!(line[0], (position + 1).to_string(), "{ns}: {line:?}");
            assert_eq!(line[1], *task, "{ns}: {line:?}");
        }
        assert!(lines[first + 1].ends_with("head of the FIFO"));
        assert!(lines[first + 2].ends_with("waiting"));
        assert!(lines[first + 3].ends_with(expired), "{}", lines[first + 3]);
        assert_eq!(
            lines[first + 4],
            format!(
                "explain:   chose {}: a fresh slice of 4000000 ns, rotated at the first tick \
                 after it runs out while another task waits",
                order[0]
            )
        );
    }
}
