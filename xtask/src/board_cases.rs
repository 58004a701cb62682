//! The heterogeneous boards' execution model (issue 13, docs/boards.md): a
//! task's `run` work is µs at capacity 1024 and the highest frequency, so it
//! takes `work × 1024 / capacity × 1024 / frequency_scale` of CPU time, and
//! the energy meter counts the busy time at each operating point times the
//! energy model's power there. Each case runs one 10 ms `run` pinned to one
//! CPU under a governor that holds one frequency, and checks the task's CPU
//! time and its domain's energy against those formulas, worked here from
//! docs/linux-sched-reference.md §7.2, §7.3 and §5.1 (not from the kernel's
//! output).

use crate::test::Case;

/// The work every case runs: 10 ms (`tests/scenarios/run-10ms-cpu*.json`).
const WORK_NS: u64 = 10_000_000;
/// The task's CPU time besides its work: its start, the last turn of the
/// work loop (a few hundred ns) and its exit (measured: 2.2 µs).
const TASK_OVERHEAD_NS: u64 = 20_000;
/// Busy time on the task's CPU besides the work: the starter and `main`
/// creating the task and ending the run, and the switches (measured: 6.6 µs
/// on Juno r0's CPU 0).
const OTHER_BUSY_NS: u64 = 100_000;

/// The CPU time `WORK_NS` of work takes on a CPU of `capacity` at frequency
/// scale `scale` (`f × 1024 / fmax`, floored as Linux's
/// `arch_scale_freq_capacity`).
fn cpu_time_ns(capacity: u64, scale: u64) -> u64 {
    WORK_NS * 1024 * 1024 / (capacity * scale)
}

/// The task `work`'s runtime and the metric `energy_nj.pdN`.
fn figures(lines: &[String], domain: usize) -> Result<(u64, u64), String> {
    let runtime = lines
        .iter()
        .filter(|l| l.contains("report: task ") && l.contains(" name=work "))
        .find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("runtime_ns="))
                .and_then(|v| v.parse().ok())
        })
        .ok_or("no report line of task work with a runtime_ns")?;
    let key = format!("report: metric name=energy_nj.pd{domain} value=");
    let energy = lines
        .iter()
        .find_map(|l| l.split(&key).nth(1).and_then(|v| v.trim().parse().ok()))
        .ok_or(format!("no metric energy_nj.pd{domain}"))?;
    Ok((runtime, energy))
}

/// Checks the runtime (the analytic CPU time, plus at most the task's own
/// overhead; the issue allows a tick) and the energy (`power × busy time`, the busy time between the
/// work's and `OTHER_BUSY_NS` more).
fn check(
    lines: &[String],
    domain: usize,
    capacity: u64,
    scale: u64,
    power_uw: u64,
) -> Result<(), String> {
    let (runtime, energy) = figures(lines, domain)?;
    let expected = cpu_time_ns(capacity, scale);
    if runtime < expected || runtime > expected + TASK_OVERHEAD_NS {
        return Err(format!(
            "10 ms of work at capacity {capacity}, scale {scale}: runtime {runtime} ns, expected \
             {expected} ns (10 ms x 1024 / {capacity} x 1024 / {scale}) to {} ns",
            expected + TASK_OVERHEAD_NS
        ));
    }
    let low = power_uw * expected / 1_000_000;
    let high = power_uw * (expected + OTHER_BUSY_NS) / 1_000_000;
    if !(low..=high).contains(&energy) {
        return Err(format!(
            "energy of perf domain {domain}: {energy} nJ, expected {power_uw} uW x the busy time: \
             {low} to {high} nJ"
        ));
    }
    Ok(())
}

