//! The discrete-event engine: N CPUs, each with a [`RunQueue`], driven in virtual time
//! through the [`SchedClass`] operations exactly as the kernel calls them.
//!
//! ```text
//!  pending events (time, kind, sequence) ──► handle ──► CPUs marked need_resched
//!     Completion: the running task's run/runtime is done ─► next event of its program
//!     Start/Wake: enqueue_task on its CPU, wakeup_preempt(current, woken)
//!     Tick:       task_tick(current) on every busy CPU, every 1/HZ
//!     Sample:     one CSV row per task and per CPU
//!  schedule(cpu): put_prev_task(prev), pick_next_task, set_next_task(next)
//! ```
//!
//! Placement: a task starts on the least-loaded allowed CPU (fewest queued tasks, lowest id
//! first) and wakes on the CPU it last ran on. There is no load balancing yet, so a task
//! only changes CPU when a phase's `cpus` excludes its current one.
//!
//! Work: `run` is capacity-invariant (facts §2.3, DESIGN "Modelling heterogeneity"): W µs
//! complete when the task has run for W µs × 1024 × 1024 of `capacity_orig × frequency_scale`
//! nanoseconds, so a 512-capacity CPU takes 2W µs. `runtime` is wall time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use fairway_sched::class::{DequeueFlags, EnqueueFlags, SchedClass};
use fairway_sched::run_queue::{CpuCapacity, PolicyKind, RunQueue};
use fairway_sched::scenario::{Event, Scenario, TimerMode};
use fairway_sched::task::{CpuId, CpuMask, TaskId, TaskParams};

use crate::SimError;
use crate::program::{Cursor, Step};
use crate::results::{CpuResult, Results, Switch, TaskResult};
use crate::sampler::Sampler;

/// How a simulation runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The policy every run queue is built with.
    pub policy: PolicyKind,
    /// The policy's name for the results (`rr`, `cfs`, `eevdf`).
    pub policy_name: String,
    /// One entry per CPU.
    pub capacities: Vec<CpuCapacity>,
    /// The tick period (1/HZ) in ns.
    pub tick_ns: u64,
    /// Overrides the scenario's `global.duration` when set, in ns.
    pub duration_ns: Option<u64>,
    /// The CSV sampling period in ns.
    pub sample_interval_ns: u64,
}

/// What a task is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Its `delay` has not elapsed.
    NotStarted,
    /// Queued, waiting for its CPU.
    Runnable,
    /// On its CPU.
    Running,
    /// Blocked in a sleep or timer.
    Sleeping,
    /// Its program ended.
    Done,
}

impl TaskState {
    /// The name used in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            TaskState::NotStarted => "not_started",
            TaskState::Runnable => "runnable",
            TaskState::Running => "running",
            TaskState::Sleeping => "sleeping",
            TaskState::Done => "done",
        }
    }
}

/// What is left of the current busy event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Remaining {
    /// Work in ns × capacity_orig × frequency_scale (1024 × 1024 per ns at full speed).
    Work(u128),
    /// Wall-clock ns.
    Wall(u64),
}

/// One simulated task instance.
#[derive(Debug)]
pub(crate) struct SimTask {
    pub(crate) name: String,
    spec: usize,
    pub(crate) state: TaskState,
    pub(crate) cpu: Option<usize>,
    params: TaskParams,
    cursor: Cursor,
    remaining: Option<Remaining>,
    iteration_start: u64,
    runnable_since: u64,
    woke_at: Option<u64>,
    pub(crate) result: TaskResult,
    latencies: Vec<u64>,
}

/// One simulated CPU.
#[derive(Debug)]
pub(crate) struct Cpu {
    pub(crate) run_queue: RunQueue,
    pub(crate) current: Option<usize>,
    capacity: CpuCapacity,
    last_update: u64,
    need_resched: bool,
    generation: u64,
    pub(crate) result: CpuResult,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Completion { cpu: usize, generation: u64 },
    Start { task: usize },
    Wake { task: usize },
    Tick,
    Sample,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    time: u64,
    kind: Kind,
    sequence: u64,
}

/// Zero-time steps allowed at one instant before the run is declared stuck.
const STEP_LIMIT: u64 = 10_000_000;

/// A simulation of one scenario.
pub struct Simulation<'s> {
    scenario: &'s Scenario,
    config: Config,
    now: u64,
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) tasks: Vec<SimTask>,
    queue: BinaryHeap<Reverse<Pending>>,
    sequence: u64,
    timers: BTreeMap<(Option<usize>, String), u64>,
    switches: Vec<Switch>,
    live: usize,
    steps: u64,
}

fn ns(us: i64) -> u64 {
    // Validated: 0 <= us <= MAX_DURATION_US, so this neither wraps nor overflows.
    us as u64 * 1000
}

