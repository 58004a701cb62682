//! The discrete-event engine: N CPUs, each with a [`RunQueue`], driven in virtual time
//! through the [`SchedClass`] operations exactly as the kernel calls them.
//!
//! ```text
//!  pending events (time, kind, sequence) ──► handle ──► CPUs marked need_resched
//!     Completion: the running task's run/runtime is done ─► next event of its program
//!     Start/Wake: enqueue_task on its CPU, wakeup_preempt(current, woken)
//!     Tick:       per CPU every 1/HZ (grid phase tick_phase_ns, plus the CPU's skew_tick
//!                 offset): task_tick(current), then periodic balancing when due (balance)
//!     Hrtick:     (config.hrtick) the running task's slice end: task_tick(current)
//!     LoadSync:   every 1 ms (fair policies): update_blocked_averages on every CPU, then
//!                 each group's load sum over CPUs handed to every CPU (tg->load_avg, §2.7)
//!     Sample:     one CSV row per task and per CPU
//!  schedule(cpu): put_prev_task(prev), pick_next_task, set_next_task(next), after each
//!                event, or after the last of the timer events (Start, Wake, Tick, Hrtick)
//!                of one instant, as the kernel's timer interrupt handles them all
//! ```
//!
//! Virtual time only moves on when the events of one instant run out, so a policy
//! that keeps asking for an event at the instant it is handled (a slice end 0 ns away
//! that the tick then does not act on) would hold the run at that instant forever.
//! Program steps and reschedules (`STEP_LIMIT`) and events ([`EVENT_LIMIT`]) at one
//! instant are therefore bounded; crossing a bound ends the run with
//! [`SimError::Stuck`] naming the time and the CPU.
//!
//! Placement: a task starts on the least-loaded allowed CPU (fewest queued tasks, lowest id
//! first). Without `balance`, it wakes on the CPU it last ran on and only changes CPU when
//! a phase's `cpus` excludes its current one; with it, the CPU it last ran on chooses its
//! wake-up CPU (`CpuCore::select_task_rq`, as the kernel's wake-ups do), and each CPU
//! also balances load from its tick and when it goes idle (`balance.rs`). A task moves
//! with `migrate_task_out` / `migrate_task_in`, keeping its fair state and PELT signals.
//!
//! Every scheduling decision (what runs, whether a wake-up preempts, when a slice ends,
//! where a task wakes) is taken by each CPU's `fairway_sched::cpu_core::CpuCore`, the
//! driver the kernel uses; this engine carries the decisions out in virtual time.
//!
//! Task groups: every path named in `global.taskgroups` or in a `taskgroup` attribute, and
//! its ancestors, becomes a group on every CPU, created in the same order (parents first,
//! then by path) so the ids agree; a task starts in its first phase's group.
//!
//! Work: `run` is capacity-invariant (facts §2.3, DESIGN "Modelling heterogeneity"): W µs
//! complete when the task has run for W µs × 1024 × 1024 of `capacity_orig × frequency_scale`
//! nanoseconds, so a 512-capacity CPU takes 2W µs. `runtime` is wall time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use fairway_contract::scenario::Scenario;
use fairway_contract::scenario::resources::Resources;
use fairway_sched::cpu_core::CpuCore;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sched::task::{GroupId, TaskParams};

use crate::SimError;

