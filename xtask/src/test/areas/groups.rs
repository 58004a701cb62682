//! Task groups with equal shares (`fairway` image): each group's share of
//! the machine, pinned to the fair placement and balanced freely in the
//! tick configurations of the sweep (`--groups-sweep`: all of them).

use super::fairness::{skewed_ticks, task_runtimes};
use crate::test::Case;

/// The fair result of four equal-share groups (1, 2, 3 and 4 CPU-bound tasks on
/// 4 CPUs): each gets a quarter of the machine within 2 % of it, 0.5 points.
/// It is what the group shares alone must give (§2.7), so the pinned cases
/// check it; with the balancer free, it is what the rules give on most tick
/// timings but not all ([`GROUPS_WORST_POINTS`]).
pub(crate) const GROUPS_FAIR_POINTS: f64 = 0.5;

/// The bound of the worst placement the balancer leaves standing on the
/// equal-share groups scenario, in points from 25 %. Linux's rules, as the
/// reference gives them (§3), have a cycle there that a run leaves only by
/// chance (docs/performance.md, "The rules cycle in the simulator too"), through
/// three states whose CPU loads are each CPU's groups' per-CPU entity weights
/// (a group's 1024 shares split by its tasks there). In the state
/// 1,024 / 1,195 / 768 / 1,109 (CPU 0: g0; CPU 1: g1 g2 g2; CPU 2: g1 g3;
/// CPU 3: g2 g3 g3 g3), g2 gets (682/1,195 + 341/1,109)/4 = 21.97 % and g1
/// (512/1,195 + 512/768)/4 = 27.39 %; the other states are nearer 25 %. So a
/// run of the unpinned scenario, whichever path its tick phases take, leaves
/// every group within 25 % ± 3.1 points unless the kernel's mechanism fails
/// grossly. The rules' fairness itself is checked where time is exact, by the
/// simulator over 120 tick timings (`sim/tests/group_fairness.rs`).
pub(crate) const GROUPS_WORST_POINTS: f64 = 3.1;

/// Issue 4: 4 groups of 1, 2, 3 and 4 CPU-bound tasks with equal shares on 4
/// CPUs each get a quarter of the machine within `points` percentage points.
pub(crate) fn groups_share_equally(lines: &[String], points: f64) -> Result<(), String> {
    let tasks = task_runtimes(lines);
    let mut groups = [0u64; 4];
    for (name, runtime) in &tasks {
        let group: usize = name
            .strip_prefix('g')
            .and_then(|rest| rest.split('_').next())
            .and_then(|g| g.parse().ok())
            .ok_or_else(|| format!("task {name} names no group"))?;
        *groups.get_mut(group).ok_or("group beyond 3")? += runtime;
    }
    let total: u64 = groups.iter().sum();
    for (group, runtime) in groups.iter().enumerate() {
        let share = 100.0 * *runtime as f64 / total as f64;
        if (share - 25.0).abs() > points {
            return Err(format!(
                "group g{group} got {share:.2} % of the machine (expected 25 % ± {points} points)"
            ));
        }
    }
    Ok(())
}

/// The tick configurations the 10 s equal-share groups check must pass in
/// (issue 10), `(HZ, skew_tick, in the default test command)`: the HZ values
/// Linux offers (100, 250, 300, 1000) and two more (200, 500), with the CPUs'
/// ticks skewed over half a period (Linux's `skew_tick=1`, see
/// [`skewed_ticks`]), and four of them with the ticks of all CPUs at the same
/// instants. Where the balancer settles depends on the instants at which the
/// CPUs tick and balance, so each is a different run of the same check.
///
/// Each case boots 10 s of virtual time on 4 busy CPUs, 40 G instructions,
/// about 40 s of wall time (37-47 s measured on the 2-core machine); all 20
/// would take the test command from about 6 to 19 minutes. The default
/// command runs half of them, the same five per policy: both ends of the HZ
/// range (100, 1000) in both tick modes, where the two policies fail or pass
/// for different reasons (HZ 100 without skew is where CFS, and EEVDF on an
/// earlier kernel, settled in a balance cycle), and HZ 250 with skew, the
/// default HZ that the other 4-CPU cases use. `cargo xtask test
/// --groups-sweep` runs all 20 ([`groups_sweep`]).
const GROUPS_SWEEP: [(u32, bool, bool); 10] = [
    (100, true, true),
    (200, true, false),
    (250, true, true),
    (300, true, false),
    (500, true, false),
    (1000, true, true),
    (100, false, true),
    (250, false, false),
    (300, false, false),
    (1000, false, true),
];

