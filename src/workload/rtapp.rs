//! rt-app scenarios in the kernel, with the host simulator's semantics (§8.3 of
//! `docs/linux-sched-reference.md`; `sim/README.md`):
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
//! (`fairway_contract::scenario::program`).
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
//! (docs/icount.md, "One vCPU at a time"; `cargo xtask test --only
//! rtapp-start-balance-off`).
//!
//! Why this file is long: it is one run, start to report: the instances,
//! their starter, the sampler and the end of the run share the run's statics
//! (`RUN`, the start, finish and report completions) and their order of use,
//! which reads best in one place.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use fairway_contract::scenario::program::{Cursor, Step};
use fairway_contract::scenario::resources::{Outcome, Resources};
use fairway_contract::scenario::{Event, Scenario, TimerMode};
use fairway_sched::boot_options::RtAppOptions;
use fairway_sched::task::GroupId;
use spin::Once;

use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::platform::percpu;
use crate::platform::sync::IrqSpinLock;
use crate::scheduling::{
    self, Completion, sleep_until, sleep_until_expiry, with_run_queue, yield_now,
};
use crate::tasks::{self, SpawnError, TaskId, current, current_runtime_ns};
use crate::workload::report::{CpuCounters, RunWindow};
use crate::workload::rtapp_log;

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
    /// Its task in the scenario (set at creation; `usize::MAX` for a free slot).
    spec: AtomicUsize,
    /// Set when the instance is created: at the start, or by a `fork`.
    name: Once<String>,
    task: Once<TaskId>,
    result: InstanceResult,
    /// Smallest and largest util_avg sampled after the warm-up.
    util_range: IrqSpinLock<Option<(u64, u64)>>,
    /// Its own timers (`"ref": "unique*"`): reference -> next expiry. Only the
    /// instance touches them, so no other CPU ever waits for this lock (a
    /// shared map serialised every periodic task of the machine).
    unique_timers: IrqSpinLock<Vec<(String, u64)>>,
    /// rt-app's log of its loops (`rtapp_log_rows=N`), allocated when the
    /// instance is created; unset when logs are off.
    rtapp_log: Once<rtapp_log::Log>,
}

impl Instance {
    fn new(spec: usize, name: Option<String>) -> Self {
        let slot = Once::new();
        if let Some(name) = name {
            slot.call_once(|| name);
        }
        Instance {
            spec: AtomicUsize::new(spec),
            name: slot,
            task: Once::new(),
            result: InstanceResult::default(),
            util_range: IrqSpinLock::new(None),
            unique_timers: IrqSpinLock::new(Vec::new()),
            rtapp_log: Once::new(),
        }
    }

    fn spec(&self) -> usize {
        self.spec.load(Ordering::Acquire)
    }
}

struct Run {
    scenario: Scenario,
    /// The instances the scenario starts, then room for those `fork` creates
    /// (slots `started..`, claimed with [`INSTANCES_CREATED`]).
    instances: Vec<Instance>,
    /// rt-app's resources and which blocked instances have been granted their event.
    sync: IrqSpinLock<SyncState>,
    /// Shared timer grids: reference -> next expiry (`unique*` ones are each
    /// instance's own, `Instance::unique_timers`).
    timers: IrqSpinLock<BTreeMap<String, u64>>,
    start: u64,
    /// Rows of each instance's rt-app log (`rtapp_log_rows=N`; 0 = off).
    log_rows: u64,
}

static RUN: Once<Run> = Once::new();
/// Instances created so far (started ones first, then forked ones).
static INSTANCES_CREATED: AtomicUsize = AtomicUsize::new(0);
/// Instances the scenario starts (slots `0..STARTED_INSTANCES`).
static STARTED_INSTANCES: AtomicUsize = AtomicUsize::new(0);

/// The shared resource model and the mechanism's side of it.
struct SyncState {
    resources: Resources,
    /// `granted[i]`: instance `i`, blocked on a resource, has been woken by it.
    granted: Vec<bool>,
}
/// Completed once: by the last instance to finish, or by the starter on failure.
static FINISHED: Completion = Completion::new();
/// Instances whose program ended.
static FINISHED_COUNT: AtomicU64 = AtomicU64::new(0);
/// The task running the scenario (woken early when every instance finished).
static MAIN_TASK: core::sync::atomic::AtomicU16 = core::sync::atomic::AtomicU16::new(0);
/// The starter's outcome: every instance spawned, or why not.
static STARTED: Once<Result<(), SpawnError>> = Once::new();
/// How long after `run` begins the instances are created, at least: time for
/// `main` to spawn the starter and go to sleep.
const START_DELAY_NS: u64 = 1_000_000;
/// The earliest virtual time a run starts at. With the start on a tick
/// boundary (of the unskewed grid, multiples of the tick period) a run's
/// timing relative to the ticks, and with it every decision, does not depend
/// on how long the boot took (it moved by 7 ms when the run queues stopped
/// being built for every task slot), and the boot's transients are over:
/// each CPU has ticked and its frequency domain has followed its idle CPUs
/// down (the DVFS transition-latency cases).
///
/// And the boot's PELT signals have decayed to zero, so that a run starts on
/// an idle machine, as the simulator's does: a signal of at most 1024 halves
/// every 32 periods (§2.1) and is below 1 after 11 halvings, 352 periods
/// (369 ms). With 20 ms, CPU 0 still held `main`'s utilization when the
/// instances started: a new task placed there got less of
/// `post_init_entity_util_avg`'s half of the spare capacity (§2.5), on
/// juno-r2 big0 became misfit 5 ms later than in the simulator, missed the
/// newly-idle pull to CPU 1 and was pushed to CPU 2 beside small0 instead
/// (docs/eas.md, "Verdicts across tick phases").
const RUN_START_NS: u64 = 400_000_000;
/// The starter's SCHED_FIFO priority (the highest).
const STARTER_PRIORITY: u8 = 99;

