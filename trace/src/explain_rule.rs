//! The rule an explained EEVDF pick states, checked from its printed
//! numbers alone (docs/linux-sched-reference.md §1.5): at each level of
//! the task-group hierarchy, from the CPU's queue down to the task chosen,
//! the entity chosen (the task, or the group entity above it) is a
//! candidate of that level and eligible (lag ≥ 0), with the earliest
//! virtual deadline of the level's eligible candidates, unless it was
//! running and RUN_TO_PARITY keeps it (eligible, its slice protected).
//!
//! The same module checks an explained round-robin pick ([`check_rr_pick`],
//! [`check_rr_rotation`]): the FIFO's head chosen, the running task rotated
//! to the tail.
//!
//! It reads only what explain prints, not the scheduler's state, so the
//! simulator's test (`sim/tests/explain.rs`) and the kernel's
//! (`cargo xtask trace-checks`, `kernel-explain-*`) hold both sides to the
//! same rule without trusting the code that made the pick.

use crate::explain::{Candidate, Competitor};

/// What one pick's check found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PickLevels {
    /// The levels from the CPU's queue to the task (1 without groups).
    pub levels: usize,
    /// Of those, the levels where RUN_TO_PARITY kept the running entity.
    pub kept: usize,
}

/// Checks one explained pick of `chosen` among `candidates` against EEVDF's
/// rule at every level; the error names the level and the candidates.
pub fn check_eevdf_pick(
    candidates: &[Candidate],
    chosen: Option<usize>,
) -> Result<PickLevels, String> {
    let chosen = chosen.ok_or("idle chosen with candidates")?;
    // The chosen task, then each group entity above it, by the queues the
    // candidates say they are on; the root's queue (`None`) ends it.
    let mut chain = vec![
        candidates
            .iter()
            .find(|c| c.who == Competitor::Task(chosen))
            .ok_or_else(|| format!("the chosen task {chosen} is not a candidate"))?,
    ];
    while let Some(group) = &chain[chain.len() - 1].queue {
        let above = candidates
            .iter()
            .find(|c| c.who == Competitor::Group(group.clone()))
            .ok_or_else(|| format!("group {group} is no candidate: {candidates:?}"))?;
        chain.push(above);
        if chain.len() > candidates.len() {
            return Err(format!("a loop of groups: {candidates:?}"));
        }
    }
    let mut found = PickLevels::default();
    for c in chain {
        found.levels += 1;
        let level = candidates.iter().filter(|o| o.queue == c.queue);
        // Deadlines against the level's V (vruntime + lag), so that
        // wrapped vruntimes compare.
        let v = c.vruntime.wrapping_add(c.lag as u64);
        let key = |deadline: u64| deadline.wrapping_sub(v) as i64;
        let earliest = level
            .filter(|o| o.eligible)
            .map(|o| key(o.deadline))
            .min()
            .ok_or_else(|| format!("no eligible candidate on {:?}'s queue", c.queue))?;
        if c.protected == Some(true) && c.eligible {
            found.kept += 1;
        } else if !c.eligible {
            return Err(format!("chose an ineligible {:?}: {candidates:?}", c.who));
        } else if key(c.deadline) != earliest {
            return Err(format!(
                "{:?} has not the earliest eligible deadline of its queue: {candidates:?}",
                c.who
            ));
        }
    }
    Ok(found)
}

/// Checks one explained round-robin pick (`sched=rr`,
/// `fairway_sched::round_robin`) from its printed numbers alone: the task
/// chosen is the FIFO's head, the first candidate; the task that was
/// running (the one candidate with the time it ran) was put back at the
/// tail, the last; and, when `slice_expiry_only` (a workload of tasks that
/// never sleep nor yield, and no RT task: the tick's slice expiry is then
/// the only way a runnable task leaves the CPU), it ran its whole slice.
/// Returns whether the pick rotated a task that was running.
pub fn check_rr_pick(
    candidates: &[crate::explain::RrCandidate],
    chosen: Option<usize>,
    slice: u64,
    slice_expiry_only: bool,
) -> Result<bool, String> {
    let head = candidates.first().ok_or("a pick without candidates")?;
    if chosen != Some(head.task) {
        return Err(format!(
            "chose {chosen:?}, the FIFO's head is {}",
            head.task
        ));
    }
    let running: Vec<usize> = (0..candidates.len())
        .filter(|&i| candidates[i].ran.is_some())
        .collect();
    match running[..] {
        [] => Ok(false),
        [at] if at + 1 != candidates.len() => Err(format!(
            "the task that was running is {} of {} in the FIFO, not at its tail",
            at + 1,
            candidates.len()
        )),
        [at] => match candidates[at].ran {
            Some(ran) if slice_expiry_only && ran < slice => Err(format!(
                "the task that was running was rotated after {ran} ns of its {slice} ns slice"
            )),
            _ => Ok(true),
        },
        _ => Err(format!("{} candidates were running", running.len())),
    }
}

/// Checks consecutive round-robin picks on one CPU, each
/// `(candidates, chosen)`, when no task arrives or leaves between them:
/// each pick's FIFO is the previous one's without its head, which went to
/// the tail when its slice expired (the FIFO rotates by one).
pub fn check_rr_rotation(
    before: &[crate::explain::RrCandidate],
    after: &[crate::explain::RrCandidate],
) -> Result<(), String> {
    let order = |c: &[crate::explain::RrCandidate]| c.iter().map(|c| c.task).collect::<Vec<_>>();
    let mut expected = order(before);
    expected.rotate_left(1);
    if order(after) != expected {
        return Err(format!(
            "the FIFO went from {:?} to {:?}, not rotated by one",
            order(before),
            order(after)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(who: Competitor, queue: Option<&str>, lag: i64, deadline: u64) -> Candidate {
        let v = 1_000_000u64;
        Candidate {
            who,
            queue: queue.map(String::from),
            vruntime: v.wrapping_sub(lag as u64),
            deadline,
            lag,
            eligible: lag >= 0,
            protected: None,
        }
    }

    #[test]
    fn the_rule_holds_at_each_level_and_fails_where_it_is_broken() {
        use Competitor::{Group, Task};
        // Root: task 0 and group /a; /a: tasks 1 and 2.
        let mut picks = vec![
            candidate(Task(0), None, 10, 1_500_000),
            candidate(Group("/a".into()), None, 5, 1_400_000),
            candidate(Task(1), Some("/a"), 0, 1_300_000),
            candidate(Task(2), Some("/a"), -5, 1_100_000),
        ];
        assert_eq!(
            check_eevdf_pick(&picks, Some(1)),
            Ok(PickLevels { levels: 2, kept: 0 })
        );
        // Task 2 has the earlier deadline but is not eligible.
        assert!(check_eevdf_pick(&picks, Some(2)).is_err());
        // Task 0 loses to /a's earlier deadline at the root...
        assert!(check_eevdf_pick(&picks, Some(0)).is_err());
        // ...unless it was running with its slice protected.
        picks[0].protected = Some(true);
        assert_eq!(
            check_eevdf_pick(&picks, Some(0)),
            Ok(PickLevels { levels: 1, kept: 1 })
        );
        // A group entity missing from the candidates.
        picks.remove(1);
        assert!(check_eevdf_pick(&picks, Some(1)).is_err());
        assert!(check_eevdf_pick(&picks, None).is_err());
    }
}
