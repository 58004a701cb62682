//! Measurement statistics the kernel fills and the report prints: log2
//! histograms, exact quantile samplers, per-operation cost and wake-up latency.
//!
//! The kernel brackets each hot path (enqueue_task, dequeue_task,
//! pick_next_task, the PELT update, the uclamp update, the context switch)
//! with two cycle-counter reads and records the difference here; under QEMU
//! icount the counter reads instructions, so the figures are deterministic.
//!
//! ```text
//!   counter read ─┐                       ┌─► Log2Histogram  (64 buckets, O(1))
//!   hot path      ├─ end - start ─► minus ┤
//!   counter read ─┘     overhead          └─► ExactSampler   (min/max/count/sum
//!                   (subtract_overhead)                       exact; quantiles by
//!                                                             nearest rank)
//! ```
//!
//! Everything is sized in `new` (the only allocation); `record` is O(1)
//! amortised and allocates nothing, so it may run inside the hot paths it
//! measures. Summaries are taken at report time and printed as `report: `
//! lines (`fairway_contract::report`; grammar in `docs/report-format.md`).

pub mod cost;
pub mod histogram;
pub mod probe;
pub mod sampler;

pub use cost::{
    CostStats, LatencyStats, bracket_cycles, overhead_from_calibration, subtract_overhead,
};
pub use histogram::{LOG2_BUCKETS, Log2Histogram, log2_bucket};
pub use sampler::{
    ExactSampler, StatsError, Summary, merged_summary, nearest_rank, nearest_rank_index,
};

#[cfg(test)]
mod merge_tests;
#[cfg(test)]
mod tests;
