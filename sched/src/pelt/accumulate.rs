//! Accumulating a time delta into the PELT sums: the three segments and the divider (§2.2).
//!
//! ```text
//!             d1          d2 (whole periods)          d3
//!        |<------->|<---------------------------->|<----->|
//!   -----|---------|------|------|------|------|--|-------|-----> PELT time
//!    last update   ^ period boundaries                  now
//!
//!   contribution = d1 * y^p  +  1024 * (y^(p-1) + ... + y^1)  +  d3
//!                  '-- c1 --'   '-------------- c2 ---------'   '- c3 -'
//! ```
//! `c2` is computed in closed form from `LOAD_AVG_MAX`, the fixed point of the
//! integer series, so no loop over periods is needed.

use super::decay::decay_load;
use super::{
    LOAD_AVG_MAX, PELT_MIN_DIVIDER, PERIOD_UNITS, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT,
    SchedAvg,
};

/// `get_pelt_divider(sa)`: the maximum a sum can hold given how far into the
/// current period it is, `PELT_MIN_DIVIDER + period_contrib`, in
/// `[46718, 47741]` (§2.1).
#[must_use]
pub const fn pelt_divider(avg: &SchedAvg) -> u64 {
    PELT_MIN_DIVIDER + avg.period_contrib as u64
}

/// `__accumulate_pelt_segments(periods, d1, d3)` = `c1 + c2 + c3` (§2.2):
/// the old open period's remainder `d1` decayed `periods` times, the full
/// periods in between, and the new open period's part `d3`, undecayed.
#[must_use]
pub const fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    let c1 = decay_load(d1 as u64, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - PERIOD_UNITS;
    (c1 + c2) as u32 + d3
}

/// `accumulate_sum(delta, sa, load, runnable, running)` (§2.2): `delta` is in
/// 1024-ns units. Decays the sums by the period boundaries crossed, adds this
/// delta's contribution weighted by `load` (sum weight, not the avg weight),
/// `runnable` (a count) and `running`, and returns the number of periods crossed.
///
/// Inlined: most updates cross no period boundary and come down to a few
/// additions, less than a call's own cost.
#[inline(always)]
pub fn accumulate_sum(
    delta: u64,
    avg: &mut SchedAvg,
    load: u64,
    runnable: u64,
    running: bool,
) -> u64 {
    let mut contrib = delta;
    let delta = delta + avg.period_contrib as u64;
    let periods = delta / PERIOD_UNITS;
    let remainder = (delta % PERIOD_UNITS) as u32;
    if periods > 0 {
        avg.load_sum = decay_load(avg.load_sum, periods);
        avg.runnable_sum = decay_load(avg.runnable_sum, periods);
        avg.util_sum = decay_load(avg.util_sum, periods);
        if load != 0 {
            // If the entity is not loaded the contribution is unused below,
            // so the segments are not computed (§2.2 step 2).
            contrib = accumulate_pelt_segments(
                periods,
                PERIOD_UNITS as u32 - avg.period_contrib,
                remainder,
            ) as u64;
        }
    }
    avg.period_contrib = remainder;
    if load != 0 {
        avg.load_sum = avg.load_sum.saturating_add(load.saturating_mul(contrib));
    }
    if runnable != 0 {
        avg.runnable_sum = avg.runnable_sum.saturating_add(
            runnable
                .saturating_mul(contrib)
                .saturating_mul(SCHED_CAPACITY_SCALE),
        );
    }
    if running {
        avg.util_sum = avg.util_sum.saturating_add(contrib << SCHED_CAPACITY_SHIFT);
    }
    periods
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §2.2: with no period crossed, the whole delta is added undecayed.
    #[test]
    fn inside_one_period() {
        let mut avg = SchedAvg::default();
        assert_eq!(accumulate_sum(1000, &mut avg, 1, 1, true), 0);
        assert_eq!(avg.period_contrib, 1000);
        assert_eq!(avg.load_sum, 1000);
        assert_eq!(avg.runnable_sum, 1000 << 10);
        assert_eq!(avg.util_sum, 1000 << 10);
    }

    /// Appendix A §1 gives util_sum for N whole periods from an aligned start
    /// (single update): 1 -> 1026048, 32 -> 23919616, 512 -> 47839232.
    /// Analytic: the contribution approximates the real sum
    /// `sum_{k=1..N} 1024 y^k` (every period, the newest included, is decayed
    /// once per boundary crossed); the closed form uses the integer
    /// LOAD_AVG_MAX = 47742 instead of 1024/(1-y) = 47788.08 (§2.1), so it is
    /// low by at most 46.08 * (1 - y^N), plus floors.
    #[test]
    fn whole_periods_match_appendix_and_real_sum() {
        extern crate std;
        for (n, expected_util_sum) in [(1u64, 1_026_048u64), (32, 23_919_616), (512, 47_839_232)] {
            let mut avg = SchedAvg::default();
            assert_eq!(accumulate_sum(n * 1024, &mut avg, 1, 1, true), n);
            assert_eq!(avg.util_sum, expected_util_sum, "N={n}");
            assert_eq!(avg.runnable_sum, expected_util_sum, "N={n}");
        }
        let y = 0.5f64.powf(1.0 / 32.0);
        for n in [1u64, 2, 7, 31, 32, 33, 64, 100, 345, 1000, 2016, 5000] {
            let mut avg = SchedAvg::default();
            accumulate_sum(n * 1024, &mut avg, 1, 0, false);
            let real: f64 = (1..=n).map(|k| 1024.0 * y.powi(k as i32)).sum();
            let closed = avg.load_sum as f64;
            let slack = 46.08 * (1.0 - y.powi(n as i32)) + 3.0;
            assert!(
                closed <= real + 1.0 && closed >= real - slack,
                "N={n}: {closed} vs {real}"
            );
        }
    }

    /// §2.1: the divider ranges over [46718, 47741].
    #[test]
    fn divider_range() {
        let mut avg = SchedAvg::default();
        assert_eq!(pelt_divider(&avg), 46718);
        avg.period_contrib = 1023;
        assert_eq!(pelt_divider(&avg), 47741);
    }
}
