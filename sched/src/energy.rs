//! The Energy Model (docs/linux-sched-reference.md §5.1): each performance
//! domain's states with their power, performance and cost, built from the
//! board's OPPs and `dynamic-power-coefficient` as Linux builds it from a
//! device tree (`dev_pm_opp_of_register_em`), and the energy estimate EAS
//! compares placements with (`em_cpu_energy`, §5.2).
//!
//! Linux's rules kept here: power in µW, `P = C · mV² · MHz / 10^6`; a state's
//! power must be in `1..=EM_MAX_POWER`; frequencies must increase strictly;
//! `cost = power × 10 / performance` (v6.9+), and a state whose cost is at
//! least some faster state's is inefficient.

use alloc::vec::Vec;

/// `EM_MAX_POWER`: the most power one state may draw, in µW (64 W).
pub const EM_MAX_POWER: u64 = 64_000_000;

/// One performance state (`struct em_perf_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfState {
    /// Its frequency, in kHz.
    pub frequency: u64,
    /// Its power, in µW.
    pub power: u64,
    /// `max_cap × frequency / fmax` (v6.9+).
    pub performance: u64,
    /// `power × 10 / performance`: energy per unit of work, ×10.
    pub cost: u64,
    /// Some faster state costs no more (`EM_PERF_STATE_INEFFICIENT`).
    pub inefficient: bool,
}

/// An operating point as the device tree gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatingPoint {
    /// `opp-hz`.
    pub hz: u64,
    /// `opp-microvolt`.
    pub microvolt: u64,
}

/// Why a domain's table cannot make an energy model (Linux refuses to
/// register it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnergyModelError {
    /// The domain lists no state.
    Empty,
    /// The CPUs have no `dynamic-power-coefficient`, or it is 0.
    NoCoefficient,
    /// State `index`'s frequency is not above the one before.
    FrequencyNotIncreasing {
        /// The state, counted from 0.
        index: usize,
    },
    /// State `index`'s power is 0 or above [`EM_MAX_POWER`].
    Power {
        /// The state, counted from 0.
        index: usize,
        /// Its power, in µW.
        power: u64,
    },
}

impl core::fmt::Display for EnergyModelError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            EnergyModelError::Empty => f.write_str("no performance state"),
            EnergyModelError::NoCoefficient => {
                f.write_str("no dynamic-power-coefficient (or it is 0)")
            }
            EnergyModelError::FrequencyNotIncreasing { index } => {
                write!(f, "state {index}: the frequency does not increase")
            }
            EnergyModelError::Power { index, power } => write!(
                f,
                "state {index}: power {power} uW is outside 1..={EM_MAX_POWER}"
            ),
        }
    }
}

/// One performance domain's energy model (`struct em_perf_domain`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfDomainModel {
    /// The states, in increasing frequency.
    pub states: Vec<PerfState>,
}

/// `_get_power` (`drivers/opp/of.c`): `C · mV² · MHz / 10^6` µW, computed in
/// Linux's order.
pub fn dt_power(coefficient: u64, point: OperatingPoint) -> u64 {
    let millivolt = point.microvolt / 1000;
    let tmp = coefficient
        .saturating_mul(millivolt)
        .saturating_mul(millivolt)
        .saturating_mul(point.hz / 1_000_000);
    tmp / 1_000_000
}

