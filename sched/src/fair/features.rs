//! Linux's scheduler feature switches (`kernel/sched/features.h`, written at
//! run time through `/sys/kernel/debug/sched/features`) that the fair class
//! implements as switches, so that a variant of CFS or EEVDF is a boot option
//! (`sched_feat=NO_RUN_TO_PARITY,PREEMPT_SHORT`) or a simulator flag of the
//! same name, not a rebuild.
//!
//! The switches and their defaults are the reference's: CFS's `START_DEBIT`
//! and `GENTLE_FAIR_SLEEPERS` (§1.4, "CFS feature defaults"), EEVDF's
//! `RUN_TO_PARITY`, `PREEMPT_SHORT`, `DELAY_DEQUEUE` and `DELAY_ZERO` (§1.5,
//! "EEVDF feature defaults"); every one of them is on by default. `HRTICK` is
//! the `hrtick=` option. Features the fair class follows without a switch
//! (`PLACE_LAG`, `PLACE_DEADLINE_INITIAL`, `WAKEUP_PREEMPTION`, …) are always
//! on, as in Linux's defaults, and `sched_feat=` refuses them by name.
//!
//! As Linux's features file does, a list names each feature to switch on, or
//! `NO_` and the feature to switch it off; features it does not name keep
//! their defaults. The report writes every feature of the policy, with `NO_`
//! before those switched off, as the features file reads.

use core::fmt;

/// A feature switch of the fair class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Feature {
    /// CFS: a new task starts one virtual slice after `min_vruntime` (§1.4).
    StartDebit = 0,
    /// CFS: a waking task's sleeper credit is half of `sched_latency` (§1.4).
    GentleFairSleepers = 1,
    /// EEVDF: the running entity keeps the CPU while its slice is protected
    /// (§1.5).
    RunToParity = 2,
    /// EEVDF: a waking entity with a shorter slice may preempt (§1.5).
    PreemptShort = 3,
    /// EEVDF: an entity that sleeps while not eligible stays queued, not
    /// runnable, until it is picked (§1.5).
    DelayDequeue = 4,
    /// EEVDF: a delayed entity leaves or comes back with its positive lag
    /// reset to 0 (§1.5).
    DelayZero = 5,
}

impl Feature {
    /// Every feature, CFS's then EEVDF's, in the order the report writes them.
    pub const ALL: [Feature; 6] = [
        Feature::StartDebit,
        Feature::GentleFairSleepers,
        Feature::RunToParity,
        Feature::PreemptShort,
        Feature::DelayDequeue,
        Feature::DelayZero,
    ];

    /// The name `features.h` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Feature::StartDebit => "START_DEBIT",
            Feature::GentleFairSleepers => "GENTLE_FAIR_SLEEPERS",
            Feature::RunToParity => "RUN_TO_PARITY",
            Feature::PreemptShort => "PREEMPT_SHORT",
            Feature::DelayDequeue => "DELAY_DEQUEUE",
            Feature::DelayZero => "DELAY_ZERO",
        }
    }

    /// Whether it is a feature of the EEVDF pick (otherwise of CFS's).
    pub const fn of_eevdf(self) -> bool {
        !matches!(self, Feature::StartDebit | Feature::GentleFairSleepers)
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// Which pick's features a list may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureSet {
    /// CFS's: `START_DEBIT`, `GENTLE_FAIR_SLEEPERS`.
    Cfs,
    /// EEVDF's: `RUN_TO_PARITY`, `PREEMPT_SHORT`, `DELAY_DEQUEUE`, `DELAY_ZERO`.
    Eevdf,
}

impl FeatureSet {
    /// Whether `feature` belongs to this set.
    pub const fn has(self, feature: Feature) -> bool {
        feature.of_eevdf() == matches!(self, FeatureSet::Eevdf)
    }

    /// The set's feature names, for an error message.
    pub const fn names(self) -> &'static str {
        match self {
            FeatureSet::Cfs => "START_DEBIT, GENTLE_FAIR_SLEEPERS",
            FeatureSet::Eevdf => "RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO",
        }
    }
}

/// The features in force: a bit per [`Feature`], set when it is on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SchedFeatures(u8);

impl SchedFeatures {
    /// Linux's defaults: every switch on (§1.4, §1.5).
    pub const DEFAULT: SchedFeatures = SchedFeatures(0b11_1111);

    /// Whether `feature` is on.
    pub const fn enabled(self, feature: Feature) -> bool {
        self.0 & feature.bit() != 0
    }