fn ns(us: i64) -> u64 {
    (us.max(0) as u64).saturating_mul(1000)
}

/// Busy-works until `us` µs of capacity- and frequency-invariant work are
/// done: each stretch of CPU time counts `capacity × frequency_scale / 1024`
/// per ns, so W µs take `W × 1024 / capacity × fmax / f` µs of CPU time at
/// frequency f (docs/boards.md), and a frequency change during the run
/// changes its pace from the next stretch (a few hundred ns).
fn run_work(us: i64) {
    let target = u128::from(ns(us)) * 1024 * 1024;
    let mut done: u128 = 0;
    let mut last = current_runtime_ns();
    let mut busy = super::BusyLoop::new();
    while done < target && !STOPPED.load(Ordering::Relaxed) {
        busy.pause();
        let runtime = current_runtime_ns();
        let rate = super::work_rate(this_cpu());
        done += u128::from(runtime.saturating_sub(last)) * u128::from(rate);
        last = last.max(runtime);
    }
}

/// Busy-waits for `us` µs of wall time.
fn run_wall(us: i64) {
    let end = now_ns() + ns(us);
    let mut busy = super::BusyLoop::new();
    while now_ns() < end && !STOPPED.load(Ordering::Relaxed) {
        busy.pause();
    }
}

/// The last expiry of the instance's timer `reference`, created at
/// `iteration_start` (its first period ends one period after the iteration
/// started, as rt-app's first timer event does).
fn timer_grid<'a>(
    timers: &'a mut Vec<(String, u64)>,
    reference: &str,
    iteration_start: u64,
) -> &'a mut u64 {
    let index = match timers.iter().position(|(name, _)| name == reference) {
        Some(index) => index,
        None => {
            timers.push((String::from(reference), iteration_start));
            timers.len() - 1
        }
    };
    &mut timers[index].1
}

/// One timer event on a grid whose last expiry is `*grid`: the next expiry,
/// and whether it has already come (no sleep; a missed period if it is
/// strictly past). Relative mode restarts an overrun grid from now, as rt-app
/// does; absolute mode keeps the grid.
fn advance_grid(grid: &mut u64, period: u64, now: u64, mode: TimerMode) -> (u64, bool) {
    let next = *grid + period;
    if next > now {
        *grid = next;
        (next, false)
    } else {
        *grid = if mode == TimerMode::Relative {
            now
        } else {
            next
        };
        (next, true)
    }
}

