//! Load weights: the nice → weight tables, scaled load resolution and the
//! fixed-point `__calc_delta` that turns real time into weighted (virtual) time.
//!
//! Everything here follows §1.1 and §1.2 of `docs/linux-sched-reference.md` for a
//! 64-bit kernel: weights are held *scaled* (`scale_load(w) = w << 10`, so nice 0
//! is `NICE_0_LOAD = 1 << 20`) and scaled down for the fixed-point arithmetic.
//!
//! ```text
//!   calc_delta(delta, weight, lw) ≈ delta * weight / lw.weight
//!
//!   fact  = scale_load_down(weight)            (≤ 32 bits after a shift)
//!   fact  = fact * lw.inv_weight               (inv_weight ≈ 2^32 / lw.weight)
//!   fact  renormalised to 32 bits, shift -= lost bits
//!   result = (delta * fact) >> shift           (128-bit product)
//! ```

/// `SCHED_FIXEDPOINT_SHIFT` (§1.1): the extra load resolution on 64-bit.
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;

/// `NICE_0_LOAD_SHIFT` on 64-bit: `2 * SCHED_FIXEDPOINT_SHIFT` (§1.1).
pub const NICE_0_LOAD_SHIFT: u32 = 2 * SCHED_FIXEDPOINT_SHIFT;

/// The scaled weight of a nice-0 task, `1 << 20` on 64-bit (§1.1).
pub const NICE_0_LOAD: u64 = 1 << NICE_0_LOAD_SHIFT;

/// `WMULT_CONST = 2^32 - 1`, the numerator of runtime-computed inverses (§1.2).
pub const WMULT_CONST: u64 = u32::MAX as u64;

/// `WMULT_SHIFT = 32` (§1.2).
pub const WMULT_SHIFT: u32 = 32;

/// Weight of a `SCHED_IDLE` task (unscaled), `WEIGHT_IDLEPRIO` (§1.1).
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// Inverse weight of a `SCHED_IDLE` task, `WMULT_IDLEPRIO` (§1.1).
pub const WMULT_IDLEPRIO: u32 = 1_431_655_765;

/// `sched_prio_to_weight[40]`, index `nice + 20` (§1.1), unscaled.
pub const PRIO_TO_WEIGHT: [u32; 40] = [
    /* -20 */ 88761, 71755, 56483, 46273, 36291, //
    /* -15 */ 29154, 23254, 18705, 14949, 11916, //
    /* -10 */ 9548, 7620, 6100, 4904, 3906, //
    /*  -5 */ 3121, 2501, 1991, 1586, 1277, //
    /*   0 */ 1024, 820, 655, 526, 423, //
    /*   5 */ 335, 272, 215, 172, 137, //
    /*  10 */ 110, 87, 70, 56, 45, //
    /*  15 */ 36, 29, 23, 18, 15,
];

/// `sched_prio_to_wmult[40]` (§1.1). Stored, not computed: 13 entries are one
/// larger than `2^32 / weight`.
pub const PRIO_TO_WMULT: [u32; 40] = [
    /* -20 */ 48388, 59856, 76040, 92818, 118348, //
    /* -15 */ 147320, 184698, 229616, 287308, 360437, //
    /* -10 */ 449829, 563644, 704093, 875809, 1099582, //
    /*  -5 */ 1376151, 1717300, 2157191, 2708050, 3363326, //
    /*   0 */ 4194304, 5237765, 6557202, 8165337, 10153587, //
    /*   5 */ 12820798, 15790321, 19976592, 24970740, 31350126, //
    /*  10 */ 39045157, 49367440, 61356676, 76695844, 95443717, //
    /*  15 */ 119304647, 148102320, 186737708, 238609294, 286331153,
];

/// `scale_load(w) = w << 10` (§1.1).
pub const fn scale_load(weight: u64) -> u64 {
    weight << SCHED_FIXEDPOINT_SHIFT
}

