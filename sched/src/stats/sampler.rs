//! Exact sample store with nearest-rank quantiles and deterministic decimation.
//!
//! Min, max, count and sum are exact over every value recorded. Quantiles are
//! computed over the *kept* samples:
//!
//! - while fewer than `capacity` samples have arrived, every sample is kept,
//!   so the quantiles are exact over all of them;
//! - when a sample must be kept and the store is full, the store is decimated:
//!   every second kept sample is dropped and the stride doubles.
//!
//! Invariant (checked against a brute-force model in the tests): with samples
//! numbered `i = 0, 1, 2, ...` in arrival order, the store holds exactly the
//! samples whose `i % stride == 0`, in arrival order, with `stride` a power of
//! two (1 until the first decimation). So the quantiles are the exact
//! nearest-rank quantiles of a systematic 1-in-`stride` subsample: no
//! randomness, the same input always gives the same figures, and the subsample
//! spans the whole run rather than only its warm-up.
//!
//! ```text
//!   capacity 4:  arrivals  a0 a1 a2 a3 | a4 ...                 stride 1
//!                store     a0 a1 a2 a3   (full; a4 must be kept)
//!                decimate  a0    a2       then a4 kept           stride 2
//!                store     a0 a2 a4 a6   (a8 next: decimate)     stride 4
//! ```
//!
//! Nearest rank (the definition used throughout the report): for `N` sorted
//! values `x[1] <= ... <= x[N]` and a per-mille level `p` in `0..=1000`, the
//! quantile is `x[r]` with `r = max(1, ceil(p * N / 1000))`. So p500 of an even
//! count is the lower median, p1000 is the maximum and p0 is the minimum; the
//! result is always one of the recorded values, never an interpolation.

use alloc::vec::Vec;

/// Bad input to the statistics types (like `EINVAL`), naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsError {
    /// `field` is `value`, outside `min..=max`.
    OutOfRange {
        /// The parameter's name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The smallest value accepted.
        min: u64,
        /// The largest value accepted.
        max: u64,
    },
}

/// The largest per-mille level: the maximum.
const PERMILLE_MAX: u32 = 1000;

/// The 0-based index of the nearest-rank `permille` quantile among `len`
/// sorted values, or `None` when there are no values.
///
/// `rank = max(1, ceil(permille * len / 1000))`, index `rank - 1` (module doc).
pub fn nearest_rank_index(len: usize, permille: u32) -> Result<Option<usize>, StatsError> {
    if permille > PERMILLE_MAX {
        return Err(StatsError::OutOfRange {
            field: "permille",
            value: u64::from(permille),
            min: 0,
            max: u64::from(PERMILLE_MAX),
        });
    }
    if len == 0 {
        return Ok(None);
    }
    // u128: permille * len cannot overflow for any usize.
    let product = u128::from(permille) * len as u128;
    let rank = product.div_ceil(u128::from(PERMILLE_MAX)).max(1);
    // rank <= len because permille <= 1000, so the cast is lossless.
    Ok(Some(rank as usize - 1))
}

/// The nearest-rank `permille` quantile of `sorted` (ascending), or `None`
/// when it is empty.
pub fn nearest_rank(sorted: &[u64], permille: u32) -> Result<Option<u64>, StatsError> {
    Ok(nearest_rank_index(sorted.len(), permille)?.map(|index| sorted[index]))
}

/// What a sampler reports: exact totals plus quantiles of the kept samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// Values recorded (exact).
    pub count: u64,
    /// Sum of the values (exact, saturating at `u64::MAX`).
    pub sum: u64,
    /// Smallest value (exact); `None` when empty.
    pub min: Option<u64>,
    /// Nearest-rank median (p500) of the kept samples.
    pub p50: Option<u64>,
    /// Nearest-rank 99th percentile (p990) of the kept samples.
    pub p99: Option<u64>,
    /// Largest value (exact); `None` when empty.
    pub max: Option<u64>,
    /// Samples the quantiles were taken over.
    pub kept: usize,
    /// One sample in `stride` is kept (1: all of them).
    pub stride: u64,
}

