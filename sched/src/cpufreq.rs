//! A performance domain's frequency (a cpufreq policy) and its energy meter:
//! the operating point its CPUs run at, which the governor chooses
//! ([`crate::schedutil`], docs/linux-sched-reference.md §6.1) within the rate
//! limit and which takes effect after the board's transition latency (§6.2);
//! and the busy time each CPU spent at each operating point, which with the
//! energy model's power per state (§5.1) gives the energy.
//!
//! The policy decides and the mechanism carries out, as elsewhere in the
//! core: [`FrequencyDomain::request`] returns the change it wants and when it
//! is due, and the kernel (a timer) or the simulator (an event) calls
//! [`FrequencyDomain::apply`] at that instant with each CPU's busy time so
//! far, so that the meter splits the busy time exactly at the change.
//!
//! ```text
//!   request(cpu, perf, now) --rate limit--> policy max --RELATION_L--> OPP k
//!        '-> Some(FrequencyChange { index: k, at: now + transition latency })
//!   apply(k, at, busy_ns) : busy since the last change -> meter[cpu][old OPP]
//! ```

use alloc::vec;
use alloc::vec::Vec;

use crate::schedutil::{Governor, policy_frequency, should_update};
use crate::task::Nanoseconds;

/// A change of operating point the governor asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrequencyChange {
    /// The new operating point, an index into the domain's frequencies.
    pub index: usize,
    /// When it takes effect: the request's time plus the transition latency.
    pub at: Nanoseconds,
}

/// Why a domain cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DomainError {
    /// No operating point.
    NoFrequency,
    /// The frequencies do not increase strictly.
    FrequencyNotIncreasing,
    /// The power table's length differs from the frequencies'.
    PowerTable,
    /// No CPU, or more than 64.
    Cpus,
}

/// What a domain is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSpec {
    /// The operating points' frequencies, increasing, in kHz.
    pub frequencies: Vec<u64>,
    /// The energy model's power of one busy CPU at each operating point, in
    /// µW (§5.1); zeros for a domain without a model.
    pub power: Vec<u64>,
    /// The power of one idle CPU of the cluster, in µW (0 unless the board
    /// gives one).
    pub idle_power: u64,
    /// The original capacity of the domain's CPUs (§7.1).
    pub capacity: u64,
    /// How many CPUs the domain has.
    pub cpus: usize,
    /// The governor.
    pub governor: Governor,
    /// schedutil's `rate_limit_us`, in ns.
    pub rate_limit: Nanoseconds,
    /// The board's transition latency (`clock-latency-ns`), in ns.
    pub transition_latency: Nanoseconds,
}

/// One performance domain's frequency state and meter.
#[derive(Clone, Debug)]
pub struct FrequencyDomain {
    spec: DomainSpec,
    /// The operating point in effect.
    current: usize,
    /// A change asked for and not yet in effect.
    pending: Option<FrequencyChange>,
    /// `last_freq_update_time`: when the governor last asked for a change.
    last_change_request: Option<Nanoseconds>,
    /// Each CPU's last performance request (a shared policy takes the
    /// maximum, §6.1).
    requests: Vec<u64>,
    meter: EnergyMeter,
}

/// The energy meter of one domain: busy and idle time per CPU and operating
/// point, residency and changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnergyMeter {
    /// When the meter was last brought up to date.
    since: Nanoseconds,
    /// Each CPU's busy time counter at `since`.
    busy_seen: Vec<Nanoseconds>,
    /// Busy time per CPU and operating point (`busy[cpu][opp]`).
    pub busy: Vec<Vec<Nanoseconds>>,
    /// Idle time per CPU.
    pub idle: Vec<Nanoseconds>,
    /// The domain's time at each operating point.
    pub residency: Vec<Nanoseconds>,
    /// Changes of operating point carried out.
    pub changes: u64,
    /// Frequency spikes: changes that raise the domain to its highest
    /// operating point (the seed experiment's count, §5.6; docs/eas.md).
    pub spikes: u64,
    /// Requests the scheduler made (governor calls, rate-limited or not).
    pub governor_calls: u64,
}

