//! Tests of the statistics against brute-force models, hand-computed
//! nearest-rank examples and edge cases.

use alloc::vec::Vec;

use super::*;

/// SplitMix64: a small seeded generator so the random tests are reproducible.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value with a random bit width, so every log2 bucket gets traffic.
    fn spread(&mut self) -> u64 {
        let width = self.next() % 65;
        if width == 64 {
            self.next()
        } else {
            self.next() & ((1u64 << width) - 1)
        }
    }
}

/// Brute-force bucket: halve until one is left, counting the halvings.
fn brute_bucket(value: u64) -> usize {
    let mut halvings = 0;
    let mut rest = value;
    while rest > 1 {
        rest /= 2;
        halvings += 1;
    }
    halvings
}

/// Brute-force nearest rank, written from the other textbook form: the
/// smallest sorted value x[r] whose cumulative share r/N reaches p/1000.
fn brute_quantile(values: &[u64], permille: u32) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort();
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    (1..=n)
        .find(|&rank| rank * 1000 >= u64::from(permille) * n)
        .map(|rank| sorted[rank as usize - 1])
}

/// Brute-force model of the kept set: the smallest power-of-two stride whose
/// multiples below `n` fit in `capacity`, and the samples at those indices.
fn brute_kept(values: &[u64], capacity: usize) -> (u64, Vec<u64>) {
    let n = values.len() as u64;
    let mut stride = 1u64;
    while n.div_ceil(stride) > capacity as u64 {
        stride *= 2;
    }
    let kept = values
        .iter()
        .enumerate()
        .filter(|(i, _)| (*i as u64).is_multiple_of(stride))
        .map(|(_, &v)| v)
        .collect();
    (stride, kept)
}

#[test]
fn log2_bucket_matches_repeated_halving() {
    let mut random = SplitMix64(1);
    for value in (0..=4096).chain((0..10_000).map(|_| random.spread())) {
        assert_eq!(log2_bucket(value), brute_bucket(value), "value {value}");
    }
    // The bucket edges (analytic: 2^k opens bucket k).
    for k in 1..64 {
        assert_eq!(log2_bucket(1u64 << k), k);
        assert_eq!(log2_bucket((1u64 << k) - 1), k - 1);
    }
    assert_eq!(log2_bucket(0), 0);
    assert_eq!(log2_bucket(1), 0);
    assert_eq!(log2_bucket(u64::MAX), 63);
}

#[test]
fn histogram_counts_match_brute_force() {
    let mut random = SplitMix64(2);
    let mut histogram = Log2Histogram::new();
    let mut expected = [0u64; LOG2_BUCKETS];
    for _ in 0..20_000 {
        let value = random.spread();
        histogram.record(value);
        expected[brute_bucket(value)] += 1;
    }
    assert_eq!(histogram.counts(), &expected);
    assert_eq!(histogram.total(), 20_000);
    let non_empty: Vec<(usize, u64)> = histogram.non_empty().collect();
    let brute: Vec<(usize, u64)> = (0..LOG2_BUCKETS)
        .filter(|&i| expected[i] != 0)
        .map(|i| (i, expected[i]))
        .collect();
    assert_eq!(non_empty, brute);
    assert_eq!(histogram.bucket(64), None);
    histogram.clear();
    assert_eq!(histogram.total(), 0);
}

#[test]
fn nearest_rank_hand_examples() {
    // Worked by hand from r = max(1, ceil(p * N / 100)):
    // N = 5: p5 -> r1, p30 -> ceil(1.5) = r2, p40 -> r2, p50 -> ceil(2.5) = r3, p100 -> r5.
    let five = [15, 20, 35, 40, 50];
    for (permille, expected) in [(50, 15), (300, 20), (400, 20), (500, 35), (1000, 50)] {
        assert_eq!(
            nearest_rank(&five, permille),
            Ok(Some(expected)),
            "p{permille}"
        );
    }
    // N = 10: p25 -> ceil(2.5) = r3, p50 -> r5, p75 -> ceil(7.5) = r8, p100 -> r10.
    let ten = [3, 6, 7, 8, 8, 10, 13, 15, 16, 20];
    for (permille, expected) in [(250, 7), (500, 8), (750, 15), (1000, 20)] {
        assert_eq!(
            nearest_rank(&ten, permille),
            Ok(Some(expected)),
            "p{permille}"
        );
    }
    // N = 11: p25 -> ceil(2.75) = r3, p50 -> ceil(5.5) = r6, p75 -> ceil(8.25) = r9.
    let eleven = [3, 6, 7, 8, 8, 9, 10, 13, 15, 16, 20];
    for (permille, expected) in [(250, 7), (500, 9), (750, 15), (1000, 20)] {
        assert_eq!(
            nearest_rank(&eleven, permille),
            Ok(Some(expected)),
            "p{permille}"
        );
    }
    // p0 is the minimum (rank clamped to 1); p99 of 100 values is the 99th.
    assert_eq!(nearest_rank(&five, 0), Ok(Some(15)));
    let hundred: Vec<u64> = (1..=100).collect();
    assert_eq!(nearest_rank(&hundred, 990), Ok(Some(99)));
    assert_eq!(nearest_rank(&hundred, 991), Ok(Some(100)));
    // Even count: the median is the lower middle value.
    assert_eq!(nearest_rank(&[1, 2, 3, 4], 500), Ok(Some(2)));
}