mod balance;
mod bandwidth;
mod cpu;
mod dvfs;
mod eas;
pub mod explain;
mod progress;
mod setup;
mod trace;
mod workload;
use crate::results::{CpuResult, Results, Switch, TaskResult};
use crate::sampler::Sampler;
pub use dvfs::{DomainEnergy, Dvfs};
use fairway_contract::scenario::program::Cursor;

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
    /// End slices on a high-resolution timer (`hrtick`), as the kernel does by default:
    /// after each pick, and when a woken task does not preempt, a timer is armed at
    /// `now + slice_remaining(current)`; when it fires the policy's `task_tick` decides.
    /// Off, slices end only at ticks.
    pub hrtick: bool,
    /// Where the tick grid falls: ticks at every time `t > 0` with
    /// `t % tick_ns == tick_phase_ns % tick_ns`. The kernel ticks at multiples of the
    /// period since boot, so a scenario starting at boot time `S` sees its ticks at
    /// phase `(tick_ns - S % tick_ns) % tick_ns`. 0: ticks at `tick_ns`, `2 tick_ns`, ...
    pub tick_phase_ns: u64,
    /// Linux's `skew_tick=1`, as the kernel's `skew_tick=1` does it: CPU `c` ticks
    /// `c × (tick_ns / 2) / nr_cpus` after the grid, so the CPUs' ticks are spread over
    /// half a period instead of falling at one instant.
    pub skew_tick: bool,
    /// The kernel's `tick_seed=`: with N > 0, each CPU's tick also starts at a
    /// pseudo-random phase drawn from N and the CPU, as the kernel does
    /// (`SchedConfig::tick_offset_ns`).
    pub tick_seed: u64,
    /// Periodic and newly-idle load balancing (`fairway_sched::balance`), carried out as
    /// the kernel's `src/scheduling/balance.rs` does: each CPU balances from its tick when its
    /// `next_balance` is due, and when it finds nothing to run. Off: tasks change CPU
    /// only when a phase's `cpus` excludes their current one.
    pub balance: bool,
    /// uclamp's run-queue accounting (the kernel's `uclamp=`).
    pub uclamp: bool,
    /// Where each limited group's period timer grid starts (the kernel's
    /// `bw_timer=` and `bw_seed=`, §4.6).
    pub bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart,
    /// Build the run queues with bandwidth control even when no group of the
    /// scenario has a `cpu.max` (the kernel's `cfs_bandwidth=`); with one,
    /// they always are.
    pub cfs_bandwidth: bool,
    /// The board's performance domains (`--board`): DVFS and the energy
    /// meter, as the kernel has them (`engine::dvfs`); `None`: every CPU at
    /// its `capacities` frequency scale throughout.
    pub dvfs: Option<Dvfs>,
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
    /// When it last stopped running (Linux's `exec_start` of a task that is not
    /// running, which load balancing reads to judge it cache hot, `task_hot`); 0 after a
    /// migration.
    exec_start: u64,
    pub(crate) result: TaskResult,
    latencies: Vec<u64>,
}

impl SimTask {
    /// Instance `name` of task `spec_index`, not started, in its first phase's
    /// group (the group id is set once the groups exist).
    fn new(scenario: &Scenario, spec_index: usize, name: String) -> Self {
        let spec = &scenario.tasks[spec_index];
        let attributes = Scenario::effective_attributes(spec, &spec.phases[0]);
        let params = scenario.task_params(&attributes);
        let taskgroup = attributes
            .taskgroup
            .filter(|path| !path.is_empty())
            .map(|path| {
                let shares = scenario.group_shares(&path);
                (path, shares)
            });
        SimTask {
            result: TaskResult {
                name: name.clone(),
                taskgroup,
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
            exec_start: 0,
            latencies: Vec::new(),
        }
    }
}

/// One simulated CPU.
#[derive(Debug)]
pub(crate) struct Cpu {
    /// The CPU's scheduler driver (the kernel's too) and its run queue.
    pub(crate) core: CpuCore,
    pub(crate) current: Option<usize>,
    capacity: CpuCapacity,
    last_update: u64,
    need_resched: bool,
    generation: u64,
    /// Arming the slice-end timer again forgets the earlier expiry.
    hrtick_generation: u64,
    pub(crate) result: CpuResult,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Completion {
        cpu: usize,
        generation: u64,
    },
    Start {
        task: usize,
    },
    Wake {
        task: usize,
    },
    Tick {
        cpu: usize,
    },
    Hrtick {
        cpu: usize,
        generation: u64,
    },
    Bandwidth {
        cpu: usize,
        group: u16,
        timer: fairway_sched::bandwidth::pools::BandwidthTimerKind,
    },
    /// A group's limit rewritten (`cpu.max.changes`), the `index`-th of the
    /// run's changes.
    BandwidthChange {
        index: usize,
    },
    LoadSync,
    Sample,
    /// A performance domain's frequency change falls due (after the
    /// transition latency).
    FrequencyChange {
        domain: usize,
        index: usize,
    },
}

impl Kind {
    /// The CPU the event belongs to, when it names one.
    fn cpu(self) -> Option<usize> {
        match self {
            Kind::Completion { cpu, .. }
            | Kind::Hrtick { cpu, .. }
            | Kind::Tick { cpu }
            | Kind::Bandwidth { cpu, .. } => Some(cpu),
            Kind::Start { .. }
            | Kind::Wake { .. }
            | Kind::BandwidthChange { .. }
            | Kind::FrequencyChange { .. }
            | Kind::LoadSync
            | Kind::Sample => None,
        }
    }

