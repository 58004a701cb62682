//! The run queue as the kernel's command line chooses it: round robin, CFS or
//! EEVDF, each a [`RunQueueOf`] compiled for its policy. This is the type
//! tests, reports and tools hold; each call dispatches once on the policy.
//! The drivers (`crate::cpu_core`) do not go through these methods on their
//! hot paths: they dispatch once per event and then call `RunQueueOf<F>`
//! directly.

use super::*;

/// One CPU's run queue, its policy chosen at construction.
#[derive(Debug)]
pub enum RunQueue {
    /// Round robin in the fair slot.
    RoundRobin(RunQueueOf<RoundRobin>),
    /// The fair class with the CFS pick (§1.4).
    Cfs(RunQueueOf<FairRunQueue<CfsPick>>),
    /// The fair class with the EEVDF pick (§1.5).
    Eevdf(RunQueueOf<FairRunQueue<EevdfPick>>),
}

/// Evaluates `$body` with `$rq` bound to the run queue of whichever policy
/// `$run_queue` holds.
macro_rules! dispatch {
    ($run_queue:expr, $rq:ident => $body:expr) => {
        match $run_queue {
            $crate::run_queue::RunQueue::RoundRobin($rq) => $body,
            $crate::run_queue::RunQueue::Cfs($rq) => $body,
            $crate::run_queue::RunQueue::Eevdf($rq) => $body,
        }
    };
}
pub(crate) use dispatch;

impl RunQueue {
    /// A run queue for task ids below `max_tasks`, running `kind`, with
    /// [`DEFAULT_MAX_GROUPS`] group slots and uclamp on.
    pub fn new(kind: PolicyKind, max_tasks: usize) -> Self {
        Self::with_groups(kind, max_tasks, DEFAULT_MAX_GROUPS)
    }

    /// A run queue for task ids below `max_tasks` and `max_groups` task groups
    /// (the root group included), running `kind`, with uclamp on.
    pub fn with_groups(kind: PolicyKind, max_tasks: usize, max_groups: usize) -> Self {
        match kind {
            PolicyKind::RoundRobin { slice } => RunQueue::RoundRobin(RunQueueOf::with_class(
                RoundRobin::new(max_tasks, slice).with_max_groups(max_groups),
                max_tasks,
            )),
            PolicyKind::Cfs(tunables) => RunQueue::Cfs(RunQueueOf::with_class(
                FairRunQueue::new(CfsPick(tunables), max_tasks, max_groups),
                max_tasks,
            )),
            PolicyKind::Eevdf(tunables) => RunQueue::Eevdf(RunQueueOf::with_class(
                FairRunQueue::new(EevdfPick(tunables), max_tasks, max_groups),
                max_tasks,
            )),
        }
    }

    /// As [`RunQueue::with_groups`], with uclamp on or off (see
    /// [`set_uclamp_enabled`](Self::set_uclamp_enabled)).
    pub fn with_options(
        kind: PolicyKind,
        max_tasks: usize,
        max_groups: usize,
        uclamp_enabled: bool,
    ) -> Self {
        let mut run_queue = Self::with_groups(kind, max_tasks, max_groups);
        run_queue.set_uclamp_enabled(uclamp_enabled);
        run_queue
    }

    /// The fair run queue, when the policy is CFS or EEVDF, for what reports
    /// and signals read (not the class operations, which are static calls).
    pub fn fair(&self) -> Option<&dyn FairView> {
        dispatch!(self, rq => rq.fair())
    }

    /// Installs the counter that brackets the PELT and uclamp updates inside
    /// the core (`None` removes it); see [`crate::stats::probe`].
    pub fn set_cost_counter(&mut self, counter: Option<crate::stats::probe::CounterRead>) {
        dispatch!(self, rq => rq.set_cost_counter(counter))
    }

    /// The counts spent in PELT updates and in uclamp updates since the last
    /// call, with their bracket counts.
    pub fn take_internal_costs(&mut self) -> crate::stats::probe::ProbeCosts {
        dispatch!(self, rq => rq.take_internal_costs())
    }

    /// The RT class (for reports and its throttling state).
    pub fn rt(&self) -> &RtClass {
        dispatch!(self, rq => rq.rt())
    }

    /// The policy `task` was created (or migrated in) with; `None` if unknown.
    pub fn task_policy(&self, task: TaskId) -> Option<Policy> {
        dispatch!(self, rq => rq.task_policy(task))
    }

