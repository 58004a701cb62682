//! QEMU test cases of energy-aware placement (issue 14, docs/eas.md): when
//! the kernel turns EAS on and why it keeps it off (§5.3), and uclamp moving
//! a small task to a big CPU and raising that domain's frequency (§3.4,
//! §5.4), with expectations worked from the boards' numbers, not from the
//! kernel's output.

use crate::test::Case;

/// The value of `key=` in the report line of task `name`.
fn task_field(lines: &[String], name: &str, key: &str) -> Result<u64, String> {
    let needle = format!(" name={name} ");
    let line = lines
        .iter()
        .find(|l| l.contains("report: task ") && l.contains(&needle))
        .ok_or_else(|| format!("no report line of task {name}"))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no {key}= in: {line}"))
}

/// The value of metric `name`.
fn metric(lines: &[String], name: &str) -> Result<u64, String> {
    let key = format!("report: metric name={name} value=");
    lines
        .iter()
        .find_map(|l| l.split(&key).nth(1).and_then(|v| v.trim().parse().ok()))
        .ok_or_else(|| format!("no metric {name}"))
}

/// `eas-uclamp-boost.json` on Juno r2 (§7.3: LITTLE CPUs 0, 3, 4, 5 of
/// capacity 383, big CPUs 1 and 2 of capacity 1024 at 600 / 1000 / 1200 MHz):
///
/// - "plain" (1 ms of work every 16 ms: util about 64 at the LITTLE CPUs'
///   pace) fits a LITTLE CPU, and EAS prices a LITTLE CPU below a big one
///   (A53 costs 2,340 at 450 MHz against the A72's 3,545 at 600 MHz), so it
///   ends on a LITTLE CPU;
/// - "boosted" asks for util_min 1024 in its second phase: on a LITTLE CPU
///   that is "fits, boost unmet" (−1), on a big one it fits (1), so its
///   wake-ups go to a big CPU, and it ends there;
/// - schedutil gives the boosted task's CPU its floor, 1024, i.e. 1200 MHz:
///   its 30 wake-ups on the big CPU each run 1 ms of work there, so the big
///   domain spends at least 30 ms at 1200 MHz (with the rate limit of
///   1,000 µs never in the way: the task wakes every 16 ms).
pub(crate) fn uclamp_boost_on_juno_r2(lines: &[String]) -> Result<(), String> {
    let big = |cpu: u64| cpu == 1 || cpu == 2;
    let boosted = task_field(lines, "boosted", "cpu")?;
    if !big(boosted) {
        return Err(format!(
            "boosted ended on cpu{boosted}, not a big CPU (1, 2)"
        ));
    }
    let plain = task_field(lines, "plain", "cpu")?;
    if big(plain) {
        return Err(format!("plain ended on big cpu{plain}, not a LITTLE CPU"));
    }
    let top = metric(lines, "residency_us.pd1.1200mhz")?;
    if top < 30_000 {
        return Err(format!(
            "the big domain spent {top} us at 1200 MHz, less than the boosted task's 30 x 1 ms"
        ));
    }
    Ok(())
}

/// `eas-small-task-leaves-big.json` on Juno r2 with EAS: freed from big CPU
/// 1, the small task (1 ms of work every 16 ms) moves once, to a LITTLE CPU,
/// which EAS prices below its big one (A53 cost 2,340 at 450 MHz against the
/// A72's 3,545 at 600 MHz, §7.3), and ends there.
fn small_task_leaves_big(lines: &[String]) -> Result<(), String> {
    let cpu = task_field(lines, "small", "cpu")?;
    let migrations = task_field(lines, "small", "migrations")?;
    if cpu == 1 || cpu == 2 || migrations != 1 {
        return Err(format!(
            "small ended on cpu{cpu} after {migrations} migrations, not on a LITTLE CPU after 1"
        ));
    }
    Ok(())
}

/// The same without EAS: the wake-up path keeps the task on its idle
/// previous CPU, where it fits (`select_idle_sibling`).
fn small_task_stays_big(lines: &[String]) -> Result<(), String> {
    let cpu = task_field(lines, "small", "cpu")?;
    let migrations = task_field(lines, "small", "migrations")?;
    if cpu != 1 || migrations != 0 {
        return Err(format!(
            "small ended on cpu{cpu} after {migrations} migrations, not on cpu1 without moving"
        ));
    }
    Ok(())
}

