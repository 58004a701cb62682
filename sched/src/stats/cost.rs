//! Per-operation cost (cycle-counter brackets, minus their own overhead) and
//! wake-up-to-run latency, each kept as a log2 histogram plus an exact sampler.
//!
//! ```text
//!   start = PMCCNTR ; enqueue_task(..) ; end = PMCCNTR
//!   raw  = end - start            (bracket_cycles, wrapping)
//!   net  = raw - overhead         (subtract_overhead, saturating at 0)
//!   overhead = min over empty brackets `start = PMCCNTR ; end = PMCCNTR`
//! ```
//!
//! The overhead is the *minimum* of the calibration brackets: under QEMU icount
//! every empty bracket costs the same instruction count, so min = median and
//! the subtraction is exact; on a board the minimum never removes more than the
//! cheapest observed bracket, so a net figure is never pushed below what the
//! operation itself can cost.

use super::histogram::Log2Histogram;
use super::sampler::{ExactSampler, StatsError, Summary};

/// Counter ticks between two reads of a free-running 64-bit counter
/// (wrapping, so a counter wrap between the reads still gives the distance).
#[must_use]
pub const fn bracket_cycles(start: u64, end: u64) -> u64 {
    end.wrapping_sub(start)
}

/// `measured - overhead`, saturating at 0: a bracket cheaper than the
/// calibrated overhead (noise on a board) counts as zero, never wraps.
#[must_use]
pub const fn subtract_overhead(measured: u64, overhead: u64) -> u64 {
    measured.saturating_sub(overhead)
}

/// The bracket overhead from a sampler of empty-bracket costs: their exact
/// minimum (module doc), or 0 when none were measured.
#[must_use]
pub fn overhead_from_calibration(empty_brackets: &ExactSampler) -> u64 {
    empty_brackets.min().unwrap_or(0)
}

/// The cost of one bracketed operation (e.g. `enqueue_task`) on one CPU.
#[derive(Debug, Clone)]
pub struct CostStats {
    /// The operation's name as the report prints it (`enqueue_task`, ...).
    pub name: &'static str,
    /// Net costs in log2 buckets.
    pub histogram: Log2Histogram,
    /// Net costs, exact min/max/count/sum and nearest-rank quantiles.
    pub sampler: ExactSampler,
    overhead: u64,
}

impl CostStats {
    /// Cost statistics for `name`, keeping up to `capacity` samples
    /// (`capacity >= 1`), with no overhead subtracted until [`Self::set_overhead`].
    pub fn new(name: &'static str, capacity: usize) -> Result<Self, StatsError> {
        Ok(Self {
            name,
            histogram: Log2Histogram::new(),
            sampler: ExactSampler::new(capacity)?,
            overhead: 0,
        })
    }

    /// Sets the bracket overhead subtracted from every later record.
    pub fn set_overhead(&mut self, overhead: u64) {
        self.overhead = overhead;
    }

    /// The bracket overhead being subtracted.
    #[must_use]
    pub const fn overhead(&self) -> u64 {
        self.overhead
    }

    /// Records one bracket of `cycles` raw counter ticks; stores
    /// `cycles - overhead` (saturating) in both the histogram and the sampler.
    pub fn record(&mut self, cycles: u64) {
        let net = subtract_overhead(cycles, self.overhead);
        self.histogram.record(net);
        self.sampler.record(net);
    }

    /// Records the bracket between two counter reads.
    pub fn record_bracket(&mut self, start: u64, end: u64) {
        self.record(bracket_cycles(start, end));
    }

    /// Exact totals and quantiles of the net costs.
    pub fn summary(&mut self) -> Summary {
        self.sampler.summary()
    }
}

/// Wake-up-to-run latency of one task, in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyStats {
    /// Latencies in log2 buckets.
    pub histogram: Log2Histogram,
    /// Latencies, exact min/max/count/sum and nearest-rank quantiles.
    pub sampler: ExactSampler,
}

impl LatencyStats {
    /// Latency statistics keeping up to `capacity` samples (`capacity >= 1`).
    pub fn new(capacity: usize) -> Result<Self, StatsError> {
        Ok(Self {
            histogram: Log2Histogram::new(),
            sampler: ExactSampler::new(capacity)?,
        })
    }

    /// Records a latency of `latency_ns`.
    pub fn record(&mut self, latency_ns: u64) {
        self.histogram.record(latency_ns);
        self.sampler.record(latency_ns);
    }

    /// Records the latency from a wake-up at `woken_ns` to running at
    /// `running_ns` (saturating at 0 if the clock reads went backwards).
    pub fn record_wakeup(&mut self, woken_ns: u64, running_ns: u64) {
        self.record(running_ns.saturating_sub(woken_ns));
    }

    /// Exact totals and quantiles of the latencies.
    pub fn summary(&mut self) -> Summary {
        self.sampler.summary()
    }
}