fn instance_main(index: usize) {
    let run = RUN.get().expect("scenario set before its tasks");
    let instance = &run.instances[index];
    let spec = &run.scenario.tasks[instance.spec()];
    // The starter creates a started instance when its delay has passed (as the
    // simulator starts it); a forked one waits out its delay itself.
    if index >= STARTED_INSTANCES.load(Ordering::Acquire) && spec.delay_us > 0 {
        scheduling::sleep_for(ns(spec.delay_us));
    }
    let mut cursor = Cursor::default();
    let mut iteration_start = now_ns();
    // Read once: with logs off, each event below only tests this local.
    let log = instance.rtapp_log.get();
    let since_start = |time: u64| time.saturating_sub(run.start);
    loop {
        if STOPPED.load(Ordering::Acquire) {
            // The run's duration is over: stop here, unfinished, until the report.
            REPORTED.wait_for(1);
            return;
        }
        let (event, phase, phase_start, iteration_begins) = match cursor.next(spec) {
            Step::Finished => break,
            Step::Event {
                event,
                phase,
                phase_start,
                iteration_start,
            } => (event, phase, phase_start, iteration_start),
        };
        if phase_start && phase > 0 {
            apply_phase(run, index, phase);
        }
        let now = now_ns();
        if iteration_begins {
            iteration_start = now;
        }
        if let Some(log) = log {
            log_event(log, event, phase, iteration_begins, since_start(now));
        }
        instance.result.events.fetch_add(1, Ordering::Relaxed);
        if let Some(us) = event.work_us() {
            // run, mem, iorun: capacity-invariant work.
            run_work(us);
            continue;
        }
        if resource_event(run, index, event) {
            continue;
        }
        match event {
            Event::Runtime { us } => run_wall(*us),
            Event::Sleep { us } if *us > 0 => sleep_until(now + ns(*us)),
            Event::Timer {
                reference,
                period_us,
                mode,
            } => {
                // The grid's next expiry, and the instant it restarts from.
                let period = ns(period_us.unwrap_or(0));
                let (next, expired) = if reference.starts_with("unique") {
                    let mut timers = instance.unique_timers.lock();
                    let grid = timer_grid(&mut timers, reference, iteration_start);
                    advance_grid(grid, period, now, *mode)
                } else {
                    let mut timers = run.timers.lock();
                    let grid = match timers.get_mut(reference.as_str()) {
                        Some(grid) => grid,
                        None => timers.entry(reference.clone()).or_insert(iteration_start),
                    };
                    advance_grid(grid, period, now, *mode)
                };
                if let Some(log) = log {
                    log_timer(
                        log,
                        period_us.unwrap_or(0),
                        since_start(next),
                        since_start(now),
                    );
                }
                // One definition of an overrun (docs/report-format.md,
                // "Overruns"): a timer event reached after its expiry is a
                // missed period and does not sleep, so it is no wake-up and
                // has no latency. The expiry may also pass between the
                // event's start and the sleep (the task was preempted, or
                // took an interrupt): the sleep is then not taken either.
                let missed = if expired {
                    next < now
                } else {
                    !sleep_until_expiry(next)
                };
                if missed {
                    instance
                        .result
                        .missed_periods
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
            Event::Yield => yield_now(),
            Event::Fork { task: name } => fork(run, name),
            // Handled above: work and resources.
            _ => {}
        }
    }
    let finished_at = now_ns();
    if let Some(log) = log {
        let mut log = log.lock();
        let end = since_start(finished_at);
        log.run_end(end);
        log.running(end);
        log.finish(end);
    }
    instance
        .result
        .finished_at
        .store(finished_at, Ordering::Relaxed);
    let finished = FINISHED_COUNT.fetch_add(1, Ordering::AcqRel) + 1;
    if run.scenario.global.duration_s <= 0 {
        // The last running task ends while others wait on resources: a deadlock.
        let state = run.sync.lock();
        check_deadlock(run, &state);
    }
    if finished == INSTANCES_CREATED.load(Ordering::Acquire) as u64 {
        end_of_run(run);
        FINISHED.complete();
        // A run with a duration sleeps until its end: end it early.
        scheduling::wake_up(TaskId(MAIN_TASK.load(Ordering::Acquire)));
    }
    // Stay (asleep) until the report has read this task's figures.
    REPORTED.wait_for(1);
}

/// rt-app's log as an event starts at `now` (ns since the run's start):
/// the event before it has ended there (a run's end; a timer's wake-up, so
/// `wu_lat` runs to here, the executor's step after the sleep included), a
/// loop may begin, and a `run` or `runtime` event starts (`mem` and `iorun`
/// are not in rt-app's logs). Out of line, so that with logs off the
/// executor's loop keeps its code and only tests the log.
#[inline(never)]
fn log_event(log: &rtapp_log::Log, event: &Event, phase: usize, loop_begins: bool, now: u64) {
    let mut log = log.lock();
    log.run_end(now);
    log.running(now);
    if loop_begins {
        log.loop_start(phase, now);
    }
    match *event {
        Event::Run { us } | Event::Runtime { us } if us > 0 => log.run_start(us as u64, now),
        _ => {}
    }
}

/// rt-app's log of a timer event at `now` expiring at `expiry` (ns since the
/// run's start).
#[inline(never)]
fn log_timer(log: &rtapp_log::Log, period_us: i64, expiry: u64, now: u64) {
    log.lock().timer(period_us.max(0) as u64, expiry, now);
}

/// A phase after the first starts: its affinity, clamps and group take effect,
/// as in the simulator. A task no longer allowed on its CPU moves through a
/// wake-up (the scheduler places a waking task on an allowed CPU), about a
/// microsecond later than the simulator's immediate move.
fn apply_phase(run: &Run, index: usize, phase: usize) {
    let spec = &run.scenario.tasks[run.instances[index].spec()];
    let attributes = Scenario::effective_attributes(spec, &spec.phases[phase]);
    let params = run.scenario.task_params(&attributes);
    let id = current();
    let group = group_of(attributes.taskgroup.as_deref());
    let cpu = tasks::task(id).cpu();
    with_run_queue(cpu, |rq| {
        // Validated values: the run queue accepts them.
        let _ = rq
            .core
            .set_task_uclamp(id, params.uclamp_min, params.uclamp_max, now_ns());
    });
    let _ = scheduling::groups::set_task_group(id, group);
    if tasks::set_affinity(id, params.affinity).is_ok()
        && !params
            .affinity
            .contains(fairway_sched::task::CpuId(this_cpu() as u16))
    {
        sleep_until(now_ns() + 1);
    }
}

/// The group of a `taskgroup` path (`None` or `""`: the root).
fn group_of(path: Option<&str>) -> GroupId {
    match path {
        Some(path) if !path.is_empty() => GROUPS
            .get()
            .and_then(|groups| groups.get(path).copied())
            .unwrap_or(GroupId::ROOT),
        _ => GroupId::ROOT,
    }
}

/// Carries out an event on rt-app's resources; `false` for any other event. The
/// decisions are the shared model's (`fairway_contract::scenario::resources`); the
/// kernel only sleeps and wakes. A misuse of a mutex, or a deadlock in a run that
/// no duration ends, stops the kernel with a message naming the tasks.
fn resource_event(run: &Run, me: usize, event: &Event) -> bool {
    let mut wake = Vec::new();
    let mut state = run.sync.lock();
    let resources = &mut state.resources;
    let outcome = match event {
        Event::Lock { mutex } => resources.lock(me, mutex, &mut wake),
        Event::Unlock { mutex } => resources.unlock(me, mutex, &mut wake),
        Event::Wait { condition, mutex } => resources.wait(me, condition, mutex, &mut wake),
        Event::Sync { condition, mutex } => resources.sync(me, condition, mutex, &mut wake),
        Event::Signal { condition } => Ok(resources.signal(condition, false, &mut wake)),
        Event::Broadcast { condition } => Ok(resources.signal(condition, true, &mut wake)),
        Event::Barrier { name } => Ok(resources.barrier(me, name, &mut wake)),
        Event::SemPost { name } => Ok(resources.sem_post(name, &mut wake)),
        Event::SemWait { name } => Ok(resources.sem_wait(me, name)),
        Event::Suspend => Ok(resources.suspend(me)),
        Event::Resume { task: target } => {
            let created = INSTANCES_CREATED.load(Ordering::Acquire);
            let targets: Vec<usize> = run
                .scenario
                .resume_targets(target)
                .flat_map(|(spec, instance)| {
                    let of_spec = run.instances[..created]
                        .iter()
                        .enumerate()
                        .filter(move |(_, i)| i.spec() == spec)
                        .map(|(index, _)| index);
                    of_spec
                        .enumerate()
                        .filter(move |(number, _)| instance.is_none_or(|i| i as usize == *number))
                        .map(|(_, index)| index)
                })
                .collect();
            Ok(resources.resume(targets, &mut wake))
        }
        _ => return false,
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let name = run.instances[error.instance()]
                .name
                .get()
                .map_or("?", String::as_str);
            defmt::error!(
                "rtapp: task {=str}: {}",
                name,
                defmt::Display2Format(&error)
            );
            crate::platform::exit::exit(crate::ExitCode::Failure)
        }
    };
    for &woken in &wake {
        state.granted[woken] = true;
    }
    // Boosts under the resources' lock too (its order is before the run
    // queues'), so that they are applied in the order they were decided.
    for (instance, boost) in state.resources.take_pi_changes() {
        if let Some(&id) = run.instances[instance].task.get() {
            scheduling::pi::rt_mutex_setprio(id, boost);
        }
    }
    if outcome == Outcome::Block && run.scenario.global.duration_s <= 0 {
        check_deadlock(run, &state);
    }
    // Wake-ups under the resources' lock (its order is before the run queues'),
    // before this task may park: they must not wait for it.
    for &woken in wake.iter().filter(|&&woken| woken != me) {
        if let Some(&id) = run.instances[woken].task.get() {
            scheduling::wake_up(id);
        }
    }
    if outcome == Outcome::Block {
        // Woken (possibly by this very call) once the model grants the event.
        state = scheduling::park_until(&run.sync, state, |s| s.granted[me]);
    }
    state.granted[me] = false;
    drop(state);
    scheduling::preempt_point();
    true
}

/// Set when the run is over (its duration passed, or every instance finished):
/// instances stop at their next check, so nothing runs on into the report.
static STOPPED: AtomicBool = AtomicBool::new(false);
/// When the run ended, the instances that existed then (with their missed
/// periods), and the counters then (`report::RunWindow`).
static ENDED: Once<RunEnd> = Once::new();

/// When the run ended, the instances then with their missed periods, and the
/// counters then.
type RunEnd = (u64, Vec<(TaskId, u64)>, RunWindow);
/// The CPUs' counters when the instances started.
static STARTED_COUNTERS: Once<CpuCounters> = Once::new();

/// Ends the run now (first caller wins): stops the instances and takes the
/// counters the report covers. Runs from the deadline's timer (interrupt
/// context) or from the last instance to finish; no lock is taken but the
/// report's own.
fn end_of_run(run: &Run) {
    if STOPPED.swap(true, Ordering::AcqRel) {
        return;
    }
    let now = now_ns();
    let tasks = reported_tasks(run);
    let start = STARTED_COUNTERS
        .get()
        .cloned()
        .unwrap_or_else(CpuCounters::now);
    let window = RunWindow::close(start, &tasks, now);
    snapshot_group_stats();
    ENERGY.call_once(scheduling::cpufreq::report);
    ENDED.call_once(|| (now, tasks, window));
    // Recording goes on until the counters above were read: other CPUs
    // switch meanwhile, and the trace shows what the report could see.
    scheduling::observe::trace_stop(now);
}

/// The performance domains' meters at the end of the run (empty without
/// DVFS).
static ENERGY: Once<Vec<scheduling::cpufreq::DomainReport>> = Once::new();

/// The deadline's timer (interrupt context): the run is over.
fn deadline_passed(_: usize) {
    if let Some(run) = RUN.get() {
        end_of_run(run);
    }
    scheduling::wake_up(TaskId(MAIN_TASK.load(Ordering::Acquire)));
}

/// The instances that exist, with their missed periods.
fn reported_tasks(run: &Run) -> Vec<(TaskId, u64)> {
    run.instances
        .iter()
        .filter_map(|instance| {
            let id = *instance.task.get()?;
            Some((id, instance.result.missed_periods.load(Ordering::Relaxed)))
        })
        .collect()
}

/// Stops the kernel if every live instance is blocked on a resource in a run
/// that no duration ends: nothing could wake them (as the simulator reports).
fn check_deadlock(run: &Run, state: &SyncState) {
    let live =
        INSTANCES_CREATED.load(Ordering::Acquire) - FINISHED_COUNT.load(Ordering::Acquire) as usize;
    let blocked = state.resources.blocked_count();
    if blocked == 0 || blocked < live {
        return;
    }
    let mut names = String::new();
    for index in state.resources.blocked() {
        if !names.is_empty() {
            names.push_str(", ");
        }
        names.push_str(run.instances[index].name.get().map_or("?", String::as_str));
    }
    defmt::error!(
        "rtapp: deadlock at {=u64} ns: every live task is blocked on a resource ({=str}) and global.duration does not end the run",
        now_ns().saturating_sub(run.start),
        names.as_str()
    );
    // The decisions up to the deadlock can still be replayed (the simulator
    // reaches the same deadlock: it is the scenario's).
    scheduling::observe::print_core_record();
    crate::platform::exit::exit(crate::ExitCode::Failure)
}

/// `fork`: one more instance of task `name`, created now on the least-loaded
/// allowed CPU and numbered on from the task's own instances (`name-k`).
fn fork(run: &Run, name: &str) {
    let Some(spec_index) = run.scenario.tasks.iter().position(|t| t.name == name) else {
        return; // validation checked the name
    };
    let index = INSTANCES_CREATED.fetch_add(1, Ordering::AcqRel);
    let Some(instance) = run.instances.get(index) else {
        INSTANCES_CREATED.fetch_sub(1, Ordering::AcqRel);
        defmt::error!(
            "rtapp: fork of {=str}: more than {=usize} tasks",
            name,
            run.instances.len()
        );
        crate::platform::exit::exit(crate::ExitCode::Failure)
    };
    let number = run.instances[..index]
        .iter()
        .filter(|i| i.spec() == spec_index)
        .count();
    instance.spec.store(spec_index, Ordering::Release);
    instance
        .name
        .call_once(|| alloc::format!("{name}-{number}"));
    rtapp_log::allocate(&instance.rtapp_log, run.log_rows);
    let params = first_params(run, index);
    let cpu = initial_cpu(params.affinity, &queued_per_cpu());
    if let Err(error) = spawn_instance(run, index, cpu, params, None) {
        defmt::error!("rtapp: fork of {=str}: {}", name, error);
        crate::platform::exit::exit(crate::ExitCode::Failure)
    }
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
            if tasks::task(id).state() != tasks::TaskState::Running
                && tasks::task(id).state() != tasks::TaskState::Sleeping
            {
                continue;
            }
            let cpu = tasks::task(id).cpu();
            let util = with_run_queue(cpu, |rq| rq.queue().task_signals(id).util_avg);
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
        match scheduling::groups::create_group(parent, shares) {
            Ok(group) => {
                groups.insert(path, group);
            }
            Err(error) => {
                defmt::error!(
                    "rtapp: task group {=str}: {}",
                    path.as_str(),
                    defmt::Debug2Format(&error)
                );
                return Err(SpawnError::TaskGroup);
            }
        }
    }
    Ok(groups)
}

