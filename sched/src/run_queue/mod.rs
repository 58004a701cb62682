//! One CPU's run queue: the single object the mechanism keeps per CPU behind a
//! lock, and the only scheduler type it names.
//!
//! It is the full class stack of Linux's `core.c` ([`ClassStack`], facts §3.2):
//!
//! ```text
//!   pick order:  RT (SCHED_FIFO, SCHED_RR)  ──►  fair slot  ──►  idle (None)
//!   fair slot:   the policy chosen at boot: RoundRobin | Fair(CFS) | Fair(EEVDF)
//!                | a registered policy (crate::policies, behind a Box<dyn Policy>)
//!   enqueue:     uclamp_rq_inc (if uclamp is on) ─► the task's class
//!   dequeue:     uclamp_rq_dec (if uclamp is on) ─► the task's class
//! ```
//!
//! A task created with `Policy::Fifo`/`Policy::RoundRobin` goes to the RT class,
//! every other one to the fair slot, so a new policy plugs in here without any
//! change to the mechanism. It also carries the task-group API (create groups,
//! set shares, move tasks), the migration of a task's state between CPUs, and
//! the uclamp switch and queries; under round robin groups are accepted and
//! have no effect.

use alloc::vec;
use alloc::vec::Vec;

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::class_stack::{ClassKind, ClassStack};
use crate::fair::{CfsPick, EevdfPick, FairMigration, FairRunQueue, GroupError};
use crate::fair::{CfsTunables, EevdfTunables};
use crate::round_robin::RoundRobin;
use crate::rt::RtClass;
use crate::task::{GroupId, Nanoseconds, ParamError, Policy, TaskId, TaskParams};
use crate::uclamp::ClampId;

mod fair_class;
mod pi;
mod signals;

mod policy;
pub(crate) use fair_class::fair_class_without_groups;
pub use fair_class::{FairClass, FairView, GroupsAbove};
pub use policy::RunQueue;
pub(crate) use policy::dispatch;
pub use signals::{CpuCapacity, GroupSignals, RunQueueSignals, TaskSignals};

/// Group slots (the root included) of a run queue built with [`RunQueue::new`].
pub const DEFAULT_MAX_GROUPS: usize = 16;

/// The policy of the fair slot, chosen at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// [`RoundRobin`] with the given slice.
    RoundRobin {
        /// Time slice in nanoseconds.
        slice: Nanoseconds,
    },
    /// The fair class with the CFS pick (Linux ≤ v6.5, §1.4).
    Cfs(CfsTunables),
    /// The fair class with the EEVDF pick (Linux ≥ v6.6, §1.5).
    Eevdf(EevdfTunables),
    /// A registered policy ([`crate::policies`]), built per CPU from what
    /// it is told of the run queue (`max_tasks` filled in when built).
    Registered(crate::policies::PolicyId, crate::policies::PolicyContext),
}

impl PolicyKind {
    /// The policy of CPU `cpu`'s run queue: a registered policy's context
    /// told which CPU it serves ([`crate::policies::PolicyContext::cpu`]);
    /// the built-ins need not know.
    pub fn for_cpu(self, cpu: usize) -> PolicyKind {
        match self {
            PolicyKind::Registered(id, context) => {
                PolicyKind::Registered(id, crate::policies::PolicyContext { cpu, ..context })
            }
            kind => kind,
        }
    }
}

/// A task's state in transit from one CPU's run queue to another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskMigration {
    /// The task's parameters as last set (policy, affinity, clamp requests,
    /// group): enough to recreate it in any class.
    pub params: TaskParams,
    /// The fair state (vruntime offset, lag, weight, group, PELT), for a fair
    /// task under CFS or EEVDF.
    pub fair: Option<FairMigration>,
    /// The RT priority priority inheritance lends it (`rt_mutex_setprio`),
    /// which it keeps on the new CPU.
    pub pi_priority: Option<u8>,
}

/// What the run queue itself remembers of a task, for migration and queries.
#[derive(Clone, Copy, Debug, Default)]
struct TaskInfo {
    params: TaskParams,
    known: bool,
    queued: bool,
    /// The boost of priority inheritance ([`RunQueue::rt_mutex_setprio`]).
    pi_priority: Option<u8>,
}

