//! Load: 1,000 tasks on every CPU for 5 s of (virtual) time, each alternating
//! a short busy stretch and a sleep of pseudo-random length, with wake-up
//! placement and load balancing on. Every task must finish its work, every
//! sleep must end (no lost wake-up: each task counts its sleeps and its
//! returns from them), and nothing may deadlock (the runner's timeout would
//! fire). Run in icount mode.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use fairway::config::MAX_TASKS;
use fairway::scheduling::{Completion, sleep_until, spawn};
use fairway::tasks::TaskParams;
use fairway::{ExitCode, now_ns, system};

fairway::entry!(main);

const TASKS: usize = 1000;
const RUN_NS: u64 = 5_000_000_000;
const BUSY_NS: u64 = 20_000;

static START: AtomicU64 = AtomicU64::new(0);
static DONE: Completion = Completion::new();
static SLEEPS: [AtomicU64; TASKS] = [const { AtomicU64::new(0) }; TASKS];
static WAKES: [AtomicU64; TASKS] = [const { AtomicU64::new(0) }; TASKS];
static EARLY_WAKES: AtomicU64 = AtomicU64::new(0);

fn worker(index: usize) {
    let end = START.load(Ordering::Relaxed) + RUN_NS;
    let mut state = 0x2545_f491_4f6c_dd1d_u64 ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9);
    loop {
        let busy_until = now_ns() + BUSY_NS;
        // The workloads' busy loop (YIELD and NOPs, docs/icount.md).
        let mut busy = fairway::workload::BusyLoop::new();
        while now_ns() < busy_until {
            busy.pause();
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let wake_at = now_ns() + 20_000_000 + state % 60_000_000;
        if wake_at >= end {
            break;
        }
        SLEEPS[index].fetch_add(1, Ordering::Relaxed);
        sleep_until(wake_at);
        WAKES[index].fetch_add(1, Ordering::Relaxed);
        if now_ns() < wake_at {
            EARLY_WAKES.fetch_add(1, Ordering::Relaxed);
        }
    }
    DONE.complete();
}

fn main() -> ExitCode {
    let cpus = system().nr_online;
    const { assert!(TASKS < MAX_TASKS) };
    START.store(now_ns(), Ordering::Relaxed);
    for index in 0..TASKS {
        spawn("worker", worker, index, index % cpus, TaskParams::default()).expect("spawn");
    }
    // Wait for all, up to 3 s past the end; a lost wake-up shows as a task
    // that never finishes.
    let give_up = START.load(Ordering::Relaxed) + RUN_NS + 3_000_000_000;
    while DONE.count() < TASKS as u64 && now_ns() < give_up {
        sleep_until(now_ns() + 100_000_000);
    }
    let finished = DONE.count();
    let sleeps: u64 = SLEEPS.iter().map(|s| s.load(Ordering::Relaxed)).sum();
    let wakes: u64 = WAKES.iter().map(|w| w.load(Ordering::Relaxed)).sum();
    let migrations: u64 = {
        let mut total = 0;
        fairway::tasks::for_each_task(|_, slot| total += slot.migrations.load(Ordering::Relaxed));
        total
    };
    defmt::println!(
        "load: {=u64}/{=usize} tasks finished on {=usize} CPUs in {=u64} ms; {=u64} sleeps, {=u64} wake-ups seen, {=u64} early; {=u64} migrations",
        finished,
        TASKS,
        cpus,
        (now_ns() - START.load(Ordering::Relaxed)) / 1_000_000,
        sleeps,
        wakes,
        EARLY_WAKES.load(Ordering::Relaxed),
        migrations
    );
    for (index, (s, w)) in SLEEPS.iter().zip(WAKES.iter()).enumerate() {
        let (s, w) = (s.load(Ordering::Relaxed), w.load(Ordering::Relaxed));
        if s != w {
            defmt::println!(
                "load: worker {=usize} slept {=u64} times, woke {=u64}",
                index,
                s,
                w
            );
        }
    }
    assert_eq!(finished, TASKS as u64, "every task finished its work");
    assert_eq!(sleeps, wakes, "no lost wake-up");
    assert_eq!(
        EARLY_WAKES.load(Ordering::Relaxed),
        0,
        "no sleep ended early"
    );
    fairway::workload::summary::print_runtime_report(now_ns() - START.load(Ordering::Relaxed));
    ExitCode::Success
}
