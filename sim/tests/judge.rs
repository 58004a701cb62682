//! The placement judge (`fairway_sim::judge`, docs/eas.md "Judging
//! placements") on the classic EAS shapes of LISA's behaviour tests, on the
//! three heterogeneous boards, in the simulator.
//!
//! Each shape runs with EAS on; the judge prices every window (less its
//! first 10 periods, for PELT and util_est to follow a change) for the
//! placement the run made and for the best one found by exhaustive search,
//! with the energy model (§5.2). Asserted:
//! - the energy ratio, actual over best, is at most 1.05: the judge prices
//!   with the model EAS decides with, so the gap is what PELT's estimates
//!   and the one-task-at-a-time choice cost; LISA's EAS behaviour tests
//!   allow the same 5 %;
//! - the placement: after the settling time each task runs on a CPU of the
//!   capacity the best placement gives it. The small tasks (util 30, about
//!   3 % of a big CPU at its highest frequency) are best on the smallest
//!   CPUs of every board, and the big ones (util 600) on the biggest, which
//!   the test checks of the judge's best placement first.

use fairway_sim::judge::{SETTLE_NS, classic_shapes, phase_spread, simulate_and_judge};

fn judge_board(board: &str) {
    let mut failures = Vec::new();
    for shape in classic_shapes() {
        let (verdict, judge_board, _) = simulate_and_judge(board, &shape, "", SETTLE_NS).unwrap();
        let ratio = verdict.ratio();
        println!("{board} {}: energy ratio {ratio:.4}", shape.name);
        if ratio > 1.05 {
            failures.push(format!(
                "{board} {}: ratio {ratio:.4} > 1.05: {:#?}",
                shape.name, verdict.windows
            ));
        }
        if let Err(e) = verdict.check_placement(&judge_board) {
            failures.push(format!("{board} {}: {e}", shape.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn judge_juno_r0() {
    judge_board("juno-r0");
}

#[test]
fn judge_juno_r2() {
    judge_board("juno-r2");
}

#[test]
fn judge_pixel6() {
    judge_board("pixel6");
}

/// The tick phases [`every_tick_phase_keeps_lisas_energy_margin`] runs.
const PHASES: core::ops::Range<u64> = 0..32;

/// Every shape on every board keeps LISA's energy margin (actual at most 5 %
/// above the best) at each of 32 tick phases (`tick_seed` 0 to 31, the
/// kernel's boot option: each CPU's tick starts at a phase drawn from the
/// seed). What is asserted is the energy margin only; the placement check
/// is counted and printed (`--nocapture`), not asserted, because which CPU
/// class a task ends on changes with the phase on some shapes while the
/// energy stays within the margin (docs/eas.md, "Verdicts across tick
/// phases"): the tests above assert it at phase 0.
#[test]
fn every_tick_phase_keeps_lisas_energy_margin() {
    let mut failures = Vec::new();
    println!(
        "board     shape                 worst ratio  placement fails (of {})",
        PHASES.end
    );
    for board in ["juno-r0", "juno-r2", "pixel6"] {
        for shape in classic_shapes() {
            let spread = phase_spread(board, &shape, "", PHASES, SETTLE_NS).unwrap();
            println!(
                "{board:9} {:21} {:11.4}  {} {:?}",
                shape.name,
                spread.worst_ratio(),
                spread.placement_failures.len(),
                spread.placement_failures
            );
            let above = spread.above(1.05);
            if !above.is_empty() {
                failures.push(format!(
                    "{board} {}: ratio above 1.05 at tick_seed {above:?} (worst {:.4})",
                    shape.name,
                    spread.worst_ratio()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The judge can fail: without EAS, the wake-up path spreads the three small
/// tasks of Juno r0 over idle CPUs, big ones included, and the judge prices
/// that above the 5 % threshold (it measured 1.76; the best is every small
/// task on its own LITTLE CPU at 450 MHz).
#[test]
fn without_eas_the_judge_sees_the_waste() {
    let shape = classic_shapes()
        .into_iter()
        .find(|s| s.name == "three-small")
        .unwrap();
    let (verdict, _, _) =
        simulate_and_judge("juno-r0", &shape, "sched_energy_aware=0", SETTLE_NS).unwrap();
    assert!(verdict.ratio() > 1.05, "{verdict:#?}");
}

/// The committed scenarios of the shapes (`tests/scenarios/eas-shape-*.json`,
/// which the kernel's judge cases run) are the shapes' own.
#[test]
fn the_committed_shape_scenarios_are_current() {
    for shape in classic_shapes() {
        let path = format!(
            "{}/../tests/scenarios/eas-shape-{}.json",
            env!("CARGO_MANIFEST_DIR"),
            shape.name
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, shape.to_scenario(), "{path}");
    }
}