/// The transition latency cases: CPU 1 (capacity 1024) alone in a
/// performance domain with a test table of 450 and 850 MHz whose OPPs give
/// `clock-latency-ns` (`xtask/src/test.rs`, `with_cpu1_opp_latency`). The
/// idle domain sits at 450 MHz (scale 450 × 1024 / 850 = 542) when the task
/// starts, and its uclamp_min of 1024 makes schedutil ask for 850 MHz at its
/// first switch-in (`cpufreq_update=switch`, §6.1). The change takes effect
/// `latency` later (the point 3): until then the work goes at
/// 542/1024 of its pace, so 10 ms of work takes
/// `10 ms + latency × (1024 − 542) / 1024` of CPU time (10.941406 ms for
/// 2 ms), plus at most the task's own overhead. The domain's energy is the
/// energy model's power at each OPP (§5.1: `C · mV² · MHz / 10^6` µW with
/// C = 140: 42,361 µW at 450 MHz and 820 mV, 119,000 µW at 850 MHz and
/// 1,000 mV) times the time there: `latency` at 450 MHz, the rest of the
/// runtime at 850 MHz, plus the CPU's other busy time.
fn runtime_after_transition_latency(lines: &[String], latency_ns: u64) -> Result<(), String> {
    const POWER_450_UW: u64 = 140 * 820 * 820 * 450 / 1_000_000;
    const POWER_850_UW: u64 = 140 * 1000 * 1000 * 850 / 1_000_000;
    let (runtime, energy) = figures(lines, 1)?;
    let expected = WORK_NS + latency_ns * (1024 - 542) / 1024;
    if runtime < expected || runtime > expected + TASK_OVERHEAD_NS {
        return Err(format!(
            "10 ms of work with the change to 850 MHz {latency_ns} ns late: runtime {runtime} ns, \
             expected {expected} ns (10 ms + latency x 482 / 1024) to {} ns",
            expected + TASK_OVERHEAD_NS
        ));
    }
    let at_fmax = expected - latency_ns;
    let low = (POWER_450_UW * latency_ns + POWER_850_UW * at_fmax) / 1_000_000;
    let high = low + POWER_850_UW * OTHER_BUSY_NS / 1_000_000;
    if !(low..=high).contains(&energy) {
        return Err(format!(
            "energy of perf domain 1: {energy} nJ, expected {POWER_450_UW} uW x {latency_ns} ns + \
             {POWER_850_UW} uW x {at_fmax} ns, plus other busy time: {low} to {high} nJ"
        ));
    }
    Ok(())
}

/// No transition latency: the change is at once, 10 ms.
pub(crate) fn transition_latency_0(lines: &[String]) -> Result<(), String> {
    runtime_after_transition_latency(lines, 0)
}

/// 2 ms of transition latency: 10.941406 ms.
pub(crate) fn transition_latency_2ms(lines: &[String]) -> Result<(), String> {
    runtime_after_transition_latency(lines, 2_000_000)
}

/// Juno r0, CPU 0 (LITTLE, capacity 446), `performance`: 850 MHz (scale
/// 1024, 119,000 µW): 10 × 1024 / 446 = 22.96 ms, 2.732 mJ.
fn juno_r0_little_fmax(lines: &[String]) -> Result<(), String> {
    check(lines, 0, 446, 1024, 119_000)
}

/// Juno r0, CPU 0, `powersave`: 450 MHz, scale 450 × 1024 / 850 = 542
/// (42,361 µW): 43.38 ms, 1.838 mJ.
fn juno_r0_little_450(lines: &[String]) -> Result<(), String> {
    check(lines, 0, 446, 542, 42_361)
}

/// Juno r2, CPU 1 (A72, capacity 1024), `performance`: 1200 MHz (540,000
/// µW): 10 ms, 5.4 mJ.
fn juno_r2_big_fmax(lines: &[String]) -> Result<(), String> {
    check(lines, 1, 1024, 1024, 540_000)
}

/// Juno r2, CPU 1, `powersave`: 600 MHz, half the highest (scale 512,
/// 181,548 µW): the same work takes twice as long, 20 ms, 3.631 mJ.
fn juno_r2_big_half(lines: &[String]) -> Result<(), String> {
    check(lines, 1, 1024, 512, 181_548)
}