/// Issue 14's budget: `find_energy_efficient_cpu` costs at most 4,000
/// instructions per call on the Pixel-6-like board (8 CPUs, 3 domains),
/// counted under icount. The benchmark (`eas-feec-bench.json`) wakes one
/// small task 250 times while the other CPUs are idle: under icount the
/// counter follows the virtual clock that every running vCPU advances, so a
/// call during which QEMU let another busy vCPU run would count that vCPU's
/// instructions too (docs/icount.md; in seed workload A one call in a few
/// hundred read over a million). Halted vCPUs add nothing, so here every
/// call's count is its own, and the check is on the largest.
pub(crate) const FEEC_BUDGET: u64 = 4_000;

fn feec_within_budget(lines: &[String]) -> Result<(), String> {
    let needle = "report: cost cpu=all op=find_energy_efficient_cpu ";
    let line = lines
        .iter()
        .find(|l| l.contains(needle))
        .ok_or("no cost record of find_energy_efficient_cpu")?;
    let field = |key: &str| -> Result<u64, String> {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no {key}= in: {line}"))
    };
    let (count, max) = (field("count")?, field("max")?);
    if count < 200 {
        return Err(format!("only {count} calls measured: {line}"));
    }
    if max > FEEC_BUDGET {
        return Err(format!(
            "find_energy_efficient_cpu took up to {max} instructions, over the budget of \
             {FEEC_BUDGET}: {line}"
        ));
    }
    Ok(())
}

/// `find_energy_efficient_cpu`'s calls and the tasks' wake-ups in a run.
fn feec_calls_and_wakeups(lines: &[String]) -> Result<(u64, u64), String> {
    let report = crate::run::report::parse_report(lines)?;
    let run = report.runs.first().ok_or("no report")?;
    let calls = run
        .costs
        .iter()
        .find(|c| c.cpu == crate::run::report::CpuScope::All && c.op == "find_energy_efficient_cpu")
        .map_or(0, |c| c.count);
    Ok((calls, run.tasks.iter().map(|t| t.wakeups).sum()))
}

fn feec_only_before_overutilized(lines: &[String]) -> Result<(), String> {
    let (calls, wakeups) = feec_calls_and_wakeups(lines)?;
    if calls >= 20 || wakeups < 1000 {
        return Err(format!(
            "{calls} feec calls in {wakeups} wake-ups: expected fewer than 20 calls (Linux skips \
             feec while overutilized) in over 1,000 wake-ups"
        ));
    }
    Ok(())
}

fn feec_at_every_wakeup(lines: &[String]) -> Result<(), String> {
    let (calls, wakeups) = feec_calls_and_wakeups(lines)?;
    if wakeups < 1000 || calls * 10 < wakeups * 9 {
        return Err(format!(
            "{calls} feec calls in {wakeups} wake-ups: expected one per wake-up (at least 90 %) \
             with eas_overutilized=1"
        ));
    }
    Ok(())
}

/// The kernel's run of classic shape `shape` on `board`, judged as the
/// simulator's runs are (`sim/tests/judge.rs`): energy ratio at most 1.05
/// and each task on a CPU of the capacity the best placement gives it,
/// after 10 periods of settling per window.
fn judge_kernel_run(board: &str, shape: &str, lines: &[String]) -> Result<(), String> {
    let (verdict, judge_board) =
        crate::experiments::judge_phases::kernel_verdict(board, shape, lines)?;
    let ratio = verdict.ratio();
    if ratio > 1.05 {
        return Err(format!(
            "{board} {shape}: energy ratio {ratio:.4} > 1.05: {:?}",
            verdict.windows
        ));
    }
    verdict
        .check_placement(&judge_board)
        .map_err(|e| format!("{board} {shape} (ratio {ratio:.4}): {e}"))
}

