//! Preemption: two CPU-bound tasks that never yield share one CPU, both progress
//! and take turns (the tick, or the slice-end timer, ends each one's slice).
//! The turn count is checked against the round-robin slice (`sched=rr`); with the
//! fair classes only progress and alternation are checked.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use fairway::scheduling::{Completion, spawn};
use fairway::tasks::{TaskParams, task};
use fairway::{ExitCode, now_ns};

fairway::entry!(main);

const RUN_NS: u64 = 400_000_000;
const CPU: usize = 0;

static LAST_RUNNER: AtomicUsize = AtomicUsize::new(usize::MAX);
static TURNS: AtomicU64 = AtomicU64::new(0);
static DEADLINE: AtomicU64 = AtomicU64::new(0);
static DONE: Completion = Completion::new();

fn spinner(me: usize) {
    while now_ns() < DEADLINE.load(Ordering::Relaxed) {
        if LAST_RUNNER.swap(me, Ordering::Relaxed) != me {
            TURNS.fetch_add(1, Ordering::Relaxed);
        }
    }
    DONE.complete();
}

fn main() -> ExitCode {
    DEADLINE.store(now_ns() + RUN_NS, Ordering::Relaxed);
    let a = spawn("spin-a", spinner, 0, CPU, TaskParams::pinned(CPU)).expect("spawn");
    let b = spawn("spin-b", spinner, 1, CPU, TaskParams::pinned(CPU)).expect("spawn");
    DONE.wait_for(2);
    let runtime_a = task(a).sum_exec_runtime.load(Ordering::Relaxed);
    let runtime_b = task(b).sum_exec_runtime.load(Ordering::Relaxed);
    let turns = TURNS.load(Ordering::Relaxed);
    let system = fairway::system();
    // With hrtick, slices end on time whatever HZ is; without it, at the next tick.
    let sched = system.options.sched;
    let tick = sched.tick_ns();
    let slice = if sched.hrtick {
        sched.slice_ns()
    } else {
        sched.slice_ns().div_ceil(tick) * tick
    };
    defmt::println!(
        "preempt: runtime a {=u64} us, b {=u64} us, {=u64} turns in {=u64} ms (slice {=u64} us)",
        runtime_a / 1000,
        runtime_b / 1000,
        turns,
        RUN_NS / 1_000_000,
        slice / 1000
    );
    // Round-robin: each task runs about half the time, and they alternate about
    // once per slice (the main task also runs at the start).
    let total = runtime_a + runtime_b;
    assert!(
        runtime_a * 100 >= total * 40 && runtime_b * 100 >= total * 40,
        "both progress"
    );
    assert!(
        turns >= RUN_NS / slice / 2,
        "they take turns every slice or so"
    );
    ExitCode::Success
}
