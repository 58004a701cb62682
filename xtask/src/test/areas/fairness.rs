//! Fairness by weight (`fairway` image): twelve tasks of mixed nice values
//! get CPU time in proportion to their weights, and twelve hogs started at
//! once with balancing off share each CPU within EEVDF's lag bound.

use crate::test::Case;
use crate::test::checks::{field_in, value_in};

/// `docs/linux-sched-reference.md` §1.1: `sched_prio_to_weight` for the nice values the
/// scenarios use.
fn weight_of_nice(nice: i64) -> Option<u64> {
    match nice {
        -3 => Some(1991),
        0 => Some(1024),
        3 => Some(526),
        _ => None,
    }
}

/// `(name, runtime_ns)` of every `report: task` line.
pub(crate) fn task_runtimes(lines: &[String]) -> Vec<(String, u64)> {
    lines
        .iter()
        .filter(|l| l.contains("report: task "))
        .filter_map(|line| {
            let field = |key: &str| {
                line.split_whitespace()
                    .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
                    .map(str::to_string)
            };
            Some((field("name")?, field("runtime_ns")?.parse().ok()?))
        })
        .collect()
}

/// Issue 4: 12 CPU-bound tasks of mixed nice on 4 CPUs get CPU time in
/// proportion to their weights (§1.1) within 2 %: runtime / weight is the same
/// for every task, within 2 % of the mean.
pub(crate) fn runtime_proportional_to_weight(lines: &[String]) -> Result<(), String> {
    let tasks = task_runtimes(lines);
    let mut per_weight = Vec::new();
    for (name, runtime) in &tasks {
        let nice: i64 = name
            .rsplit("nice")
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("task {name} has no nice in its name"))?;
        let weight = weight_of_nice(nice).ok_or_else(|| format!("no weight for nice {nice}"))?;
        per_weight.push((name.clone(), *runtime as f64 / weight as f64));
    }
    if per_weight.len() != 12 {
        return Err(format!("expected 12 tasks, found {}", per_weight.len()));
    }
    let mean = per_weight.iter().map(|p| p.1).sum::<f64>() / per_weight.len() as f64;
    let worst = per_weight
        .iter()
        .map(|(name, value)| (name, (value / mean - 1.0).abs()))
        .fold(
            (None, 0.0),
            |(n, w), (name, d)| if d > w { (Some(name), d) } else { (n, w) },
        );
    if worst.1 <= 0.02 {
        Ok(())
    } else {
        Err(format!(
            "runtime/weight of {} is {:.1} % off the mean (allowed 2 %)",
            worst.0.map_or("?", |s| s.as_str()),
            worst.1 * 100.0
        ))
    }
}

/// How long after its 1 s duration the `start-12-hogs-balance-off` run may end:
/// `main` sleeps until the deadline and then waits for its turn among the 3
/// hogs of its CPU (a few 4 ms ticks), far less than the 4.3 s to 26 s that
/// the stall of a fair starter took (see [`starts_at_once_and_ends_on_time`]).
const START_RUN_SLACK_NS: u64 = 50_000_000;

/// `(name, cpu, runtime_ns)` of every `report: task` line.
fn task_placements(lines: &[String]) -> Result<Vec<(String, usize, u64)>, String> {
    let mut tasks = Vec::new();
    for line in lines.iter().filter(|l| l.contains("report: task ")) {
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
                .ok_or_else(|| format!("no {key}= in: {line}"))
        };
        let number = |key: &str| {
            field(key)?
                .parse::<u64>()
                .map_err(|_| format!("no number {key}= in: {line}"))
        };
        tasks.push((
            field("name")?.to_string(),
            number("cpu")? as usize,
            number("runtime_ns")?,
        ));
    }
    Ok(tasks)
}

/// EEVDF's base slice on `cpus` CPUs: `sysctl_sched_base_slice` 0.70 ms (Linux
/// v6.15+, the value Fairway follows) times `1 + ilog2(min(cpus, 8))` (facts
/// §1.5: 2.10 ms on 4 CPUs).
fn eevdf_base_slice_ns(cpus: u64) -> u64 {
    700_000 * (1 + u64::from(cpus.clamp(1, 8).ilog2()))
}

