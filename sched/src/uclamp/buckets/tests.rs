//! Tests of the bucket aggregation against the facts' vectors and brute-force
//! models.

use super::*;
use alloc::format;
use alloc::vec::Vec;

#[test]
fn bucket_mapping_matches_appendix_a_section_7() {
    // Appendix A §7 (UCLAMP_BUCKETS=5, delta = 205), verbatim.
    let vectors: [(u16, usize); 13] = [
        (0, 0),
        (100, 0),
        (204, 0),
        (205, 1),
        (409, 1),
        (410, 2),
        (512, 2),
        (614, 2),
        (615, 3),
        (819, 3),
        (820, 4),
        (1000, 4),
        (1024, 4),
    ];
    assert_eq!(uclamp_bucket_delta(5), 205);
    for (value, bucket) in vectors {
        assert_eq!(uclamp_bucket_id(value, 5), bucket, "clamp {value}");
    }
    // Appendix A §7: delta and bucket(1024) for 5, 10 and 20 buckets.
    for (nr_buckets, delta, top) in [(5, 205, 4), (10, 102, 9), (20, 51, 19)] {
        assert_eq!(uclamp_bucket_delta(nr_buckets), delta);
        assert_eq!(uclamp_bucket_id(1024, nr_buckets), top);
    }
}

#[test]
fn bucket_count_is_validated() {
    for bad in [0, 4, 21] {
        assert_eq!(
            UclampRunQueue::new(bad),
            Err(ParamError::OutOfRange {
                field: "uclamp_buckets",
                value: bad as i64,
                min: 5,
                max: 20
            })
        );
    }
    assert_eq!(UclampRunQueue::new(20).unwrap().nr_buckets(), 20);
}

#[test]
fn boot_state_and_idle_holding() {
    // §3.1: at init value = uclamp_none(id) and the idle flag is set.
    let mut rq = UclampRunQueue::default();
    assert_eq!((rq.value(ClampId::Min), rq.value(ClampId::Max)), (0, 1024));
    assert!(rq.is_idle());
    let mut a = [TaskClamp::default(); 2];
    let mut b = [TaskClamp::default(); 2];
    // The first enqueue resets the held max (uclamp_idle_reset): max = 300, not 1024.
    rq.inc(&mut a, [100, 300]);
    assert!(!rq.is_idle());
    assert_eq!((rq.value(ClampId::Min), rq.value(ClampId::Max)), (100, 300));
    rq.inc(&mut b, [50, 700]);
    assert_eq!((rq.value(ClampId::Min), rq.value(ClampId::Max)), (100, 700));
    rq.dec(&mut b);
    assert_eq!((rq.value(ClampId::Min), rq.value(ClampId::Max)), (100, 300));
    // §3.2: the last task leaves: the max is held at its value (300), the min drops to 0.
    rq.dec(&mut a);
    assert!(rq.is_idle());
    assert_eq!((rq.value(ClampId::Min), rq.value(ClampId::Max)), (0, 300));
    assert!(!a[0].active() && !a[1].active());
    // Held until the next enqueue, which replaces it even when lower.
    rq.inc(&mut b, [0, 150]);
    assert_eq!(rq.value(ClampId::Max), 150);
    assert!(!rq.is_idle());
}

#[test]
fn bucket_keeps_its_local_max_while_it_has_tasks() {
    // §3.2: 300 and 250 share bucket 1; when 300 leaves the bucket keeps 300.
    let mut rq = UclampRunQueue::default();
    let mut a = [TaskClamp::default(); 2];
    let mut b = [TaskClamp::default(); 2];
    rq.inc(&mut a, [300, 1024]);
    rq.inc(&mut b, [250, 1024]);
    rq.dec(&mut a);
    assert_eq!(rq.bucket(ClampId::Min, 1), (300, 1));
    assert_eq!(rq.value(ClampId::Min), 300, "accepted over-boost");
    rq.dec(&mut b);
    assert_eq!(rq.value(ClampId::Min), 0);
}

/// A small deterministic generator (xorshift64*) for the random sequences.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TASKS: usize = 12;

