//! Migration keeps a task's utilization and the run queues' sums consistent
//! (issue 4; `docs/linux-sched-reference.md` §2.6): a 25 %-duty periodic task runs on
//! CPU 0 until its PELT signal is steady, then may only run on CPU 1 and moves
//! there at its next wake-up. Its util_avg just after the move is the one just
//! before it, less at most the decay of its sleep and plus at most its running
//! since (analytic bounds, §2.1), CPU 1's run queue takes it on, and CPU 0's
//! loses it at once (removed load), instead of decaying for tens of
//! milliseconds.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fairway::scheduling::{sleep_until, spawn, with_run_queue};
use fairway::tasks::{CpuMask, TaskId, TaskParams, set_affinity, task};
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
/// When the periodic task last finished its busy phase.
static BUSY_END: AtomicU64 = AtomicU64::new(0);

fn periodic(_: usize) {
    let mut next = START.load(Ordering::Relaxed);
    while !STOP.load(Ordering::Relaxed) {
        let busy_until = now_ns() + BUSY_NS;
        // The workloads' busy loop: its YIELD every few µs lets QEMU's
        // round-robin run the sampling CPU (a spin without it takes the whole
        // time slice, docs/icount.md), and its NOPs keep QEMU's cost low.
        let mut busy = fairway::workload::BusyLoop::new();
        while now_ns() < busy_until {
            busy.pause();
        }
        BUSY_END.store(now_ns(), Ordering::Relaxed);
        next += PERIOD_NS;
        sleep_until(next);
    }
}

/// The task's CPU and util_avg, and when they were read.
fn signals(id: TaskId) -> (usize, u64, u64) {
    let cpu = task(id).cpu();
    let util = with_run_queue(cpu, |rq| rq.queue().task_signals(id).util_avg);
    (cpu, util, now_ns())
}

/// The most util_avg can gain in `gap_ns` (§2.1): running from 0 it gains
/// 1024 (1 - y^p) with p = gap / 1024 us and y^32 = 1/2, which is below
/// 1024 p ln 2 / 32 = gap_ns ln 2 / 32 000; plus one for integer rounding.
fn max_util_gain(gap_ns: u64) -> u64 {
    (gap_ns * 693_147).div_ceil(32_000_000_000) + 1
}

/// The most a util_avg of `util` can lose by decaying for `gap_ns` (§2.1):
/// util (1 - y^p) < util p ln 2 / 32; plus one for integer rounding.
fn max_util_loss(util: u64, gap_ns: u64) -> u64 {
    (util * gap_ns * 693_147).div_ceil(32_768_000 * 1_000_000) + 1
}

fn rq_util(cpu: usize) -> u64 {
    with_run_queue(cpu, |rq| rq.queue().signals().util_avg)
}

fn main() -> ExitCode {
    assert!(
        fairway::system().nr_online >= 3,
        "needs 3 CPUs (main runs on CPU 2)"
    );
    // Keep this sampling task off the CPUs under test (it moves at its first sleep).
    set_affinity(fairway::tasks::current(), CpuMask::only(CpuId(2))).expect("CPU 2 exists");
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
        let (cpu, util, read_at) = signals(id);
        match cpu {
            0 => last_on_0 = Some((t, util, read_at, BUSY_END.load(Ordering::Relaxed))),
            1 if first_on_1.is_none() => first_on_1 = Some((t, util, rq_util(1), read_at)),
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
    let (t0, before, read0, busy_end) = last_on_0.expect("ran on CPU 0");
    let (t1, after, rq1, read1) = first_on_1.expect("moved to CPU 1");
    // `before` is the task's util_avg as of its last update, when it went to
    // sleep at `busy_end`; on the move it is first decayed for (part of) that
    // sleep (sync_entity_load_avg, §2.6), then may gain while running on CPU 1.
    let gain = max_util_gain(read1 - read0);
    let loss = max_util_loss(before, read1 - busy_end);
    let rq0_later = cpu0_after_50ms.expect("50 ms after the move");
    defmt::println!(
        "migration: util_avg {=u64} on CPU 0 at {=u64} us (read at {=u64} us, asleep since {=u64} us), {=u64} on CPU 1 at {=u64} us (read at {=u64} us; CPU 1 run queue {=u64}); allowed {=u64}..={=u64}; CPU 0 run queue 50 ms later {=u64}; migrations {=u64}",
        before,
        (t0 - start) / 1000,
        (read0 - start) / 1000,
        (busy_end - start) / 1000,
        after,
        (t1 - start) / 1000,
        (read1 - start) / 1000,
        rq1,
        before.saturating_sub(loss),
        before + gain,
        rq0_later,
        task(id).migrations.load(Ordering::Relaxed)
    );
    // The move neither resets nor inflates the signal: it stays within what
    // decay and running allow in the time that really passed.
    assert!(
        (before.saturating_sub(loss)..=before + gain).contains(&after),
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
