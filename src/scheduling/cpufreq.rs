//! DVFS on the board's performance domains (docs/boards.md, "Frequencies and
//! energy"): one cpufreq policy per OPP table, its governor
//! (`governor=schedutil|performance|powersave`, §6), the frequency in effect
//! published per CPU as `arch_scale_freq_capacity` (§2.3), and the energy
//! meter (§5.1). The decisions are the scheduling core's
//! ([`fairway_sched::cpufreq::FrequencyDomain`], shared with the simulator);
//! this module carries them out: it feeds each CPU's request from its tick,
//! applies a change at once or on a timer after the board's transition
//! latency, and hands the meter each CPU's busy time at the instant of each
//! change.
//!
//! On a board without OPP tables (`qemu-virt`) nothing here runs: every CPU
//! stays at scale 1024.
//!
//! The scheduler's call sites (`cpufreq_update_util`, §6.2) are here too:
//! the wake-up, the switch and the tick hand their run queue to
//! [`governor_call`] and [`cpu_perf_request`], which read what the governor
//! needs from it. The explain records of a frequency change read the CPUs'
//! published load ([`load::snapshot`], below this file), not the balancer.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use fairway_sched::cpufreq::{DomainSpec, FrequencyChange, FrequencyDomain};
use fairway_sched::run_queue::RunQueue;
use fairway_sched::schedutil::{Governor, UpdateSites, default_rate_limit};
use spin::Once;

use super::load;
use super::run_queue::CpuRunQueue;
use crate::board::BoardInfo;
use crate::config::MAX_CPUS;
use crate::observe::explain;
use crate::observe::trace::{self, Kind};
use crate::platform::sync::IrqSpinLock;
use crate::platform::{hrtimer, percpu};
use crate::tasks::{idle_task_id, runtime_ns_on};

/// One domain: its CPUs (kernel numbers) and its policy.
struct Domain {
    cpus: heapless::Vec<usize, MAX_CPUS>,
    policy: IrqSpinLock<FrequencyDomain>,
}

static DOMAINS: Once<Vec<Domain>> = Once::new();
/// `cpufreq_update=`: where the scheduler calls the governor.
static SITES: Once<UpdateSites> = Once::new();
/// Whether any domain exists (the tick's one test on boards without).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Each CPU's domain and its place in it (`u8::MAX`: none).
static CPU_DOMAIN: [(AtomicU8, AtomicU8); MAX_CPUS] =
    [const { (AtomicU8::new(u8::MAX), AtomicU8::new(0)) }; MAX_CPUS];

/// Builds one policy per performance domain of `board`, with the energy
/// model's power per state (zeros for a domain without a model), at the
/// governor's initial frequency. Logs each domain.
pub fn init(board: &BoardInfo, governor: Governor, sites: UpdateSites) {
    SITES.call_once(|| sites);
    let now = crate::arch::timer::now_ns();
    let models = super::energy::models();
    let mut domains = Vec::new();
    for (index, table) in board.perf_domains.iter().enumerate() {
        let mut cpus = heapless::Vec::<usize, MAX_CPUS>::new();
        for (cpu, info) in board.cpus.iter().enumerate() {
            if info.perf_domain == Some(index as u8) {
                let _ = cpus.push(cpu);
            }
        }
        let Some(&first) = cpus.first() else { continue };
        let mask = cpus.iter().fold(0u32, |m, &c| m | 1 << c);
        let power = models
            .iter()
            .find(|(model_cpus, _)| *model_cpus == mask)
            .map_or_else(
                || alloc::vec![0; table.opps.len()],
                |(_, model)| model.states.iter().map(|s| s.power).collect(),
            );
        let latency = u64::from(table.transition_latency_ns);
        let spec = DomainSpec {
            frequencies: table.opps.iter().map(|opp| opp.hz / 1000).collect(),
            power,
            idle_power: u64::from(table.idle_power_uw),
            capacity: u64::from(board.cpus[first].capacity),
            cpus: cpus.len(),
            governor,
            rate_limit: default_rate_limit(latency),
            transition_latency: latency,
        };
        let busy: heapless::Vec<u64, MAX_CPUS> = cpus.iter().map(|&c| busy_ns(c, now)).collect();
        match FrequencyDomain::new(spec, now, &busy) {
            Ok(policy) => {
                for (slot, &cpu) in cpus.iter().enumerate() {
                    CPU_DOMAIN[cpu]
                        .0
                        .store(domains.len() as u8, Ordering::Relaxed);
                    CPU_DOMAIN[cpu].1.store(slot as u8, Ordering::Relaxed);
                    percpu::of(cpu)
                        .frequency_scale
                        .store(policy.frequency_scale(), Ordering::Relaxed);
                }
                defmt::info!(
                    "cpufreq: perf domain {=usize} (cpus {=u32:#x}): {=str}, {=u64} MHz, rate limit {=u64} us, transition latency {=u64} ns, idle power {=u64} uW",
                    index,
                    mask,
                    governor.name(),
                    policy.frequency() / 1000,
                    policy.spec().rate_limit / 1000,
                    latency,
                    policy.spec().idle_power
                );
                domains.push(Domain {
                    cpus,
                    policy: IrqSpinLock::new(policy),
                });
            }
            Err(error) => defmt::warn!(
                "cpufreq: perf domain {=usize}: no policy ({})",
                index,
                defmt::Debug2Format(&error)
            ),
        }
    }
    ACTIVE.store(!domains.is_empty(), Ordering::Release);
    DOMAINS.call_once(|| domains);
}