/// Runs a random enqueue/dequeue sequence, calling `check` after each step
/// with the run queue, the queued tasks' values and the last dequeued values.
fn random_sequence(
    seed: u64,
    steps: usize,
    nr_buckets: usize,
    mut value: impl FnMut(&mut Rng) -> u16,
    mut check: impl FnMut(&UclampRunQueue, &[Option<[u16; 2]>], Option<[u16; 2]>),
) {
    let mut rng = Rng(seed);
    let mut rq = UclampRunQueue::new(nr_buckets).unwrap();
    let mut clamps = [[TaskClamp::default(); 2]; TASKS];
    let mut queued: [Option<[u16; 2]>; TASKS] = [None; TASKS];
    let mut last_dequeued = None;
    for _ in 0..steps {
        let t = rng.below(TASKS as u64) as usize;
        match queued[t] {
            Some(values) => {
                rq.dec(&mut clamps[t]);
                queued[t] = None;
                last_dequeued = Some(values);
            }
            None => {
                let values = [value(&mut rng), value(&mut rng)];
                rq.inc(&mut clamps[t], values);
                queued[t] = Some(values);
            }
        }
        check(&rq, &queued, last_dequeued);
    }
}

#[test]
fn max_aggregation_equals_max_over_queued_tasks() {
    // With one possible value per bucket there is no stale local max, so the
    // run-queue value must be exactly the max over the queued tasks (§3.2);
    // with none queued: min 0, max held at the last dequeued task's value.
    let values = [100, 300, 500, 700, 900]; // buckets 0..=4 (Appendix A §7)
    for seed in 1..=20 {
        random_sequence(
            seed,
            400,
            5,
            |rng| values[rng.below(5) as usize],
            |rq, queued, last| {
                for clamp_id in ClampId::ALL {
                    let i = clamp_id.index();
                    let max = queued.iter().flatten().map(|v| v[i]).max();
                    let expected = match (max, clamp_id) {
                        (Some(max), _) => max,
                        (None, ClampId::Min) => 0,
                        (None, ClampId::Max) => last.map_or(1024, |v| v[1]),
                    };
                    assert_eq!(rq.value(clamp_id), expected, "seed {seed} {clamp_id:?}");
                }
                assert_eq!(rq.is_idle(), queued.iter().all(Option::is_none));
            },
        );
    }
}

#[test]
fn max_aggregation_with_any_values_matches_the_bucket_model() {
    // Brute-force model of §3.2 kept as sets: each bucket remembers the values
    // counted since it was last empty; the run-queue value is the largest of
    // those in the highest non-empty bucket. It also never under-clamps the
    // true max and stays in the true max's bucket (over-boost < one bucket).
    for (seed, nr_buckets) in (1..=30).zip([5, 10, 20].into_iter().cycle()) {
        let mut episode: [[Vec<u16>; UCLAMP_BUCKETS_MAX]; 2] = Default::default();
        let mut previous: [Option<[u16; 2]>; TASKS] = [None; TASKS];
        random_sequence(
            seed,
            600,
            nr_buckets,
            |rng| rng.below(1025) as u16,
            |rq, queued, last| {
                // Replay the step into the model: find the task that changed.
                for t in 0..TASKS {
                    if let (None, Some(v)) = (previous[t], queued[t]) {
                        for i in 0..2 {
                            episode[i][uclamp_bucket_id(v[i], nr_buckets)].push(v[i]);
                        }
                    }
                }
                previous.copy_from_slice(queued);
                for clamp_id in ClampId::ALL {
                    let i = clamp_id.index();
                    let in_bucket = |b: usize| {
                        queued
                            .iter()
                            .flatten()
                            .any(|v| uclamp_bucket_id(v[i], nr_buckets) == b)
                    };
                    for (b, values) in episode[i].iter_mut().enumerate() {
                        if !in_bucket(b) {
                            values.clear();
                        }
                    }
                    let top = (0..nr_buckets).rev().find(|&b| in_bucket(b));
                    let expected = match (top, clamp_id) {
                        (Some(b), _) => *episode[i][b].iter().max().unwrap(),
                        (None, ClampId::Min) => 0,
                        (None, ClampId::Max) => last.map_or(1024, |v| v[1]),
                    };
                    assert_eq!(rq.value(clamp_id), expected, "seed {seed} {clamp_id:?}");
                    if let Some(true_max) = queued.iter().flatten().map(|v| v[i]).max() {
                        assert!(rq.value(clamp_id) >= true_max);
                        assert_eq!(
                            uclamp_bucket_id(rq.value(clamp_id), nr_buckets),
                            uclamp_bucket_id(true_max, nr_buckets)
                        );
                    }
                }
            },
        );
    }
}