    /// The class `task` belongs to; `None` if unknown.
    pub fn task_class(&self, task: TaskId) -> Option<ClassKind> {
        dispatch!(self, rq => rq.task_class(task))
    }

    /// Whether the uclamp run-queue accounting runs (on by default).
    pub fn uclamp_enabled(&self) -> bool {
        dispatch!(self, rq => rq.uclamp_enabled())
    }

    /// Turns the uclamp bucket accounting on or off (issue 4 measures its
    /// cost). Off, enqueue and dequeue skip it entirely and
    /// [`uclamp_value`](Self::uclamp_value) reads "no clamp" (0 / 1024, §3.1);
    /// on, the queued tasks are counted at once.
    pub fn set_uclamp_enabled(&mut self, enabled: bool) {
        dispatch!(self, rq => rq.set_uclamp_enabled(enabled))
    }

    /// The run queue's clamp (`uclamp_rq_get`, §3.2): the max of the queued
    /// tasks' effective values, held while idle.
    pub fn uclamp_value(&self, clamp_id: ClampId) -> u16 {
        dispatch!(self, rq => rq.uclamp_value(clamp_id))
    }

    /// `uclamp_eff_value(p, clamp_id)` (§3.3); `None` for an unknown task.
    pub fn uclamp_eff_value(&self, task: TaskId, clamp_id: ClampId) -> Option<u16> {
        dispatch!(self, rq => rq.uclamp_eff_value(task, clamp_id))
    }

    /// `sched_setattr` with new clamp requests (`None`: the default, §3.1); a
    /// queued task is re-counted at once. Bad values are refused by name.
    pub fn set_task_uclamp(
        &mut self,
        task: TaskId,
        uclamp_min: Option<u16>,
        uclamp_max: Option<u16>,
    ) -> Result<(), ParamError> {
        dispatch!(self, rq => rq.set_task_uclamp(task, uclamp_min, uclamp_max))
    }

    /// The mechanism found nothing to run and enters its idle loop at `now`
    /// (idle-time accounting of the idle class).
    pub fn set_next_idle(&mut self, now: Nanoseconds) {
        dispatch!(self, rq => rq.set_next_idle(now))
    }