/// The lag bound of EEVDF for a run at `hz` on `cpus` CPUs whose scheduler
/// went at most `quantum_ns` without acting on a CPU: `max(slice, tick,
/// quantum)`, see [`runtime_within_lag_bound_of_cpu_share`].
fn eevdf_lag_bound_ns(hz: u64, cpus: u64, quantum_ns: u64) -> u64 {
    eevdf_base_slice_ns(cpus)
        .max(1_000_000_000 / hz.max(1))
        .max(quantum_ns)
}

/// The longest a CPU's scheduler may go without acting before the lag
/// check's quantum is suspect (three ticks at HZ 250): a run past it lost
/// ticks, not turns.
const LAG_QUANTUM_LIMIT_NS: u64 = 12_000_000;

/// Every task's run time is within EEVDF's lag bound of its share of what its
/// CPU gave its tasks: `|R_i - T_c w_i / W_c| <= max(slice, tick)`, where `T_c`
/// is the run time of all tasks on CPU `c` and `W_c` the sum of their weights
/// (§1.1). For tasks that stay on their CPU (no balancing) and are runnable
/// from one instant to the end.
///
/// Why this bound. EEVDF (Stoica and Abdel-Wahab, 1995) keeps every client's
/// lag, the service it is owed by the fluid (weighted processor-sharing)
/// schedule, within `(-r, max(r, q))` when requests are at most `r` of service
/// and the scheduler acts at least every quantum `q`. In Linux's EEVDF (§1.5)
/// a request is one base slice: the deadline is `vruntime + calc_delta_fair
/// (slice)`, `RUN_TO_PARITY` runs the picked task to it, and the slice-end timer
/// (`hrtick=1`) ends it there; without the timer the tick sees the end, so `q`
/// is at most the tick on hardware. Here `r` = 2.1 ms (0.70 ms × 3 on 4 CPUs)
/// and the tick is 4 ms (HZ 250). Under QEMU icount a CPU can be held back
/// while the virtual clock runs on (docs/icount.md, "One vCPU at a time"):
/// its timers, the tick and the slice-end timer alike, fire on its next turn,
/// and the time is charged to the running task, so `q` is what the kernel
/// measured, each CPU's longest run between two ticks
/// (`max_uncharged_ns.cpuN`, 6.1 to 7.4 ms in this case on 2026-12-02), and
/// the bound is `max(r, tick, q)` on that CPU, on both sides (the theorem's
/// lower side, `lag > -r`, holds only if the slice ends on time). A CPU held
/// back longer than [`LAG_QUANTUM_LIMIT_NS`] fails the check. The fluid
/// share of task `i` is
/// `T_c w_i / W_c`: the CPU's three hogs are placed at one instant with zero
/// lag (`place_entity` with `vlag = 0`), stay runnable, and the lags of a
/// CPU's tasks sum to zero (the zero-lag point V is their weighted mean), so
/// the fluid schedule hands out exactly the `T_c` the CPU gave them.
///
/// The report reads `sum_exec_runtime`, which the kernel accounts at ticks
/// and switches: the running task's figure lags by its stretch not yet
/// accounted, but its CPU's other tasks did not run during that stretch, so
/// the three figures are the CPU's state at its last accounting instant,
/// where the bound holds (the twelve lines are read within tens of µs, less
/// than a slice, so at most one switch falls between two of them, which
/// keeps the figures of one instant).
///
/// In relative terms 4 ms is 0.7 % of the nice -3 hog's share of a 1 s run
/// (1991 / 3541 of it, 562 ms), 1.4 % of the nice 0 hog's (289 ms) and 2.7 %
/// of the nice 3 hog's (149 ms): the 2 % this check used before was tighter
/// than the theory for the lightest hog (its lag swings by about a slice,
/// docs/groups.md) and looser for the heaviest. Comparing tasks across CPUs, as that
/// check did with the mean of all twelve, also compared the CPUs' totals,
/// which the lag bound says nothing about (the CPU that runs `main` and the
/// starter gives its hogs less).
///
/// For CFS (§1.4) the analogue is its slice: the running task is preempted
/// once it has run its `sched_slice` (its weight's share of the 18 ms period
/// on 4 CPUs with 3 tasks), seen at the tick or the slice-end timer, so a CFS
/// case would take `max(sched_slice, tick)`; this case runs EEVDF, and the
/// check refuses another policy rather than guess its bound.
fn runtime_within_lag_bound_of_cpu_share(lines: &[String]) -> Result<(), String> {
    let (config, _) = field_in(lines, "report: run name=rtapp ", "config")?;
    let mut parts = config.split('-');
    let policy = parts.next().unwrap_or_default();
    let hz: u64 = parts
        .next()
        .and_then(|p| p.strip_prefix("hz"))
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("no HZ in config={config}"))?;
    if policy != "eevdf" {
        return Err(format!(
            "the lag bound is derived for EEVDF only, this run is {policy}"
        ));
    }
    let cpus = value_in(lines, "report: run name=rtapp ", "cpus")?;
    let quantum = |cpu: usize| -> Result<u64, String> {
        let needle = format!("report: metric name=max_uncharged_ns.cpu{cpu} ");
        let quantum = value_in(lines, &needle, "value")?;
        if quantum > LAG_QUANTUM_LIMIT_NS {
            return Err(format!(
                "CPU {cpu} went {quantum} ns between two ticks, more than \
                 {LAG_QUANTUM_LIMIT_NS} ns: ticks were lost"
            ));
        }
        Ok(quantum)
    };
    let tasks = task_placements(lines)?;
    if tasks.len() != 12 {
        return Err(format!("expected 12 tasks, found {}", tasks.len()));
    }
    let mut weighted = Vec::new();
    for (name, cpu, runtime) in &tasks {
        let nice: i64 = name
            .rsplit("nice")
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("task {name} has no nice in its name"))?;
        let weight = weight_of_nice(nice).ok_or_else(|| format!("no weight for nice {nice}"))?;
        weighted.push((name, *cpu, *runtime, weight));
    }
    for &(name, cpu, runtime, weight) in &weighted {
        let (total, weights) = weighted
            .iter()
            .filter(|t| t.1 == cpu)
            .fold((0u64, 0u64), |(r, w), t| (r + t.2, w + t.3));
        let share = (u128::from(total) * u128::from(weight) / u128::from(weights)) as u64;
        let quantum = quantum(cpu)?;
        let bound = eevdf_lag_bound_ns(hz, cpus, quantum);
        if runtime.abs_diff(share) > bound {
            return Err(format!(
                "{name} on CPU {cpu} ran {runtime} ns, {} ns from its share {share} ns of \
                 the CPU's {total} ns (EEVDF's lag bound max(slice {} ns, tick {} ns, the \
                 CPU's longest run between ticks {quantum} ns) = {bound} ns)",
                runtime.abs_diff(share),
                eevdf_base_slice_ns(cpus),
                1_000_000_000 / hz.max(1)
            ));
        }
    }
    Ok(())
}

