//! Explain mode in the kernel (`explain=N`): its explained picks held to
//! EEVDF's rule (or round robin's FIFO) and printed as the simulator prints
//! its own.

use std::path::Path;

use super::kernel::{boot, icount_config};
use crate::run::board::workspace_root;

/// A kernel run whose explained picks are held to EEVDF's rule.
pub(super) struct ExplainCase {
    /// The check's name.
    pub(super) name: &'static str,
    /// The scenario, under `tests/scenarios/`.
    scenario: &'static str,
    /// CPUs.
    cpus: u32,
    /// Its task groups: picks descend through them.
    groups: bool,
    /// `sched=` (`None`: the default EEVDF): `rr` or a registered policy.
    sched: Option<&'static str>,
}

/// The explain-mode runs (`explain=N`, the runner's `--explain`). Each is
/// also a simulator test in `sim/tests/explain.rs`:
/// `explain-eevdf-2cpus.json`, four pinned hogs of different nice values
/// and two periodic tasks free to move, one queue per CPU;
/// `explain-groups-eevdf.json`, one CPU with a hog beside groups /a (with
/// /a/b inside) and /c of different shares, and a periodic task waking
/// into /a/b; `explain-rr-1cpu.json` under round robin
/// (`sim/tests/explain_rr.rs`), three tasks that never sleep on one CPU;
/// and `explain-stride-1cpu.json` under the registered stride and lottery
/// policies (`sim/tests/explain_policies.rs`), three such tasks of nice
/// −3, 0 and 3.
pub(super) const EXPLAIN_CASES: [ExplainCase; 5] = [
    ExplainCase {
        name: "kernel-explain-eevdf",
        scenario: "explain-eevdf-2cpus.json",
        cpus: 2,
        groups: false,
        sched: None,
    },
    ExplainCase {
        name: "kernel-explain-groups",
        scenario: "explain-groups-eevdf.json",
        cpus: 1,
        groups: true,
        sched: None,
    },
    ExplainCase {
        name: "kernel-explain-rr",
        scenario: "explain-rr-1cpu.json",
        cpus: 1,
        groups: false,
        sched: Some("rr"),
    },
    ExplainCase {
        name: "kernel-explain-stride",
        scenario: "explain-stride-1cpu.json",
        cpus: 1,
        groups: false,
        sched: Some("stride"),
    },
    ExplainCase {
        name: "kernel-explain-lottery",
        scenario: "explain-stride-1cpu.json",
        cpus: 1,
        groups: false,
        sched: Some("lottery"),
    },
];

/// Every pick the kernel explains follows the rule its header states,
/// checked level by level from the candidates' numbers alone
/// (`fairway_trace::explain_rule`, §1.5): at each level from the CPU's
/// queue down to the task, the running entity while it is eligible and
/// RUN_TO_PARITY protects its slice, else the eligible candidate with the
/// earliest virtual deadline. Enough picks must be explained that both
/// branches were taken and, with groups, that picks reached the deepest
/// group.
pub(super) fn kernel_explain(kernel: &Path, case: &ExplainCase) -> Result<String, String> {
    use crate::run::kernel_trace::Decision;
    use fairway_trace::explain_rule::check_eevdf_pick;
    let append = match case.sched {
        Some(sched) => format!("trace_records=200000 explain=3000 sched={sched}"),
        None => "trace_records=200000 explain=3000".to_string(),
    };
    let mut config = icount_config("qemu-virt", case.cpus, &append)?;
    let scenario = workspace_root().join("tests/scenarios").join(case.scenario);
    config.scenario = Some(scenario.clone());
    config.load_scenario()?;
    let lines = boot(kernel, &config)?;
    let explained = crate::run::kernel_trace::explained(&lines)?
        .ok_or("the kernel printed no explain records")?;
    match case.sched {
        Some("rr") => return kernel_explain_rr(&explained),
        Some(policy) => {
            return super::explain_policy::kernel_explain_policy(&explained, policy, &scenario);
        }
        None => {}
    }
    let (mut picks, mut levels_checked, mut kept, mut wakes) = (0, 0, 0, 0);
    let (mut deepest, mut deep) = (0, 0);
    for decision in &explained.decisions {
        match decision {
            Decision::Pick {
                time_ns,
                eevdf,
                candidates,
                chosen,
                ..
            } => {
                picks += 1;
                let at = format!("the pick at {time_ns} ns");
                if !eevdf {
                    return Err(format!("{at} is not EEVDF's"));
                }
                if !case.groups && candidates.iter().any(|c| c.queue.is_some()) {
                    return Err(format!("{at} has a group's candidate without groups"));
                }
                let found = check_eevdf_pick(candidates, *chosen)
                    .map_err(|error| format!("{at} breaks its rule: {error}"))?;
                kept += found.kept;
                levels_checked += found.levels;
                if found.levels > deepest {
                    (deepest, deep) = (found.levels, 0);
                }
                deep += usize::from(found.levels == deepest);
            }
            Decision::Wake { cpus, .. } => {
                wakes += 1;
                if cpus.len() != case.cpus as usize {
                    return Err(format!(
                        "a wake-up shows {} CPUs of {}",
                        cpus.len(),
                        case.cpus
                    ));
                }
            }
            Decision::Frequency { .. } => return Err("a frequency change on qemu-virt".into()),
            Decision::Throttle { .. } => return Err("a throttle without cpu.max".into()),
            Decision::RrPick { .. } => return Err("a round-robin pick under EEVDF".into()),
            Decision::PolicyPick { .. } => {
                return Err("a registered policy's pick under EEVDF".into());
            }
        }
    }
    // About 500 picks are explained in each run; /a/b is three levels
    // below the CPU's queue; a wake-up has a placement to explain only
    // with more than one CPU.
    let levels = if case.groups { 3 } else { 1 };
    if picks < 250
        || kept == 0
        || kept == levels_checked
        || (wakes == 0 && case.cpus > 1)
        || deepest != levels
    {
        return Err(format!(
            "{picks} picks ({kept} of {levels_checked} levels kept by RUN_TO_PARITY), \
             {wakes} wake-ups, {deepest} levels at most"
        ));
    }
    Ok(format!(
        "{picks} explained EEVDF picks follow the rule at each of their levels \
         ({deep} down {levels} levels; {kept} of {levels_checked} levels kept by RUN_TO_PARITY), {wakes} wake-ups, \
         {} lines as the simulator prints them",
        explained.lines().len()
    ))
}

