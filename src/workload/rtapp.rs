//! rt-app scenarios in the kernel, with the host simulator's semantics (§8.3 of
//! linux-sched-facts.md; `sim/README.md`):
//!
//! - `run` is capacity-invariant work: W µs of work is done when the task has
//!   accumulated W µs × 1024 of capacity-time, so it takes W × 1024 / capacity µs
//!   of CPU time on a CPU of that capacity (capacities come from the device tree);
//! - `runtime` is wall time spent running (busy-waiting);
//! - `sleep` is relative; `timer` sleeps until the next point of a periodic grid
//!   (shared by every task naming the same reference, or private with a name
//!   starting with `unique`), counting missed periods;
//! - each task instance starts on the least-loaded allowed CPU, in CPU order.
//!
//! Every instance walks its program with the same cursor as the simulator
//! (`fairway_sched::scenario::program`).
//!
//! The scenario starts as the simulator's does, every instance created at one
//! instant on CPUs that run nothing else: the calling (`main`) task spawns a
//! SCHED_FIFO starter, sleeps, and the starter, woken at the start time, spawns
//! the instances (above the fair class, so none of them competes with it or
//! with `main`) and exits. `main` is woken once, by the last instance to
//! finish (or polls the duration), so it does not disturb the fair class in
//! between. This lets the host simulator replay the same decisions
//! (`cargo xtask test --only agree`). It also keeps `main` from competing
//! with the instances: a fair `main` that created them took turns with the
//! hogs on its CPU, and under `--icount` (vCPUs run one at a time) it was
//! always switched in after its slice had passed, so it stalled for seconds
//! (README, "icount runs one vCPU at a time"; `cargo xtask test --only
//! rtapp-start-balance-off`).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use fairway_sched::boot_options::RtAppOptions;
use fairway_sched::scenario::program::{Cursor, Step};
use fairway_sched::scenario::{Event, Scenario, TimerMode};
use fairway_sched::task::GroupId;
use spin::Once;

use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::percpu;
use crate::sync::IrqSpinLock;
use crate::task::wait::Completion;
use crate::task::{self, SpawnError, TaskId, current, current_runtime_ns, sleep_until, yield_now};

/// One task instance's results.
#[derive(Debug, Default)]
pub struct InstanceResult {
    /// Periods of `timer` events that had already passed.
    pub missed_periods: AtomicU64,
    /// Loops of its program completed.
    pub events: AtomicU64,
    /// When its program ended (0: still running).
    pub finished_at: AtomicU64,
}

struct Instance {
    spec: usize,
    name: String,
    task: Once<TaskId>,
    result: InstanceResult,
    /// Smallest and largest util_avg sampled after the warm-up.
    util_range: IrqSpinLock<Option<(u64, u64)>>,
}

struct Run {
    scenario: Scenario,
    instances: Vec<Instance>,
    /// Timer grids: (instance for `unique*` references, reference) -> next expiry.
    timers: IrqSpinLock<BTreeMap<(Option<usize>, String), u64>>,
    start: u64,
}

static RUN: Once<Run> = Once::new();
/// Completed once: by the last instance to finish, or by the starter on failure.
static FINISHED: Completion = Completion::new();
/// Instances whose program ended.
static FINISHED_COUNT: AtomicU64 = AtomicU64::new(0);
/// The task running the scenario (woken early when every instance finished).
static MAIN_TASK: core::sync::atomic::AtomicU16 = core::sync::atomic::AtomicU16::new(0);
/// The starter's outcome: every instance spawned, or why not.
static STARTED: Once<Result<(), SpawnError>> = Once::new();
/// How long after `run` begins the instances are created: time for `main` to
/// spawn the starter and go to sleep.
const START_DELAY_NS: u64 = 1_000_000;
/// The starter's SCHED_FIFO priority (the highest).
const STARTER_PRIORITY: u8 = 99;

fn ns(us: i64) -> u64 {
    (us.max(0) as u64).saturating_mul(1000)
}