/// One CPU's run queue for the fair-slot class `F`: RT above `F` above idle.
/// The kernel and the simulator reach it through their driver
/// ([`crate::cpu_core::CpuCore`]), which chooses `F` once per call; every
/// class operation below it is a static call.
#[derive(Debug)]
pub struct RunQueueOf<F: FairClass> {
    stack: ClassStack<F>,
    capacity: CpuCapacity,
    tasks: Vec<TaskInfo>,
    /// The fair state of the fair tasks boosted into the RT class, kept for
    /// their deboost (few: the owners of contended mutexes).
    pi_saved: Vec<(TaskId, FairMigration)>,
}

impl<F: FairClass> RunQueueOf<F> {
    /// A run queue for task ids below `max_tasks` around the fair-slot class
    /// `fair` (built for as many tasks), uclamp on.
    pub fn with_class(fair: F, max_tasks: usize) -> Self {
        RunQueueOf {
            stack: ClassStack::new(max_tasks, fair),
            capacity: CpuCapacity::default(),
            tasks: vec![TaskInfo::default(); max_tasks],
            pi_saved: Vec::new(),
        }
    }

    /// The fair run queue, when the policy is CFS or EEVDF, for what reports
    /// and signals read (not the class operations, which are static calls).
    pub fn fair(&self) -> Option<&dyn FairView> {
        self.stack.fair().view()
    }

    /// V of the fair queue of `group` (`avg_vruntime`, §1.5): explain mode's
    /// eligibility; `None` under round robin.
    pub fn avg_vruntime(&self, group: GroupId) -> Option<u64> {
        self.stack.fair().avg_vruntime(group)
    }

    /// Installs the counter that brackets the PELT and uclamp updates inside
    /// the core (`None` removes it); see [`crate::stats::probe`].
    pub fn set_cost_counter(&mut self, counter: Option<crate::stats::probe::CounterRead>) {
        self.stack.probe.set_counter(counter);
        self.stack.fair_mut().set_cost_counter(counter);
    }

    /// The counts spent in PELT updates and in uclamp updates since the last
    /// call, with their bracket counts.
    pub fn take_internal_costs(&mut self) -> crate::stats::probe::ProbeCosts {
        let mut costs = self.stack.probe.take();
        if let Some(pelt) = self.stack.fair_mut().take_pelt_costs() {
            costs.pelt = pelt.pelt;
            costs.pelt_brackets = pelt.pelt_brackets;
        }
        costs
    }

    /// The RT class (for reports and its throttling state).
    pub fn rt(&self) -> &RtClass {
        self.stack.rt()
    }

    /// The policy `task` was created (or migrated in) with; `None` if unknown.
    pub fn task_policy(&self, task: TaskId) -> Option<Policy> {
        self.stack.task_policy(task)
    }

    /// The class `task` belongs to; `None` if unknown.
    pub fn task_class(&self, task: TaskId) -> Option<ClassKind> {
        self.stack.task_class(task)
    }

    /// Whether the uclamp run-queue accounting runs (on by default).
    pub fn uclamp_enabled(&self) -> bool {
        self.stack.uclamp_enabled()
    }

    /// Turns the uclamp bucket accounting on or off (issue 4 measures its
    /// cost). Off, enqueue and dequeue skip it entirely and
    /// [`uclamp_value`](Self::uclamp_value) reads "no clamp" (0 / 1024, §3.1);
    /// on, the queued tasks are counted at once.
    pub fn set_uclamp_enabled(&mut self, enabled: bool) {
        let tasks = &self.tasks;
        self.stack.set_uclamp_enabled(enabled, |task| {
            tasks.get(task.index()).is_some_and(|info| info.queued)
        });
    }

    /// The run queue's clamp (`uclamp_rq_get`, §3.2): the max of the queued
    /// tasks' effective values, held while idle.
    pub fn uclamp_value(&self, clamp_id: ClampId) -> u16 {
        self.stack.uclamp_rq_value(clamp_id)
    }

    /// `uclamp_rq_is_idle` (§3.2): no task has been counted since the last
    /// one left, so [`uclamp_value`](Self::uclamp_value) is a held value.
    /// False while the accounting is off.
    pub fn uclamp_idle(&self) -> bool {
        self.stack.uclamp_enabled() && self.stack.uclamp_run_queue().is_idle()
    }