/// Where the scheduler calls the governor (`cpufreq_update=`).
#[inline]
pub fn update_sites() -> UpdateSites {
    SITES.get().copied().unwrap_or(UpdateSites::Pelt)
}

/// Whether the board has performance domains.
#[inline]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// CPU `cpu`'s busy time counter at `now`: the time it did not run its idle
/// task (the idle task's runtime, with its current stretch if it runs).
/// Read from another CPU, it may lag that CPU's last switch by the
/// switch's own few instructions.
fn busy_ns(cpu: usize, now: u64) -> u64 {
    now.saturating_sub(runtime_ns_on(idle_task_id(cpu), cpu, now))
}

fn busy_of(domain: &Domain, now: u64) -> heapless::Vec<u64, MAX_CPUS> {
    domain.cpus.iter().map(|&c| busy_ns(c, now)).collect()
}

/// CPU `cpu` asks for performance `perf` (`sugov_update_shared`, from its
/// tick): a change the governor makes takes effect now, or after the
/// transition latency on the domain's timer.
pub fn update(cpu: usize, perf: u64, now: u64) {
    let index = CPU_DOMAIN[cpu].0.load(Ordering::Relaxed);
    let Some(domain) = DOMAINS.get().and_then(|d| d.get(usize::from(index))) else {
        return;
    };
    let slot = usize::from(CPU_DOMAIN[cpu].1.load(Ordering::Relaxed));
    let mut policy = domain.policy.lock();
    let Some(change) = policy.request(slot, perf, now) else {
        return;
    };
    if change.at <= now {
        apply(usize::from(index), domain, &mut policy, change);
    } else {
        drop(policy);
        let encoded = usize::from(index) | change.index << 8;
        hrtimer::start(
            hrtimer::cpufreq_timer(usize::from(index)),
            change.at,
            change_due,
            encoded,
        );
    }
}

/// The domain's timer: carries out the change it was armed for, if it is
/// still the one pending (`argument`: the domain, and the OPP << 8).
fn change_due(argument: usize) {
    let Some(domain) = DOMAINS.get().and_then(|d| d.get(argument & 0xff)) else {
        return;
    };
    let mut policy = domain.policy.lock();
    if let Some(change) = policy.pending()
        && change.index == argument >> 8
    {
        apply(argument & 0xff, domain, &mut policy, change);
    }
}

