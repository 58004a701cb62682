//! Scheduling entities (Linux's `struct sched_entity`): a task, or a task group's
//! representative on its parent group's run queue, and the fair tunables.

use crate::pelt::SchedAvg;
use crate::pelt::attach::init_entity_runnable_average;
use crate::task::{GroupId, Nanoseconds, Policy};
use crate::weight::LoadWeight;

/// What an entity stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityKind {
    /// A task of the given fair policy.
    Task(FairPolicy),
    /// The group entity of the group whose run queue it owns (`se->my_q`).
    Group(GroupId),
}

/// The three fair policies (§1.4 "Additional rules").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairPolicy {
    /// `SCHED_NORMAL`.
    Normal,
    /// `SCHED_BATCH`: never preempts on wake-up.
    Batch,
    /// `SCHED_IDLE`: minimum weight, preempted by any non-idle wakee.
    Idle,
}

impl FairPolicy {
    /// The fair policy and weight of `policy`; RT policies are scheduled here as
    /// nice 0 (the RT class sits above fair and is someone else's).
    pub fn of(policy: Policy) -> (FairPolicy, LoadWeight) {
        match policy {
            Policy::Normal { nice } => (FairPolicy::Normal, LoadWeight::from_nice(nice)),
            Policy::Batch { nice } => (FairPolicy::Batch, LoadWeight::from_nice(nice)),
            Policy::Idle => (FairPolicy::Idle, LoadWeight::idle()),
            Policy::Fifo { .. } | Policy::RoundRobin { .. } => {
                (FairPolicy::Normal, LoadWeight::from_nice(0))
            }
        }
    }
}

/// One entity's state on one CPU.
#[derive(Clone, Copy, Debug)]
pub struct Entity {
    /// Task or group entity.
    pub kind: EntityKind,
    /// Whether the slot is in use.
    pub known: bool,
    /// The weight (scaled) and its inverse (§1.1).
    pub load: LoadWeight,
    /// Virtual runtime (§1.3). For CFS, relative to the queue's min_vruntime
    /// while `relative` is set (between a non-sleep dequeue and the next enqueue).
    pub vruntime: u64,
    /// CFS: `vruntime` is relative to min_vruntime (§1.4 step 5).
    pub relative: bool,
    /// EEVDF virtual deadline (§1.5); relative to vruntime when `rel_deadline`.
    pub deadline: u64,
    /// EEVDF: `deadline` holds `deadline - vruntime` (PLACE_REL_DEADLINE).
    pub rel_deadline: bool,
    /// EEVDF lag `V - vruntime` saved at dequeue (§1.5 "Lag").
    pub vlag: i64,
    /// EEVDF request size in ns (the base slice, §1.5).
    pub slice: Nanoseconds,
    /// A custom slice (`se->custom_slice`, §1.5): kept at every new request.
    /// Never 0 (clamped to at least 0.1 ms), so `None` costs no space.
    pub custom_slice: Option<core::num::NonZeroU64>,
    /// RUN_TO_PARITY: the deadline the slice protection was granted for
    /// (§1.5); the slice is protected while the deadline has not moved. Not
    /// granted or cancelled, it is `deadline + 1`, as Linux keeps it (in
    /// `se->vlag`, `set_protect_slice`/`cancel_protect_slice`): one compare.
    pub protected_deadline: u64,
    /// Whether the entity is queued (running included), delayed ones too.
    pub on_rq: bool,
    /// EEVDF `sched_delayed`: queued but asleep, waiting for its dequeue to
    /// complete at its next pick (`DELAY_DEQUEUE`, §1.5).
    pub delayed: bool,
    /// The group whose run queue this entity is queued on (`cfs_rq_of(se)`).
    pub queue: GroupId,
    /// When the entity last started running or was last charged.
    pub exec_start: Nanoseconds,
    /// Total run time in ns.
    pub sum_exec_runtime: Nanoseconds,
    /// `sum_exec_runtime` when it was last picked (for the CFS tick, §1.4).
    pub prev_sum_exec_runtime: Nanoseconds,
    /// PELT signals (§2.2); a new task starts fully loaded, a group entity
    /// with no load (§2.5).
    pub avg: SchedAvg,
    /// Group entity: `h_nr_running` of its group as of its last PELT update
    /// (`se->runnable_weight`, §2.2 table).
    pub runnable_weight: u32,
}

/// An entity is kept per task per CPU, so its size is most of the run
/// queues' memory (issue 15): the optional fields take no tag of their own.
const _: () = assert!(core::mem::size_of::<Entity>() == 192);

impl Entity {
    /// Whether the slice is protected (RUN_TO_PARITY, §1.5): the deadline it
    /// was granted for has not moved.
    #[inline(always)]
    pub fn slice_protected(&self) -> bool {
        self.protected_deadline == self.deadline
    }

    /// A fresh entity of `kind` queued on `queue`.
    pub fn new(kind: EntityKind, load: LoadWeight, queue: GroupId, slice: Nanoseconds) -> Self {
        Entity {
            kind,
            known: true,
            load,
            vruntime: 0,
            relative: false,
            deadline: 0,
            rel_deadline: false,
            vlag: 0,
            slice,
            custom_slice: None,
            protected_deadline: 1,
            on_rq: false,
            delayed: false,
            queue,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            avg: init_entity_runnable_average(
                load.scaled_down(),
                matches!(kind, EntityKind::Task(_)),
            ),
            runnable_weight: 0,
        }
    }