/// The limited groups' `cpu.stat` when the run ended.
static GROUP_STATS: Once<Vec<(String, scheduling::bandwidth::GroupStats)>> = Once::new();

/// Takes the limited groups' statistics (at the end of the run).
fn snapshot_group_stats() {
    super::limits::stop();
    GROUP_STATS.call_once(|| {
        GROUPS.get().map_or_else(Vec::new, |groups| {
            groups
                .iter()
                .filter_map(|(path, &group)| {
                    Some((path.clone(), scheduling::bandwidth::group_stats(group)?))
                })
                .collect()
        })
    });
}

/// The least-loaded allowed CPU, in CPU order.
fn initial_cpu(affinity: fairway_sched::task::CpuMask, load: &[usize]) -> usize {
    (0..load.len())
        .filter(|&cpu| affinity.contains(fairway_sched::task::CpuId(cpu as u16)))
        .min_by_key(|&cpu| load[cpu])
        .unwrap_or(0)
}

/// The starter (SCHED_FIFO): at the start time, spawns every instance without a
/// `delay`, in file order, on the least-loaded allowed CPU (CPU order breaks
/// ties); arms the timer that creates the others; then sleeps until the report.
fn starter_main(_: usize) {
    let run = RUN.get().expect("scenario set before its starter");
    sleep_until(run.start);
    scheduling::observe::trace_start(run.start);
    STARTED_COUNTERS.call_once(CpuCounters::now);
    scheduling::cpufreq::restart_domains();
    if crate::observe::trace::recording() {
        scheduling::cpufreq::trace_frequencies(now_ns());
    }
    let cpus = percpu::nr_online();
    let mut load = alloc::vec![0usize; cpus];
    let mut outcome = Ok(());
    let started = STARTED_INSTANCES.load(Ordering::Acquire);
    let delay = |index: usize| run.scenario.tasks[run.instances[index].spec()].delay_us;
    // Every CPU is kicked once all are queued (see `DeferredKicks`).
    let mut kicks = scheduling::DeferredKicks::default();
    for index in (0..started).filter(|&index| delay(index) == 0) {
        let params = first_params(run, index);
        let cpu = initial_cpu(params.affinity, &load);
        load[cpu] += 1;
        if let Err(error) = spawn_instance(run, index, cpu, params, Some(&mut kicks)) {
            outcome = Err(error);
            break;
        }
    }
    kicks.send();
    // The others start as the simulator starts them: at `start + delay`, from a
    // timer (a wake-up, not a preemption by this SCHED_FIFO task), in order of
    // their delays (file order among equal ones).
    let mut delayed: Vec<(u64, usize)> = (0..started)
        .filter(|&index| delay(index) > 0)
        .map(|index| (run.start + ns(delay(index)), index))
        .collect();
    delayed.sort_by_key(|&(at, _)| at);
    if outcome.is_ok()
        && let Some(&(first, _)) = delayed.first()
    {
        DELAYED.call_once(|| delayed);
        crate::platform::hrtimer::start(
            crate::platform::hrtimer::task_timer(current().index()),
            first,
            start_delayed,
            current().index(),
        );
    } else if outcome.is_ok() {
        STARTED.call_once(|| Ok(()));
        arm_deadline(run, current().index());
    }
    if let Err(error) = outcome {
        STARTED.call_once(|| Err(error));
        FINISHED.complete();
    }
    // Stay (asleep) until the report: a task slot freed now would be reused by a
    // `fork`, and the switch trace names tasks by slot; its timer starts the
    // delayed instances.
    REPORTED.wait_for(1);
}