/// Fixed-capacity exact sample store (see the module doc for what is kept).
#[derive(Debug, Clone)]
pub struct ExactSampler {
    /// Kept samples in arrival order: arrival indices 0, stride, 2*stride, ...
    kept: Vec<u64>,
    /// Sorting space for quantiles, allocated with `kept` so reports allocate nothing.
    sorted: Vec<u64>,
    capacity: usize,
    stride: u64,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl ExactSampler {
    /// A sampler keeping at most `capacity` samples (`capacity >= 1`).
    ///
    /// The only allocation: two buffers of `capacity` u64s.
    pub fn new(capacity: usize) -> Result<Self, StatsError> {
        if capacity == 0 {
            return Err(StatsError::OutOfRange {
                field: "capacity",
                value: 0,
                min: 1,
                max: usize::MAX as u64,
            });
        }
        Ok(Self {
            kept: Vec::with_capacity(capacity),
            sorted: Vec::with_capacity(capacity),
            capacity,
            stride: 1,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        })
    }

    /// Records `value`. Never allocates; O(1) except for a decimation pass,
    /// O(capacity), once per `capacity / 2` kept samples (amortised O(1)).
    pub fn record(&mut self, value: u64) {
        let index = self.count;
        self.count = self.count.saturating_add(1);
        self.sum = self.sum.saturating_add(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if !index.is_multiple_of(self.stride) {
            return;
        }
        if self.kept.len() == self.capacity {
            self.decimate();
            if !index.is_multiple_of(self.stride) {
                return;
            }
        }
        self.kept.push(value);
    }

    /// Keeps the samples at even positions (arrival index a multiple of
    /// `2 * stride`) and doubles the stride.
    fn decimate(&mut self) {
        let keep = self.kept.len().div_ceil(2);
        for position in 0..keep {
            self.kept[position] = self.kept[2 * position];
        }
        self.kept.truncate(keep);
        self.stride = self.stride.saturating_mul(2);
    }

    /// Values recorded (exact).
    #[must_use]
    pub const fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values recorded (exact, saturating).
    #[must_use]
    pub const fn sum(&self) -> u64 {
        self.sum
    }

    /// Smallest value recorded, exact.
    #[must_use]
    pub const fn min(&self) -> Option<u64> {
        if self.count == 0 {
            None
        } else {
            Some(self.min)
        }
    }

    /// Largest value recorded, exact.
    #[must_use]
    pub const fn max(&self) -> Option<u64> {
        if self.count == 0 {
            None
        } else {
            Some(self.max)
        }
    }

    /// One sample in `stride` is kept (a power of two).
    #[must_use]
    pub const fn stride(&self) -> u64 {
        self.stride
    }

    /// The most samples kept at once.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// The kept samples, in arrival order.
    #[must_use]
    pub fn kept(&self) -> &[u64] {
        &self.kept
    }

    /// The kept samples, ascending (sorted in the preallocated buffer).
    pub fn sorted(&mut self) -> &[u64] {
        self.sorted.clear();
        self.sorted.extend_from_slice(&self.kept);
        self.sorted.sort_unstable();
        &self.sorted
    }

    /// The nearest-rank `permille` quantile (`0..=1000`) of the kept samples.
    pub fn quantile(&mut self, permille: u32) -> Result<Option<u64>, StatsError> {
        nearest_rank(self.sorted(), permille)
    }

    /// Exact totals plus p50 and p99 of the kept samples.
    pub fn summary(&mut self) -> Summary {
        let (count, sum, min, max, stride) =
            (self.count, self.sum, self.min(), self.max(), self.stride);
        let sorted = self.sorted();
        // 500 and 990 are within 0..=1000, so these cannot fail.
        let p50 = nearest_rank(sorted, 500).unwrap_or(None);
        let p99 = nearest_rank(sorted, 990).unwrap_or(None);
        Summary {
            count,
            sum,
            min,
            p50,
            p99,
            max,
            kept: sorted.len(),
            stride,
        }
    }

    /// Forgets every value, keeping the buffers.
    pub fn clear(&mut self) {
        self.kept.clear();
        self.sorted.clear();
        self.stride = 1;
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }
}

/// One summary over several samplers (e.g. one per CPU), for the report's
/// `cpu=all` records. Allocates the union of the kept samples, so it is for
/// report time, not for hot paths.
///
/// Count, sum, min and max are exact. The quantiles are nearest-rank over the
/// union of the kept samples with each sample weighted by its sampler's
/// stride (the number of arrivals it stands for): the smallest value `v` such
/// that the weight of samples `<= v` reaches `p / 1000` of the total weight
/// (and the minimum kept value for p0). While no sampler has decimated, every
/// weight is 1 and this is the exact nearest-rank quantile of all samples.
pub fn merged_summary(samplers: &[&ExactSampler]) -> Summary {
    let mut union: Vec<(u64, u64)> = samplers
        .iter()
        .flat_map(|s| s.kept().iter().map(move |&value| (value, s.stride())))
        .collect();
    union.sort_unstable();
    let total: u128 = union.iter().map(|&(_, weight)| u128::from(weight)).sum();
    let quantile = |permille: u32| -> Option<u64> {
        let target = u128::from(permille) * total;
        let mut cumulative = 0u128;
        union.iter().find_map(|&(value, weight)| {
            cumulative += u128::from(weight);
            (cumulative * u128::from(PERMILLE_MAX) >= target).then_some(value)
        })
    };
    let counted = samplers.iter().filter(|s| s.count() > 0);
    Summary {
        count: samplers
            .iter()
            .fold(0u64, |t, s| t.saturating_add(s.count())),
        sum: samplers.iter().fold(0u64, |t, s| t.saturating_add(s.sum())),
        min: counted.clone().filter_map(|s| s.min()).min(),
        p50: quantile(500),
        p99: quantile(990),
        max: counted.filter_map(|s| s.max()).max(),
        kept: union.len(),
        stride: samplers.iter().map(|s| s.stride()).max().unwrap_or(1),
    }
}
