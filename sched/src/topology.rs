//! CPU topology: per-CPU capacities, clusters, and the two scheduling-domain
//! levels (cluster, whole system) that wake-up placement and load balancing walk.
//!
//! ```text
//!   System level (groups = clusters)     e.g. Juno r0, facts §7.2
//!   +--------------------------------------------------+
//!   |  cluster 0: cpu0 cpu3 cpu4 cpu5 (A53, cap 446)   |  <- Cluster level
//!   |  cluster 1: cpu1 cpu2          (A57, cap 1024)   |     (groups = single CPUs)
//!   +--------------------------------------------------+
//! ```
//!
//! Clusters come from the device tree's `cpu-map` and stand in for Linux's LLC
//! (`SD_SHARE_LLC`, the MC level); the system level is Linux's PKG/DIE level.
//! Capacities are normalised so that the biggest CPU is 1024 (§7.1).

use crate::task::{CpuId, CpuMask, MAX_CPUS};

pub use crate::uclamp::fits_capacity;

/// `SCHED_CAPACITY_SCALE` (§9): the capacity of the biggest CPU.
pub const SCHED_CAPACITY_SCALE: u32 = 1024;

/// `capacity_greater(c1, c2)`: `c1 * 1024 > c2 * 1078`, i.e. `c1` is about 5 %
/// bigger (§5.5, §9).
pub const fn capacity_greater(c1: u64, c2: u64) -> bool {
    c1 * 1024 > c2 * 1078
}

/// One CPU as the board describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuDescription {
    /// `arch_scale_cpu_capacity`, 1..=1024 (already normalised, §7.1).
    pub capacity: u32,
    /// The cluster (`cpu-map` clusterN) the CPU belongs to, below [`MAX_CPUS`].
    pub cluster: u8,
}

/// A board description the topology refuses, naming the field and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// No CPU was described.
    NoCpus,
    /// More CPUs than a [`CpuMask`] holds.
    TooManyCpus {
        /// CPUs described.
        count: usize,
    },
    /// `capacity` of `cpu` is outside 1..=1024.
    CapacityOutOfRange {
        /// The CPU.
        cpu: u16,
        /// The value given.
        value: u32,
    },
    /// `cluster` of `cpu` is not below [`MAX_CPUS`].
    ClusterOutOfRange {
        /// The CPU.
        cpu: u16,
        /// The value given.
        value: u8,
    },
    /// The per-CPU input slices differ in length.
    LengthMismatch {
        /// The field whose length differs.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The expected length.
        expected: usize,
    },
    /// A CPU's `capacity-dmips-mhz` or maximum frequency is zero.
    ZeroRawCapacity {
        /// The CPU.
        cpu: u16,
    },
}

/// `arch_topology.c`'s capacity normalisation (§7.1): `raw = dmips * freq_max`,
/// `capacity = (raw << 10) / max(raw)`. When only some CPUs give
/// `capacity-dmips-mhz` the property is ignored and every CPU gets 1024.
pub fn normalize_capacities(
    dmips_mhz: &[Option<u32>],
    max_frequency_khz: &[u32],
    out: &mut [u32],
) -> Result<(), TopologyError> {
    let n = dmips_mhz.len();
    for (field, len) in [
        ("max_frequency_khz", max_frequency_khz.len()),
        ("out", out.len()),
    ] {
        if len != n {
            return Err(TopologyError::LengthMismatch {
                field,
                len,
                expected: n,
            });
        }
    }
    if dmips_mhz.iter().any(Option::is_none) {
        out.fill(SCHED_CAPACITY_SCALE);
        return Ok(());
    }
    let mut max_raw = 0u64;
    for (cpu, (dmips, freq)) in dmips_mhz.iter().zip(max_frequency_khz).enumerate() {
        let raw = u64::from(dmips.unwrap_or(0)) * u64::from(*freq);
        if raw == 0 {
            return Err(TopologyError::ZeroRawCapacity { cpu: cpu as u16 });
        }
        max_raw = max_raw.max(raw);
    }
    for ((dmips, freq), slot) in dmips_mhz.iter().zip(max_frequency_khz).zip(out.iter_mut()) {
        let raw = u64::from(dmips.unwrap_or(0)) * u64::from(*freq);
        *slot = ((raw << 10) / max_raw).max(1) as u32;
    }
    Ok(())
}

/// The two domain levels Fairway builds (Linux's MC and PKG levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DomainLevel {
    /// The CPUs of one cluster; groups are single CPUs.
    Cluster = 0,
    /// All CPUs; groups are clusters.
    System = 1,
}