/// Instances with a `delay`: (start time, instance), in start order.
static DELAYED: Once<Vec<(u64, usize)>> = Once::new();
/// The next of [`DELAYED`] to start.
static NEXT_DELAYED: AtomicUsize = AtomicUsize::new(0);

/// The starter's timer (interrupt context): creates the delayed instances that
/// are due on the least-loaded allowed CPU, then re-arms for the next.
fn start_delayed(timer: usize) {
    let (Some(run), Some(delayed)) = (RUN.get(), DELAYED.get()) else {
        return;
    };
    let now = now_ns();
    while let Some(&(at, index)) = delayed.get(NEXT_DELAYED.load(Ordering::Acquire)) {
        if STOPPED.load(Ordering::Acquire) {
            return;
        }
        if at > now {
            crate::platform::hrtimer::start(
                crate::platform::hrtimer::task_timer(timer),
                at,
                start_delayed,
                timer,
            );
            return;
        }
        NEXT_DELAYED.fetch_add(1, Ordering::AcqRel);
        let params = first_params(run, index);
        let cpu = initial_cpu(params.affinity, &queued_per_cpu());
        if let Err(error) = spawn_instance(run, index, cpu, params, None) {
            STARTED.call_once(|| Err(error));
            FINISHED.complete();
            return;
        }
    }
    STARTED.call_once(|| Ok(()));
    arm_deadline(run, timer);
}

