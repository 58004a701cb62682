//! The `preempt` image's cases (`tests/preempt.rs`): preemption on one CPU
//! under round robin, CFS and EEVDF, and at HZ 10 with and without the
//! high-resolution tick.

use crate::test::Case;

/// The cases of `tests/preempt.rs`.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case::new("preempt-icount-rr", "preempt")
            .icount()
            .cpus(1)
            .append("sched=rr")
            .contains("preempt: runtime a"),
        Case::new("preempt-icount-hz10-hrtick", "preempt")
            .icount()
            .cpus(1)
            .append("sched=rr hz=10 hrtick=1")
            .contains("turns in 400 ms (slice 4000 us)"),
        Case::new("preempt-icount-hz10-no-hrtick", "preempt")
            .icount()
            .cpus(1)
            .append("sched=rr hz=10 hrtick=0")
            .contains("turns in 400 ms (slice 100000 us)"),
    ];
    for policy in ["cfs", "eevdf"] {
        cases.push(
            Case::new(format!("preempt-icount-{policy}"), "preempt")
                .icount()
                .cpus(1)
                .append(if policy == "cfs" {
                    "sched=cfs"
                } else {
                    "sched=eevdf"
                })
                .contains("preempt: runtime a"),
        );
    }
    cases
}
