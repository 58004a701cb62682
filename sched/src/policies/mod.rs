//! Policies in one file each: a scheduler written by a student or a
//! researcher, run in the kernel (`sched=NAME`) and in the simulator
//! (`--sched NAME`), explained (`--explain`), graded (`cargo xtask
//! policy-check NAME`) and compared with Linux's (`cargo xtask
//! compare-policies`). docs/policies.md walks through writing one.
//!
//! A policy implements [`Policy`]: it keeps the tasks that wait for the CPU
//! and says which runs next. Every method but [`Policy::enqueue`],
//! [`Policy::dequeue`] and [`Policy::pick`] has a default. The mechanism's
//! side of Linux's `sched_class` (which task runs, slices measured from the
//! tick, the running task put back, task groups accepted and ignored) is
//! done once, for every policy, by [`PolicyClass`], which sits in the fair
//! slot of the class stack (RT above it, idle below) like round robin.
//!
//! A policy is registered by one line of the [`policies!`] invocation below,
//! which declares its module and puts it in [`REGISTERED`], the table the
//! command line's `sched=` reads after the built-in names (`eevdf`, `cfs`,
//! `rr`). The built-ins are not in it: they keep their statically dispatched
//! run queues; a registered policy is called through a `Box<dyn Policy>`,
//! which costs the built-ins nothing.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::task::{Nanoseconds, Policy as TaskPolicy, TaskId, TaskParams};

mod adapter;
pub mod grader;
pub use adapter::PolicyClass;
pub use grader::Share;

/// Declares each policy's module and lists it in [`REGISTERED`]: one line
/// per policy, `module::Type`, where `Type` implements [`Registrable`].
macro_rules! policies {
    ($($module:ident :: $policy:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every registered policy, in the order `sched=` lists them.
        pub static REGISTERED: &[Registered] = &[
            $(Registered {
                name: <$module::$policy as Registrable>::NAME,
                summary: <$module::$policy as Registrable>::SUMMARY,
                share: <$module::$policy as Registrable>::SHARE,
                build: |context| Box::new(<$module::$policy as Registrable>::new(context)),
            },)*
        ];
    };
}

// The registered policies: one line each.
policies! {
    template::Template,
    lottery::Lottery,
    stride::Stride,
}

/// What a policy learns of the run queue it serves, when it is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyContext {
    /// Task ids below this are known when the run queue is built (more
    /// may come: see [`Policy::reserve_tasks`]).
    pub max_tasks: usize,
    /// The time slice (`slice_us=`, 4 ms by default): what the default
    /// [`Policy::tick`] lets a task run while others wait.
    pub slice_ns: Nanoseconds,
    /// The tick period (`hz=`): the finest a slice is measured without
    /// `hrtick=1`.
    pub tick_ns: Nanoseconds,
    /// How many CPUs the machine has (each has its own run queue and its
    /// own instance of the policy).
    pub nr_cpus: usize,
    /// The CPU whose run queue this instance serves (`0..nr_cpus`), filled
    /// in per CPU when the run queue is built
    /// ([`PolicyKind::for_cpu`](crate::run_queue::PolicyKind::for_cpu)).
    pub cpu: usize,
}

/// Why a task joins the tasks waiting for the CPU ([`Policy::enqueue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueReason {
    /// It was just created (Linux's `ENQUEUE_INITIAL`).
    New,
    /// It woke up from a sleep (`ENQUEUE_WAKEUP`).
    Wakeup,
    /// It arrives from another CPU (`ENQUEUE_MIGRATED`).
    Migrated,
    /// It was running and still wants the CPU: its slice ended, it
    /// yielded, or another task preempted it (Linux's `put_prev_task`).
    Requeued,
}

/// One candidate of a pick as explain mode prints it: the task and the
/// number the policy decided by (`None`: the policy gives none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CandidateNote {
    /// The task.
    pub task: TaskId,
    /// What `value` is ("tickets", "pass", ...).
    pub label: &'static str,
    /// The number the pick compared.
    pub value: Option<u64>,
}