    /// `uclamp_eff_value(p, clamp_id)` (§3.3); `None` for an unknown task.
    pub fn uclamp_eff_value(&self, task: TaskId, clamp_id: ClampId) -> Option<u16> {
        self.stack.uclamp_eff_value(task, clamp_id)
    }

    /// `sched_setattr` with new clamp requests (`None`: the default, §3.1); a
    /// queued task is re-counted at once. Bad values are refused by name.
    pub fn set_task_uclamp(
        &mut self,
        task: TaskId,
        uclamp_min: Option<u16>,
        uclamp_max: Option<u16>,
    ) -> Result<(), ParamError> {
        self.stack.set_task_uclamp(task, uclamp_min, uclamp_max)?;
        let params = &mut self.tasks[task.index()].params;
        params.uclamp_min = uclamp_min;
        params.uclamp_max = uclamp_max;
        Ok(())
    }

    /// The mechanism found nothing to run and enters its idle loop at `now`
    /// (idle-time accounting of the idle class).
    pub fn set_next_idle(&mut self, now: Nanoseconds) {
        self.stack.set_next_idle(now);
    }

    /// `put_prev_task` at a context switch (see
    /// [`ClassStack::put_prev_task_for_switch`]): the pick and
    /// `set_next_task` or [`Self::set_next_idle`] must follow.
    #[inline(always)]
    pub fn put_prev_task_for_switch(&mut self, task: TaskId, now: Nanoseconds) {
        self.stack.put_prev_task_for_switch(task, now);
    }

    /// Creates a task group under `parent` with `shares` (`cpu.shares`,
    /// 2..=262144). Call it identically on every CPU: the ids then agree.
    pub fn create_group(&mut self, parent: GroupId, shares: u64) -> Result<GroupId, GroupError> {
        self.stack.fair_mut().create_group(parent, shares)
    }

    /// Removes an empty task group.
    pub fn remove_group(&mut self, group: GroupId) -> Result<(), GroupError> {
        self.stack.fair_mut().remove_group(group)
    }

    /// Sets a group's `cpu.shares` (2..=262144).
    pub fn set_group_shares(
        &mut self,
        group: GroupId,
        shares: u64,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        self.stack.fair_mut().set_group_shares(group, shares, now)
    }

    /// Moves `task` into `group`, whether it sleeps, waits or runs. An RT task
    /// keeps the group for when it becomes fair (no RT group scheduling).
    pub fn set_task_group(
        &mut self,
        task: TaskId,
        group: GroupId,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        match self.stack.task_class(task) {
            Some(ClassKind::Realtime) => {
                if F::IS_FAIR && !self.stack.fair().group_exists(group) {
                    return Err(GroupError::NoSuchGroup { group: group.0 });
                }
            }
            _ => {
                self.stack.fair_mut().set_task_group(task, group, now)?;
            }
        }
        if let Some(info) = self.tasks.get_mut(task.index())
            && info.known
        {
            info.params.group = group;
        }
        Ok(())
    }

    /// Connects the fair class to the groups' bandwidth pools as CPU `cpu`
    /// (§4.2); false when it was built without bandwidth control.
    pub fn attach_bandwidth(
        &mut self,
        pools: alloc::sync::Arc<crate::bandwidth::pools::BandwidthPools>,
        cpu: u16,
    ) -> bool {
        self.attach_bandwidth_with(crate::bandwidth::pools::PoolSource::Live(pools), cpu)
    }

    /// As [`attach_bandwidth`](Self::attach_bandwidth), reaching the pools
    /// as `source` says (live, recorded, or replayed from a record).
    pub fn attach_bandwidth_with(
        &mut self,
        source: crate::bandwidth::pools::PoolSource,
        cpu: u16,
    ) -> bool {
        self.stack.fair_mut().attach_bandwidth(source, cpu)
    }

    /// Queues a recorded pool answer for the replayed call that asks for it
    /// (false: the run queue does not replay its pools).
    pub fn queue_pool_answer(&mut self, answer: crate::bandwidth::runtime::PoolAnswer) -> bool {
        self.stack.fair_mut().queue_pool_answer(answer)
    }

    /// After a replayed call: what of the pools' use the record contradicts.
    pub fn take_pool_mismatch(&mut self) -> Option<crate::bandwidth::pools::PoolMismatch> {
        self.stack.fair_mut().take_pool_mismatch()
    }

