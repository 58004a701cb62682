//! The CPU side of the engine: time accounting, placement, and carrying out the
//! decisions of each CPU's driver (`fairway_sched::cpu_core::CpuCore`, the one the
//! kernel uses) at wake-ups, ticks, slice ends and `schedule()`.

use fairway_sched::cpu_core::{Decision, Leaving, TimerRequest};
use fairway_sched::task::{CpuId, CpuMask, TaskId};
use fairway_trace::{Event, PrevState};

use super::{Kind, Remaining, STEP_LIMIT, Simulation, TaskState};
use crate::SimError;
use crate::results::Switch;

impl Simulation<'_> {
    /// Brings `cpu`'s busy/idle time and its running task's progress up to now.
    pub(super) fn update_cpu(&mut self, cpu: usize) {
        let now = self.now;
        let state = &mut self.cpus[cpu];
        let delta = now - state.last_update;
        state.last_update = now;
        if delta == 0 {
            return;
        }
        match state.current {
            Some(t)
                if self.tasks[t].state == TaskState::Running && self.tasks[t].cpu == Some(cpu) =>
            {
                state.result.busy_ns += delta;
                let speed = u128::from(state.capacity.capacity_orig)
                    * u128::from(state.capacity.frequency_scale);
                let task = &mut self.tasks[t];
                task.result.runtime_ns += delta;
                task.remaining = match task.remaining {
                    Some(Remaining::Work(w)) => {
                        Some(Remaining::Work(w.saturating_sub(u128::from(delta) * speed)))
                    }
                    Some(Remaining::Wall(w)) => Some(Remaining::Wall(w.saturating_sub(delta))),
                    None => None,
                };
            }
            _ => state.result.idle_ns += delta,
        }
    }

    /// Schedules the completion of the running task's busy event, forgetting any earlier one.
    pub(super) fn arm_completion(&mut self, cpu: usize) {
        self.cpus[cpu].generation += 1;
        let Some(t) = self.cpus[cpu].current else {
            return;
        };
        let task = &self.tasks[t];
        if task.state != TaskState::Running || task.cpu != Some(cpu) {
            return;
        }
        let capacity = self.cpus[cpu].capacity;
        let speed = u128::from(capacity.capacity_orig) * u128::from(capacity.frequency_scale);
        let delay = match task.remaining {
            Some(Remaining::Work(w)) => w.div_ceil(speed) as u64,
            Some(Remaining::Wall(w)) => w,
            None => return,
        };
        let generation = self.cpus[cpu].generation;
        self.push(self.now + delay, Kind::Completion { cpu, generation });
    }

    pub(super) fn complete(&mut self, cpu: usize) -> Result<(), SimError> {
        self.update_cpu(cpu);
        let Some(t) = self.cpus[cpu].current else {
            return Ok(());
        };
        self.tasks[t].remaining = None;
        let now = self.now;
        if let Some(log) = self.rtapp_log(t) {
            log.run_end(now);
        }
        self.advance(t)?;
        self.arm_completion(cpu);
        Ok(())
    }

    pub(super) fn least_loaded(&self, affinity: CpuMask) -> usize {
        (0..self.cpus.len())
            .filter(|&c| affinity.contains(CpuId(c as u16)))
            .min_by_key(|&c| (self.cpus[c].core.run_queue().signals().nr_running, c))
            .unwrap_or(0)
    }

    /// Carries out `cpu`'s driver's decision: a reschedule, and the slice-end
    /// timer as an event (a new generation forgets the timer armed before).
    pub(super) fn carry_out(&mut self, cpu: usize, decision: Decision) {
        if decision.resched {
            self.cpus[cpu].need_resched = true;
        }
        self.carry_out_hrtick(cpu, decision.hrtick);
    }

    /// Carries out a slice-end timer request of `cpu`'s driver.
    pub(super) fn carry_out_hrtick(&mut self, cpu: usize, request: TimerRequest) {
        match request {
            TimerRequest::Keep => {}
            TimerRequest::Cancel => self.cpus[cpu].hrtick_generation += 1,
            TimerRequest::Arm(at) => {
                self.cpus[cpu].hrtick_generation += 1;
                let generation = self.cpus[cpu].hrtick_generation;
                self.push(at, Kind::Hrtick { cpu, generation });
            }
        }
    }

    /// Marks `task` queued on `cpu` from now.
    fn mark_queued(&mut self, task: usize, cpu: usize) {
        let t = &mut self.tasks[task];
        t.state = TaskState::Runnable;
        t.cpu = Some(cpu);
        t.runnable_since = self.now;
    }

    /// A task that moved from another CPU is queued on `cpu` (balancing's
    /// `attach_task`).
    pub(super) fn attach(&mut self, task: usize, cpu: usize) {
        self.mark_queued(task, cpu);
        let decision = self.cpus[cpu]
            .core
            .attach_task(TaskId(task as u16), self.now);
        self.carry_out(cpu, decision);
    }

    /// `cpu`'s running task's slice-end timer fired: the driver decides.
    pub(super) fn hrtick(&mut self, cpu: usize) {
        self.update_cpu(cpu);
        let decision = self.cpus[cpu].core.hrtick(self.now);
        self.carry_out(cpu, decision);
    }

    pub(super) fn start(&mut self, task: usize) -> Result<(), SimError> {
        if self.resources.priority_inheritance() {
            // Its priority for the mutexes' inheritance, for the whole run
            // (validation refuses a phase that changes the policy).
            self.resources
                .set_policy(task, self.tasks[task].params.policy);
        }
        let cpu = self.least_loaded(self.tasks[task].params.affinity);
        // A task's start is not a wake-up (Linux counts `try_to_wake_up`s,
        // not `wake_up_new_task`; the kernel's report the same): no wake-up
        // latency is measured for it (docs/report-format.md, `wakeups`).
        self.tasks[task].iteration_start = self.now;
        self.update_cpu(cpu);
        let params = self.tasks[task].params;
        let decision = self.cpus[cpu]
            .core
            .wake_up_new_task(TaskId(task as u16), &params, self.now)
            .map_err(|error| SimError::Params {
                task: self.tasks[task].name.clone(),
                error,
            })?;
        self.mark_queued(task, cpu);
        self.trace_event(
            cpu,
            Event::WakeupNew {
                task,
                target_cpu: cpu,
            },
        );
        self.carry_out(cpu, decision);
        self.governor_call(cpu, false, false);
        Ok(())
    }

    /// Wakes `task`, woken from CPU `waker` (its own for a timer): the CPU it
    /// last ran on chooses where it runs (`select_task_rq`, with balancing on;
    /// else it stays unless its affinity excludes that CPU), then the local
    /// half of the wake-up there.
    pub(super) fn wake(&mut self, task: usize, waker: Option<usize>) -> Result<(), SimError> {
        let previous = self.tasks[task].cpu.unwrap_or(0);
        let affinity = self.tasks[task].params.affinity;
        // find_energy_efficient_cpu's estimates, kept for `--explain`.
        let mut estimates = Vec::new();
        let explaining = self.explaining();
        let target = match &self.balancer {
            Some(balancer) => {
                let waker = waker.unwrap_or(previous);
                let snapshots = self.balance_snapshots();
                let waker_load = self.cpus[waker].core.run_queue().signals().load_avg;
                self.cpus[previous]
                    .core
                    .select_task_rq_observed(
                        TaskId(task as u16),
                        CpuId(waker as u16),
                        affinity,
                        waker_load,
                        balancer.topology(),
                        &snapshots,
                        self.energy_context(),
                        |estimate| {
                            if explaining {
                                estimates.push(estimate);
                            }
                        },
                    )
                    .cpu
                    .index()
            }
            None if affinity.contains(CpuId(previous as u16)) => previous,
            None => self.least_loaded(affinity),
        };
        self.explain_wake(task, previous, target, estimates);
        let waker_cpu = waker.unwrap_or(previous);
        self.trace_event(
            waker_cpu,
            Event::Waking {
                waker: waker.and_then(|cpu| self.cpus[cpu].current),
                task,
                target_cpu: target,
            },
        );
        let (cpu, migrated) = if target == previous {
            (previous, false)
        } else {
            self.migrate(task, previous, target)?;
            (target, true)
        };
        self.tasks[task].woke_at = Some(self.now);
        self.update_cpu(cpu);
        self.mark_queued(task, cpu);
        let decision = self.cpus[cpu]
            .core
            .try_to_wake_up(TaskId(task as u16), self.now, migrated);
        self.trace_event(
            cpu,
            Event::Wakeup {
                task,
                target_cpu: cpu,
            },
        );
        self.carry_out(cpu, decision);
        self.governor_call(cpu, false, false);
        self.note_overutilized(cpu);
        Ok(())
    }

    /// Moves a task that is not queued from `from` to `to` (`migrate_task_out`,
    /// `migrate_task_in`): its fair state and PELT signals go with it (§2.6).
    pub(super) fn migrate(&mut self, task: usize, from: usize, to: usize) -> Result<(), SimError> {
        let id = TaskId(task as u16);
        let now = self.now;
        let migration = self.cpus[from]
            .core
            .migrate_task_out(id, now)
            .ok_or_else(|| {
                SimError::Config(format!(
                    "task {}: cannot migrate it off cpu{from}",
                    self.tasks[task].name
                ))
            })?;
        self.cpus[to]
            .core
            .migrate_task_in(id, &migration, now)
            .map_err(|error| SimError::Params {
                task: self.tasks[task].name.clone(),
                error,
            })?;
        self.tasks[task].result.migrations += 1;
        self.trace_event(
            to,
            Event::Migrate {
                task,
                orig_cpu: from,
                dest_cpu: to,
            },
        );
        Ok(())
    }

    /// Moves `task`, running on `from`, to `to` at once (an affinity change,
    /// or active balance's stopper): dequeued and put down as the running
    /// task, moved with its state, enqueued on `to`; `from` reschedules.
    pub(super) fn move_running(
        &mut self,
        task: usize,
        from: usize,
        to: usize,
    ) -> Result<(), SimError> {
        use fairway_sched::class::DequeueFlags;
        self.update_cpu(from);
        let flags = DequeueFlags {
            migrating: true,
            ..DequeueFlags::default()
        };
        // The driver also puts the task down as the running one.
        self.cpus[from]
            .core
            .dequeue_task(TaskId(task as u16), self.now, flags);
        self.cpus[from].need_resched = true;
        self.migrate(task, from, to)?;
        self.tasks[task].result.involuntary_switches += 1;
        self.update_cpu(to);
        self.attach(task, to);
        Ok(())
    }

    /// `cpu`'s tick: the running task's `task_tick`, then (with `balance`) periodic
    /// load balancing from this CPU, as the kernel's `scheduler_tick` does.
    pub(super) fn tick(&mut self, cpu: usize) -> Result<(), SimError> {
        self.update_cpu(cpu);
        self.apply_frequency_scale(cpu);
        let decision = self.cpus[cpu].core.sched_tick(self.now);
        self.trace_signals(cpu, self.cpus[cpu].current);
        self.carry_out(cpu, decision);
        self.governor_call(cpu, false, true);
        self.note_overutilized(cpu);
        self.periodic_balance(cpu)
    }

    pub(super) fn reschedule_all(&mut self) -> Result<(), SimError> {
        while let Some(cpu) = self.cpus.iter().position(|c| c.need_resched) {
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err(SimError::Stuck {
                    time_ns: self.now,
                    cpu: Some(cpu),
                    what: format!("more than {STEP_LIMIT} zero-time steps, the last a reschedule"),
                });
            }
            self.schedule(cpu)?;
        }
        Ok(())
    }

    /// Linux's `__schedule()` on `cpu`, decided by its driver; the engine
    /// carries it out (accounting, the switch record, the next task's program).
    pub(super) fn schedule(&mut self, cpu: usize) -> Result<(), SimError> {
        self.update_cpu(cpu);
        let now = self.now;
        self.cpus[cpu].need_resched = false;
        let previous = self.cpus[cpu].current;
        let leaving = match self.cpus[cpu].core.current() {
            Some(t) => match self.tasks[t.index()].state {
                TaskState::Sleeping => Leaving::Sleeping,
                TaskState::Done => Leaving::Dead,
                _ => Leaving::Runnable,
            },
            None => Leaving::Runnable,
        };
        let switch = self.cpus[cpu].core.schedule(now, leaving);
        let next = switch.next.map(|t| t.index());
        if let Some(candidates) = self.explain_candidates(cpu, previous) {
            self.explain_pick(cpu, candidates, next);
        } else if let Some(candidates) = self.explain_rr_candidates(cpu, previous, next) {
            self.explain_rr_pick(cpu, candidates, next);
        } else {
            self.explain_policy_pick(cpu, previous, next);
        }
        self.cpus[cpu].current = next;
        if let Some(p) = previous
            && previous != next
        {
            // Linux's `exec_start` of a task that stops running: its last
            // `update_curr`, now (what `task_hot` measures from).
            self.tasks[p].exec_start = now;
        }
        if previous != next {
            self.cpus[cpu].result.context_switches += 1;
            if let Some(p) = previous {
                let task = &mut self.tasks[p];
                if task.state == TaskState::Running && task.cpu == Some(cpu) {
                    task.state = TaskState::Runnable;
                    task.runnable_since = now;
                    task.result.involuntary_switches += 1;
                }
            }
            if let Some(n) = next {
                let task = &mut self.tasks[n];
                task.state = TaskState::Running;
                task.result.cpus_run_on |= 1 << cpu;
                task.result.wait_ns += now - task.runnable_since;
                if let Some(woke) = task.woke_at.take() {
                    task.latencies.push(now - woke);
                }
                if let Some(log) = self.rtapp_log(n) {
                    log.running(now);
                }
            }
            self.switches.push(Switch {
                time_ns: now,
                cpu,
                previous,
                next,
            });
            if previous.is_none() {
                self.trace_event(cpu, Event::CpuIdle { state: None });
            }
            let prev_state = match (previous, leaving) {
                (None, _) => PrevState::Runnable,
                (Some(_), Leaving::Sleeping) => PrevState::Sleeping,
                (Some(_), Leaving::Dead) => PrevState::Dead,
                (Some(_), Leaving::Runnable) => PrevState::Preempted,
            };
            self.trace_event(
                cpu,
                Event::Switch {
                    prev: previous,
                    prev_state,
                    next,
                },
            );
            if next.is_none() {
                self.trace_event(cpu, Event::CpuIdle { state: Some(0) });
            }
            // The task leaving, as its dequeue or put left its signals (a task going
            // to sleep is at its peak): a chart drawn from switch-ins alone shows
            // only the troughs of a periodic task.
            if previous.is_some() {
                self.trace_signals(cpu, previous);
            }
            self.trace_signals(cpu, next);
        }
        if let Some(n) = next
            && self.tasks[n].remaining.is_none()
        {
            self.advance(n)?;
        }
        self.arm_completion(cpu);
        self.carry_out_hrtick(cpu, switch.hrtick);
        self.governor_call(cpu, previous != next, false);
        if switch.newidle_balance() {
            // Nothing to run: newly-idle balancing pulls now rather than at the tick.
            self.newidle_balance(cpu)?;
        }
        Ok(())
    }
}