/// A scheduling policy: one CPU's decisions over the tasks that wait for
/// it. Only [`enqueue`](Policy::enqueue), [`dequeue`](Policy::dequeue) and
/// [`pick`](Policy::pick) are required.
///
/// A policy sees the *waiting* tasks only: a task is enqueued when it
/// becomes runnable (or when it stops running and is still runnable) and
/// dequeued when it is chosen to run or goes to sleep while waiting. The
/// running task is not among them (Linux keeps it queued; [`PolicyClass`]
/// does that bookkeeping for every policy).
pub trait Policy: Send {
    /// A task is created on (or migrates to) this CPU: read what the policy
    /// needs of its parameters (its nice value, [`nice_of`]).
    fn task_new(&mut self, task: TaskId, params: &TaskParams) {
        let _ = (task, params);
    }

    /// A task exits (it is not waiting): forget it.
    fn task_dead(&mut self, task: TaskId) {
        let _ = task;
    }

    /// Task ids below `count` may come from now on: grow the tables indexed
    /// by task id (task creation calls it, so that no pick allocates).
    fn reserve_tasks(&mut self, count: usize) {
        let _ = count;
    }

    /// `task` joins the waiting tasks, for `reason`, at `now`.
    fn enqueue(&mut self, task: TaskId, now: Nanoseconds, reason: EnqueueReason);

    /// `task` leaves the waiting tasks: it runs now (after the pick chose
    /// it) or it sleeps or migrates while waiting.
    fn dequeue(&mut self, task: TaskId, now: Nanoseconds);

    /// The waiting task that runs next; `None` only when none waits. The
    /// mechanism asks once per decision (a second call before the task runs
    /// gets the first answer), so a pick may draw a random number.
    fn pick(&mut self, now: Nanoseconds) -> Option<TaskId>;

    /// `task` starts running (Linux's `set_next_task`), after its dequeue.
    fn set_next(&mut self, task: TaskId, now: Nanoseconds) {
        let _ = (task, now);
    }

    /// `task` stops running after `ran_ns` of CPU time (Linux's
    /// `put_prev_task`): charge it here. If it is still runnable, an
    /// [`enqueue`](Policy::enqueue) with [`EnqueueReason::Requeued`] follows.
    fn put_prev(&mut self, task: TaskId, ran_ns: Nanoseconds, now: Nanoseconds) {
        let _ = (task, ran_ns, now);
    }

    /// The periodic tick while `current` runs, `ran_ns` into its slice:
    /// whether it should give the CPU up (Linux's `task_tick` and
    /// `resched_curr`). Nothing is preempted while no task waits. The
    /// default ends the slice after `context.slice_ns`, as round robin does.
    fn tick(&mut self, current: TaskId, ran_ns: Nanoseconds, context: &PolicyContext) -> bool {
        let _ = current;
        ran_ns >= context.slice_ns
    }

    /// Whether `woken`, just enqueued, should preempt the running `current`
    /// at once (Linux's `wakeup_preempt`). Default: no, it waits its turn.
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> bool {
        let _ = (current, woken, now);
        false
    }

    /// The running `task` gives the CPU up (`sched_yield`); a pick follows
    /// with `task` requeued. Default: nothing more.
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        let _ = (task, now);
    }

    /// Explain mode: the candidates of the pick that just chose `picked`
    /// (`candidates` holds it and the tasks still waiting), each with the
    /// number the pick compared. The default lists them without a number.
    fn explain_pick(
        &self,
        candidates: &[TaskId],
        picked: TaskId,
        note: &mut dyn FnMut(CandidateNote),
    ) {
        let _ = picked;
        for &task in candidates {
            note(CandidateNote {
                task,
                label: "waiting",
                value: None,
            });
        }
    }
}

/// What registering a policy needs besides [`Policy`]: its name on the
/// command line, one line saying what it does, and how it is built.
pub trait Registrable: Policy + Sized + 'static {
    /// The name `sched=` and `--sched` take (lowercase, no spaces).
    const NAME: &'static str;
    /// One line: what the policy does and where it comes from.
    const SUMMARY: &'static str;
    /// The share of the CPU it promises CPU-bound tasks, which the grader
    /// checks (`cargo xtask policy-check`). Default: the same for each,
    /// within a slice, as round robin gives.
    const SHARE: Share = Share::Equal { within_slices: 1.0 };
    /// The policy of one CPU's run queue.
    fn new(context: &PolicyContext) -> Self;
}

