//! The replay cases (`fairway` image): the kernel's record of its drivers'
//! calls (`record_core=N`) replayed through the simulator's drivers, every
//! decision the same (docs/core-driver.md, "Replay").

use crate::test::{Case, Expect};

/// The agreement scenarios replayed from the kernel's record of its drivers'
/// calls (issue 11, point 4), with their CPU count: the hogs are pinned to CPU 0
/// and the rt-app events scenario is written for one CPU; the periodic mix runs
/// on two, where balancing moves tasks.
const REPLAY_SCENARIOS: [(&str, u32); 3] = [
    ("sim/scenarios/agree-hogs.json", 1),
    ("sim/scenarios/agree-periodic-mix.json", 2),
    ("sim/scenarios/agree-rtapp-events.json", 1),
];

/// Records per CPU for a replay case (each run makes at most ~12,000).
pub(crate) const REPLAY_RECORDS: usize = 40_000;

/// The bandwidth scenarios replayed from the kernel's record (issue 12), with
/// their CPU count: the pools' answers are in the record, so the replay needs
/// no pools and not the CPUs' order of access to them. The stress has nested
/// limits on four CPUs; the mix, on two, switches more often.
const REPLAY_BANDWIDTH_SCENARIOS: [(&str, u32); 2] = [
    ("tests/scenarios/bandwidth-stress-4cpus.json", 4),
    ("tests/scenarios/bandwidth-mix-2cpus.json", 2),
];

/// The fewest context switches a replay case must cover.
const REPLAY_MIN_SWITCHES: usize = 1000;

/// The kernel's record replays through the simulator's drivers with every
/// decision the same, over at least [`REPLAY_MIN_SWITCHES`] switches.
pub(crate) fn replay_agrees(lines: &[String]) -> Result<(), String> {
    let (outcome, report) = crate::experiments::replay::check(lines)?;
    eprintln!("  {report}");
    if outcome.divergence.is_some() {
        return Err(report);
    }
    if outcome.switches < REPLAY_MIN_SWITCHES {
        return Err(format!(
            "only {} context switches replayed, fewer than {REPLAY_MIN_SWITCHES}",
            outcome.switches
        ));
    }
    Ok(())
}

/// The replay cases of the agreement and bandwidth scenarios.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (scenario, cpus) in REPLAY_SCENARIOS {
        for policy in ["eevdf", "cfs", "rr"] {
            let name = scenario
                .trim_start_matches("sim/scenarios/agree-")
                .trim_end_matches(".json");
            // The sync ping-pong of agree-rtapp-events loses its last signal under
            // CFS (in the simulator too): the run ends in rt-app's deadlock error,
            // after the kernel printed its record.
            let deadlocks = name == "rtapp-events" && policy == "cfs";
            cases.push(
                Case::new(format!("replay-{name}-{policy}"), "fairway")
                    .icount()
                    .cpus(cpus)
                    .timeout(180)
                    .scenario(scenario)
                    // As the agreement cases run them: slices end on the
                    // high-resolution timer (the hogs switch twice as often).
                    .append(format!(
                        "record_core={REPLAY_RECORDS} sched={policy} balance=1 hrtick=1"
                    ))
                    .expect(if deadlocks {
                        Expect::Failure
                    } else {
                        Expect::Success
                    })
                    .contains("core: config")
                    .check(replay_agrees),
            );
        }
    }
    for (scenario, cpus) in REPLAY_BANDWIDTH_SCENARIOS {
        // Round robin has no bandwidth control.
        for policy in ["eevdf", "cfs"] {
            let name = scenario
                .trim_start_matches("tests/scenarios/")
                .trim_end_matches(".json");
            cases.push(
                Case::new(format!("replay-{name}-{policy}"), "fairway")
                    .icount()
                    .cpus(cpus)
                    .timeout(300)
                    .scenario(scenario)
                    .append(format!(
                        "record_core={REPLAY_RECORDS} sched={policy} hz=1000 bw_timer=random \
                         bw_seed=7 balance=1"
                    ))
                    .contains("core: config")
                    .contains("cfs_bandwidth=true")
                    .check(replay_agrees),
            );
        }
    }
    cases
}
