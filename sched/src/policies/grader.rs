//! The grader: the properties every policy must have, run on one CPU's run
//! queue of any policy, built-in or registered, each giving a verdict with
//! its figures rather than a panic. The conformance tests
//! (`run_queue/conformance.rs`) assert them for every policy; `cargo xtask
//! policy-check NAME` prints them (docs/policies.md).
//!
//! - every task once: under random wake-ups, sleeps, ticks, yields, picks
//!   and group moves, no task is lost, none is picked that is not queued,
//!   the queue is idle only when empty, and `nr_running` counts the tasks;
//! - no starvation: CPU-bound tasks of nice −5 to 10 each run within a
//!   window: 200 ms for the built-ins; for a registered policy that shares
//!   by weight, the 1/p slices between the turns of the task with the
//!   smallest share p, plus a slice per task; for a random one, the wait
//!   that task exceeds with probability below 10⁻⁶; else 200 ms;
//! - migration keeps the task: a task taken off one CPU runs on another;
//! - shares: twelve CPU-bound tasks of nice −3, 0 and 3 (four each, as
//!   `tests/scenarios/fairness-12-mixed-nice.json`) for 20 s: each task's
//!   CPU time against the share the policy promises ([`Share`]).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::class::{DequeueFlags, EnqueueFlags, SchedClass};
use crate::run_queue::{PolicyKind, RunQueue};
use crate::task::{GroupId, Nanoseconds, Policy as TaskPolicy, TaskId, TaskParams};

use super::SplitMix64;

const MS: u64 = 1_000_000;

/// The share of the CPU a policy promises CPU-bound tasks, which the
/// grader's share property checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Share {
    /// The same share each, every task within `within_slices` slices of it
    /// (round robin, FIFO with a slice).
    Equal {
        /// The largest error allowed, in slices.
        within_slices: f64,
    },
    /// Shares in proportion to Linux's weights, each within
    /// `within_slices` slices.
    ByWeight {
        /// The largest error allowed, in slices.
        within_slices: f64,
    },
    /// Shares in proportion to the weights by random draws, one per slice:
    /// each task's slices within `sigmas` standard deviations of the
    /// binomial count `n·p ± √(n·p·(1−p))`.
    ByWeightRandom {
        /// The standard deviations allowed.
        sigmas: f64,
    },
}

/// One property's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The property, in a few words.
    pub property: &'static str,
    /// Whether it holds.
    pub passed: bool,
    /// The figures behind the verdict.
    pub detail: String,
}

/// The share a built-in or registered policy promises.
pub fn share_of(kind: &PolicyKind) -> Share {
    match kind {
        PolicyKind::RoundRobin { .. } => Share::Equal { within_slices: 1.0 },
        PolicyKind::Cfs(_) | PolicyKind::Eevdf(_) => Share::ByWeight { within_slices: 1.0 },
        PolicyKind::Registered(id, _) => id.registered().share,
    }
}

/// Every property for `kind` (built for one CPU; its slice is what the
/// share property counts in).
pub fn grade(kind: PolicyKind, slice_ns: Nanoseconds) -> Vec<Verdict> {
    let verdict = |property, result: Result<String, String>| Verdict {
        property,
        passed: result.is_ok(),
        detail: result.unwrap_or_else(|failure| failure),
    };
    vec![
        verdict("every task once", every_task_once(kind, &mut |_| {})),
        verdict("no starvation", no_starvation(kind)),
        verdict("migration keeps the task", migration_keeps_the_task(kind)),
        verdict("shares", shares(kind, slice_ns)),
    ]
}

fn random_params(random: &mut SplitMix64) -> TaskParams {
    let nice = random.below(40) as i8 - 20;
    let priority = random.below(3) as u8 + 1;
    let policy = match random.below(8) {
        0 => TaskPolicy::Batch { nice },
        1 => TaskPolicy::Idle,
        // RT tasks go to the RT class above the policy under test.
        2 => TaskPolicy::Fifo { priority },
        3 => TaskPolicy::RoundRobin { priority },
        _ => TaskPolicy::Normal { nice },
    };
    TaskParams {
        policy,
        ..TaskParams::default()
    }
}

