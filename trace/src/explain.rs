//! Explain mode's lines (`--explain N`, docs/tracing.md, "Explain mode"):
//! the simulator and the kernel runner print a decision with these
//! functions, so that both show the same output for the same numbers.
//! Each decision is a block of `explain:` lines: a pick among fair tasks
//! (§1.4, §1.5 of docs/linux-sched-reference.md), a wake-up's placement
//! (the CPUs as placement saw them), a frequency change (schedutil, §6.1),
//! a group's run queue throttled or unthrottled (CFS bandwidth, §4.2), a
//! pick under round robin (the head of the FIFO run queue), or a pick under
//! a registered policy (`sched=NAME`, docs/policies.md), as the policy's
//! `explain_pick` notes it.

/// What competes in a pick at one level: a task, or a task group's entity
/// (the group's run queue behind it, §2.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Competitor {
    /// The task's index.
    Task(usize),
    /// The group's path.
    Group(String),
}

/// One candidate of a pick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The task, or the group entity.
    pub who: Competitor,
    /// The task group whose run queue it is queued on (`None`: the CPU's
    /// own, the root).
    pub queue: Option<String>,
    /// Its vruntime.
    pub vruntime: u64,
    /// Its virtual deadline (EEVDF).
    pub deadline: u64,
    /// `V − vruntime` of its queue (positive: owed CPU time).
    pub lag: i64,
    /// `lag ≥ 0`.
    pub eligible: bool,
    /// For the entity that was running (the task, or at a group level the
    /// group entity above it): whether RUN_TO_PARITY protects its slice
    /// (its protected deadline is its deadline, §1.5); `None` for the
    /// others.
    pub protected: Option<bool>,
}

impl Candidate {
    /// The task it is, if it is one.
    pub fn task(&self) -> Option<usize> {
        match self.who {
            Competitor::Task(task) => Some(task),
            Competitor::Group(_) => None,
        }
    }
}

/// The queues a pick descended through to `next`, from the CPU's own:
/// `[None]` without groups (or for idle), else `[None, Some("/a"), ...]`.
pub fn pick_path(candidates: &[Candidate], next: Option<usize>) -> Vec<Option<String>> {
    let mut path = Vec::new();
    let mut queue = next.and_then(|task| {
        candidates
            .iter()
            .find(|c| c.task() == Some(task))
            .map(|c| c.queue.clone())
    });
    // A group's entity is queued on its parent's queue; stop at a loop or
    // a group that is not a candidate (the root ends it).
    while let Some(Some(group)) = queue.take() {
        if path.contains(&Some(group.clone())) {
            break;
        }
        path.push(Some(group.clone()));
        queue = candidates
            .iter()
            .find(|c| c.who == Competitor::Group(group.clone()))
            .map(|c| c.queue.clone());
    }
    path.push(None);
    path.reverse();
    path
}

/// A pick on `cpu` at `now` among `candidates` (EEVDF's rule or CFS's),
/// which chose `next` (`None`: idle). `name` names a task.
///
/// Without task groups the candidates are one queue's. With groups a pick
/// goes level by level (§2.6): at the CPU's queue among its tasks and
/// group entities, then in the chosen group's queue, down to a task; each
/// level on the way is printed with its own candidates, against its own V.
pub fn pick_lines(
    now: u64,
    cpu: usize,
    eevdf: bool,
    candidates: &[Candidate],
    name: impl Fn(usize) -> String,
    next: Option<usize>,
) -> Vec<String> {
    let rule = if eevdf {
        "EEVDF: the eligible task with the earliest virtual deadline"
    } else {
        "CFS: the smallest vruntime"
    };
    let label = |c: &Candidate| match &c.who {
        Competitor::Task(task) => name(*task),
        Competitor::Group(path) => format!("group {path}"),
    };
    let chose = next.map_or_else(|| "idle".to_string(), &name);
    if candidates.iter().all(|c| c.queue.is_none()) {
        let mut lines = vec![format!(
            "explain: {now} ns cpu{cpu} pick ({rule}), {} candidates (V: their queue's average vruntime):",
            candidates.len()
        )];
        for c in candidates {
            lines.push(candidate_line("explain:   ", &label(c), c, eevdf));
        }
        lines.push(format!("explain:   chose {chose}"));
        return lines;
    }
    let mut lines = vec![format!(
        "explain: {now} ns cpu{cpu} pick ({rule}), level by level from the CPU's queue (V: each queue's average vruntime):"
    )];
    let path = pick_path(candidates, next);
    for (level, queue) in path.iter().enumerate() {
        let here: Vec<&Candidate> = candidates.iter().filter(|c| c.queue == *queue).collect();
        lines.push(format!(
            "explain:   {} queue, {} candidates:",
            queue
                .as_ref()
                .map_or_else(|| "the CPU's".to_string(), |q| format!("{q}'s")),
            here.len()
        ));
        for c in here {
            lines.push(candidate_line("explain:     ", &label(c), c, eevdf));
        }
        lines.push(match path.get(level + 1) {
            Some(Some(group)) => format!("explain:   chose group {group}"),
            _ => format!("explain:   chose {chose}"),
        });
    }
    lines
}

