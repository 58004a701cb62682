//! Instructions per full `enqueue_task` + `dequeue_task` through [`RunQueue`]
//! (the class stack: uclamp accounting, then the fair class with PELT), at
//! group depth 0 to 3, for N queued tasks, with the CFS and the EEVDF pick
//! (issue 3, benchmark (b)).
//!
//! The workload: N + 1 nice -5..5 tasks, all in the deepest group of a chain
//! `root ⊃ g1 ⊃ g2 ⊃ g3` (depth 0: the root), one of them running, with clamp
//! requests spread over the uclamp buckets. One operation is: 25 µs later the
//! sleeping task wakes (`enqueue_task`, wake-up), 25 µs later another queued,
//! not running task goes to sleep (`dequeue_task`, sleep), so N stay queued and
//! the clock moves as with real wake-ups (PELT and `update_curr` do their work;
//! a 1024 µs PELT period is crossed about every 20 operations).
//!
//! Reproduce (x86_64 host, figures are host instructions):
//!
//! ```text
//! cargo build --release -p fairway-sched --example enqueue_bench --target x86_64-unknown-linux-gnu
//! for pick in cfs eevdf; do for depth in 0 1 2 3; do for n in 8 64 1024 10000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     --toggle-collect='*enqueue_bench*measured_loop*' \
//!     target/x86_64-unknown-linux-gnu/release/examples/enqueue_bench $pick $depth $n 100000 2>&1 \
//!     | grep -E 'Collected'
//! done; done; done
//! ```
//!
//! The collected `Ir` divided by the operation count (the fourth argument) is
//! the cost of one enqueue + dequeue pair, loop overhead (a few instructions)
//! included. A fifth argument `uclamp-off` turns the uclamp accounting off
//! (`RunQueue::set_uclamp_enabled(false)`); `delay` keeps EEVDF's delayed
//! dequeue on (it is off here by default, so that every dequeue is a full one:
//! with it, a sleeping task with negative lag stays queued and its wake-up is a
//! cheap requeue). Without valgrind the program prints ns per operation.
//!
//! Figures measured on the x86_64 host (Ir per enqueue + dequeue, rustc 1.95
//! release with LTO), uclamp and PELT on, N = 8 / 64 / 1024 / 10000:
//!
//! | pick  | depth | Ir per enqueue + dequeue  |
//! |-------|-------|---------------------------|
//! | cfs   | 0     | 1894 / 2011 / 2152 / 2242 |
//! | cfs   | 1     | 3026 / 3143 / 3282 / 3374 |
//! | cfs   | 2     | 4146 / 4263 / 4404 / 4494 |
//! | cfs   | 3     | 5267 / 5384 / 5523 / 5614 |
//! | eevdf | 0     | 2367 / 2569 / 2656 / 2936 |
//! | eevdf | 1     | 3498 / 3700 / 3788 / 4068 |
//! | eevdf | 2     | 4619 / 4820 / 4908 / 5188 |
//! | eevdf | 3     | 5739 / 5941 / 6029 / 6309 |
//!
//! Each group level adds about 1,100 instructions per pair (the group entity's
//! PELT update, `calc_group_shares` and reweight on the way up, as Linux's
//! `for_each_sched_entity` loops do); N adds the tree's O(log N) walk. The
//! uclamp accounting costs about 145 of them (`uclamp-off`, depth 0, N = 1024:
//! CFS 2006, EEVDF 2510; CFS depth 3: 5377). With EEVDF's delayed dequeue on
//! (`delay`, the v6.12+ default): 2713 at depth 0 and 6086 at depth 3, N = 1024.

use std::hint::black_box;
use std::time::Instant;

use fairway_sched::class::{DequeueFlags, EnqueueFlags, SchedClass};
use fairway_sched::fair::{CfsTunables, EevdfTunables};
use fairway_sched::run_queue::{PolicyKind, RunQueue};
use fairway_sched::task::{GroupId, Policy, TaskId, TaskParams};

const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    migrated: false,
    initial: false,
};
const SLEEP: DequeueFlags = DequeueFlags {
    sleep: true,
    migrating: false,
};

struct Bench {
    run_queue: RunQueue,
    /// Tasks `0..=n`; `running` runs, `sleeping` sleeps, the rest wait.
    tasks: u16,
    running: TaskId,
    sleeping: TaskId,
    next_victim: u16,
    now: u64,
}

impl Bench {
    fn new(kind: PolicyKind, depth: usize, n: usize, uclamp: bool) -> Bench {
        let tasks = n + 1;
        let mut run_queue = RunQueue::with_options(kind, tasks, depth + 1, uclamp);
        let mut group = GroupId::ROOT;
        for _ in 0..depth {
            group = run_queue.create_group(group, 1024).unwrap();
        }
        for t in 0..tasks {
            let params = TaskParams {
                policy: Policy::Normal {
                    nice: (t % 11) as i8 - 5,
                },
                uclamp_min: Some((t * 97 % 512) as u16),
                uclamp_max: Some(512 + (t * 31 % 513) as u16),
                group,
                ..TaskParams::default()
            };
            run_queue.task_new(TaskId(t as u16), &params, 0).unwrap();
            run_queue.enqueue_task(TaskId(t as u16), 0, EnqueueFlags::default());
        }
        let running = run_queue.pick_next_task(0).unwrap();
        run_queue.set_next_task(running, 0);
        let sleeping = TaskId(if running.0 == 0 { 1 } else { 0 });
        run_queue.dequeue_task(sleeping, 0, SLEEP);
        Bench {
            run_queue,
            tasks: tasks as u16,
            running,
            sleeping,
            next_victim: 0,
            now: 0,
        }
    }

    /// The next queued task that is not running, round robin.
    fn victim(&mut self) -> TaskId {
        loop {
            self.next_victim = (self.next_victim + 1) % self.tasks;
            let t = TaskId(self.next_victim);
            if t != self.running && t != self.sleeping {
                return t;
            }
        }
    }
}

#[inline(never)]
fn measured_loop(bench: &mut Bench, ops: u64) {
    for _ in 0..ops {
        bench.now += 25_000;
        bench
            .run_queue
            .enqueue_task(bench.sleeping, bench.now, WAKEUP);
        let victim = bench.victim();
        bench.now += 25_000;
        bench.run_queue.dequeue_task(victim, bench.now, SLEEP);
        bench.sleeping = victim;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pick = args.get(1).map_or("cfs", String::as_str);
    let depth: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let n: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let ops: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let uclamp = !args.iter().any(|a| a == "uclamp-off");
    let delay = args.iter().any(|a| a == "delay");
    let kind = match pick {
        "cfs" => PolicyKind::Cfs(CfsTunables::for_cpus(1)),
        "eevdf" => PolicyKind::Eevdf(EevdfTunables {
            delay_dequeue: delay,
            ..EevdfTunables::for_cpus(1, 1_000_000)
        }),
        other => {
            eprintln!("unknown pick {other:?}: use cfs or eevdf");
            std::process::exit(2);
        }
    };
    if depth > 3 || n < 2 || n >= usize::from(u16::MAX) {
        eprintln!("depth must be 0..=3 and n in 2..65535");
        std::process::exit(2);
    }
    let mut bench = Bench::new(kind, depth, n, uclamp);
    let start = Instant::now();
    measured_loop(black_box(&mut bench), ops);
    let elapsed = start.elapsed();
    println!(
        "{pick} depth={depth} n={n} ops={ops} uclamp={uclamp}: {:.1} ns/op (nr_running {})",
        elapsed.as_nanos() as f64 / ops as f64,
        bench.run_queue.nr_running()
    );
}
