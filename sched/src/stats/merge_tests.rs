//! Tests of the merged (all-CPU) summary against a brute-force expansion.

use alloc::vec::Vec;

use super::*;

/// SplitMix64, as in the other stats tests.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Brute-force nearest rank: sort, r = max(1, ceil(p * N / 1000)) by search.
fn brute(values: &[u64], permille: u64) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort();
    let n = sorted.len() as u64;
    (1..=n)
        .find(|&r| r * 1000 >= permille * n)
        .map(|r| sorted[r as usize - 1])
}

#[test]
fn merged_summary_is_exact_without_decimation() {
    let mut state = 7;
    let mut samplers: Vec<ExactSampler> = (0..3).map(|_| ExactSampler::new(500).unwrap()).collect();
    let mut all = Vec::new();
    for (cpu, sampler) in samplers.iter_mut().enumerate() {
        for _ in 0..(100 + 50 * cpu) {
            let value = next(&mut state) % 10_000;
            sampler.record(value);
            all.push(value);
        }
    }
    let refs: Vec<&ExactSampler> = samplers.iter().collect();
    let merged = merged_summary(&refs);
    assert_eq!(merged.count, all.len() as u64);
    assert_eq!(merged.sum, all.iter().sum::<u64>());
    assert_eq!(merged.min, all.iter().copied().min());
    assert_eq!(merged.max, all.iter().copied().max());
    assert_eq!(merged.p50, brute(&all, 500));
    assert_eq!(merged.p99, brute(&all, 990));
    assert_eq!(merged.stride, 1);
}

#[test]
fn merged_summary_weights_decimated_samples_by_stride() {
    // Brute force: each kept sample repeated `stride` times, then nearest rank.
    let mut state = 8;
    let mut samplers = [
        ExactSampler::new(8).unwrap(),
        ExactSampler::new(64).unwrap(),
        ExactSampler::new(3).unwrap(),
    ];
    for (i, sampler) in samplers.iter_mut().enumerate() {
        for _ in 0..(37 * (i + 1)) {
            sampler.record(next(&mut state) % 1000);
        }
    }
    let mut expanded = Vec::new();
    for sampler in &samplers {
        for &value in sampler.kept() {
            (0..sampler.stride()).for_each(|_| expanded.push(value));
        }
    }
    let refs: Vec<&ExactSampler> = samplers.iter().collect();
    let merged = merged_summary(&refs);
    assert!(merged.stride > 1);
    assert_eq!(merged.p50, brute(&expanded, 500));
    assert_eq!(merged.p99, brute(&expanded, 990));
    assert_eq!(merged.count, 37 + 74 + 111);
    assert_eq!(merged_summary(&[]).p50, None);

    let mut a = Log2Histogram::new();
    let mut b = Log2Histogram::new();
    a.record(5);
    b.record(6);
    b.record(1000);
    a.merge(&b);
    assert_eq!((a.bucket(2), a.bucket(9), a.total()), (Some(2), Some(1), 3));
}