/// §3.2 as Linux writes it, every task in its buckets' `tasks` (the run
/// queue before default tasks were counted apart, in `nr_default`): the model
/// the run queue must agree with bucket by bucket.
struct LinuxModel {
    nr_buckets: usize,
    value: [u16; 2],
    buckets: [[(u16, u32); UCLAMP_BUCKETS_MAX]; 2],
    idle: bool,
}

impl LinuxModel {
    fn new(nr_buckets: usize) -> Self {
        LinuxModel {
            nr_buckets,
            value: [0, 1024],
            buckets: [[(0, 0); UCLAMP_BUCKETS_MAX]; 2],
            idle: true,
        }
    }

    /// `uclamp_rq_inc`: each id's bucket count, idle reset, local max, max.
    fn inc(&mut self, values: [u16; 2]) {
        for (i, &value) in values.iter().enumerate() {
            let bucket = &mut self.buckets[i][uclamp_bucket_id(value, self.nr_buckets)];
            bucket.1 += 1;
            if i == 1 && self.idle {
                self.value[i] = value;
            }
            if bucket.1 == 1 || value > bucket.0 {
                bucket.0 = value;
            }
            self.value[i] = self.value[i].max(value);
        }
        self.idle = false;
    }

    /// `uclamp_rq_dec`: the count, and the max again when the emptied
    /// bucket held it (idle holding for the ceiling, 0 for the floor).
    fn dec(&mut self, values: [u16; 2]) {
        for (i, &value) in values.iter().enumerate() {
            let bucket = &mut self.buckets[i][uclamp_bucket_id(value, self.nr_buckets)];
            bucket.1 -= 1;
            if bucket.1 > 0 || bucket.0 < self.value[i] {
                continue;
            }
            let top = self.buckets[i][..self.nr_buckets]
                .iter()
                .rev()
                .find(|bucket| bucket.1 > 0);
            self.value[i] = match (top, i) {
                (Some(bucket), _) => bucket.0,
                (None, 0) => 0,
                (None, _) => {
                    self.idle = true;
                    value
                }
            };
        }
    }
}

#[test]
fn default_tasks_counted_apart_give_linux_buckets_and_values() {
    // Default tasks (0, 1024) are counted in `nr_default`; every bucket's
    // count and local max, both run-queue values and the idle flag must be
    // those of §3.2 with every task in its buckets. Half the tasks are
    // default; the others take values in the default buckets too (0..=204
    // and the top bucket), so that the sums and the stale local maxima meet.
    let pick = [0, 1, 100, 204, 300, 700, 819, 820, 900, 1000, 1023, 1024];
    for (seed, nr_buckets) in (1..=60).zip([5, 10, 20].into_iter().cycle()) {
        let mut rng = Rng(seed);
        let mut rq = UclampRunQueue::new(nr_buckets).unwrap();
        let mut model = LinuxModel::new(nr_buckets);
        let mut clamps = [[TaskClamp::default(); 2]; TASKS];
        let mut queued: [Option<[u16; 2]>; TASKS] = [None; TASKS];
        for step in 0..800 {
            let t = rng.below(TASKS as u64) as usize;
            match queued[t] {
                Some(values) => {
                    rq.dec(&mut clamps[t]);
                    model.dec(values);
                    queued[t] = None;
                    assert!(!clamps[t][0].active() && !clamps[t][1].active());
                }
                None => {
                    let values = if rng.below(2) == 0 {
                        [0, 1024]
                    } else {
                        let mut pair = [0; 2].map(|_| pick[rng.below(12) as usize]);
                        pair.sort_unstable();
                        pair
                    };
                    rq.inc(&mut clamps[t], values);
                    model.inc(values);
                    queued[t] = Some(values);
                    for clamp_id in ClampId::ALL {
                        let clamp = clamps[t][clamp_id.index()];
                        let value = values[clamp_id.index()];
                        assert!(clamp.active());
                        assert_eq!(clamp.value(), value);
                        assert_eq!(clamp.bucket_id(), uclamp_bucket_id(value, nr_buckets));
                    }
                }
            }
            let at = format!("seed {seed}, {nr_buckets} buckets, step {step}");
            assert_eq!(rq.is_idle(), model.idle, "{at}");
            for clamp_id in ClampId::ALL {
                let i = clamp_id.index();
                assert_eq!(rq.value(clamp_id), model.value[i], "{at} {clamp_id:?}");
                for b in 0..nr_buckets {
                    assert_eq!(
                        rq.bucket(clamp_id, b),
                        model.buckets[i][b],
                        "{at} {clamp_id:?} bucket {b}"
                    );
                }
            }
        }
    }
}
