//! The kernel's trace records as the host reads them: each record's
//! kind and how its fields are used (docs/tracing.md, "The kernel's
//! traces"). The kernel writes them (`src/observe/trace.rs`,
//! `src/observe/explain.rs`) and the runner decodes them
//! (`xtask/src/run/kernel_trace/`) by these numbers, so the two cannot drift
//! apart. A record is `kind cpu time_ns a b value`; a task argument of
//! `u16::MAX` is no task (an idle task, or no waker).

/// What a record is: its number in the `trace-record:` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `sched_switch`: `a` the previous task, `b` the next, `value` the
    /// previous task's state ([`PrevState`]).
    Switch = 0,
    /// `sched_waking`: `a` the task, `b` the waker, `value` the target CPU.
    Waking = 1,
    /// `sched_wakeup`: `a` the task, `value` the CPU it is queued on.
    Wakeup = 2,
    /// `sched_wakeup_new`: `a` the task, `b` its `prio`, `value` the CPU.
    WakeupNew = 3,
    /// `sched_migrate_task`: `a` the task, `b` the CPU it left, `value` the
    /// CPU it joins.
    Migrate = 4,
    /// `cpu_frequency`: `value` kHz.
    CpuFrequency = 5,
    /// `cpu_idle`: `value` the state (0), or `u32::MAX` on leaving idle.
    CpuIdle = 6,
    /// `sched_process_exit`: `a` the task.
    Exit = 7,
    /// Task `a`'s `util_avg`.
    TaskUtilAvg = 8,
    /// Task `a`'s `util_est`.
    TaskUtilEst = 9,
    /// Task `a`'s `load_avg`.
    TaskLoadAvg = 10,
    /// The CPU's root `util_avg`.
    CpuUtil = 11,
    /// The CPU's capacity at its current frequency.
    CpuCapacity = 12,
    /// The CPU's run-queue `uclamp_min`.
    CpuUclampMin = 13,
    /// The CPU's run-queue `uclamp_max`.
    CpuUclampMax = 14,
    /// Performance domain `a`'s energy since the run's start, nJ.
    DomainEnergy = 15,
    /// The root domain's overutilized flag, 0 or 1.
    Overutilized = 16,
    /// Explain mode (`explain.rs`): a pick; `a` the task chosen, `b` the
    /// candidates that follow, `value` 1 under EEVDF, 0 under CFS.
    ExplainPick = 17,
    /// A pick's candidate `a`: `value` its vruntime, `b` bit 0 eligible,
    /// bit 1 the task that was running (or the group above it), bit 2 its
    /// slice protected, bit 3 `a` is a task group's entity, bits 8-15 the
    /// group whose queue it is on (0: the CPU's own).
    ExplainCandidate = 18,
    /// Candidate `a`'s virtual deadline (`b` as the candidate's).
    ExplainDeadline = 19,
    /// Candidate `a`'s lag against its queue's V (an `i64`; `b` as the
    /// candidate's).
    ExplainLag = 20,
    /// A wake-up's placement: task `a`, last on CPU `b`, placed on CPU
    /// `value`; the CPUs' records follow.
    ExplainWake = 21,
    /// CPU `a` as placement saw it: `b` its runnable tasks (bit 15: idle),
    /// `value` its capacity << 32 | its util.
    ExplainPlacement = 22,
    /// A frequency change of domain `a` to `value` kHz; its `b` CPUs'
    /// records follow.
    ExplainFrequency = 23,
    /// CPU `a` of the domain: `value` its capacity_orig << 48 | util_avg << 24
    /// | util_est.
    ExplainDomainCpu = 24,
    /// Before a wake-up's energy estimates: task `a`'s `task_util_est`.
    ExplainTaskUtil = 25,
    /// An energy estimate of domain `a` with the task on CPU `b`
    /// (`u16::MAX`: without it): `value` the energy.
    ExplainEnergy = 26,
    /// The same estimate's `cpu_cap << 48 | max_util << 24 | sum_util`.
    ExplainEnergyUtil = 27,
    /// Task group `a`'s run queue on the CPU: `cfs_rq->throttled`, 0 or 1
    /// (`a` is the kernel's group index; `trace-group:` names it).
    GroupThrottled = 28,
    /// Task group `a`'s run queue on the CPU: `runtime_remaining` (an `i64`).
    GroupRuntimeRemaining = 29,
    /// Task group `a`'s pool: `cfs_b->runtime`.
    GroupRuntime = 30,
    /// Explain mode: group `a`'s run queue on the CPU was throttled
    /// (`value` 1) or unthrottled (0); the five records below follow.
    ExplainThrottle = 31,
    /// The same run queue's `runtime_remaining` (an `i64`).
    ExplainThrottleRemaining = 32,
    /// The pool's runtime then (`u64::MAX`: not known).
    ExplainThrottlePool = 33,
    /// The group's quota (`u64::MAX`: no quota, `max`).
    ExplainThrottleQuota = 34,
    /// The group's period.
    ExplainThrottlePeriod = 35,
    /// The group's burst.
    ExplainThrottleBurst = 36,
    /// Explain mode: a round-robin pick that chose task `a`
    /// (`u16::MAX`: idle) among `b` candidates, each slice `value` ns; the
    /// candidates' records follow in FIFO order, head first.
    ExplainRrPick = 37,
    /// A candidate of a round-robin pick: task `a`; `b` 1 for the task that
    /// was running (put back at the tail), `value` then the time it ran of
    /// its slice, ns.
    ExplainRrCandidate = 38,
    /// Explain mode: a registered policy's pick (`sched=NAME`,
    /// `fairway_sched::policies`) that chose task `a` among `b` candidates;
    /// `value` the policy's place in `REGISTERED` (`PolicyId::index`). The
    /// candidates' records follow as the policy's `explain_pick` noted
    /// them, the chosen one first.
    ExplainPolicyPick = 39,
    /// A candidate of a registered policy's pick: task `a`; `b` bit 0 set
    /// when `value` is the number the policy decided by, bits 8-15 its
    /// label's length in bytes; the label's records follow.
    ExplainPolicyCandidate = 40,
    /// Eight bytes of candidate `a`'s label (UTF-8, the first in the
    /// lowest byte), chunk `b` of the label's `ceil(length / 8)`.
    ExplainPolicyLabel = 41,
}