    /// Creates a task group under `parent` with `shares` (`cpu.shares`,
    /// 2..=262144). Call it identically on every CPU: the ids then agree.
    pub fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
        dispatch!(self, rq => rq.create_group(parent, shares))
    }

    /// Removes an empty task group.
    pub fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError> {
        dispatch!(self, rq => rq.remove_group(group))
    }

    /// Sets a group's `cpu.shares` (2..=262144).
    pub fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        dispatch!(self, rq => rq.set_group_shares(group, shares, now))
    }

    /// Moves `task` into `group`, whether it sleeps, waits or runs. An RT task
    /// keeps the group for when it becomes fair (no RT group scheduling).
    pub fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        dispatch!(self, rq => rq.set_task_group(task, group, now))
    }

    /// This CPU's contribution to the group-wide load of `group` (§2.7); the
    /// mechanism sums it over CPUs and hands the sum back with
    /// [`set_group_load_sum`](Self::set_group_load_sum).
    pub fn group_load_contribution(&self, group: GroupId) -> u64 {
        dispatch!(self, rq => rq.group_load_contribution(group))
    }

    /// Hands this CPU the group-wide load sum of `group` (`tg->load_avg`).
    pub fn set_group_load_sum(&mut self, group: GroupId, sum: u64) {
        dispatch!(self, rq => rq.set_group_load_sum(group, sum))
    }

    /// Decays the PELT signals of group run queues nothing else updates
    /// (`update_blocked_averages`, §2.7); call it periodically, e.g. every tick
    /// or at load balance.
    pub fn update_blocked_averages(&mut self, now: Nanoseconds) {
        dispatch!(self, rq => rq.update_blocked_averages(now))
    }

    /// Whether this CPU's fair utilization changed since the last call (the
    /// frequency governor's hook, §2.6).
    pub fn take_util_changed(&mut self) -> bool {
        dispatch!(self, rq => rq.take_util_changed())
    }

    /// Takes a known task that is not queued off this CPU; `None` if it is
    /// unknown or still queued.
    pub fn migrate_task_out(&mut self, task: TaskId) -> Option<TaskMigration> {
        dispatch!(self, rq => rq.migrate_task_out(task))
    }

    /// Makes a migrated task known here; then enqueue it with
    /// `EnqueueFlags { migrated: true, .. }`.
    pub fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &TaskMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        dispatch!(self, rq => rq.migrate_task_in(task, migration, now))
    }

    /// Sets the capacity and frequency this CPU runs at from now on, which scales
    /// the PELT clock (§2.3).
    pub fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        dispatch!(self, rq => rq.set_cpu_capacity(capacity))
    }

    /// The capacity last set.
    pub fn cpu_capacity(&self) -> CpuCapacity {
        dispatch!(self, rq => rq.cpu_capacity())
    }

    /// The signals of `task`, which must be known to this run queue (an RT
    /// task reports its run time only: RT PELT is not modelled).
    pub fn task_signals(&self, task: TaskId) -> TaskSignals {
        dispatch!(self, rq => rq.task_signals(task))
    }

    /// The signals of task group `group` (not the root) on this CPU; `None`
    /// if it does not exist here.
    pub fn group_signals(&self, group: GroupId) -> Option<GroupSignals> {
        dispatch!(self, rq => rq.group_signals(group))
    }

    /// Linux's `task_h_load`: the task's load as the root run queue sees it
    /// through its groups, which load balancing weighs tasks by (§2.7):
    /// `h_load(root) = root.load_avg`, `h_load(q) = h_load(parent) ×
    /// se(q).load_avg / (parent.load_avg + 1)`, and the task's is
    /// `load_avg × h_load(q) / (q.load_avg + 1)` for the queue `q` it is on.
    /// Without groups (or without the fair class) it is the task's own load.
    pub fn task_h_load(&self, task: TaskId) -> u64 {
        dispatch!(self, rq => rq.task_h_load(task))
    }

    /// The run queue's aggregate signals.
    pub fn signals(&self) -> RunQueueSignals {
        dispatch!(self, rq => rq.signals())
    }

    /// The RT priority priority inheritance lends `task` now, if any.
    pub fn pi_priority(&self, task: TaskId) -> Option<u8> {
        dispatch!(self, rq => rq.pi_priority(task))
    }

    /// `rt_mutex_setprio`: `task` runs as an RT task of `pi_priority` while it
    /// holds a mutex a stronger task waits for, and at its own policy again
    /// with `None`. A boost no stronger than the task's own RT priority is
    /// none. `current` is the task running on this CPU (`None`: idle).
    ///
    /// A fair task's state (vruntime lag, PELT signals) leaves the fair class
    /// for the boost and comes back after it as a migrated task's does; Linux
    /// detaches and re-attaches it the same way (`switched_from_fair`,
    /// `switched_to_fair`). The answer is Linux's: a raised queued task
    /// preempts as a wake-up would; the running task reschedules when it
    /// leaves the RT class, or is lowered below a queued RT task.
    pub fn rt_mutex_setprio(
        &mut self,
        task: TaskId,
        pi_priority: Option<u8>,
        now: Nanoseconds,
        current: Option<TaskId>,
    ) -> Result<Resched, ParamError> {
        dispatch!(self, rq => rq.rt_mutex_setprio(task, pi_priority, now, current))
    }
}

impl SchedClass for RunQueue {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        dispatch!(self, rq => rq.task_new(task, params, now))
    }
    fn task_dead(&mut self, task: TaskId) {
        dispatch!(self, rq => rq.task_dead(task))
    }
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        dispatch!(self, rq => rq.enqueue_task(task, now, flags))
    }
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        dispatch!(self, rq => rq.dequeue_task(task, now, flags))
    }
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        dispatch!(self, rq => rq.pick_next_task(now))
    }
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        dispatch!(self, rq => rq.put_prev_task(task, now))
    }
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        dispatch!(self, rq => rq.set_next_task(task, now))
    }
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        dispatch!(self, rq => rq.task_tick(task, now))
    }
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        dispatch!(self, rq => rq.wakeup_preempt(current, woken, now))
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        dispatch!(self, rq => rq.yield_task(task, now))
    }
    fn nr_running(&self) -> usize {
        dispatch!(self, rq => rq.nr_running())
    }
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        dispatch!(self, rq => rq.slice_remaining(task, now))
    }
}
