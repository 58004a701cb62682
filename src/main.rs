//! The default Fairway run: two CPU-bound tasks on every CPU and a pipe
//! ping-pong between each pair of neighbouring CPUs, then a per-CPU and per-task
//! runtime report.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use fairway::arch::cpu::this_cpu;
use fairway::scheduling::{Completion, Pipe, spawn};
use fairway::tasks::{TaskParams, current_runtime_ns};
use fairway::workload::{BusyLoop, work_rate};
use fairway::{ExitCode, now_ns, system};
use spin::Once;

fairway::entry!(main);

const HOG_RUNTIME_NS: u64 = 100_000_000;
const ROUND_TRIPS: u64 = 1_000;
const MAX_PAIRS: usize = fairway::config::MAX_CPUS;

static DEADLINE: AtomicU64 = AtomicU64::new(0);
static FINISHED: Completion = Completion::new();
/// Tasks stay alive (asleep) until the report is printed, so it can show them.
static REPORTED: Completion = Completion::new();

fn finish() {
    FINISHED.complete();
    REPORTED.wait_for(1);
}
/// The hogs' work done on each CPU, in ns at capacity 1024 and the highest
/// frequency (rt-app's unit, `fairway::workload::work_rate`): counted where it
/// was done, as a hog may run on any CPU (wake-up placement and balancing).
static CPU_WORK_NS: [AtomicU64; MAX_PAIRS] = [const { AtomicU64::new(0) }; MAX_PAIRS];

struct PingPong {
    to_pong: Pipe,
    to_ping: Pipe,
}

static PAIRS: [Once<PingPong>; MAX_PAIRS] = [const { Once::new() }; MAX_PAIRS];

/// Spins until the deadline, counting the work its CPU time was worth on the
/// CPU it ran on; the sum is handed to that CPU's counter when it moves.
fn hog(_index: usize) {
    let deadline = DEADLINE.load(Ordering::Relaxed);
    let mut cpu = this_cpu();
    let mut work: u128 = 0;
    let mut last = current_runtime_ns();
    let mut busy = BusyLoop::new();
    while now_ns() < deadline {
        busy.pause();
        let runtime = current_runtime_ns();
        let here = this_cpu();
        if here != cpu {
            CPU_WORK_NS[cpu].fetch_add((work >> 20) as u64, Ordering::Relaxed);
            (cpu, work) = (here, 0);
        }
        work += u128::from(runtime - last) * u128::from(work_rate(here));
        last = runtime;
    }
    CPU_WORK_NS[cpu].fetch_add((work >> 20) as u64, Ordering::Relaxed);
    finish();
}

fn ping(pair: usize) {
    let pipes = PAIRS[pair].get().expect("pair set up before its tasks");
    for value in 0..ROUND_TRIPS {
        pipes.to_pong.write(&value.to_le_bytes());
        let mut reply = [0u8; 8];
        pipes.to_ping.read_exact(&mut reply);
        assert_eq!(u64::from_le_bytes(reply), value + 1, "pong's reply");
    }
    finish();
}

fn pong(pair: usize) {
    let pipes = PAIRS[pair].get().expect("pair set up before its tasks");
    for expected in 0..ROUND_TRIPS {
        let mut message = [0u8; 8];
        pipes.to_pong.read_exact(&mut message);
        let value = u64::from_le_bytes(message);
        assert_eq!(value, expected, "ping's message");
        pipes.to_ping.write(&(value + 1).to_le_bytes());
    }
    finish();
}

fn main() -> ExitCode {
    use fairway_sched::boot_options::Workload;
    match fairway::boot_options().workload {
        Workload::Demo => demo(),
        Workload::RtApp(options) => fairway::workload::rtapp::run_from_boot_options(&options),
        Workload::SchedPipe(options) => fairway::workload::sched_pipe::run(&options),
        Workload::Hackbench(options) => fairway::workload::hackbench::run(&options),
    }
}

fn demo() -> ExitCode {
    let cpus = system().nr_online;
    let start = now_ns();
    DEADLINE.store(start + HOG_RUNTIME_NS, Ordering::Relaxed);
    let mut tasks = 0;
    for cpu in 0..cpus {
        for k in 0..2 {
            let mut name: heapless::String<16> = heapless::String::new();
            let _ = core::fmt::write(&mut name, format_args!("hog{cpu}.{k}"));
            spawn(&name, hog, 2 * cpu + k, cpu, TaskParams::default()).expect("spawn hog");
            tasks += 1;
        }
    }
    for (pair, slot) in PAIRS.iter().enumerate().take(cpus) {
        slot.call_once(|| PingPong {
            to_pong: Pipe::new(),
            to_ping: Pipe::new(),
        });
        let other = (pair + 1) % cpus;
        spawn("ping", ping, pair, pair, TaskParams::pinned(pair)).expect("spawn ping");
        spawn("pong", pong, pair, other, TaskParams::pinned(other)).expect("spawn pong");
        tasks += 2;
    }
    FINISHED.wait_for(tasks);
    let elapsed = now_ns() - start;
    defmt::println!(
        "demo: {=usize} CPUs, {=u64} tasks done, {=u64} pipe round trips per pair, checked",
        cpus,
        tasks,
        ROUND_TRIPS
    );
    // The hogs' work: on a board with capacities and frequencies, a
    // LITTLE CPU does less in the same time (docs/boards.md).
    let work_us = |cpu: usize| CPU_WORK_NS[cpu].load(Ordering::Relaxed) / 1000;
    let work: u64 = (0..cpus).map(work_us).sum();
    defmt::println!(
        "demo: the hogs did {=u64} us of work (at capacity 1024 and fmax), on the CPUs where \
         they ran:",
        work
    );
    for cpu in 0..cpus {
        defmt::println!("demo:   cpu {=usize}: {=u64} us", cpu, work_us(cpu));
    }
    fairway::workload::summary::print_runtime_report(elapsed);
    REPORTED.complete();
    ExitCode::Success
}