/// `scale_load_down(w) = w ? max(2, w >> 10) : 0` (§1.1).
pub const fn scale_load_down(weight: u64) -> u64 {
    if weight == 0 {
        0
    } else {
        let down = weight >> SCHED_FIXEDPOINT_SHIFT;
        if down < 2 { 2 } else { down }
    }
}

/// A load weight and its cached inverse (Linux's `struct load_weight`).
///
/// `weight` is scaled (nice 0 = [`NICE_0_LOAD`]). `inv_weight` is `≈ 2^32 /
/// scale_load_down(weight)`: copied from [`PRIO_TO_WMULT`] for task weights, or
/// computed with the runtime rule of `__update_inv_weight` (§1.2) for others.
///
/// It also keeps `se_weight()`, `scale_load_down(weight)` (§1.1), which the
/// fair class reads some twenty times per sched-pipe round trip (PELT, the
/// EEVDF sums, placement): made once with the weight, in the room the struct
/// had as padding. Build one with [`LoadWeight::from_nice`],
/// [`LoadWeight::idle`] or [`LoadWeight::from_scaled`] and replace it whole:
/// the weight is not written alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadWeight {
    /// The scaled weight.
    pub weight: u64,
    /// The inverse used by [`calc_delta`].
    pub inv_weight: u32,
    /// `scale_load_down(weight)`, see [`LoadWeight::scaled_down`].
    weight_down: u32,
}

impl Default for LoadWeight {
    fn default() -> Self {
        LoadWeight::from_nice(0)
    }
}

impl LoadWeight {
    /// The weight of a task at `nice` (clamped to -20..=19; callers validate),
    /// with the table inverse, as `set_load_weight()` does (§1.1).
    pub const fn from_nice(nice: i8) -> LoadWeight {
        let nice = if nice < -20 {
            -20
        } else if nice > 19 {
            19
        } else {
            nice
        };
        let index = (nice as i32 + 20) as usize;
        LoadWeight {
            weight: scale_load(PRIO_TO_WEIGHT[index] as u64),
            inv_weight: PRIO_TO_WMULT[index],
            weight_down: PRIO_TO_WEIGHT[index],
        }
    }

    /// The weight of a `SCHED_IDLE` task (§1.1).
    pub const fn idle() -> LoadWeight {
        LoadWeight {
            weight: scale_load(WEIGHT_IDLEPRIO),
            inv_weight: WMULT_IDLEPRIO,
            weight_down: WEIGHT_IDLEPRIO as u32,
        }
    }

    /// A weight that does not come from the table (a group entity's shares), with
    /// the inverse computed as `__update_inv_weight()` does (§1.2).
    pub const fn from_scaled(weight: u64) -> LoadWeight {
        let down = scale_load_down(weight);
        LoadWeight {
            weight,
            inv_weight: runtime_inverse(weight),
            // An entity's weight scaled down is at most 2^18 (`MAX_SHARES`);
            // a run queue's sum made into a weight for `calc_delta` (CFS's
            // slice) never asks for it.
            weight_down: if down > u32::MAX as u64 {
                u32::MAX
            } else {
                down as u32
            },
        }
    }

    /// `se_weight()`: the weight scaled down, 1024 for nice 0 (§1.1), as made
    /// with the weight.
    #[inline(always)]
    pub fn scaled_down(self) -> u64 {
        debug_assert_eq!(u64::from(self.weight_down), scale_load_down(self.weight));
        u64::from(self.weight_down)
    }
}

/// `__update_inv_weight()` (§1.2): `WMULT_CONST / w` with `w` scaled down; 1 when
/// `w ≥ WMULT_CONST`, `WMULT_CONST` when `w == 0`.
pub const fn runtime_inverse(weight: u64) -> u32 {
    let w = scale_load_down(weight);
    if w >= WMULT_CONST {
        1
    } else {
        match WMULT_CONST.checked_div(w) {
            Some(inverse) => inverse as u32,
            None => WMULT_CONST as u32,
        }
    }
}

