//! The geometric decay of PELT: the integer `y^n` table and `decay_load` (§2.1, §2.2).
//!
//! A PELT period is 1024 units of 1024 ns. Each period multiplies the history by
//! `y`, with `y^32 = 1/2`. Integer code cannot raise `y` to a power, so it keeps
//! `y^i` for `i < 32` as 32-bit fixed-point fractions and halves the value once
//! per 32 periods:
//!
//! ```text
//!   val * y^n  =  (val >> (n / 32)) * y^(n % 32)
//!                 '--- halvings ---'  '- table, (x * inv) >> 32 -'
//! ```

/// `LOAD_AVG_PERIOD`: the half-life of the signals, in periods (§2.1).
pub const LOAD_AVG_PERIOD: u64 = 32;

/// Past this many periods any value has decayed to nothing, so `decay_load`
/// returns 0 directly (`LOAD_AVG_PERIOD * 63` = 2016 periods, ~2.11 s; §2.2).
pub const DECAY_CUTOFF_PERIODS: u64 = LOAD_AVG_PERIOD * 63;

/// `runnable_avg_yN_inv[i] = floor((2^32 - 1) * y^i)` for `i` in `0..32` (§2.1).
/// A test rebuilds it from the formula.
pub const RUNNABLE_AVG_Y_N_INV: [u32; 32] = [
    0xffff_ffff,
    0xfa83_b2da,
    0xf525_7d14,
    0xefe4_b99a,
    0xeac0_c6e6,
    0xe5b9_06e6,
    0xe0cc_deeb,
    0xdbfb_b796,
    0xd744_fcc9,
    0xd2a8_1d91,
    0xce24_8c14,
    0xc9b9_bd85,
    0xc567_2a10,
    0xc12c_4cc9,
    0xbd08_a39e,
    0xb8fb_af46,
    0xb504_f333,
    0xb123_f581,
    0xad58_3ee9,
    0xa9a1_5ab4,
    0xa5fe_d6a9,
    0xa270_4302,
    0x9ef5_325f,
    0x9b8d_39b9,
    0x9837_f050,
    0x94f4_efa8,
    0x91c3_d373,
    0x8ea4_398a,
    0x8b95_c1e3,
    0x8898_0e80,
    0x85aa_c367,
    0x82cd_8698,
];

/// `decay_load(val, n)`: `val * y^n` in integers (§2.2).
///
/// 1. More than 2016 periods: 0.
/// 2. Halve once per whole 32 periods.
/// 3. Multiply by the table entry for the rest, with a 128-bit product, and
///    keep the top 32 bits of the fraction (`mul_u64_u32_shr(val, inv, 32)`).
#[must_use]
pub const fn decay_load(val: u64, periods: u64) -> u64 {
    if periods > DECAY_CUTOFF_PERIODS {
        return 0;
    }
    let mut val = val;
    let mut n = periods;
    if n >= LOAD_AVG_PERIOD {
        val >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    ((val as u128 * RUNNABLE_AVG_Y_N_INV[n as usize] as u128) >> 32) as u64
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::pelt::LOAD_AVG_MAX;

    /// §2.1 / Appendix A §0: every entry is `floor((2^32-1) * y^i)` with
    /// `y = 0.5^(1/32)`. The float product is checked to be well away from an
    /// integer, so rounding of `powf` cannot flip the floor.
    #[test]
    fn table_matches_formula() {
        let y = 0.5f64.powf(1.0 / 32.0);
        assert!((y - 0.978_572_062_1).abs() < 1e-10, "Appendix A §0 y");
        for (i, &entry) in RUNNABLE_AVG_Y_N_INV.iter().enumerate() {
            let exact = 4_294_967_295.0 * y.powi(i as i32);
            assert_eq!(entry as f64, exact.floor(), "entry {i}");
        }
        // y^32 = 1/2: one more step after the last entry halves the first.
        let y32 = 4_294_967_295.0 * y.powi(32);
        assert!((y32 - 4_294_967_295.0 / 2.0).abs() < 1e-3);
    }

    /// Appendix A §0 self-checks.
    #[test]
    fn appendix_a_self_checks() {
        assert_eq!(decay_load(1024, 32), 511);
        assert_eq!(decay_load(1024, 1), 1002);
        assert_eq!(decay_load(LOAD_AVG_MAX, 1), 46718);
        assert_eq!(LOAD_AVG_MAX - 1024, 46718);
    }

    /// §2.1: the integer series `s(n) = decay_load(s(n-1), 1) + 1024`
    /// reaches LOAD_AVG_MAX = 47742 after 347 periods and stays there.
    #[test]
    fn integer_series_converges_to_load_avg_max() {
        let mut s = 0u64;
        let mut first = None;
        for n in 1..=2000u64 {
            s = decay_load(s, 1) + 1024;
            if s == LOAD_AVG_MAX && first.is_none() {
                first = Some(n);
            }
        }
        assert_eq!(first, Some(347));
        assert_eq!(s, LOAD_AVG_MAX);
    }

    /// §2.2 step 1: the cut-off at 2016 periods.
    #[test]
    fn cutoff() {
        assert_eq!(decay_load(u64::MAX, DECAY_CUTOFF_PERIODS + 1), 0);
        assert_eq!(decay_load(u64::MAX, u64::MAX), 0);
        // At exactly 2016 periods the value is shifted by 63 and scaled by y^0.
        assert_eq!(decay_load(u64::MAX, DECAY_CUTOFF_PERIODS), 0);
        assert_eq!(decay_load(1 << 63, DECAY_CUTOFF_PERIODS), 0);
        assert_eq!(decay_load(0, 5), 0);
    }

    /// Analytic: decaying by `a` then `b` periods is close to decaying by
    /// `a + b` (the integer floors lose at most a few units), and a 32-period
    /// decay halves (within the table's rounding).
    #[test]
    fn decay_is_close_to_real_power() {
        let y = 0.5f64.powf(1.0 / 32.0);
        for &val in &[1u64, 1024, 47742, 1 << 40, u64::MAX >> 1] {
            for n in [0u64, 1, 5, 31, 32, 33, 100, 345, 1000] {
                let exact = val as f64 * y.powi(n as i32);
                let got = decay_load(val, n) as f64;
                assert!(got <= exact * (1.0 + 1e-12) + 1.0, "val {val} n {n}");
                assert!(got >= exact * (1.0 - 1e-8) - 2.0, "val {val} n {n}");
            }
        }
    }
}
