//! Explain mode in the kernel under a registered policy (`sched=stride` or
//! `sched=lottery` with `explain=N`): the picks decoded from its records,
//! named with the scenario's tasks and held to the policy's rule
//! (docs/policies.md), from the printed numbers alone.
//!
//! The scenario, `tests/scenarios/explain-stride-1cpu.json`: `heavy`, `mid`
//! and `light`, of nice −3, 0 and 3, never sleep on CPU 0 for 1 s. Their
//! tickets are Linux's weights (docs/linux-sched-reference.md §1.1): 1991,
//! 1024 and 526.

use std::path::Path;

use crate::run::kernel_trace::{Decision, Explained};
use fairway_trace::explain::PolicyCandidate;

/// The scenario's tasks and their weights (§1.1's table, nice −3, 0, 3).
const HOGS: [(&str, u64); 3] = [("heavy", 1991), ("mid", 1024), ("light", 526)];

/// Stride's `STRIDE1` (Waldspurger and Weihl 1995; docs/policies.md): a
/// task's stride is `STRIDE1 / tickets`, its pass advancing by a stride per
/// slice run.
const STRIDE1: u64 = 1 << 40;

/// The registered policy's explained picks: each lists two or more distinct
/// candidates, the chosen one first, with the policy's label and number;
/// the scenario's three tasks are among them, each chosen at least once;
/// then the policy's own rule ([`stride_rule`], [`lottery_rule`]). About
/// 250 picks fit the run (a slice of 4 ms, at most 8 ms when it starts
/// between two ticks).
pub(super) fn kernel_explain_policy(
    explained: &Explained,
    policy: &str,
    scenario: &Path,
) -> Result<String, String> {
    let hog = |task: usize| explained.names.get(task).and_then(|name| hog_named(name));
    let mut picks = Vec::new();
    let mut chosen_count = [0usize; 3];
    for decision in &explained.decisions {
        let Decision::PolicyPick {
            time_ns,
            policy: name,
            candidates,
            chosen,
            ..
        } = decision
        else {
            return Err(format!(
                "a decision other than {policy}'s pick: {decision:?}"
            ));
        };
        let at = format!("the pick at {time_ns} ns");
        let chosen = chosen.ok_or_else(|| format!("{at} chose idle"))?;
        if *name != policy || candidates.len() < 2 || candidates[0].task != chosen {
            return Err(format!("{at}: {name}, {candidates:?}, chose {chosen}"));
        }
        let mut tasks: Vec<usize> = candidates.iter().map(|c| c.task).collect();
        tasks.sort_unstable();
        tasks.dedup();
        if tasks.len() != candidates.len() {
            return Err(format!("{at} lists a task twice: {candidates:?}"));
        }
        if let Some(index) = hog(chosen) {
            chosen_count[index] += 1;
        }
        let hogs: Vec<Option<usize>> = candidates.iter().map(|c| hog(c.task)).collect();
        picks.push((at, candidates.clone(), hogs));
    }
    if !(120..=300).contains(&picks.len()) || chosen_count.contains(&0) {
        return Err(format!(
            "{} picks explained, the three tasks chosen {chosen_count:?} times",
            picks.len()
        ));
    }
    let rule = match policy {
        "stride" => {
            let widest = stride_rule(&picks, KERNEL_STRIDES)?;
            let simulator = simulator_stride(scenario)?;
            format!(
                "each took the smallest pass, the others at most {widest:.2} of their strides \
                 above it (bound {KERNEL_STRIDES}); {simulator}"
            )
        }
        "lottery" => lottery_rule(&picks)?,
        other => return Err(format!("no rule to check for {other}")),
    };
    Ok(format!(
        "{} explained {policy} picks name the scenario's tasks (heavy, mid, light chosen \
         {chosen_count:?} times); {rule}; {} lines as the simulator prints them",
        picks.len(),
        explained.lines().len()
    ))
}

/// How far above the chosen pass the kernel's may be, in strides: two
/// slices' runs and the switch after the tick that ends them ([`stride_rule`]).
const KERNEL_STRIDES: f64 = 2.01;