    /// A group's limit was set (`limited`) or lifted, after its pool
    /// (`tg_set_cfs_bandwidth`, §4.1).
    pub fn set_group_bandwidth(
        &mut self,
        group: GroupId,
        limited: bool,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        self.stack
            .fair_mut()
            .set_group_bandwidth(group, limited, now)
    }

    /// Runtime granted to `group` here by its pool's timer (§4.2); whether
    /// its run queue was unthrottled.
    pub fn distribute_runtime(
        &mut self,
        group: GroupId,
        amount: Nanoseconds,
        unthrottle: bool,
        now: Nanoseconds,
    ) -> bool {
        self.stack
            .fair_mut()
            .distribute_runtime(group, amount, unthrottle, now)
    }

    /// The next bandwidth timer the run queues asked to arm.
    pub fn take_bandwidth_timer(&mut self) -> Option<crate::bandwidth::pools::BandwidthTimer> {
        self.stack.fair_mut().take_bandwidth_timer()
    }

    /// The function that arms a requested bandwidth timer at once
    /// ([`FairRunQueue::set_bandwidth_timer_hook`](crate::fair::FairRunQueue::set_bandwidth_timer_hook)).
    pub fn set_bandwidth_timer_hook(&mut self, hook: fn(crate::bandwidth::pools::BandwidthTimer)) {
        self.stack.fair_mut().set_bandwidth_timer_hook(hook)
    }

    /// Whether `task` is queued in a throttled hierarchy (it cannot run
    /// here, and load balancing leaves it, `throttled_lb_pair`).
    pub fn task_throttled(&self, task: TaskId) -> bool {
        self.stack.fair().task_throttled(task)
    }

    /// This CPU's contribution to the group-wide load of `group` (§2.7); the
    /// mechanism sums it over CPUs and hands the sum back with
    /// [`set_group_load_sum`](Self::set_group_load_sum).
    pub fn group_load_contribution(&self, group: GroupId) -> u64 {
        self.stack.fair().group_load_contribution(group)
    }

    /// Hands this CPU the group-wide load sum of `group` (`tg->load_avg`).
    pub fn set_group_load_sum(&mut self, group: GroupId, sum: u64) {
        self.stack.fair_mut().set_group_load_sum(group, sum);
    }

    /// Decays the PELT signals of group run queues nothing else updates
    /// (`update_blocked_averages`, §2.7); call it periodically, e.g. every tick
    /// or at load balance.
    pub fn update_blocked_averages(&mut self, now: Nanoseconds) {
        self.stack.fair_mut().update_blocked_averages(now);
    }

    /// Whether this CPU's fair utilization changed since the last call (the
    /// frequency governor's hook, §2.6).
    pub fn take_util_changed(&mut self) -> bool {
        self.stack.fair_mut().take_util_changed()
    }

    /// Takes a known task that is not queued off this CPU; `None` if it is
    /// unknown or still queued.
    pub fn migrate_task_out(&mut self, task: TaskId) -> Option<TaskMigration> {
        let info = *self.tasks.get(task.index())?;
        if !info.known || info.queued {
            return None;
        }
        let fair_task = self.stack.task_class(task) == Some(ClassKind::Fair);
        let fair = if !F::IS_FAIR {
            None
        } else if fair_task {
            Some(self.stack.fair_mut().migrate_task_out(task)?)
        } else if info.pi_priority.is_some() {
            // Boosted: its fair state waits here for the deboost.
            self.take_pi_saved(task)
        } else {
            None
        };
        self.task_dead(task);
        let mut params = info.params;
        if let Some(m) = &fair {
            params.group = m.group;
        }
        Some(TaskMigration {
            params,
            fair,
            pi_priority: info.pi_priority,
        })
    }

    /// Makes a migrated task known here; then enqueue it with
    /// `EnqueueFlags { migrated: true, .. }`.
    pub fn migrate_task_in(
        &mut self,
        task: TaskId,
        migration: &TaskMigration,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        self.task_new(task, &migration.params, now)?;
        let fair_task = self.stack.task_class(task) == Some(ClassKind::Fair);
        if let Some(m) = &migration.fair
            && fair_task
        {
            self.stack.fair_mut().migrate_task_in(task, m, now)?;
        }
        if migration.pi_priority.is_some() {
            // Not queued, not running: no reschedule to carry out.
            let _ = self.rt_mutex_setprio(task, migration.pi_priority, now, None)?;
        }
        Ok(())
    }