/// How the previous task left the CPU at a switch (`sched_switch`'s
/// `prev_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PrevState {
    /// Runnable, preempted (`R+`): the kernel does not tell a yield apart.
    Preempted = 0,
    /// Went to sleep (`S`).
    Sleeping = 1,
    /// Exited (`X`).
    Dead = 2,
}

impl Kind {
    /// Every kind, in number order.
    pub const ALL: [Kind; 42] = [
        Kind::Switch,
        Kind::Waking,
        Kind::Wakeup,
        Kind::WakeupNew,
        Kind::Migrate,
        Kind::CpuFrequency,
        Kind::CpuIdle,
        Kind::Exit,
        Kind::TaskUtilAvg,
        Kind::TaskUtilEst,
        Kind::TaskLoadAvg,
        Kind::CpuUtil,
        Kind::CpuCapacity,
        Kind::CpuUclampMin,
        Kind::CpuUclampMax,
        Kind::DomainEnergy,
        Kind::Overutilized,
        Kind::ExplainPick,
        Kind::ExplainCandidate,
        Kind::ExplainDeadline,
        Kind::ExplainLag,
        Kind::ExplainWake,
        Kind::ExplainPlacement,
        Kind::ExplainFrequency,
        Kind::ExplainDomainCpu,
        Kind::ExplainTaskUtil,
        Kind::ExplainEnergy,
        Kind::ExplainEnergyUtil,
        Kind::GroupThrottled,
        Kind::GroupRuntimeRemaining,
        Kind::GroupRuntime,
        Kind::ExplainThrottle,
        Kind::ExplainThrottleRemaining,
        Kind::ExplainThrottlePool,
        Kind::ExplainThrottleQuota,
        Kind::ExplainThrottlePeriod,
        Kind::ExplainThrottleBurst,
        Kind::ExplainRrPick,
        Kind::ExplainRrCandidate,
        Kind::ExplainPolicyPick,
        Kind::ExplainPolicyCandidate,
        Kind::ExplainPolicyLabel,
    ];

    /// The kind numbered `number`.
    pub fn from_number(number: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(number)).copied()
    }

    /// Whether it belongs to explain mode (not to the trace itself).
    pub fn is_explain(self) -> bool {
        (Kind::ExplainPick as u8..=Kind::ExplainEnergyUtil as u8).contains(&(self as u8))
            || self as u8 >= Kind::ExplainThrottle as u8
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn every_kind_is_found_by_its_number() {
        for (number, kind) in Kind::ALL.iter().enumerate() {
            assert_eq!(*kind as u8 as usize, number);
            assert_eq!(Kind::from_number(number as u8), Some(*kind));
        }
        assert_eq!(Kind::from_number(Kind::ALL.len() as u8), None);
    }

    #[test]
    fn group_counters_belong_to_the_trace_and_throttle_records_to_explain() {
        for kind in [
            Kind::GroupThrottled,
            Kind::GroupRuntimeRemaining,
            Kind::GroupRuntime,
            Kind::Overutilized,
        ] {
            assert!(!kind.is_explain(), "{kind:?}");
        }
        for kind in [
            Kind::ExplainPick,
            Kind::ExplainEnergyUtil,
            Kind::ExplainThrottle,
            Kind::ExplainThrottleBurst,
            Kind::ExplainRrPick,
            Kind::ExplainRrCandidate,
            Kind::ExplainPolicyPick,
            Kind::ExplainPolicyCandidate,
            Kind::ExplainPolicyLabel,
        ] {
            assert!(kind.is_explain(), "{kind:?}");
        }
    }
}
