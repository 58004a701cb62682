//! The driver's decisions, compiled for each policy (`CoreState`'s methods
//! over [`RunQueueOf`]): what each [`CpuCore`](super::CpuCore) call does
//! once it has dispatched on the run queue's policy, and its record.

use super::record::{Input, Output};
use super::{CoreState, Decision, Leaving, Switch, TimerRequest};
use crate::bandwidth::pools::PoolSource;
use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::fair::GroupError;
use crate::run_queue::{FairClass, RunQueueOf, TaskMigration};
use crate::stats::probe::CounterRead;
use crate::task::{GroupId, Nanoseconds, ParamError, TaskId, TaskParams};

impl CoreState {
    /// Starts measuring an operation on the run queue: the counter and its
    /// reading, when there is a counter.
    ///
    /// The operation runs between [`Self::measure_start`] and
    /// [`Self::measure_end`] in its caller's body rather than in a closure
    /// handed to a measuring function: the compiler kept such a closure (the
    /// whole enqueue, dequeue or pick) as a function of its own, a call with
    /// its prologue and epilogue at each of them.
    #[inline(always)]
    pub(super) fn measure_start<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
    ) -> Option<(CounterRead, u64)> {
        self.cost_counter.map(|counter| {
            // Probe counts from outside this operation are not its own.
            let outside = rq.take_internal_costs();
            self.op_costs.other_internal.add(outside);
            (counter, counter())
        })
    }

    /// The counts since [`Self::measure_start`], when there is a counter.
    #[inline(always)]
    pub(super) fn measure_end(started: Option<(CounterRead, u64)>) -> Option<u64> {
        started.map(|(counter, start)| counter().wrapping_sub(start))
    }

    #[inline(always)]
    pub(super) fn record(&mut self, now: Nanoseconds, input: Input, output: Output) {
        if self.recording.is_some() {
            self.push_record(now, input, output);
        }
    }

    /// Appends the record of a call, after the pool answers the run queue
    /// was given during it (from the tape it shares with its link).
    #[inline(never)]
    pub(super) fn push_record(&mut self, now: Nanoseconds, input: Input, output: Output) {
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
    pub(super) fn record_decision(
        &mut self,
        now: Nanoseconds,
        input: Input,
        decision: Decision,
    ) -> Decision {
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
    pub(super) fn record_result<T, E>(
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
    pub(super) fn hrtick_request<F: FairClass>(
        &self,
        rq: &RunQueueOf<F>,
        now: Nanoseconds,
    ) -> TimerRequest {
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
    pub(super) fn check_preempt<F: FairClass>(
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
    pub(super) fn enqueue<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        flags: EnqueueFlags,
    ) {
        let started = self.measure_start(rq);
        rq.enqueue_task(task, now, flags);
        let cost = Self::measure_end(started);
        self.op_costs.enqueue = cost;
        if cost.is_some() {
            self.op_costs.enqueue_internal = rq.take_internal_costs();
        }
        self.cfs_tasks.move_to_head(task);
    }

    #[inline]
    pub(super) fn dequeue<F: FairClass>(
        &mut self,
        rq: &mut RunQueueOf<F>,
        task: TaskId,
        now: Nanoseconds,
        flags: DequeueFlags,
    ) {
        let started = self.measure_start(rq);
        rq.dequeue_task(task, now, flags);
        let cost = Self::measure_end(started);
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
        let started = self.measure_start(rq);
        let next = rq.pick_next_task(now);
        match next {
            Some(next) => rq.set_next_task(next, now),
            None => rq.set_next_idle(now),
        }
        self.op_costs.pick = Self::measure_end(started);
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
    pub(super) fn after_unthrottle<F: FairClass>(&self, rq: &RunQueueOf<F>) -> Decision {
        Decision {
            resched: self.current.is_none() && rq.nr_running() > 0,
            hrtick: TimerRequest::Keep,
        }
    }

    /// See [`CpuCore::attach_bandwidth`] (and a replay's `AttachBandwidth`).
    pub(super) fn attach_bandwidth<F: FairClass>(
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