/// Every round-robin pick the kernel explains follows round robin's rule,
/// from the printed numbers alone (`fairway_trace::explain_rule`): the task
/// chosen is the FIFO's head, the task that was running is at the tail
/// having spent its slice (the scenario's tasks never sleep, and the
/// kernel's own tasks sleep rather than being rotated), and between two
/// rotations among the same tasks the FIFO turns by one. The scenario's
/// three tasks share the CPU for 1 s: a rotation at most every 4 ms slice,
/// at least every second tick (a slice that starts just after a tick ends
/// at the tick after next).
fn kernel_explain_rr(explained: &crate::run::kernel_trace::Explained) -> Result<String, String> {
    use crate::run::kernel_trace::Decision;
    use fairway_trace::explain_rule::{check_rr_pick, check_rr_rotation};
    let mut rotations: Vec<&[fairway_trace::explain::RrCandidate]> = Vec::new();
    let (mut picks, mut turns) = (0, 0);
    for decision in &explained.decisions {
        let Decision::RrPick {
            time_ns,
            slice,
            candidates,
            chosen,
            ..
        } = decision
        else {
            return Err(format!(
                "a decision other than a round-robin pick: {decision:?}"
            ));
        };
        picks += 1;
        if *slice != fairway_sched::round_robin::DEFAULT_SLICE_NS {
            return Err(format!("the pick at {time_ns} ns has a {slice} ns slice"));
        }
        if check_rr_pick(candidates, *chosen, *slice, true)
            .map_err(|e| format!("the pick at {time_ns} ns: {e}"))?
        {
            let same_tasks = |c: &[fairway_trace::explain::RrCandidate]| {
                let mut tasks: Vec<usize> = c.iter().map(|c| c.task).collect();
                tasks.sort_unstable();
                tasks
            };
            if let Some(before) = rotations.last()
                && same_tasks(before) == same_tasks(candidates)
            {
                check_rr_rotation(before, candidates)
                    .map_err(|e| format!("the pick at {time_ns} ns: {e}"))?;
                turns += 1;
            }
            rotations.push(candidates);
        }
    }
    // 1 s of 4 ms ticks: between 125 (every second tick) and 250 rotations.
    if !(120..=250).contains(&rotations.len()) || turns < 100 {
        return Err(format!(
            "{picks} picks explained, {} rotations, {turns} turns of the FIFO by one",
            rotations.len()
        ));
    }
    Ok(format!(
        "{picks} explained round-robin picks took the FIFO's head; {} rotated a task whose slice \
         had expired, {turns} turned the FIFO by one; {} lines as the simulator prints them",
        rotations.len(),
        explained.lines().len()
    ))
}
