//! Lottery scheduling (Waldspurger and Weihl, "Lottery Scheduling: Flexible
//! Proportional-Share Resource Management", OSDI 1994).
//!
//! Each task holds tickets; each pick draws one ticket among the waiting
//! tasks' at random, and its holder runs for a slice. Over many slices a
//! task's share of the CPU tends to its share of the tickets, with the
//! binomial spread of random draws: after `n` picks among tasks always
//! runnable, a task holding the fraction `p` of the tickets has won
//! `n·p ± σ` of them, `σ = √(n·p·(1−p))`.
//!
//! Tickets are Linux's weights (`sched_prio_to_weight`, §1.1), so nice
//! values mean what they mean under CFS and EEVDF: nice −5 against nice 0
//! is 3121 : 1024 tickets, 75.30 % : 24.70 % of the CPU. The draw comes from
//! a generator seeded with a constant, so that a run repeats exactly.
//!
//! Left out of the paper: compensation tickets (a task that used a fraction
//! `f` of its slice holds `1/f` times its tickets until it next wins), so a
//! task that sleeps before its slice ends gets less than its share; ticket
//! transfers and currencies.

use alloc::vec::Vec;

use super::{
    CandidateNote, EnqueueReason, PerTask, Policy, PolicyContext, Registrable, Share, SplitMix64,
    weight_of,
};
use crate::task::{Nanoseconds, TaskId, TaskParams};

/// The generator's seed: the same on every CPU and every run.
const SEED: u64 = 0x1994_0b5e_55ed_0001;

/// Lottery scheduling with Linux's weights as tickets.
#[derive(Debug)]
pub struct Lottery {
    /// Each task's tickets, set when it is created.
    tickets: PerTask<u64>,
    /// The tasks waiting for the CPU (in no particular order).
    waiting: Vec<TaskId>,
    /// The sum of the waiting tasks' tickets.
    total: u64,
    random: SplitMix64,
}

impl Registrable for Lottery {
    const NAME: &'static str = "lottery";
    const SUMMARY: &'static str =
        "lottery scheduling (Waldspurger & Weihl 1994): a random ticket per pick, tickets = weight";

    /// Each slice's winner is a draw: a task's slices are a binomial count,
    /// within 4 σ of their share but for one time in 15,000.
    const SHARE: Share = Share::ByWeightRandom { sigmas: 4.0 };

    fn new(context: &PolicyContext) -> Self {
        Lottery {
            tickets: PerTask::new(context.max_tasks),
            waiting: Vec::with_capacity(context.max_tasks),
            total: 0,
            random: SplitMix64::new(SEED),
        }
    }
}

impl Lottery {
    /// The tickets `task` holds.
    pub fn tickets(&self, task: TaskId) -> u64 {
        self.tickets.get(task)
    }
}

impl Policy for Lottery {
    fn task_new(&mut self, task: TaskId, params: &TaskParams) {
        *self.tickets.get_mut(task) = weight_of(params);
    }

    fn reserve_tasks(&mut self, count: usize) {
        self.tickets.reserve(count);
        self.waiting.reserve(count.saturating_sub(self.waiting.len()));
    }

    fn enqueue(&mut self, task: TaskId, _now: Nanoseconds, _reason: EnqueueReason) {
        self.waiting.push(task);
        self.total += self.tickets.get(task);
    }

    fn dequeue(&mut self, task: TaskId, _now: Nanoseconds) {
        if let Some(position) = self.waiting.iter().position(|&waiting| waiting == task) {
            self.waiting.swap_remove(position);
            self.total -= self.tickets.get(task);
        }
    }

    /// Draws a ticket in `0..total` and walks the waiting tasks until the
    /// tickets counted pass it.
    fn pick(&mut self, _now: Nanoseconds) -> Option<TaskId> {
        if self.total == 0 {
            return self.waiting.first().copied();
        }
        let mut winner = self.random.below(self.total);
        for &task in &self.waiting {
            let tickets = self.tickets.get(task);
            if winner < tickets {
                return Some(task);
            }
            winner -= tickets;
        }
        self.waiting.last().copied()
    }