/// Arms `timer` (the starter's) for the end of a run with a duration.
fn arm_deadline(run: &Run, timer: usize) {
    if run.scenario.global.duration_s > 0 {
        let deadline = run.start + ns(run.scenario.global.duration_s * 1_000_000);
        crate::platform::hrtimer::start(
            crate::platform::hrtimer::task_timer(timer),
            deadline,
            deadline_passed,
            timer,
        );
    }
}

/// Tasks queued on each CPU (running included), for placing a task created
/// during the run.
fn queued_per_cpu() -> Vec<usize> {
    (0..percpu::nr_online())
        .map(|cpu| {
            with_run_queue(cpu, |rq| {
                fairway_sched::class::SchedClass::nr_running(rq.queue())
            })
        })
        .collect()
}

/// The parameters instance `index` starts with (its first phase's attributes).
fn first_params(run: &Run, index: usize) -> tasks::TaskParams {
    let spec = &run.scenario.tasks[run.instances[index].spec()];
    let attributes = spec
        .phases
        .first()
        .map(|phase| Scenario::effective_attributes(spec, phase))
        .unwrap_or_else(|| spec.attributes.clone());
    let mut params = run.scenario.task_params(&attributes);
    params.group = group_of(attributes.taskgroup.as_deref());
    params
}