/// The 10 s equal-share groups check in one tick configuration.
fn groups_sweep_case(policy: &str, hz: u32, skew: bool) -> Case {
    let skew = u8::from(skew);
    groups_case(
        format!("groups-4-equal-shares-10s-{policy}-hz{hz}-skew{skew}"),
        "tests/scenarios/groups-4-equal-shares-10s.json",
        format!("sched={policy} hz={hz} skew_tick={skew}"),
        600,
        GROUPS_WORST_POINTS,
    )
}

/// The whole sweep of the 10 s equal-share groups check: every configuration
/// of [`GROUPS_SWEEP`] under EEVDF and CFS (`cargo xtask test --groups-sweep`).
pub(crate) fn groups_sweep() -> Vec<Case> {
    let mut cases = Vec::new();
    for policy in ["eevdf", "cfs"] {
        for &(hz, skew, _) in &GROUPS_SWEEP {
            cases.push(groups_sweep_case(policy, hz, skew));
        }
    }
    cases
}

/// A 4-CPU equal-share groups case: `scenario` booted with `append`, each
/// group's share of the machine checked by [`groups_share_equally`] within
/// `points` of 25 %.
fn groups_case(
    name: impl Into<String>,
    scenario: &'static str,
    append: impl Into<String>,
    timeout_seconds: u64,
    points: f64,
) -> Case {
    Case::new(name, "fairway")
        .icount()
        .cpus(4)
        .scenario(scenario)
        .append(append)
        .timeout(timeout_seconds)
        .check(move |lines| groups_share_equally(lines, points))
}

/// Cases of issue 4 that Fairway does not pass yet (`cargo xtask test --gaps`
/// runs them and prints how far off they are; the default test command and CI
/// leave them out, so that they are visible without hiding regressions).
pub(crate) fn known_gaps() -> Vec<Case> {
    let mut cases = Vec::new();
    for policy in ["eevdf", "cfs"] {
        cases.push(groups_case(
            format!("groups-4-equal-shares-4cpus-{policy}"),
            "tests/scenarios/groups-4-equal-shares.json",
            skewed_ticks(policy),
            180,
            GROUPS_FAIR_POINTS,
        ));
    }
    cases
}

/// The equal-share groups cases of the default test command.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for policy in ["eevdf", "cfs"] {
        // Equal-share groups of 1 to 4 hogs, balanced freely over 10 s, in
        // the default half of the tick configurations of the sweep: each
        // group within the worst placement the balancer leaves standing
        // (25 % ± 3.1 points, [`GROUPS_WORST_POINTS`]). These cases guard
        // the kernel's mechanism against gross failure; the rules' fairness
        // (± 0.5 points on most timings, unbiased on average) is checked by
        // the simulator over 120 timings (`sim/tests/group_fairness.rs`),
        // where time is exact. Over 2 s Linux's own start-up (fork placement
        // 3/3/2/2, the first busy balance at 64 ms) costs the lone group
        // ~40 ms, the whole 0.5-point tolerance by itself, so that window
        // stays in `known_gaps()`.
        for &(hz, skew, _) in GROUPS_SWEEP.iter().filter(|c| c.2) {
            cases.push(groups_sweep_case(policy, hz, skew));
        }
        // The same groups pinned to the fair placement (g0 | g1, g3, g3 |
        // g1, g3, g3 | g2, g2, g2), where every root load is 1024: the group
        // shares alone (§2.7) must give each group its quarter, whatever
        // the balancer would have done (the case above also depends on that).
        cases.push(groups_case(
            format!("groups-4-equal-shares-10s-pinned-4cpus-{policy}"),
            "tests/scenarios/groups-4-equal-shares-10s-pinned.json",
            skewed_ticks(policy),
            600,
            GROUPS_FAIR_POINTS,
        ));
    }
    cases
}
