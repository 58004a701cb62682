//! The words of a command line: each a known `key=value`, given once, read
//! as a number in its range, a flag, an address or a blob; the option keys
//! Fairway knows.

use super::{BootOptionError, LoadedBlob, Problem};

/// The option keys Fairway knows.
pub(super) const KEYS: [&str; 38] = [
    "sched",
    "sched_feat",
    "hz",
    "hrtick",
    "skew_tick",
    "slice_us",
    "uclamp",
    "balance",
    "bw_timer",
    "bw_seed",
    "cfs_bandwidth",
    "governor",
    "cpufreq_update",
    "sched_energy_aware",
    "eas_overutilized",
    "tick_seed",
    "icount",
    "trace_records",
    "explain",
    "dtb",
    "dtb_size",
    "workload",
    "scenario",
    "scenario_size",
    "trace_switches",
    "record_core",
    "util_sample_us",
    "util_warmup_ms",
    "rtapp_log_rows",
    "loops",
    "pinned",
    "depth",
    "quota_us",
    "groups",
    "fds",
    "power_off",
    "semihosting",
    "psci",
];

/// The words of a command line as `(key, value, word)`, each key known and given
/// once; `values[i]` is the word of `KEYS[i]`.
pub(super) struct Words<'a> {
    values: [Option<(&'a str, &'a str)>; KEYS.len()],
}

impl<'a> Words<'a> {
    pub(super) fn split(line: &'a str) -> Result<Self, BootOptionError<'a>> {
        let mut values = [None; KEYS.len()];
        for word in line.split_ascii_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                return Err(error(word, Problem::NotKeyValue));
            };
            let Some(index) = KEYS.iter().position(|k| *k == key) else {
                return Err(error(word, Problem::UnknownOption));
            };
            if values[index].is_some() {
                return Err(error(word, Problem::GivenTwice));
            }
            values[index] = Some((word, value));
        }
        Ok(Words { values })
    }

    pub(super) fn get(&self, key: &str) -> Option<(&'a str, &'a str)> {
        let index = KEYS.iter().position(|k| *k == key)?;
        self.values[index]
    }

    pub(super) fn number(
        &self,
        key: &str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, BootOptionError<'a>> {
        let Some((word, value)) = self.get(key) else {
            return Ok(default);
        };
        // Digits only: `u64::from_str` would also take a leading `+`.
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error(word, Problem::NotANumber));
        }
        match value.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(error(word, Problem::OutOfRange { min, max })),
        }
    }

    pub(super) fn flag(&self, key: &str, default: bool) -> Result<bool, BootOptionError<'a>> {
        match self.get(key) {
            None => Ok(default),
            Some((_, "0")) => Ok(false),
            Some((_, "1")) => Ok(true),
            Some((word, _)) => Err(error(word, Problem::NotOneOf("0, 1"))),
        }
    }

    pub(super) fn address(&self, key: &str) -> Result<Option<u64>, BootOptionError<'a>> {
        let Some((word, value)) = self.get(key) else {
            return Ok(None);
        };
        let digits = value.strip_prefix("0x").unwrap_or("");
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(error(word, Problem::NotANumber));
        }
        u64::from_str_radix(digits, 16).map(Some).map_err(|_| {
            error(
                word,
                Problem::OutOfRange {
                    min: 0,
                    max: u64::MAX,
                },
            )
        })
    }

    /// A blob's `key=0xADDRESS` and `size_key=BYTES`, both or neither.
    pub(super) fn blob(
        &self,
        key: &'static str,
        size_key: &'static str,
    ) -> Result<Option<LoadedBlob>, BootOptionError<'a>> {
        let address = self.address(key)?;
        let size = match self.get(size_key) {
            Some(_) => Some(self.number(size_key, 0, 1, u64::from(u32::MAX))?),
            None => None,
        };
        match (address, size) {
            (Some(address), Some(size)) => Ok(Some(LoadedBlob { address, size })),
            (None, None) => Ok(None),
            (Some(_), None) => Err(error(
                self.get(key).map_or(key, |(w, _)| w),
                Problem::Missing(size_key),
            )),
            (None, Some(_)) => Err(error(
                self.get(size_key).map_or(size_key, |(w, _)| w),
                Problem::Missing(key),
            )),
        }
    }

    /// Refuses `keys` that are present, as options of `belongs_to`, not of `chosen`.
    pub(super) fn refuse(
        &self,
        keys: &[&str],
        belongs_to: &'static str,
        chosen: &'static str,
    ) -> Result<(), BootOptionError<'a>> {
        match keys.iter().find_map(|k| self.get(k)) {
            Some((word, _)) => Err(error(word, Problem::OtherWorkload { belongs_to, chosen })),
            None => Ok(()),
        }
    }
}

/// The error for `word`: `problem`.
pub(super) fn error(word: &str, problem: Problem) -> BootOptionError<'_> {
    BootOptionError { word, problem }
}