fn spawn_instance(
    run: &Run,
    index: usize,
    cpu: usize,
    params: tasks::TaskParams,
    kicks: Option<&mut scheduling::DeferredKicks>,
) -> Result<(), SpawnError> {
    let instance = &run.instances[index];
    let name = instance.name.get().map_or("?", String::as_str);
    if run.scenario.global.pi_enabled {
        // Its priority for the mutexes' inheritance: its own for the whole run
        // (validation refuses a phase that changes the policy).
        run.sync.lock().resources.set_policy(index, params.policy);
    }
    let id = match kicks {
        Some(kicks) => scheduling::spawn_deferred(name, instance_main, index, cpu, params, kicks)?,
        None => scheduling::spawn(name, instance_main, index, cpu, params)?,
    };
    instance.task.call_once(|| id);
    Ok(())
}

/// Runs `scenario` to its end (every program finished, or its duration passed),
/// prints the `report:` lines, and returns whether every instance started.
pub fn run(scenario: Scenario, options: &RtAppOptions) -> Result<(), SpawnError> {
    let mut instances = Vec::new();
    for (spec_index, spec) in scenario.tasks.iter().enumerate() {
        for instance in 0..spec.instances.max(0) {
            let name = Scenario::instance_name(spec, instance);
            instances.push(Instance::new(spec_index, Some(name)));
        }
    }
    let started = instances.len();
    for instance in &instances {
        rtapp_log::allocate(&instance.rtapp_log, options.rtapp_log_rows);
    }
    scheduling::reserve_for_spawns(started);
    INSTANCES_CREATED.store(started, Ordering::Release);
    STARTED_INSTANCES.store(started, Ordering::Release);
    if scenario.tasks.iter().any(|t| scenario.is_forked(&t.name)) {
        // Room for forks, up to the scenario limit.
        let room = fairway_contract::scenario::MAX_TASKS.saturating_sub(started);
        instances.extend((0..room).map(|_| Instance::new(usize::MAX, None)));
    }
    let slots = instances.len();
    MAIN_TASK.store(current().0, Ordering::Release);
    let trace_limit = options.trace_switches as usize;
    let resources = Resources::new(&scenario);
    let run = RUN.call_once(|| Run {
        scenario,
        instances,
        sync: IrqSpinLock::new(SyncState {
            resources,
            granted: alloc::vec![false; slots],
        }),
        timers: IrqSpinLock::new(BTreeMap::new()),
        start: (now_ns() + START_DELAY_NS)
            .max(RUN_START_NS)
            .next_multiple_of(scheduling::tick_period_ns()),
        log_rows: options.rtapp_log_rows,
    });
    if trace_limit > 0 {
        crate::observe::switches::start(trace_limit);
    }
    let groups = create_groups(&run.scenario)?;
    super::limits::set_limits(&run.scenario, &groups, run.start)?;
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
        scheduling::spawn(
            "util-sampler",
            util_sampler,
            0,
            cpu,
            fairway_sched::task::TaskParams::pinned(cpu),
        )?;
    } else {
        SAMPLER_DONE.complete();
    }
    let starter = tasks::TaskParams {
        policy: tasks::Policy::Fifo {
            priority: STARTER_PRIORITY,
        },
        ..tasks::TaskParams::default()
    };
    scheduling::spawn("rtapp-start", starter_main, 0, this_cpu(), starter)?;
    if INSTANCES_CREATED.load(Ordering::Acquire) == 0 {
        FINISHED.complete();
    }
    if run.scenario.global.duration_s > 0 {
        let deadline = run.start + ns(run.scenario.global.duration_s * 1_000_000);
        // No polling: it would take CPU time from the scenario's tasks on this
        // CPU. The starter's timer ends the run at the deadline, and the last
        // instance to finish ends it early; either wakes this task. The sleep
        // (a little past the deadline) is only a backstop.
        while FINISHED.count() == 0 && !STOPPED.load(Ordering::Acquire) {
            sleep_until(deadline + 1_000_000);
            if now_ns() >= deadline {
                end_of_run(run);
            }
        }
    } else {
        FINISHED.wait_for(1);
    }
    if let Some(Err(error)) = STARTED.get() {
        return Err(*error);
    }
    end_of_run(run);
    SAMPLER_DONE.wait_for(1);
    let elapsed = ENDED.get().map_or(now_ns(), |(at, _, _)| *at) - run.start;
    if trace_limit > 0 {
        scheduling::observe::print_switches(run.start);
    }
    scheduling::observe::print_core_record();
    // The scenario's groups, by the indices the records use.
    let groups: Vec<(GroupId, &str)> = GROUPS
        .get()
        .into_iter()
        .flatten()
        .map(|(path, &group)| (group, path.as_str()))
        .collect();
    scheduling::observe::print_trace(&groups);
    for instance in &run.instances {
        if let (Some(&id), Some(log)) = (instance.task.get(), instance.rtapp_log.get()) {
            rtapp_log::print(id, log, elapsed);
        }
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
        match fairway_contract::scenario::wire::decode_and_validate(blob, percpu::nr_online()) {
            Ok(scenario) => scenario,
            Err(error) => {
                defmt::error!("rtapp: {}", defmt::Display2Format(&error));
                return crate::ExitCode::Failure;
            }
        };
    // Linux without uclamp refuses a clamp (`EOPNOTSUPP`); `uclamp=auto`,
    // the default, would have turned it on for this scenario.
    if let Some((field, value)) = scenario.first_clamp()
        && !scheduling::uclamp_enabled()
    {
        defmt::error!(
            "rtapp: {=str}={=i64}: uclamp is off (uclamp=0): boot with uclamp=1 or uclamp=auto",
            field.as_str(),
            value
        );
        return crate::ExitCode::Failure;
    }
    match run(scenario, options) {
        Ok(()) => crate::ExitCode::Success,
        Err(error) => {
            defmt::error!("rtapp: {}", error);
            crate::ExitCode::Failure
        }
    }
}