impl DomainLevel {
    /// Both levels, bottom-up (the order `for_each_domain` walks).
    pub const ALL: [DomainLevel; 2] = [DomainLevel::Cluster, DomainLevel::System];
}

/// One CPU's view of one scheduling domain (`struct sched_domain`), with the
/// defaults `sd_init` gives (busy_factor 16 and imbalance_pct 117 since v5.10,
/// min/max interval = 1x/2x the span weight in ms; see Vincent Guittot,
/// "sched/fair: Reduce busy load balance interval", 2020).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedDomain {
    /// Which level.
    pub level: DomainLevel,
    /// The CPUs this domain balances between.
    pub span: CpuMask,
    /// Number of CPUs in `span`.
    pub weight: u32,
    /// Imbalance threshold in percent (117: 17 % above counts as imbalanced).
    pub imbalance_pct: u64,
    /// The balance interval is multiplied by this when the CPU is busy.
    pub busy_factor: u32,
    /// Minimum balance interval in ms (`sd_weight`).
    pub min_interval_ms: u32,
    /// Maximum balance interval in ms (`2 * sd_weight`).
    pub max_interval_ms: u32,
    /// Failed balance attempts tolerated before cache-hot tasks are moved.
    pub cache_nice_tries: u32,
    /// `SD_SHARE_LLC`: the CPUs share a cache (the cluster level).
    pub share_cache: bool,
    /// `SD_ASYM_CPUCAPACITY`: the span holds CPUs of different capacities.
    pub asym_capacity: bool,
    /// The child level has `SD_PREFER_SIBLING`: spread tasks between groups.
    /// Cleared below an asymmetric domain (do not spread over unequal CPUs).
    pub prefer_sibling: bool,
}

/// Capacities and clusters of every CPU; built once at boot from the device tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    nr_cpus: u16,
    capacity: [u16; MAX_CPUS],
    cluster: [u8; MAX_CPUS],
    cluster_masks: [CpuMask; MAX_CPUS],
    nr_clusters: u16,
    asymmetric: bool,
    /// Each CPU's domain at each level ([`DomainLevel`] as the index), built
    /// once by [`Topology::new`]: wake-up placement and load balancing ask for
    /// them at every decision (computing one from the masks took 86
    /// instructions of each cross-CPU pipe round trip).
    domains: [[Option<SchedDomain>; 2]; MAX_CPUS],
}

impl Topology {
    /// A topology for `cpus` (logical CPU `i` is `cpus[i]`).
    pub fn new(cpus: &[CpuDescription]) -> Result<Self, TopologyError> {
        if cpus.is_empty() {
            return Err(TopologyError::NoCpus);
        }
        if cpus.len() > MAX_CPUS {
            return Err(TopologyError::TooManyCpus { count: cpus.len() });
        }
        let mut topology = Topology {
            nr_cpus: cpus.len() as u16,
            capacity: [0; MAX_CPUS],
            cluster: [0; MAX_CPUS],
            cluster_masks: [CpuMask(0); MAX_CPUS],
            nr_clusters: 0,
            asymmetric: false,
            domains: [[None; 2]; MAX_CPUS],
        };
        for (index, description) in cpus.iter().enumerate() {
            let cpu = index as u16;
            if !(1..=SCHED_CAPACITY_SCALE).contains(&description.capacity) {
                return Err(TopologyError::CapacityOutOfRange {
                    cpu,
                    value: description.capacity,
                });
            }
            if usize::from(description.cluster) >= MAX_CPUS {
                return Err(TopologyError::ClusterOutOfRange {
                    cpu,
                    value: description.cluster,
                });
            }
            topology.capacity[index] = description.capacity as u16;
            topology.cluster[index] = description.cluster;
            let mask = &mut topology.cluster_masks[usize::from(description.cluster)];
            if mask.0 == 0 {
                topology.nr_clusters += 1;
            }
            mask.0 |= 1 << index;
            topology.asymmetric |= description.capacity != cpus[0].capacity;
        }
        for index in 0..cpus.len() {
            for level in DomainLevel::ALL {
                topology.domains[index][level as usize] =
                    topology.build_domain(CpuId(index as u16), level);
            }
        }
        Ok(topology)
    }