    fn explain_pick(
        &self,
        candidates: &[TaskId],
        _picked: TaskId,
        note: &mut dyn FnMut(CandidateNote),
    ) {
        for &task in candidates {
            note(CandidateNote {
                task,
                label: "tickets",
                value: Some(self.tickets.get(task)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Policy as TaskPolicy;

    fn context() -> PolicyContext {
        PolicyContext {
            max_tasks: 16,
            slice_ns: 4_000_000,
            tick_ns: 4_000_000,
            nr_cpus: 1,
            cpu: 0,
        }
    }

    fn with_nice(nices: &[i8]) -> Lottery {
        let mut lottery = Lottery::new(&context());
        for (index, &nice) in nices.iter().enumerate() {
            let task = TaskId(index as u16);
            let params = TaskParams {
                policy: TaskPolicy::Normal { nice },
                ..TaskParams::default()
            };
            lottery.task_new(task, &params);
            lottery.enqueue(task, 0, EnqueueReason::New);
        }
        lottery
    }

    /// `picks` picks among always-runnable tasks: how many each won.
    fn wins(lottery: &mut Lottery, tasks: usize, picks: u64) -> Vec<u64> {
        let mut wins = alloc::vec![0u64; tasks];
        for _ in 0..picks {
            let task = lottery.pick(0).unwrap();
            lottery.dequeue(task, 0);
            wins[task.index()] += 1;
            lottery.enqueue(task, 0, EnqueueReason::Requeued);
        }
        wins
    }

    /// Each task's wins lie within 4 σ of `n·p`, `p` its share of the
    /// tickets and `σ = √(n·p·(1−p))` (a draw is a Bernoulli trial, wins a
    /// binomial count; 4 σ is exceeded with probability below 1e-4 per
    /// task, and the seed is fixed, so the test does not flicker).
    fn assert_within_four_sigma(nices: &[i8], picks: u64) {
        let mut lottery = with_nice(nices);
        let total: u64 = (0..nices.len())
            .map(|t| lottery.tickets(TaskId(t as u16)))
            .sum();
        let wins = wins(&mut lottery, nices.len(), picks);
        for (task, &won) in wins.iter().enumerate() {
            let p = lottery.tickets(TaskId(task as u16)) as f64 / total as f64;
            let expected = picks as f64 * p;
            let sigma = libm_sqrt(picks as f64 * p * (1.0 - p));
            let deviation = (won as f64 - expected).abs();
            assert!(
                deviation <= 4.0 * sigma,
                "task {task} (nice {}): {won} wins, expected {expected:.0} ± 4×{sigma:.1}",
                nices[task]
            );
        }
    }

    /// √x by Newton's method (no `std` here).
    fn libm_sqrt(x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        let mut root = x;
        for _ in 0..64 {
            root = 0.5 * (root + x / root);
        }
        root
    }

    /// nice −5 : nice 0 is 3121 : 1024 tickets: 75.30 % : 24.70 %.
    #[test]
    fn two_tasks_share_by_their_tickets() {
        let lottery = with_nice(&[-5, 0]);
        assert_eq!(lottery.tickets(TaskId(0)), 3121);
        assert_eq!(lottery.tickets(TaskId(1)), 1024);
        assert_within_four_sigma(&[-5, 0], 100_000);
    }

    /// The mix of tests/scenarios/fairness-12-mixed-nice.json's nice levels.
    #[test]
    fn twelve_tasks_of_mixed_nice_share_by_their_tickets() {
        assert_within_four_sigma(&[-3, -3, -3, -3, 0, 0, 0, 0, 3, 3, 3, 3], 200_000);
    }

    #[test]
    fn runs_repeat_exactly() {
        let first = wins(&mut with_nice(&[0, 1, 2]), 3, 1000);
        let second = wins(&mut with_nice(&[0, 1, 2]), 3, 1000);
        assert_eq!(first, second);
    }

    #[test]
    fn only_waiting_tasks_win() {
        let mut lottery = with_nice(&[0, 0, 0]);
        lottery.dequeue(TaskId(1), 0);
        for _ in 0..100 {
            assert_ne!(lottery.pick(0), Some(TaskId(1)));
        }
        lottery.dequeue(TaskId(0), 0);
        lottery.dequeue(TaskId(2), 0);
        assert_eq!(lottery.pick(0), None);
        assert_eq!(lottery.total, 0);
    }
}
