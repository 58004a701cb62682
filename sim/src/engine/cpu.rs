//! The CPU side of the engine: time accounting, placement, wake-up, tick and `schedule()`.

use fairway_sched::class::{EnqueueFlags, SchedClass};
use fairway_sched::task::{CpuId, CpuMask, TaskId};

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
        self.advance(t)?;
        self.arm_completion(cpu);
        Ok(())
    }

    pub(super) fn least_loaded(&self, affinity: CpuMask) -> usize {
        (0..self.cpus.len())
            .filter(|&c| affinity.contains(CpuId(c as u16)))
            .min_by_key(|&c| (self.cpus[c].run_queue.nr_running(), c))
            .unwrap_or(0)
    }

    pub(super) fn register(&mut self, task: usize, cpu: usize) -> Result<(), SimError> {
        let params = self.tasks[task].params;
        self.cpus[cpu]
            .run_queue
            .task_new(TaskId(task as u16), &params, self.now)
            .map_err(|error| SimError::Params {
                task: self.tasks[task].name.clone(),
                error,
            })
    }

    /// Enqueues a woken (or new, or migrated) task on `cpu` and asks whether it preempts.
    pub(super) fn enqueue(&mut self, task: usize, cpu: usize, flags: EnqueueFlags) {
        let now = self.now;
        self.lru_sequence += 1;
        let t = &mut self.tasks[task];
        t.state = TaskState::Runnable;
        t.cpu = Some(cpu);
        t.runnable_since = now;
        t.lru = self.lru_sequence;
        let state = &mut self.cpus[cpu];
        state
            .run_queue
            .enqueue_task(TaskId(task as u16), now, flags);
        match state.current {
            Some(current)
                if self.tasks[current].state == TaskState::Running
                    && self.tasks[current].cpu == Some(cpu) =>
            {
                let decision = state.run_queue.wakeup_preempt(
                    TaskId(current as u16),
                    TaskId(task as u16),
                    now,
                );
                if decision.is_needed() {
                    state.need_resched = true;
                } else {
                    // A new competitor: the running task's slice now has an end.
                    self.arm_hrtick(cpu);
                }
            }
            _ => state.need_resched = true,
        }
    }

    /// Arms `cpu`'s slice-end timer at `now + slice_remaining(current)`, or cancels it
    /// when the policy says nothing would preempt the running task (the kernel's
    /// `update_hrtick`, Linux's `hrtick_start_fair`). Nothing when `hrtick` is off.
    pub(super) fn arm_hrtick(&mut self, cpu: usize) {
        if !self.config.hrtick {
            return;
        }
        let now = self.now;
        let state = &mut self.cpus[cpu];
        state.hrtick_generation += 1;
        let Some(t) = state.current else {
            return;
        };
        if self.tasks[t].state != TaskState::Running || self.tasks[t].cpu != Some(cpu) {
            return;
        }
        if let Some(remaining) = state.run_queue.slice_remaining(TaskId(t as u16), now) {
            let generation = state.hrtick_generation;
            self.push(now + remaining, Kind::Hrtick { cpu, generation });
        }
    }

    /// `task_tick` for `cpu`'s running task, marking the CPU for a reschedule
    /// when the policy asks; `None` when no task runs there, else whether it
    /// asked.
    fn tick_running_task(&mut self, cpu: usize) -> Option<bool> {
        let t = self.cpus[cpu].current?;
        if self.tasks[t].state != TaskState::Running || self.tasks[t].cpu != Some(cpu) {
            return None;
        }
        self.update_cpu(cpu);
        let needed = self.cpus[cpu]
            .run_queue
            .task_tick(TaskId(t as u16), self.now)
            .is_needed();
        if needed {
            self.cpus[cpu].need_resched = true;
        }
        Some(needed)
    }

    /// The slice-end timer fired: the running task's slice is over if the policy says so.
    pub(super) fn hrtick(&mut self, cpu: usize) {
        if self.tick_running_task(cpu) == Some(false) {
            // A tick between arming and firing charged the run time in two parts, and
            // the rounding of the weighted clock can leave the slice a few ns short
            // (§1.2). The kernel's handler reads the clock later than the expiry, so it
            // never sees this; here the timer is armed again for what is left. The tick
            // kept the task, so what is left lies ahead (EEVDF's `slice_remaining`
            // counts a charge of at least 1 ns); a policy that said 0 here would hold
            // virtual time still, which `EVENT_LIMIT` turns into an error.
            self.arm_hrtick(cpu);
        }
    }

    pub(super) fn start(&mut self, task: usize) -> Result<(), SimError> {
        if self.resources.priority_inheritance() {
            // Its priority for the mutexes' inheritance, for the whole run
            // (validation refuses a phase that changes the policy).
            self.resources
                .set_policy(task, self.tasks[task].params.policy);
        }
        let cpu = self.least_loaded(self.tasks[task].params.affinity);
        self.register(task, cpu)?;
        self.tasks[task].woke_at = Some(self.now);
        self.tasks[task].iteration_start = self.now;
        let flags = EnqueueFlags {
            initial: true,
            ..EnqueueFlags::default()
        };
        self.enqueue(task, cpu, flags);
        Ok(())
    }

    pub(super) fn wake(&mut self, task: usize) -> Result<(), SimError> {
        let previous = self.tasks[task].cpu.unwrap_or(0);
        let affinity = self.tasks[task].params.affinity;
        let mut flags = EnqueueFlags {
            wakeup: true,
            ..EnqueueFlags::default()
        };
        let cpu = if affinity.contains(CpuId(previous as u16)) {
            previous
        } else {
            let target = self.least_loaded(affinity);
            self.migrate(task, previous, target)?;
            flags.migrated = true;
            target
        };
        self.tasks[task].woke_at = Some(self.now);
        self.enqueue(task, cpu, flags);
        Ok(())
    }

    /// Moves a task that is not queued from `from` to `to` (`migrate_task_out`,
    /// `migrate_task_in`): its fair state and PELT signals go with it (§2.6).
    pub(super) fn migrate(&mut self, task: usize, from: usize, to: usize) -> Result<(), SimError> {
        let id = TaskId(task as u16);
        let migration = self.cpus[from]
            .run_queue
            .migrate_task_out(id)
            .ok_or_else(|| {
                SimError::Config(format!(
                    "task {}: cannot migrate it off cpu{from}",
                    self.tasks[task].name
                ))
            })?;
        self.cpus[to]
            .run_queue
            .migrate_task_in(id, &migration, self.now)
            .map_err(|error| SimError::Params {
                task: self.tasks[task].name.clone(),
                error,
            })?;
        self.tasks[task].result.migrations += 1;
        Ok(())
    }

    /// `cpu`'s tick: the running task's `task_tick`, then (with `balance`) periodic
    /// load balancing from this CPU, as the kernel's `scheduler_tick` does.
    pub(super) fn tick(&mut self, cpu: usize) -> Result<(), SimError> {
        self.tick_running_task(cpu);
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

    /// Linux's `__schedule()` on `cpu`: put_prev_task, pick_next_task, set_next_task.
    pub(super) fn schedule(&mut self, cpu: usize) -> Result<(), SimError> {
        self.update_cpu(cpu);
        let now = self.now;
        self.cpus[cpu].need_resched = false;
        let previous = self.cpus[cpu].current;
        // A task that left for another CPU was handed back when it left.
        if let Some(p) = previous
            && self.tasks[p].cpu == Some(cpu)
        {
            let run_queue = &mut self.cpus[cpu].run_queue;
            run_queue.put_prev_task(TaskId(p as u16), now);
            // An exited task is forgotten here.
            if self.tasks[p].state == TaskState::Done {
                run_queue.task_dead(TaskId(p as u16));
            }
        }
        let next = self.cpus[cpu]
            .run_queue
            .pick_next_task(now)
            .map(|t| t.index());
        match next {
            Some(n) => {
                self.cpus[cpu]
                    .run_queue
                    .set_next_task(TaskId(n as u16), now);
                self.lru_sequence += 1;
                self.tasks[n].lru = self.lru_sequence;
            }
            None => self.cpus[cpu].run_queue.set_next_idle(now),
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
                task.result.wait_ns += now - task.runnable_since;
                if let Some(woke) = task.woke_at.take() {
                    task.latencies.push(now - woke);
                }
            }
            self.switches.push(Switch {
                time_ns: now,
                cpu,
                previous,
                next,
            });
        }
        if let Some(n) = next
            && self.tasks[n].remaining.is_none()
        {
            self.advance(n)?;
        }
        self.arm_completion(cpu);
        self.arm_hrtick(cpu);
        if next.is_none() {
            // Nothing to run: newly-idle balancing pulls now rather than at the tick.
            self.newidle_balance(cpu)?;
        }
        Ok(())
    }
}
