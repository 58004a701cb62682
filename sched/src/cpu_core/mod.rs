//! One CPU's scheduler driver: Linux's `core.c` decisions, written once for the
//! kernel and the host simulator (docs/core-driver.md).
//!
//! A [`CpuCore`] owns the CPU's [`RunQueue`], the task it runs, its
//! `cfs_tasks` list and whether slices end on a high-resolution timer. Time and
//! events come in; decisions come out as values:
//!
//! ```text
//!   mechanism (kernel / simulator)          CpuCore
//!   ------------------------------          -------
//!   wake-up (local half)       ---------->  try_to_wake_up  -> Decision { resched, hrtick }
//!   new task                   ---------->  wake_up_new_task -> Decision
//!   schedule() at `now`        ---------->  schedule        -> Switch { previous, next, hrtick }
//!   tick / slice-end timer     ---------->  sched_tick / hrtick -> Decision
//!   balancing moves a task     ---------->  dequeue_task, migrate_task_out / _in
//!   carry out: switch, IPI, timer  <------
//! ```
//!
//! The mechanisms keep what only they can do: the kernel its locks, IPIs,
//! hrtimer queue, context switch and stacks; the simulator its virtual clock
//! and event queue. Neither decides what to run, whether to preempt or when a
//! slice ends.
//!
//! Every call can be recorded ([`CpuCore::start_recording`]) with its inputs
//! and its decision ([`record`]), so that the simulator can replay a kernel
//! run through its own cores and check each decision.

mod cfs_tasks;
mod placement;
pub mod record;
mod state;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;

pub use cfs_tasks::CfsTasks;

/// Where a waking task goes ([`CpuCore::select_task_rq`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakePlacement {
    /// The CPU.
    pub cpu: CpuId,
    /// The counter's difference across `find_energy_efficient_cpu`, when it
    /// ran and a cost counter is set (instructions under QEMU icount).
    pub feec_cost: Option<u64>,
    /// What `find_energy_efficient_cpu` did for this wake-up.
    pub feec: FeecOutcome,
}

/// Whether `find_energy_efficient_cpu` placed a waking task (§5.4, §5.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeecOutcome {
    /// EAS is off, or the root domain is overutilized (Linux's rule).
    NotRun,
    /// It chose the CPU.
    Placed,
    /// It ran but had no say (no CPU fits while overutilized, the 2024 RFC's
    /// −1; or no domain spans the CPUs): the wake-up path chose.
    Declined,
}
use record::{Input, Output, Record};

use crate::bandwidth::pools::{
    AnswerTape, BandwidthPools, BandwidthTimer, PoolMismatch, PoolSource, SharedAnswerTape,
};
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::fair::GroupError;
use crate::run_queue::{RunQueue, TaskMigration, dispatch};
use crate::stats::probe::{CounterRead, ProbeCosts};
use crate::task::{CpuId, GroupId, Nanoseconds, ParamError, TaskId, TaskParams};

/// What becomes of the running task at `__schedule` (its `prev->__state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaving {
    /// Still runnable: preempted or yielding (`TASK_RUNNING`).
    Runnable,
    /// Blocks: `deactivate_task(.., DEQUEUE_SLEEP)`.
    Sleeping,
    /// Exits: dequeued as a sleep (Linux's `do_task_dead`) and forgotten
    /// (`task_dead`).
    Dead,
}

/// What the mechanism does with the CPU's slice-end timer (Linux's `hrtick`).
#[must_use = "a timer request must be carried out by the mechanism"]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimerRequest {
    /// Leave it as it is (hrtick off, or nothing changed).
    #[default]
    Keep,
    /// Arm (or re-arm) it for this time, in ns.
    Arm(Nanoseconds),
    /// Stop it: nothing would preempt the running task.
    Cancel,
}

/// A decision at a wake-up, a tick or a timer.
#[must_use = "a decision must be carried out by the mechanism"]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// The running task must give up the CPU (`resched_curr`): the mechanism
    /// calls `schedule()` on that CPU (through an IPI if it is another).
    pub resched: bool,
    /// The slice-end timer.
    pub hrtick: TimerRequest,
}