/// A pick as checked: where, its candidates, and which of [`HOGS`] each is.
type Pick = (String, Vec<PolicyCandidate>, Vec<Option<usize>>);

/// Which of [`HOGS`] a task named `name` is.
fn hog_named(name: &str) -> Option<usize> {
    HOGS.iter().position(|(hog, _)| *hog == name)
}

/// Stride's rule: the chosen task has the smallest pass (read right after
/// the pick, its own not yet charged). And no task's pass is more than two
/// strides above the chosen one's: a task's pass was the smallest when it
/// was last picked, no waiting task's pass is ever below the last picked
/// one's, and it then advanced by its stride per slice run, for at most two
/// slices (a 4 ms slice ends at the tick after it runs out: 8 ms when it
/// starts just after a tick, ticks of 4 ms at `hz=250`), and the tick's
/// interrupt and switch that end it: a few thousand instructions, at 1
/// instruction per ns under icount under 40 µs, 0.01 of a slice.
/// Returns the widest gap found, in strides, which must not pass `bound`.
fn stride_rule(picks: &[Pick], bound: f64) -> Result<f64, String> {
    let mut widest = 0.0f64;
    for (at, candidates, hogs) in picks {
        let pass = |c: &PolicyCandidate| match (c.label.as_str(), c.value) {
            ("pass", Some(pass)) => Ok(pass),
            _ => Err(format!("{at}: a candidate without its pass: {c:?}")),
        };
        let chosen = pass(&candidates[0])?;
        for (candidate, hog) in candidates.iter().zip(hogs) {
            let pass = pass(candidate)?;
            if pass < chosen {
                return Err(format!(
                    "{at} did not take the smallest pass: {candidates:?}"
                ));
            }
            if let Some(index) = hog {
                let stride = STRIDE1 / HOGS[*index].1;
                let strides = (pass - chosen) as f64 / stride as f64;
                widest = widest.max(strides);
                if strides > bound {
                    return Err(format!(
                        "{at}: {} is {strides:.2} strides above the chosen pass",
                        HOGS[*index].0
                    ));
                }
            }
        }
    }
    Ok(widest)
}

