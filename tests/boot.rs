//! Boot: every CPU of the device tree comes online, runs a task, and answers a
//! call-function IPI; prints the topology it found.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering};

use fairway::arch::cpu::this_cpu;
use fairway::platform::{percpu, smp};
use fairway::scheduling::{Completion, spawn};
use fairway::tasks::TaskParams;
use fairway::{ExitCode, system};

fairway::entry!(main);

static RAN_ON: [AtomicUsize; 8] = [const { AtomicUsize::new(usize::MAX) }; 8];
static IPI_SEEN: [AtomicUsize; 8] = [const { AtomicUsize::new(usize::MAX) }; 8];
static DONE: Completion = Completion::new();

fn record(cpu: usize) {
    RAN_ON[cpu].store(this_cpu(), Ordering::SeqCst);
    DONE.complete();
}

fn answer_ipi(cpu: usize) {
    IPI_SEEN[cpu].store(this_cpu(), Ordering::SeqCst);
}

fn main() -> ExitCode {
    let info = system();
    defmt::println!(
        "boot: {=usize}/{=usize} CPUs online, GICv{=u8}, entered at EL{=u8}, timer {=u64} Hz",
        info.nr_online,
        info.nr_cpus,
        info.gic_version,
        info.entry_el,
        info.timer_frequency
    );
    assert_eq!(info.nr_online, info.nr_cpus, "every CPU comes online");
    for cpu in 0..info.nr_cpus {
        let slot = percpu::of(cpu);
        defmt::println!(
            "boot: cpu{=usize} mpidr={=u64:#x} cluster={=u16} capacity={=u32}",
            cpu,
            slot.mpidr.load(Ordering::Relaxed),
            slot.cluster.load(Ordering::Relaxed),
            slot.capacity.load(Ordering::Relaxed)
        );
        spawn("record", record, cpu, cpu, TaskParams::pinned(cpu)).expect("spawn");
    }
    DONE.wait_for(info.nr_cpus as u64);
    for (cpu, ran_on) in RAN_ON.iter().enumerate().take(info.nr_cpus) {
        assert_eq!(ran_on.load(Ordering::SeqCst), cpu, "task pinned to its CPU");
        smp::call_function(cpu, answer_ipi, cpu).expect("mailbox has room");
    }
    // A hang guard, not a performance bound: without icount the guest clock
    // follows the host's, and a loaded host can stall a vCPU thread for tens
    // of milliseconds (this was 100 ms and failed once that way), so a lost
    // IPI is reported after 5 s of guest time instead.
    let deadline = fairway::now_ns() + 5_000_000_000;
    for (cpu, seen) in IPI_SEEN.iter().enumerate().take(info.nr_cpus) {
        while seen.load(Ordering::SeqCst) != cpu {
            assert!(fairway::now_ns() < deadline, "call-function IPI answered");
            fairway::scheduling::yield_now();
        }
    }
    defmt::println!("boot: every CPU ran a task and answered an IPI");
    ExitCode::Success
}