const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};
const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

/// 4,000 random operations on 20 tasks in three groups, the model of which
/// tasks are queued checked after each (`after_step` may check more: the
/// tests check the fair class's invariants), then a drain: every queued
/// task comes out exactly once and the queue is idle.
pub fn every_task_once(
    kind: PolicyKind,
    after_step: &mut dyn FnMut(&RunQueue),
) -> Result<String, String> {
    let mut random = SplitMix64::new(3);
    let tasks = 20;
    let mut rq = RunQueue::new(kind, tasks);
    let group = rq
        .create_group(GroupId::ROOT, 1024)
        .map_err(|e| format!("{e:?}"))?;
    let nested = rq.create_group(group, 300).map_err(|e| format!("{e:?}"))?;
    if rq.pick_next_task(0).is_some() {
        return Err("picked a task from an empty queue".into());
    }
    for t in 0..tasks {
        let mut params = random_params(&mut random);
        params.group = [GroupId::ROOT, group, nested][t % 3];
        rq.task_new(TaskId(t as u16), &params, 0)
            .map_err(|e| format!("task_new: {e:?}"))?;
    }
    let mut queued = vec![false; tasks];
    let (mut current, mut now, mut picks) = (None::<TaskId>, 0, 0u64);
    for step in 0..4000 {
        now += random.below(2 * MS);
        let t = TaskId(random.below(tasks as u64) as u16);
        match random.below(6) {
            0 | 1 if !queued[t.index()] => {
                rq.enqueue_task(t, now, WAKEUP);
                queued[t.index()] = true;
                if let Some(c) = current {
                    let _ = rq.wakeup_preempt(c, t, now);
                }
            }
            2 if queued[t.index()] => {
                rq.dequeue_task(t, now, SLEEP);
                queued[t.index()] = false;
                if current == Some(t) {
                    rq.put_prev_task(t, now);
                    current = None;
                }
            }
            3 => {
                if let Some(c) = current {
                    if random.below(4) == 0 {
                        rq.yield_task(c, now);
                    }
                    let _ = rq.task_tick(c, now);
                }
            }
            4 if step % 7 == 0 => {
                let g = [GroupId::ROOT, group, nested][random.below(3) as usize];
                rq.set_task_group(t, g, now).map_err(|e| format!("{e:?}"))?;
            }
            _ => {
                if let Some(c) = current.take() {
                    rq.put_prev_task(c, now);
                }
                current = rq.pick_next_task(now);
                match current {
                    Some(next) if !queued[next.index()] => {
                        return Err(format!("step {step}: picked {next:?}, which is not queued"));
                    }
                    Some(next) => {
                        rq.set_next_task(next, now);
                        picks += 1;
                    }
                    None if queued.iter().any(|&q| q) => {
                        return Err(format!("step {step}: idle with tasks queued"));
                    }
                    None => {}
                }
            }
        }
        let expected = queued.iter().filter(|&&q| q).count();
        if rq.nr_running() != expected || rq.signals().nr_running != expected {
            return Err(format!(
                "step {step}: nr_running {} with {expected} tasks queued",
                rq.nr_running()
            ));
        }
        after_step(&rq);
    }
    if let Some(c) = current.take() {
        rq.put_prev_task(c, now);
    }
    let drained = drain(&mut rq, &mut queued, now)?;
    Ok(format!(
        "4000 random operations on {tasks} tasks, {picks} picks, {drained} drained once each"
    ))
}

