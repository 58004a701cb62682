//! Explain mode's records (`explain=N`) in a run's trace lines,
//! decoded into the [`Decision`]s they pack and printed as the simulator
//! prints its own (`fairway_trace::explain`).

use std::collections::BTreeMap;

use fairway_contract::trace::Kind;
use fairway_trace::TaskIndex;
use fairway_trace::explain::{
    self, Candidate, Competitor, DomainCpuView, EnergyView, PlacementView, PolicyCandidate,
    RrCandidate, ThrottleView,
};

use super::{Line, NO_TASK, Parsed, parse};

/// One decision explain mode recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A pick among fair tasks.
    Pick {
        /// When, ns since the run's start.
        time_ns: u64,
        /// Where.
        cpu: usize,
        /// EEVDF's rule (else CFS's).
        eevdf: bool,
        /// The candidates.
        candidates: Vec<Candidate>,
        /// The task chosen (`None`: idle).
        chosen: Option<TaskIndex>,
    },
    /// A pick under round robin.
    RrPick {
        /// When, ns since the run's start.
        time_ns: u64,
        /// Where.
        cpu: usize,
        /// The time slice, ns.
        slice: u64,
        /// The candidates in FIFO order, head first.
        candidates: Vec<RrCandidate>,
        /// The task chosen (`None`: idle).
        chosen: Option<TaskIndex>,
    },
    /// A pick under a registered policy (`sched=NAME`).
    PolicyPick {
        /// When, ns since the run's start.
        time_ns: u64,
        /// Where.
        cpu: usize,
        /// The policy's name (`sched=`).
        policy: &'static str,
        /// Its one line (`Registrable::SUMMARY`).
        summary: &'static str,
        /// The candidates as the policy noted them, the chosen one first.
        candidates: Vec<PolicyCandidate>,
        /// The task chosen (`None`: idle).
        chosen: Option<TaskIndex>,
    },
    /// A wake-up's placement.
    Wake {
        /// When.
        time_ns: u64,
        /// The task woken.
        task: TaskIndex,
        /// Where it last ran.
        previous: usize,
        /// Where it goes.
        target: usize,
        /// The CPUs as placement saw them.
        cpus: Vec<PlacementView>,
        /// Under EAS: the task's `task_util_est` and the energy estimates
        /// `find_energy_efficient_cpu` made, in order.
        energy: Option<(u64, Vec<EnergyView>)>,
    },
    /// A frequency change.
    Frequency {
        /// When.
        time_ns: u64,
        /// The performance domain.
        domain: usize,
        /// Its new frequency.
        khz: u64,
        /// Its CPUs.
        cpus: Vec<DomainCpuView>,
    },
    /// A throttle or unthrottle of a task group's run queue.
    Throttle {
        /// When.
        time_ns: u64,
        /// The numbers behind it.
        view: ThrottleView,
    },
}

/// Explain mode's decisions in a run's lines, with the tasks' names.
pub struct Explained {
    /// The decisions, in time order.
    pub decisions: Vec<Decision>,
    /// The tasks' names, by trace index.
    pub names: Vec<String>,
}

impl Explained {
    /// The decisions as the simulator prints them (`fairway_trace::explain`).
    pub fn lines(&self) -> Vec<String> {
        let name = |task: usize| self.names[task].clone();
        let mut lines = Vec::new();
        for decision in &self.decisions {
            match decision {
                Decision::Pick {
                    time_ns,
                    cpu,
                    eevdf,
                    candidates,
                    chosen,
                } => lines.extend(explain::pick_lines(
                    *time_ns, *cpu, *eevdf, candidates, name, *chosen,
                )),
                Decision::RrPick {
                    time_ns,
                    cpu,
                    slice,
                    candidates,
                    chosen,
                } => lines.extend(explain::rr_pick_lines(
                    *time_ns, *cpu, *slice, candidates, name, *chosen,
                )),
                Decision::PolicyPick {
                    time_ns,
                    cpu,
                    policy,
                    summary,
                    candidates,
                    chosen,
                } => lines.extend(explain::policy_pick_lines(
                    *time_ns,
                    *cpu,
                    (policy, summary),
                    candidates,
                    name,
                    *chosen,
                )),
                Decision::Wake {
                    time_ns,
                    task,
                    previous,
                    target,
                    cpus,
                    energy,
                } => {
                    lines.extend(explain::wake_lines(*time_ns, &name(*task), *previous, cpus));
                    if let Some((task_util_est, estimates)) =
                        energy.as_ref().filter(|(_, e)| !e.is_empty())
                    {
                        lines.extend(explain::energy_lines(*task_util_est, *previous, estimates));
                    }
                    lines.push(explain::chose_cpu_line(*target));
                }
                Decision::Frequency {
                    time_ns,
                    domain,
                    khz,
                    cpus,
                } => lines.extend(explain::frequency_lines(*time_ns, *domain, *khz, cpus)),
                Decision::Throttle { time_ns, view } => {
                    lines.extend(explain::throttle_lines(*time_ns, view));
                }
            }
        }
        lines
    }
}