    /// Sets the capacity and frequency this CPU runs at from now on, which scales
    /// the PELT clock (§2.3).
    pub fn set_cpu_capacity(&mut self, capacity: CpuCapacity) {
        self.capacity = capacity;
        self.stack.fair_mut().set_cpu_capacity(capacity);
    }

    /// The capacity last set.
    pub fn cpu_capacity(&self) -> CpuCapacity {
        self.capacity
    }

    /// The signals of `task`, which must be known to this run queue (an RT
    /// task reports its run time only: RT PELT is not modelled).
    pub fn task_signals(&self, task: TaskId) -> TaskSignals {
        if self.stack.task_class(task) == Some(ClassKind::Realtime) {
            return TaskSignals {
                sum_exec_runtime: self.stack.rt().sum_exec_runtime(task),
                ..TaskSignals::default()
            };
        }
        match self.fair() {
            Some(fair) => match fair.task_entity(task) {
                Some(entity) => TaskSignals {
                    vruntime: fair.task_vruntime(task),
                    sum_exec_runtime: entity.sum_exec_runtime,
                    util_avg: entity.avg.util_avg,
                    load_avg: entity.avg.load_avg,
                    runnable_avg: entity.avg.runnable_avg,
                    util_est: entity.avg.util_est.ewma,
                },
                None => TaskSignals::default(),
            },
            None => TaskSignals::default(),
        }
    }

    /// The waking `task`'s `load_avg` and `task_util_est` (the larger of
    /// util_avg and util_est, §2.4), as [`task_signals`](Self::task_signals)
    /// gives them: all that wake-up placement on identical CPUs weighs, so a
    /// wake-up there does not work out the task's vruntime or copy the rest.
    pub fn task_wake_load(&self, task: TaskId) -> (u64, u64) {
        if self.stack.task_class(task) == Some(ClassKind::Realtime) {
            return (0, 0);
        }
        self.fair()
            .and_then(|fair| fair.task_entity(task))
            .map_or((0, 0), |entity| {
                let avg = &entity.avg;
                (avg.load_avg, avg.util_avg.max(avg.util_est.ewma))
            })
    }

    /// [`task_signals`](Self::task_signals) with the PELT averages of a
    /// sleeping task aged to its run queue's last update
    /// (`sync_entity_load_avg`, §2.6), as Linux's wake-up placement reads
    /// them on asymmetric CPUs and in `find_energy_efficient_cpu` (§5.4
    /// step 4). util_est does not decay while the task sleeps.
    pub fn task_signals_synced(&self, task: TaskId) -> TaskSignals {
        let mut signals = self.task_signals(task);
        let Some(fair) = self.fair() else {
            return signals;
        };
        let Some(entity) = fair.task_entity(task) else {
            return signals;
        };
        if entity.on_rq || entity.avg.last_update_time == 0 {
            return signals;
        }
        if let Some(queue) = fair.group_queue(entity.queue) {
            let mut avg = entity.avg;
            crate::pelt::update::sync_entity_load_avg(&mut avg, &queue.pelt, entity.weight());
            signals.util_avg = avg.util_avg;
            signals.load_avg = avg.load_avg;
            signals.runnable_avg = avg.runnable_avg;
        }
        signals
    }

    /// The signals of task group `group` (not the root) on this CPU; `None`
    /// if it does not exist here.
    pub fn group_signals(&self, group: GroupId) -> Option<GroupSignals> {
        let Some(fair) = self.fair() else {
            return self
                .stack
                .fair()
                .group_exists(group)
                .then(GroupSignals::default);
        };
        let entity = fair.group_entity_of(group)?;
        let queue = fair.group_queue(group)?;
        Some(GroupSignals {
            load_avg: queue.pelt.avg.load_avg,
            util_avg: queue.pelt.avg.util_avg,
            runnable_avg: queue.pelt.avg.runnable_avg,
            entity_weight: entity.load.scaled_down(),
            entity_load_avg: entity.avg.load_avg,
            tg_load_avg: queue.tg_load_avg,
        })
    }