/// The rt-app start path (regression of the stall found in session 2): with
/// wake-up placement and load balancing off, slice-end timer on, EEVDF and 12
/// CPU-bound instances on 4 CPUs, the run ends at its 1 s duration (within
/// [`START_RUN_SLACK_NS`]) and every instance ran from the start, sharing its
/// CPU by weight within EEVDF's lag bound
/// ([`runtime_within_lag_bound_of_cpu_share`]).
///
/// When a fair `main` created the instances itself, it competed with the
/// first hogs it placed on its own CPU; under `-icount` QEMU runs the vCPUs
/// one at a time and a comparator write that becomes the machine's earliest
/// timer (the slice-end timer armed at each pick) sends the writing vCPU to the
/// back of the round, so `main`, always picked at a tick, was switched in only
/// after its slice had passed and was preempted before its next instruction,
/// every time. It resumed when QEMU's 32-bit PMU cycle-counter overflow timer
/// (~2^32 ns) shifted the round, and the run ended seconds late with 7 of 12
/// instances never run.
fn starts_at_once_and_ends_on_time(lines: &[String]) -> Result<(), String> {
    let wall = value_in(lines, "report: run name=rtapp ", "wall_ns")?;
    let duration = 1_000_000_000;
    if !(duration..=duration + START_RUN_SLACK_NS).contains(&wall) {
        return Err(format!(
            "the 1 s run took {wall} ns (expected {duration} to {} ns)",
            duration + START_RUN_SLACK_NS
        ));
    }
    runtime_within_lag_bound_of_cpu_share(lines)
}

