//! DVFS and the energy meter in the simulator, carried out as the kernel's
//! `src/scheduling/cpufreq.rs` carries them out (docs/boards.md, "Frequencies and
//! energy"), on the same decisions (`fairway_sched::cpufreq::FrequencyDomain`):
//!
//! - at each CPU's tick the frequency scale in effect goes into its run
//!   queue's PELT, then after the tick the CPU's request goes to its domain;
//! - with `cpufreq_update=pelt`, after a wake-up, a new task or a
//!   `schedule()` that changed the root run queue's PELT signals; with
//!   `switch`, after each `schedule()` that switches tasks;
//! - a change takes effect at once, or after the transition latency as an
//!   event; the work of the domain's running tasks changes pace from that
//!   instant (their completions are planned again), and the meter gets each
//!   CPU's busy time then (exact here: the engine's own accounting).

use fairway_sched::cpufreq::{DomainSpec, FrequencyChange, FrequencyDomain};
use fairway_sched::schedutil::{UpdateSites, cpu_perf};
use fairway_sched::uclamp::ClampId;

use super::{Kind, Simulation};

/// The board's performance domains, for [`super::Config::dvfs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dvfs {
    /// Each domain: its CPUs and its policy's parameters.
    pub domains: Vec<(Vec<usize>, DomainSpec)>,
    /// Each domain's energy model, where the board gives one (§5.1).
    pub models: Vec<Option<fairway_sched::energy::PerfDomainModel>>,
    /// Where the scheduler calls the governor (`cpufreq_update=`).
    pub sites: UpdateSites,
    /// `sched_energy_aware=`: energy-aware placement where the board
    /// allows it (`engine::eas`, §5.3).
    pub energy_aware: bool,
    /// `eas_overutilized=`: energy-aware placement also while overutilized
    /// (the 2024 RFC, §5.6).
    pub eas_overutilized: bool,
}

/// The domains during a run.
pub(super) struct DvfsState {
    pub(super) domains: Vec<(Vec<usize>, FrequencyDomain)>,
    /// Each CPU's domain and its place in it.
    domain_of: Vec<Option<(usize, usize)>>,
    sites: UpdateSites,
}

/// One domain's figures at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainEnergy {
    /// Its CPUs.
    pub cpus: Vec<usize>,
    /// The frequencies, kHz, and the domain's time at each, ns.
    pub residency: Vec<(u64, u64)>,
    /// Governor calls.
    pub governor_calls: u64,
    /// Frequency changes carried out.
    pub changes: u64,
    /// Changes up to the highest operating point (`EnergyMeter::spikes`).
    pub spikes: u64,
    /// Energy, nJ.
    pub energy_nj: u64,
}

impl DvfsState {
    /// The domains at their initial frequencies; `None` without any. Each
    /// CPU's frequency scale is returned for the engine's CPUs.
    pub(super) fn new(dvfs: &Dvfs, nr_cpus: usize) -> Result<(Self, Vec<u32>), String> {
        let mut domain_of = vec![None; nr_cpus];
        let mut scales = vec![1024; nr_cpus];
        let mut domains = Vec::new();
        for (index, (cpus, spec)) in dvfs.domains.iter().enumerate() {
            let policy = FrequencyDomain::new(spec.clone(), 0, &vec![0; cpus.len()])
                .map_err(|e| format!("perf domain {index}: {e:?}"))?;
            for (slot, &cpu) in cpus.iter().enumerate() {
                let entry = domain_of
                    .get_mut(cpu)
                    .ok_or(format!("perf domain {index}: no cpu{cpu}"))?;
                *entry = Some((index, slot));
                scales[cpu] = policy.frequency_scale();
            }
            domains.push((cpus.clone(), policy));
        }
        Ok((
            DvfsState {
                domains,
                domain_of,
                sites: dvfs.sites,
            },
            scales,
        ))
    }
}