impl FrequencyDomain {
    /// A domain at its initial operating point: the highest, except under
    /// powersave (Linux starts a policy at the frequency the firmware left,
    /// and Fairway's boards leave the highest). `busy` is each CPU's busy
    /// time counter now.
    pub fn new(
        spec: DomainSpec,
        now: Nanoseconds,
        busy: &[Nanoseconds],
    ) -> Result<Self, DomainError> {
        let opps = spec.frequencies.len();
        if opps == 0 {
            return Err(DomainError::NoFrequency);
        }
        if spec.frequencies.windows(2).any(|w| w[1] <= w[0]) {
            return Err(DomainError::FrequencyNotIncreasing);
        }
        if spec.power.len() != opps {
            return Err(DomainError::PowerTable);
        }
        if spec.cpus == 0 || spec.cpus > 64 || busy.len() != spec.cpus {
            return Err(DomainError::Cpus);
        }
        let current = match spec.governor {
            Governor::Powersave => 0,
            Governor::Performance | Governor::Schedutil => opps - 1,
        };
        let meter = EnergyMeter {
            since: now,
            busy_seen: busy.to_vec(),
            busy: vec![vec![0; opps]; spec.cpus],
            idle: vec![0; spec.cpus],
            residency: vec![0; opps],
            changes: 0,
            spikes: 0,
            governor_calls: 0,
        };
        Ok(FrequencyDomain {
            requests: vec![0; spec.cpus],
            spec,
            current,
            pending: None,
            last_change_request: None,
            meter,
        })
    }

    /// The domain's parameters.
    pub fn spec(&self) -> &DomainSpec {
        &self.spec
    }

    /// The operating point in effect (an index into the frequencies).
    pub fn current(&self) -> usize {
        self.current
    }

    /// The frequency in effect, in kHz.
    pub fn frequency(&self) -> u64 {
        self.spec.frequencies[self.current]
    }

    /// `arch_scale_freq_capacity` (§2.3, §7.1): `cur_freq × 1024 / max_freq`.
    pub fn frequency_scale(&self) -> u32 {
        let fmax = self.spec.frequencies[self.spec.frequencies.len() - 1];
        (self.frequency() * 1024 / fmax) as u32
    }

    /// The change asked for and not yet in effect.
    pub fn pending(&self) -> Option<FrequencyChange> {
        self.pending
    }

    /// The meter (up to its last update: see [`FrequencyDomain::update_meter`]).
    pub fn meter(&self) -> &EnergyMeter {
        &self.meter
    }

    /// A CPU of the domain (`cpu`, counted within the domain) asks for
    /// performance `perf` (`sugov_effective_cpu_perf`, §3.4) at `now`: the
    /// governor's new operating point when it differs from the one in effect
    /// (or already asked for) and the rate limit allows a change (§6.2).
    pub fn request(&mut self, cpu: usize, perf: u64, now: Nanoseconds) -> Option<FrequencyChange> {
        self.meter.governor_calls += 1;
        if let Some(slot) = self.requests.get_mut(cpu) {
            *slot = perf;
        }
        if let Some(last) = self.last_change_request
            && !should_update(now, last, self.spec.rate_limit, false)
        {
            return None;
        }
        let index = policy_frequency(
            self.spec.governor,
            self.requests.iter().copied(),
            self.spec.capacity,
            &self.spec.frequencies,
        );
        let target = self.pending.map_or(self.current, |p| p.index);
        if index == target {
            return None;
        }
        let change = FrequencyChange {
            index,
            at: now + self.spec.transition_latency,
        };
        self.pending = Some(change);
        self.last_change_request = Some(now);
        Some(change)
    }

    /// Carries out `change` at its time, `change.at`; `busy` is each CPU's
    /// busy time counter then. A change that is no longer the pending one
    /// (a later request replaced it) is ignored.
    pub fn apply(&mut self, change: FrequencyChange, busy: &[Nanoseconds]) -> bool {
        if self.pending != Some(change) {
            return false;
        }
        self.update_meter(change.at, busy);
        self.pending = None;
        if change.index != self.current {
            if change.index == self.spec.frequencies.len() - 1 {
                self.meter.spikes += 1;
            }
            self.current = change.index;
            self.meter.changes += 1;
        }
        true
    }

    /// Brings the meter up to `now`: each CPU's busy time since the last
    /// update (from its counter `busy`) at the operating point in effect,
    /// the rest of the interval idle.
    pub fn update_meter(&mut self, now: Nanoseconds, busy: &[Nanoseconds]) {
        let meter = &mut self.meter;
        let elapsed = now.saturating_sub(meter.since);
        for (cpu, &counter) in busy.iter().enumerate().take(meter.busy_seen.len()) {
            let delta = counter.saturating_sub(meter.busy_seen[cpu]).min(elapsed);
            meter.busy[cpu][self.current] += delta;
            meter.idle[cpu] += elapsed - delta;
            meter.busy_seen[cpu] = counter;
        }
        meter.residency[self.current] += elapsed;
        meter.since = meter.since.max(now);
    }

    /// Empties the meter and starts it again at `now` (a run's window), with
    /// each CPU's busy time counter `busy` then.
    pub fn restart_meter(&mut self, now: Nanoseconds, busy: &[Nanoseconds]) {
        let meter = &mut self.meter;
        meter.since = now;
        meter.busy_seen = busy.to_vec();
        meter.busy.iter_mut().for_each(|per_opp| per_opp.fill(0));
        meter.idle.fill(0);
        meter.residency.fill(0);
        meter.changes = 0;
        meter.spikes = 0;
        meter.governor_calls = 0;
    }