/// `fls(x)`: the 1-based index of the highest set bit, 0 for 0.
const fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// `__calc_delta(delta_exec, weight, lw)` (§1.2): `delta_exec * weight /
/// lw.weight` in 64-bit fixed point, bit-exact with Linux. `weight` is scaled.
pub const fn calc_delta(delta_exec: u64, weight: u64, lw: LoadWeight) -> u64 {
    let mut fact = scale_load_down(weight);
    let mut shift = WMULT_SHIFT;
    let inv_weight = if lw.inv_weight == 0 {
        runtime_inverse(lw.weight)
    } else {
        lw.inv_weight
    };
    let high = (fact >> 32) as u32;
    if high != 0 {
        let bits = fls(high);
        shift -= bits;
        fact >>= bits;
    }
    fact = (fact as u32 as u64) * inv_weight as u64;
    let high = (fact >> 32) as u32;
    if high != 0 {
        let bits = fls(high);
        shift -= bits;
        fact >>= bits;
    }
    // mul_u64_u32_shr: the 128-bit product never overflows the result for the
    // shifts used here.
    ((delta_exec as u128 * fact as u128) >> shift) as u64
}

/// `n / d` for a positive `d`, truncated toward zero as 128-bit division does,
/// with a 64-bit division when both fit (the usual case: a 128-bit division
/// is a library call of about 60 instructions, a 64-bit one one instruction).
/// The products the scheduler divides (a lag times a weight, shares times a
/// load) rarely need the wide type; when they do, the result is the same.
#[inline(always)]
pub fn div_wide(n: i128, d: i128) -> i128 {
    debug_assert!(d > 0);
    match (i64::try_from(n), i64::try_from(d)) {
        (Ok(n), Ok(d)) => i128::from(n / d),
        _ => n / d,
    }
}

/// `n / d` for a non-zero `d`, as [`div_wide`] for unsigned values.
#[inline(always)]
pub fn div_wide_unsigned(n: u128, d: u128) -> u128 {
    debug_assert!(d > 0);
    match (u64::try_from(n), u64::try_from(d)) {
        (Ok(n), Ok(d)) => u128::from(n / d),
        _ => n / d,
    }
}

/// `calc_delta_fair(delta, se)` (§1.2): real time to the entity's virtual time;
/// unchanged for a nice-0 weight.
pub const fn calc_delta_fair(delta: u64, lw: LoadWeight) -> u64 {
    if lw.weight == NICE_0_LOAD {
        delta
    } else {
        calc_delta(delta, NICE_0_LOAD, lw)
    }
}