    /// `n` identical CPUs of capacity 1024, `per_cluster` to a cluster.
    pub fn symmetric(n: usize, per_cluster: usize) -> Result<Self, TopologyError> {
        if n > MAX_CPUS {
            return Err(TopologyError::TooManyCpus { count: n });
        }
        let mut cpus = [CpuDescription {
            capacity: SCHED_CAPACITY_SCALE,
            cluster: 0,
        }; MAX_CPUS];
        let per_cluster = per_cluster.max(1);
        for (i, cpu) in cpus.iter_mut().enumerate() {
            cpu.cluster = (i / per_cluster).min(MAX_CPUS - 1) as u8;
        }
        Topology::new(&cpus[..n])
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        usize::from(self.nr_cpus)
    }

    /// Every CPU.
    pub fn all_cpus(&self) -> CpuMask {
        CpuMask(if self.nr_cpus as usize >= MAX_CPUS {
            u64::MAX
        } else {
            (1u64 << self.nr_cpus) - 1
        })
    }

    /// Whether `cpu` exists.
    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu.0 < self.nr_cpus
    }

    /// `arch_scale_cpu_capacity(cpu)` (capacity_orig). `cpu` must exist.
    pub fn capacity_orig(&self, cpu: CpuId) -> u64 {
        u64::from(self.capacity[cpu.index()])
    }

    /// The cluster id of `cpu`.
    pub fn cluster(&self, cpu: CpuId) -> u8 {
        self.cluster[cpu.index()]
    }

    /// The CPUs sharing `cpu`'s cluster (its LLC, `sd_llc` span).
    pub fn cluster_mask(&self, cpu: CpuId) -> CpuMask {
        self.cluster_masks[usize::from(self.cluster(cpu))]
    }

    /// `cpus_share_cache(a, b)`.
    pub fn share_cache(&self, a: CpuId, b: CpuId) -> bool {
        self.cluster(a) == self.cluster(b)
    }

    /// Number of clusters.
    pub fn nr_clusters(&self) -> usize {
        usize::from(self.nr_clusters)
    }

    /// Whether CPUs of different capacities exist (`sched_asym_cpucap_active`).
    pub fn is_asymmetric(&self) -> bool {
        self.asymmetric
    }

    /// The largest capacity among the CPUs in `mask` (0 if none):
    /// `p->max_allowed_capacity` when `mask` is a task's affinity (§5.5).
    pub fn max_capacity_in(&self, mask: CpuMask) -> u64 {
        self.cpus_in(mask)
            .map(|cpu| self.capacity_orig(cpu))
            .max()
            .unwrap_or(0)
    }

    /// The existing CPUs of `mask`, in increasing order (one step per CPU in
    /// the mask, not per CPU of the system).
    pub fn cpus_in(&self, mask: CpuMask) -> impl Iterator<Item = CpuId> + use<> {
        let mut bits = mask.0 & self.all_cpus().0;
        core::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let cpu = bits.trailing_zeros() as u16;
            bits &= bits - 1;
            Some(CpuId(cpu))
        })
    }

    /// The cluster masks (the groups of the system level), each once.
    pub fn clusters(&self) -> impl Iterator<Item = CpuMask> + '_ {
        self.cluster_masks.iter().copied().filter(|m| m.0 != 0)
    }

    /// `cpu`'s domain at `level`, or `None` when that level is degenerate (a
    /// one-CPU cluster, or a system of one cluster), as Linux drops domains
    /// whose span equals their child's or that have a single group.
    pub fn domain(&self, cpu: CpuId, level: DomainLevel) -> Option<SchedDomain> {
        if !self.contains(cpu) {
            return None;
        }
        self.domains[cpu.index()][level as usize]
    }

    /// [`Topology::domain`] computed from the CPU masks (`sd_init`, at
    /// construction).
    fn build_domain(&self, cpu: CpuId, level: DomainLevel) -> Option<SchedDomain> {
        let cluster = self.cluster_mask(cpu);
        let span = match level {
            DomainLevel::Cluster if cluster.0.count_ones() > 1 => cluster,
            DomainLevel::System if self.nr_clusters > 1 => self.all_cpus(),
            _ => return None,
        };
        let weight = span.0.count_ones();
        let first = self.capacity_orig(self.cpus_in(span).next()?);
        let asym_capacity = self.cpus_in(span).any(|c| self.capacity_orig(c) != first);
        let prefer_sibling = level == DomainLevel::System
            && !asym_capacity
            && self.build_domain(cpu, DomainLevel::Cluster).is_some();
        Some(SchedDomain {
            level,
            span,
            weight,
            imbalance_pct: 117,
            busy_factor: 16,
            min_interval_ms: weight,
            max_interval_ms: 2 * weight,
            cache_nice_tries: 1,
            share_cache: level == DomainLevel::Cluster,
            asym_capacity,
            prefer_sibling,
        })
    }

    /// The CPUs of `mask` from `first` upwards, then from CPU 0 up to `first`
    /// (Linux's `for_each_cpu_wrap(cpu, mask, first)`).
    pub fn cpus_in_wrapped(
        &self,
        mask: CpuMask,
        first: CpuId,
    ) -> impl Iterator<Item = CpuId> + use<> {
        let from = if usize::from(first.0) >= MAX_CPUS {
            0
        } else {
            u64::MAX << first.0
        };
        self.cpus_in(CpuMask(mask.0 & from))
            .chain(self.cpus_in(CpuMask(mask.0 & !from)))
    }

    /// The groups of `cpu`'s `domain` (single CPUs at the cluster level,
    /// clusters at the system level), in the order of that CPU's group list
    /// `sd->groups`, calling `each` with each group's mask.
    ///
    /// Linux's `build_sched_groups(sd, cpu)` walks the domain's span with
    /// `for_each_cpu_wrap` starting at `cpu` and makes a group of the child
    /// domain of each CPU not yet covered, so the list starts at the local
    /// group and goes on with the CPUs after `cpu`, wrapping around: CPU 2 of
    /// a 4-CPU cluster sees `{2} {3} {0} {1}`. `update_sd_lb_stats` walks the
    /// list in that order, and `update_sd_pick_busiest` keeps the earlier of
    /// two equally busy groups, so the order decides ties: each CPU prefers
    /// the sources that follow it.
    pub fn for_each_group(&self, domain: &SchedDomain, cpu: CpuId, mut each: impl FnMut(CpuMask)) {
        let mut covered = 0u64;
        for next in self.cpus_in_wrapped(domain.span, cpu) {
            if covered & (1 << next.0) != 0 {
                continue;
            }
            let group = self.group_of(domain, next);
            covered |= group.0;
            each(group);
        }
    }

    /// The group of `domain` that holds `cpu` (the local group).
    pub fn group_of(&self, domain: &SchedDomain, cpu: CpuId) -> CpuMask {
        match domain.level {
            DomainLevel::Cluster => CpuMask::only(cpu),
            DomainLevel::System => self.cluster_mask(cpu),
        }
    }

    /// The lowest domain of `cpu` whose span holds every capacity in the
    /// system (`sd_asym_cpucapacity`, `SD_ASYM_CPUCAPACITY_FULL`), if asymmetric.
    pub fn asym_capacity_domain(&self, cpu: CpuId) -> Option<SchedDomain> {
        if !self.asymmetric {
            return None;
        }
        DomainLevel::ALL
            .into_iter()
            .filter_map(|level| self.domain(cpu, level))
            .find(|d| d.asym_capacity)
    }
}