fn apply(index: usize, domain: &Domain, policy: &mut FrequencyDomain, change: FrequencyChange) {
    let busy = busy_of(domain, change.at);
    if policy.apply(change, &busy) {
        publish_scale(domain, policy);
        if explain::explaining() {
            let cpus = domain.cpus.iter().map(|&cpu| {
                let capacity = u64::from(percpu::of(cpu).capacity.load(Ordering::Relaxed));
                (capacity, load::snapshot(cpu))
            });
            explain::frequency(change.at, index, policy.frequency(), cpus);
        }
        if trace::recording() {
            // The meter was brought up to the change (`apply`).
            let energy = policy.energy_nanojoules();
            trace::record(
                change.at,
                domain.cpus[0],
                Kind::DomainEnergy,
                index as u16,
                0,
                energy,
            );
            trace_frequency(domain, policy, change.at);
        }
    }
}

/// `cpu_frequency` for each of `domain`'s CPUs at `now`.
fn trace_frequency(domain: &Domain, policy: &FrequencyDomain, now: u64) {
    for &cpu in &domain.cpus {
        trace::record(now, cpu, Kind::CpuFrequency, 0, 0, policy.frequency());
    }
}

/// Each CPU's frequency at `now` (the start of a traced run: Perfetto's
/// frequency tracks need a first value).
pub fn trace_frequencies(now: u64) {
    for domain in DOMAINS.get().map_or(&[][..], Vec::as_slice) {
        trace_frequency(domain, &domain.policy.lock(), now);
    }
}

/// Starts every domain afresh at now, as boot built it: the governor's
/// initial frequency (the highest under schedutil), its rate limit counted
/// from now, no change pending, the meter at zero. An rt-app run starts so,
/// as the simulator's run starts its domains at time 0: the frequencies the
/// kernel's own boot left behind (its work on CPU 0 before the run) would
/// otherwise set the pace of the run's first periods.
pub fn restart_domains() {
    let now = crate::arch::timer::now_ns();
    for (index, domain) in DOMAINS
        .get()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        hrtimer::cancel(hrtimer::cpufreq_timer(index));
        let busy = busy_of(domain, now);
        let mut policy = domain.policy.lock();
        if let Ok(fresh) = FrequencyDomain::new(policy.spec().clone(), now, &busy) {
            *policy = fresh;
        }
        publish_scale(domain, &policy);
    }
}

/// The frequency scale `policy` is at, for each of `domain`'s CPUs (their
/// work rate, and their run queues' at the next tick).
fn publish_scale(domain: &Domain, policy: &FrequencyDomain) {
    let scale = policy.frequency_scale();
    for &cpu in &domain.cpus {
        percpu::of(cpu)
            .frequency_scale
            .store(scale, Ordering::Relaxed);
    }
}

/// Starts every meter afresh at now (the start of a run's window).
pub fn restart_meters() {
    let now = crate::arch::timer::now_ns();
    for domain in DOMAINS.get().map_or(&[][..], Vec::as_slice) {
        let busy = busy_of(domain, now);
        domain.policy.lock().restart_meter(now, &busy);
    }
}

/// One domain's figures at the end of a run.
pub struct DomainReport {
    /// Its CPUs, a mask.
    pub cpus: u32,
    /// The frequencies, kHz.
    pub frequencies: Vec<u64>,
    /// The domain's time at each frequency, ns.
    pub residency: Vec<u64>,
    /// Each CPU's busy time (summed over the frequencies) and idle time, ns.
    pub busy: Vec<(usize, u64, u64)>,
    /// Frequency changes carried out.
    pub changes: u64,
    /// Changes up to the highest frequency.
    pub spikes: u64,
    /// Governor calls (requests, rate-limited or not).
    pub governor_calls: u64,
    /// Energy, nJ.
    pub energy_nj: u64,
}

/// The domains' figures as report metrics: `energy_nj.pdN`,
/// `governor_calls.pdN`, `freq_changes.pdN`, `freq_spikes.pdN` and the time at each frequency
/// used, `residency_us.pdN.<MHz>mhz`.
pub fn metrics(domains: &[DomainReport]) -> Vec<(alloc::string::String, u64)> {
    let mut metrics = Vec::new();
    for (index, domain) in domains.iter().enumerate() {
        metrics.push((alloc::format!("energy_nj.pd{index}"), domain.energy_nj));
        metrics.push((
            alloc::format!("governor_calls.pd{index}"),
            domain.governor_calls,
        ));
        metrics.push((alloc::format!("freq_changes.pd{index}"), domain.changes));
        metrics.push((alloc::format!("freq_spikes.pd{index}"), domain.spikes));
        for (khz, &ns) in domain.frequencies.iter().zip(&domain.residency) {
            if ns > 0 {
                metrics.push((
                    alloc::format!("residency_us.pd{index}.{}mhz", khz / 1000),
                    ns / 1000,
                ));
            }
        }
    }
    metrics
}