/// Picks, runs and dequeues until empty: every queued task comes out
/// exactly once, then the queue is idle. How many came out.
fn drain(rq: &mut RunQueue, queued: &mut [bool], now: Nanoseconds) -> Result<usize, String> {
    let mut seen = vec![false; queued.len()];
    let mut count = 0;
    while let Some(task) = rq.pick_next_task(now) {
        if !queued[task.index()] || seen[task.index()] {
            return Err(format!("drain: {task:?} picked twice or not queued"));
        }
        seen[task.index()] = true;
        count += 1;
        rq.set_next_task(task, now);
        rq.dequeue_task(task, now, SLEEP);
        rq.put_prev_task(task, now);
        queued[task.index()] = false;
    }
    if queued.iter().any(|&q| q) || rq.nr_running() != 0 {
        return Err("drain: a queued task was lost".into());
    }
    Ok(count)
}

/// CPU-bound tasks on one run queue under a 1 ms tick for `duration`: the
/// time each ran, and the longest each waited.
fn run_hogs(kind: PolicyKind, nices: &[i8], duration: Nanoseconds) -> (Vec<u64>, Vec<u64>) {
    let tasks = nices.len();
    let mut rq = RunQueue::new(kind, tasks);
    for (t, &nice) in nices.iter().enumerate() {
        let params = TaskParams {
            policy: TaskPolicy::Normal { nice },
            ..TaskParams::default()
        };
        let task = TaskId(t as u16);
        rq.task_new(task, &params, 0).expect("valid parameters");
        let initial = EnqueueFlags {
            initial: true,
            ..EnqueueFlags::default()
        };
        rq.enqueue_task(task, 0, initial);
    }
    let mut ran = vec![0u64; tasks];
    let mut last_ran = vec![0u64; tasks];
    let mut longest_wait = vec![0u64; tasks];
    let mut now = 0;
    let mut current = rq.pick_next_task(now).expect("tasks queued");
    rq.set_next_task(current, now);
    while now < duration {
        now += MS;
        ran[current.index()] += MS;
        last_ran[current.index()] = now;
        if rq.task_tick(current, now).is_needed() {
            rq.put_prev_task(current, now);
            current = rq.pick_next_task(now).expect("tasks queued");
            rq.set_next_task(current, now);
        }
        for (t, &at) in last_ran.iter().enumerate() {
            longest_wait[t] = longest_wait[t].max(now - at);
        }
    }
    (ran, longest_wait)
}

/// Every CPU-bound task runs within its window.
pub fn no_starvation(kind: PolicyKind) -> Result<String, String> {
    let nices: Vec<i8> = (0..6).map(|t| t * 3 - 5).collect();
    let weights: Vec<f64> = nices.iter().map(|&n| weight(n)).collect();
    let p = weights[5] / weights.iter().sum::<f64>();
    let window = match (kind, share_of(&kind)) {
        (PolicyKind::Registered(..), Share::ByWeightRandom { .. }) => {
            // The fewest tickets, a fraction p of them, miss every draw of
            // k slices with probability (1 − p)^k: below 10⁻⁶.
            let slices = (-13.816 / ln_1p(-p)) as u64 + 2;
            slices * slice_of(&kind)
        }
        (PolicyKind::Registered(..), Share::ByWeight { .. }) => {
            // Its turn comes once per 1/p slices, give or take one slice
            // of each task.
            (1.0 / p) as u64 * slice_of(&kind) + nices.len() as u64 * slice_of(&kind)
        }
        _ => 200 * MS,
    };
    let (_, longest_wait) = run_hogs(kind, &nices, 20_000 * MS);
    let (task, &wait) = longest_wait
        .iter()
        .enumerate()
        .max_by_key(|(_, wait)| **wait)
        .expect("six tasks");
    let figures = format!(
        "6 CPU-bound tasks of nice -5..10 for 20 s: the longest wait {} ms (nice {}), window {} ms",
        wait / MS,
        nices[task],
        window / MS
    );
    if wait <= window {
        Ok(figures)
    } else {
        Err(figures)
    }
}