/// The kernel's runs of the classic shapes the judge does not pass yet
/// (the simulator passes all 18 at tick phase 0, see `sim/tests/judge.rs`):
/// juno-r0 two-big-three-small (ratio 1.0159, small0 on big CPU 2). Across
/// tick phases (`cargo xtask judge-phases`, docs/eas.md "Verdicts across
/// tick phases") the simulator gives the same 1.0159 at 7 of 32 phases and
/// the kernel at 5 of 10: the phase decides it on both sides, and phase 0
/// falls on the failing side in the kernel. small0 starts on big CPU 2
/// (instances start on the least-loaded CPU in CPU order), waits there
/// behind big0, pushed there as a misfit, and its util_est is never lowered
/// (runnable more than 10 above util, §2.4).
///
/// juno-r2 two-big-three-small is a gap again. It left the gaps when runs
/// started on an idle machine (`RUN_START_NS`: the boot's utilization on
/// CPU 0 made big0 misfit late, docs/eas.md) and passed at all 10 phases
/// measured then; after the hot paths got 13 % leaner (2026-12-07) the
/// kernel gives 1.0109 (class: small0 on a big CPU from 160 to 960 ms) at
/// tick phases 0 and 1 of 6 and 1.0000 at 2 to 5, while the simulator gives
/// 1.0000 at all 6 (`cargo xtask judge-phases --seeds 6 --board juno-r2
/// --shape two-big-three-small`); a change that keeps every decision (the
/// idle loop's per-CPU look-ups) flipped it the same way. The phase decides
/// it in the kernel, as for juno-r0; LISA's energy margin holds at every
/// phase. pixel6 three-small passes at all 10 phases measured. pixel6
/// alternating passes at phase 0 and fails the placement check at most
/// phases on both sides (energy within 0.2 % of the best).
/// The gaps run with `cargo xtask test --gaps`.
const KERNEL_JUDGE_GAPS: [(&str, &str); 2] = [
    ("juno-r0", "two-big-three-small"),
    ("juno-r2", "two-big-three-small"),
];

/// The placement judge on the kernel's runs of the classic shapes: the
/// known gaps (`gaps`) or the others.
fn judge_cases(gaps: bool) -> Vec<Case> {
    let mut cases = Vec::new();
    for board in ["juno-r0", "juno-r2", "pixel6"] {
        let cpus = if board == "pixel6" { 8 } else { 6 };
        for shape in fairway_sim::judge::classic_shapes() {
            let name = shape.name.clone();
            if KERNEL_JUDGE_GAPS.contains(&(board, name.as_str())) != gaps {
                continue;
            }
            let scenario: &'static str =
                Box::leak(format!("tests/scenarios/eas-shape-{name}.json").into_boxed_str());
            cases.push(
                Case::new(format!("eas-judge-{board}-{name}"), "fairway")
                    .board(board)
                    .cpus(cpus)
                    .icount()
                    .scenario(scenario)
                    .append("trace_switches=20000")
                    .check(move |lines| judge_kernel_run(board, &name, lines)),
            );
        }
    }
    cases
}

/// A boosted periodic task on juno-r2 (`util_min` 1024) gets the big
/// domain's highest OPP for its activations.
fn uclamp_boost_case() -> Case {
    Case::new("eas-uclamp-boost-juno-r2", "fairway")
        .board("juno-r2")
        .cpus(6)
        .icount()
        .scenario("tests/scenarios/eas-uclamp-boost.json")
        .contains("eas: on (2 perf domains)")
        .check(uclamp_boost_on_juno_r2)
}

/// The EAS cases that fail today (`cargo xtask test --gaps`): the judge's
/// gaps above, and the uclamp boost on juno-r2, which passed by the luck of
/// a phase: each boosted wake-up comes about 87 µs after its idle big CPU's
/// tick, which has just aged the run queue's blocked load, so the enqueue
/// asks schedutil only when a PELT period boundary falls in between (3 of
/// 31 wake-ups), as Linux with a periodic tick on idle CPUs would; Linux
/// with NOHZ idle (Juno's kernels) ages an idle CPU's blocked load every
/// 32 ms and would ask at nearly every one (docs/eas.md, docs/icount.md).
pub(crate) fn known_gaps() -> Vec<Case> {
    let mut cases = judge_cases(true);
    cases.push(uclamp_boost_case());
    cases
}