/// The simulator's explained picks of the same scenario under stride
/// (recorded, not printed), held to the same rule with the bound of its
/// runs: its ticks and picks fall on the same instants, so every run is one
/// 4 ms slice exactly and no pass is more than one stride above the chosen
/// one.
fn simulator_stride(scenario: &Path) -> Result<String, String> {
    let args: Vec<String> = [
        scenario.to_string_lossy().as_ref(),
        "--sched",
        "stride",
        "--cpus",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let results = fairway_sim::cli::prepare_args(&args)
        .and_then(|prepared| prepared.simulate(|s| s.with_explain_recorded(3000)))
        .map_err(|e| e.to_string())?;
    let name = |task: usize| results.tasks.get(task).map(|t| t.name.as_str());
    let mut picks = Vec::new();
    for (number, (notes, chosen)) in results.explained_policy_picks.iter().enumerate() {
        let at = format!("the simulator's pick {number}");
        let candidates = fairway_sim::engine::explain::policy_candidates(notes);
        if candidates.first().map(|c| c.task) != *chosen {
            return Err(format!(
                "{at} does not list its choice first: {candidates:?}"
            ));
        }
        let hogs = candidates
            .iter()
            .map(|c| name(c.task).and_then(hog_named))
            .collect();
        picks.push((at, candidates, hogs));
    }
    if picks.len() < 120 {
        return Err(format!("the simulator explained {} picks", picks.len()));
    }
    let widest = stride_rule(&picks, 1.0)?;
    Ok(format!(
        "the simulator's {} picks of the same run follow the same rule, at most {widest:.2} \
         strides (bound 1: its runs are one slice exactly)",
        picks.len()
    ))
}

/// Lottery's rule: each candidate holds its weight in tickets, and a draw
/// picks a candidate with probability its tickets over all the candidates'
/// (docs/policies.md). A pick that drew the task already running is not
/// explained (nothing changed), so of the picks among exactly the three
/// tasks, with task `r` running before, `heavy` is chosen with probability
/// 1991 / (3541 − w_r) (0 when `r` is `heavy`): the count must lie within
/// 4 σ of the sum of these probabilities (a binomial sum's variance being
/// the sum of p (1 − p)).
fn lottery_rule(picks: &[Pick]) -> Result<String, String> {
    let total: u64 = HOGS.iter().map(|(_, weight)| weight).sum();
    let (mut expected, mut variance, mut heavy, mut counted) = (0.0, 0.0, 0, 0);
    let mut running: Option<usize> = None;
    for (at, candidates, hogs) in picks {
        for (candidate, hog) in candidates.iter().zip(hogs) {
            if let Some(index) = hog
                && (candidate.label.as_str(), candidate.value) != ("tickets", Some(HOGS[*index].1))
            {
                return Err(format!("{at}: {candidate:?} is not holding its weight"));
            }
        }
        let only_hogs = hogs.len() == 3 && hogs.iter().all(Option::is_some);
        if let (true, Some(previous)) = (only_hogs, running) {
            let p = if previous == 0 {
                0.0
            } else {
                HOGS[0].1 as f64 / (total - HOGS[previous].1) as f64
            };
            expected += p;
            variance += p * (1.0 - p);
            counted += 1;
            heavy += usize::from(hogs[0] == Some(0));
        }
        running = hogs[0];
    }
    let sigma = variance.sqrt();
    if counted < 100 || (heavy as f64 - expected).abs() > 4.0 * sigma {
        return Err(format!(
            "heavy won {heavy} of {counted} draws among the three, expected {expected:.1} ± 4 × \
             {sigma:.1}"
        ));
    }
    Ok(format!(
        "every candidate held its weight in tickets; heavy won {heavy} of {counted} draws among \
         the three, expected {expected:.1} ± 4 × {sigma:.1}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pick among the three tasks (0 heavy, 1 mid, 2 light), the chosen
    /// one first, with `label` and `values`.
    fn pick(label: &str, order: [usize; 3], values: [u64; 3]) -> Pick {
        let candidates = order
            .iter()
            .zip(values)
            .map(|(&task, value)| PolicyCandidate {
                task,
                label: label.to_string(),
                value: Some(value),
            })
            .collect();
        ("a pick".to_string(), candidates, order.map(Some).to_vec())
    }

    #[test]
    fn stride_s_rule_takes_the_smallest_pass_within_its_bound() {
        let heavy = STRIDE1 / 1991;
        let mid = STRIDE1 / 1024;
        // mid one and a half of its strides above the chosen heavy.
        let fine = pick("pass", [0, 1, 2], [100, 100 + mid * 3 / 2, 100]);
        assert!(stride_rule(std::slice::from_ref(&fine), 2.0).unwrap() > 1.49);
        assert!(stride_rule(&[fine], 1.0).is_err());
        // A chosen pass above another's breaks the rule.
        let wrong = pick("pass", [0, 1, 2], [100 + heavy, 100, 100 + heavy]);
        assert!(stride_rule(&[wrong], 2.0).is_err());
        // Tickets are not passes.
        let tickets = pick("tickets", [0, 1, 2], [1, 2, 3]);
        assert!(stride_rule(&[tickets], 2.0).is_err());
    }

    #[test]
    fn lottery_s_rule_wants_weights_and_a_binomial_count() {
        let weights = [1991, 1024, 526];
        // mid and heavy alternate: heavy always wins over mid (p = 1991 /
        // 2517 = 0.79 each), so 100 wins of 100 is 5.1 sigma above 79.1.
        let mut picks = Vec::new();
        for _ in 0..100 {
            picks.push(pick("tickets", [1, 0, 2], weights_of([1, 0, 2], weights)));
            picks.push(pick("tickets", [0, 1, 2], weights_of([0, 1, 2], weights)));
        }
        assert!(lottery_rule(&picks).is_err());
        // A candidate holding other than its weight fails at once.
        let bad = pick("tickets", [0, 1, 2], [1024, 1024, 1024]);
        assert!(lottery_rule(&[bad]).is_err());
    }

    fn weights_of(order: [usize; 3], weights: [u64; 3]) -> [u64; 3] {
        order.map(|task| weights[task])
    }
}
