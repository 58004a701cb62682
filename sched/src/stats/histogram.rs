//! Log2 histogram: 64 power-of-two buckets of u64 counts.
//!
//! ```text
//!   bucket:   0       1       2       3      ...   63
//!   values: {0,1}  [2,4)   [4,8)   [8,16)    ...  [2^63, 2^64)
//! ```
//!
//! Bucket `k` holds the values whose `floor(log2(value)) == k`; the value 0,
//! which has no logarithm, shares bucket 0 with the value 1. Sixty-four
//! buckets cover every u64, so no value is ever clamped or lost.

/// The number of buckets: one per bit of a u64.
pub const LOG2_BUCKETS: usize = 64;

/// The bucket of `value`: `floor(log2(value))`, and 0 for the value 0.
///
/// One leading-zero count, so O(1) on any target.
#[must_use]
pub const fn log2_bucket(value: u64) -> usize {
    if value == 0 {
        0
    } else {
        (u64::BITS - 1 - value.leading_zeros()) as usize
    }
}

/// A histogram of u64 values in power-of-two buckets (see the module diagram).
///
/// Fixed size (64 counters, no heap), so recording never allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log2Histogram {
    counts: [u64; LOG2_BUCKETS],
}

impl Default for Log2Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Log2Histogram {
    /// An empty histogram.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            counts: [0; LOG2_BUCKETS],
        }
    }

    /// Counts `value` in its bucket. O(1); the count saturates at `u64::MAX`.
    pub fn record(&mut self, value: u64) {
        let bucket = &mut self.counts[log2_bucket(value)];
        *bucket = bucket.saturating_add(1);
    }

    /// The count in bucket `index`, or `None` past the last bucket.
    #[must_use]
    pub fn bucket(&self, index: usize) -> Option<u64> {
        self.counts.get(index).copied()
    }

    /// All 64 counts, bucket 0 first.
    #[must_use]
    pub const fn counts(&self) -> &[u64; LOG2_BUCKETS] {
        &self.counts
    }

    /// The non-empty buckets as `(index, count)`, lowest first: what the
    /// report's `hist` line carries.
    pub fn non_empty(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &count)| count != 0)
            .map(|(index, &count)| (index, count))
    }

    /// The total number of values recorded (saturating).
    #[must_use]
    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .fold(0u64, |total, &count| total.saturating_add(count))
    }

    /// Adds `other`'s counts bucket by bucket (saturating): the histogram of
    /// both value sets, exactly.
    pub fn merge(&mut self, other: &Self) {
        for (count, &more) in self.counts.iter_mut().zip(&other.counts) {
            *count = count.saturating_add(more);
        }
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.counts = [0; LOG2_BUCKETS];
    }
}