#[test]
fn nearest_rank_rejects_levels_above_1000() {
    let error = StatsError::OutOfRange {
        field: "permille",
        value: 1001,
        min: 0,
        max: 1000,
    };
    assert_eq!(nearest_rank(&[1], 1001), Err(error));
    assert_eq!(nearest_rank_index(0, 1001), Err(error));
}

#[test]
fn quantiles_match_brute_force_while_under_capacity() {
    let mut random = SplitMix64(3);
    for length in [1usize, 2, 3, 7, 100, 999] {
        let values: Vec<u64> = (0..length).map(|_| random.next() % 1000).collect();
        let mut sampler = ExactSampler::new(1000).unwrap();
        values.iter().for_each(|&v| sampler.record(v));
        assert_eq!(sampler.stride(), 1);
        for permille in (0..=1000).step_by(7).chain([500, 990, 999, 1000]) {
            assert_eq!(
                sampler.quantile(permille),
                Ok(brute_quantile(&values, permille)),
                "length {length} p{permille}"
            );
        }
    }
}

#[test]
fn decimation_matches_brute_force_model() {
    let mut random = SplitMix64(4);
    for capacity in [1usize, 2, 3, 4, 5, 7, 8, 64, 100] {
        let mut sampler = ExactSampler::new(capacity).unwrap();
        let mut values = Vec::new();
        for _ in 0..2000 {
            let value = random.spread();
            values.push(value);
            sampler.record(value);
            let (stride, kept) = brute_kept(&values, capacity);
            assert_eq!(
                sampler.stride(),
                stride,
                "capacity {capacity} n {}",
                values.len()
            );
            assert_eq!(
                sampler.kept(),
                &kept[..],
                "capacity {capacity} n {}",
                values.len()
            );
            assert!(sampler.kept().len() <= capacity);
        }
        // Exact totals over every value, quantiles over the kept ones.
        let (_, kept) = brute_kept(&values, capacity);
        let summary = sampler.summary();
        assert_eq!(summary.count, 2000);
        assert_eq!(summary.min, values.iter().copied().min());
        assert_eq!(summary.max, values.iter().copied().max());
        let sum = values.iter().fold(0u64, |s, &v| s.saturating_add(v));
        assert_eq!(summary.sum, sum);
        assert_eq!(summary.p50, brute_quantile(&kept, 500));
        assert_eq!(summary.p99, brute_quantile(&kept, 990));
        assert_eq!(summary.kept, kept.len());
    }
}

#[test]
fn decimation_follows_the_module_diagram() {
    // Capacity 4, samples a_i = i: the store is a0 a1 a2 a3, then a0 a2 a4 a6,
    // then a0 a4 a8 once a8 arrives (stride 4).
    let mut sampler = ExactSampler::new(4).unwrap();
    (0..4).for_each(|i| sampler.record(i));
    assert_eq!((sampler.kept(), sampler.stride()), (&[0, 1, 2, 3][..], 1));
    (4..8).for_each(|i| sampler.record(i));
    assert_eq!((sampler.kept(), sampler.stride()), (&[0, 2, 4, 6][..], 2));
    sampler.record(8);
    assert_eq!((sampler.kept(), sampler.stride()), (&[0, 4, 8][..], 4));
}

