//! The heterogeneous boards (`fairway` image; issue 13, docs/boards.md):
//! each boots with its capacities, operating points and energy models, bad
//! board data in a device tree stops the boot, and the execution model: a
//! task's `run` work is µs at capacity 1024 and the highest frequency, so it
//! takes `work × 1024 / capacity × 1024 / frequency_scale` of CPU time, and
//! the energy meter counts the busy time at each operating point times the
//! energy model's power there. Each execution-model case runs one 10 ms
//! `run` pinned to one CPU under a governor that holds one frequency, and
//! checks the task's CPU time and its domain's energy against those
//! formulas, worked here from docs/linux-sched-reference.md §7.2, §7.3 and
//! §5.1 (not from the kernel's output).

use crate::test::checks::value_in;
use crate::test::dts::replace_once;
use crate::test::{Case, DtsEdit, Expect, OutputCheck};

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
/// `clock-latency-ns` ([`with_cpu1_opp_latency`], below). The
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
fn transition_latency_0(lines: &[String]) -> Result<(), String> {
    runtime_after_transition_latency(lines, 0)
}

/// 2 ms of transition latency: 10.941406 ms.
fn transition_latency_2ms(lines: &[String]) -> Result<(), String> {
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

/// The cases of the execution model.
fn execution_model_cases() -> Vec<Case> {
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
        .check(periodic_util_in_reference_range),
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

/// `docs/linux-sched-reference.md` §2.8, "Periodic tasks in steady state": a 25 % duty,
/// 16 ms period task alone on a CPU swings between 225 and 288.
fn periodic_util_in_reference_range(lines: &[String]) -> Result<(), String> {
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

/// QEMU's tree with CPU 1 alone in a performance domain (its own copy of
/// the idle-power case's 450/850 MHz table, each OPP giving
/// `clock-latency-ns = <latency_ns>`) and CPUs 0, 2 and 3 sharing the plain
/// table. CPU 1's domain then hears only CPU 1: the starter, a SCHED_FIFO
/// task on CPU 0 that asks for the highest OPP (§6.1: RT runnable), moves
/// the other domain only.
fn with_cpu1_opp_latency(dts: &str, latency_ns: u64) -> Result<String, String> {
    const OPPS: [(u64, u32); 2] = [(450_000_000, 820_000), (850_000_000, 1_000_000)];
    let mut out = with_opp_table(dts, 140, &OPPS)?;
    out = replace_once(
        &out,
        "reg = <0x01>;\n\t\t\tdynamic-power-coefficient = <140>;\n\t\t\toperating-points-v2 = <&test_opp>;",
        "reg = <0x01>;\n\t\t\tdynamic-power-coefficient = <140>;\n\t\t\toperating-points-v2 = <&test_opp_cpu1>;",
    )?;
    out.push_str(
        "\n/ {\n\ttest_opp_cpu1: opp-table-test-cpu1 {\n\t\tcompatible = \"operating-points-v2\";\n",
    );
    for (hz, microvolt) in OPPS {
        out.push_str(&format!(
            "\t\topp-{hz} {{\n\t\t\topp-hz = /bits/ 64 <{hz}>;\n\t\t\tclock-latency-ns = <{latency_ns}>;\n\t\t\topp-microvolt = <{microvolt}>;\n\t\t}};\n"
        ));
    }
    out.push_str("\t};\n};\n");
    Ok(out)
}

/// QEMU's tree (4 CPUs) with every CPU given `dynamic-power-coefficient`
/// and one OPP table of `(opp-hz, opp-microvolt)` (the malformed-board
/// cases).
fn with_opp_table(dts: &str, coefficient: u32, opps: &[(u64, u32)]) -> Result<String, String> {
    let mut out = dts.to_string();
    for cpu in 0..4 {
        out = replace_once(
            &out,
            &format!("reg = <0x{cpu:02x}>;\n\t\t\tenable-method"),
            &format!(
                "reg = <0x{cpu:02x}>;\n\t\t\tdynamic-power-coefficient = <{coefficient}>;\n\t\t\t\
                 operating-points-v2 = <&test_opp>;\n\t\t\tenable-method"
            ),
        )?;
    }
    out.push_str(
        "\n/ {\n\ttest_opp: opp-table-test {\n\t\tcompatible = \"operating-points-v2\";\n",
    );
    for (hz, microvolt) in opps {
        out.push_str(&format!(
            "\t\topp-{hz} {{\n\t\t\topp-hz = /bits/ 64 <{hz}>;\n\t\t\topp-microvolt = <{microvolt}>;\n\t\t}};\n"
        ));
    }
    out.push_str("\t};\n};\n");
    Ok(out)
}

/// The boards' cases: each board boots, malformed board data is refused,
/// and the execution model.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = boot_cases();
    cases.extend(opp_table_cases());
    cases.extend(execution_model_cases());
    cases
}

/// Each heterogeneous board boots with its capacities, performance
/// domains and energy models as its data gives them, and EAS on.
fn boot_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // The heterogeneous boards: QEMU's tree with the board's CPUs merged in. The
    // capacities and OPPs are docs/linux-sched-reference.md §7.2 and §7.3's: Juno
    // r0's LITTLE = 578 × 850 / (1024 × 1100) × 1024 = 446, r2's = 485 × 950 /
    // (1024 × 1200) × 1024 = 383, in Juno's logical order [L b b L L L].
    // The energy models' ends are §7.2 and §7.3's derived tables (µW, cost v6.9+).
    for (board, capacity, little, big, little_model, big_model) in [
        (
            "juno-r0",
            446,
            "5 OPPs, 450 to 850 MHz",
            "5 OPPs, 450 to 1100 MHz",
            "5 states, 42361 to 119000 uW, cost 1794 to 2668, 0 inefficient",
            "5 states, 160367 to 583000 uW, cost 3836 to 5693, 0 inefficient",
        ),
        (
            "juno-r2",
            383,
            "3 OPPs, 450 to 950 MHz",
            "3 OPPs, 600 to 1200 MHz",
            "3 states, 42361 to 133000 uW, cost 2340 to 3472, 0 inefficient",
            "3 states, 181548 to 540000 uW, cost 3545 to 5273, 0 inefficient",
        ),
    ] {
        cases.push(
            Case::new(format!("board-{board}-boots"), "fairway")
                .board(board)
                .cpus(6)
                .icount()
                .append("workload=sched-pipe loops=1000")
                .contains(format!(
                    "cpus: capacity [{capacity}, 1024, 1024, {capacity}, {capacity}, {capacity}], \
                     cluster [1, 0, 0, 1, 1, 1]"
                ))
                .contains(format!("perf domain 0: cpus 0x39, {little}"))
                .contains(format!("perf domain 1: cpus 0x6, {big}"))
                .contains(format!(
                    "energy model: perf domain 0 (cpus 0x39): {little_model}"
                ))
                .contains(format!(
                    "energy model: perf domain 1 (cpus 0x6): {big_model}"
                ))
                // §5.3: asymmetric capacities, schedutil, a model per domain.
                .contains("eas: on (2 perf domains)")
                .contains("sched-pipe: 1000 round trips, every value checked"),
        );
    }
    // The Pixel-6-like board (boards/pixel6/README.md): §7.4's capacities 160 /
    // 498 / 1024 from gs101's dmips and the phone's highest frequencies, its 42
    // OPPs, and the energy models' ends computed by hand from the board's
    // (synthetic) voltages: A55 at 300 MHz: 70 × 550² × 300 / 10^6 = 6352 uW,
    // performance 160 × 300 / 1803 = 26, cost 6352 × 10 / 26 = 2443; at
    // 1803 MHz: 70 × 950² × 1803 / 10^6 = 113904 uW, cost 113904 × 10 / 160 =
    // 7119; A76: 284 × 550² × 400 / 10^6 = 34364 (perf 88, cost 3905) to
    // 284 × 1000² × 2253 / 10^6 = 639852 (cost 12848); X1: 650 × 550² × 500 /
    // 10^6 = 98312 (perf 182, cost 5401) to 650 × 1050² × 2802 / 10^6 =
    // 2007983 (cost 19609).
    cases.push(
        Case::new("board-pixel6-boots", "fairway")
            .board("pixel6")
            .cpus(8)
            .icount()
            .append("workload=sched-pipe loops=1000")
            .contains(
                "cpus: capacity [160, 160, 160, 160, 498, 498, 1024, 1024], \
                 cluster [0, 0, 0, 0, 1, 1, 2, 2]",
            )
            .contains("perf domain 0: cpus 0xf, 11 OPPs, 300 to 1803 MHz")
            .contains("perf domain 1: cpus 0x30, 14 OPPs, 400 to 2253 MHz")
            .contains("perf domain 2: cpus 0xc0, 17 OPPs, 500 to 2802 MHz")
            .contains(
                "energy model: perf domain 0 (cpus 0xf): 11 states, 6352 to 113904 uW, \
                 cost 2443 to 7119, 0 inefficient",
            )
            .contains(
                "energy model: perf domain 1 (cpus 0x30): 14 states, 34364 to 639852 uW, \
                 cost 3905 to 12848, 0 inefficient",
            )
            .contains(
                "energy model: perf domain 2 (cpus 0xc0): 17 states, 98312 to 2007983 uW, \
                 cost 5401 to 19609, 0 inefficient",
            )
            .contains("eas: on (3 perf domains)")
            .contains("sched-pipe: 1000 round trips, every value checked"),
    );
    cases
}

/// Board data read from the OPP tables: bad data refused naming the node
/// and the problem, the idle power, and the transition latency's effect.
fn opp_table_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // Bad board data (issue 13): an OPP table whose frequencies fall, and an
    // energy model whose power is above Linux's 64 W limit (§5.1), stop the
    // boot with a message naming the node and the problem.
    cases.push(
        Case::new("dt-opp-table-not-increasing", "fairway")
            .dts(|dts| with_opp_table(dts, 530, &[(900_000_000, 900_000), (800_000_000, 850_000)]))
            .expect(Expect::Failure)
            .contains("frequencies must increase down the table"),
    );
    cases.push(
        Case::new("dt-opp-table-idle-power", "fairway")
            .append("workload=sched-pipe loops=100")
            .dts(|dts| {
                let out = with_opp_table(dts, 140, &[(450_000_000, 820_000), (850_000_000, 1_000_000)])?;
                replace_once(
                    &out,
                    "compatible = \"operating-points-v2\";",
                    "compatible = \"operating-points-v2\";\n\t\tfairway,idle-power-microwatt = <2500>;",
                )
            })
            .contains("cpufreq: perf domain 0 (cpus 0xf): schedutil, 850 MHz, rate limit 1000 us, transition latency 0 ns, idle power 2500 uW"),
    );
    // A board's transition latency delays each frequency change (issue 13,
    // point 3): 0 and 2 ms (`clock-latency-ns` on every OPP of CPU 1's own
    // table; the rate limit becomes 2 ms, §6.2). Expected figures: the
    // checks' doc comments in this file.
    let latency_cases: [(u64, DtsEdit, OutputCheck); 2] = [
        (0, |dts| with_cpu1_opp_latency(dts, 0), transition_latency_0),
        (
            2_000_000,
            |dts| with_cpu1_opp_latency(dts, 2_000_000),
            transition_latency_2ms,
        ),
    ];
    for (latency, edit, check) in latency_cases {
        let rate_limit_us = if latency == 0 { 1000 } else { 2000 };
        cases.push(
            Case::new(
                format!("dt-opp-table-transition-latency-{}us", latency / 1000),
                "fairway",
            )
            .icount()
            .scenario("tests/scenarios/run-10ms-cpu1-util-min-after-idle.json")
            .append("cpufreq_update=switch")
            .dts(edit)
            .contains(format!(
                "cpufreq: perf domain 1 (cpus 0x2): schedutil, 850 MHz, rate limit \
                 {rate_limit_us} us, transition latency {latency} ns"
            ))
            // Two changes: down to 450 MHz while CPU 1 idles through the
            // task's delay (the run starts its domains at 850 MHz), then up
            // for the boosted task.
            .contains("report: metric name=freq_changes.pd1 value=2")
            .check(check),
        );
    }
    cases.push(
        Case::new("dt-energy-model-above-64w", "fairway")
            .dts(|dts| with_opp_table(dts, 100_000_000, &[(1_000_000_000, 1_000_000)]))
            .expect(Expect::Failure)
            .contains(
                "energy model refused: state 0: power 100000000000 uW is outside 1..=64000000",
            ),
    );
    cases
}