    /// What the event is, for errors.
    fn describe(self) -> &'static str {
        match self {
            Kind::Completion { .. } => "the end of a run",
            Kind::Start { .. } => "a task start",
            Kind::Wake { .. } => "a wake-up",
            Kind::Tick { .. } => "the tick",
            Kind::Hrtick { .. } => "the slice-end timer (hrtick)",
            Kind::Bandwidth { .. } => "a bandwidth period or slack timer",
            Kind::BandwidthChange { .. } => "a change of a group's cpu.max",
            Kind::LoadSync => "the group load exchange",
            Kind::FrequencyChange { .. } => "a frequency change",
            Kind::Sample => "a sample",
        }
    }

    /// Whether the kernel would handle this in its timer interrupt.
    fn is_timer(self) -> bool {
        matches!(
            self,
            Kind::Start { .. }
                | Kind::Wake { .. }
                | Kind::Tick { .. }
                | Kind::Hrtick { .. }
                | Kind::Bandwidth { .. }
                | Kind::BandwidthChange { .. }
                | Kind::FrequencyChange { .. }
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    time: u64,
    kind: Kind,
    sequence: u64,
}

/// How often the group-wide load sums are exchanged and blocked averages decayed.
pub const LOAD_SYNC_NS: u64 = 1_000_000;

/// Zero-time steps allowed at one instant before the run is declared stuck.
const STEP_LIMIT: u64 = 10_000_000;

/// Events allowed at one instant before the run is declared stuck. A run that
/// moves on has a few per task and CPU at any instant (start, wake-up, end of a
/// run, the timers); only an event that keeps re-arming itself for the instant it
/// fires at comes near this.
pub const EVENT_LIMIT: u64 = 1_000_000;

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
    /// Events handled at the current instant (see [`EVENT_LIMIT`]).
    events: u64,
    /// Task groups by path (the root is not listed), ids equal on every CPU.
    groups: BTreeMap<String, GroupId>,
    /// The run queues' room for tasks (more than the scenario's when it forks).
    max_tasks: usize,
    /// The simulated tasks of each task of the scenario, started and forked.
    instances_of: Vec<Vec<usize>>,
    /// rt-app's mutexes, conditions, barriers, semaphores and suspended tasks.
    resources: Resources,
    /// The load balancer's topology and per-CPU state, when `config.balance`.
    balancer: Option<balance::Balancer>,
    /// The limited groups' pools, when a group has a quota (fair policies).
    bandwidth: Option<bandwidth::BandwidthState>,
    /// The performance domains, with `config.dvfs`.
    dvfs: Option<dvfs::DvfsState>,
    /// Energy-aware placement, when the board allows it (`engine::eas`).
    eas: Option<eas::EasState>,
    /// Why EAS is off; `None` when it is on.
    eas_off: Option<fairway_sched::eas::EasUnavailable>,
    /// The events recorded for `--trace` (`engine::trace`).
    trace: Option<fairway_trace::Trace>,
    /// The bandwidth counters' values last recorded, so that a value is
    /// recorded when it changes (`engine::trace`).
    traced_bandwidth: std::collections::BTreeMap<fairway_trace::CounterTrack, i64>,
    /// Explain mode: each limited group's run queues' throttled state as
    /// last explained, by (path, CPU).
    explained_throttled: std::collections::BTreeMap<(String, usize), bool>,
    /// The progress line, on a terminal (`engine::progress`).
    progress: Option<progress::Progress>,
    /// rt-app's per-task logs, by task, with `--rtapp-logs`.
    rtapp_logs: Option<Vec<crate::rtapp_log::RtappLog>>,
    /// `--explain`'s state (`engine::explain`).
    explain: Option<explain::Explain>,
}

/// Events between two looks at the wall clock for the progress line.
const PROGRESS_EVERY_EVENTS: u64 = 4096;

fn ns(us: i64) -> u64 {
    // Validated: 0 <= us <= MAX_DURATION_US, so this neither wraps nor overflows.
    us as u64 * 1000
}

impl<'s> Simulation<'s> {
    /// Whether energy-aware placement runs: `Ok` with its performance
    /// domains' count when it does, else why not (`None` reason: wake-up
    /// placement itself is off, `balance=0`).
    pub fn eas_status(&self) -> Result<usize, Option<fairway_sched::eas::EasUnavailable>> {
        match &self.eas {
            Some(eas) => Ok(eas.domains()),
            None => Err(self.eas_off),
        }
    }

    fn push(&mut self, time: u64, kind: Kind) {
        self.sequence += 1;
        self.queue.push(Reverse(Pending {
            time,
            kind,
            sequence: self.sequence,
        }));
    }

    /// The end of the run ([`run_end`]).
    fn end(&self) -> Option<u64> {
        run_end(self.config.duration_ns, self.scenario)
    }

