// The timeline benchmark's workload, shared by the host example
// (`sched/examples/timeline_bench.rs`) and the AArch64 kernel image
// (`tests/timeline_bench.rs`) through `include!`, so that both measure the
// same operations on the same keys. Needs `alloc::vec` and
// `fairway_sched::fair::timeline::{Augment, MinVruntime, Timeline, TimelineArena}`
// in scope. Each loop runs on its tree's own type, as the C calibration tree
// compiles its CFS and EEVDF variants apart.

/// Deterministic xorshift so that runs are reproducible.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Per-entity workload state, indexed by a 16-bit entity number so that,
/// like the C harness's static arrays, an access needs no bounds check (the
/// figures are the tree's, not the harness's).
type PerEntity = alloc::boxed::Box<[u64; 1 << 16]>;

fn per_entity() -> PerEntity {
    match vec![0; 1 << 16].into_boxed_slice().try_into() {
        Ok(array) => array,
        Err(_) => unreachable!("the vector has 2^16 elements"),
    }
}

/// Entity `id`'s slot in a [`PerEntity`] array.
#[inline(always)]
fn slot(id: u32) -> usize {
    usize::from(id as u16)
}

struct Bench<A: Augment> {
    nodes: TimelineArena<A>,
    timeline: Timeline,
    vruntime: PerEntity,
    slice: PerEntity,
    /// Σ vruntime (all weights equal), for the eligibility test Σv ≥ v·N.
    sum: u64,
    count: u64,
}

impl<A: Augment> Bench<A> {
    fn new(n: usize) -> Bench<A> {
        let augmented = A::AUGMENTED;
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let mut bench = Bench {
            nodes: TimelineArena::new(n),
            timeline: Timeline::default(),
            vruntime: per_entity(),
            slice: per_entity(),
            sum: 0,
            count: n as u64,
        };
        for id in 0..n {
            let v = next_random(&mut state) % 3_000_000;
            let slice = 700_000 + next_random(&mut state) % 2_000_000;
            bench.vruntime[id] = v;
            bench.slice[id] = slice;
            bench.sum += v;
            let key = if augmented { v + slice } else { v };
            bench.nodes.insert(&mut bench.timeline, id as u32, key, v);
        }
        bench
    }
}

/// CFS: the leftmost runs one slice and goes back with its new vruntime.
#[inline(never)]
fn measured_loop_cfs(bench: &mut Bench<()>, ops: u64) {
    for _ in 0..ops {
        let id = bench.timeline.first().unwrap();
        bench.nodes.remove(&mut bench.timeline, id);
        let v = bench.vruntime[slot(id)] + bench.slice[slot(id)];
        bench.vruntime[slot(id)] = v;
        bench.nodes.insert(&mut bench.timeline, id, v, v);
    }
}

/// EEVDF: the earliest-deadline eligible entity runs its slice, its deadline
/// moves one slice on. Eligibility `Σv ≥ v·N` is tested as `v ≤ ⌊Σv / N⌋`,
/// the same predicate for integers, with the quotient computed once per pick
/// as `pick_eevdf` does.
#[inline(never)]
fn measured_loop_eevdf(bench: &mut Bench<MinVruntime>, ops: u64) {
    for _ in 0..ops {
        let limit = bench.sum / bench.count;
        let id = bench
            .nodes
            .first_eligible(&bench.timeline, |v| v <= limit)
            .unwrap();
        bench.nodes.remove(&mut bench.timeline, id);
        let slice = bench.slice[slot(id)];
        let v = bench.vruntime[slot(id)] + slice;
        bench.vruntime[slot(id)] = v;
        bench.sum += slice;
        bench.nodes.insert(&mut bench.timeline, id, v + slice, v);
    }
}
