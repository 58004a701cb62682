//! QEMU test cases of the workloads (issue 4): sched-pipe, hackbench, rt-app
//! scenarios, the reproducibility of reports, and checks of their figures
//! against independent expectations.

use crate::test::Case;

/// The text after `key=` in the first line containing `needle`, with the line.
fn field_in<'a>(
    lines: &'a [String],
    needle: &str,
    key: &str,
) -> Result<(&'a str, &'a str), String> {
    let line = lines
        .iter()
        .find(|l| l.contains(needle))
        .ok_or_else(|| format!("no line contains '{needle}'"))?;
    let value = line_field(line, key).ok_or_else(|| format!("no {key}= in: {line}"))?;
    Ok((value, line))
}

/// The value of `key=` in one report line.
fn line_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

/// The value of `key=` in the first line containing `needle`.
fn value_in(lines: &[String], needle: &str, key: &str) -> Result<u64, String> {
    let (value, line) = field_in(lines, needle, key)?;
    value
        .parse()
        .map_err(|_| format!("no number {key}= in: {line}"))
}

/// `rtapp-events-chain-4cpus.json`: 3 + 1 + 2 + 1 ms of work in a chain of
/// blocking events, one task per CPU; the kernel adds a few microseconds per
/// hand-over (wake-up IPI, switch), far below the 0.5 ms allowed.
fn chain_ends_at_7_ms(lines: &[String]) -> Result<(), String> {
    let wall = value_in(lines, "report: run name=rtapp ", "wall_ns")?;
    let (low, high) = (7_000_000, 7_500_000);
    if (low..=high).contains(&wall) {
        Ok(())
    } else {
        Err(format!("the chain took {wall} ns, expected {low}..={high}"))
    }
}

/// `periodic-256-38pct-2cpus.json`: issue 10's per-CPU load, which the
/// simulator carries without a missed period (`fairway-sim ... --cpus 2`, with
/// the kernel's defaults); the kernel may miss none either. A run that stalled
/// would miss none by not running, so each task must also have been switched
/// in for at least 99 of its periods: the starter creates the 256 tasks one
/// after another within the first period, and a task created at δ < 10 ms
/// starts periods at δ + 10 k ms, so the 100th starts before the 1 s window
/// ends but may be switched in after it.
fn periodic_load_misses_nothing(lines: &[String]) -> Result<(), String> {
    let tasks: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("report: task ") && l.contains(" name=p-"))
        .collect();
    if tasks.len() != 256 {
        return Err(format!("{} task records, expected 256", tasks.len()));
    }
    for line in tasks {
        let field = |key: &str| -> Result<u64, String> {
            line_field(line, key)
                .and_then(|value| value.parse().ok())
                .ok_or_else(|| format!("no number {key}= in: {line}"))
        };
        let (missed, switches) = (field("missed_periods")?, field("switches")?);
        if missed > 0 || switches < 99 {
            return Err(format!(
                "missed {missed} periods and switched in {switches} times (want 0, >= 99): {line}"
            ));
        }
    }
    Ok(())
}

/// `pi-inversion.json` (docs/priority-inheritance.md): `medium` runs 1-2 ms,
/// then waits while `high` blocks on m and `low`, lent priority 90, ends its
/// critical section (2-11 ms) and `high` runs (11-12 ms): 10 ms of waiting,
/// plus the kernel's microseconds. Without inheritance (`pi-inversion-off`)
/// `medium` is never kept waiting: under 0.1 ms.
fn medium_waits(lines: &[String], low: u64, high: u64) -> Result<(), String> {
    let wait = value_in(lines, "name=medium ", "wait_ns")?;
    if (low..=high).contains(&wait) {
        Ok(())
    } else {
        Err(format!("medium waited {wait} ns, expected {low}..={high}"))
    }
}

