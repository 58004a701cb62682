//! Pipes across CPUs: 10,000 round trips between a task on CPU 0 and one on
//! CPU 1 (each wake-up of the other side is a remote wake-up through the IPI),
//! every value checked. Reports, in instructions under icount, the cost of a
//! round trip and of a context switch (two tasks on one CPU yielding in turn).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use fairway::arch::pmu::cycles;
use fairway::scheduling::{Completion, Pipe, spawn, yield_now};
use fairway::tasks::TaskParams;
use fairway::{ExitCode, system};
use spin::Once;

fairway::entry!(main);

const ROUND_TRIPS: u64 = 10_000;
const YIELDS: u64 = 10_000;

static PIPES: Once<(Pipe, Pipe)> = Once::new();
static DONE: Completion = Completion::new();
static ROUND_TRIP_CYCLES: AtomicU64 = AtomicU64::new(0);
static YIELD_CYCLES: AtomicU64 = AtomicU64::new(0);

fn ping(_: usize) {
    let (there, back) = PIPES.get().expect("pipes");
    let start = cycles();
    for value in 0..ROUND_TRIPS {
        there.write(&value.to_le_bytes());
        let mut reply = [0u8; 8];
        back.read_exact(&mut reply);
        assert_eq!(u64::from_le_bytes(reply), !value, "reply to {}", value);
    }
    ROUND_TRIP_CYCLES.store(cycles() - start, Ordering::Relaxed);
    DONE.complete();
}

fn pong(_: usize) {
    let (there, back) = PIPES.get().expect("pipes");
    for expected in 0..ROUND_TRIPS {
        let mut message = [0u8; 8];
        there.read_exact(&mut message);
        let value = u64::from_le_bytes(message);
        assert_eq!(value, expected, "message order");
        back.write(&(!value).to_le_bytes());
    }
    DONE.complete();
}

fn yielder(first: usize) {
    let start = cycles();
    for _ in 0..YIELDS {
        yield_now();
    }
    if first == 1 {
        YIELD_CYCLES.store(cycles() - start, Ordering::Relaxed);
    }
    DONE.complete();
}

fn main() -> ExitCode {
    let cpus = system().nr_online;
    assert!(cpus >= 2, "the pipe test needs two CPUs");
    PIPES.call_once(|| (Pipe::new(), Pipe::new()));
    spawn("ping", ping, 0, 0, TaskParams::pinned(0)).expect("spawn");
    spawn("pong", pong, 0, 1, TaskParams::pinned(1)).expect("spawn");
    DONE.wait_for(2);
    let per_round_trip = ROUND_TRIP_CYCLES.load(Ordering::Relaxed) / ROUND_TRIPS;
    defmt::println!(
        "pipe: {=u64} round trips CPU0<->CPU1, all values checked; {=u64} instructions (cycles) per round trip",
        ROUND_TRIPS,
        per_round_trip
    );
    let cpu0 = fairway::platform::percpu::of(0);

    let before = (
        cpu0.interrupts.load(Ordering::Relaxed),
        cpu0.idle_wakeups.load(Ordering::Relaxed),
    );
    // Context switches: two tasks alone on CPU 1, each yield switches to the other.
    spawn("yield-a", yielder, 1, 1, TaskParams::pinned(1)).expect("spawn");
    spawn("yield-b", yielder, 0, 1, TaskParams::pinned(1)).expect("spawn");
    DONE.wait_for(4);
    // Each of the 2 * YIELDS yields is one switch; the first task's span covers
    // its own and the other's yields.
    defmt::println!(
        "pipe: meanwhile CPU 0 (idle) took {=u64} interrupts and woke from WFI {=u64} times",
        cpu0.interrupts.load(Ordering::Relaxed) - before.0,
        cpu0.idle_wakeups.load(Ordering::Relaxed) - before.1
    );
    let per_switch = YIELD_CYCLES.load(Ordering::Relaxed) / (2 * YIELDS);
    defmt::println!(
        "pipe: context switch (yield to the other task on one CPU): {=u64} instructions (cycles)",
        per_switch
    );
    ExitCode::Success
}
