//! QEMU test cases of the workloads (issue 4): sched-pipe, hackbench, rt-app
//! scenarios, the reproducibility of reports, and checks of their figures
//! against independent expectations.

use crate::test::Case;

/// The value of `key=` in the first line containing `needle`.
fn value_in(lines: &[String], needle: &str, key: &str) -> Result<u64, String> {
    let line = lines
        .iter()
        .find(|l| l.contains(needle))
        .ok_or_else(|| format!("no line contains '{needle}'"))?;
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
        .ok_or_else(|| format!("no number {key}= in: {line}"))
}

/// linux-sched-facts.md §2.8, "Periodic tasks in steady state": a 25 % duty,
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

pub(crate) fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case::new("sched-pipe-100k-pinned", "fairway")
            .icount()
            .cpus(2)
            .append("workload=sched-pipe loops=100000 pinned=1")
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
            .contains("hackbench: groups=0 is outside 1..=40"),
        Case::new("rtapp-periodic-util-in-range", "fairway")
            .icount()
            .cpus(2)
            .scenario("tests/scenarios/periodic-25-16ms.json")
            .append("util_sample_us=250")
            .contains("report: metric name=util_min.periodic")
            .check(periodic_util_in_reference_range),
        Case::new("report-byte-identical-icount", "fairway")
            .icount()
            .cpus(2)
            .append("workload=sched-pipe loops=3000")
            .twice_identical(),
    ];
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