#[test]
fn edge_cases_empty_one_equal_huge() {
    let mut empty = ExactSampler::new(8).unwrap();
    let summary = empty.summary();
    assert_eq!(
        summary,
        Summary {
            stride: 1,
            ..Summary::default()
        }
    );
    assert_eq!(empty.quantile(500), Ok(None));

    let mut one = ExactSampler::new(8).unwrap();
    one.record(42);
    for permille in [0, 1, 500, 990, 1000] {
        assert_eq!(one.quantile(permille), Ok(Some(42)));
    }

    let mut equal = ExactSampler::new(16).unwrap();
    (0..100).for_each(|_| equal.record(7));
    let summary = equal.summary();
    assert_eq!(
        (summary.min, summary.p50, summary.p99, summary.max),
        (Some(7), Some(7), Some(7), Some(7))
    );
    assert_eq!(summary.sum, 700);

    let mut huge = ExactSampler::new(4).unwrap();
    huge.record(u64::MAX);
    huge.record(u64::MAX - 1);
    let summary = huge.summary();
    assert_eq!(summary.sum, u64::MAX, "sum saturates");
    assert_eq!(
        (summary.min, summary.max),
        (Some(u64::MAX - 1), Some(u64::MAX))
    );
    // p500 of 2 values: rank ceil(1.0) = 1, the smaller one.
    assert_eq!(summary.p50, Some(u64::MAX - 1));
    let mut histogram = Log2Histogram::new();
    histogram.record(u64::MAX);
    assert_eq!(histogram.bucket(63), Some(1));

    huge.clear();
    assert_eq!(huge.summary().count, 0);
    assert_eq!(huge.min(), None);
}

#[test]
fn zero_capacity_is_an_error_naming_the_field() {
    let error = StatsError::OutOfRange {
        field: "capacity",
        value: 0,
        min: 1,
        max: usize::MAX as u64,
    };
    assert_eq!(ExactSampler::new(0).err(), Some(error));
    assert_eq!(CostStats::new("enqueue_task", 0).err(), Some(error));
    assert_eq!(LatencyStats::new(0).err(), Some(error));
}

#[test]
fn overhead_is_subtracted_saturating() {
    assert_eq!(subtract_overhead(100, 30), 70);
    assert_eq!(subtract_overhead(30, 30), 0);
    assert_eq!(subtract_overhead(10, 30), 0);
    // A wrap of the 64-bit counter between the reads: MAX-1 -> MAX -> 0 -> 1 -> 2 -> 3.
    assert_eq!(bracket_cycles(u64::MAX - 1, 3), 5);
    assert_eq!(bracket_cycles(10, 10), 0);

    let mut calibration = ExactSampler::new(16).unwrap();
    assert_eq!(overhead_from_calibration(&calibration), 0);
    [9, 7, 8, 7, 12].iter().for_each(|&c| calibration.record(c));
    assert_eq!(overhead_from_calibration(&calibration), 7);

    let mut cost = CostStats::new("enqueue_task", 16).unwrap();
    cost.set_overhead(7);
    [107, 57, 5].iter().for_each(|&c| cost.record(c));
    cost.record_bracket(1000, 1020);
    // Net values 100, 50, 0, 13.
    let summary = cost.summary();
    assert_eq!(
        (summary.min, summary.max, summary.sum),
        (Some(0), Some(100), 163)
    );
    assert_eq!(cost.overhead(), 7);
    assert_eq!(cost.name, "enqueue_task");
    assert_eq!(cost.histogram.bucket(0), Some(1)); // 0
    assert_eq!(cost.histogram.bucket(3), Some(1)); // 13 in [8, 16)
    assert_eq!(cost.histogram.bucket(5), Some(1)); // 50 in [32, 64)
    assert_eq!(cost.histogram.bucket(6), Some(1)); // 100 in [64, 128)
}

#[test]
fn latency_records_wakeup_to_run() {
    let mut latency = LatencyStats::new(8).unwrap();
    latency.record_wakeup(1_000, 1_250);
    latency.record_wakeup(2_000, 2_000);
    latency.record_wakeup(5_000, 4_000); // clock went backwards: 0
    latency.record(4_096);
    let summary = latency.summary();
    assert_eq!(summary.count, 4);
    assert_eq!((summary.min, summary.max), (Some(0), Some(4_096)));
    // Sorted 0, 0, 250, 4096: p50 rank 2 -> 0; p99 rank ceil(3.96) = 4 -> 4096.
    assert_eq!((summary.p50, summary.p99), (Some(0), Some(4_096)));
    assert_eq!(latency.histogram.bucket(12), Some(1));
}
