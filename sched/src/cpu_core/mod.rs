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
pub mod record;
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

use crate::balance::{CpuSnapshot, WakeRequest};
use crate::bandwidth::pools::{
    AnswerTape, BandwidthPools, BandwidthTimer, PoolMismatch, PoolSource, SharedAnswerTape,
};
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::fair::GroupError;
use crate::run_queue::{FairClass, RunQueue, RunQueueOf, TaskMigration, dispatch};
use crate::stats::probe::{CounterRead, ProbeCosts};
use crate::task::{CpuId, CpuMask, GroupId, Nanoseconds, ParamError, TaskId, TaskParams};
use crate::topology::Topology;

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
/// (`CoreState`'s methods over [`RunQueueOf`]).
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

    /// `task` as load balancing weighs it: its PELT signals with its load as
    /// the root run queue sees it through its groups (`task_h_load`, §2.7)
    /// and its effective clamps (§3.3; `[0, 1024]` while uclamp is off).
    pub fn balance_candidate(
        &self,
        task: TaskId,
        affinity: CpuMask,
        running: bool,
        now: Nanoseconds,
        exec_start: Nanoseconds,
    ) -> crate::balance::TaskCandidate {
        let queue = &self.run_queue;
        let mut signals = queue.task_signals(task);
        signals.load_avg = queue.task_h_load(task);
        crate::balance::TaskCandidate::from_signals(
            task,
            &signals,
            affinity,
            running,
            now,
            exec_start,
            self.task_clamps(task),
        )
    }

    /// `update_misfit_status` (§5.5): the `misfit_task_load` of this CPU's
    /// running fair task, whose allowed CPUs are `affinity`, on a CPU of
    /// `capacity_of` `capacity`; 0 when none. The task's `task_h_load` is
    /// computed only when it is misfit.
    pub fn misfit_task_load(&self, topology: &Topology, affinity: CpuMask, capacity: u64) -> u64 {
        let Some(task) = self.state.current else {
            return 0;
        };
        if !topology.is_asymmetric()
            || self.run_queue.task_class(task) != Some(crate::class_stack::ClassKind::Fair)
        {
            return 0;
        }
        let mut signals = self.run_queue.task_signals(task);
        // Weighed below only if misfit: any nonzero load tells.
        signals.load_avg = 1;
        let candidate = crate::balance::TaskCandidate::from_signals(
            task,
            &signals,
            affinity,
            true,
            0,
            0,
            self.task_clamps(task),
        );
        let cpu = CpuId(self.state.cpu);
        if crate::balance::misfit_task_load(topology, cpu, capacity, &candidate) == 0 {
            return 0;
        }
        self.run_queue.task_h_load(task).max(1)
    }

    /// `task`'s effective `[uclamp_min, uclamp_max]`, or `[0, 1024]` while
    /// uclamp is off.
    fn task_clamps(&self, task: TaskId) -> [u16; 2] {
        use crate::uclamp::ClampId;
        let queue = &self.run_queue;
        if queue.uclamp_enabled() {
            [
                queue.uclamp_eff_value(task, ClampId::Min).unwrap_or(0),
                queue.uclamp_eff_value(task, ClampId::Max).unwrap_or(1024),
            ]
        } else {
            [0, 1024]
        }
    }

    /// Linux's `select_task_rq` at `try_to_wake_up`, asked of the core of the
    /// CPU the waking `task` last ran on (its state is here): the CPU it
    /// should wake on. With EAS on (`energy`) and the root domain not
    /// overutilized (or overutilized, with the 2024 RFC's option, §5.6, as
    /// long as some CPU fits), `find_energy_efficient_cpu` chooses (§5.4); otherwise,
    /// or when it has no say, the wake-up balancing rules of
    /// [`crate::balance::select_task_rq`] over every CPU's `snapshots`. Both
    /// read the task's util_est and effective clamps (§2.4, §3.3). The
    /// task's own CPU when no other is chosen. Not recorded: its inputs are
    /// the other CPUs' published loads.
    ///
    /// With a cost counter set, the placement also reports what
    /// `find_energy_efficient_cpu` cost when it ran (issue 14's budget).
    #[allow(clippy::too_many_arguments)]
    pub fn select_task_rq(
        &self,
        task: TaskId,
        waker_cpu: CpuId,
        affinity: CpuMask,
        waker_load: u64,
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        energy: Option<crate::eas::EnergyContext<'_>>,
    ) -> WakePlacement {
        self.select_task_rq_observed(
            task,
            waker_cpu,
            affinity,
            waker_load,
            topology,
            snapshots,
            energy,
            |_| {},
        )
    }

    /// [`CpuCore::select_task_rq`], telling `observe` each energy estimate
    /// `find_energy_efficient_cpu` makes (the simulator's `--explain` prints
    /// them): the same decision, by the same code.
    #[allow(clippy::too_many_arguments)]
    pub fn select_task_rq_observed(
        &self,
        task: TaskId,
        waker_cpu: CpuId,
        affinity: CpuMask,
        waker_load: u64,
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        energy: Option<crate::eas::EnergyContext<'_>>,
        observe: impl FnMut(crate::eas::EnergyEstimate),
    ) -> WakePlacement {
        let prev_cpu = CpuId(self.state.cpu);
        let signals = self.run_queue.task_signals(task);
        // Linux ages the sleeping task's PELT to its run queue's last update
        // (`sync_entity_load_avg`) in feec before anything else reads it
        // (§5.4 step 4), and in `select_idle_sibling` on asymmetric CPUs,
        // after wake-affine has weighed its unsynced load.
        let synced = if energy.is_some() || topology.is_asymmetric() {
            self.run_queue.task_signals_synced(task)
        } else {
            signals
        };
        let uclamp_used = self.run_queue.uclamp_enabled();
        // Only EAS and the capacity fits of asymmetric CPUs read the clamps;
        // identical CPUs do not pay for computing a sleeping task's
        // effective values (a few hundred instructions per wake-up).
        let uclamp = if energy.is_some() || topology.is_asymmetric() {
            self.task_clamps(task)
        } else {
            [0, 1024]
        };
        let mut feec_cost = None;
        let mut feec = FeecOutcome::NotRun;
        if let Some(energy) = energy.filter(|e| e.places_wakeups()) {
            let waking = crate::eas::WakingTask {
                prev_cpu,
                affinity,
                util_avg: synced.util_avg,
                util_est: synced.util_est,
                uclamp,
                uclamp_used,
            };
            let (choice, cost) = self
                .energy_aware_placement(topology, snapshots, &energy, &waking, waker_cpu, observe);
            feec_cost = cost;
            if let Some(cpu) = choice {
                return WakePlacement {
                    cpu,
                    feec_cost,
                    feec: FeecOutcome::Placed,
                };
            }
            feec = FeecOutcome::Declined;
        }
        let request = WakeRequest {
            prev_cpu,
            waker_cpu,
            affinity,
            sync: false,
            wake_wide: false,
            task_load: if energy.is_some() {
                synced.load_avg
            } else {
                signals.load_avg
            },
            task_util: synced.util_avg.max(synced.util_est),
            uclamp,
            waker_load,
        };
        let cpu = crate::balance::select_task_rq(topology, snapshots, &request)
            .map_or(prev_cpu, |target| target.cpu);
        WakePlacement {
            cpu,
            feec_cost,
            feec,
        }
    }

    /// `find_energy_efficient_cpu` for [`CpuCore::select_task_rq`], out of
    /// line so that wake-ups without EAS (identical CPUs) do not carry its
    /// code: the CPU it chose, if it placed the task (the 2024 RFC's feec,
    /// run while overutilized, gives up when no CPU fits, §5.6), and what it
    /// cost with a cost counter set.
    #[inline(never)]
    #[cold]
    fn energy_aware_placement(
        &self,
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        energy: &crate::eas::EnergyContext<'_>,
        waking: &crate::eas::WakingTask,
        waker_cpu: CpuId,
        observe: impl FnMut(crate::eas::EnergyEstimate),
    ) -> (Option<CpuId>, Option<u64>) {
        let start = self.state.cost_counter.map(|counter| counter());
        let choice = crate::eas::find_energy_efficient_cpu_observed(
            topology,
            energy.domains,
            snapshots,
            waking,
            waker_cpu,
            observe,
        );
        let cost = self
            .state
            .cost_counter
            .zip(start)
            .map(|(counter, start)| counter().wrapping_sub(start));
        let gives_up = energy.overutilized && choice.nothing_fits;
        let cpu = choice
            .cpu
            .filter(|&cpu| waking.affinity.contains(cpu) && !gives_up);
        (cpu, cost)
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

impl CoreState {
    /// Runs `operation` on the run queue between two counter reads.
    #[inline(always)]
    fn measured<F: FairClass, R>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        operation: impl FnOnce(&mut RunQueueOf<F>) -> R,
    ) -> (R, Option<u64>) {
        match self.cost_counter {
            None => (operation(rq), None),
            Some(counter) => {
                // Probe counts from outside this operation are not its own.
                let outside = rq.take_internal_costs();
                self.op_costs.other_internal.add(outside);
                let start = counter();
                let result = operation(rq);
                (result, Some(counter().wrapping_sub(start)))
            }
        }
    }

    #[inline(always)]
    fn record(&mut self, now: Nanoseconds, input: Input, output: Output) {
        if self.recording.is_some() {
            self.push_record(now, input, output);
        }
    }

    /// Appends the record of a call, after the pool answers the run queue
    /// was given during it (from the tape it shares with its link).
    #[inline(never)]
    fn push_record(&mut self, now: Nanoseconds, input: Input, output: Output) {
        let cpu = self.cpu;
        let Some(recording) = self.recording.as_mut() else {
            return;
        };
        if let Some(tape) = &self.pool_tape {
            let mut tape = tape.lock();
            recording.dropped += tape.take_lost();
            while let Some(answer) = tape.take() {
                recording.push(cpu, now, Input::PoolAnswer(answer), Output::default());
            }
        }
        recording.push(cpu, now, input, output);
    }

    #[inline(always)]
    fn record_decision(&mut self, now: Nanoseconds, input: Input, decision: Decision) -> Decision {
        self.record(
            now,
            input,
            Output {
                resched: decision.resched,
                next: None,
                hrtick: decision.hrtick,
            },
        );
        decision
    }

    #[inline(always)]
    fn record_result<T, E>(
        &mut self,
        now: Nanoseconds,
        input: Input,
        result: Result<T, E>,
    ) -> Result<T, E> {
        self.record(
            now,
            input,
            Output {
                resched: result.is_ok(),
                ..Output::default()
            },
        );
        result
    }

    /// The slice-end timer for the running task (Linux's `hrtick_start_fair`):
    /// at the end of its slice when another task would take over then, else
    /// stopped.
    #[inline]
    fn hrtick_request<F: FairClass>(&self, rq: &RunQueueOf<F>, now: Nanoseconds) -> TimerRequest {
        if !self.hrtick_enabled {
            return TimerRequest::Keep;
        }
        match self
            .current
            .and_then(|current| rq.slice_remaining(current, now))
        {
            Some(remaining) => TimerRequest::Arm(now + remaining),
            None => TimerRequest::Cancel,
        }
    }

    /// Whether the queued `task` preempts the running task
    /// (`wakeup_preempt`); an idle CPU always reschedules. When it does not,
    /// the running task's slice may now have an end.
    #[inline]
    fn check_preempt<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
    ) -> Decision {
        let resched = match self.current {
            None => true,
            Some(current) => rq.wakeup_preempt(current, task, now).is_needed(),
        };
        Decision {
            resched,
            hrtick: if resched {
                TimerRequest::Keep
            } else {
                self.hrtick_request(rq, now)
            },
        }
    }

    #[inline]
    fn enqueue<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        flags: EnqueueFlags,
    ) {
        let ((), cost) = self.measured(rq, |rq| rq.enqueue_task(task, now, flags));
        self.op_costs.enqueue = cost;
        if cost.is_some() {
            self.op_costs.enqueue_internal = rq.take_internal_costs();
        }
        self.cfs_tasks.move_to_head(task);
    }

    #[inline]
    fn dequeue<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        flags: DequeueFlags,
    ) {
        let ((), cost) = self.measured(rq, |rq| rq.dequeue_task(task, now, flags));
        self.op_costs.dequeue = cost;
        if cost.is_some() {
            self.op_costs.dequeue_internal = rq.take_internal_costs();
        }
        self.cfs_tasks.remove(task);
    }

    /// See [`CpuCore::wake_up_new_task`].
    pub fn wake_up_new_task<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<Decision, ParamError> {
        let input = Input::TaskNew {
            task,
            params: *params,
        };
        if let Err(error) = rq.task_new(task, params, now) {
            self.record(now, input, Output::default());
            return Err(error);
        }
        let flags = EnqueueFlags {
            initial: true,
            ..EnqueueFlags::default()
        };
        self.enqueue(rq, task, now, flags);
        let decision = self.check_preempt(rq, task, now);
        Ok(self.record_decision(now, input, decision))
    }

    /// See [`CpuCore::try_to_wake_up`].
    #[inline]
    pub fn try_to_wake_up<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        migrated: bool,
    ) -> Decision {
        let flags = EnqueueFlags {
            wakeup: true,
            migrated,
            ..EnqueueFlags::default()
        };
        self.enqueue(rq, task, now, flags);
        let decision = self.check_preempt(rq, task, now);
        self.record_decision(now, Input::Wakeup { task, flags }, decision)
    }

    /// See [`CpuCore::attach_task`].
    pub fn attach_task<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
    ) -> Decision {
        let flags = EnqueueFlags {
            migrated: true,
            ..EnqueueFlags::default()
        };
        self.enqueue(rq, task, now, flags);
        let decision = self.check_preempt(rq, task, now);
        self.record_decision(now, Input::Wakeup { task, flags }, decision)
    }

    /// See [`CpuCore::enqueue_task`].
    pub fn enqueue_task<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        flags: EnqueueFlags,
    ) {
        self.enqueue(rq, task, now, flags);
        self.record(now, Input::Enqueue { task, flags }, Output::default());
    }

    /// See [`CpuCore::dequeue_task`].
    pub fn dequeue_task<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        flags: DequeueFlags,
    ) {
        self.dequeue(rq, task, now, flags);
        if self.current == Some(task) {
            rq.put_prev_task(task, now);
            self.current = None;
        }
        self.record(now, Input::Dequeue { task, flags }, Output::default());
    }

    /// See [`CpuCore::schedule`].
    #[inline]
    pub fn schedule<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        now: Nanoseconds,
        leaving: Leaving,
    ) -> Switch {
        let previous = self.current;
        if let Some(previous) = previous {
            if leaving != Leaving::Runnable {
                let flags = DequeueFlags {
                    sleep: true,
                    ..DequeueFlags::default()
                };
                self.dequeue(rq, previous, now, flags);
            }
            if leaving == Leaving::Dead {
                rq.put_prev_task(previous, now);
                rq.task_dead(previous);
            } else {
                rq.put_prev_task_for_switch(previous, now);
            }
        }
        let (next, cost) = self.measured(rq, |rq| {
            let next = rq.pick_next_task(now);
            match next {
                Some(next) => rq.set_next_task(next, now),
                None => rq.set_next_idle(now),
            }
            next
        });
        self.op_costs.pick = cost;
        if let Some(next) = next {
            // `pick_next_task_fair` moves the picked task to the head.
            self.cfs_tasks.move_to_head(next);
        }
        self.current = next;
        let hrtick = self.hrtick_request(rq, now);
        self.record(
            now,
            Input::Schedule { leaving },
            Output {
                resched: false,
                next,
                hrtick,
            },
        );
        Switch {
            previous,
            next,
            hrtick,
        }
    }

    /// See [`CpuCore::sched_tick`].
    pub fn sched_tick<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        now: Nanoseconds,
    ) -> Decision {
        let resched = self
            .current
            .is_some_and(|current| rq.task_tick(current, now).is_needed());
        let decision = Decision {
            resched,
            hrtick: TimerRequest::Keep,
        };
        self.record_decision(now, Input::Tick, decision)
    }

    /// See [`CpuCore::hrtick`].
    pub fn hrtick<F: FairClass>(&mut self, rq: &mut RunQueueOf<F>, now: Nanoseconds) -> Decision {
        let resched = self
            .current
            .is_some_and(|current| rq.task_tick(current, now).is_needed());
        let decision = Decision {
            resched,
            hrtick: if resched {
                TimerRequest::Keep
            } else {
                self.hrtick_request(rq, now)
            },
        };
        self.record_decision(now, Input::Hrtick, decision)
    }

    /// See [`CpuCore::hrtick_update`].
    pub fn hrtick_update<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        now: Nanoseconds,
    ) -> TimerRequest {
        let hrtick = self.hrtick_request(rq, now);
        self.record(
            now,
            Input::HrtickUpdate,
            Output {
                hrtick,
                ..Output::default()
            },
        );
        hrtick
    }

    /// See [`CpuCore::yield_task`].
    pub fn yield_task<F: FairClass>(&mut self, rq: &mut RunQueueOf<F>, now: Nanoseconds) {
        if let Some(current) = self.current {
            rq.yield_task(current, now);
        }
        self.record(now, Input::Yield, Output::default());
    }

    /// See [`CpuCore::detach_task`].
    pub fn detach_task<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
    ) -> Option<TaskMigration> {
        let flags = DequeueFlags {
            migrating: true,
            ..DequeueFlags::default()
        };
        self.dequeue_task(rq, task, now, flags);
        let migration = self.migrate_task_out(rq, task, now);
        if migration.is_none() {
            self.enqueue_task(rq, task, now, EnqueueFlags::default());
        }
        migration
    }

    /// See [`CpuCore::migrate_task_out`].
    pub fn migrate_task_out<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
    ) -> Option<TaskMigration> {
        let migration = rq.migrate_task_out(task);
        self.cfs_tasks.remove(task);
        self.record(
            now,
            Input::MigrateOut { task },
            Output {
                resched: migration.is_some(),
                ..Output::default()
            },
        );
        migration
    }

    /// See [`CpuCore::migrate_task_in`].
    pub fn migrate_task_in<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        migration: &TaskMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        let result = rq.migrate_task_in(task, migration, now);
        self.record_result(now, Input::MigrateIn { task }, result)
    }

    /// See [`CpuCore::task_dead`].
    pub fn task_dead<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
    ) {
        rq.task_dead(task);
        self.cfs_tasks.remove(task);
        self.record(now, Input::TaskDead { task }, Output::default());
    }

    /// `unthrottle_cfs_rq`'s last step: an idle CPU that has fair tasks
    /// again reschedules (the running task is not preempted).
    fn after_unthrottle<F: FairClass>(&self, rq: &RunQueueOf<F>) -> Decision {
        Decision {
            resched: self.current.is_none() && rq.nr_running() > 0,
            hrtick: TimerRequest::Keep,
        }
    }

    /// See [`CpuCore::attach_bandwidth`] (and a replay's `AttachBandwidth`).
    fn attach_bandwidth<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        source: PoolSource,
    ) -> bool {
        let attached = rq.attach_bandwidth_with(source, self.cpu);
        self.record(
            0,
            Input::AttachBandwidth,
            Output {
                resched: attached,
                ..Output::default()
            },
        );
        attached
    }

    /// See [`CpuCore::set_group_bandwidth`].
    pub fn set_group_bandwidth<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        group: GroupId,
        limited: bool,
        now: Nanoseconds,
    ) -> Result<Decision, GroupError> {
        let input = Input::SetGroupBandwidth { group, limited };
        match rq.set_group_bandwidth(group, limited, now) {
            Ok(()) => {
                let decision = self.after_unthrottle(rq);
                Ok(self.record_decision(now, input, decision))
            }
            Err(error) => {
                self.record(now, input, Output::default());
                Err(error)
            }
        }
    }

    /// See [`CpuCore::distribute_runtime`].
    pub fn distribute_runtime<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        group: GroupId,
        amount: Nanoseconds,
        unthrottle: bool,
        now: Nanoseconds,
    ) -> Decision {
        let decision = if rq.distribute_runtime(group, amount, unthrottle, now) {
            self.after_unthrottle(rq)
        } else {
            Decision::default()
        };
        let input = Input::DistributeRuntime {
            group,
            amount,
            unthrottle,
        };
        self.record_decision(now, input, decision)
    }

    /// See [`CpuCore::update_blocked_averages`].
    pub fn update_blocked_averages<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        now: Nanoseconds,
    ) {
        rq.update_blocked_averages(now);
        self.record(now, Input::UpdateBlockedAverages, Output::default());
    }

    /// See [`CpuCore::set_group_load_sum`].
    pub fn set_group_load_sum<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        group: GroupId,
        sum: u64,
        now: Nanoseconds,
    ) {
        rq.set_group_load_sum(group, sum);
        self.record(now, Input::GroupLoadSum { group, sum }, Output::default());
    }

    /// See [`CpuCore::create_group`].
    pub fn create_group<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        parent: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<GroupId, GroupError> {
        let result = rq.create_group(parent, shares);
        self.record_result(now, Input::CreateGroup { parent, shares }, result)
    }

    /// See [`CpuCore::set_task_group`].
    pub fn set_task_group<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        let result = rq.set_task_group(task, group, now);
        self.record_result(now, Input::SetTaskGroup { task, group }, result)
    }

    /// See [`CpuCore::set_task_uclamp`].
    pub fn set_task_uclamp<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        min: Option<u16>,
        max: Option<u16>,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        let result = rq.set_task_uclamp(task, min, max);
        self.record_result(now, Input::SetTaskUclamp { task, min, max }, result)
    }

    /// See [`CpuCore::rt_mutex_setprio`].
    pub fn rt_mutex_setprio<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        priority: Option<u8>,
        now: Nanoseconds,
    ) -> Result<Decision, ParamError> {
        let input = Input::RtMutexSetprio { task, priority };
        match rq.rt_mutex_setprio(task, priority, now, self.current) {
            Ok(resched) => {
                let decision = Decision {
                    resched: resched.is_needed(),
                    hrtick: TimerRequest::Keep,
                };
                Ok(self.record_decision(now, input, decision))
            }
            Err(error) => {
                self.record(now, input, Output::default());
                Err(error)
            }
        }
    }

    /// See [`CpuCore::cfs_tasks_rotate`].
    pub fn cfs_tasks_rotate(&mut self, task: TaskId, now: Nanoseconds) {
        if self.cfs_tasks.contains(task) {
            self.cfs_tasks.move_to_head(task);
        }
        self.record(now, Input::CfsTasksRotate { task }, Output::default());
    }

    /// See [`CpuCore::replay`].
    pub fn replay<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        now: Nanoseconds,
        input: &Input,
        migrations: &mut alloc::collections::BTreeMap<u16, TaskMigration>,
    ) -> Output {
        let decision = |d: Decision| Output {
            resched: d.resched,
            next: None,
            hrtick: d.hrtick,
        };
        let ok = |ok: bool| Output {
            resched: ok,
            ..Output::default()
        };
        match *input {
            Input::TaskNew { task, params } => {
                match self.wake_up_new_task(rq, task, &params, now) {
                    Ok(d) => decision(d),
                    Err(_) => Output::default(),
                }
            }
            Input::Wakeup { task, flags } => {
                self.enqueue(rq, task, now, flags);
                let d = self.check_preempt(rq, task, now);
                decision(self.record_decision(now, *input, d))
            }
            Input::Enqueue { task, flags } => {
                self.enqueue_task(rq, task, now, flags);
                Output::default()
            }
            Input::Dequeue { task, flags } => {
                self.dequeue_task(rq, task, now, flags);
                Output::default()
            }
            Input::TaskDead { task } => {
                self.task_dead(rq, task, now);
                Output::default()
            }
            Input::Schedule { leaving } => {
                let switch = self.schedule(rq, now, leaving);
                Output {
                    resched: false,
                    next: switch.next,
                    hrtick: switch.hrtick,
                }
            }
            Input::Tick => decision(self.sched_tick(rq, now)),
            Input::Hrtick => decision(self.hrtick(rq, now)),
            Input::HrtickUpdate => Output {
                hrtick: self.hrtick_update(rq, now),
                ..Output::default()
            },
            Input::Yield => {
                self.yield_task(rq, now);
                Output::default()
            }
            Input::MigrateOut { task } => match self.migrate_task_out(rq, task, now) {
                Some(migration) => {
                    migrations.insert(task.0, migration);
                    ok(true)
                }
                None => ok(false),
            },
            Input::MigrateIn { task } => match migrations.remove(&task.0) {
                Some(migration) => ok(self.migrate_task_in(rq, task, &migration, now).is_ok()),
                None => ok(false),
            },
            Input::UpdateBlockedAverages => {
                self.update_blocked_averages(rq, now);
                Output::default()
            }
            Input::GroupLoadSum { group, sum } => {
                self.set_group_load_sum(rq, group, sum, now);
                Output::default()
            }
            Input::CreateGroup { parent, shares } => {
                ok(self.create_group(rq, parent, shares, now).is_ok())
            }
            Input::SetTaskGroup { task, group } => {
                ok(self.set_task_group(rq, task, group, now).is_ok())
            }
            Input::SetTaskUclamp { task, min, max } => {
                ok(self.set_task_uclamp(rq, task, min, max, now).is_ok())
            }
            Input::RtMutexSetprio { task, priority } => {
                match self.rt_mutex_setprio(rq, task, priority, now) {
                    Ok(d) => decision(d),
                    Err(_) => Output::default(),
                }
            }
            Input::CfsTasksRotate { task } => {
                self.cfs_tasks_rotate(task, now);
                Output::default()
            }
            Input::AttachBandwidth => ok(self.attach_bandwidth(rq, PoolSource::Replayed)),
            Input::SetGroupBandwidth { group, limited } => {
                match self.set_group_bandwidth(rq, group, limited, now) {
                    Ok(d) => decision(d),
                    Err(_) => Output::default(),
                }
            }
            Input::DistributeRuntime {
                group,
                amount,
                unthrottle,
            } => decision(self.distribute_runtime(rq, group, amount, unthrottle, now)),
            Input::PoolAnswer(answer) => {
                // For the next call on this core (see `CpuCore::replay`).
                let _ = rq.queue_pool_answer(answer);
                Output::default()
            }
        }
    }
}