/// Signed, wrap-safe difference `a - b` of two virtual times (§1.3).
pub const fn vtime_delta(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// Wrap-safe `a < b` on virtual times (§1.3): `(s64)(a - b) < 0`.
pub const fn vtime_before(a: u64, b: u64) -> bool {
    vtime_delta(a, b) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path gives what 128-bit division gives, at the 64-bit edges,
    /// for negative numerators and for values beyond 64 bits.
    #[test]
    fn wide_division_matches_128_bit_division() {
        use alloc::{vec, vec::Vec};
        let edges: [i128; 9] = [
            0,
            1,
            -1,
            7,
            -7,
            i128::from(i64::MAX),
            i128::from(i64::MIN),
            i128::from(i64::MAX) + 1,
            i128::from(i64::MIN) * 3,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut numerators: Vec<i128> = edges.to_vec();
        numerators.extend((0..200).map(|_| i128::from(next() as i64) * i128::from(next() as u32)));
        let mut divisors: Vec<i128> = vec![1, 2, 3, 1024, i128::from(i64::MAX), 1 << 70];
        divisors.extend((0..20).map(|_| i128::from(next() >> 20) + 1));
        for &n in &numerators {
            for &d in &divisors {
                assert_eq!(div_wide(n, d), n / d, "{n} / {d}");
                if n >= 0 {
                    let (n, d) = (n as u128, d as u128);
                    assert_eq!(div_wide_unsigned(n, d), n / d, "{n} / {d}");
                }
            }
        }
    }

    /// §1.2 table and Appendix A §5: Δvruntime for 1,000,000 ns of runtime.
    #[test]
    fn calc_delta_fair_vectors() {
        let vectors: [(i8, u64); 9] = [
            (-20, 11536),
            (-10, 107247),
            (-5, 328099),
            (-1, 801879),
            (0, 1_000_000),
            (1, 1_248_780),
            (5, 3_056_716),
            (10, 9_309_090),
            (19, 68_266_666),
        ];
        for (nice, expected) in vectors {
            let table = LoadWeight::from_nice(nice);
            assert_eq!(calc_delta_fair(1_000_000, table), expected, "nice {nice}");
            // §1.2: "The table inverse and the runtime inverse give the same numbers".
            let runtime = LoadWeight {
                inv_weight: 0,
                ..table
            };
            assert_eq!(calc_delta_fair(1_000_000, runtime), expected, "nice {nice}");
        }
    }

    /// Appendix A §5: vslice for a 3 ms slice, and the nice-0 lag clamp.
    #[test]
    fn vslice_vectors() {
        assert_eq!(
            calc_delta_fair(3_000_000, LoadWeight::from_nice(-10)),
            321_742
        );
        assert_eq!(
            calc_delta_fair(3_000_000, LoadWeight::from_nice(0)),
            3_000_000
        );
        assert_eq!(
            calc_delta_fair(3_000_000, LoadWeight::from_nice(10)),
            27_927_272
        );
        // limit = calc_delta_fair(max(2*slice, TICK_NSEC)) with HZ=250: 6,000,000.
        let limit = core::cmp::max(2 * 3_000_000, 4_000_000);
        assert_eq!(calc_delta_fair(limit, LoadWeight::from_nice(0)), 6_000_000);
    }

    /// Appendix A §5: the table entries that differ from 2^32 // w, and the
    /// runtime rule (2^32-1) // w.
    #[test]
    fn wmult_table_rounding() {
        let rounded_up = [2, 3, 12, 13, 16, 18, 19, 21, 22, 24, 25, 26, 32];
        for (index, (&w, &wmult)) in PRIO_TO_WEIGHT.iter().zip(&PRIO_TO_WMULT).enumerate() {
            let floor = (1u64 << 32) / u64::from(w);
            let expected = if rounded_up.contains(&index) {
                floor + 1
            } else {
                floor
            };
            assert_eq!(u64::from(wmult), expected, "index {index}");
        }
        // nice -18: runtime inverse 76039 (Appendix A §5).
        assert_eq!(runtime_inverse(scale_load(56483)), 76039);
        assert_eq!(runtime_inverse(0), u32::MAX);
    }

    #[test]
    fn scale_load_rules() {
        assert_eq!(NICE_0_LOAD, 1_048_576);
        assert_eq!(scale_load_down(NICE_0_LOAD), 1024);
        assert_eq!(scale_load_down(0), 0);
        assert_eq!(scale_load_down(1), 2, "floor of 2 (§1.1)");
        assert_eq!(scale_load_down(2047), 2);
        assert_eq!(LoadWeight::idle().scaled_down(), 3);
    }

    /// Analytic: a weight so large that `fact` needs the first renormalisation
    /// still yields delta * weight / lw within one part in 2^20.
    #[test]
    fn large_weights_renormalise() {
        let lw = LoadWeight::from_scaled(scale_load(1024));
        let weight = scale_load(1 << 40);
        let got = calc_delta(1_000_000, weight, lw);
        let exact = 1_000_000u128 * (1u128 << 40) / 1024;
        let error = (exact as i128 - got as i128).unsigned_abs();
        assert!(error * (1 << 20) < exact, "got {got}, exact {exact}");
    }

    #[test]
    fn wrap_safe_comparison() {
        let near_overflow = (-(1i64 << 20)) as u64;
        assert!(vtime_before(near_overflow, near_overflow.wrapping_add(5)));
        assert!(!vtime_before(5, near_overflow));
    }
}