impl Simulation<'_> {
    /// `arch_scale_freq_tick`: the scale in effect into `cpu`'s PELT.
    pub(super) fn apply_frequency_scale(&mut self, cpu: usize) {
        if self.dvfs.is_none() {
            return;
        }
        let scale = self.cpus[cpu].capacity.frequency_scale;
        let queue = self.cpus[cpu].core.run_queue_mut();
        let mut capacity = queue.cpu_capacity();
        if capacity.frequency_scale != scale {
            capacity.frequency_scale = scale;
            queue.set_cpu_capacity(capacity);
        }
    }

    /// schedutil's call from a scheduler path (see the module doc); `tick`
    /// calls unconditionally.
    pub(super) fn governor_call(&mut self, cpu: usize, context_switch: bool, tick: bool) {
        let Some(state) = &self.dvfs else { return };
        let sites = state.sites;
        let queue = self.cpus[cpu].core.run_queue_mut();
        let util_changed = queue.take_util_changed();
        let call = tick
            || match sites {
                UpdateSites::Pelt => util_changed,
                UpdateSites::ContextSwitch => context_switch,
            };
        if !call {
            return;
        }
        let queue = self.cpus[cpu].core.run_queue();
        let uclamp = queue.uclamp_enabled().then(|| {
            [
                u64::from(queue.uclamp_value(ClampId::Min)),
                u64::from(queue.uclamp_value(ClampId::Max)),
            ]
        });
        let perf = cpu_perf(
            &queue.signals(),
            u64::from(queue.cpu_capacity().capacity_orig),
            uclamp,
            queue.rt().highest_queued_priority().is_some(),
        );
        let now = self.now;
        let Some(state) = &mut self.dvfs else { return };
        let Some((domain, slot)) = state.domain_of[cpu] else {
            return;
        };
        if let Some(change) = state.domains[domain].1.request(slot, perf, now) {
            if change.at <= now {
                self.apply_frequency_change(domain, change);
            } else {
                self.push(
                    change.at,
                    Kind::FrequencyChange {
                        domain,
                        index: change.index,
                    },
                );
            }
        }
    }

    /// A domain's change falls due (its event, after the transition latency).
    pub(super) fn frequency_change_due(&mut self, domain: usize, index: usize) {
        let pending = self
            .dvfs
            .as_ref()
            .and_then(|state| state.domains[domain].1.pending());
        if let Some(change) = pending.filter(|c| c.index == index && c.at == self.now) {
            self.apply_frequency_change(domain, change);
        }
    }

    fn apply_frequency_change(&mut self, domain: usize, change: FrequencyChange) {
        let cpus = match &self.dvfs {
            Some(state) => state.domains[domain].0.clone(),
            None => return,
        };
        for &cpu in &cpus {
            self.update_cpu(cpu);
        }
        let busy: Vec<u64> = cpus.iter().map(|&c| self.cpus[c].result.busy_ns).collect();
        let Some(state) = &mut self.dvfs else { return };
        let policy = &mut state.domains[domain].1;
        if !policy.apply(change, &busy) {
            return;
        }
        let scale = policy.frequency_scale();
        let khz = policy.frequency();
        // The meter was brought up to now by the change (`apply`).
        let energy = policy.energy_nanojoules();
        self.trace_energy(domain, energy);
        for &cpu in &cpus {
            self.cpus[cpu].capacity.frequency_scale = scale;
            self.arm_completion(cpu);
            self.trace_event(cpu, fairway_trace::Event::CpuFrequency { khz });
        }
        self.explain_frequency(domain, &cpus, khz);
    }

    /// The meters brought up to the end of the run.
    pub(super) fn energy_results(&mut self) -> Vec<DomainEnergy> {
        let now = self.now;
        let busy_of = |cpus: &[usize], engine: &Self| -> Vec<u64> {
            cpus.iter()
                .map(|&c| engine.cpus[c].result.busy_ns)
                .collect()
        };
        let Some(state) = &self.dvfs else {
            return Vec::new();
        };
        let busy: Vec<Vec<u64>> = state
            .domains
            .iter()
            .map(|(cpus, _)| busy_of(cpus, self))
            .collect();
        let Some(state) = &mut self.dvfs else {
            return Vec::new();
        };
        state
            .domains
            .iter_mut()
            .zip(busy)
            .map(|((cpus, policy), busy)| {
                policy.update_meter(now, &busy);
                let meter = policy.meter();
                DomainEnergy {
                    cpus: cpus.clone(),
                    residency: policy
                        .spec()
                        .frequencies
                        .iter()
                        .copied()
                        .zip(meter.residency.iter().copied())
                        .collect(),
                    governor_calls: meter.governor_calls,
                    changes: meter.changes,
                    spikes: meter.spikes,
                    energy_nj: policy.energy_nanojoules(),
                }
            })
            .collect()
    }
}