/// `pending-wakeup.json` (its comment derives the figures): `periodic`, woken at
/// 600 ms and starved by a FIFO hog to the end at 1 s, has one pending wake-up,
/// none run, 400 ms of wait and no missed period; `sleeper`, asleep on a timer
/// that has not fired, has none pending. The wait is 400 ms within 0.3 ms either
/// way: its timer counts from its own start, which the kernel makes microseconds
/// after the run's (shorter), and the wake-up takes microseconds (longer).
fn starved_wake_up_is_pending(lines: &[String]) -> Result<(), String> {
    let figures = |name: &str| -> Result<[u64; 4], String> {
        let needle = format!("name={name} ");
        let mut figures = [0; 4];
        for (figure, key) in
            figures
                .iter_mut()
                .zip(["pending_wakeups", "wakeups", "missed_periods", "wait_ns"])
        {
            *figure = value_in(lines, &needle, key)?;
        }
        Ok(figures)
    };
    let [pending, run, missed, wait] = figures("periodic")?;
    if (pending, run, missed) != (1, 0, 0) || !(399_700_000..=400_300_000).contains(&wait) {
        return Err(format!(
            "periodic: {pending} pending, {run} wake-ups run, {missed} missed, {wait} ns of wait; \
             expected 1, 0, 0 and 399.7..=400.3 ms"
        ));
    }
    let [pending, run, ..] = figures("sleeper")?;
    if (pending, run) != (0, 0) {
        return Err(format!(
            "sleeper: {pending} pending, {run} wake-ups run; expected 0, 0"
        ));
    }
    Ok(())
}

fn medium_waits_10_ms(lines: &[String]) -> Result<(), String> {
    medium_waits(lines, 10_000_000, 10_300_000)
}

fn medium_never_waits(lines: &[String]) -> Result<(), String> {
    medium_waits(lines, 0, 100_000)
}

/// `docs/linux-sched-reference.md` §2.8, "Periodic tasks in steady state": a 25 % duty,
/// 16 ms period task alone on a CPU swings between 225 and 288.
pub(crate) fn periodic_util_in_reference_range(lines: &[String]) -> Result<(), String> {
    let low = value_in(lines, "metric name=util_min.periodic ", "value")?;
    let high = value_in(lines, "metric name=util_max.periodic ", "value")?;
    if (225..=288).contains(&low) && (225..=288).contains(&high) {
        Ok(())
    } else {
        Err(format!(
            "util_avg of the periodic task swung over {low}..{high}, outside §2.8's 225..288"
        ))
    }
}

/// §2.8's closed form of a periodic task's steady swing, with the run time
/// and the period in PELT periods and y^32 = 1/2: the util when it goes to
/// sleep, `1024 · (1 − y^r) / (1 − y^p)`, and at its wake-up, that times
/// `y^(p − r)`. A period is 1,024 of PELT's 1,024-ns "microseconds" (§2.1
/// shifts nanoseconds right by 10), 1,048,576 ns, LISA's `PELT_WINDOW`.
pub(crate) fn pelt_swing(run_us: u64, period_us: u64) -> (f64, f64) {
    const PELT_PERIOD_NS: f64 = 1024.0 * 1024.0;
    let y = 0.5f64.powf(1.0 / 32.0);
    let r = run_us as f64 * 1000.0 / PELT_PERIOD_NS;
    let p = period_us as f64 * 1000.0 / PELT_PERIOD_NS;
    let peak = 1024.0 * (1.0 - y.powf(r)) / (1.0 - y.powf(p));
    (peak * y.powf(p - r), peak)
}

/// The sampled util_avg of a periodic task alone on its CPU reaches both ends
/// of §2.8's swing, each within 3: the trough, which the task's signals hold
/// only from its wake-up (which ages them) to their next update, and the
/// peak, which they hold from its sleep to its next wake-up. A sampler that
/// read stale values, or wake-ups that did not age the signals, would miss
/// the trough; a range check alone cannot see that.
pub(crate) fn periodic_util_swing(
    run_us: u64,
    period_us: u64,
) -> impl Fn(&[String]) -> Result<(), String> + Send + Sync + 'static {
    move |lines: &[String]| {
        let low = value_in(lines, "metric name=util_min.periodic ", "value")?;
        let high = value_in(lines, "metric name=util_max.periodic ", "value")?;
        let (trough, peak) = pelt_swing(run_us, period_us);
        if (low as f64 - trough).abs() <= 3.0 && (high as f64 - peak).abs() <= 3.0 {
            Ok(())
        } else {
            Err(format!(
                "util_avg of the periodic task ({run_us} us every {period_us} us) swung over \
                 {low}..{high}; §2.8's closed form gives {trough:.1}..{peak:.1} (± 3)"
            ))
        }
    }
}