/// Topologies the crate's tests share.
#[cfg(test)]
pub(crate) mod test_boards {
    use super::{CpuDescription, Topology};

    /// Juno r0 in Linux's logical order `[L b b L L L]` (§7.2): 446 x4, 1024 x2.
    pub(crate) fn juno_r0() -> Topology {
        let little = CpuDescription {
            capacity: 446,
            cluster: 0,
        };
        let big = CpuDescription {
            capacity: 1024,
            cluster: 1,
        };
        Topology::new(&[little, big, big, little, little, little]).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    use super::test_boards::juno_r0;

    #[test]
    fn juno_r0_capacities_normalise_to_446_and_1024() {
        // §7.2: A57 dmips 1024 @ 1100 MHz, A53 dmips 578 @ 850 MHz -> 1024, 446.
        let dmips = [Some(578), Some(1024), Some(1024), Some(578)];
        let freq = [850_000, 1_100_000, 1_100_000, 850_000];
        let mut out = [0; 4];
        normalize_capacities(&dmips, &freq, &mut out).unwrap();
        assert_eq!(out, [446, 1024, 1024, 446]);
        // §7.3: Juno r2 A53 485 @ 950, A72 1024 @ 1200 -> 383.
        let mut out = [0; 2];
        normalize_capacities(&[Some(485), Some(1024)], &[950_000, 1_200_000], &mut out).unwrap();
        assert_eq!(out, [383, 1024]);
        // §7.1: a CPU without the property -> all 1024.
        normalize_capacities(&[Some(485), None], &[950_000, 1_200_000], &mut out).unwrap();
        assert_eq!(out, [1024, 1024]);
    }

    #[test]
    fn bad_descriptions_are_typed_errors() {
        let bad = CpuDescription {
            capacity: 1025,
            cluster: 0,
        };
        assert_eq!(
            Topology::new(&[bad]),
            Err(TopologyError::CapacityOutOfRange {
                cpu: 0,
                value: 1025
            })
        );
        assert_eq!(Topology::new(&[]), Err(TopologyError::NoCpus));
        let mut out = [0; 1];
        assert_eq!(
            normalize_capacities(&[Some(1), Some(1)], &[1, 1], &mut out),
            Err(TopologyError::LengthMismatch {
                field: "out",
                len: 1,
                expected: 2
            })
        );
    }

    #[test]
    fn capacity_greater_is_about_five_percent() {
        // §5.5: c1 * 1024 > c2 * 1078. 1078/1024 = 1.0527: 1024 vs 972 -> 1048576 > 1047816.
        assert!(capacity_greater(1024, 972));
        assert!(!capacity_greater(1024, 973));
        assert!(capacity_greater(1024, 446));
        assert!(!capacity_greater(446, 1024));
    }

    #[test]
    fn domains_of_juno_and_of_a_symmetric_board() {
        let juno = juno_r0();
        assert!(juno.is_asymmetric());
        let little = juno.domain(CpuId(0), DomainLevel::Cluster).unwrap();
        assert_eq!(little.span, CpuMask(0b111001)); // 0x39, §7.2
        assert!(!little.asym_capacity && little.share_cache);
        let system = juno.domain(CpuId(0), DomainLevel::System).unwrap();
        assert!(system.asym_capacity && !system.prefer_sibling);
        assert_eq!((system.min_interval_ms, system.max_interval_ms), (6, 12));
        assert_eq!(
            juno.asym_capacity_domain(CpuId(3)).unwrap().level,
            DomainLevel::System
        );
        assert_eq!(juno.max_capacity_in(CpuMask(0b111001)), 446);

        let smp = Topology::symmetric(8, 4).unwrap();
        assert!(!smp.is_asymmetric());
        assert!(
            smp.domain(CpuId(5), DomainLevel::System)
                .unwrap()
                .prefer_sibling
        );
        assert_eq!(smp.cluster_mask(CpuId(5)), CpuMask(0xf0));
        // One cluster: no system level; one CPU: no level at all.
        let one = Topology::symmetric(4, 4).unwrap();
        assert!(one.domain(CpuId(0), DomainLevel::System).is_none());
        let single = Topology::symmetric(1, 1).unwrap();
        assert!(single.domain(CpuId(0), DomainLevel::Cluster).is_none());
    }

    /// `build_sched_groups`' `for_each_cpu_wrap` from the domain's own CPU:
    /// the list starts at the local group and wraps around.
    #[test]
    fn group_lists_start_at_the_local_group_and_wrap() {
        let groups = |topology: &Topology, cpu: u16, level| {
            let domain = topology.domain(CpuId(cpu), level).unwrap();
            let mut masks = Vec::new();
            topology.for_each_group(&domain, CpuId(cpu), |m| masks.push(m.0));
            masks
        };
        let one = Topology::symmetric(4, 4).unwrap();
        assert_eq!(groups(&one, 0, DomainLevel::Cluster), [1, 2, 4, 8]);
        assert_eq!(groups(&one, 2, DomainLevel::Cluster), [4, 8, 1, 2]);
        assert_eq!(groups(&one, 3, DomainLevel::Cluster), [8, 1, 2, 4]);
        // Two clusters of four: CPU 5's system level starts at its cluster.
        let two = Topology::symmetric(8, 4).unwrap();
        assert_eq!(groups(&two, 5, DomainLevel::System), [0xf0, 0x0f]);
        assert_eq!(groups(&two, 1, DomainLevel::System), [0x0f, 0xf0]);
        assert_eq!(
            groups(&two, 5, DomainLevel::Cluster),
            [0x20, 0x40, 0x80, 0x10]
        );
        // Juno r0 [L b b L L L]: from CPU 2 the walk meets 2 (big), then 3
        // (little); from CPU 4, little first, then 1 (big).
        let juno = juno_r0();
        assert_eq!(groups(&juno, 2, DomainLevel::System), [0b000110, 0b111001]);
        assert_eq!(groups(&juno, 4, DomainLevel::System), [0b111001, 0b000110]);
        assert_eq!(
            groups(&juno, 4, DomainLevel::Cluster),
            [0x10, 0x20, 0x01, 0x08]
        );
    }
}