    /// Runs to the end, feeding `sampler` (if any) every sample interval.
    pub fn run(mut self, mut sampler: Option<&mut Sampler>) -> Result<Results, SimError> {
        let end = self.end();
        for task in 0..self.tasks.len() {
            let spec = &self.scenario.tasks[self.tasks[task].spec];
            self.push(ns(spec.delay_us), Kind::Start { task });
        }
        for cpu in 0..self.cpus.len() {
            let phase =
                (self.config.tick_phase_ns + self.tick_offset_ns(cpu)) % self.config.tick_ns;
            let first_tick = if phase == 0 {
                self.config.tick_ns
            } else {
                phase
            };
            self.push(first_tick, Kind::Tick { cpu });
        }
        if matches!(
            self.config.policy,
            PolicyKind::Cfs(_) | PolicyKind::Eevdf(_)
        ) {
            self.push(LOAD_SYNC_NS, Kind::LoadSync);
        }
        if sampler.is_some() {
            self.push(0, Kind::Sample);
        }
        self.schedule_bandwidth_changes();
        let mut handled: u64 = 0;
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
                self.events = 0;
            }
            self.now = pending.time;
            self.events += 1;
            handled += 1;
            if handled.is_multiple_of(PROGRESS_EVERY_EVENTS)
                && let Some(progress) = &mut self.progress
            {
                progress.show(self.now, end);
            }
            if self.events > EVENT_LIMIT {
                let cpu = match pending.kind {
                    Kind::Start { task } | Kind::Wake { task } => self.tasks[task].cpu,
                    kind => kind.cpu(),
                };
                return Err(SimError::Stuck {
                    time_ns: self.now,
                    cpu,
                    what: format!(
                        "more than {EVENT_LIMIT} events at one instant, the last {}",
                        pending.kind.describe()
                    ),
                });
            }
            match pending.kind {
                Kind::Completion { cpu, generation } => {
                    if self.cpus[cpu].generation == generation {
                        self.complete(cpu)?;
                    }
                }
                Kind::Start { task } => self.start(task)?,
                Kind::Wake { task } => self.wake(task, None)?,
                Kind::Tick { cpu } => {
                    self.tick(cpu)?;
                    self.push(self.now + self.config.tick_ns, Kind::Tick { cpu });
                }
                Kind::Hrtick { cpu, generation } => {
                    if self.cpus[cpu].hrtick_generation == generation {
                        self.hrtick(cpu);
                    }
                }
                Kind::Bandwidth { cpu, group, timer } => self.bandwidth_timer(cpu, group, timer),
                Kind::BandwidthChange { index } => self.change_bandwidth(index)?,
                Kind::FrequencyChange { domain, index } => self.frequency_change_due(domain, index),
                Kind::LoadSync => {
                    self.sync_group_load();
                    self.push(self.now + LOAD_SYNC_NS, Kind::LoadSync);
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
            // The kernel handles every timer that expired at one instant in one
            // interrupt, and only then schedules: wake-ups, starts and ticks of the
            // same instant are all seen before the next pick.
            let batched = pending.kind.is_timer()
                && self
                    .queue
                    .peek()
                    .is_some_and(|Reverse(next)| next.time == self.now && next.kind.is_timer());
            if !batched {
                self.reschedule_all()?;
            }
            self.arm_bandwidth_timers();
            self.trace_bandwidth();
            self.explain_bandwidth();
        }
        Ok(self.finish())
    }

    /// How long after the tick grid CPU `cpu` ticks: the kernel's
    /// `tick_offset_ns` (`skew_tick`'s `cpu × (tick_ns / 2) / nr_cpus`, plus
    /// `tick_seed`'s phase), from the one formula both use.
    fn tick_offset_ns(&self, cpu: usize) -> u64 {
        fairway_sched::boot_options::tick_offset_ns(
            self.config.tick_ns,
            self.config.skew_tick,
            self.config.tick_seed,
            cpu,
            self.cpus.len(),
        )
    }

    /// The group id of a `taskgroup` path (`None`, empty or `/`: the root).
    pub(crate) fn group_of(&self, path: Option<&str>) -> GroupId {
        path.and_then(|p| self.groups.get(p).copied())
            .unwrap_or(GroupId::ROOT)
    }

    /// Linux keeps `tg->load_avg` as one atomic sum that every CPU adds its change to;
    /// here every CPU decays its blocked group loads (`update_blocked_averages`), then
    /// each group's contributions are summed and handed back to every CPU (§2.7).
    fn sync_group_load(&mut self) {
        let now = self.now;
        for cpu in &mut self.cpus {
            cpu.core.update_blocked_averages(now);
        }
        for &group in self.groups.values() {
            let sum: u64 = self
                .cpus
                .iter()
                .map(|cpu| cpu.core.run_queue().group_load_contribution(group))
                .sum();
            for cpu in &mut self.cpus {
                cpu.core.set_group_load_sum(group, sum, now);
            }
        }
    }

