//! Migration keeps a task's utilization and the run queues' sums consistent
//! (issue 4; linux-sched-facts.md §2.6): a 25 %-duty periodic task runs on
//! CPU 0 until its PELT signal is steady, then may only run on CPU 1 and moves
//! there at its next wake-up. Its util_avg just before and just after the move
//! agree, CPU 1's run queue takes it on, and CPU 0's loses it at once (removed
//! load), instead of decaying for tens of milliseconds.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fairway::task::scheduler::with_run_queue;
use fairway::task::{CpuMask, TaskId, TaskParams, set_affinity, sleep_until, spawn, task};
use fairway::{ExitCode, now_ns};
use fairway_sched::task::CpuId;

fairway::entry!(main);

const PERIOD_NS: u64 = 16_000_000;
const BUSY_NS: u64 = 4_000_000;
const MOVE_AT_NS: u64 = 1_500_000_000;
const END_NS: u64 = 1_800_000_000;
const SAMPLE_NS: u64 = 250_000;

static STOP: AtomicBool = AtomicBool::new(false);
static START: AtomicU64 = AtomicU64::new(0);

fn periodic(_: usize) {
    let mut next = START.load(Ordering::Relaxed);
    while !STOP.load(Ordering::Relaxed) {
        let busy_until = now_ns() + BUSY_NS;
        while now_ns() < busy_until {
            core::hint::spin_loop();
        }
        next += PERIOD_NS;
        sleep_until(next);
    }
}

fn signals(id: TaskId) -> (usize, u64) {
    let cpu = task(id).cpu();
    (
        cpu,
        with_run_queue(cpu, |rq| rq.queue.task_signals(id).util_avg),
    )
}

fn rq_util(cpu: usize) -> u64 {
    with_run_queue(cpu, |rq| rq.queue.signals().util_avg)
}

fn main() -> ExitCode {
    assert!(
        fairway::system().nr_online >= 3,
        "needs 3 CPUs (main runs on CPU 2)"
    );
    // Keep this sampling task off the CPUs under test (it moves at its first sleep).
    set_affinity(fairway::task::current(), CpuMask::only(CpuId(2))).expect("CPU 2 exists");
    START.store(now_ns(), Ordering::Relaxed);
    let start = START.load(Ordering::Relaxed);
    let id = spawn("periodic", periodic, 0, 0, TaskParams::pinned(0)).expect("spawn");
    let mut last_on_0 = None;
    let mut first_on_1 = None;
    let mut moved = false;
    let mut cpu0_after_50ms = None;
    let mut t = start + SAMPLE_NS;
    while t < start + END_NS {
        sleep_until(t);
        if !moved && t >= start + MOVE_AT_NS {
            set_affinity(id, CpuMask::only(CpuId(1))).expect("CPU 1 exists");
            moved = true;
        }
        let (cpu, util) = signals(id);
        match cpu {
            0 => last_on_0 = Some((t, util)),
            1 if first_on_1.is_none() => first_on_1 = Some((t, util, rq_util(1))),
            _ => {}
        }
        if let Some((t1, ..)) = first_on_1
            && cpu0_after_50ms.is_none()
            && t >= t1 + 50_000_000
        {
            cpu0_after_50ms = Some(rq_util(0));
        }
        t += SAMPLE_NS;
    }
    STOP.store(true, Ordering::Relaxed);
    let (t0, before) = last_on_0.expect("ran on CPU 0");
    let (t1, after, rq1) = first_on_1.expect("moved to CPU 1");
    let rq0_later = cpu0_after_50ms.expect("50 ms after the move");
    defmt::println!(
        "migration: util_avg {=u64} on CPU 0 at {=u64} us, {=u64} on CPU 1 at {=u64} us (CPU 1 run queue {=u64}); CPU 0 run queue 50 ms later {=u64}; migrations {=u64}",
        before,
        (t0 - start) / 1000,
        after,
        (t1 - start) / 1000,
        rq1,
        rq0_later,
        task(id).migrations.load(Ordering::Relaxed)
    );
    // Two samples are at most 2 x 250 us apart: util_avg moves by at most
    // 1024 * (1 - y^0.5) ~ 11 in that time (y^32 = 1/2, §2.1).
    assert!(
        before.abs_diff(after) <= 11,
        "the task keeps its utilization"
    );
    assert!((225..=288).contains(&before), "steady state before (§2.8)");
    assert!(rq1 + 11 >= after, "CPU 1's run queue carries the task");
    // Without the removal CPU 0 would still hold 256 * y^50 ~ 87 after 50 ms.
    assert!(
        rq0_later < 30,
        "CPU 0's run queue lost the task's utilization"
    );
    assert_eq!(task(id).migrations.load(Ordering::Relaxed), 1);
    ExitCode::Success
}