/// A task taken off one CPU's queue runs on another's, and not on the
/// first.
pub fn migration_keeps_the_task(kind: PolicyKind) -> Result<String, String> {
    let mut cpu0 = RunQueue::new(kind.for_cpu(0), 4);
    let mut cpu1 = RunQueue::new(kind.for_cpu(1), 4);
    let task = TaskId(1);
    cpu0.task_new(task, &TaskParams::default(), 0)
        .map_err(|e| format!("{e:?}"))?;
    cpu0.enqueue_task(task, 0, EnqueueFlags::default());
    if cpu0.migrate_task_out(task).is_some() {
        return Err("a queued task was taken off its CPU".into());
    }
    cpu0.dequeue_task(task, 5, DequeueFlags::default());
    let migration = cpu0.migrate_task_out(task).ok_or("not taken off")?;
    cpu1.migrate_task_in(task, &migration, 5)
        .map_err(|e| format!("{e:?}"))?;
    let migrated = EnqueueFlags {
        migrated: true,
        ..EnqueueFlags::default()
    };
    cpu1.enqueue_task(task, 5, migrated);
    match (cpu1.pick_next_task(5), cpu0.pick_next_task(5)) {
        (Some(picked), None) if picked == task => Ok("taken off CPU 0, runs on CPU 1".into()),
        other => Err(format!("after the migration the CPUs pick {other:?}")),
    }
}

/// Twelve CPU-bound tasks of nice −3, 0, 3 for 20 s: each one's CPU time
/// against its promised share.
pub fn shares(kind: PolicyKind, slice_ns: Nanoseconds) -> Result<String, String> {
    let nices = [-3, -3, -3, -3, 0, 0, 0, 0, 3, 3, 3, 3];
    let duration = 20_000 * MS;
    let (ran, _) = run_hogs(kind, &nices, duration);
    let share = share_of(&kind);
    let weights: Vec<f64> = nices
        .iter()
        .map(|&nice| match share {
            Share::Equal { .. } => 1.0,
            _ => weight(nice),
        })
        .collect();
    let total: f64 = weights.iter().sum();
    let slices = (duration / slice_ns.max(1)) as f64;
    // The task furthest from its share, against what it is allowed.
    let mut worst = (0, 0.0f64, f64::MAX);
    for (task, &time) in ran.iter().enumerate() {
        let p = weights[task] / total;
        let error = (time as f64 / slice_ns as f64 - slices * p).abs();
        let allowed = match share {
            Share::Equal { within_slices } | Share::ByWeight { within_slices } => within_slices,
            Share::ByWeightRandom { sigmas } => sigmas * sqrt(slices * p * (1.0 - p)),
        };
        if error * worst.2 >= worst.1 * allowed {
            worst = (task, error, allowed);
        }
    }
    let level = |nice: i8| -> f64 {
        let time: u64 = (0..12).filter(|&t| nices[t] == nice).map(|t| ran[t]).sum();
        100.0 * time as f64 / 4.0 / duration as f64
    };
    let (task, error, allowed) = worst;
    let figures = format!(
        "12 tasks, nice -3/0/3 each {:.2}/{:.2}/{:.2} % of 20 s; worst: task {task} (nice {}) \
         {error:.2} slices from its share, {allowed:.2} allowed",
        level(-3),
        level(0),
        level(3),
        nices[task]
    );
    if error <= allowed {
        Ok(figures)
    } else {
        Err(figures)
    }
}

fn slice_of(kind: &PolicyKind) -> Nanoseconds {
    match kind {
        PolicyKind::RoundRobin { slice } => *slice,
        PolicyKind::Registered(_, context) => context.slice_ns,
        _ => 4 * MS,
    }
}

fn weight(nice: i8) -> f64 {
    f64::from(crate::weight::PRIO_TO_WEIGHT[(nice as i32 + 20) as usize])
}

/// √x by Newton's method (no `std` here).
fn sqrt(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let mut root = x.max(1.0);
    for _ in 0..100 {
        root = 0.5 * (root + x / root);
    }
    root
}

/// ln(1 + x) for −1 < x ≤ 0 by its series (x is a small probability here).
fn ln_1p(x: f64) -> f64 {
    let (mut term, mut sum) = (x, 0.0);
    for n in 1..200 {
        sum += term / n as f64;
        term *= -x;
    }
    sum
}