/// The cost table of a run has every instrumented operation.
fn costs_reported(lines: &[String]) -> Result<(), String> {
    for op in [
        "enqueue_task",
        "dequeue_task",
        "pick_next_task",
        "pelt_update",
        "uclamp_update",
        "context_switch",
    ] {
        let needle = format!("report: cost cpu=all op={op} ");
        if !lines.iter().any(|l| l.contains(&needle)) {
            return Err(format!("no cost record for {op}"));
        }
    }
    Ok(())
}

/// Without uclamp there is no uclamp update to measure.
fn no_uclamp_costs(lines: &[String]) -> Result<(), String> {
    match lines.iter().find(|l| l.contains("op=uclamp_update ")) {
        Some(line) => Err(format!("uclamp is off but was measured: {line}")),
        None => Ok(()),
    }
}

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
fn task_runtimes(lines: &[String]) -> Vec<(String, u64)> {
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

/// The fair result of four equal-share groups (1, 2, 3 and 4 CPU-bound tasks on
/// 4 CPUs): each gets a quarter of the machine within 2 % of it, 0.5 points.
/// It is what the group shares alone must give (§2.7), so the pinned cases
/// check it; with the balancer free, it is what the rules give on most tick
/// timings but not all ([`GROUPS_WORST_POINTS`]).
pub(crate) const GROUPS_FAIR_POINTS: f64 = 0.5;

/// The bound of the worst placement the balancer leaves standing on the
/// equal-share groups scenario, in points from 25 %. Linux's rules, as the
/// reference gives them (§3), have a cycle there that a run leaves only by
/// chance (docs/performance.md, "The rules cycle in the simulator too"), through
/// three states whose CPU loads are each CPU's groups' per-CPU entity weights
/// (a group's 1024 shares split by its tasks there). In the state
/// 1,024 / 1,195 / 768 / 1,109 (CPU 0: g0; CPU 1: g1 g2 g2; CPU 2: g1 g3;
/// CPU 3: g2 g3 g3 g3), g2 gets (682/1,195 + 341/1,109)/4 = 21.97 % and g1
/// (512/1,195 + 512/768)/4 = 27.39 %; the other states are nearer 25 %. So a
/// run of the unpinned scenario, whichever path its tick phases take, leaves
/// every group within 25 % ± 3.1 points unless the kernel's mechanism fails
/// grossly. The rules' fairness itself is checked where time is exact, by the
/// simulator over 120 tick timings (`sim/tests/group_fairness.rs`).
pub(crate) const GROUPS_WORST_POINTS: f64 = 3.1;

/// Issue 4: 4 groups of 1, 2, 3 and 4 CPU-bound tasks with equal shares on 4
/// CPUs each get a quarter of the machine within `points` percentage points.
pub(crate) fn groups_share_equally(lines: &[String], points: f64) -> Result<(), String> {
    let tasks = task_runtimes(lines);
    let mut groups = [0u64; 4];
    for (name, runtime) in &tasks {
        let group: usize = name
            .strip_prefix('g')
            .and_then(|rest| rest.split('_').next())
            .and_then(|g| g.parse().ok())
            .ok_or_else(|| format!("task {name} names no group"))?;
        *groups.get_mut(group).ok_or("group beyond 3")? += runtime;
    }
    let total: u64 = groups.iter().sum();
    for (group, runtime) in groups.iter().enumerate() {
        let share = 100.0 * *runtime as f64 / total as f64;
        if (share - 25.0).abs() > points {
            return Err(format!(
                "group g{group} got {share:.2} % of the machine (expected 25 % ± {points} points)"
            ));
        }
    }
    Ok(())
}

/// The value of `key=` in the first line containing `needle`, a decimal with
/// one digit after the point, in tenths (`109.2` is 1092).
fn tenths_in(lines: &[String], needle: &str, key: &str) -> Result<u64, String> {
    let (value, line) = field_in(lines, needle, key)?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match value.split_once('.') {
        Some((whole, tenth)) if digits(whole) && digits(tenth) && tenth.len() == 1 => whole
            .parse::<u64>()
            .ok()
            .and_then(|whole| whole.checked_mul(10)?.checked_add(tenth.parse().ok()?))
            .ok_or_else(|| format!("{key}={value} out of range in: {line}")),
        _ => Err(format!(
            "{key}={value} is not a decimal with one digit after the point in: {line}"
        )),
    }
}

/// Issue 3's budget (a): at most 1.2 times the reference tree's AArch64
/// instructions per pick + dequeue + enqueue, as the issue gives them (about
/// 94 at N = 8 and 219 at N = 10,000 for the vruntime-ordered tree, 196 and
/// 337 for the EEVDF tree). Tenths of an instruction.
const TIMELINE_BUDGET_TENTHS: [(&str, usize, u64); 4] = [
    ("cfs", 8, 12 * 94),
    ("cfs", 10_000, 12 * 219),
    ("eevdf", 8, 12 * 196),
    ("eevdf", 10_000, 12 * 337),
];

/// The entity leftmost after the benchmark's 20,000 operations, as the C
/// calibration tree (`sched/examples/reference/rbtree_intrusive.c`, run with
/// `TREE N 20000`) ends them: the proof that the measured loop did the
/// workload's work.
const TIMELINE_LEFTMOST: [(&str, usize, u64); 8] = [
    ("cfs", 8, 4),
    ("cfs", 64, 35),
    ("cfs", 1024, 315),
    ("cfs", 10_000, 8205),
    ("eevdf", 8, 6),
    ("eevdf", 64, 28),
    ("eevdf", 1024, 757),
    ("eevdf", 10_000, 7319),
];

/// The timeline benchmark did the workload for every tree and N (same final
/// leftmost as the C tree, a nonzero cost), and the figures the issue budgets
/// are within budget. Instruction counts under icount are exact, so the check
/// is repeatable.
fn timeline_within_budget(lines: &[String]) -> Result<(), String> {
    let needle = |tree: &str, n: usize| format!("timeline_bench: tree={tree} n={n} ");
    for (tree, n, leftmost) in TIMELINE_LEFTMOST {
        let found = value_in(lines, &needle(tree, n), "leftmost")?;
        if found != leftmost {
            return Err(format!(
                "timeline {tree} at N={n} ended with leftmost {found}, not the C tree's {leftmost}"
            ));
        }
        let measured = tenths_in(lines, &needle(tree, n), "instructions_per_op")?;
        if measured == 0 {
            return Err(format!("timeline {tree} at N={n}: no instructions counted"));
        }
        let budget = TIMELINE_BUDGET_TENTHS
            .iter()
            .find(|&&(t, m, _)| (t, m) == (tree, n))
            .map_or(u64::MAX, |&(_, _, budget)| budget);
        if measured > budget {
            return Err(format!(
                "timeline {tree} at N={n}: {}.{} instructions per operation, over the budget of {}.{}",
                measured / 10,
                measured % 10,
                budget / 10,
                budget % 10
            ));
        }
    }
    Ok(())
}

/// The boot arguments of the 4-CPU fairness and group cases: the policy, with
/// skewed ticks (Linux's skew_tick=1). With every CPU ticking at the same
/// instants, QEMU icount costs the CPUs 0.4-0.8 s of each 2 s in lost turns
/// (`tick_offset_ns`).
fn skewed_ticks(policy: &str) -> &'static str {
    if policy == "cfs" {
        "sched=cfs skew_tick=1"
    } else {
        "sched=eevdf skew_tick=1"
    }
}