/// The decisions explain mode recorded (`explain=N`), `None` without
/// trace records. Each decision is its head record and the records
/// that follow it on its CPU at its time, read by the function of its kind.
pub fn explained(lines: &[String]) -> Result<Option<Explained>, String> {
    let Some(parsed) = parse(lines)? else {
        return Ok(None);
    };
    let mut decisions = Vec::new();
    let mut records = parsed
        .records
        .iter()
        .filter(|r| r.kind.is_explain())
        .peekable();
    // A wake-up's energy records come before its own (feec runs inside the
    // placement): kept for the wake-up that follows on the same CPU.
    let mut energy: BTreeMap<usize, (u16, u64, Vec<EnergyView>)> = BTreeMap::new();
    while let Some(head) = records.next() {
        let (time_ns, cpu) = (head.time_ns, head.cpu);
        if head.kind == Kind::ExplainTaskUtil {
            energy.insert(cpu, (head.a, head.value, Vec::new()));
            continue;
        }
        if head.kind == Kind::ExplainEnergy {
            let utils = records
                .next_if(|r| {
                    r.kind == Kind::ExplainEnergyUtil
                        && r.cpu == cpu
                        && r.a == head.a
                        && r.b == head.b
                })
                .copied()
                .ok_or_else(|| malformed(head))?;
            let Some((_, _, estimates)) = energy.get_mut(&cpu) else {
                return Err(malformed(head));
            };
            estimates.push(energy_view(head, &utils));
            continue;
        }
        let mut next = |kind: Kind| {
            records
                .next_if(|r| r.kind == kind && r.time_ns == time_ns && r.cpu == cpu)
                .copied()
                .ok_or_else(|| malformed(head))
        };
        decisions.push(match head.kind {
            Kind::ExplainPick => pick(&parsed, head, &mut next)?,
            Kind::ExplainRrPick => rr_pick(&parsed, head, &mut next)?,
            Kind::ExplainPolicyPick => policy_pick(&parsed, head, &mut next)?,
            Kind::ExplainWake => {
                let cpus = placements(&mut next);
                // The estimates recorded on this CPU for this task.
                let energy = energy
                    .remove(&cpu)
                    .filter(|(task, _, _)| *task == head.a)
                    .map(|(_, util, estimates)| (util, estimates));
                Decision::Wake {
                    time_ns,
                    task: required(&parsed, head.a)?,
                    previous: usize::from(head.b),
                    target: head.value as usize,
                    cpus,
                    energy,
                }
            }
            Kind::ExplainFrequency => frequency(head, &mut next)?,
            Kind::ExplainThrottle => throttle(&parsed, head, &mut next)?,
            _ => return Err(malformed(head)),
        });
    }
    let names = parsed.tasks.iter().map(|t| t.name.clone()).collect();
    Ok(Some(Explained { decisions, names }))
}

/// The error for an explain record out of place or without its followers.
fn malformed(record: &Line) -> String {
    format!("a malformed explain record: {record:?}")
}

/// Kernel task `id` as a trace index, which an explain record must name.
fn required(parsed: &Parsed, id: u16) -> Result<TaskIndex, String> {
    parsed
        .task(id)
        .ok_or_else(|| "an explain record without its task".to_string())
}

/// One energy estimate: an `ExplainEnergy` record and the
/// `ExplainEnergyUtil` record that follows it, unpacked.
fn energy_view(head: &Line, utils: &Line) -> EnergyView {
    EnergyView {
        domain: usize::from(head.a),
        dst: (head.b != NO_TASK).then_some(usize::from(head.b)),
        max_util: utils.value >> 24 & 0xff_ffff,
        sum_util: utils.value & 0xff_ffff,
        cpu_cap: utils.value >> 48,
        energy: head.value,
    }
}

/// A fair pick (`head`, an `ExplainPick`): its `head.b` candidates, each a
/// vruntime, a deadline and a lag record (`next` reads the following record
/// of a kind on the head's CPU and time).
fn pick(
    parsed: &Parsed,
    head: &Line,
    next: &mut impl FnMut(Kind) -> Result<Line, String>,
) -> Result<Decision, String> {
    let mut candidates = Vec::new();
    for _ in 0..head.b {
        let vruntime = next(Kind::ExplainCandidate)?;
        let (deadline, lag) = (next(Kind::ExplainDeadline)?, next(Kind::ExplainLag)?);
        let flags = vruntime.b;
        let queue = flags >> 8;
        candidates.push(Candidate {
            who: if flags & 8 != 0 {
                Competitor::Group(parsed.group_path(vruntime.a)?)
            } else {
                Competitor::Task(required(parsed, vruntime.a)?)
            },
            queue: (queue != 0).then(|| parsed.group_path(queue)).transpose()?,
            vruntime: vruntime.value,
            deadline: deadline.value,
            lag: lag.value as i64,
            eligible: flags & 1 != 0,
            protected: (flags & 2 != 0).then_some(flags & 4 != 0),
        });
    }
    Ok(Decision::Pick {
        time_ns: head.time_ns,
        cpu: head.cpu,
        eevdf: head.value == 1,
        candidates,
        chosen: parsed.task(head.a),
    })
}

