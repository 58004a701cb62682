//! The fairness of Linux's balancer rules on four equal-share groups, checked where
//! time is exact: the simulator over the 120 tick timings of docs/performance.md
//! ("The rules cycle in the simulator too").
//!
//! Four groups of 1024 shares hold 1, 2, 3 and 4 hogs on 4 CPUs for 10 s
//! (`tests/scenarios/groups-4-equal-shares-10s.json`). Placed fairly, each group gets a
//! quarter of the machine (§2.7: a group entity's weight is its shares times the part
//! of its load on the CPU). The balancer's rules (§3) have a cycle on this scenario
//! that a run leaves only by chance, so one run's result depends on the tick phases:
//! in the worst state the cycle passes through (CPU loads 1,024 / 1,195 / 768 / 1,109)
//! g2 gets (682/1,195 + 341/1,109)/4 = 21.97 % and g1 (512/1,195 + 512/768)/4 =
//! 27.39 %, so no run may leave a group outside 25 % ± 3.1 points. What makes the
//! rules fair is that such runs are rare and unbiased: at most 6 of the 120 runs with
//! a group outside 25 % ± 0.5 points, and every group's mean over the 120 runs within
//! 25 % ± 0.25 points. The simulator is deterministic, so this test cannot flip by
//! chance; a change that makes the balancer less fair fails it every time.
//!
//! The kernel's cases of the same scenario (`groups-4-equal-shares-10s-*`) check the
//! 3.1-point bound: one run each, at the tick phases the kernel's run happens to have.

use fairway_sim::Simulation;
use fairway_sim::cli::{parse_args, prepare};

const SCENARIO: &str = "tests/scenarios/groups-4-equal-shares-10s.json";
/// The worst placement the balancer leaves standing, derived above, in points.
const WORST_POINTS: f64 = 3.1;
/// The fair result's tolerance (issue 4's 2 % of a quarter), in points.
const FAIR_POINTS: f64 = 0.5;
/// Runs allowed a group outside [`FAIR_POINTS`]: 5 % of the 120.
const UNFAIR_RUNS_ALLOWED: usize = 6;
/// Each group's mean over the runs, in points from 25 %.
const MEAN_POINTS: f64 = 0.25;

/// Each group's share of the machine, in %, in one run of the simulator, as
/// `fairway-sim SCENARIO --cpus 4 --hz HZ --skew_tick 1 --sched SCHED --tick_seed SEED`.
fn shares(sched: &str, hz: u32, seed: u64) -> [f64; 4] {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../").to_string() + SCENARIO;
    let args: Vec<String> = [
        scenario.as_str(),
        "--cpus",
        "4",
        "--hz",
        &hz.to_string(),
        "--skew_tick",
        "1",
        "--sched",
        sched,
        "--tick_seed",
        &seed.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let prepared = prepare(&parse_args(&args).unwrap()).unwrap();
    let results = Simulation::new(&prepared.scenario, prepared.config().unwrap())
        .unwrap()
        .run(None)
        .unwrap();
    let mut groups = [0u64; 4];
    for task in &results.tasks {
        let group: usize = task
            .name
            .strip_prefix('g')
            .and_then(|rest| rest.split('_').next())
            .and_then(|g| g.parse().ok())
            .unwrap_or_else(|| panic!("task {} names no group", task.name));
        groups[group] += task.runtime_ns;
    }
    let total: u64 = groups.iter().sum();
    assert!(total > 0, "{sched} HZ {hz} seed {seed}: nothing ran");
    groups.map(|g| 100.0 * g as f64 / total as f64)
}

#[test]
fn the_balancer_rules_share_equally_over_120_tick_timings() {
    let mut runs = Vec::new();
    for sched in ["eevdf", "cfs"] {
        for hz in [100, 250, 1000] {
            for seed in 0..20 {
                runs.push((sched, hz, seed, shares(sched, hz, seed)));
            }
        }
    }
    assert_eq!(runs.len(), 120);

    // The distribution, printed whatever the verdict: every group's share in
    // every run, counted in 0.25-point bins around 25 %.
    let mut bins = std::collections::BTreeMap::<i64, usize>::new();
    for (_, _, _, shares) in &runs {
        for share in shares {
            *bins
                .entry(((share - 25.0) / 0.25).floor() as i64)
                .or_default() += 1;
        }
    }
    println!("each group's share over the 120 runs (480 values), by 0.25-point bin:");
    for (bin, count) in &bins {
        let low = 25.0 + *bin as f64 * 0.25;
        println!(
            "  [{low:6.2}, {:6.2}) %  {count:4}  {}",
            low + 0.25,
            "#".repeat(count.div_ceil(4))
        );
    }

    let mut failures = Vec::new();
    let mut unfair = Vec::new();
    for (sched, hz, seed, shares) in &runs {
        let worst = shares
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| (a.1 - 25.0).abs().total_cmp(&(b.1 - 25.0).abs()))
            .unwrap();
        let run = format!(
            "{sched} HZ {hz} tick_seed {seed}: g{} {:.2} %",
            worst.0, worst.1
        );
        if (worst.1 - 25.0).abs() > WORST_POINTS {
            failures.push(format!("{run}, beyond 25 % ± {WORST_POINTS} points"));
        }
        if (worst.1 - 25.0).abs() > FAIR_POINTS {
            unfair.push(run);
        }
    }
    println!(
        "runs with a group outside 25 % ± {FAIR_POINTS} points: {} of 120 (at most {UNFAIR_RUNS_ALLOWED})",
        unfair.len()
    );
    for run in &unfair {
        println!("  {run}");
    }
    if unfair.len() > UNFAIR_RUNS_ALLOWED {
        failures.push(format!(
            "{} runs with a group outside 25 % ± {FAIR_POINTS} points, more than {UNFAIR_RUNS_ALLOWED}",
            unfair.len()
        ));
    }
    for group in 0..4 {
        let mean = runs.iter().map(|r| r.3[group]).sum::<f64>() / runs.len() as f64;
        println!("g{group}: mean {mean:.3} % over the 120 runs");
        if (mean - 25.0).abs() > MEAN_POINTS {
            failures.push(format!(
                "g{group}'s mean over the 120 runs is {mean:.3} %, outside 25 % ± {MEAN_POINTS} points"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