/// A registered policy: what `sched=` finds by name.
#[derive(Debug)]
pub struct Registered {
    /// The name `sched=` takes.
    pub name: &'static str,
    /// One line: what it does.
    pub summary: &'static str,
    /// The share it promises ([`Registrable::SHARE`]).
    pub share: Share,
    /// Builds one CPU's instance.
    pub build: fn(&PolicyContext) -> Box<dyn Policy>,
}

/// A registered policy by its place in [`REGISTERED`]: a small copyable
/// value that boot options and run-queue kinds carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyId(u8);

impl PolicyId {
    /// The registered policy called `name`.
    pub fn find(name: &str) -> Option<PolicyId> {
        REGISTERED
            .iter()
            .position(|registered| registered.name == name)
            .map(|index| PolicyId(index as u8))
    }

    /// Every registered policy's id, in registration order.
    pub fn all() -> impl Iterator<Item = PolicyId> {
        (0..REGISTERED.len()).map(|index| PolicyId(index as u8))
    }

    /// Its entry in [`REGISTERED`].
    pub fn registered(self) -> &'static Registered {
        &REGISTERED[usize::from(self.0)]
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.registered().name
    }

    /// Its place in [`REGISTERED`]: what explain mode's records carry
    /// (docs/tracing.md, "Explain mode").
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The registered policy at `index` in [`REGISTERED`], if any.
    pub fn from_index(index: usize) -> Option<PolicyId> {
        (index < REGISTERED.len()).then_some(PolicyId(index as u8))
    }
}

/// The nice value a policy reads from a task's parameters: `SCHED_NORMAL`'s
/// and `SCHED_BATCH`'s own, 19 for `SCHED_IDLE` (the lowest), 0 for a
/// real-time task (which never reaches a policy in the fair slot).
pub fn nice_of(params: &TaskParams) -> i8 {
    match params.policy {
        TaskPolicy::Normal { nice } | TaskPolicy::Batch { nice } => nice,
        TaskPolicy::Idle => 19,
        TaskPolicy::Fifo { .. } | TaskPolicy::RoundRobin { .. } => 0,
    }
}

/// The weight of `params`' task in Linux's table (`sched_prio_to_weight`,
/// §1.1: nice 0 is 1024, each nice level about 1.25×), `SCHED_IDLE`'s 3:
/// what a policy that shares the CPU in proportion uses.
pub fn weight_of(params: &TaskParams) -> u64 {
    match params.policy {
        TaskPolicy::Idle => crate::weight::WEIGHT_IDLEPRIO,
        _ => u64::from(crate::weight::PRIO_TO_WEIGHT[(nice_of(params) as i32 + 20) as usize]),
    }
}

/// A table indexed by task id that grows on demand: the per-task state of
/// a policy, sized by [`Policy::reserve_tasks`].
#[derive(Clone, Debug, Default)]
pub struct PerTask<T> {
    slots: Vec<T>,
}

impl<T: Clone + Default> PerTask<T> {
    /// A table for task ids below `count`.
    pub fn new(count: usize) -> Self {
        let mut table = PerTask { slots: Vec::new() };
        table.reserve(count);
        table
    }

    /// Makes room for task ids below `count`.
    pub fn reserve(&mut self, count: usize) {
        crate::task::grow_table(&mut self.slots, count, T::default());
    }

    /// `task`'s entry (a default one for a task beyond the table).
    pub fn get(&self, task: TaskId) -> T {
        self.slots.get(task.index()).cloned().unwrap_or_default()
    }

    /// `task`'s entry to change, the table grown if it must be (task
    /// creation reserves first, so a pick never grows it).
    pub fn get_mut(&mut self, task: TaskId) -> &mut T {
        if task.index() >= self.slots.len() {
            self.reserve(task.index() + 1);
        }
        &mut self.slots[task.index()]
    }
}

/// splitmix64 (Steele, Lea and Flood 2014): a deterministic generator of
/// well-mixed 64-bit numbers without `std`, so that a randomised policy's
/// runs repeat exactly from their seed.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started at `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0), by Lemire's multiply-shift,
    /// whose bias is below `bound / 2^64`.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests;