    /// Linux's `task_h_load`: the task's load as the root run queue sees it
    /// through its groups, which load balancing weighs tasks by (§2.7):
    /// `h_load(root) = root.load_avg`, `h_load(q) = h_load(parent) ×
    /// se(q).load_avg / (parent.load_avg + 1)`, and the task's is
    /// `load_avg × h_load(q) / (q.load_avg + 1)` for the queue `q` it is on.
    /// Without groups (or without the fair class) it is the task's own load.
    pub fn task_h_load(&self, task: TaskId) -> u64 {
        let own = self.task_signals(task).load_avg;
        let Some(fair) = self.fair() else { return own };
        let Some(queue) = fair.task_entity(task).map(|e| e.queue) else {
            return own;
        };
        if queue == GroupId::ROOT {
            return own;
        }
        // The path from the task's queue up to the root, then back down.
        let mut path = [GroupId::ROOT; 32];
        let mut depth = 0;
        let mut group = queue;
        while group != GroupId::ROOT && depth < path.len() {
            path[depth] = group;
            depth += 1;
            group = match fair.group_entity_of(group) {
                Some(entity) => entity.queue,
                None => return own,
            };
        }
        let load_of = |g: GroupId| fair.group_queue(g).map_or(0, |q| q.pelt.avg.load_avg);
        let mut h_load = u128::from(load_of(GroupId::ROOT));
        for &group in path[..depth].iter().rev() {
            let Some(entity) = fair.group_entity_of(group) else {
                return own;
            };
            h_load =
                h_load * u128::from(entity.avg.load_avg) / (u128::from(load_of(entity.queue)) + 1);
        }
        (u128::from(own) * h_load / (u128::from(load_of(queue)) + 1)) as u64
    }

    /// The run queue's aggregate signals.
    #[inline(always)]
    pub fn signals(&self) -> RunQueueSignals {
        let nr_running = self.stack.nr_running();
        match self.fair().and_then(|fair| fair.group_queue(GroupId::ROOT)) {
            Some(root) => RunQueueSignals {
                nr_running,
                util_avg: root.pelt.avg.util_avg,
                load_avg: root.pelt.avg.load_avg,
                runnable_avg: root.pelt.avg.runnable_avg,
                util_est: root.pelt.avg.util_est.enqueued,
            },
            None => RunQueueSignals {
                nr_running,
                ..RunQueueSignals::default()
            },
        }
    }
}

impl<F: FairClass> SchedClass for RunQueueOf<F> {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        self.stack.task_new(task, params, now)?;
        self.tasks[task.index()] = TaskInfo {
            params: *params,
            known: true,
            queued: false,
            pi_priority: None,
        };
        Ok(())
    }
    fn task_dead(&mut self, task: TaskId) {
        self.stack.task_dead(task);
        let _ = self.take_pi_saved(task);
        if let Some(info) = self.tasks.get_mut(task.index()) {
            *info = TaskInfo::default();
        }
    }
    #[inline]
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        if let Some(info) = self.tasks.get_mut(task.index()) {
            info.queued = info.known;
        }
        self.stack.enqueue_task(task, now, flags)
    }
    #[inline]
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        if let Some(info) = self.tasks.get_mut(task.index()) {
            info.queued = false;
        }
        self.stack.dequeue_task(task, now, flags)
    }
    #[inline]
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.stack.pick_next_task(now)
    }
    #[inline]
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.stack.put_prev_task(task, now)
    }
    #[inline]
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.stack.set_next_task(task, now)
    }
    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        self.stack.task_tick(task, now)
    }
    #[inline]
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        self.stack.wakeup_preempt(current, woken, now)
    }
    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.stack.yield_task(task, now)
    }
    #[inline]
    fn nr_running(&self) -> usize {
        self.stack.nr_running()
    }
    fn reserve_tasks(&mut self, count: usize) {
        crate::task::grow_table(&mut self.tasks, count, TaskInfo::default());
        self.stack.reserve_tasks(count);
    }
    fn task_storage_bytes(&self) -> usize {
        crate::task::table_bytes(&self.tasks) + self.stack.task_storage_bytes()
    }
    #[inline]
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        self.stack.slice_remaining(task, now)
    }
}

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod tests;
