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
//! `reference/rbtree_reference.c` runs the identical workload (same keys, same
//! final leftmost) on a textbook intrusive pointer-based red-black tree in C
//! with a cached leftmost, as the calibration point:
//!
//! ```text
//! gcc -O2 -o /tmp/rbtree_reference sched/examples/reference/rbtree_reference.c
//! for tree in cfs eevdf; do for n in 8 64 1024 10000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cgc.out \
//!     --toggle-collect='measured_loop*' /tmp/rbtree_reference $tree $n 100000 2>&1 \
//!     | grep -E 'Collected'
//! done; done
//! ```
//!
//! Figures measured on the x86_64 host (Ir per operation, rustc 1.95 release
//! with LTO, gcc -O2), N = 8 / 64 / 1024 / 10000:
//!
//! | tree                    | this crate            | C pointer tree        | ratio     |
//! |-------------------------|-----------------------|-----------------------|-----------|
//! | CFS (vruntime key)      | 274 / 336 / 391 / 434 | 179 / 220 / 258 / 288 | 1.51–1.53 |
//! | EEVDF (deadline + min)  | 370 / 470 / 711 / 837 | 254 / 317 / 450 / 523 | 1.46–1.60 |
//!
//! The difference is the price of safe index-based nodes: every link is a
//! bounds-checked index into the arena (compare + branch, and an index-to-
//! address multiply) where C follows a pointer.

use std::hint::black_box;
use std::time::Instant;

use fairway_sched::fair::timeline::{Timeline, TimelineNodes};

/// Deterministic xorshift so that runs are reproducible.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

struct Bench {
    nodes: TimelineNodes,
    timeline: Timeline,
    vruntime: Vec<u64>,
    slice: Vec<u64>,
    /// Σ vruntime (all weights equal), for the eligibility test V·N ≥ v·N.
    sum: u128,
    count: u128,
}

impl Bench {
    fn new(n: usize, augmented: bool) -> Bench {
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let mut bench = Bench {
            nodes: TimelineNodes::new(n, augmented),
            timeline: Timeline::default(),
            vruntime: vec![0; n],
            slice: vec![0; n],
            sum: 0,
            count: n as u128,
        };
        for id in 0..n {
            let v = next_random(&mut state) % 3_000_000;
            let slice = 700_000 + next_random(&mut state) % 2_000_000;
            bench.vruntime[id] = v;
            bench.slice[id] = slice;
            bench.sum += u128::from(v);
            let key = if augmented { v + slice } else { v };
            bench.nodes.insert(&mut bench.timeline, id as u32, key, v);
        }
        bench
    }
}

/// CFS: the leftmost runs one slice and goes back with its new vruntime.
#[inline(never)]
fn measured_loop_cfs(bench: &mut Bench, ops: u64) {
    for _ in 0..ops {
        let id = bench.timeline.first().unwrap();
        bench.nodes.remove(&mut bench.timeline, id);
        let v = bench.vruntime[id as usize] + bench.slice[id as usize];
        bench.vruntime[id as usize] = v;
        bench.nodes.insert(&mut bench.timeline, id, v, v);
    }
}

/// EEVDF: the earliest-deadline eligible entity runs its slice, its deadline
/// moves one slice on.
#[inline(never)]
fn measured_loop_eevdf(bench: &mut Bench, ops: u64) {
    for _ in 0..ops {
        let (sum, count) = (bench.sum, bench.count);
        let id = bench
            .nodes
            .first_eligible(&bench.timeline, |v| u128::from(v) * count <= sum)
            .unwrap();
        bench.nodes.remove(&mut bench.timeline, id);
        let slice = bench.slice[id as usize];
        let v = bench.vruntime[id as usize] + slice;
        bench.vruntime[id as usize] = v;
        bench.sum += u128::from(slice);
        bench.nodes.insert(&mut bench.timeline, id, v + slice, v);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tree = args.get(1).map_or("cfs", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let ops: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let augmented = match tree {
        "cfs" => false,
        "eevdf" => true,
        other => {
            eprintln!("unknown tree {other:?}: use cfs or eevdf");
            std::process::exit(2);
        }
    };
    let mut bench = Bench::new(n, augmented);
    let start = Instant::now();
    if augmented {
        measured_loop_eevdf(black_box(&mut bench), ops);
    } else {
        measured_loop_cfs(black_box(&mut bench), ops);
    }
    let elapsed = start.elapsed();
    println!(
        "{tree} n={n} ops={ops}: {:.1} ns/op (leftmost {:?})",
        elapsed.as_nanos() as f64 / ops as f64,
        bench.timeline.first()
    );
}
