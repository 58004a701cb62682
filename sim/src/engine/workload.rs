//! The task side of the engine: running a task's rt-app program (run, runtime, sleep,
//! timer, yield; phase affinity), blocking and exiting.

use fairway_contract::scenario::resources::Outcome;
use fairway_contract::scenario::{Event, Scenario, TimerMode};
use fairway_sched::class::DequeueFlags;
use fairway_sched::task::{CpuId, TaskId};

use super::{Kind, Remaining, STEP_LIMIT, Simulation, TaskState, ns};
use crate::SimError;
use fairway_contract::scenario::program::Step;

impl Simulation<'_> {
    /// Runs `task`'s program from its cursor until a busy event, a block or the end.
    pub(super) fn advance(&mut self, task: usize) -> Result<(), SimError> {
        let scenario = self.scenario;
        let spec = &scenario.tasks[self.tasks[task].spec];
        loop {
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err(SimError::Stuck {
                    time_ns: self.now,
                    cpu: self.tasks[task].cpu,
                    what: format!(
                        "more than {STEP_LIMIT} zero-time steps, the last of task {}'s program",
                        self.tasks[task].name
                    ),
                });
            }
            let now = self.now;
            let (event, phase, phase_start) = match self.tasks[task].cursor.next(spec) {
                Step::Finished => {
                    if let Some(log) = self.rtapp_log(task) {
                        log.finish(now);
                    }
                    self.exit(task);
                    return self.check_deadlock();
                }
                Step::Event {
                    event,
                    phase,
                    phase_start,
                    iteration_start,
                } => {
                    if iteration_start {
                        self.tasks[task].iteration_start = now;
                        if let Some(log) = self.rtapp_log(task) {
                            log.loop_start(phase, now);
                        }
                    }
                    (event, phase, phase_start)
                }
            };
            if phase_start {
                self.apply_phase(task, phase)?;
            }
            if let Some(us) = event.work_us() {
                // run, mem, iorun: capacity-invariant work.
                if us > 0 {
                    // rt-app's logs count `run` events, not `mem` or `iorun`.
                    if let (Event::Run { .. }, Some(log)) = (event, self.rtapp_log(task)) {
                        log.run_start(us as u64, now);
                    }
                    let work = u128::from(ns(us)) * 1024 * 1024;
                    self.tasks[task].remaining = Some(Remaining::Work(work));
                    return Ok(());
                }
                continue;
            }
            if let Some(outcome) = self.resource_event(task, event)? {
                match outcome {
                    Outcome::Proceed => continue,
                    Outcome::Block => return Ok(()),
                }
            }
            match *event {
                Event::Runtime { us } if us > 0 => {
                    if let Some(log) = self.rtapp_log(task) {
                        log.run_start(us as u64, now);
                    }
                    self.tasks[task].remaining = Some(Remaining::Wall(ns(us)));
                    return Ok(());
                }
                Event::Sleep { us } if us > 0 => {
                    self.block(task, now + ns(us));
                    return Ok(());
                }
                Event::Runtime { .. } | Event::Sleep { .. } => {}
                Event::Timer {
                    ref reference,
                    period_us,
                    mode,
                } => {
                    let key = if reference.starts_with("unique") {
                        (Some(task), reference.clone())
                    } else {
                        (None, reference.clone())
                    };
                    let base = self
                        .timers
                        .get(&key)
                        .copied()
                        .unwrap_or(self.tasks[task].iteration_start);
                    let next = base + ns(period_us.unwrap_or(0));
                    if let Some(log) = self.rtapp_log(task) {
                        log.timer(period_us.unwrap_or(0) as u64, next, now);
                    }
                    if next > now {
                        self.timers.insert(key, next);
                        self.block(task, next);
                        return Ok(());
                    }
                    // Overrun: no sleep, so no wake-up and no latency; a missed
                    // period when strictly past (docs/report-format.md,
                    // "Overruns"). rt-app's relative mode restarts the grid from now.
                    if next < now {
                        self.tasks[task].result.missed_periods += 1;
                    }
                    let restart = if mode == TimerMode::Relative {
                        now
                    } else {
                        next
                    };
                    self.timers.insert(key, restart);
                }
                Event::Yield => {
                    if let Some(cpu) = self.tasks[task].cpu {
                        self.cpus[cpu].core.yield_task(now);
                        self.cpus[cpu].need_resched = true;
                        // `sched_yield` returns only once the task is picked again:
                        // the rest of its program waits for that (the kernel's
                        // instance really switches away here).
                        return Ok(());
                    }
                }
                Event::Fork { task: ref name } => self.fork(name)?,
                // Handled above: work and resources.
                _ => {}
            }
        }
    }

    /// An event on rt-app's resources (`fairway_contract::scenario::resources`), or
    /// `None` for any other event. A blocked task sleeps with no wake-up of its own:
    /// the call that unblocks it lists it, and wakes it.
    fn resource_event(&mut self, task: usize, event: &Event) -> Result<Option<Outcome>, SimError> {
        let mut wake = Vec::new();
        let resources = &mut self.resources;
        let outcome = match event {
            Event::Lock { mutex } => resources.lock(task, mutex, &mut wake),
            Event::Unlock { mutex } => resources.unlock(task, mutex, &mut wake),
            Event::Wait { condition, mutex } => resources.wait(task, condition, mutex, &mut wake),
            Event::Sync { condition, mutex } => resources.sync(task, condition, mutex, &mut wake),
            Event::Signal { condition } => Ok(resources.signal(condition, false, &mut wake)),
            Event::Broadcast { condition } => Ok(resources.signal(condition, true, &mut wake)),
            Event::Barrier { name } => Ok(resources.barrier(task, name, &mut wake)),
            Event::SemPost { name } => Ok(resources.sem_post(name, &mut wake)),
            Event::SemWait { name } => Ok(resources.sem_wait(task, name)),
            Event::Suspend => Ok(resources.suspend(task)),
            Event::Resume { task: target } => {
                let targets: Vec<usize> = self
                    .scenario
                    .resume_targets(target)
                    .flat_map(|(spec, instance)| {
                        let all = &self.instances_of[spec];
                        match instance {
                            None => all.clone(),
                            Some(i) => all.get(i as usize).copied().into_iter().collect(),
                        }
                    })
                    .collect();
                Ok(self.resources.resume(targets, &mut wake))
            }
            _ => return Ok(None),
        };
        let outcome = outcome.map_err(|error| SimError::Resource {
            task: self.tasks[error.instance()].name.clone(),
            message: error.to_string(),
            time_ns: self.now,
        })?;
        if outcome == Outcome::Block {
            self.leave(task, TaskState::Sleeping);
        }
        // Woken at once, before the caller's CPU picks its next task (as the
        // kernel's `wake_up` and Linux's do), so a partner woken by a task that
        // then blocks is there to be picked.
        let waker = self.tasks[task].cpu;
        for woken in wake {
            self.wake(woken, waker)?;
        }
        self.apply_priority_inheritance()?;
        if outcome == Outcome::Block {
            self.check_deadlock()?;
        }
        Ok(Some(outcome))
    }

    /// Carries out the boosts the lock model decided (`pi_enabled`): each owner
    /// changes priority on its CPU (`rt_mutex_setprio`), which may preempt.
    fn apply_priority_inheritance(&mut self) -> Result<(), SimError> {
        for (task, boost) in self.resources.take_pi_changes() {
            let Some(cpu) = self.tasks[task].cpu else {
                continue;
            };
            self.update_cpu(cpu);
            let decision = self.cpus[cpu]
                .core
                .rt_mutex_setprio(TaskId(task as u16), boost, self.now)
                .map_err(|error| SimError::Params {
                    task: self.tasks[task].name.clone(),
                    error,
                })?;
            self.carry_out(cpu, decision);
        }
        Ok(())
    }

    /// Every live task blocked on a resource, in a run that no duration ends:
    /// nothing can wake them (checked when a task blocks and when one exits).
    fn check_deadlock(&self) -> Result<(), SimError> {
        let blocked = self.resources.blocked_count();
        if blocked == 0 || blocked < self.live || self.end().is_some() {
            return Ok(());
        }
        Err(SimError::Deadlock {
            tasks: self
                .resources
                .blocked()
                .map(|t| self.tasks[t].name.clone())
                .collect(),
            time_ns: self.now,
        })
    }

    /// `fork`: one more instance of task `name`, started now on the least-loaded
    /// allowed CPU. Instances are numbered on from the task's own (`name-k`).
    fn fork(&mut self, name: &str) -> Result<(), SimError> {
        let Some(spec) = self.scenario.tasks.iter().position(|t| t.name == name) else {
            return Ok(()); // validation checked the name
        };
        if self.tasks.len() >= self.max_tasks {
            return Err(SimError::Config(format!(
                "fork of {name} at {} ns: more than {} tasks",
                self.now, self.max_tasks
            )));
        }
        let index = self.tasks.len();
        let number = self.instances_of[spec].len();
        let mut task = super::SimTask::new(self.scenario, spec, format!("{name}-{number}"));
        if let Some((path, _)) = &task.result.taskgroup {
            task.params.group = self.group_of(Some(path));
        }
        self.tasks.push(task);
        self.instances_of[spec].push(index);
        self.live += 1;
        let delay = ns(self.scenario.tasks[spec].delay_us);
        self.push(self.now + delay, Kind::Start { task: index });
        Ok(())
    }

    /// A phase's first pass starts: its affinity, clamps and task group take effect
    /// (policy and priority are not applied yet: the run-queue interface has no
    /// `sched_setattr` for them).
    pub(super) fn apply_phase(&mut self, task: usize, phase: usize) -> Result<(), SimError> {
        let spec = &self.scenario.tasks[self.tasks[task].spec];
        let attributes = Scenario::effective_attributes(spec, &spec.phases[phase]);
        let mut params = self.scenario.task_params(&attributes);
        params.group = self.group_of(attributes.taskgroup.as_deref());
        self.tasks[task].params = params;
        let Some(cpu) = self.tasks[task].cpu else {
            return Ok(());
        };
        let id = TaskId(task as u16);
        let name = &self.tasks[task].name;
        let now = self.now;
        let core = &mut self.cpus[cpu].core;
        core.set_task_uclamp(id, params.uclamp_min, params.uclamp_max, now)
            .map_err(|error| SimError::Params {
                task: name.clone(),
                error,
            })?;
        core.set_task_group(id, params.group, now)
            .map_err(|e| SimError::Config(format!("task {name}: {e}")))?;
        if params.affinity.contains(CpuId(cpu as u16)) {
            return Ok(());
        }
        // Linux's affinity change moves the running task at once.
        let target = self.least_loaded(params.affinity);
        self.move_running(task, cpu, target)
    }

    pub(super) fn block(&mut self, task: usize, until: u64) {
        self.leave(task, TaskState::Sleeping);
        self.push(until, Kind::Wake { task });
    }

    pub(super) fn exit(&mut self, task: usize) {
        self.tasks[task].result.finished_at_ns = Some(self.now);
        if let Some(cpu) = self.tasks[task].cpu {
            self.trace_event(cpu, fairway_trace::Event::Exit { task });
        }
        self.leave(task, TaskState::Done);
        self.live -= 1;
    }

    /// The task stops being runnable (sleep or exit). The running task leaves
    /// its run queue at the `schedule()` this asks for (Linux's `__schedule`
    /// dequeues it, `DEQUEUE_SLEEP`); one that is not running leaves now.
    pub(super) fn leave(&mut self, task: usize, state: TaskState) {
        let Some(cpu) = self.tasks[task].cpu else {
            return;
        };
        let was_running = self.tasks[task].state == TaskState::Running;
        let id = TaskId(task as u16);
        let t = &mut self.tasks[task];
        if t.state == TaskState::Runnable {
            t.result.wait_ns += self.now - t.runnable_since;
        }
        t.state = state;
        t.remaining = None;
        if was_running {
            t.result.voluntary_switches += 1;
        }
        self.cpus[cpu].need_resched = true;
        if self.cpus[cpu].core.current() != Some(id) {
            let flags = DequeueFlags {
                sleep: true,
                ..DequeueFlags::default()
            };
            self.cpus[cpu].core.dequeue_task(id, self.now, flags);
            if state == TaskState::Done {
                self.cpus[cpu].core.task_dead(id, self.now);
            }
        }
    }
}
