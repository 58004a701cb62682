//! The kernel's workloads (`fairway` image): the default demo, sched-pipe
//! under each policy, at group depth 3 and without uclamp, hackbench, and
//! the byte-identical reports of two runs.

use crate::test::Case;

/// The cost table of a run has every measured operation.
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

/// The workload cases.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case::new("demo-default", "fairway")
            // QEMU's CPUs are identical: EAS stays off and says why (§5.3).
            .contains("eas: off: CPUs do not have asymmetric capacities")
            .contains("demo: 4 CPUs, 16 tasks done, 1000 pipe round trips per pair, checked"),
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
        Case::new("report-byte-identical-icount", "fairway")
            .icount()
            .cpus(2)
            .append("workload=sched-pipe loops=3000")
            .twice_identical(),
    ];
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
