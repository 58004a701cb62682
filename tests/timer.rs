//! Timer accuracy: tasks on every CPU sleep until absolute deadlines; no wake-up
//! is early and the lateness stays under a bound (run in icount mode, where time
//! is instructions and the figures are exact). Also checks the tick rate.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use fairway::platform::percpu;
use fairway::scheduling::{Completion, sleep_until, spawn};
use fairway::tasks::TaskParams;
use fairway::{ExitCode, now_ns, system};

fairway::entry!(main);

const SLEEPS: u64 = 200;
/// Wake-up lateness allowed: interrupt entry, timer queue, wake-up, switch.
/// Under icount (1 instruction = 1 ns) these cost a few thousand instructions.
const LATENESS_BOUND_NS: u64 = 50_000;

static DONE: Completion = Completion::new();
static MAX_LATENESS: AtomicU64 = AtomicU64::new(0);
static TOTAL_LATENESS: AtomicU64 = AtomicU64::new(0);
static EARLY: AtomicU64 = AtomicU64::new(0);

fn sleeper(seed: usize) {
    let mut state = seed as u64 * 0x9e37_79b9_7f4a_7c15 + 1;
    for _ in 0..SLEEPS {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let duration = 50_000 + state % 2_000_000;
        let deadline = now_ns() + duration;
        sleep_until(deadline);
        let woke = now_ns();
        if woke < deadline {
            EARLY.fetch_add(1, Ordering::Relaxed);
        }
        let lateness = woke.saturating_sub(deadline);
        MAX_LATENESS.fetch_max(lateness, Ordering::Relaxed);
        TOTAL_LATENESS.fetch_add(lateness, Ordering::Relaxed);
    }
    DONE.complete();
}

fn main() -> ExitCode {
    let cpus = system().nr_online;
    let ticks_before: u64 = (0..cpus)
        .map(|c| percpu::of(c).ticks.load(Ordering::Relaxed))
        .sum();
    let start = now_ns();
    for cpu in 0..cpus {
        for k in 0..2 {
            spawn(
                "sleeper",
                sleeper,
                cpu * 2 + k,
                cpu,
                TaskParams::pinned(cpu),
            )
            .expect("spawn");
        }
    }
    DONE.wait_for(2 * cpus as u64);
    let elapsed = now_ns() - start;
    let ticks: u64 = (0..cpus)
        .map(|c| percpu::of(c).ticks.load(Ordering::Relaxed))
        .sum::<u64>()
        - ticks_before;
    let wakeups = SLEEPS * 2 * cpus as u64;
    let max = MAX_LATENESS.load(Ordering::Relaxed);
    defmt::println!(
        "timer: {=u64} sleeps on {=usize} CPUs: early {=u64}, lateness mean {=u64} ns, max {=u64} ns (bound {=u64} ns)",
        wakeups,
        cpus,
        EARLY.load(Ordering::Relaxed),
        TOTAL_LATENESS.load(Ordering::Relaxed) / wakeups,
        max,
        LATENESS_BOUND_NS
    );
    let expected_ticks = elapsed * system().options.sched.hz * cpus as u64 / 1_000_000_000;
    defmt::println!(
        "timer: {=u64} ticks in {=u64} us on {=usize} CPUs (expected {=u64} at HZ={=u64})",
        ticks,
        elapsed / 1000,
        cpus,
        expected_ticks,
        system().options.sched.hz
    );
    assert_eq!(EARLY.load(Ordering::Relaxed), 0, "no sleep ends early");
    assert!(max <= LATENESS_BOUND_NS, "wake-up lateness bounded");
    assert!(
        ticks + 2 * cpus as u64 >= expected_ticks && ticks <= expected_ticks + 2 * cpus as u64,
        "the tick runs at HZ on every CPU"
    );
    ExitCode::Success
}