impl PerfDomainModel {
    /// The model of a domain whose CPUs have capacity `max_cap` at the
    /// highest of `points`, and `dynamic-power-coefficient` `coefficient`
    /// (µW/MHz/V²).
    pub fn from_operating_points(
        points: &[OperatingPoint],
        coefficient: u32,
        max_cap: u64,
    ) -> Result<Self, EnergyModelError> {
        let fmax = points.last().ok_or(EnergyModelError::Empty)?.hz / 1000;
        if coefficient == 0 {
            return Err(EnergyModelError::NoCoefficient);
        }
        let mut states = Vec::with_capacity(points.len());
        for (index, point) in points.iter().enumerate() {
            let frequency = point.hz / 1000;
            if states
                .last()
                .is_some_and(|last: &PerfState| last.frequency >= frequency)
            {
                return Err(EnergyModelError::FrequencyNotIncreasing { index });
            }
            let power = dt_power(u64::from(coefficient), *point);
            if power == 0 || power > EM_MAX_POWER {
                return Err(EnergyModelError::Power { index, power });
            }
            let performance = (max_cap * frequency / fmax.max(1)).max(1);
            states.push(PerfState {
                frequency,
                power,
                performance,
                cost: power * 10 / performance,
                inefficient: false,
            });
        }
        // `em_compute_costs`: from the highest state down, a state that costs
        // at least as much as some faster one is inefficient.
        let mut cheapest_above = u64::MAX;
        for state in states.iter_mut().rev() {
            if state.cost >= cheapest_above {
                state.inefficient = true;
            } else {
                cheapest_above = state.cost;
            }
        }
        Ok(PerfDomainModel { states })
    }

    /// `em_pd_get_efficient_state`: the lowest state whose performance covers
    /// `max_util` (efficient ones only when `skip_inefficient`), else the
    /// highest.
    pub fn efficient_state(&self, max_util: u64, skip_inefficient: bool) -> &PerfState {
        self.states
            .iter()
            .find(|s| s.performance >= max_util && !(skip_inefficient && s.inefficient))
            .or(self.states.last())
            .expect("a model has states")
    }