/// The EAS cases.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // §5.3's conditions, each failing once on Juno r2 (where all hold).
    for (name, append, line) in [
        (
            "eas-off-switched-off",
            "workload=sched-pipe loops=100 sched_energy_aware=0",
            "eas: off: sched_energy_aware=0",
        ),
        (
            "eas-off-performance-governor",
            "workload=sched-pipe loops=100 governor=performance",
            "eas: off: perf domain 0 is governed by performance: schedutil is mandatory for EAS",
        ),
        (
            "eas-off-balance-off",
            "workload=sched-pipe loops=100 balance=0",
            "eas: off: balance=0 (no wake-up placement)",
        ),
    ] {
        cases.push(
            Case::new(name, "fairway")
                .board("juno-r2")
                .cpus(6)
                .icount()
                .append(append)
                .contains(line),
        );
    }
    // The uclamp boost on juno-r2 is a known gap (`known_gaps`). With
    // `uclamp=auto` (the default) a clamp in a scenario turns uclamp on; with
    // `uclamp=0` a clamp is refused, naming the field, as Linux without
    // uclamp refuses one (§3.2).
    cases.push(
        Case::new("uclamp-off-refuses-a-clamp", "fairway")
            .cpus(2)
            .icount()
            .scenario("tests/scenarios/run-10ms-cpu1-util-min.json")
            .append("uclamp=0")
            .expect(crate::test::Expect::Failure)
            .contains(
                "rtapp: tasks.work.util_min=1024: uclamp is off (uclamp=0): boot with uclamp=1 \
                 or uclamp=auto",
            ),
    );
    // The replay check (issue 14's point 7): CPU 0's core, recorded while EAS
    // places small periodic tasks on the Pixel-6-like board, replayed on the
    // host, must decide the same.
    cases.push(
        Case::new("replay-eas-periodic-pixel6", "fairway")
            .board("pixel6")
            .cpus(8)
            .icount()
            .timeout(300)
            .scenario("tests/scenarios/eas-replay-periodic.json")
            .append(format!(
                "record_core={} sched=eevdf balance=1",
                crate::test::areas::replay::REPLAY_RECORDS
            ))
            .contains("eas: on (3 perf domains)")
            .contains("core: config")
            .check(crate::test::areas::replay::replay_agrees),
    );
    cases.extend(judge_cases(false));
    cases.push(
        Case::new("eas-feec-cost-pixel6", "fairway")
            .board("pixel6")
            .cpus(8)
            .icount()
            .scenario("tests/scenarios/eas-feec-bench.json")
            .contains("eas: on (3 perf domains)")
            .check(feec_within_budget),
    );
    // The 2024 RFC's option (§5.6): hackbench's 20 tasks on 8 CPUs keep the
    // root domain overutilized from its first ticks on, so Linux's rule asks
    // feec only of the wake-ups before the flag is first set (fewer than the
    // 20 tasks), and the option asks it of (almost) every wake-up. 200 loops
    // give each run over 1,000 wake-ups (1,250 and 1,256; 160 loops gave 950
    // with the option once switches handed QEMU's turn on, issue 15).
    for (name, option, check) in [
        (
            "eas-overutilized-off-hackbench-pixel6",
            "0",
            feec_only_before_overutilized as crate::test::OutputCheck,
        ),
        (
            "eas-overutilized-on-hackbench-pixel6",
            "1",
            feec_at_every_wakeup,
        ),
    ] {
        let mut case = Case::new(name, "fairway")
            .board("pixel6")
            .cpus(8)
            .icount()
            .append(format!(
                "workload=hackbench groups=1 fds=10 loops=200 eas_overutilized={option}"
            ))
            .contains("20000 of 20000 messages received, 0 out of order");
        if option == "1" {
            case = case.contains("eas: on (3 perf domains), also when overutilized");
        }
        cases.push(case.check(check));
    }
    for (name, append, check) in [
        (
            "eas-small-task-leaves-big-juno-r2",
            "",
            small_task_leaves_big as crate::test::OutputCheck,
        ),
        (
            "eas-off-small-task-stays-big-juno-r2",
            "sched_energy_aware=0",
            small_task_stays_big,
        ),
    ] {
        cases.push(
            Case::new(name, "fairway")
                .board("juno-r2")
                .cpus(6)
                .icount()
                .append(append)
                .scenario("tests/scenarios/eas-small-task-leaves-big.json")
                .check(check),
        );
    }
    cases
}
