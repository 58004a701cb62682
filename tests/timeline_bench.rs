//! Instructions per timeline operation on AArch64 (issue 3's budget (a)):
//! pick + dequeue + enqueue of the picked entity with a new key, for N = 8,
//! 64, 1024 and 10,000 queued entities, with the CFS tree (keyed by vruntime)
//! and the EEVDF tree (keyed by deadline, augmented with the subtree minimum
//! vruntime, picked with the eligibility search).
//!
//! The workload is the one of `sched/examples/timeline_bench.rs` (same keys,
//! same random sequence), so these figures compare with its x86_64 callgrind
//! figures and with `sched/examples/reference/rbtree_intrusive.c`
//! (`sched/examples/reference/aarch64/run.sh` counts it the same way). Run under
//! `--icount` on one CPU: the PMU cycle counter then counts instructions
//! exactly. Interrupts are masked around each measured loop and the cost of an
//! empty loop of the same length is subtracted, so a figure is the tree work
//! plus the workload's own bookkeeping (the new vruntime, the Σ vruntime of
//! the eligibility test).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use core::hint::black_box;

use fairway::ExitCode;
use fairway::arch::cpu::{irq_restore, irq_save};
use fairway::arch::pmu::cycles;
use fairway_sched::fair::timeline::{Augment, MinVruntime, Timeline, TimelineArena};

fairway::entry!(main);

/// Operations per measurement (instruction counts are exact, so few suffice).
const OPS: u64 = 20_000;

include!("../sched/examples/shared/timeline_workload.rs");

/// The loop alone: the same count, nothing in the body the compiler can drop.
#[inline(never)]
fn empty_loop(ops: u64) {
    for i in 0..ops {
        black_box(i);
    }
}

/// Instructions of `f`, with interrupts masked.
fn count(f: impl FnOnce()) -> u64 {
    let irq = irq_save();
    let start = cycles();
    f();
    let end = cycles();
    irq_restore(irq);
    end - start
}

fn main() -> ExitCode {
    let empty = count(|| empty_loop(black_box(OPS)));
    for tree in ["cfs", "eevdf"] {
        for n in [8, 64, 1024, 10_000] {
            let (total, leftmost) = if tree == "eevdf" {
                let mut bench = Bench::<MinVruntime>::new(n);
                let total = count(|| measured_loop_eevdf(black_box(&mut bench), black_box(OPS)));
                (total, bench.timeline.first())
            } else {
                let mut bench = Bench::<()>::new(n);
                let total = count(|| measured_loop_cfs(black_box(&mut bench), black_box(OPS)));
                (total, bench.timeline.first())
            };
            // Tenths of an instruction per operation.
            let tenths = (total - empty.min(total)) * 10 / OPS;
            defmt::println!(
                "timeline_bench: tree={=str} n={=usize} instructions_per_op={=u64}.{=u64} ops={=u64} leftmost={=u32}",
                tree,
                n,
                tenths / 10,
                tenths % 10,
                OPS,
                leftmost.unwrap_or(u32::MAX)
            );
        }
    }
    defmt::println!(
        "timeline_bench: empty loop {=u64} instructions for {=u64} iterations (subtracted)",
        empty,
        OPS
    );
    ExitCode::Success
}
