//! The run queue as the kernel's command line chooses it: round robin, CFS,
//! EEVDF or a registered policy, each a [`RunQueueOf`] compiled for its policy. This is the type
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
    /// The fair class with the CFS pick (§1.4) and bandwidth control (§4).
    Cfs(RunQueueOf<FairRunQueue<CfsPick>>),
    /// The fair class with the EEVDF pick (§1.5) and bandwidth control (§4).
    Eevdf(RunQueueOf<FairRunQueue<EevdfPick>>),
    /// The fair class with the CFS pick, bandwidth control compiled out.
    CfsWithoutBandwidth(RunQueueOf<FairRunQueue<CfsPick, false>>),
    /// The fair class with the EEVDF pick, bandwidth control compiled out.
    EevdfWithoutBandwidth(RunQueueOf<FairRunQueue<EevdfPick, false>>),
    /// A registered policy ([`crate::policies`]) in the fair slot, called
    /// through a `Box<dyn Policy>`: the built-ins above keep their static
    /// calls.
    Registered(RunQueueOf<crate::policies::PolicyClass>),
}

/// Evaluates `$body` with `$rq` bound to the run queue of whichever policy
/// `$run_queue` holds.
macro_rules! dispatch {
    ($run_queue:expr, $rq:ident => $body:expr) => {
        match $run_queue {
            $crate::run_queue::RunQueue::RoundRobin($rq) => $body,
            $crate::run_queue::RunQueue::Cfs($rq) => $body,
            $crate::run_queue::RunQueue::Eevdf($rq) => $body,
            $crate::run_queue::RunQueue::CfsWithoutBandwidth($rq) => $body,
            $crate::run_queue::RunQueue::EevdfWithoutBandwidth($rq) => $body,
            $crate::run_queue::RunQueue::Registered($rq) => $body,
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
            PolicyKind::Registered(id, context) => {
                let context = crate::policies::PolicyContext {
                    max_tasks,
                    ..context
                };
                RunQueue::Registered(RunQueueOf::with_class(
                    crate::policies::PolicyClass::new(id, context, max_groups),
                    max_tasks,
                ))
            }
        }
    }

    /// As [`RunQueue::with_options`], with bandwidth control (§4) compiled
    /// in or out of the fair class: a kernel or simulation that limits no
    /// group builds it without, and pays nothing for it.
    pub fn build(
        kind: PolicyKind,
        max_tasks: usize,
        max_groups: usize,
        uclamp_enabled: bool,
        bandwidth: bool,
    ) -> Self {
        let mut run_queue = match (kind, bandwidth) {
            (PolicyKind::Cfs(tunables), false) => {
                RunQueue::CfsWithoutBandwidth(RunQueueOf::with_class(
                    FairRunQueue::without_bandwidth(CfsPick(tunables), max_tasks, max_groups),
                    max_tasks,
                ))
            }
            (PolicyKind::Eevdf(tunables), false) => {
                RunQueue::EevdfWithoutBandwidth(RunQueueOf::with_class(
                    FairRunQueue::without_bandwidth(EevdfPick(tunables), max_tasks, max_groups),
                    max_tasks,
                ))
            }
            _ => Self::with_groups(kind, max_tasks, max_groups),
        };
        run_queue.set_uclamp_enabled(uclamp_enabled);
        run_queue
    }

    /// As [`RunQueue::with_groups`], with uclamp on or off (see
    /// [`set_uclamp_enabled`](Self::set_uclamp_enabled)), bandwidth control
    /// compiled in.
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

    /// See [`RunQueueOf::fair`].
    pub fn fair(&self) -> Option<&dyn FairView> {
        dispatch!(self, rq => rq.fair())
    }

    /// The round-robin class in the fair slot, when the policy is round
    /// robin: explain mode reads its FIFO order and slices.
    pub fn round_robin(&self) -> Option<&crate::round_robin::RoundRobin> {
        match self {
            RunQueue::RoundRobin(rq) => Some(rq.stack.fair()),
            _ => None,
        }
    }

    /// The registered policy in the fair slot, when it is one: explain
    /// mode asks it about its picks.
    pub fn registered(&self) -> Option<&crate::policies::PolicyClass> {
        match self {
            RunQueue::Registered(rq) => Some(rq.stack.fair()),
            _ => None,
        }
    }

    /// See [`RunQueueOf::avg_vruntime`].
    pub fn avg_vruntime(&self, group: GroupId) -> Option<u64> {
        dispatch!(self, rq => rq.avg_vruntime(group))
    }

    /// See [`RunQueueOf::set_cost_counter`].
    pub fn set_cost_counter(&mut self, counter: Option<crate::stats::probe::CounterRead>) {
        dispatch!(self, rq => rq.set_cost_counter(counter))
    }

    /// See [`RunQueueOf::take_internal_costs`].
    pub fn take_internal_costs(&mut self) -> crate::stats::probe::ProbeCosts {
        dispatch!(self, rq => rq.take_internal_costs())
    }

    /// See [`RunQueueOf::rt`].
    pub fn rt(&self) -> &RtClass {
        dispatch!(self, rq => rq.rt())
    }

    /// See [`RunQueueOf::task_policy`].
    pub fn task_policy(&self, task: TaskId) -> Option<Policy> {
        dispatch!(self, rq => rq.task_policy(task))
    }

    /// See [`RunQueueOf::task_class`].
    pub fn task_class(&self, task: TaskId) -> Option<ClassKind> {
        dispatch!(self, rq => rq.task_class(task))
    }

    /// See [`RunQueueOf::uclamp_enabled`].
    pub fn uclamp_enabled(&self) -> bool {
        dispatch!(self, rq => rq.uclamp_enabled())
    }

    /// See [`RunQueueOf::set_uclamp_enabled`].
    pub fn set_uclamp_enabled(&mut self, enabled: bool) {
        dispatch!(self, rq => rq.set_uclamp_enabled(enabled))
    }

    /// See [`RunQueueOf::uclamp_value`].
    pub fn uclamp_value(&self, clamp_id: ClampId) -> u16 {
        dispatch!(self, rq => rq.uclamp_value(clamp_id))
    }

    /// See [`RunQueueOf::uclamp_idle`].
    pub fn uclamp_idle(&self) -> bool {
        dispatch!(self, rq => rq.uclamp_idle())
    }

    /// See [`RunQueueOf::uclamp_eff_value`].
    pub fn uclamp_eff_value(&self, task: TaskId, clamp_id: ClampId) -> Option<u16> {
        dispatch!(self, rq => rq.uclamp_eff_value(task, clamp_id))
    }

    /// See [`RunQueueOf::set_task_uclamp`].
    pub fn set_task_uclamp(
        &mut self,
        task: TaskId,
        uclamp_min: Option<u16>,
        uclamp_max: Option<u16>,
    ) -> Result<(), ParamError> {
        dispatch!(self, rq => rq.set_task_uclamp(task, uclamp_min, uclamp_max))
    }

    /// See [`RunQueueOf::set_next_idle`].
    pub fn set_next_idle(&mut self, now: Nanoseconds) {
        dispatch!(self, rq => rq.set_next_idle(now))
    }

    /// See [`RunQueueOf::create_group`].
    pub fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
        dispatch!(self, rq => rq.create_group(parent, shares))
    }

    /// See [`RunQueueOf::remove_group`].
    pub fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError> {
        dispatch!(self, rq => rq.remove_group(group))
    }

    /// See [`RunQueueOf::set_group_shares`].
    pub fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        dispatch!(self, rq => rq.set_group_shares(group, shares, now))
    }

    /// See [`RunQueueOf::set_task_group`].
    pub fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        dispatch!(self, rq => rq.set_task_group(task, group, now))
    }

    /// See [`RunQueueOf::task_throttled`].
    pub fn task_throttled(&self, task: TaskId) -> bool {
        dispatch!(self, rq => rq.task_throttled(task))
    }

    /// See [`RunQueueOf::group_load_contribution`].
    pub fn group_load_contribution(&self, group: GroupId) -> u64 {
        dispatch!(self, rq => rq.group_load_contribution(group))
    }

    /// See [`RunQueueOf::set_group_load_sum`].
    pub fn set_group_load_sum(&mut self, group: GroupId, sum: u64) {
        dispatch!(self, rq => rq.set_group_load_sum(group, sum))
    }

    /// See [`RunQueueOf::update_blocked_averages`].
    pub fn update_blocked_averages(&mut self, now: Nanoseconds) {
        dispatch!(self, rq => rq.update_blocked_averages(now))
    }

    /// See [`RunQueueOf::take_util_changed`].
    pub fn take_util_changed(&mut self) -> bool {
        dispatch!(self, rq => rq.take_util_changed())
    }

    /// See [`RunQueueOf::migrate_task_out`].
    pub fn migrate_task_out(&mut self, task: TaskId) -> Option<TaskMigration> {
        dispatch!(self, rq => rq.migrate_task_out(task))
    }

    /// See [`RunQueueOf::migrate_task_in`].
    pub fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &TaskMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        dispatch!(self, rq => rq.migrate_task_in(task, migration, now))
    }

    /// See [`RunQueueOf::set_cpu_capacity`].
    pub fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        dispatch!(self, rq => rq.set_cpu_capacity(capacity))
    }

    /// See [`RunQueueOf::cpu_capacity`].
    pub fn cpu_capacity(&self) -> CpuCapacity {
        dispatch!(self, rq => rq.cpu_capacity())
    }

    /// See [`RunQueueOf::task_signals`].
    #[inline]
    pub fn task_signals(&self, task: TaskId) -> TaskSignals {
        dispatch!(self, rq => rq.task_signals(task))
    }

    /// See [`RunQueueOf::task_wake_load`].
    pub fn task_wake_load(&self, task: TaskId) -> (u64, u64) {
        dispatch!(self, rq => rq.task_wake_load(task))
    }

    /// See [`RunQueueOf::task_signals_synced`].
    pub fn task_signals_synced(&self, task: TaskId) -> TaskSignals {
        dispatch!(self, rq => rq.task_signals_synced(task))
    }

    /// See [`RunQueueOf::group_signals`].
    pub fn group_signals(&self, group: GroupId) -> Option<GroupSignals> {
        dispatch!(self, rq => rq.group_signals(group))
    }

    /// See [`RunQueueOf::task_h_load`].
    pub fn task_h_load(&self, task: TaskId) -> u64 {
        dispatch!(self, rq => rq.task_h_load(task))
    }

    /// See [`RunQueueOf::signals`].
    #[inline(always)]
    pub fn signals(&self) -> RunQueueSignals {
        dispatch!(self, rq => rq.signals())
    }

    /// See [`RunQueueOf::pi_priority`].
    pub fn pi_priority(&self, task: TaskId) -> Option<u8> {
        dispatch!(self, rq => rq.pi_priority(task))
    }

    /// See [`RunQueueOf::rt_mutex_setprio`].
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
    fn reserve_tasks(&mut self, count: usize) {
        dispatch!(self, rq => rq.reserve_tasks(count))
    }
    fn task_storage_bytes(&self) -> usize {
        dispatch!(self, rq => rq.task_storage_bytes())
    }
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        dispatch!(self, rq => rq.slice_remaining(task, now))
    }
}