/// The boot arguments of the 4-CPU fairness and group cases: the policy, with
/// skewed ticks (Linux's skew_tick=1). With every CPU ticking at the same
/// instants, QEMU icount costs the CPUs 0.4-0.8 s of each 2 s in lost turns
/// (`tick_offset_ns`).
pub(crate) fn skewed_ticks(policy: &str) -> &'static str {
    if policy == "cfs" {
        "sched=cfs skew_tick=1"
    } else {
        "sched=eevdf skew_tick=1"
    }
}

/// The fairness cases.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for policy in ["eevdf", "cfs"] {
        cases.push(
            Case::new(format!("fairness-12-mixed-nice-4cpus-{policy}"), "fairway")
                .icount()
                .cpus(4)
                .scenario("tests/scenarios/fairness-12-mixed-nice.json")
                .append(skewed_ticks(policy))
                .timeout(180)
                .check(runtime_proportional_to_weight),
        );
    }
    cases.push(
        Case::new("rtapp-start-balance-off-4cpus", "fairway")
            .icount()
            .cpus(4)
            .scenario("tests/scenarios/start-12-hogs-balance-off.json")
            .append("balance=0 sched=eevdf hrtick=1")
            .timeout(120)
            .check(starts_at_once_and_ends_on_time),
    );
    cases
}

#[cfg(test)]
mod tests {
    use super::{eevdf_lag_bound_ns, runtime_within_lag_bound_of_cpu_share};

    /// A start-case log: CPU `c` holds hogs of nice -3, 0, 3 (weights 1991,
    /// 1024, 526, sum 3541) with these run times (ns), at `config`; each
    /// CPU's longest run between ticks is one tick of the config's HZ.
    fn start_log(config: &str, runtimes: [[u64; 3]; 4]) -> Vec<String> {
        let hz: u64 = config
            .split('-')
            .find_map(|part| part.strip_prefix("hz")?.parse().ok())
            .unwrap_or(250);
        start_log_with_quanta(config, runtimes, [1_000_000_000 / hz; 4])
    }

    /// [`start_log`] with each CPU's `max_uncharged_ns`.
    fn start_log_with_quanta(
        config: &str,
        runtimes: [[u64; 3]; 4],
        quanta: [u64; 4],
    ) -> Vec<String> {
        let mut lines = vec![format!(
            "1.0 report: run name=rtapp config={config} cpus=4 icount=1 wall_ns=1008110208"
        )];
        for (cpu, row) in runtimes.iter().enumerate() {
            for (slot, (nice, runtime)) in [-3, 0, 3].iter().zip(row).enumerate() {
                lines.push(format!(
                    "1.0 report: task id={} name=hog{:02}_nice{nice} cpu={cpu} runtime_ns={runtime} wait_ns=0",
                    2 + 3 * cpu + slot,
                    3 * cpu + slot
                ));
            }
        }
        for (cpu, quantum) in quanta.iter().enumerate() {
            lines.push(format!(
                "1.0 report: metric name=max_uncharged_ns.cpu{cpu} value={quantum}"
            ));
        }
        lines
    }

    #[test]
    fn lag_bound_is_the_larger_of_slice_and_tick() {
        // 0.70 ms × (1 + ilog2 4) = 2.1 ms against the 4 ms tick of HZ 250,
        // the 1 ms tick of HZ 1000; 8 CPUs: 0.70 × 4 = 2.8 ms; 1 CPU: 0.70 ms,
        // under the 1 ms tick of HZ 1000, over the 0.5 ms of HZ 2000.
        assert_eq!(eevdf_lag_bound_ns(250, 4, 0), 4_000_000);
        assert_eq!(eevdf_lag_bound_ns(1000, 4, 0), 2_100_000);
        assert_eq!(eevdf_lag_bound_ns(1000, 8, 0), 2_800_000);
        assert_eq!(eevdf_lag_bound_ns(1000, 1, 0), 1_000_000);
        assert_eq!(eevdf_lag_bound_ns(2000, 1, 0), 700_000);
        // A CPU held back 7.4 ms between two ticks (icount): that is q.
        assert_eq!(eevdf_lag_bound_ns(250, 4, 7_400_000), 7_400_000);
    }