/// The tick configurations the 10 s equal-share groups check must pass in
/// (issue 10), `(HZ, skew_tick, in the default test command)`: the HZ values
/// Linux offers (100, 250, 300, 1000) and two more (200, 500), with the CPUs'
/// ticks skewed over half a period (Linux's `skew_tick=1`, see
/// [`skewed_ticks`]), and four of them with the ticks of all CPUs at the same
/// instants. Where the balancer settles depends on the instants at which the
/// CPUs tick and balance, so each is a different run of the same check.
///
/// Each case boots 10 s of virtual time on 4 busy CPUs, 40 G instructions,
/// about 40 s of wall time (37-47 s measured on the 2-core machine); all 20
/// would take the test command from about 6 to 19 minutes. The default
/// command runs half of them, the same five per policy: both ends of the HZ
/// range (100, 1000) in both tick modes, where the two policies fail or pass
/// for different reasons (HZ 100 without skew is where CFS, and EEVDF on an
/// earlier kernel, settled in a balance cycle), and HZ 250 with skew, the
/// default HZ that the other 4-CPU cases use. `cargo xtask test
/// --groups-sweep` runs all 20 ([`groups_sweep`]).
const GROUPS_SWEEP: [(u32, bool, bool); 10] = [
    (100, true, true),
    (200, true, false),
    (250, true, true),
    (300, true, false),
    (500, true, false),
    (1000, true, true),
    (100, false, true),
    (250, false, false),
    (300, false, false),
    (1000, false, true),
];