/// The decision of `__schedule`.
#[must_use = "a switch must be carried out by the mechanism"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The task that ran (`None`: idle).
    pub previous: Option<TaskId>,
    /// The task to run (`None`: idle).
    pub next: Option<TaskId>,
    /// The slice-end timer for `next`.
    pub hrtick: TimerRequest,
}

/// The counts the last calls spent in the run queue's hot operations, when a
/// counter is set ([`CpuCore::set_cost_counter`]): each bracket holds the
/// run-queue operation alone, as the kernel's cost counters define it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCosts {
    /// `enqueue_task`.
    pub enqueue: Option<u64>,
    /// `dequeue_task`.
    pub dequeue: Option<u64>,
    /// `pick_next_task` with `set_next_task` (or `set_next_task_idle`).
    pub pick: Option<u64>,
    /// The PELT and uclamp probes inside `enqueue_task`.
    pub enqueue_internal: ProbeCosts,
    /// The PELT and uclamp probes inside `dequeue_task`.
    pub dequeue_internal: ProbeCosts,
    /// The PELT and uclamp probes outside those two: the group levels a
    /// switch puts back and sets (`put_prev_task`, `set_next_task`), the
    /// tick, blocked-load decay, migrations.
    pub other_internal: ProbeCosts,
}

impl Switch {
    /// Whether the CPU now idles, so that newly-idle balancing should try to
    /// pull work (Linux's `sched_balance_newidle` when `__schedule` finds
    /// nothing to run).
    pub fn newidle_balance(&self) -> bool {
        self.next.is_none()
    }
}

/// Where the records of a run go.
#[derive(Debug)]
struct Recording {
    records: Vec<Record>,
    /// The global order of records across CPUs (the kernel's counter).
    sequence: fn() -> u64,
    /// Records that did not fit.
    dropped: u64,
}

impl Recording {
    /// Appends a record, numbered now, if there is room (never allocates).
    fn push(&mut self, cpu: u16, now: Nanoseconds, input: Input, output: Output) {
        if self.records.len() == self.records.capacity() {
            self.dropped += 1;
            return;
        }
        self.records.push(Record {
            sequence: (self.sequence)(),
            cpu,
            now,
            input,
            output,
        });
    }
}

/// One CPU's scheduler driver: its run queue, of the policy chosen at boot,
/// and the driver's own state. Each call dispatches once on the policy; the
/// decision is then taken by code compiled for that policy alone
/// (`CoreState`'s methods over [`RunQueueOf`](crate::run_queue::RunQueueOf)).
#[derive(Debug)]
pub struct CpuCore {
    run_queue: RunQueue,
    state: CoreState,
}

/// The driver's state besides the run queue: the running task, `cfs_tasks`,
/// the hrtick setting, the record and the cost counter.
#[derive(Debug)]
struct CoreState {
    cpu: u16,
    current: Option<TaskId>,
    cfs_tasks: CfsTasks,
    hrtick_enabled: bool,
    recording: Option<Recording>,
    cost_counter: Option<CounterRead>,
    op_costs: OpCosts,
    /// The pool answers of a recording run queue, shared with its link to
    /// the pools (attached while recording).
    pool_tape: Option<alloc::sync::Arc<SharedAnswerTape>>,
}

impl CpuCore {
    /// The driver of CPU `cpu` around `run_queue`, idle, for task ids below
    /// `max_tasks`; `hrtick`: slices end on a high-resolution timer.
    pub fn new(cpu: u16, run_queue: RunQueue, max_tasks: usize, hrtick: bool) -> Self {
        CpuCore {
            run_queue,
            state: CoreState {
                cpu,
                current: None,
                cfs_tasks: CfsTasks::new(max_tasks),
                hrtick_enabled: hrtick,
                recording: None,
                cost_counter: None,
                op_costs: OpCosts::default(),
                pool_tape: None,
            },
        }
    }

    /// Makes room for task ids below `count` in every table this CPU
    /// indexes by task id: the mechanism calls it on each CPU when it
    /// creates a task, before the task can be queued anywhere, so that the
    /// hot paths (a wake-up may migrate the task to any CPU) never allocate.
    /// Not recorded: a replay builds its cores for all its tasks.
    pub fn reserve_tasks(&mut self, count: usize) {
        self.run_queue.reserve_tasks(count);
        self.state.cfs_tasks.reserve_tasks(count);
    }