    #[test]
    fn lag_bound_takes_each_cpus_measured_quantum() {
        let exact = [1_991_000_000, 1_024_000_000, 526_000_000];
        // The nice 3 hog 4.27 ms ahead and the nice 0 hog as far behind, on a
        // CPU that went 7.37 ms between two ticks: within max(2.1, 4, 7.37).
        let ahead = [1_991_000_000, 1_019_730_000, 530_270_000];
        let quanta = [4_000_000, 7_366_944, 4_000_000, 4_000_000];
        assert_eq!(
            runtime_within_lag_bound_of_cpu_share(&start_log_with_quanta(
                "eevdf-hz250-uclampon",
                [exact, ahead, exact, exact],
                quanta
            )),
            Ok(())
        );
        // The same run times on a CPU that kept its 4 ms ticks fail.
        let error = runtime_within_lag_bound_of_cpu_share(&start_log_with_quanta(
            "eevdf-hz250-uclampon",
            [exact, ahead, exact, exact],
            [4_000_000; 4],
        ))
        .unwrap_err();
        assert!(error.contains("hog04_nice0 on CPU 1"), "{error}");
        // Ticks lost for longer than three of them: the check refuses.
        let error = runtime_within_lag_bound_of_cpu_share(&start_log_with_quanta(
            "eevdf-hz250-uclampon",
            [exact; 4],
            [4_000_000, 12_000_001, 4_000_000, 4_000_000],
        ))
        .unwrap_err();
        assert!(error.contains("ticks were lost"), "{error}");
    }

    #[test]
    fn start_shares_are_judged_per_cpu_within_the_lag_bound() {
        // 3541 ms on every CPU: the shares are exactly 1991, 1024, 526 ms.
        let exact = [1_991_000_000, 1_024_000_000, 526_000_000];
        assert_eq!(
            runtime_within_lag_bound_of_cpu_share(&start_log("eevdf-hz250-uclampon", [exact; 4])),
            Ok(())
        );
        // The nice 3 hog 4 ms ahead, the nice 0 hog 4 ms behind: the CPU's
        // total is unchanged, both are exactly at the bound.
        let edge = [1_991_000_000, 1_020_000_000, 530_000_000];
        assert_eq!(
            runtime_within_lag_bound_of_cpu_share(&start_log(
                "eevdf-hz250-uclampon",
                [exact, edge, exact, exact]
            )),
            Ok(())
        );
        // 1 ns further is over it.
        let over = [1_991_000_000, 1_019_999_999, 530_000_001];
        let error = runtime_within_lag_bound_of_cpu_share(&start_log(
            "eevdf-hz250-uclampon",
            [exact, exact, over, exact],
        ))
        .unwrap_err();
        assert!(error.contains("hog07_nice0 on CPU 2"), "{error}");
        // At HZ 1000 the bound is the 2.1 ms slice: the 4 ms edge fails.
        let error = runtime_within_lag_bound_of_cpu_share(&start_log(
            "eevdf-hz1000-uclampon",
            [exact, edge, exact, exact],
        ))
        .unwrap_err();
        assert!(error.contains("2100000 ns"), "{error}");
        // CPUs whose totals differ are each judged against their own total
        // (a CPU that gave its hogs 3 % less, in the same proportions).
        let shorter = [1_931_270_000, 993_280_000, 510_220_000];
        assert_eq!(
            runtime_within_lag_bound_of_cpu_share(&start_log(
                "eevdf-hz250-uclampon",
                [exact, shorter, exact, exact]
            )),
            Ok(())
        );
        // No bound is derived for CFS here.
        let error =
            runtime_within_lag_bound_of_cpu_share(&start_log("cfs-hz250-uclampon", [exact; 4]))
                .unwrap_err();
        assert!(error.contains("EEVDF only"), "{error}");
    }
}