/// The 10 s equal-share groups check in one tick configuration.
fn groups_sweep_case(policy: &str, hz: u32, skew: bool) -> Case {
    let skew = u8::from(skew);
    groups_case(
        format!("groups-4-equal-shares-10s-{policy}-hz{hz}-skew{skew}"),
        "tests/scenarios/groups-4-equal-shares-10s.json",
        format!("sched={policy} hz={hz} skew_tick={skew}"),
        600,
        GROUPS_WORST_POINTS,
    )
}

/// The whole sweep of the 10 s equal-share groups check: every configuration
/// of [`GROUPS_SWEEP`] under EEVDF and CFS (`cargo xtask test --groups-sweep`).
pub(crate) fn groups_sweep() -> Vec<Case> {
    let mut cases = Vec::new();
    for policy in ["eevdf", "cfs"] {
        for &(hz, skew, _) in &GROUPS_SWEEP {
            cases.push(groups_sweep_case(policy, hz, skew));
        }
    }
    cases
}

/// A 4-CPU equal-share groups case: `scenario` booted with `append`, each
/// group's share of the machine checked by [`groups_share_equally`] within
/// `points` of 25 %.
fn groups_case(
    name: impl Into<String>,
    scenario: &'static str,
    append: impl Into<String>,
    timeout_seconds: u64,
    points: f64,
) -> Case {
    Case::new(name, "fairway")
        .icount()
        .cpus(4)
        .scenario(scenario)
        .append(append)
        .timeout(timeout_seconds)
        .check(move |lines| groups_share_equally(lines, points))
}

/// Cases of issue 4 that Fairway does not pass yet (`cargo xtask test --gaps`
/// runs them and prints how far off they are; the default test command and CI
/// leave them out, so that they are visible without hiding regressions).
pub(crate) fn known_gaps() -> Vec<Case> {
    let mut cases = Vec::new();
    for policy in ["eevdf", "cfs"] {
        cases.push(groups_case(
            format!("groups-4-equal-shares-4cpus-{policy}"),
            "tests/scenarios/groups-4-equal-shares.json",
            skewed_ticks(policy),
            180,
            GROUPS_FAIR_POINTS,
        ));
    }
    cases
}