/// A task queued for a round-robin pick (`sched=rr`), in FIFO order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RrCandidate {
    /// The task's index.
    pub task: usize,
    /// For the task that was running, put back at the FIFO's tail: the time
    /// it ran in its slice, ns; `None` for the tasks that were waiting.
    pub ran: Option<u64>,
}

/// A round-robin pick on `cpu` at `now` (`fairway_sched::round_robin`):
/// `candidates` in FIFO order, head first, as the pick found them (the
/// task that was running already put back at the tail), each slice
/// `slice` ns; it chose `next`, the head. The running task's line says
/// whether its slice expired (the tick rotated it to the back) or it was
/// put back before the end of its slice. The slice's end is checked at the
/// tick (`RoundRobin::task_tick`): a slice that starts just after a tick
/// runs to the tick after next.
pub fn rr_pick_lines(
    now: u64,
    cpu: usize,
    slice: u64,
    candidates: &[RrCandidate],
    name: impl Fn(usize) -> String,
    next: Option<usize>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "explain: {now} ns cpu{cpu} pick (round robin: the head of the FIFO run queue), {} candidates in FIFO order (slice {slice} ns):",
        candidates.len()
    )];
    for (position, c) in candidates.iter().enumerate() {
        let what = match c.ran {
            Some(ran) if ran >= slice => {
                format!("ran {ran} ns of its {slice} ns slice: expired, rotated to the back")
            }
            Some(ran) => format!(
                "ran {ran} ns of its {slice} ns slice, {} ns left: put back at the tail",
                slice - ran
            ),
            None if position == 0 => "head of the FIFO".to_string(),
            None => "waiting".to_string(),
        };
        lines.push(format!(
            "explain:   {:>2} {:<16} {what}",
            position + 1,
            name(c.task)
        ));
    }
    lines.push(match next {
        Some(task) => format!(
            "explain:   chose {}: a fresh slice of {slice} ns, rotated at the first tick after it runs out while another task waits",
            name(task)
        ),
        None => "explain:   chose idle".to_string(),
    });
    lines
}

/// A candidate of a registered policy's pick as the policy noted it
/// (`fairway_sched::policies::CandidateNote`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyCandidate {
    /// The task's index.
    pub task: usize,
    /// What `value` is ("tickets", "pass", ...).
    pub label: String,
    /// The number the pick compared (`None`: the policy gives none).
    pub value: Option<u64>,
}

/// A pick on `cpu` at `now` under the registered policy `policy` (its
/// one-line `summary`): `candidates` as its `explain_pick` noted them, the
/// chosen one first, each with the number the policy decided by; it chose
/// `next` (docs/policies.md, "Explain").
pub fn policy_pick_lines(
    now: u64,
    cpu: usize,
    (policy, summary): (&str, &str),
    candidates: &[PolicyCandidate],
    name: impl Fn(usize) -> String,
    next: Option<usize>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "explain: {now} ns cpu{cpu} pick ({policy}: {summary}), {} candidates:",
        candidates.len()
    )];
    for (position, c) in candidates.iter().enumerate() {
        let value = c
            .value
            .map_or(String::new(), |value| format!("{} {value}", c.label));
        let chosen = if Some(c.task) == next { "  chosen" } else { "" };
        lines.push(format!(
            "explain:   {:>2} {:<16} {value}{chosen}",
            position + 1,
            name(c.task)
        ));
    }
    lines.push(match next {
        Some(task) => format!("explain:   chose {}", name(task)),
        None => "explain:   chose idle".to_string(),
    });
    lines
}

