//! Linux's scheduler feature switches (`kernel/sched/features.h`, written at
//! run time through `/sys/kernel/debug/sched/features`) that the fair class
//! implements as switches, so that a variant of CFS or EEVDF is a boot option
//! (`sched_feat=NO_RUN_TO_PARITY,PREEMPT_SHORT`) or a simulator flag of the
//! same name, not a rebuild.
//!
//! The switches and their defaults are the reference's: EEVDF's
//! `RUN_TO_PARITY`, `PREEMPT_SHORT`, `DELAY_DEQUEUE` and `DELAY_ZERO` (§1.5,
//! "EEVDF feature defaults"), every one of them on by default. `HRTICK` is
//! the `hrtick=` option. Features the fair class follows without a switch
//! (`PLACE_LAG`, `PLACE_DEADLINE_INITIAL`, `WAKEUP_PREEMPTION`, and CFS's
//! `START_DEBIT` and `GENTLE_FAIR_SLEEPERS`, §1.4) are always on, as in
//! Linux's defaults, and `sched_feat=` refuses them by name. CFS has no
//! switch: two `bool`s more in `CfsTunables` made the compiler copy the CFS
//! pick's tunables less well and cost its pinned sched-pipe round trip 166
//! instructions (4,568 -> 4,734), a price the default run would pay for a
//! variant few ask for.
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
    /// EEVDF: the running entity keeps the CPU while its slice is protected
    /// (§1.5).
    RunToParity = 0,
    /// EEVDF: a waking entity with a shorter slice may preempt (§1.5).
    PreemptShort = 1,
    /// EEVDF: an entity that sleeps while not eligible stays queued, not
    /// runnable, until it is picked (§1.5).
    DelayDequeue = 2,
    /// EEVDF: a delayed entity leaves or comes back with its positive lag
    /// reset to 0 (§1.5).
    DelayZero = 3,
}

impl Feature {
    /// Every feature, in the order the report writes them.
    pub const ALL: [Feature; 4] = [
        Feature::RunToParity,
        Feature::PreemptShort,
        Feature::DelayDequeue,
        Feature::DelayZero,
    ];

    /// The name `features.h` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Feature::RunToParity => "RUN_TO_PARITY",
            Feature::PreemptShort => "PREEMPT_SHORT",
            Feature::DelayDequeue => "DELAY_DEQUEUE",
            Feature::DelayZero => "DELAY_ZERO",
        }
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// Which pick's features a list may name: EEVDF's (the one pick with
/// switches; kept a type so that a pick with switches of its own has a
/// place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureSet {
    /// EEVDF's: `RUN_TO_PARITY`, `PREEMPT_SHORT`, `DELAY_DEQUEUE`, `DELAY_ZERO`.
    Eevdf,
}

impl FeatureSet {
    /// Whether `feature` belongs to this set.
    pub const fn has(self, _feature: Feature) -> bool {
        true
    }

    /// The set's feature names, for an error message.
    pub const fn names(self) -> &'static str {
        "RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO"
    }
}

/// The features in force: a bit per [`Feature`], set when it is on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SchedFeatures(u8);

impl SchedFeatures {
    /// Linux's defaults: every switch on (§1.5).
    pub const DEFAULT: SchedFeatures = SchedFeatures(0b1111);

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

    /// §1.5: every switch is on by default.
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
        let features = SchedFeatures::parse("NO_DELAY_ZERO,DELAY_ZERO", FeatureSet::Eevdf).unwrap();
        assert!(features.enabled(Feature::DelayZero));
    }

    #[test]
    fn a_word_that_is_not_a_feature_of_the_pick_is_the_error() {
        for (list, set, bad) in [
            ("NO_RUN_TO_PARITY,FOO", FeatureSet::Eevdf, "FOO"),
            ("START_DEBIT", FeatureSet::Eevdf, "START_DEBIT"),
            (
                "NO_GENTLE_FAIR_SLEEPERS",
                FeatureSet::Eevdf,
                "NO_GENTLE_FAIR_SLEEPERS",
            ),
            ("run_to_parity", FeatureSet::Eevdf, "run_to_parity"),
            ("RUN_TO_PARITY,", FeatureSet::Eevdf, ""),
            ("NO_", FeatureSet::Eevdf, "NO_"),
            ("PLACE_LAG", FeatureSet::Eevdf, "PLACE_LAG"),
        ] {
            assert_eq!(SchedFeatures::parse(list, set), Err(bad), "{list}");
        }
    }
}