    /// The heap this CPU's tables indexed by task id take (what
    /// [`CpuCore::reserve_tasks`] grows).
    pub fn task_storage_bytes(&self) -> usize {
        self.run_queue.task_storage_bytes() + self.state.cfs_tasks.storage_bytes()
    }

    /// The CPU this core drives.
    pub fn cpu(&self) -> u16 {
        self.state.cpu
    }

    /// The run queue, to read.
    pub fn run_queue(&self) -> &RunQueue {
        &self.run_queue
    }

    /// The run queue, for set-up and measurement hooks only: a change made
    /// here is not recorded, so a replay would not see it.
    pub fn run_queue_mut(&mut self) -> &mut RunQueue {
        &mut self.run_queue
    }

    /// The running task (`None`: idle).
    pub fn current(&self) -> Option<TaskId> {
        self.state.current
    }

    /// The queued tasks in the order they last ran (`rq->cfs_tasks`).
    pub fn cfs_tasks(&self) -> &CfsTasks {
        &self.state.cfs_tasks
    }

    /// Measures the hot operations with `counter` (the kernel's cycle
    /// counter), and the run queue's PELT and uclamp probes with it.
    pub fn set_cost_counter(&mut self, counter: Option<CounterRead>) {
        self.state.cost_counter = counter;
        self.run_queue.set_cost_counter(counter);
    }

    /// The counts of the hot operations since the last call.
    pub fn take_op_costs(&mut self) -> OpCosts {
        let outside = self.run_queue.take_internal_costs();
        self.state.op_costs.other_internal.add(outside);
        core::mem::take(&mut self.state.op_costs)
    }

    /// Records the next `capacity` calls (allocates their room now), each
    /// numbered by `sequence`.
    pub fn start_recording(&mut self, capacity: usize, sequence: fn() -> u64) {
        self.state.recording = Some(Recording {
            records: Vec::with_capacity(capacity),
            sequence,
            dropped: 0,
        });
    }

    /// The records so far and how many did not fit.
    pub fn records(&self) -> (&[Record], u64) {
        self.state
            .recording
            .as_ref()
            .map_or((&[], 0), |r| (r.records.as_slice(), r.dropped))
    }

    /// Stops recording and hands over the records and how many did not fit.
    pub fn take_records(&mut self) -> (Vec<Record>, u64) {
        self.state
            .recording
            .take()
            .map_or((Vec::new(), 0), |r| (r.records, r.dropped))
    }