impl<'s> Simulation<'s> {
    /// Prepares `scenario` (already validated for `config.capacities.len()` CPUs).
    pub fn new(scenario: &'s Scenario, config: Config) -> Result<Self, SimError> {
        let nr_cpus = config.capacities.len();
        if nr_cpus == 0 || nr_cpus > fairway_sched::task::MAX_CPUS {
            return Err(SimError::Config(format!(
                "--cpus {nr_cpus} is outside 1..={}",
                fairway_sched::task::MAX_CPUS
            )));
        }
        if config.tick_ns == 0 || config.sample_interval_ns == 0 {
            return Err(SimError::Config(
                "tick and sample interval must be > 0".into(),
            ));
        }
        let mut tasks = Vec::new();
        for (spec_index, spec) in scenario.tasks.iter().enumerate() {
            if Cursor::runs_forever(spec) && !Cursor::makes_progress(spec) {
                return Err(SimError::NoProgress {
                    task: spec.name.clone(),
                });
            }
            let forever = Cursor::runs_forever(spec);
            if forever && config.duration_ns.is_none() && scenario.global.duration_s < 0 {
                return Err(SimError::Forever {
                    task: spec.name.clone(),
                });
            }
            for instance in 0..spec.instances.max(0) {
                let name = if spec.instances == 1 {
                    spec.name.clone()
                } else {
                    format!("{}-{instance}", spec.name)
                };
                let first = &spec.phases[0];
                let params = scenario.task_params(&Scenario::effective_attributes(spec, first));
                tasks.push(SimTask {
                    result: TaskResult {
                        name: name.clone(),
                        ..TaskResult::default()
                    },
                    name,
                    spec: spec_index,
                    state: TaskState::NotStarted,
                    cpu: None,
                    params,
                    cursor: Cursor::default(),
                    remaining: None,
                    iteration_start: 0,
                    runnable_since: 0,
                    woke_at: None,
                    latencies: Vec::new(),
                });
            }
        }
        let max_tasks = tasks.len().max(1);
        let cpus = config
            .capacities
            .iter()
            .enumerate()
            .map(|(index, &capacity)| {
                let mut run_queue = RunQueue::new(config.policy, max_tasks);
                run_queue.set_cpu_capacity(capacity);
                Cpu {
                    run_queue,
                    current: None,
                    capacity,
                    last_update: 0,
                    need_resched: false,
                    generation: 0,
                    result: CpuResult {
                        cpu: index,
                        capacity_orig: capacity.capacity_orig,
                        frequency_scale: capacity.frequency_scale,
                        ..CpuResult::default()
                    },
                }
            })
            .collect();
        Ok(Simulation {
            scenario,
            config,
            now: 0,
            cpus,
            live: tasks.len(),
            tasks,
            queue: BinaryHeap::new(),
            sequence: 0,
            timers: BTreeMap::new(),
            switches: Vec::new(),
            steps: 0,
        })
    }

    fn push(&mut self, time: u64, kind: Kind) {
        self.sequence += 1;
        self.queue.push(Reverse(Pending {
            time,
            kind,
            sequence: self.sequence,
        }));
    }

    /// The end of the run: the override, else `global.duration`, else none.
    fn end(&self) -> Option<u64> {
        self.config.duration_ns.or_else(|| {
            let seconds = self.scenario.global.duration_s;
            (seconds >= 0).then(|| seconds as u64 * 1_000_000_000)
        })
    }

    /// Runs to the end, feeding `sampler` (if any) every sample interval.
    pub fn run(mut self, mut sampler: Option<&mut Sampler>) -> Result<Results, SimError> {
        let end = self.end();
        for task in 0..self.tasks.len() {
            let spec = &self.scenario.tasks[self.tasks[task].spec];
            self.push(ns(spec.delay_us), Kind::Start { task });
        }
        self.push(self.config.tick_ns, Kind::Tick);
        if sampler.is_some() {
            self.push(0, Kind::Sample);
        }
        while self.live > 0 {
            let Some(Reverse(pending)) = self.queue.pop() else {
                break;
            };
            if end.is_some_and(|end| pending.time >= end) {
                self.now = end.unwrap_or(pending.time);
                break;
            }
            if pending.time != self.now {
                self.steps = 0;
            }
            self.now = pending.time;
            match pending.kind {
                Kind::Completion { cpu, generation } => {
                    if self.cpus[cpu].generation == generation {
                        self.complete(cpu)?;
                    }
                }
                Kind::Start { task } => self.start(task)?,
                Kind::Wake { task } => self.wake(task)?,
                Kind::Tick => {
                    self.tick();
                    self.push(self.now + self.config.tick_ns, Kind::Tick);
                }
                Kind::Sample => {
                    self.reschedule_all()?;
                    if let Some(sampler) = sampler.as_deref_mut() {
                        for cpu in 0..self.cpus.len() {
                            self.update_cpu(cpu);
                        }
                        sampler.sample(self.now, &self.tasks, &self.cpus)?;
                    }
                    self.push(self.now + self.config.sample_interval_ns, Kind::Sample);
                }
            }
            self.reschedule_all()?;
        }
        Ok(self.finish())
    }