fn report(run: &Run, elapsed: u64) {
    // The tasks and their counters as the run ended (not as the printing finds
    // them: stopped instances may still be switching out).
    let (tasks, window) = match ENDED.get() {
        Some((_, tasks, window)) => (tasks.clone(), Some(window)),
        None => (reported_tasks(run), None),
    };
    let config = super::report::config_label("");
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<u64> = Vec::new();
    for instance in &run.instances {
        if let Some((low, high)) = *instance.util_range.lock() {
            let name = instance.name.get().map_or("?", String::as_str);
            names.push(alloc::format!("util_min.{name}"));
            values.push(low);
            names.push(alloc::format!("util_max.{name}"));
            values.push(high);
        }
    }
    // The longest a running task went uncharged on each CPU: bandwidth
    // checks bound a period's overrun by it (xtask/src/test/areas/bandwidth.rs).
    for cpu in 0..percpu::nr_online() {
        names.push(alloc::format!("max_uncharged_ns.cpu{cpu}"));
        values.push(percpu::of(cpu).max_uncharged_ns.load(Ordering::Relaxed));
    }
    // The largest throttle debt on each CPU, over the limited groups: a
    // period's run differs from the quota by the debts at its two ends
    // (docs/bandwidth.md, "The period's bound"). Under icount a debt can pass
    // the longest uncharged run: the tick that found the runtime used up can
    // lose its vCPU's turn before the reschedule it asked for.
    if let Some(groups) = GROUP_STATS.get().filter(|groups| !groups.is_empty()) {
        for cpu in 0..percpu::nr_online() {
            let debt = groups
                .iter()
                .filter_map(|(_, stats)| stats.max_debt_ns.get(cpu).copied())
                .max()
                .unwrap_or(0);
            names.push(alloc::format!("max_throttle_debt_ns.cpu{cpu}"));
            values.push(debt);
        }
    }
    // The energy meter (docs/boards.md): per performance domain, its energy,
    // governor calls, frequency changes and time at each frequency it used.
    for (name, value) in scheduling::cpufreq::metrics(ENERGY.get().map_or(&[][..], Vec::as_slice)) {
        names.push(name);
        values.push(value);
    }
    let created = INSTANCES_CREATED.load(Ordering::Acquire) as u64;
    let mut metrics: Vec<(&str, u64)> = alloc::vec![("tasks", created)];
    metrics.extend(scheduling::eas::metrics());
    metrics.extend(names.iter().map(String::as_str).zip(values.iter().copied()));
    super::report::print(&super::report::RunResults {
        name: "rtapp",
        config: &config,
        wall_ns: elapsed,
        tasks: &tasks,
        window,
        metrics: &metrics,
        groups: GROUP_STATS.get().map_or(&[], Vec::as_slice),
    });
}