    /// A new task (`sched_fork` and `wake_up_new_task`): made known with its
    /// parameters, queued, and tested against the running task.
    pub fn wake_up_new_task(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<Decision, ParamError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.wake_up_new_task(rq, task, params, now))
    }

    /// The local half of a wake-up (`ttwu_do_activate`): the task is queued
    /// here and tested against the running task.
    #[inline]
    pub fn try_to_wake_up(&mut self, task: TaskId, now: Nanoseconds, migrated: bool) -> Decision {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.try_to_wake_up(rq, task, now, migrated))
    }

    /// A task that moved here from another CPU (load balancing's
    /// `attach_task`): queued and tested against the running task.
    pub fn attach_task(&mut self, task: TaskId, now: Nanoseconds) -> Decision {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.attach_task(rq, task, now))
    }

    /// Queues `task` with no preemption test (a task put back where it was).
    pub fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.enqueue_task(rq, task, now, flags))
    }

    /// Takes a queued task off this run queue outside `__schedule` (it leaves
    /// for another CPU, or stops while it is not running). The running task
    /// stops running too: the CPU runs nothing until the next `schedule`.
    pub fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.dequeue_task(rq, task, now, flags))
    }

    /// Linux's `__schedule`: the running task leaves as `leaving` says
    /// (dequeued if it blocks or exits, `put_prev_task` in any case), the next
    /// is picked and set running (or the idle class's `set_next_task_idle`),
    /// and the slice-end timer follows the new task.
    #[inline]
    pub fn schedule(&mut self, now: Nanoseconds, leaving: Leaving) -> Switch {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.schedule(rq, now, leaving))
    }

    /// The periodic tick (`sched_tick`): the running task is charged and its
    /// class says whether its slice is over.
    pub fn sched_tick(&mut self, now: Nanoseconds) -> Decision {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.sched_tick(rq, now))
    }

    /// The slice-end timer fired: the running task's class decides; when it
    /// keeps the task (a tick charged the slice in two parts and rounding left
    /// it a few ns short), the timer is armed again for what is left.
    pub fn hrtick(&mut self, now: Nanoseconds) -> Decision {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.hrtick(rq, now))
    }

    /// The slice-end timer again for the running task (another CPU queued a
    /// task here and asked this one to look).
    pub fn hrtick_update(&mut self, now: Nanoseconds) -> TimerRequest {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.hrtick_update(rq, now))
    }

    /// The running task yields (`do_sched_yield`); the mechanism then
    /// schedules.
    pub fn yield_task(&mut self, now: Nanoseconds) {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.yield_task(rq, now))
    }

    /// Load balancing takes the queued, not running `task` off this run queue
    /// with its state (`detach_task`: dequeue, then `migrate_task_rq`); a task
    /// that cannot leave is put back.
    pub fn detach_task(&mut self, task: TaskId, now: Nanoseconds) -> Option<TaskMigration> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.detach_task(rq, task, now))
    }

    /// The task, not queued, leaves this run queue, taking its fair state and
    /// PELT signals along (`migrate_task_rq_fair`).
    pub fn migrate_task_out(&mut self, task: TaskId, now: Nanoseconds) -> Option<TaskMigration> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.migrate_task_out(rq, task, now))
    }

    /// The task joins this run queue (not queued yet) with the state it left
    /// its last one with.
    pub fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &TaskMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.migrate_task_in(rq, task, migration, now))
    }

    /// Forgets a task that is not queued (it exited while not running).
    pub fn task_dead(&mut self, task: TaskId, now: Nanoseconds) {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.task_dead(rq, task, now))
    }

    /// `update_blocked_averages`: the PELT signals of what is not running
    /// decay to `now`.
    pub fn update_blocked_averages(&mut self, now: Nanoseconds) {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.update_blocked_averages(rq, now))
    }

    /// Hands this CPU a group's load summed over every CPU (`tg->load_avg`).
    pub fn set_group_load_sum(&mut self, group: GroupId, sum: u64, now: Nanoseconds) {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.set_group_load_sum(rq, group, sum, now))
    }

    /// A new task group under `parent`.
    pub fn create_group(
        &mut self,
        parent: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<GroupId, GroupError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.create_group(rq, parent, shares, now))
    }

    /// Moves `task` to `group` (`sched_move_task`).
    pub fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.set_task_group(rq, task, group, now))
    }

    /// Changes `task`'s uclamp requests (`sched_setattr`).
    pub fn set_task_uclamp(
        &mut self,
        task: TaskId,
        min: Option<u16>,
        max: Option<u16>,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.set_task_uclamp(rq, task, min, max, now))
    }

    /// Runs `task` at the RT priority `priority` lent by priority
    /// inheritance, or at its own (`None`) (`rt_mutex_setprio`).
    pub fn rt_mutex_setprio(
        &mut self,
        task: TaskId,
        priority: Option<u8>,
        now: Nanoseconds,
    ) -> Result<Decision, ParamError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.rt_mutex_setprio(rq, task, priority, now))
    }

    /// Connects this CPU's run queue to the groups' bandwidth pools, shared
    /// by every CPU (§4.2). Before it, no group is limited and bandwidth
    /// control costs one test per `update_curr`. Returns false when the run
    /// queue was built without bandwidth control (round robin, or
    /// [`RunQueue::build`] with `bandwidth` false).
    ///
    /// A recording core keeps every answer the pools give its run queue
    /// (`record::Input::PoolAnswer`): start the recording first.
    #[inline(never)]
    pub fn attach_bandwidth(&mut self, pools: alloc::sync::Arc<BandwidthPools>) -> bool {
        let source = if self.state.recording.is_some() {
            let tape = alloc::sync::Arc::new(SharedAnswerTape::new(AnswerTape::new()));
            self.state.pool_tape = Some(tape.clone());
            PoolSource::Recorded { pools, tape }
        } else {
            PoolSource::Live(pools)
        };
        let state = &mut self.state;
        let attached = dispatch!(&mut self.run_queue, rq => state.attach_bandwidth(rq, source));
        if !attached {
            self.state.pool_tape = None;
        }
        attached
    }

    /// A group's limit was set (`limited`) or lifted, after its pool was
    /// (`tg_set_cfs_bandwidth`, §4.1): a throttled run queue comes back, and
    /// the decision says whether the running task must yield to it.
    #[inline(never)]
    pub fn set_group_bandwidth(
        &mut self,
        group: GroupId,
        limited: bool,
        now: Nanoseconds,
    ) -> Result<Decision, GroupError> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => state.set_group_bandwidth(rq, group, limited, now))
    }

    /// Runtime granted to `group`'s run queue on this CPU by the pool's
    /// period or slack timer (`distribute_cfs_runtime`, §4.2), carried here
    /// by the mechanism (a remote CPU's grant arrives by IPI): with runtime
    /// again it is unthrottled, and an idle CPU reschedules.
    #[inline(never)]
    pub fn distribute_runtime(
        &mut self,
        group: GroupId,
        amount: Nanoseconds,
        unthrottle: bool,
        now: Nanoseconds,
    ) -> Decision {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => {
            state.distribute_runtime(rq, group, amount, unthrottle, now)
        })
    }

    /// The next bandwidth timer this CPU's run queues asked to arm (on this
    /// CPU: Linux pins the period and slack timers to the CPU that starts
    /// them). The mechanism drains them after each call.
    pub fn take_bandwidth_timer(&mut self) -> Option<BandwidthTimer> {
        dispatch!(&mut self.run_queue, rq => rq.take_bandwidth_timer())
    }

    /// Gives the mechanism's function that arms a requested bandwidth timer
    /// on this CPU at once, under this CPU's run-queue lock, so the
    /// mechanism need not poll [`CpuCore::take_bandwidth_timer`] after each
    /// call: the requests come from the cold bandwidth paths only, and with
    /// no quota the hot paths then carry nothing of bandwidth control. Give
    /// it before [`CpuCore::attach_bandwidth`]. A recording is not changed:
    /// a replay's core, without a hook, queues the same requests.
    pub fn set_bandwidth_timer_hook(&mut self, hook: fn(BandwidthTimer)) {
        dispatch!(&mut self.run_queue, rq => rq.set_bandwidth_timer_hook(hook))
    }

    /// Load balancing looked at `task` and left it where it is: it goes to the
    /// head of `cfs_tasks` (`detach_tasks`' `list_move`).
    pub fn cfs_tasks_rotate(&mut self, task: TaskId, now: Nanoseconds) {
        self.state.cfs_tasks_rotate(task, now)
    }

    /// Carries out one recorded input on this core and returns what it
    /// decided (the replay half of [`record`]). `migrations` holds the state
    /// of tasks between a `MigrateOut` and their `MigrateIn`.
    ///
    /// A recorded `PoolAnswer` is queued for the next call on this core
    /// (the run queue, attached by the recorded `AttachBandwidth`, replays
    /// its pools). After any other input, the error is the first use of the
    /// pools the record contradicts: a question it has no answer for, or an
    /// answer nobody asked for.
    pub fn replay(
        &mut self,
        now: Nanoseconds,
        input: &Input,
        migrations: &mut alloc::collections::BTreeMap<u16, TaskMigration>,
    ) -> Result<Output, PoolMismatch> {
        let state = &mut self.state;
        dispatch!(&mut self.run_queue, rq => match *input {
            // A run queue that does not replay its pools cannot take it.
            Input::PoolAnswer(recorded) => {
                if rq.queue_pool_answer(recorded) {
                    Ok(Output::default())
                } else {
                    Err(PoolMismatch::Unasked { recorded })
                }
            }
            _ => {
                let output = state.replay(rq, now, input, migrations);
                rq.take_pool_mismatch().map_or(Ok(output), Err)
            }
        })
    }
}