    fn finish(mut self) -> Results {
        for cpu in 0..self.cpus.len() {
            self.update_cpu(cpu);
        }
        let now = self.now;
        let tasks = self
            .tasks
            .into_iter()
            .map(|mut task| {
                if task.state == TaskState::Runnable {
                    task.result.wait_ns += now - task.runnable_since;
                }
                task.result.finished = task.state == TaskState::Done;
                task.result.set_latencies(&mut task.latencies);
                task.result
            })
            .collect();
        Results {
            policy: self.config.policy_name,
            tick_ns: self.config.tick_ns,
            end_ns: now,
            cpus: self.cpus.into_iter().map(|c| c.result).collect(),
            tasks,
            switches: self.switches,
        }
    }

    /// Brings `cpu`'s busy/idle time and its running task's progress up to now.
    fn update_cpu(&mut self, cpu: usize) {
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
    fn arm_completion(&mut self, cpu: usize) {
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

    fn complete(&mut self, cpu: usize) -> Result<(), SimError> {
        self.update_cpu(cpu);
        let Some(t) = self.cpus[cpu].current else {
            return Ok(());
        };
        self.tasks[t].remaining = None;
        self.advance(t)?;
        self.arm_completion(cpu);
        Ok(())
    }

    fn least_loaded(&self, affinity: CpuMask) -> usize {
        (0..self.cpus.len())
            .filter(|&c| affinity.contains(CpuId(c as u16)))
            .min_by_key(|&c| (self.cpus[c].run_queue.nr_running(), c))
            .unwrap_or(0)
    }

    fn register(&mut self, task: usize, cpu: usize) -> Result<(), SimError> {
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
    fn enqueue(&mut self, task: usize, cpu: usize, flags: EnqueueFlags) {
        let now = self.now;
        let t = &mut self.tasks[task];
        t.state = TaskState::Runnable;
        t.cpu = Some(cpu);
        t.runnable_since = now;
        let state = &mut self.cpus[cpu];
        state
            .run_queue
            .enqueue_task(TaskId(task as u16), now, flags);
        match state.current {
            _ if state.need_resched => {}
            Some(current)
                if self.tasks[current].state == TaskState::Running
                    && self.tasks[current].cpu == Some(cpu) =>
            {
                let decision = state.run_queue.wakeup_preempt(
                    TaskId(current as u16),
                    TaskId(task as u16),
                    now,
                );
                state.need_resched = decision.is_needed();
            }
            _ => state.need_resched = true,
        }
    }

    fn start(&mut self, task: usize) -> Result<(), SimError> {
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

    fn wake(&mut self, task: usize) -> Result<(), SimError> {
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
            self.cpus[previous].run_queue.task_dead(TaskId(task as u16));
            self.register(task, target)?;
            self.tasks[task].result.migrations += 1;
            flags.migrated = true;
            target
        };
        self.tasks[task].woke_at = Some(self.now);
        self.enqueue(task, cpu, flags);
        Ok(())
    }

    fn tick(&mut self) {
        for cpu in 0..self.cpus.len() {
            let Some(t) = self.cpus[cpu].current else {
                continue;
            };
            if self.tasks[t].state != TaskState::Running || self.tasks[t].cpu != Some(cpu) {
                continue;
            }
            self.update_cpu(cpu);
            let decision = self.cpus[cpu]
                .run_queue
                .task_tick(TaskId(t as u16), self.now);
            if decision.is_needed() {
                self.cpus[cpu].need_resched = true;
            }
        }
    }

    fn reschedule_all(&mut self) -> Result<(), SimError> {
        while let Some(cpu) = self.cpus.iter().position(|c| c.need_resched) {
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err(SimError::Stuck { time_ns: self.now });
            }
            self.schedule(cpu)?;
        }
        Ok(())
    }

    /// Linux's `__schedule()` on `cpu`: put_prev_task, pick_next_task, set_next_task.
    fn schedule(&mut self, cpu: usize) -> Result<(), SimError> {
        self.update_cpu(cpu);
        let now = self.now;
        self.cpus[cpu].need_resched = false;
        let previous = self.cpus[cpu].current;
        if let Some(p) = previous {
            let run_queue = &mut self.cpus[cpu].run_queue;
            run_queue.put_prev_task(TaskId(p as u16), now);
            // An exited task, or one that left for another CPU, is forgotten here.
            if self.tasks[p].state == TaskState::Done || self.tasks[p].cpu != Some(cpu) {
                run_queue.task_dead(TaskId(p as u16));
            }
        }
        let next = self.cpus[cpu]
            .run_queue
            .pick_next_task(now)
            .map(|t| t.index());
        if let Some(n) = next {
            self.cpus[cpu]
                .run_queue
                .set_next_task(TaskId(n as u16), now);
        }
        self.cpus[cpu].current = next;
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
        Ok(())
    }

    /// Runs `task`'s program from its cursor until a busy event, a block or the end.
    fn advance(&mut self, task: usize) -> Result<(), SimError> {
        let scenario = self.scenario;
        let spec = &scenario.tasks[self.tasks[task].spec];
        loop {
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err(SimError::Stuck { time_ns: self.now });
            }
            let now = self.now;
            let (event, phase, phase_start) = match self.tasks[task].cursor.next(spec) {
                Step::Finished => {
                    self.exit(task);
                    return Ok(());
                }
                Step::Event {
                    event,
                    phase,
                    phase_start,
                    iteration_start,
                } => {
                    if iteration_start {
                        self.tasks[task].iteration_start = now;
                    }
                    (event, phase, phase_start)
                }
            };
            if phase_start {
                self.apply_phase(task, phase)?;
            }
            match *event {
                Event::Run { us } if us > 0 => {
                    let work = u128::from(ns(us)) * 1024 * 1024;
                    self.tasks[task].remaining = Some(Remaining::Work(work));
                    return Ok(());
                }
                Event::Runtime { us } if us > 0 => {
                    self.tasks[task].remaining = Some(Remaining::Wall(ns(us)));
                    return Ok(());
                }
                Event::Run { .. } | Event::Runtime { .. } => {}
                Event::Sleep { us } => {
                    if us > 0 {
                        self.block(task, now + ns(us));
                        return Ok(());
                    }
                }
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
                    if next > now {
                        self.timers.insert(key, next);
                        self.block(task, next);
                        return Ok(());
                    }
                    // Overrun: no sleep. rt-app's relative mode restarts the grid from now.
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
                        self.cpus[cpu]
                            .run_queue
                            .yield_task(TaskId(task as u16), now);
                        self.cpus[cpu].need_resched = true;
                    }
                }
            }
        }
    }

    /// A phase's first pass starts: its affinity takes effect (other attributes are not
    /// applied yet: the run-queue interface has no `sched_setattr`).
    fn apply_phase(&mut self, task: usize, phase: usize) -> Result<(), SimError> {
        let spec = &self.scenario.tasks[self.tasks[task].spec];
        let attributes = Scenario::effective_attributes(spec, &spec.phases[phase]);
        let params = self.scenario.task_params(&attributes);
        self.tasks[task].params = params;
        let Some(cpu) = self.tasks[task].cpu else {
            return Ok(());
        };
        if params.affinity.contains(CpuId(cpu as u16)) {
            return Ok(());
        }
        // Migrate the running task (Linux's affinity change: dequeue, move, enqueue).
        self.update_cpu(cpu);
        let id = TaskId(task as u16);
        let flags = DequeueFlags {
            migrating: true,
            ..DequeueFlags::default()
        };
        self.cpus[cpu].run_queue.dequeue_task(id, self.now, flags);
        self.cpus[cpu].need_resched = true;
        let target = self.least_loaded(params.affinity);
        self.register(task, target)?;
        let result = &mut self.tasks[task].result;
        result.migrations += 1;
        result.involuntary_switches += 1;
        let flags = EnqueueFlags {
            migrated: true,
            ..EnqueueFlags::default()
        };
        self.enqueue(task, target, flags);
        Ok(())
    }

    fn block(&mut self, task: usize, until: u64) {
        self.leave(task, TaskState::Sleeping);
        self.push(until, Kind::Wake { task });
    }

    fn exit(&mut self, task: usize) {
        self.leave(task, TaskState::Done);
        self.live -= 1;
    }

    /// The task stops being runnable (sleep or exit): `dequeue_task(.., DEQUEUE_SLEEP)`.
    fn leave(&mut self, task: usize, state: TaskState) {
        let Some(cpu) = self.tasks[task].cpu else {
            return;
        };
        let was_running = self.tasks[task].state == TaskState::Running;
        let flags = DequeueFlags {
            sleep: true,
            ..DequeueFlags::default()
        };
        self.cpus[cpu]
            .run_queue
            .dequeue_task(TaskId(task as u16), self.now, flags);
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
        if state == TaskState::Done && !was_running && self.cpus[cpu].current != Some(task) {
            self.cpus[cpu].run_queue.task_dead(TaskId(task as u16));
        }
    }
}
