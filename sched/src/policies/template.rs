//! The template of a policy: copy this file, rename it and the type, change
//! `NAME`, add one line to the `policies!` list in `policies/mod.rs`, and
//! `sched=NAME` (kernel) and `--sched NAME` (simulator) run it
//! (docs/policies.md).
//!
//! What it does: first come, first served, with a time slice: the task that
//! has waited longest runs next, for at most one slice while others wait,
//! and then goes to the back. That is round robin, the simplest policy
//! that shares the CPU; every method a policy may write is shown, the ones
//! it does not need with what their default does.

use alloc::collections::VecDeque;

use super::{EnqueueReason, Policy, PolicyContext, Registrable};
use crate::task::{Nanoseconds, TaskId, TaskParams};

/// First come, first served with a time slice.
#[derive(Debug)]
pub struct Template {
    /// The waiting tasks, the one that has waited longest first.
    queue: VecDeque<TaskId>,
}

impl Registrable for Template {
    /// The name on the command line: `sched=template`, `--sched template`.
    const NAME: &'static str = "template";
    /// What `cargo xtask policy-check` and `sched=` errors print beside it.
    const SUMMARY: &'static str =
        "first come, first served with a time slice: the template to copy";

    /// Called once per CPU when its run queue is built; `context` says how
    /// many task ids to expect, the slice, the tick and the CPU count.
    fn new(context: &PolicyContext) -> Self {
        Template {
            queue: VecDeque::with_capacity(context.max_tasks),
        }
    }
}

impl Policy for Template {
    /// A task is created here (Linux: `task_fork`, `sched_setattr`). A
    /// policy that weighs tasks reads `params` here (see `weight_of`).
    /// The default does nothing; this one needs nothing of the task.
    fn task_new(&mut self, _task: TaskId, _params: &TaskParams) {}

    /// A task becomes runnable (Linux: `enqueue_task`): a new task, a
    /// wake-up, a migration, or the running task put back with time left
    /// to run (`Requeued`). FIFO: it goes to the back, whatever the reason.
    fn enqueue(&mut self, task: TaskId, _now: Nanoseconds, _reason: EnqueueReason) {
        self.queue.push_back(task);
    }

    /// A task stops waiting (Linux: `dequeue_task`, and the pick taking
    /// the task out of the tree in `set_next_task`): it runs now, or it
    /// sleeps or moves to another CPU while it waited.
    fn dequeue(&mut self, task: TaskId, _now: Nanoseconds) {
        if let Some(position) = self.queue.iter().position(|&waiting| waiting == task) {
            self.queue.remove(position);
        }
    }

    /// Which waiting task runs next (Linux: `pick_next_task`). Do not take
    /// it out here: `dequeue` follows when it is switched in.
    fn pick(&mut self, _now: Nanoseconds) -> Option<TaskId> {
        self.queue.front().copied()
    }

    /// The running task stops after `ran_ns` (Linux: `put_prev_task`): a
    /// policy that charges tasks for their CPU time does it here (stride
    /// scheduling, a vruntime). FIFO charges nothing.
    fn put_prev(&mut self, _task: TaskId, _ran_ns: Nanoseconds, _now: Nanoseconds) {}

    /// The periodic tick (Linux: `task_tick`): true asks for a switch. Only
    /// honoured when another task waits. This is the default: one slice.
    fn tick(&mut self, _current: TaskId, ran_ns: Nanoseconds, context: &PolicyContext) -> bool {
        ran_ns >= context.slice_ns
    }

    /// A wake-up (Linux: `wakeup_preempt`): true switches to the woken task's
    /// turn now rather than at the end of the slice. FIFO lets it wait.
    fn wakeup_preempt(&mut self, _current: TaskId, _woken: TaskId, _now: Nanoseconds) -> bool {
        false
    }

    // Also available, with defaults: `task_dead`, `reserve_tasks` (grow
    // tables indexed by task id; `PerTask` does it), `set_next`,
    // `yield_task`, and `explain_pick` (what `--explain` prints of a pick:
    // by default each candidate; lottery.rs shows its tickets).
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> PolicyContext {
        PolicyContext {
            max_tasks: 8,
            slice_ns: 10,
            tick_ns: 10,
            nr_cpus: 1,
            cpu: 0,
        }
    }

    #[test]
    fn the_task_that_waited_longest_runs_first() {
        let mut policy = Template::new(&context());
        for task in [2, 0, 1] {
            policy.enqueue(TaskId(task), 0, EnqueueReason::New);
        }
        let mut order = alloc::vec::Vec::new();
        while let Some(task) = policy.pick(0) {
            policy.dequeue(task, 0);
            order.push(task.0);
        }
        assert_eq!(order, [2, 0, 1]);
    }

    #[test]
    fn a_sleeping_task_leaves_from_the_middle_and_comes_back_last() {
        let mut policy = Template::new(&context());
        for task in 0..3 {
            policy.enqueue(TaskId(task), 0, EnqueueReason::New);
        }
        policy.dequeue(TaskId(1), 5);
        policy.enqueue(TaskId(1), 6, EnqueueReason::Wakeup);
        assert_eq!(policy.queue, [TaskId(0), TaskId(2), TaskId(1)]);
    }

    #[test]
    fn the_slice_ends_after_slice_ns() {
        let mut policy = Template::new(&context());
        assert!(!policy.tick(TaskId(0), 9, &context()));
        assert!(policy.tick(TaskId(0), 10, &context()));
    }
}