    fn finish(mut self) -> Results {
        for cpu in 0..self.cpus.len() {
            self.update_cpu(cpu);
        }
        self.trace_bandwidth();
        let energy = self.energy_results();
        // Every counter closed at the run's end: a domain's energy line would
        // otherwise stop at its last frequency change, and a CPU's signals at its
        // last switch or tick.
        for (domain, meter) in energy.iter().enumerate() {
            self.trace_energy(domain, meter.energy_nj);
        }
        for cpu in 0..self.cpus.len() {
            self.trace_signals(cpu, self.cpus[cpu].current);
        }
        let now = self.now;
        let groups = self.bandwidth.as_ref().map_or_else(Vec::new, |state| {
            let cores: Vec<&CpuCore> = self.cpus.iter().map(|c| &c.core).collect();
            state.results(&cores)
        });
        let tasks = self
            .tasks
            .into_iter()
            .map(|mut task| {
                if task.state == TaskState::Runnable {
                    task.result.wait_ns += now - task.runnable_since;
                }
                task.result.pending_wakeups = u64::from(task.woke_at.is_some());
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
            groups,
            switches: self.switches,
            energy,
            trace: self.trace,
            rtapp_logs: self
                .rtapp_logs
                .map(|logs| logs.into_iter().map(|log| log.into_rows()).collect()),
            explained_wakes: self
                .explain
                .as_mut()
                .map(|e| std::mem::take(&mut e.wakes))
                .unwrap_or_default(),
            explained_throttles: self
                .explain
                .as_mut()
                .map(|e| std::mem::take(&mut e.throttles))
                .unwrap_or_default(),
            explained_rr_picks: self
                .explain
                .as_mut()
                .map(|e| std::mem::take(&mut e.rr_picks))
                .unwrap_or_default(),
            explained_policy_picks: self
                .explain
                .as_mut()
                .map(|e| std::mem::take(&mut e.policy_picks))
                .unwrap_or_default(),
            explained_picks: self.explain.map(|e| e.picks).unwrap_or_default(),
        }
    }
}

/// The end of a run: `duration_ns` (the simulator's `--duration`), else a positive
/// `global.duration` (rt-app stops its tasks only after a positive duration; 0
/// and -1 run until every task has finished), else none.
pub fn run_end(duration_ns: Option<u64>, scenario: &Scenario) -> Option<u64> {
    duration_ns.or_else(|| {
        let seconds = scenario.global.duration_s;
        (seconds > 0).then(|| seconds as u64 * 1_000_000_000)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairway_sched::round_robin::DEFAULT_SLICE_NS;

    const MS: u64 = 1_000_000;

    /// Events that keep coming at one instant (here a flood of slice-end timers of
    /// cpu1 at 5 ms; stale ones count too) end the run with the time and the CPU,
    /// instead of holding virtual time there.
    #[test]
    fn events_piling_up_at_one_instant_end_the_run_naming_time_and_cpu() {
        let text = r#"{"tasks": {"a": {"runtime": 1000000}, "b": {"runtime": 1000000}}}"#;
        let scenario = fairway_rtapp::parse_and_validate_for(text, 2, true).unwrap();
        let config = Config {
            policy: PolicyKind::RoundRobin {
                slice: DEFAULT_SLICE_NS,
            },
            policy_name: "rr".into(),
            capacities: vec![CpuCapacity::default(); 2],
            tick_ns: 4 * MS,
            duration_ns: Some(100 * MS),
            sample_interval_ns: MS,
            hrtick: true,
            tick_phase_ns: 0,
            skew_tick: false,
            tick_seed: 0,
            balance: false,
            uclamp: true,
            bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
            cfs_bandwidth: false,
            dvfs: None,
        };
        let mut simulation = Simulation::new(&scenario, config).unwrap();
        for _ in 0..=EVENT_LIMIT {
            let stale = Kind::Hrtick {
                cpu: 1,
                generation: u64::MAX,
            };
            simulation.push(5 * MS, stale);
        }
        match simulation.run(None) {
            Err(SimError::Stuck { time_ns, cpu, what }) => {
                assert_eq!((time_ns, cpu), (5 * MS, Some(1)));
                assert!(what.contains("slice-end timer"), "{what}");
            }
            other => panic!("expected Stuck, got {:?}", other.map(|r| r.end_ns)),
        }
    }
}