    /// The energy the meter has counted, in nJ: each CPU's busy time at each
    /// operating point times that point's power, plus its idle time times
    /// the idle power (µW × ns = 10^-6 nJ).
    pub fn energy_nanojoules(&self) -> u64 {
        let meter = &self.meter;
        let mut microwatt_ns: u128 = 0;
        for (cpu, per_opp) in meter.busy.iter().enumerate() {
            for (opp, &ns) in per_opp.iter().enumerate() {
                microwatt_ns += u128::from(ns) * u128::from(self.spec.power[opp]);
            }
            microwatt_ns += u128::from(meter.idle[cpu]) * u128::from(self.spec.idle_power);
        }
        (microwatt_ns / 1_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanoseconds = 1_000_000;

    /// Juno r0's LITTLE domain (§7.2): OPPs in kHz, power per state in µW.
    fn juno_r0_little(governor: Governor, latency: Nanoseconds) -> DomainSpec {
        DomainSpec {
            frequencies: vec![450_000, 575_000, 700_000, 775_000, 850_000],
            power: vec![42_361, 58_161, 79_380, 97_921, 119_000],
            idle_power: 0,
            capacity: 446,
            cpus: 4,
            governor,
            rate_limit: MS,
            transition_latency: latency,
        }
    }

    /// The meter's energy for a fixed workload at a fixed OPP is the hand
    /// computation: CPU 0 busy 10 ms and CPU 1 busy 5 ms at 850 MHz (119,000
    /// µW) over 20 ms: 119,000 µW × 15 ms = 1,785 µJ.
    #[test]
    fn fixed_opp_energy_is_power_times_busy_time() {
        let mut domain =
            FrequencyDomain::new(juno_r0_little(Governor::Performance, 0), 0, &[0; 4]).unwrap();
        assert_eq!(domain.frequency(), 850_000);
        domain.update_meter(20 * MS, &[10 * MS, 5 * MS, 0, 0]);
        assert_eq!(domain.energy_nanojoules(), 1_785_000);
        assert_eq!(domain.meter().busy[0][4], 10 * MS);
        assert_eq!(domain.meter().idle[1], 15 * MS);
        assert_eq!(domain.meter().residency[4], 20 * MS);
        assert_eq!(domain.frequency_scale(), 1024);
        // Restarted at 20 ms: CPU 2 busy 1 ms more, nothing else.
        domain.restart_meter(20 * MS, &[10 * MS, 5 * MS, 0, 0]);
        domain.update_meter(22 * MS, &[10 * MS, 5 * MS, MS, 0]);
        assert_eq!(domain.energy_nanojoules(), 119_000);
        assert_eq!(domain.meter().residency[4], 2 * MS);
    }

    /// An idle power counts each CPU's idle time: 4 CPUs over 20 ms, CPU 0
    /// busy 10 ms at 850 MHz (119,000 µW), 70 ms idle in all at 5,000 µW:
    /// 1,190,000 + 350,000 nJ.
    #[test]
    fn idle_power_counts_idle_time() {
        let mut spec = juno_r0_little(Governor::Performance, 0);
        spec.idle_power = 5_000;
        let mut domain = FrequencyDomain::new(spec, 0, &[0; 4]).unwrap();
        domain.update_meter(20 * MS, &[10 * MS, 0, 0, 0]);
        assert_eq!(domain.meter().idle.iter().sum::<u64>(), 70 * MS);
        assert_eq!(domain.energy_nanojoules(), 1_190_000 + 350_000);
    }

    /// A change splits the busy time at its instant: CPU 0 busy throughout,
    /// 10 ms at 850 MHz then 10 ms at 450 MHz: (119,000 + 42,361) µW × 10 ms
    /// = 1,613,610 nJ; the scale at 450 MHz is 450 × 1024 / 850 = 542.
    #[test]
    fn a_change_splits_the_busy_time() {
        let mut domain =
            FrequencyDomain::new(juno_r0_little(Governor::Schedutil, 0), 0, &[0; 4]).unwrap();
        let change = domain
            .request(0, 100, 10 * MS)
            .expect("util 100 wants 450 MHz");
        assert_eq!(
            change,
            FrequencyChange {
                index: 0,
                at: 10 * MS
            }
        );
        assert!(domain.apply(change, &[10 * MS, 0, 0, 0]));
        domain.update_meter(20 * MS, &[20 * MS, 0, 0, 0]);
        assert_eq!(domain.energy_nanojoules(), 1_613_610);
        assert_eq!(domain.meter().changes, 1);
        assert_eq!(domain.frequency_scale(), 542);
        assert_eq!(domain.meter().residency[0], 10 * MS);
    }

    /// A spike is a change up to the highest operating point: from 850 MHz
    /// (the initial point) down to 450 MHz is none; back up to 850 MHz
    /// (performance 446 of 446) is one; 575 MHz after it (250 of 446: 476 MHz,
    /// the next point up) is none.
    #[test]
    fn a_spike_is_a_change_up_to_the_highest_point() {
        let mut domain =
            FrequencyDomain::new(juno_r0_little(Governor::Schedutil, 0), 0, &[0; 4]).unwrap();
        let mut ask = |perf, now| {
            let change = domain.request(0, perf, now).expect("a change");
            assert!(domain.apply(change, &[0; 4]));
            (domain.frequency(), domain.meter().spikes)
        };
        assert_eq!(ask(100, 10 * MS), (450_000, 0));
        assert_eq!(ask(446, 20 * MS), (850_000, 1));
        assert_eq!(ask(250, 30 * MS), (575_000, 1));
        assert_eq!(ask(446, 40 * MS), (850_000, 2));
    }

    /// §6.2: no new request within the rate limit of the last change; the
    /// limit counts from the change asked for, not from every request.
    #[test]
    fn the_rate_limit_holds() {
        let mut domain =
            FrequencyDomain::new(juno_r0_little(Governor::Schedutil, 0), 0, &[0; 4]).unwrap();
        let first = domain.request(0, 100, 5 * MS).unwrap();
        assert!(domain.apply(first, &[0; 4]));
        assert_eq!(domain.request(0, 446, 5 * MS + MS / 2), None, "within 1 ms");
        let second = domain.request(0, 446, 6 * MS).expect("1 ms later");
        assert_eq!(second.index, 4);
        // The same target again is no change.
        assert!(domain.apply(second, &[0; 4]));
        assert_eq!(domain.request(0, 446, 9 * MS), None);
    }

    /// A shared policy takes its CPUs' maximum (§6.1): CPU 2 asks for 375
    /// (util 300 with headroom) while the others ask for little: 775 MHz.
    #[test]
    fn a_shared_policy_takes_the_maximum() {
        let mut domain =
            FrequencyDomain::new(juno_r0_little(Governor::Schedutil, 0), 0, &[0; 4]).unwrap();
        assert_eq!(domain.request(0, 10, 0).map(|c| c.index), Some(0));
        let change = domain.request(2, 375, 2 * MS).unwrap();
        assert_eq!(domain.spec().frequencies[change.index], 775_000);
    }

    /// The transition latency delays the change; until it is carried out the
    /// old operating point stays in effect, and a superseded change is
    /// ignored.
    #[test]
    fn the_transition_latency_delays_the_change() {
        let mut domain =
            FrequencyDomain::new(juno_r0_little(Governor::Schedutil, 500_000), 0, &[0; 4]).unwrap();
        let change = domain.request(0, 100, 0).unwrap();
        assert_eq!(change.at, 500_000);
        assert_eq!(domain.current(), 4, "not yet");
        assert_eq!(domain.pending(), Some(change));
        let stale = FrequencyChange { index: 2, at: 1 };
        assert!(!domain.apply(stale, &[0; 4]));
        assert!(domain.apply(change, &[0; 4]));
        assert_eq!(domain.current(), 0);
    }

    /// performance and powersave ignore the utilization.
    #[test]
    fn performance_and_powersave_hold_their_ends() {
        let mut high =
            FrequencyDomain::new(juno_r0_little(Governor::Performance, 0), 0, &[0; 4]).unwrap();
        assert_eq!(high.request(0, 0, 10 * MS), None);
        assert_eq!(high.current(), 4);
        let mut low =
            FrequencyDomain::new(juno_r0_little(Governor::Powersave, 0), 0, &[0; 4]).unwrap();
        assert_eq!(low.request(0, 1024, 10 * MS), None);
        assert_eq!(low.frequency(), 450_000);
    }

    /// Malformed domains are refused.
    #[test]
    fn malformed_domains_are_refused() {
        let mut spec = juno_r0_little(Governor::Schedutil, 0);
        spec.frequencies[2] = 575_000;
        assert_eq!(
            FrequencyDomain::new(spec, 0, &[0; 4]).err(),
            Some(DomainError::FrequencyNotIncreasing)
        );
        let mut spec = juno_r0_little(Governor::Schedutil, 0);
        spec.power.pop();
        assert_eq!(
            FrequencyDomain::new(spec, 0, &[0; 4]).err(),
            Some(DomainError::PowerTable)
        );
        let spec = juno_r0_little(Governor::Schedutil, 0);
        assert_eq!(
            FrequencyDomain::new(spec, 0, &[0; 3]).err(),
            Some(DomainError::Cpus)
        );
    }
}