/// The sum of the metrics named `prefix.pdN`.
fn domain_sum(lines: &[String], prefix: &str) -> u64 {
    let key = format!("report: metric name={prefix}.pd");
    lines
        .iter()
        .filter_map(|l| l.split(&key).nth(1))
        .filter_map(|rest| rest.split("value=").nth(1)?.trim().parse::<u64>().ok())
        .sum()
}

/// `cpufreq_update=switch` (§6.2, the 2023 proposal) calls the governor at
/// every context switch: a sched-pipe round trip between two CPUs switches
/// each of them to its task and back to idle, at least 4 calls per round
/// trip.
fn governor_called_at_each_switch(lines: &[String]) -> Result<(), String> {
    let calls = domain_sum(lines, "governor_calls");
    if calls >= 4 * PIPE_LOOPS {
        Ok(())
    } else {
        Err(format!(
            "{calls} governor calls for {PIPE_LOOPS} round trips, fewer than 4 each"
        ))
    }
}

/// `cpufreq_update=pelt` (Linux) calls it when PELT's signals change, about
/// once per 1.024 ms per busy CPU, and at the tick: far fewer calls than
/// round trips (each takes about 13 µs).
fn governor_called_on_pelt_changes(lines: &[String]) -> Result<(), String> {
    let calls = domain_sum(lines, "governor_calls");
    if calls > 0 && calls < PIPE_LOOPS / 4 {
        Ok(())
    } else {
        Err(format!(
            "{calls} governor calls for {PIPE_LOOPS} round trips: expected some, and fewer than one per 4"
        ))
    }
}

/// sched-pipe's round trips in the call-site cases.
const PIPE_LOOPS: u64 = 5000;

/// The cases.
pub(crate) fn cases() -> Vec<Case> {
    let case = |name: &str, board: &'static str, scenario: &'static str, options: &str| {
        Case::new(format!("board-{name}"), "fairway")
            .board(board)
            .cpus(6)
            .icount()
            .scenario(scenario)
            .append(options.to_string())
            .contains("report: metric name=freq_changes.pd0 value=0")
    };
    vec![
        case(
            "juno-r0-little-10ms-fmax",
            "juno-r0",
            "tests/scenarios/run-10ms-cpu0.json",
            "governor=performance",
        )
        .check(juno_r0_little_fmax),
        case(
            "juno-r0-little-10ms-450mhz",
            "juno-r0",
            "tests/scenarios/run-10ms-cpu0.json",
            "governor=powersave",
        )
        .check(juno_r0_little_450),
        case(
            "juno-r2-big-10ms-fmax",
            "juno-r2",
            "tests/scenarios/run-10ms-cpu1.json",
            "governor=performance",
        )
        .check(juno_r2_big_fmax),
        case(
            "juno-r2-big-10ms-half-frequency",
            "juno-r2",
            "tests/scenarios/run-10ms-cpu1.json",
            "governor=powersave",
        )
        .check(juno_r2_big_half),
        // PELT's frequency invariance (§2.3): 4 ms of work every 16 ms at
        // half frequency keeps the CPU busy 50 % of the wall time, and its
        // util_avg must swing where §2.8's vector "50 % wall duty on a
        // cap-1024 CPU at half freq" puts it, 225..288 (about 256, not 512).
        case(
            "juno-r2-big-half-frequency-util",
            "juno-r2",
            "tests/scenarios/periodic-work4ms-16ms-cpu1.json",
            "governor=powersave util_sample_us=250",
        )
        .contains("report: metric name=util_min.periodic")
        .check(crate::workload_cases::periodic_util_in_reference_range),
        Case::new("board-juno-r2-cpufreq-update-switch", "fairway")
            .board("juno-r2")
            .cpus(6)
            .icount()
            .append(format!(
                "workload=sched-pipe loops={PIPE_LOOPS} cpufreq_update=switch"
            ))
            .check(governor_called_at_each_switch),
        Case::new("board-juno-r2-cpufreq-update-pelt", "fairway")
            .board("juno-r2")
            .cpus(6)
            .icount()
            .append(format!(
                "workload=sched-pipe loops={PIPE_LOOPS} cpufreq_update=pelt"
            ))
            .check(governor_called_on_pelt_changes),
    ]
}
