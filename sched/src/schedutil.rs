//! schedutil's frequency choice (docs/linux-sched-reference.md §6.1, §3.4):
//! the performance a CPU needs from its utilization and uclamp bounds, the
//! lowest operating point that gives it, a shared policy's maximum over its
//! CPUs, and the rate limit (§6.2). Pure functions over plain numbers, so
//! the kernel and the simulator pick the same frequencies.

use crate::task::Nanoseconds;

/// Which governor sets a performance domain's frequency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governor {
    /// schedutil: from the utilization (§6.1).
    Schedutil,
    /// The highest frequency, always.
    Performance,
    /// The lowest frequency, always.
    Powersave,
}

impl Governor {
    /// The governor `governor=` names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "schedutil" => Some(Governor::Schedutil),
            "performance" => Some(Governor::Performance),
            "powersave" => Some(Governor::Powersave),
            _ => None,
        }
    }

    /// The name `governor=` takes.
    pub fn name(self) -> &'static str {
        match self {
            Governor::Schedutil => "schedutil",
            Governor::Performance => "performance",
            Governor::Powersave => "powersave",
        }
    }
}

/// Where the scheduler calls the governor (`cpufreq_update_util`, §6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateSites {
    /// Linux's: whenever the root run queue's PELT signals changed (a
    /// decay across a 1,024 µs period, attach, detach), and at the tick.
    Pelt,
    /// The 2023 proposal's: at each context switch and at the tick.
    ContextSwitch,
}

impl UpdateSites {
    /// The sites `cpufreq_update=` names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "pelt" => Some(UpdateSites::Pelt),
            "switch" => Some(UpdateSites::ContextSwitch),
            _ => None,
        }
    }

    /// The name `cpufreq_update=` takes.
    pub fn name(self) -> &'static str {
        match self {
            UpdateSites::Pelt => "pelt",
            UpdateSites::ContextSwitch => "switch",
        }
    }
}

/// `map_util_perf` (v6.8+): the utilization with schedutil's 25 % headroom.
pub fn map_util_perf(util: u64) -> u64 {
    util + (util >> 2)
}

/// `sugov_effective_cpu_perf` (v6.8+, §3.4): the performance to ask for a
/// CPU whose utilization is `actual`, between the floor `min` (uclamp_min,
/// without headroom) and the cap `max` (uclamp_max, a hard limit).
pub fn effective_cpu_perf(actual: u64, min: u64, max: u64) -> u64 {
    if actual >= max {
        return max;
    }
    let actual = map_util_perf(actual);
    min.max(actual.min(max))
}

/// `sugov_get_util` (v6.8+, §6.1 and §3.4): the performance a CPU asks for.
///
/// - `cpu_util_cfs_boost`: the root run queue's `max(util_avg, runnable_avg,
///   util_est)` (runnable boosting, util_est), at most the CPU's capacity;
/// - `effective_cpu_util`'s bounds: the floor is the run queue's uclamp_min
///   (`uclamp` = `Some([min, max])`) or, with uclamp unused (`None`) and an
///   RT task runnable, the whole capacity; the cap is uclamp_max, at most the
///   capacity (Fairway tracks no IRQ, RT or deadline utilization to add);
/// - [`effective_cpu_perf`] between the two.
pub fn cpu_perf(
    signals: &crate::run_queue::RunQueueSignals,
    capacity: u64,
    uclamp: Option<[u64; 2]>,
    rt_runnable: bool,
) -> u64 {
    let util = signals
        .util_avg
        .max(signals.runnable_avg)
        .max(signals.util_est)
        .min(capacity);
    let (min, max) = match uclamp {
        Some([min, max]) => (min, max.min(capacity)),
        None if rt_runnable => (capacity, capacity),
        None => (0, capacity),
    };
    effective_cpu_perf(util, min, max)
}

/// `get_next_freq` with frequency invariance (§6.1): the frequency that
/// gives `perf` on a CPU of capacity `capacity` at `fmax` (`fmax × perf /
/// capacity`), resolved to the lowest of `frequencies` (increasing) at or
/// above it (`CPUFREQ_RELATION_L`), else the highest. Returns its index.
pub fn next_frequency(perf: u64, capacity: u64, frequencies: &[u64]) -> usize {
    let Some(&fmax) = frequencies.last() else {
        return 0;
    };
    let wanted = fmax.saturating_mul(perf) / capacity.max(1);
    frequencies
        .iter()
        .position(|&f| f >= wanted)
        .unwrap_or(frequencies.len() - 1)
}

/// The index a governor chooses for a performance domain whose CPUs need
/// `perfs` (each from [`effective_cpu_perf`]): a shared policy takes the
/// maximum over its CPUs (§6.1).
pub fn policy_frequency(
    governor: Governor,
    perfs: impl IntoIterator<Item = u64>,
    capacity: u64,
    frequencies: &[u64],
) -> usize {
    match governor {
        Governor::Performance => frequencies.len().saturating_sub(1),
        Governor::Powersave => 0,
        Governor::Schedutil => {
            let perf = perfs.into_iter().max().unwrap_or(0);
            next_frequency(perf, capacity, frequencies)
        }
    }
}

/// `cpufreq_policy_transition_delay_us` as schedutil's default `rate_limit_us`
/// (§6.2, v6.8/6.9): the board's transition latency × 1000 capped at 2 ms,
/// the latency itself when it is longer than 2 ms, 1000 µs when the board
/// gives none. In ns.
pub fn default_rate_limit(transition_latency: Nanoseconds) -> Nanoseconds {
    const MS: Nanoseconds = 1_000_000;
    let latency_us = transition_latency / 1000;
    if latency_us == 0 {
        return MS;
    }
    if transition_latency > 2 * MS {
        return transition_latency;
    }
    (latency_us * 1000).min(2 * 1000) * 1000
}