    /// `em_cpu_energy` (v6.9+, §5.2): the energy estimate of the domain whose
    /// busiest CPU needs `max_util` (headroom already added by the caller)
    /// and whose CPUs sum to `sum_util`, with frequency capped at
    /// `allowed_cpu_cap`.
    pub fn cpu_energy(&self, max_util: u64, sum_util: u64, allowed_cpu_cap: u64) -> u64 {
        if sum_util == 0 {
            return 0;
        }
        let max_util = max_util.min(allowed_cpu_cap);
        self.efficient_state(max_util, true).cost * sum_util
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn points(table: &[(u64, u64)]) -> Vec<OperatingPoint> {
        table
            .iter()
            .map(|&(mhz, mv)| OperatingPoint {
                hz: mhz * 1_000_000,
                microvolt: mv * 1000,
            })
            .collect()
    }

    fn rows(model: &PerfDomainModel) -> Vec<(u64, u64, u64, u64)> {
        model
            .states
            .iter()
            .map(|s| (s.frequency, s.power, s.performance, s.cost))
            .collect()
    }

    /// §7.2's derived model of Juno r0 (kHz, µW, perf, cost v6.9+); no state
    /// is inefficient.
    #[test]
    fn juno_r0_matches_the_reference_table() {
        let a53 = PerfDomainModel::from_operating_points(
            &points(&[(450, 820), (575, 850), (700, 900), (775, 950), (850, 1000)]),
            140,
            446,
        )
        .unwrap();
        assert_eq!(
            rows(&a53),
            [
                (450_000, 42_361, 236, 1_794),
                (575_000, 58_161, 301, 1_932),
                (700_000, 79_380, 367, 2_162),
                (775_000, 97_921, 406, 2_411),
                (850_000, 119_000, 446, 2_668),
            ]
        );
        let a57 = PerfDomainModel::from_operating_points(
            &points(&[(450, 820), (625, 850), (800, 900), (950, 950), (1100, 1000)]),
            530,
            1024,
        )
        .unwrap();
        assert_eq!(
            rows(&a57),
            [
                (450_000, 160_367, 418, 3_836),
                (625_000, 239_328, 581, 4_119),
                (800_000, 343_440, 744, 4_616),
                (950_000, 454_408, 884, 5_140),
                (1_100_000, 583_000, 1_024, 5_693),
            ]
        );
        assert!(a53.states.iter().chain(&a57.states).all(|s| !s.inefficient));
    }

    /// §7.3's derived model of Juno r2.
    #[test]
    fn juno_r2_matches_the_reference_table() {
        let a53 = PerfDomainModel::from_operating_points(
            &points(&[(450, 820), (800, 900), (950, 1000)]),
            140,
            383,
        )
        .unwrap();
        let a72 = PerfDomainModel::from_operating_points(
            &points(&[(600, 820), (1000, 900), (1200, 1000)]),
            450,
            1024,
        )
        .unwrap();
        let short = |m: &PerfDomainModel| -> Vec<(u64, u64, u64, u64)> { rows(m) };
        assert_eq!(
            short(&a53),
            [
                (450_000, 42_361, 181, 2_340),
                (800_000, 90_720, 322, 2_817),
                (950_000, 133_000, 383, 3_472),
            ]
        );
        assert_eq!(
            short(&a72),
            [
                (600_000, 181_548, 512, 3_545),
                (1_000_000, 364_500, 853, 4_273),
                (1_200_000, 540_000, 1_024, 5_273),
            ]
        );
    }

    /// §5.2's worked vector: Juno r0's LITTLE domain with CPU utils
    /// [100, 50, 0, 0]; a task of util 150 placed on CPU 0 makes max_util
    /// (100 + 150) × 1.25 = 312 (the 700 MHz state, cost 2162) and sum_util
    /// 300: 648,600; without it 125 (450 MHz, cost 1794) and 150: 269,100; the
    /// delta is 379,500.
    #[test]
    fn the_worked_energy_vector() {
        let a53 = PerfDomainModel::from_operating_points(
            &points(&[(450, 820), (575, 850), (700, 900), (775, 950), (850, 1000)]),
            140,
            446,
        )
        .unwrap();
        let with = a53.cpu_energy(312, 300, 446);
        let without = a53.cpu_energy(125, 150, 446);
        assert_eq!((with, without, with - without), (648_600, 269_100, 379_500));
        assert_eq!(a53.cpu_energy(0, 0, 446), 0);
    }

    /// A state that costs no less than a faster one is inefficient, and the
    /// efficient choice skips it. By hand, C = 100, capacity 1000 at 600 MHz:
    /// - 500 MHz, 1100 mV: P = 100 × 1100² × 500 / 10^6 = 60,500; perf 833;
    ///   cost 726;
    /// - 600 MHz, 1000 mV: P = 60,000; perf 1000; cost 600.
    #[test]
    fn a_state_dearer_than_a_faster_one_is_inefficient() {
        let model =
            PerfDomainModel::from_operating_points(&points(&[(500, 1100), (600, 1000)]), 100, 1000)
                .unwrap();
        assert_eq!(
            rows(&model),
            [(500_000, 60_500, 833, 726), (600_000, 60_000, 1000, 600)]
        );
        assert!(model.states[0].inefficient && !model.states[1].inefficient);
        assert_eq!(model.efficient_state(100, true).frequency, 600_000);
        assert_eq!(model.efficient_state(100, false).frequency, 500_000);
    }

    /// Linux's refusals, each naming the state.
    #[test]
    fn malformed_tables_are_refused() {
        let refused = |table: &[(u64, u64)], c: u32| {
            PerfDomainModel::from_operating_points(&points(table), c, 1024).unwrap_err()
        };
        assert_eq!(refused(&[], 100), EnergyModelError::Empty);
        assert_eq!(refused(&[(500, 900)], 0), EnergyModelError::NoCoefficient);
        assert_eq!(
            refused(&[(500, 900), (500, 950)], 100),
            EnergyModelError::FrequencyNotIncreasing { index: 1 }
        );
        // 1 µW/MHz/V² at 1 mV and 1 MHz: 0 µW.
        assert_eq!(
            refused(&[(1, 1)], 1),
            EnergyModelError::Power { index: 0, power: 0 }
        );
        // 10,000 µW/MHz/V² at 3 V and 1 GHz: 90 W, above 64 W.
        assert_eq!(
            refused(&[(1000, 3000)], 10_000),
            EnergyModelError::Power {
                index: 0,
                power: 90_000_000
            }
        );
        assert_eq!(
            EnergyModelError::Power {
                index: 0,
                power: 90_000_000
            }
            .to_string(),
            "state 0: power 90000000 uW is outside 1..=64000000"
        );
    }
}