pub(crate) fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case::new("sched-pipe-100k-pinned", "fairway")
            .icount()
            .cpus(2)
            .append("workload=sched-pipe loops=100000 pinned=1 uclamp=1")
            .timeout(120)
            .contains("sched-pipe: 100000 round trips, every value checked")
            .check(costs_reported),
        Case::new("sched-pipe-two-cpus-depth3", "fairway")
            .icount()
            .cpus(2)
            .append("workload=sched-pipe loops=5000 depth=3")
            .contains("sched-pipe: 5000 round trips, every value checked")
            .contains("depth 3, CPU 0 <-> CPU 1"),
        Case::new("sched-pipe-uclamp-off", "fairway")
            .icount()
            .cpus(1)
            .append("workload=sched-pipe loops=5000 pinned=1 uclamp=0")
            .contains("config=eevdf-hz250-uclampoff-depth0-pinned")
            .check(no_uclamp_costs),
        Case::new("hackbench-4x10x50", "fairway")
            .icount()
            .cpus(4)
            .append("workload=hackbench groups=4 fds=10 loops=50")
            .contains("20000 of 20000 messages received, 0 out of order or damaged"),
        Case::new("hackbench-bad-option", "fairway")
            .append("workload=hackbench groups=0")
            .expect(crate::test::Expect::Failure)
            .contains("bootargs: groups=0: outside 1..=40"),
        // rt-app's events in the kernel: a chain through suspend/resume, a
        // condition signal and fork that only ends at 7 ms if each step blocked
        // until the one before it (the agreement case covers the rest).
        Case::new("rtapp-events-chain-4cpus", "fairway")
            .icount()
            .cpus(4)
            .scenario("tests/scenarios/rtapp-events-chain-4cpus.json")
            .contains("name=kid-0")
            .check(chain_ends_at_7_ms),
        Case::new("rtapp-periodic-38pct-2cpus", "fairway")
            .icount()
            .cpus(2)
            .scenario("tests/scenarios/periodic-256-38pct-2cpus.json")
            .contains("name=p-255")
            .check(periodic_load_misses_nothing),
        Case::new("rtapp-priority-inheritance", "fairway")
            .icount()
            .cpus(1)
            .scenario("tests/scenarios/pi-inversion.json")
            .contains("name=medium")
            .check(medium_waits_10_ms),
        Case::new("rtapp-pending-wakeup", "fairway")
            .icount()
            .cpus(1)
            .scenario("tests/scenarios/pending-wakeup.json")
            .contains("name=sleeper")
            .check(starved_wake_up_is_pending),
        Case::new("rtapp-priority-inheritance-off", "fairway")
            .icount()
            .cpus(1)
            .scenario("tests/scenarios/pi-inversion-off.json")
            .contains("name=medium")
            .check(medium_never_waits),
        Case::new("rtapp-deadlock-is-reported", "fairway")
            .icount()
            .cpus(2)
            .scenario("tests/scenarios/rtapp-deadlock.json")
            .expect(crate::test::Expect::Failure)
            .contains("every live task is blocked on a resource (a, b)"),
        Case::new("report-byte-identical-icount", "fairway")
            .icount()
            .cpus(2)
            .append("workload=sched-pipe loops=3000")
            .twice_identical(),
    ];
    // The sampled PELT swing of a task pinned to CPU 0 (the sampler runs on
    // CPU 1), for three duty cycles at HZ 1000 and 250, sampled every 100 µs
    // after a second (2^-31 of the start left).
    for (scenario, run_us, period_us) in [
        ("tests/scenarios/periodic-25-16ms.json", 4000, 16000),
        ("tests/scenarios/periodic-30pct-20ms.json", 6000, 20000),
        ("tests/scenarios/periodic-50pct-16ms.json", 8000, 16000),
    ] {
        for hz in [1000, 250] {
            let duty = 100 * run_us / period_us;
            let period_ms = period_us / 1000;
            cases.push(
                Case::new(
                    format!("rtapp-periodic-util-swing-{duty}pct-{period_ms}ms-hz{hz}"),
                    "fairway",
                )
                .icount()
                .cpus(2)
                .scenario(scenario)
                .append(format!("hz={hz} util_sample_us=100 util_warmup_ms=1000"))
                .contains("report: metric name=util_min.periodic")
                .check(periodic_util_swing(run_us, period_us)),
            );
        }
    }
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
        // Equal-share groups of 1 to 4 hogs, balanced freely over 10 s, in
        // the default half of the tick configurations of the sweep: each
        // group within the worst placement the balancer leaves standing
        // (25 % ± 3.1 points, [`GROUPS_WORST_POINTS`]). These cases guard
        // the kernel's mechanism against gross failure; the rules' fairness
        // (± 0.5 points on most timings, unbiased on average) is checked by
        // the simulator over 120 timings (`sim/tests/group_fairness.rs`),
        // where time is exact. Over 2 s Linux's own start-up (fork placement
        // 3/3/2/2, the first busy balance at 64 ms) costs the lone group
        // ~40 ms, the whole 0.5-point tolerance by itself, so that window
        // stays in `known_gaps()`.
        for &(hz, skew, _) in GROUPS_SWEEP.iter().filter(|c| c.2) {
            cases.push(groups_sweep_case(policy, hz, skew));
        }
        // The same groups pinned to the fair placement (g0 | g1, g3, g3 |
        // g1, g3, g3 | g2, g2, g2), where every root load is 1024: the group
        // shares alone (§2.7) must give each group its quarter, whatever
        // the balancer would have done (the case above also depends on that).
        cases.push(groups_case(
            format!("groups-4-equal-shares-10s-pinned-4cpus-{policy}"),
            "tests/scenarios/groups-4-equal-shares-10s-pinned.json",
            skewed_ticks(policy),
            600,
            GROUPS_FAIR_POINTS,
        ));
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
    cases.push(
        Case::new("migration-keeps-util", "migration")
            .icount()
            .cpus(3)
            .contains("migration: util_avg"),
    );
    cases.push(
        Case::new("load-1000-tasks-8-cpus", "load")
            .icount()
            .cpus(8)
            .timeout(300)
            .contains("load: 1000/1000 tasks finished on 8 CPUs"),
    );
    cases.push(
        Case::new("timeline-bench-aarch64", "timeline_bench")
            .icount()
            .cpus(1)
            .check(timeline_within_budget),
    );
    for policy in ["cfs", "rr"] {
        cases.push(
            Case::new(format!("sched-pipe-{policy}"), "fairway")
                .icount()
                .cpus(2)
                .append(if policy == "cfs" {
                    "workload=sched-pipe loops=3000 sched=cfs"
                } else {
                    "workload=sched-pipe loops=3000 sched=rr"
                })
                .contains("sched-pipe: 3000 round trips, every value checked"),
        );
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::{
        TIMELINE_LEFTMOST, eevdf_lag_bound_ns, runtime_within_lag_bound_of_cpu_share,
        timeline_within_budget,
    };

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

    /// A benchmark log with every figure, `cfs_8` in place of CFS at N = 8.
    fn log(cfs_8: &str) -> Vec<String> {
        TIMELINE_LEFTMOST
            .iter()
            .map(|&(tree, n, leftmost)| {
                let value = if (tree, n) == ("cfs", 8) { cfs_8 } else { "100.0" };
                format!(
                    "0.004 timeline_bench: tree={tree} n={n} instructions_per_op={value} ops=20000 leftmost={leftmost}"
                )
            })
            .collect()
    }

    #[test]
    fn timeline_budget_is_one_point_two_times_the_issue_figures() {
        // 1.2 × 94 = 112.8: equal passes, a tenth more fails.
        assert_eq!(timeline_within_budget(&log("112.8")), Ok(()));
        let error = timeline_within_budget(&log("112.9")).unwrap_err();
        assert!(
            error.contains("cfs at N=8") && error.contains("112.8"),
            "{error}"
        );
    }

    #[test]
    fn timeline_budget_needs_every_figure_well_formed() {
        let mut lines = log("100.0");
        lines.retain(|l| !l.contains("tree=eevdf n=64 "));
        let error = timeline_within_budget(&lines).unwrap_err();
        assert!(error.contains("tree=eevdf n=64"), "{error}");
        for bad in ["1x0.0", "112.08", "112.+5", "112", ".5"] {
            let error = timeline_within_budget(&log(bad)).unwrap_err();
            assert!(error.contains("not a decimal"), "{bad}: {error}");
        }
    }

    #[test]
    fn timeline_budget_needs_the_workload_done() {
        let error = timeline_within_budget(&log("0.0")).unwrap_err();
        assert!(error.contains("no instructions"), "{error}");
        let lines: Vec<String> = log("100.0")
            .into_iter()
            .map(|l| {
                l.replace(
                    "n=1024 instructions_per_op=100.0 ops=20000 leftmost=757",
                    "n=1024 instructions_per_op=100.0 ops=20000 leftmost=756",
                )
            })
            .collect();
        let error = timeline_within_budget(&lines).unwrap_err();
        assert!(
            error.contains("eevdf at N=1024") && error.contains("757"),
            "{error}"
        );
    }
}

#[cfg(test)]
mod pelt_swing_tests {
    use super::pelt_swing;

    /// §2.8's table: 25 % of 16 ms swings over 225.3 … 288.6, 50 % of 16 ms
    /// over 469 … 554, 25 % of 100 ms over 100 … 473 (the table rounds).
    #[test]
    fn closed_form_matches_the_reference_table() {
        for (run, period, low, high) in [
            (4000, 16000, 225.3, 288.6),
            (8000, 16000, 469.0, 554.0),
            (25000, 100000, 100.0, 473.0),
        ] {
            let (trough, peak) = pelt_swing(run, period);
            assert!(
                (trough - low).abs() < 1.0,
                "{run}/{period}: trough {trough}"
            );
            assert!((peak - high).abs() < 1.0, "{run}/{period}: peak {peak}");
        }
    }
}