/// `sugov_should_update_freq`: a new frequency may be chosen when the limits
/// changed or `rate_limit` has passed since the last change.
pub fn should_update(
    now: Nanoseconds,
    last_update: Nanoseconds,
    rate_limit: Nanoseconds,
    limits_changed: bool,
) -> bool {
    limits_changed || now.saturating_sub(last_update) >= rate_limit
}

#[cfg(test)]
mod tests {
    use super::*;

    const A53: [u64; 5] = [450_000, 575_000, 700_000, 775_000, 850_000];
    const A57: [u64; 5] = [450_000, 625_000, 800_000, 950_000, 1_100_000];

    /// §9's vectors (v6.8+, frequency-invariant, Juno r0's OPPs in kHz): the
    /// frequency chosen for each utilization, without uclamp (min 0, max
    /// 1024).
    #[test]
    fn juno_r0_vectors() {
        let chosen = |table: &[u64], capacity: u64, util: u64| {
            table[next_frequency(effective_cpu_perf(util, 0, 1024), capacity, table)]
        };
        for (util, khz) in [
            (50, 450_000),
            (100, 450_000),
            (200, 575_000),
            (300, 775_000),
            (350, 850_000),
            (400, 850_000),
            (446, 850_000),
        ] {
            assert_eq!(chosen(&A53, 446, util), khz, "A53 util {util}");
        }
        for (util, khz) in [
            (100, 450_000),
            (300, 450_000),
            (500, 800_000),
            (700, 950_000),
            (800, 1_100_000),
            (900, 1_100_000),
            (1024, 1_100_000),
        ] {
            assert_eq!(chosen(&A57, 1024, util), khz, "A57 util {util}");
        }
        // §9's raw requests: util 350 on the A53: perf 437, 832,847 kHz.
        assert_eq!(map_util_perf(350), 437);
        assert_eq!(850_000 * 437 / 446, 832_847);
    }

    /// §3.4: uclamp_min is a floor without headroom, uclamp_max a hard cap;
    /// a utilization at or above the cap asks for the cap.
    #[test]
    fn uclamp_bounds_the_request() {
        assert_eq!(effective_cpu_perf(100, 0, 1024), 125);
        assert_eq!(effective_cpu_perf(100, 300, 1024), 300, "the floor");
        assert_eq!(effective_cpu_perf(600, 0, 512), 512, "at the cap");
        assert_eq!(effective_cpu_perf(500, 0, 512), 512, "625 capped");
        assert_eq!(effective_cpu_perf(400, 0, 1024), 500);
    }

    /// The CPU's request: boosted utilization with headroom, bounded by
    /// uclamp, or the whole capacity for RT without uclamp.
    #[test]
    fn a_cpus_request() {
        use crate::run_queue::RunQueueSignals;
        let signals = |util_avg, runnable_avg, util_est| RunQueueSignals {
            nr_running: 1,
            util_avg,
            load_avg: 0,
            runnable_avg,
            util_est,
        };
        assert_eq!(cpu_perf(&signals(300, 200, 100), 1024, None, false), 375);
        assert_eq!(
            cpu_perf(&signals(300, 400, 100), 1024, None, false),
            500,
            "runnable boost"
        );
        assert_eq!(
            cpu_perf(&signals(100, 0, 320), 1024, None, false),
            400,
            "util_est"
        );
        assert_eq!(
            cpu_perf(&signals(600, 0, 0), 446, None, false),
            446,
            "at most the capacity"
        );
        assert_eq!(
            cpu_perf(&signals(0, 0, 0), 446, None, true),
            446,
            "RT without uclamp"
        );
        assert_eq!(
            cpu_perf(&signals(0, 0, 0), 1024, Some([0, 1024]), true),
            0,
            "RT with uclamp"
        );
        assert_eq!(
            cpu_perf(&signals(100, 0, 0), 1024, Some([300, 1024]), false),
            300
        );
        assert_eq!(
            cpu_perf(&signals(700, 0, 0), 1024, Some([0, 512]), false),
            512
        );
    }

    /// A shared policy takes its CPUs' maximum; performance and powersave
    /// ignore the utilization.
    #[test]
    fn a_shared_policy_takes_the_maximum() {
        let perfs = [100, 300, 0, 50].map(|u| effective_cpu_perf(u, 0, 1024));
        assert_eq!(
            A53[policy_frequency(Governor::Schedutil, perfs, 446, &A53)],
            775_000,
            "util 300 rules: 375 -> 714,686 kHz -> 775 MHz"
        );
        assert_eq!(policy_frequency(Governor::Performance, perfs, 446, &A53), 4);
        assert_eq!(policy_frequency(Governor::Powersave, perfs, 446, &A53), 0);
    }

    /// §6.2: the default rate limit from the transition latency, and the
    /// limit itself.
    #[test]
    fn the_rate_limit() {
        const US: u64 = 1000;
        assert_eq!(default_rate_limit(0), 1000 * US, "no latency: 1000 us");
        assert_eq!(default_rate_limit(US), 1000 * US, "1 us x 1000");
        assert_eq!(default_rate_limit(500 * US), 2000 * US, "capped at 2 ms");
        assert_eq!(
            default_rate_limit(2500 * US),
            2500 * US,
            "above 2 ms: as is"
        );
        assert!(!should_update(1_500 * US, 1_000 * US, 1_000 * US, false));
        assert!(should_update(2_000 * US, 1_000 * US, 1_000 * US, false));
        assert!(should_update(1_001 * US, 1_000 * US, 1_000 * US, true));
    }
}
