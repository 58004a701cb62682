//! Instructions per timeline operation: pick + dequeue + enqueue of the picked
//! entity with a new key, for N queued entities, with the CFS tree (keyed by
//! vruntime) and the EEVDF tree (keyed by deadline, augmented with the subtree
//! minimum vruntime, picked with the eligibility search).
//!
//! Reproduce (x86_64 host, figures are host instructions):
//!
//! ```text
//! cargo build --release -p fairway-sched --example timeline_bench --target x86_64-unknown-linux-gnu
//! for tree in cfs eevdf; do for n in 8 64 1024 10000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     --toggle-collect='*timeline_bench*measured_loop*' \
//!     target/x86_64-unknown-linux-gnu/release/examples/timeline_bench $tree $n 100000 2>&1 \
//!     | grep -E 'Collected'
//! done; done
//! ```
//!
//! The collected `Ir` (instructions) divided by the operation count (the last
//! argument) is the cost of one pick + dequeue + enqueue, loop overhead included.
//! Without valgrind the program prints ns per operation.
//!
//! `reference/rbtree_intrusive.c` runs the identical workload (same keys, same
//! final leftmost) on an intrusive pointer red-black tree in C with the same
//! algorithm, as the calibration point (on AArch64:
//! `reference/aarch64/run.sh`, figures in docs/tree.md):
//!
//! ```text
//! gcc -O2 -o /tmp/rbtree_intrusive sched/examples/reference/rbtree_intrusive.c
//! for tree in cfs eevdf; do for n in 8 64 1024 10000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cgc.out \
//!     --toggle-collect='measured_loop*' /tmp/rbtree_intrusive $tree $n 100000 2>&1 \
//!     | grep -E 'Collected'
//! done; done
//! ```
//!
//! Figures measured on the x86_64 host (Ir per operation, rustc 1.95 release
//! with LTO, gcc 12 -O2), N = 8 / 64 / 1024 / 10000:
//!
//! | tree                    | this crate            | C intrusive tree      | ratio     |
//! |-------------------------|-----------------------|-----------------------|-----------|
//! | CFS (vruntime key)      | 173 / 234 / 286 / 326 | 138 / 187 / 229 / 263 | 1.24–1.25 |
//! | EEVDF (deadline + min)  | 269 / 357 / 528 / 612 | 200 / 271 / 403 / 467 | 1.31–1.35 |
//!
//! The difference is the price of safe index-based nodes: every link is an
//! index into the arena, turned into an address with a shift and an add
//! (x86_64's addressing modes scale by at most 8, so the shift by 4 or 5 is
//! an instruction of its own), where C follows a pointer. On AArch64, the
//! budget's architecture, one shifted add does it, and the ratio is 0.93–0.97
//! for CFS and 1.06–1.10 for EEVDF (docs/tree.md).
//!
//! `cfs-class` / `eevdf-class` measure the whole class instead: one context
//! switch of CPU-bound tasks (tick, put_prev, pick, set_next, PELT included)
//! per operation, tasks of nice -5..5 in the root group: about 1950 (N = 8)
//! and 2220 (N = 10000) instructions for both picks (CFS 1950 / 2220, EEVDF
//! 1941 / 2221), two thirds of it PELT.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use std::hint::black_box;
use std::time::Instant;

use fairway_sched::class::{EnqueueFlags, SchedClass};
use fairway_sched::fair::timeline::{Augment, MinVruntime, Timeline, TimelineArena};
use fairway_sched::fair::{CfsTunables, EevdfTunables, FairRunQueue, PickPolicy};
use fairway_sched::task::{Policy, TaskId, TaskParams};

include!("shared/timeline_workload.rs");

/// The whole class, PELT included: one context switch of CPU-bound tasks
/// (tick, put_prev, pick, set_next) per operation, every tick rescheduling.
#[inline(never)]
fn measured_loop_class(fair: &mut FairRunQueue, ops: u64) {
    let mut now = 0;
    let mut curr = fair.pick_next_task(now).unwrap();
    fair.set_next_task(curr, now);
    for _ in 0..ops {
        now += 1_000_000;
        let _ = fair.task_tick(curr, now);
        fair.put_prev_task(curr, now);
        curr = fair.pick_next_task(now).unwrap();
        fair.set_next_task(curr, now);
    }
}

fn class_bench(pick: PickPolicy, n: usize, ops: u64) {
    let mut fair = FairRunQueue::new(pick, n, 1);
    for t in 0..n {
        let params = TaskParams {
            policy: Policy::Normal {
                nice: (t % 11) as i8 - 5,
            },
            ..TaskParams::default()
        };
        fair.task_new(TaskId(t as u16), &params, 0).unwrap();
        fair.enqueue_task(TaskId(t as u16), 0, EnqueueFlags::default());
    }
    let start = Instant::now();
    measured_loop_class(black_box(&mut fair), ops);
    println!(
        "class n={n} ops={ops}: {:.1} ns/op",
        start.elapsed().as_nanos() as f64 / ops as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tree = args.get(1).map_or("cfs", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let ops: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    match tree {
        "cfs-class" => return class_bench(PickPolicy::Cfs(CfsTunables::for_cpus(1)), n, ops),
        "eevdf-class" => {
            return class_bench(
                PickPolicy::Eevdf(EevdfTunables::for_cpus(1, 1_000_000)),
                n,
                ops,
            );
        }
        _ => {}
    }
    let start = Instant::now();
    let leftmost = match tree {
        "cfs" => {
            let mut bench = Bench::<()>::new(n);
            measured_loop_cfs(black_box(&mut bench), ops);
            bench.timeline.first()
        }
        "eevdf" => {
            let mut bench = Bench::<MinVruntime>::new(n);
            measured_loop_eevdf(black_box(&mut bench), ops);
            bench.timeline.first()
        }
        other => {
            eprintln!("unknown tree {other:?}: use cfs, eevdf, cfs-class or eevdf-class");
            std::process::exit(2);
        }
    };
    let elapsed = start.elapsed();
    println!(
        "{tree} n={n} ops={ops}: {:.1} ns/op (leftmost {leftmost:?})",
        elapsed.as_nanos() as f64 / ops as f64,
    );
}