/// Busy-works until `us` µs of capacity-invariant work are done.
fn run_work(us: i64) {
    let target = u128::from(ns(us)) * 1024;
    let mut done: u128 = 0;
    let mut last = current_runtime_ns();
    while done < target {
        core::hint::spin_loop();
        let runtime = current_runtime_ns();
        let capacity = percpu::of(this_cpu()).capacity.load(Ordering::Relaxed);
        done += u128::from(runtime.saturating_sub(last)) * u128::from(capacity);
        last = last.max(runtime);
    }
}

/// Busy-waits for `us` µs of wall time.
fn run_wall(us: i64) {
    let end = now_ns() + ns(us);
    while now_ns() < end {
        core::hint::spin_loop();
    }
}

fn instance_main(index: usize) {
    let run = RUN.get().expect("scenario set before its tasks");
    let instance = &run.instances[index];
    let spec = &run.scenario.tasks[instance.spec];
    if spec.delay_us > 0 {
        crate::task::sleep_for(ns(spec.delay_us));
    }
    let mut cursor = Cursor::default();
    let mut iteration_start = now_ns();
    loop {
        let (event, iteration_begins) = match cursor.next(spec) {
            Step::Finished => break,
            Step::Event {
                event,
                iteration_start,
                ..
            } => (event, iteration_start),
        };
        let now = now_ns();
        if iteration_begins {
            iteration_start = now;
        }
        instance.result.events.fetch_add(1, Ordering::Relaxed);
        match event {
            Event::Run { us } => run_work(*us),
            Event::Runtime { us } => run_wall(*us),
            Event::Sleep { us } => {
                if *us > 0 {
                    sleep_until(now + ns(*us));
                }
            }
            Event::Timer {
                reference,
                period_us,
                mode,
            } => {
                let key = (
                    reference.starts_with("unique").then_some(index),
                    reference.clone(),
                );
                let mut timers = run.timers.lock();
                let base = timers.get(&key).copied().unwrap_or(iteration_start);
                let next = base + ns(period_us.unwrap_or(0));
                if next > now {
                    timers.insert(key, next);
                    drop(timers);
                    sleep_until(next);
                } else {
                    if next < now {
                        instance
                            .result
                            .missed_periods
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    let restart = if *mode == TimerMode::Relative {
                        now
                    } else {
                        next
                    };
                    timers.insert(key, restart);
                }
            }
            Event::Yield => yield_now(),
        }
    }
    instance
        .result
        .finished_at
        .store(now_ns(), Ordering::Relaxed);
    if FINISHED_COUNT.fetch_add(1, Ordering::AcqRel) + 1 == run.instances.len() as u64 {
        FINISHED.complete();
        // A run with a duration sleeps until its end: end it early.
        task::wake_up(TaskId(MAIN_TASK.load(Ordering::Acquire)));
    }
    // Stay (asleep) until the report has read this task's figures.
    REPORTED.wait_for(1);
}

static REPORTED: Completion = Completion::new();
/// The scenario's task groups by path, created before the instances.
static GROUPS: Once<BTreeMap<String, GroupId>> = Once::new();
static SAMPLER_DONE: Completion = Completion::new();
static SAMPLE_PERIOD_NS: AtomicU64 = AtomicU64::new(0);
static SAMPLE_FROM_NS: AtomicU64 = AtomicU64::new(0);
static SAMPLE_UNTIL_NS: AtomicU64 = AtomicU64::new(0);

/// Samples every instance's util_avg from its run queue every
/// `util_sample_us` until the run ends, after `util_warmup_ms` (for the
/// steady-state check of §2.8).
fn util_sampler(_: usize) {
    let run = RUN.get().expect("scenario set before the sampler");
    let period = SAMPLE_PERIOD_NS.load(Ordering::Relaxed);
    let mut next = SAMPLE_FROM_NS.load(Ordering::Relaxed);
    while next < SAMPLE_UNTIL_NS.load(Ordering::Relaxed) {
        sleep_until(next);
        for instance in &run.instances {
            let Some(&id) = instance.task.get() else {
                continue;
            };
            if task::task(id).state() != task::TaskState::Running
                && task::task(id).state() != task::TaskState::Sleeping
            {
                continue;
            }
            let cpu = task::task(id).cpu();
            let util = crate::task::scheduler::with_run_queue(cpu, |rq| {
                rq.queue.task_signals(id).util_avg
            });
            let mut range = instance.util_range.lock();
            *range = Some(match *range {
                None => (util, util),
                Some((low, high)) => (low.min(util), high.max(util)),
            });
        }
        next += period;
    }
    SAMPLER_DONE.complete();
}

/// Creates the scenario's task groups on every CPU, parents first (the order
/// the simulator uses), and maps each path to its group.
fn create_groups(scenario: &Scenario) -> Result<BTreeMap<String, GroupId>, SpawnError> {
    let mut groups = BTreeMap::new();
    for path in scenario.group_paths() {
        let parent = match path.rfind('/') {
            Some(0) | None => GroupId::ROOT,
            Some(end) => groups.get(&path[..end]).copied().unwrap_or(GroupId::ROOT),
        };
        let shares = scenario.group_shares(&path).max(0) as u64;
        match crate::task::groups::create_group(parent, shares) {
            Ok(group) => {
                groups.insert(path, group);
            }
            Err(error) => {
                defmt::error!(
                    "rtapp: task group {=str}: {}",
                    path.as_str(),
                    defmt::Debug2Format(&error)
                );
                return Err(SpawnError::TooManyTasks { limit: 0 });
            }
        }
    }
    Ok(groups)
}

/// The least-loaded allowed CPU, in CPU order.
fn initial_cpu(affinity: fairway_sched::task::CpuMask, load: &[usize]) -> usize {
    (0..load.len())
        .filter(|&cpu| affinity.contains(fairway_sched::task::CpuId(cpu as u16)))
        .min_by_key(|&cpu| load[cpu])
        .unwrap_or(0)
}

/// The starter (SCHED_FIFO): at the start time, spawns every instance on the
/// least-loaded allowed CPU, in CPU order, then exits.
fn starter_main(_: usize) {
    let run = RUN.get().expect("scenario set before its starter");
    sleep_until(run.start);
    let cpus = percpu::nr_online();
    let mut load = alloc::vec![0usize; cpus];
    let mut outcome = Ok(());
    for (index, instance) in run.instances.iter().enumerate() {
        let spec = &run.scenario.tasks[instance.spec];
        let attributes = spec
            .phases
            .first()
            .map(|phase| Scenario::effective_attributes(spec, phase))
            .unwrap_or_else(|| spec.attributes.clone());
        let mut params = run.scenario.task_params(&attributes);
        if let Some(path) = &attributes.taskgroup {
            params.group = GROUPS
                .get()
                .and_then(|groups| groups.get(path).copied())
                .unwrap_or(GroupId::ROOT);
        }
        let cpu = initial_cpu(params.affinity, &load);
        load[cpu] += 1;
        match task::spawn(&instance.name, instance_main, index, cpu, params) {
            Ok(id) => {
                instance.task.call_once(|| id);
            }
            Err(error) => {
                outcome = Err(error);
                break;
            }
        }
    }
    let failed = outcome.is_err();
    STARTED.call_once(|| outcome);
    if failed {
        FINISHED.complete();
    }
}

/// Runs `scenario` to its end (every program finished, or its duration passed),
/// prints the `report:` lines, and returns whether every instance started.
pub fn run(scenario: Scenario, options: &RtAppOptions) -> Result<(), SpawnError> {
    let mut instances = Vec::new();
    for (spec_index, spec) in scenario.tasks.iter().enumerate() {
        for instance in 0..spec.instances.max(0) {
            let mut name = spec.name.clone();
            if spec.instances > 1 {
                name.push('-');
                name.push_str(&alloc::format!("{instance}"));
            }
            instances.push(Instance {
                spec: spec_index,
                name,
                task: Once::new(),
                result: InstanceResult::default(),
                util_range: IrqSpinLock::new(None),
            });
        }
    }
    MAIN_TASK.store(current().0, Ordering::Release);
    let trace_limit = options.trace_switches as usize;
    let run = RUN.call_once(|| Run {
        scenario,
        instances,
        timers: IrqSpinLock::new(BTreeMap::new()),
        start: now_ns() + START_DELAY_NS,
    });
    if trace_limit > 0 {
        crate::task::trace::start(trace_limit);
    }
    let groups = create_groups(&run.scenario)?;
    GROUPS.call_once(|| groups);
    let sample_us = options.util_sample_us;
    if sample_us > 0 && run.scenario.global.duration_s > 0 {
        let warmup = options.util_warmup_ms;
        SAMPLE_PERIOD_NS.store(sample_us * 1000, Ordering::Relaxed);
        SAMPLE_FROM_NS.store(run.start + warmup * 1_000_000, Ordering::Relaxed);
        SAMPLE_UNTIL_NS.store(
            run.start + ns(run.scenario.global.duration_s * 1_000_000),
            Ordering::Relaxed,
        );
        // On the last CPU, away from the tasks that scenarios pin to CPU 0.
        let cpu = percpu::nr_online() - 1;
        task::spawn(
            "util-sampler",
            util_sampler,
            0,
            cpu,
            fairway_sched::task::TaskParams::pinned(cpu),
        )?;
    } else {
        SAMPLER_DONE.complete();
    }
    let starter = task::TaskParams {
        policy: task::Policy::Fifo {
            priority: STARTER_PRIORITY,
        },
        ..task::TaskParams::default()
    };
    task::spawn("rtapp-start", starter_main, 0, this_cpu(), starter)?;
    if run.instances.is_empty() {
        FINISHED.complete();
    }
    if run.scenario.global.duration_s > 0 {
        let deadline = run.start + ns(run.scenario.global.duration_s * 1_000_000);
        // No polling: it would take CPU time from the scenario's tasks on this
        // CPU. The last instance to finish wakes this task early; if it
        // finishes just before the sleep starts, the run ends at the deadline.
        while FINISHED.count() == 0 && now_ns() < deadline {
            sleep_until(deadline);
        }
    } else {
        FINISHED.wait_for(1);
    }
    if let Some(Err(error)) = STARTED.get() {
        return Err(*error);
    }
    SAMPLER_DONE.wait_for(1);
    let elapsed = now_ns() - run.start;
    if trace_limit > 0 {
        crate::task::trace::print(run.start);
    }
    report(run, elapsed);
    REPORTED.complete();
    let _ = current();
    Ok(())
}

/// Loads the scenario blob the host placed in RAM (`scenario=0xADDRESS
/// scenario_size=BYTES` on the command line), decodes and validates it as the host
/// does, and runs it.
pub fn run_from_boot_options(options: &RtAppOptions) -> crate::ExitCode {
    let blob = crate::init::loaded_blob(
        options.scenario.address as usize,
        options.scenario.size as usize,
    );
    let scenario =
        match fairway_sched::scenario::wire::decode_and_validate(blob, percpu::nr_online()) {
            Ok(scenario) => scenario,
            Err(error) => {
                defmt::error!("rtapp: {}", defmt::Display2Format(&error));
                return crate::ExitCode::Failure;
            }
        };
    match run(scenario, options) {
        Ok(()) => crate::ExitCode::Success,
        Err(error) => {
            defmt::error!("rtapp: {}", error);
            crate::ExitCode::Failure
        }
    }
}

fn report(run: &Run, elapsed: u64) {
    let tasks: Vec<(TaskId, u64)> = run
        .instances
        .iter()
        .filter_map(|instance| {
            let id = *instance.task.get()?;
            Some((id, instance.result.missed_periods.load(Ordering::Relaxed)))
        })
        .collect();
    let config = super::report::config_label("");
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<u64> = Vec::new();
    for instance in &run.instances {
        if let Some((low, high)) = *instance.util_range.lock() {
            names.push(alloc::format!("util_min.{}", instance.name));
            values.push(low);
            names.push(alloc::format!("util_max.{}", instance.name));
            values.push(high);
        }
    }
    let mut metrics: Vec<(&str, u64)> = alloc::vec![("tasks", run.instances.len() as u64)];
    metrics.extend(names.iter().map(String::as_str).zip(values.iter().copied()));
    super::report::print(&super::report::RunResults {
        name: "rtapp",
        config: &config,
        wall_ns: elapsed,
        tasks: &tasks,
        metrics: &metrics,
    });
}