/// One candidate's line: its vruntime (and under EEVDF its deadline, lag and
/// eligibility) against its queue's V.
fn candidate_line(prefix: &str, name: &str, c: &Candidate, eevdf: bool) -> String {
    // Against V (vruntime − V = −lag), in ns of virtual time: raw
    // vruntimes start near 2^64 − 2^20, as Linux's do.
    let v = c.vruntime.wrapping_add(c.lag as u64);
    let rel = |x: u64| x.wrapping_sub(v) as i64;
    let mut line = if eevdf {
        format!(
            "{prefix}{name:<16} vruntime V{:+} deadline V{:+} lag {:+} {}",
            rel(c.vruntime),
            rel(c.deadline),
            c.lag,
            if c.eligible {
                "eligible"
            } else {
                "not eligible"
            }
        )
    } else {
        format!("{prefix}{name:<16} vruntime V{:+}", rel(c.vruntime))
    };
    match (c.protected, eevdf) {
        // pick_eevdf keeps the running entity while it is eligible and
        // its slice is protected (RUN_TO_PARITY).
        (Some(true), true) if c.eligible => {
            line.push_str(" running, slice protected (RUN_TO_PARITY keeps it)");
        }
        (Some(_), _) => line.push_str(" running"),
        (None, _) => {}
    }
    line
}

/// A CPU as wake-up placement saw it (its published snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacementView {
    /// The CPU.
    pub cpu: usize,
    /// Its capacity.
    pub capacity: u64,
    /// `max(util_avg, util_est)`, at most its capacity.
    pub util: u64,
    /// Tasks runnable there.
    pub nr_running: u64,
    /// Whether it was idle.
    pub idle: bool,
}

/// The head of a wake-up's block: `task` (last on `previous`) woken at
/// `now`, and each CPU as placement saw it. The block ends with
/// [`chose_cpu_line`], after the energy lines under EAS.
pub fn wake_lines(now: u64, task: &str, previous: usize, cpus: &[PlacementView]) -> Vec<String> {
    let mut lines = vec![format!(
        "explain: {now} ns wake-up of {task} (last on cpu{previous}): the CPUs as placement saw them:"
    )];
    for view in cpus {
        lines.push(format!(
            "explain:   cpu{} capacity {:>4} util {:>4} spare {:>4} {} tasks{}",
            view.cpu,
            view.capacity,
            view.util,
            view.capacity.saturating_sub(view.util),
            view.nr_running,
            if view.idle { ", idle" } else { "" }
        ));
    }
    lines
}

/// One energy estimate `find_energy_efficient_cpu` made (§5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnergyView {
    /// The performance domain.
    pub domain: usize,
    /// Where the task was placed (`None`: without it, the base).
    pub dst: Option<usize>,
    /// `max_util` given to `em_cpu_energy`.
    pub max_util: u64,
    /// `sum_util` given to it.
    pub sum_util: u64,
    /// `cpu_cap` given to it (the domain's CPUs' capacity).
    pub cpu_cap: u64,
    /// The energy it returned.
    pub energy: u64,
}