/// A round-robin pick (`head`, an `ExplainRrPick`): its `head.b`
/// candidates in FIFO order, as [`pick`].
fn rr_pick(
    parsed: &Parsed,
    head: &Line,
    next: &mut impl FnMut(Kind) -> Result<Line, String>,
) -> Result<Decision, String> {
    let mut candidates = Vec::new();
    for _ in 0..head.b {
        let record = next(Kind::ExplainRrCandidate)?;
        candidates.push(RrCandidate {
            task: required(parsed, record.a)?,
            ran: (record.b & 1 != 0).then_some(record.value),
        });
    }
    Ok(Decision::RrPick {
        time_ns: head.time_ns,
        cpu: head.cpu,
        slice: head.value,
        candidates,
        chosen: parsed.task(head.a),
    })
}

/// A registered policy's pick (`head`, an `ExplainPolicyPick`): its
/// `head.b` candidates, each an `ExplainPolicyCandidate` record and its
/// label's `ExplainPolicyLabel` records, as [`pick`]; the policy found by
/// its place in `REGISTERED` (`head.value`).
fn policy_pick(
    parsed: &Parsed,
    head: &Line,
    next: &mut impl FnMut(Kind) -> Result<Line, String>,
) -> Result<Decision, String> {
    let policy = usize::try_from(head.value)
        .ok()
        .and_then(fairway_sched::policies::PolicyId::from_index)
        .ok_or_else(|| malformed(head))?
        .registered();
    let mut candidates = Vec::new();
    for _ in 0..head.b {
        let record = next(Kind::ExplainPolicyCandidate)?;
        let length = usize::from(record.b >> 8);
        let mut label = Vec::with_capacity(length.next_multiple_of(8));
        for chunk in 0..length.div_ceil(8) {
            let bytes = next(Kind::ExplainPolicyLabel)?;
            if bytes.a != record.a || usize::from(bytes.b) != chunk {
                return Err(malformed(&bytes));
            }
            label.extend_from_slice(&bytes.value.to_le_bytes());
        }
        label.truncate(length);
        candidates.push(PolicyCandidate {
            task: required(parsed, record.a)?,
            label: String::from_utf8(label).map_err(|_| malformed(&record))?,
            value: (record.b & 1 != 0).then_some(record.value),
        });
    }
    Ok(Decision::PolicyPick {
        time_ns: head.time_ns,
        cpu: head.cpu,
        policy: policy.name,
        summary: policy.summary,
        candidates,
        chosen: parsed.task(head.a),
    })
}

/// A wake-up's view of the CPUs: every `ExplainPlacement` record that
/// follows its head, as [`pick`].
fn placements(next: &mut impl FnMut(Kind) -> Result<Line, String>) -> Vec<PlacementView> {
    let mut cpus = Vec::new();
    while let Ok(view) = next(Kind::ExplainPlacement) {
        cpus.push(PlacementView {
            cpu: usize::from(view.a),
            capacity: view.value >> 32,
            util: view.value & 0xffff_ffff,
            nr_running: u64::from(view.b & 0x7fff),
            idle: view.b & 0x8000 != 0,
        });
    }
    cpus
}

/// A frequency change (`head`, an `ExplainFrequency`): its domain's
/// `head.b` CPUs, as [`pick`].
fn frequency(
    head: &Line,
    next: &mut impl FnMut(Kind) -> Result<Line, String>,
) -> Result<Decision, String> {
    let mut cpus = Vec::new();
    for _ in 0..head.b {
        let view = next(Kind::ExplainDomainCpu)?;
        cpus.push(DomainCpuView {
            cpu: usize::from(view.a),
            capacity_orig: view.value >> 48,
            util_avg: view.value >> 24 & 0xff_ffff,
            util_est: view.value & 0xff_ffff,
        });
    }
    Ok(Decision::Frequency {
        time_ns: head.time_ns,
        domain: usize::from(head.a),
        khz: head.value,
        cpus,
    })
}

/// A throttle or unthrottle (`head`, an `ExplainThrottle`): the group run
/// queue's remaining runtime and its pool's runtime, quota, period and
/// burst, as [`pick`].
fn throttle(
    parsed: &Parsed,
    head: &Line,
    next: &mut impl FnMut(Kind) -> Result<Line, String>,
) -> Result<Decision, String> {
    let remaining = next(Kind::ExplainThrottleRemaining)?;
    let pool = next(Kind::ExplainThrottlePool)?;
    let quota = next(Kind::ExplainThrottleQuota)?;
    let (period, burst) = (
        next(Kind::ExplainThrottlePeriod)?,
        next(Kind::ExplainThrottleBurst)?,
    );
    Ok(Decision::Throttle {
        time_ns: head.time_ns,
        view: ThrottleView {
            group: parsed.group_path(head.a)?,
            cpu: head.cpu,
            throttled: head.value == 1,
            runtime_remaining: remaining.value as i64,
            pool_runtime: (pool.value != u64::MAX).then_some(pool.value),
            quota: (quota.value != u64::MAX).then_some(quota.value),
            period: period.value,
            burst: burst.value,
        },
    })
}