    /// A free slot.
    pub fn unused() -> Self {
        Entity {
            known: false,
            ..Entity::new(
                EntityKind::Task(FairPolicy::Normal),
                LoadWeight::default(),
                GroupId::ROOT,
                0,
            )
        }
    }

    /// `se_weight()`: the weight scaled down (nice 0 = 1024).
    pub fn weight(&self) -> u64 {
        self.load.scaled_down()
    }

    /// Whether this is a `SCHED_IDLE` task (§1.4).
    pub fn is_idle_policy(&self) -> bool {
        matches!(self.kind, EntityKind::Task(FairPolicy::Idle))
    }
}

/// `1 + ilog2(min(nr_cpus, 8))`: the `SCHED_TUNABLESCALING_LOG` factor (§1.4).
pub const fn tunable_scaling_factor(nr_cpus: u32) -> u64 {
    let n = if nr_cpus == 0 {
        1
    } else if nr_cpus > 8 {
        8
    } else {
        nr_cpus
    };
    1 + (31 - n.leading_zeros()) as u64
}

/// CFS tunables (§1.4), already multiplied by the CPU-count factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsTunables {
    /// `sysctl_sched_latency`.
    pub latency: Nanoseconds,
    /// `sysctl_sched_min_granularity`.
    pub min_granularity: Nanoseconds,
    /// `sysctl_sched_wakeup_granularity`.
    pub wakeup_granularity: Nanoseconds,
    /// `sysctl_sched_idle_min_granularity` (not scaled).
    pub idle_min_granularity: Nanoseconds,
}

impl CfsTunables {
    /// Linux's defaults for a system of `nr_cpus` CPUs: 6 / 0.75 / 1 ms times
    /// `1 + ilog2(min(nr_cpus, 8))`.
    pub const fn for_cpus(nr_cpus: u32) -> Self {
        let factor = tunable_scaling_factor(nr_cpus);
        CfsTunables {
            latency: 6_000_000 * factor,
            min_granularity: 750_000 * factor,
            wakeup_granularity: 1_000_000 * factor,
            idle_min_granularity: 750_000,
        }
    }

    /// `sched_nr_latency = latency / min_granularity` (8 by default).
    pub const fn nr_latency(&self) -> u64 {
        match self.latency.checked_div(self.min_granularity) {
            Some(nr) => nr,
            None => 1,
        }
    }
}

/// EEVDF tunables (§1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EevdfTunables {
    /// `sysctl_sched_base_slice`, already multiplied by the CPU-count factor.
    pub base_slice: Nanoseconds,
    /// `TICK_NSEC`, the floor of the lag clamp (`max(2*slice, TICK_NSEC)`).
    pub tick: Nanoseconds,
    /// `RUN_TO_PARITY` (default on).
    pub run_to_parity: bool,
    /// `PREEMPT_SHORT` (default on).
    pub preempt_short: bool,
    /// `DELAY_DEQUEUE` (v6.12+, default on): an entity that sleeps while not
    /// eligible stays queued, not runnable, until it is picked (§1.5).
    pub delay_dequeue: bool,
    /// `DELAY_ZERO` (default on): a delayed entity leaves or comes back with
    /// its positive lag reset to 0 (§1.5).
    pub delay_zero: bool,
}

impl EevdfTunables {
    /// The v6.15 defaults: base slice 0.70 ms times the factor, for a tick of
    /// `tick` ns (4 ms at HZ=250, 1 ms at HZ=1000).
    pub const fn for_cpus(nr_cpus: u32, tick: Nanoseconds) -> Self {
        EevdfTunables {
            base_slice: 700_000 * tunable_scaling_factor(nr_cpus),
            tick,
            run_to_parity: true,
            preempt_short: true,
            delay_dequeue: true,
            delay_zero: true,
        }
    }

    /// These tunables with the EEVDF switches of `features` (§1.5).
    #[must_use]
    pub const fn with_features(self, features: super::SchedFeatures) -> Self {
        use super::Feature;
        EevdfTunables {
            run_to_parity: features.enabled(Feature::RunToParity),
            preempt_short: features.enabled(Feature::PreemptShort),
            delay_dequeue: features.enabled(Feature::DelayDequeue),
            delay_zero: features.enabled(Feature::DelayZero),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appendix A §5: the base slice for 1, 2, 4, 6, 8, 16 CPUs (v6.15 column).
    #[test]
    fn base_slice_scaling() {
        let expected = [
            (1, 700_000),
            (2, 1_400_000),
            (4, 2_100_000),
            (6, 2_100_000),
            (8, 2_800_000),
            (16, 2_800_000),
        ];
        for (cpus, slice) in expected {
            assert_eq!(EevdfTunables::for_cpus(cpus, 4_000_000).base_slice, slice);
        }
        // §1.4: 24 ms latency on ≥ 8 CPUs, nr_latency 8.
        assert_eq!(CfsTunables::for_cpus(8).latency, 24_000_000);
        assert_eq!(CfsTunables::for_cpus(1).nr_latency(), 8);
    }
}