/// A wake-up's energy lines under EAS: the task's `task_util_est`, then
/// per domain the base and each CPU priced, in the order they were made
/// (`previous`: the task's last CPU).
pub fn energy_lines(task_util_est: u64, previous: usize, estimates: &[EnergyView]) -> Vec<String> {
    let mut lines = vec![format!(
        "explain:   find_energy_efficient_cpu (task_util_est {task_util_est}): energy = cost of the lowest efficient OPP with performance >= max_util, x sum_util (em_cpu_energy)"
    )];
    let mut base = 0;
    for e in estimates {
        let at = match e.dst {
            None => {
                base = e.energy;
                "without the task".to_string()
            }
            Some(cpu) if cpu == previous => format!("on cpu{cpu} (prev)"),
            Some(cpu) => format!("on cpu{cpu}"),
        };
        let delta = e.dst.map_or(String::new(), |_| {
            format!(" (+{})", e.energy.wrapping_sub(base) as i64)
        });
        lines.push(format!(
            "explain:   pd{} {at:<16} max_util {:>4} sum_util {:>4} energy {}{delta}",
            e.domain, e.max_util, e.sum_util, e.energy
        ));
    }
    lines
}

/// The last line of a wake-up's block.
pub fn chose_cpu_line(target: usize) -> String {
    format!("explain:   chose cpu{target}")
}

/// A CPU of a performance domain at a frequency change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainCpuView {
    /// The CPU.
    pub cpu: usize,
    /// Its capacity at the highest frequency.
    pub capacity_orig: u64,
    /// Its `util_avg`.
    pub util_avg: u64,
    /// Its `util_est`.
    pub util_est: u64,
}

/// A frequency change of performance domain `domain` to `khz` at `now`.
pub fn frequency_lines(now: u64, domain: usize, khz: u64, cpus: &[DomainCpuView]) -> Vec<String> {
    let mut lines = vec![format!(
        "explain: {now} ns perf domain {domain} goes to {} MHz; its CPUs:",
        khz / 1000
    )];
    for view in cpus {
        lines.push(format!(
            "explain:   cpu{} capacity {:>4} util_avg {:>4} util_est {:>4}",
            view.cpu, view.capacity_orig, view.util_avg, view.util_est
        ));
    }
    lines.push(
        "explain:   schedutil asks 1.25 x max frequency x util / capacity of the busiest CPU, rounded up to an operating point"
            .to_string(),
    );
    lines
}

/// A task group's run queue on a CPU, throttled or unthrottled, with the
/// numbers behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleView {
    /// The group's path.
    pub group: String,
    /// The CPU.
    pub cpu: usize,
    /// Throttled now (else unthrottled).
    pub throttled: bool,
    /// The run queue's `runtime_remaining`, ns (negative: overrun).
    pub runtime_remaining: i64,
    /// The pool's `runtime` left this period, ns.
    pub pool_runtime: Option<u64>,
    /// `cpu.max`'s quota, ns (`None`: max).
    pub quota: Option<u64>,
    /// `cpu.max`'s period, ns.
    pub period: u64,
    /// `cpu.max.burst`, ns.
    pub burst: u64,
}

/// A throttle or an unthrottle at `now`: the run queue's runtime against
/// the pool's, and the group's limit (§4.2: a run queue that has spent its
/// runtime and finds none left in the pool is throttled until the period
/// timer refills the pool and hands it runtime).
pub fn throttle_lines(now: u64, view: &ThrottleView) -> Vec<String> {
    let us = |ns: u64| ns / 1000;
    let limit = match view.quota {
        Some(quota) => format!(
            "quota {} us per {} us period, burst {} us",
            us(quota),
            us(view.period),
            us(view.burst)
        ),
        None => format!("no quota ({} us period)", us(view.period)),
    };
    let pool = view
        .pool_runtime
        .map_or_else(|| "unknown".to_string(), |ns| format!("{ns} ns"));
    vec![
        format!(
            "explain: {now} ns group {} {} on cpu{}:",
            view.group,
            if view.throttled {
                "throttled"
            } else {
                "unthrottled"
            },
            view.cpu
        ),
        format!(
            "explain:   runtime_remaining {} ns on the run queue, the pool's runtime {pool}; {limit}",
            view.runtime_remaining
        ),
        if view.throttled {
            "explain:   its runtime is spent and the pool had none to give: it waits for the period timer's refill".to_string()
        } else {
            "explain:   the pool handed it runtime (a refill, or slack returned by another CPU): it runs again".to_string()
        },
    ]
}
