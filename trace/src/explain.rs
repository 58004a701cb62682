//! Explain mode's lines (`--explain N`, docs/tracing.md, "Explain mode"):
//! the simulator and the kernel runner print a decision with these
//! functions, so that both show the same output for the same numbers.
//! Each decision is a block of `explain:` lines: a pick among fair tasks
//! (§1.4, §1.5 of docs/linux-sched-reference.md), a wake-up's placement
//! (the CPUs as placement saw them), a frequency change (schedutil, §6.1),
//! a group's run queue throttled or unthrottled (CFS bandwidth, §4.2).

/// One candidate of a pick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The task's index.
    pub task: usize,
    /// Its vruntime.
    pub vruntime: u64,
    /// Its virtual deadline (EEVDF).
    pub deadline: u64,
    /// `V − vruntime` of its queue (positive: owed CPU time).
    pub lag: i64,
    /// `lag ≥ 0`.
    pub eligible: bool,
    /// For the task that was running: whether RUN_TO_PARITY protects its
    /// slice (its protected deadline is its deadline, §1.5); `None` for the
    /// others.
    pub protected: Option<bool>,
}

/// A pick on `cpu` at `now` among `candidates` (EEVDF's rule or CFS's),
/// which chose `next` (`None`: idle). `name` names a task, `group` gives
/// its task group when it has one.
pub fn pick_lines(
    now: u64,
    cpu: usize,
    eevdf: bool,
    candidates: &[Candidate],
    name: impl Fn(usize) -> String,
    group: impl Fn(usize) -> Option<String>,
    next: Option<usize>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "explain: {now} ns cpu{cpu} pick ({}), {} candidates (V: their queue's average vruntime):",
        if eevdf {
            "EEVDF: the eligible task with the earliest virtual deadline"
        } else {
            "CFS: the smallest vruntime"
        },
        candidates.len()
    )];
    for c in candidates {
        let name = name(c.task);
        // Against V (vruntime − V = −lag), in ns of virtual time: raw
        // vruntimes start near 2^64 − 2^20, as Linux's do.
        let v = c.vruntime.wrapping_add(c.lag as u64);
        let rel = |x: u64| x.wrapping_sub(v) as i64;
        let mut line = if eevdf {
            format!(
                "explain:   {name:<16} vruntime V{:+} deadline V{:+} lag {:+} {}",
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
            format!("explain:   {name:<16} vruntime V{:+}", rel(c.vruntime))
        };
        if let Some(group) = group(c.task) {
            line.push_str(&format!(" (group {group})"));
        }
        match (c.protected, eevdf) {
            // pick_eevdf keeps the running task while it is eligible and
            // its slice is protected (RUN_TO_PARITY).
            (Some(true), true) if c.eligible => {
                line.push_str(" running, slice protected (RUN_TO_PARITY keeps it)");
            }
            (Some(_), _) => line.push_str(" running"),
            (None, _) => {}
        }
        lines.push(line);
    }
    lines.push(format!(
        "explain:   chose {}",
        next.map_or_else(|| "idle".to_string(), name)
    ));
    lines
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