/// Brings every meter up to now and returns the domains' figures since
/// [`restart_meters`] (or boot; empty on a board without domains). While
/// tracing, each domain's energy is recorded at now too: its energy line
/// would otherwise stop at its last frequency change, short of the figure
/// reported.
pub fn report() -> Vec<DomainReport> {
    let now = crate::arch::timer::now_ns();
    let Some(domains) = DOMAINS.get() else {
        return Vec::new();
    };
    domains
        .iter()
        .enumerate()
        .map(|(index, domain)| {
            let mut policy = domain.policy.lock();
            let busy = busy_of(domain, now);
            policy.update_meter(now, &busy);
            trace::record(
                now,
                domain.cpus[0],
                Kind::DomainEnergy,
                index as u16,
                0,
                policy.energy_nanojoules(),
            );
            let meter = policy.meter();
            DomainReport {
                cpus: domain.cpus.iter().fold(0u32, |m, &c| m | 1 << c),
                frequencies: policy.spec().frequencies.clone(),
                residency: meter.residency.clone(),
                busy: domain
                    .cpus
                    .iter()
                    .enumerate()
                    .map(|(slot, &cpu)| (cpu, meter.busy[slot].iter().sum(), meter.idle[slot]))
                    .collect(),
                changes: meter.changes,
                spikes: meter.spikes,
                governor_calls: meter.governor_calls,
                energy_nj: policy.energy_nanojoules(),
            }
        })
        .collect()
}

/// `arch_scale_freq_tick` (§2.3): the frequency scale in effect goes into
/// the run queue's PELT before the tick updates it.
pub fn apply_frequency_scale(cpu: usize, queue: &mut RunQueue) {
    let scale = percpu::of(cpu).frequency_scale.load(Ordering::Relaxed);
    let mut capacity = queue.cpu_capacity();
    if capacity.frequency_scale != scale {
        capacity.frequency_scale = scale;
        queue.set_cpu_capacity(capacity);
    }
}

/// schedutil's call from a scheduler path (`cpufreq_update_util`, §6.2), the
/// run queue locked: with `cpufreq_update=pelt` when the root run queue's
/// PELT signals changed since the last call site (a decay, attach or
/// detach; a migration's is seen at the CPU's next site), with
/// `cpufreq_update=switch` at a context switch.
/// Out of line: its callers test [`active`] first, so that a board
/// without DVFS pays one load and branch per site.
#[inline(never)]
pub fn governor_call(cpu: usize, rq: &mut CpuRunQueue, now: u64, context_switch: bool) {
    let queue = rq.core.run_queue_mut();
    let util_changed = queue.take_util_changed();
    let call = match update_sites() {
        UpdateSites::Pelt => util_changed,
        UpdateSites::ContextSwitch => context_switch,
    };
    if call {
        let perf = cpu_perf_request(queue);
        update(cpu, perf, now);
    }
}

/// The CPU's performance request (`sugov_get_util`, §6.1).
pub fn cpu_perf_request(queue: &RunQueue) -> u64 {
    use fairway_sched::uclamp::ClampId;
    let capacity = queue.cpu_capacity();
    let uclamp = queue.uclamp_enabled().then(|| {
        [
            u64::from(queue.uclamp_value(ClampId::Min)),
            u64::from(queue.uclamp_value(ClampId::Max)),
        ]
    });
    fairway_sched::schedutil::cpu_perf(
        &queue.signals(),
        u64::from(capacity.capacity_orig),
        uclamp,
        queue.rt().highest_queued_priority().is_some(),
    )
}
