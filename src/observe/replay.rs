//! The record of every call into each CPU's scheduler driver
//! (`fairway_sched::cpu_core`), from boot, for `cargo xtask replay`: the host
//! feeds the same inputs to the simulator's cores and checks every decision
//! (docs/core-driver.md, "Replay").
//!
//! `record_core=N` on the command line (rt-app runs) gives each CPU room for N
//! records, allocated when its run queue is built; the records are printed at
//! the end of the run as `core: ...` lines.
//!
//! With bandwidth control (`cfs_bandwidth=1`, a scenario with a `cpu.max`),
//! the record also holds the attach of each core to the pools, each limit
//! set, each grant of the pools' timers, and every answer a pool gave a
//! core (`Input::PoolAnswer`, before the record of the call it was given
//! in): the pools are shared by the CPUs, so the replay takes their answers
//! from the record instead of the CPUs' order. `cfs_bandwidth=` on the
//! `core: config` line tells the replay to build its run queues with
//! bandwidth control, as these were.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use alloc::vec::Vec;

use fairway_sched::boot_options::SchedConfig;
use fairway_sched::cpu_core::record::Record;

use crate::config::{MAX_GROUPS, TASK_SLOTS};
use crate::platform::percpu;

/// Records per CPU (0: off); set once at boot, before the run queues exist.
static CAPACITY: AtomicUsize = AtomicUsize::new(0);
/// The order of records across CPUs.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Asks for `records` records per CPU (boot core, before `init_cpu`).
pub fn set_capacity(records: usize) {
    CAPACITY.store(records, Ordering::Relaxed);
}

/// Records per CPU.
pub fn capacity() -> usize {
    CAPACITY.load(Ordering::Relaxed)
}

/// The next record's number (taken under the recording CPU's run-queue lock,
/// so a task's move out of one run queue is numbered before its move in).
pub fn next_sequence() -> u64 {
    SEQUENCE.fetch_add(1, Ordering::Relaxed)
}

/// The number the next record will take (the scheduling floor reads it as
/// it takes the records, to cut them; see [`print`]).
pub fn sequence() -> u64 {
    SEQUENCE.load(Ordering::Relaxed)
}

/// Prints `settings`, the settings the cores were built with, and every
/// CPU's records, `taken` (each CPU's records and how many it dropped), cut
/// at `cut`.
///
/// The caller (the scheduling floor) stops every CPU's recording before
/// anything is printed, and cuts the record at the sequence number read
/// under CPU 0's lock as it stops: CPU 0 records nothing numbered after it,
/// while the others record on until their turn, so a record of theirs past
/// the cut may be the second half of a move whose first half CPU 0 no longer
/// recorded (a task's `MigrateIn` after its `MigrateOut`). Every record
/// numbered before the cut exists on every CPU: the record printed is a
/// consistent prefix of the run.
pub fn print(settings: &SchedConfig, taken: &[(Vec<Record>, u64)], cut: u64) {
    let nr_cpus = taken.len();
    defmt::println!(
        "core: config sched={=str} hz={=u64} hrtick={=bool} slice_us={=u64} uclamp={=bool} cfs_bandwidth={=bool} tasks={=usize} groups={=usize} cpus={=usize}",
        settings.policy.name(),
        settings.hz,
        settings.hrtick,
        settings.slice_us,
        settings.uclamp == Some(true),
        settings.cfs_bandwidth,
        TASK_SLOTS,
        MAX_GROUPS,
        nr_cpus
    );
    for (cpu, (records, dropped)) in taken.iter().enumerate() {
        let capacity = percpu::of(cpu).capacity.load(Ordering::Relaxed);
        let kept = records.iter().filter(|r| r.sequence < cut).count();
        defmt::println!(
            "core: cpu={=usize} capacity={=u32} records={=usize} dropped={=u64} past_cut={=usize}",
            cpu,
            capacity,
            kept,
            *dropped,
            records.len() - kept
        );
        for record in records.iter().filter(|r| r.sequence < cut) {
            print_record(record);
        }
    }
}

fn print_record(record: &Record) {
    let [a, b, c, d, e, f, g, h, i, j] = record.encode();
    defmt::println!(
        "core: record {=u64} {=u64} {=u64} {=u64} {=u64} {=u64} {=u64} {=u64} {=u64} {=u64}",
        a,
        b,
        c,
        d,
        e,
        f,
        g,
        h,
        i,
        j
    );
}