    /// These features with `feature` switched on or off.
    #[must_use]
    pub const fn with(self, feature: Feature, on: bool) -> Self {
        if on {
            SchedFeatures(self.0 | feature.bit())
        } else {
            SchedFeatures(self.0 & !feature.bit())
        }
    }

    /// Applies a comma-separated list of `NAME` and `NO_NAME` items of `set`
    /// to the defaults. An item that is not one of `set`'s features (empty,
    /// unknown, or a feature of the other pick) is returned as the error.
    pub fn parse(list: &str, set: FeatureSet) -> Result<SchedFeatures, &str> {
        let mut features = SchedFeatures::DEFAULT;
        for item in list.split(',') {
            let (name, on) = match item.strip_prefix("NO_") {
                Some(name) => (name, false),
                None => (item, true),
            };
            let feature = Feature::ALL
                .into_iter()
                .find(|f| f.name() == name && set.has(*f))
                .ok_or(item)?;
            features = features.with(feature, on);
        }
        Ok(features)
    }

    /// Writes `set`'s features as the features file reads: each name, with
    /// `NO_` before those switched off, separated by commas.
    pub fn write(self, set: FeatureSet, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for feature in Feature::ALL.into_iter().filter(|f| set.has(*f)) {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if !self.enabled(feature) {
                f.write_str("NO_")?;
            }
            f.write_str(feature.name())?;
        }
        Ok(())
    }
}

/// `set`'s features as [`SchedFeatures::write`] lists them, as a value that
/// displays (the report's and the simulator's summary line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listed(pub SchedFeatures, pub FeatureSet);

impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(self.1, f)
    }
}

impl Default for SchedFeatures {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Debug for SchedFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SchedFeatures(")?;
        let mut first = true;
        for feature in Feature::ALL {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if !self.enabled(feature) {
                f.write_str("NO_")?;
            }
            f.write_str(feature.name())?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::format;
    use std::string::String;

    use super::*;

    fn written(features: SchedFeatures, set: FeatureSet) -> String {
        format!("{}", Listed(features, set))
    }

    /// §1.4 and §1.5: every switch is on by default.
    #[test]
    fn linux_defaults_are_all_on() {
        for feature in Feature::ALL {
            assert!(
                SchedFeatures::DEFAULT.enabled(feature),
                "{}",
                feature.name()
            );
        }
        assert_eq!(
            written(SchedFeatures::DEFAULT, FeatureSet::Eevdf),
            "RUN_TO_PARITY,PREEMPT_SHORT,DELAY_DEQUEUE,DELAY_ZERO"
        );
        assert_eq!(
            written(SchedFeatures::DEFAULT, FeatureSet::Cfs),
            "START_DEBIT,GENTLE_FAIR_SLEEPERS"
        );
    }

    #[test]
    fn a_list_switches_the_features_it_names_and_keeps_the_others() {
        let features = SchedFeatures::parse(
            "NO_RUN_TO_PARITY,PREEMPT_SHORT,NO_DELAY_ZERO",
            FeatureSet::Eevdf,
        )
        .unwrap();
        assert!(!features.enabled(Feature::RunToParity));
        assert!(features.enabled(Feature::PreemptShort));
        assert!(features.enabled(Feature::DelayDequeue));
        assert!(!features.enabled(Feature::DelayZero));
        assert_eq!(
            written(features, FeatureSet::Eevdf),
            "NO_RUN_TO_PARITY,PREEMPT_SHORT,DELAY_DEQUEUE,NO_DELAY_ZERO"
        );
        // The last word for a feature wins, as successive writes to the file do.
        let features = SchedFeatures::parse("NO_START_DEBIT,START_DEBIT", FeatureSet::Cfs).unwrap();
        assert!(features.enabled(Feature::StartDebit));
    }

    #[test]
    fn a_word_that_is_not_a_feature_of_the_pick_is_the_error() {
        for (list, set, bad) in [
            ("NO_RUN_TO_PARITY,FOO", FeatureSet::Eevdf, "FOO"),
            ("START_DEBIT", FeatureSet::Eevdf, "START_DEBIT"),
            ("NO_DELAY_DEQUEUE", FeatureSet::Cfs, "NO_DELAY_DEQUEUE"),
            ("run_to_parity", FeatureSet::Eevdf, "run_to_parity"),
            ("RUN_TO_PARITY,", FeatureSet::Eevdf, ""),
            ("NO_", FeatureSet::Eevdf, "NO_"),
            ("PLACE_LAG", FeatureSet::Eevdf, "PLACE_LAG"),
        ] {
            assert_eq!(SchedFeatures::parse(list, set), Err(bad), "{list}");
        }
    }
}
