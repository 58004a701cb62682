//! `cargo xtask policy-check NAME [--seconds S]`: the grader of a policy
//! (docs/policies.md), built-in (`eevdf`, `cfs`, `rr`) or registered
//! (`sched/src/policies/`).
//!
//! Runs the grader's properties in-process on one CPU's run queue
//! (`fairway_sched::policies::grader`: every task once, no starvation,
//! migration keeps the task, the share the policy promises) and prints one
//! line per property, `PASS property: figures` or `FAIL ...`. Then it runs
//! `tests/scenarios/fairness-12-mixed-nice.json` in the simulator under the
//! policy on one CPU for S seconds (2 by default) and prints each nice
//! level's share of the CPU beside its share of the weights (Linux's
//! `sched_prio_to_weight`, §1.1: what a proportional-share policy promises;
//! round robin and the template promise equal shares). The exit status
//! fails when a property fails.

use std::process::ExitCode;

use fairway_sched::boot_options::{PolicyChoice, SchedConfig};
use fairway_sched::policies::grader;
use fairway_sched::weight::PRIO_TO_WEIGHT;

use crate::run::board::workspace_root;

const USAGE: &str = "usage: cargo xtask policy-check NAME [--seconds S]";

/// The scenario whose shares are printed.
const SCENARIO: &str = "tests/scenarios/fairness-12-mixed-nice.json";

/// The command: `NAME [--seconds S]`.
pub fn command(args: &[String]) -> Result<ExitCode, String> {
    let (name, seconds) = match args {
        [name] => (name, 2),
        [name, flag, seconds] if flag == "--seconds" => (
            name,
            seconds
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=600).contains(s))
                .ok_or(format!("--seconds {seconds}: a number of seconds, 1..=600"))?,
        ),
        _ => return Err(USAGE.into()),
    };
    let config = SchedConfig::parse(&format!("sched={name}")).map_err(|error| error.to_string())?;
    let kind = config.policy_kind(1);
    println!(
        "policy-check {name}: {}",
        summary(config.policy).unwrap_or("a built-in policy")
    );
    let verdicts = grader::grade(kind, config.slice_ns());
    for verdict in &verdicts {
        let mark = if verdict.passed { "PASS" } else { "FAIL" };
        println!("{mark} {}: {}", verdict.property, verdict.detail);
    }
    shares_in_the_simulator(name, seconds)?;
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    println!(
        "policy-check {name}: {} of {} properties hold",
        verdicts.len() - failed,
        verdicts.len()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn summary(policy: PolicyChoice) -> Option<&'static str> {
    match policy {
        PolicyChoice::Registered(id) => Some(id.registered().summary),
        _ => None,
    }
}

/// The scenario's twelve tasks under `name` on one CPU for `seconds`: each
/// nice level's share against its share of the weights.
fn shares_in_the_simulator(name: &str, seconds: u64) -> Result<(), String> {
    let scenario = workspace_root().join(SCENARIO);
    let args: Vec<String> = [
        scenario.to_string_lossy().as_ref(),
        "--sched",
        name,
        "--cpus",
        "1",
        "--duration",
        &format!("{seconds}s"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let results = fairway_sim::cli::prepare_args(&args)
        .and_then(|prepared| prepared.simulate(|s| s))
        .map_err(|e| e.to_string())?;
    let nice_of = |task: &str| -> i8 {
        task.rsplit("nice")
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let weight = |nice: i8| f64::from(PRIO_TO_WEIGHT[(nice as i32 + 20) as usize]);
    let total_weight: f64 = results.tasks.iter().map(|t| weight(nice_of(&t.name))).sum();
    let total_time: u64 = results.tasks.iter().map(|t| t.runtime_ns).sum();
    println!("simulator: {SCENARIO}, 1 CPU, {seconds} s, each task's share by nice level:");
    println!("  nice  tasks  CPU share per task  weight share per task (tickets / total)");
    for nice in [-3i8, 0, 3] {
        let level: Vec<_> = results
            .tasks
            .iter()
            .filter(|t| nice_of(&t.name) == nice)
            .collect();
        if level.is_empty() {
            continue;
        }
        let time: u64 = level.iter().map(|t| t.runtime_ns).sum();
        let share = 100.0 * time as f64 / total_time.max(1) as f64 / level.len() as f64;
        let promised = 100.0 * weight(nice) / total_weight;
        println!(
            "  {nice:>4}  {:>5}  {share:>17.2} %  {promised:>8.2} % ({} / {total_weight})",
            level.len(),
            weight(nice)
        );
    }
    Ok(())
}
